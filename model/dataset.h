/* dataset.h: Megatron-LM / NeMo indexed datasets (PREFIX.idx + PREFIX.bin, "MMIDIDX\0\0"
 * header, uint16 or int32 tokens), the format the pre-tokenized corpora of these trainings
 * come in, and a synthetic token source. Every size and offset of the index is validated
 * against the files before anything is read, so a corrupt or truncated file is an error,
 * never an out-of-bounds read.
 *
 * .idx layout (little-endian): magic[9] = "MMIDIDX\0\0", u64 version = 1, u8 dtype code
 * (4 = int32, 8 = uint16), u64 sequence count n, u64 document count d, int32 sizes[n],
 * int64 pointers[n] (byte offsets into .bin), int64 doc_idx[d]. */
#ifndef CB_DATASET_H
#define CB_DATASET_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char prefix[1024];
    int dtype;             /* 4 int32, 8 uint16 */
    size_t elem;           /* bytes per token */
    uint64_t nseq, ndoc;
    uint64_t ntokens;      /* all sequences, concatenated */
    int32_t *seq_sizes;    /* (nseq) tokens of each sequence, the .idx sizes */
    uint64_t *seq_start;   /* (nseq) token offset of each sequence in the stream (its .idx pointer / elem) */
    const unsigned char *bin;
    size_t bin_bytes;
    int max_token;         /* -1 until scanned */
} dataset;

/* Opens and validates PREFIX.idx and PREFIX.bin. Returns 0 or CB_EFAIL (one error line). The
 * sequences are consecutive (each pointer is the end of the previous sequence), so seq_start[i]
 * + seq_sizes[i] <= ntokens for every i. */
int dataset_open(dataset *d, const char *prefix);
/* Frees what dataset_open made (NULL is fine). */
void dataset_close(dataset *d);
/* Token i of the concatenated stream. */
static inline int dataset_token(const dataset *d, uint64_t i)
{
    if (d->dtype == 8) {
        uint16_t v;
        __builtin_memcpy(&v, d->bin + i * 2, 2);
        return v;
    }
    int32_t v;
    __builtin_memcpy(&v, d->bin + i * 4, 4);
    return v;
}
/* B windows of T+1 contiguous tokens at positions drawn from (seed, step, micro): inputs are
 * the first T of each, targets the last T. Returns 0, or CB_EFAIL if a token is outside [0, V). */
int dataset_batch(const dataset *d, unsigned long long seed, long step, int micro, int *inputs, int *targets, int B,
                  int T, int V);
/* Synthetic tokens, uniform in [0, V), a function of (seed, step, micro) only. */
void synthetic_batch(unsigned long long seed, long step, int micro, int *inputs, int *targets, int B, int T, int V);

/* Writes PREFIX.bin/.idx from text files, one document per file, byte-level tokens (0..255) as
 * uint16. Atomic: both files appear complete or not at all. Returns 0 or CB_EFAIL. */
int dataset_build(const char *prefix, char **files, int nfiles, uint64_t *ntokens_out);

#endif
