/* sampler.h: the order in which training reads the samples of an indexed dataset (--sampler).
 *
 *   random    B windows of T+1 tokens at hashed positions of the whole token stream, a function
 *             of (seed, step, micro-batch) (dataset_batch in model/dataset.h): crosses documents
 *             freely, repeats and skips windows.
 *   megatron  Megatron-LM's GPTDataset order, exactly: Megatron-LM core_v0.19.0 (tag
 *             core_v0.19.0), megatron/core/datasets/gpt_dataset.py and helpers.cpp
 *             (build_sample_idx), with numpy's legacy RandomState (MT19937) shuffles. Every
 *             sequence of the .idx is a document, all of them in the training split (Megatron's
 *             --split 100,0,0), sequence length T with one extra token (add_extra_token_to_sequence),
 *             num_samples = steps x global batch (Megatron's train_iters x global_batch_size),
 *             seed = --seed (Megatron's --seed, 0 .. 2^32-1). Sample k of the run is Megatron's
 *             sample k: global sample s G + mb B + b for step s, global micro-batch mb and row b
 *             (G = B x accum). Megatron hands the micro-batches of a step to data-parallel ranks
 *             interleaved, costbench in contiguous blocks (model/train.h): the samples of each
 *             step are Megatron's, their assignment to ranks differs when there are several.
 *
 * The megatron indices are built once per run (sampler_init) and are a pure function of the
 * dataset, T, num_samples and the seed; like Megatron's, they change with num_samples. */
#ifndef CB_SAMPLER_H
#define CB_SAMPLER_H

#include <stdint.h>

#include "dataset.h"

typedef enum { SAMPLER_RANDOM, SAMPLER_MEGATRON } sampler_kind;

/* "random" or "megatron" into *k: 0, or CB_EUSAGE (no message: the caller names the flag). */
int sampler_parse(const char *s, sampler_kind *k);
const char *sampler_name(sampler_kind k);

/* numpy's legacy MT19937 (numpy/random/src/mt19937): RandomState(seed) for an integer seed. */
typedef struct {
    uint32_t key[624];
    int pos;
} mt19937;

/* init_genrand(seed): numpy's mt19937_seed, what RandomState(seed) does for 0 <= seed < 2^32. */
void mt19937_seed(mt19937 *r, uint32_t seed);
uint32_t mt19937_next32(mt19937 *r);
/* A uniform integer in [0, max], max < 2^32: numpy's random_interval (distributions.c), masked
 * rejection on 32-bit draws. */
uint32_t mt19937_interval(mt19937 *r, uint32_t max);
/* RandomState.shuffle of a 1-D array of n <= 2^32 elements (mtrand.pyx _shuffle_raw): for i from
 * n-1 down to 1, swap x[i] with x[random_interval(i)]. */
void mt19937_shuffle_u32(mt19937 *r, uint32_t *x, uint64_t n);

/* Built once per run. With megatron, the three indices of GPTDataset (public for tests): */
typedef struct {
    sampler_kind kind;
    const dataset *d;
    int T;
    unsigned long long seed;
    uint64_t num_samples;       /* samples the run reads (steps x global batch) */
    /* megatron only */
    uint64_t tokens_per_epoch;  /* all sequences' tokens */
    int num_epochs;
    int separate_final_epoch;   /* the last epoch shuffled apart (fewer than 80% of its samples used) */
    uint64_t num_samples_built; /* (num_epochs tokens_per_epoch - 1) / T: rows of sample_index less one */
    uint64_t ndocument_index;   /* num_epochs x sequences */
    uint32_t *document_index;   /* (ndocument_index) sequence ids (Megatron's int32 values), shuffled */
    uint32_t *sample_index;     /* (num_samples_built + 1, 2) position in document_index, token offset */
    uint32_t *shuffle_index;    /* (num_samples_built) a permutation of [0, num_samples_built) */
} sampler;

/* Builds the sampler of kind k over d for sequences of T tokens (samples of T+1), a run of
 * num_samples samples, seeded with seed. megatron refuses a seed >= 2^32, T < 2, a dataset of
 * fewer than T+1 tokens, and indices past 2^32 entries or the memory available. Returns 0 or
 * CB_EFAIL (one line). sampler_free accepts NULL and a sampler whose init failed. */
int sampler_init(sampler *sp, sampler_kind k, const dataset *d, int T, uint64_t num_samples, unsigned long long seed);
void sampler_free(sampler *sp);
/* The bytes sampler_init(k, d, T, num_samples, seed) allocates for its indices, computed from the
 * dataset's sequence and token counts before anything is built (0 for random), for the memory
 * estimate. Returns 0, or CB_EFAIL (one line) for what sampler_init refuses. */
int sampler_index_bytes(sampler_kind k, const dataset *d, int T, uint64_t num_samples, unsigned long long seed,
                        double *bytes);
/* B rows of micro-batch `micro` (0 <= micro < G/B, over all ranks) of 0-based step `step`, G
 * samples a step: inputs the first T tokens of each sample, targets the last T (each (B, T)).
 * random delegates to dataset_batch(seed, step, micro); megatron reads samples step G + micro B
 * + b. Returns 0, or CB_EFAIL when a token is outside [0, V) (naming PREFIX.bin and the token's
 * position) or a sample lies past num_samples. */
int sampler_batch(const sampler *sp, long step, int micro, int B, int G, int *inputs, int *targets, int V);
/* The T+1 tokens of megatron sample k (0 <= k < num_samples_built) into tokens, ids unchecked.
 * Returns 0, or CB_EFAIL for another kind or k. */
int sampler_sample(const sampler *sp, uint64_t k, int *tokens);
/* One line for the run's notes: the kind, the pinned Megatron-LM version, epochs, samples, seed. */
void sampler_describe(const sampler *sp, char *buf, size_t n);

#endif
