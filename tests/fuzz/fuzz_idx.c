/* fuzz_idx.c: libFuzzer harness of the Megatron indexed-dataset reader (model/dataset.c).
 *
 * One input holds both files: a 4-byte little-endian length L, then L bytes of PREFIX.idx,
 * then the rest, PREFIX.bin (L larger than what follows takes it all and leaves .bin empty).
 * Both are written to scratch files and opened with dataset_open(); a dataset that opens is
 * then read: every token (up to MAX_TOKENS) with dataset_token() and dataset_batch() at small
 * B, T and V, then dataset_close(). Rejected inputs print one "error:" line each, so run with
 * -close_fd_mask=2. Besides the sanitizers, the harness aborts when dataset_open accepts an
 * index whose tokens do not fit in the .bin it was given, or whose sequences' sizes and offsets
 * (seq_sizes, seq_start) do not tile the tokens.
 *
 *   make fuzz / make fuzz-explore    every harness (see Makefile)
 *   build-fuzz/fuzz_idx -close_fd_mask=2 -max_len=4096 DIR   fuzz with corpus DIR
 *   build-fuzz/fuzz_idx FILE         replay one input (a crash reproducer), errors shown
 *
 * Seeds: tests/fuzz/corpus/idx/ (written by tests/fuzz/gen_corpus.c, in the format above). */
#include <stdint.h>
#include <stdlib.h>

#include "../../model/dataset.h"
#include "fuzz_io.h"

#define MAX_TOKENS (1u << 20)

static int prefix = -1, idx_file = -1, bin_file = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init(*argc, *argv);
    prefix = fuzz_tmp_new("idx"); /* reserves the unique PREFIX; stays empty */
    idx_file = fuzz_tmp_sibling(prefix, ".idx");
    bin_file = fuzz_tmp_sibling(prefix, ".bin");
    return 0;
}

static __attribute__((noreturn)) void broken(const dataset *d, const char *what)
{
    fuzz_fail("dataset_open accepted '%s' (dtype %d, %llu sequences, %llu documents, %llu tokens) but %s", d->prefix,
              d->dtype, (unsigned long long)d->nseq, (unsigned long long)d->ndoc, (unsigned long long)d->ntokens, what);
}

static void read_tokens(const dataset *d, size_t bin_bytes)
{
    if (!((d->dtype == 8 && d->elem == 2) || (d->dtype == 4 && d->elem == 4))) broken(d, "its dtype is not 8 or 4");
    if (d->ntokens > bin_bytes / d->elem || d->ntokens * d->elem > d->bin_bytes)
        broken(d, "its tokens do not fit the .bin");
    if (d->ntokens > 0 && !d->bin) broken(d, "it has tokens and no .bin mapping");
    uint64_t sum = 0; /* the sequences' sizes and offsets (what the samplers read) tile the tokens */
    for (uint64_t i = 0; i < d->nseq; i++) {
        if (d->seq_sizes[i] < 0 || d->seq_start[i] != sum) broken(d, "its sequences are not consecutive");
        sum += (uint64_t)d->seq_sizes[i];
    }
    if (sum != d->ntokens) broken(d, "its sequence sizes do not add up to its tokens");
    volatile long sink = 0;
    for (uint64_t i = 0; i < d->ntokens && i < MAX_TOKENS; i++) sink += dataset_token(d, i);
    (void)sink;
    static const struct { int B, T, V; } shapes[] = {{2, 4, 256}, {1, 1, 65536}, {3, 7, 1 << 30}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int inputs[3 * 7], targets[3 * 7]; /* (B, T) */
        (void)dataset_batch(d, 1234, (long)k, 0, inputs, targets, shapes[k].B, shapes[k].T, shapes[k].V);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    uint32_t len = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
    size_t idx_bytes = len < size - 4 ? len : size - 4, bin_bytes = size - 4 - idx_bytes;
    fuzz_tmp_write(idx_file, data + 4, idx_bytes);
    fuzz_tmp_write(bin_file, data + 4 + idx_bytes, bin_bytes);
    dataset d;
    if (dataset_open(&d, fuzz_tmp_path(prefix)) == 0) {
        read_tokens(&d, bin_bytes);
        dataset_close(&d);
        dataset_close(NULL);
    }
    fuzz_input_done();
    return 0;
}
