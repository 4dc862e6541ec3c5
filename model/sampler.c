/* sampler.c: --sampler random|megatron (model/sampler.h).
 *
 * megatron reproduces Megatron-LM core_v0.19.0 (git tag core_v0.19.0), for a single dataset
 * prefix, --split 100,0,0, the training split:
 *   megatron/core/datasets/gpt_dataset.py
 *     GPTDataset._build_document_sample_shuffle_indices  epochs, separate_final_epoch, the order
 *                                                        of the three builds below, one RandomState
 *     GPTDataset._get_num_tokens_per_epoch, _get_num_epochs
 *     _build_document_index, _build_shuffle_index
 *     GPTDataset._query_document_sample_shuffle_indices  the tokens of sample k
 *   megatron/core/datasets/helpers.cpp  build_sample_idx (drop_last_partial_sequence = true,
 *                                       add_extra_token_to_sequence = 1)
 *   megatron/core/datasets/blended_megatron_dataset_builder.py  one prefix without weights:
 *     num_samples = train_iters x global_batch_size (megatron/training/training.py
 *     get_train_valid_test_num_samples), documents = every sequence of the .idx
 * and numpy's legacy RandomState (numpy/random/mtrand.pyx RandomState.shuffle / _shuffle_raw,
 * numpy/random/src/distributions/distributions.c random_interval, numpy/random/src/mt19937/
 * mt19937.c mt19937_seed and mt19937_gen, _mt19937.pyx _legacy_seeding: an integer seed must be
 * in [0, 2^32) and seeds init_genrand directly).
 *
 * Megatron's dtypes: document ids int32, sample_index int32 pairs (int64 past 2^31), shuffle
 * index uint32 (int64 past 2^32 - 2). Here all three are uint32 and refused past 2^32 entries:
 * the values are the same, and numpy's shuffles of more than 2^32 elements draw 64-bit numbers
 * whose assembly order is compiler-dependent in numpy (mt19937_next64), so not reproduced. */
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../common/timer.h"

#define MEGATRON_VERSION "Megatron-LM core_v0.19.0"

/* ---------------------------------------------------------------- numpy's legacy MT19937 */

enum { MT_N = 624, MT_M = 397 };
#define MT_MATRIX_A 0x9908b0dfU
#define MT_UPPER 0x80000000U
#define MT_LOWER 0x7fffffffU

void mt19937_seed(mt19937 *r, uint32_t seed)
{
    for (int pos = 0; pos < MT_N; pos++) {
        r->key[pos] = seed;
        seed = 1812433253U * (seed ^ (seed >> 30)) + (uint32_t)pos + 1U;
    }
    r->pos = MT_N;
}

static uint32_t mt_twist(uint32_t a, uint32_t b, uint32_t m)
{
    uint32_t y = (a & MT_UPPER) | (b & MT_LOWER);
    return m ^ (y >> 1) ^ ((0U - (y & 1U)) & MT_MATRIX_A);
}

static void mt19937_gen(mt19937 *r)
{
    int i;
    for (i = 0; i < MT_N - MT_M; i++) r->key[i] = mt_twist(r->key[i], r->key[i + 1], r->key[i + MT_M]);
    for (; i < MT_N - 1; i++) r->key[i] = mt_twist(r->key[i], r->key[i + 1], r->key[i + (MT_M - MT_N)]);
    r->key[MT_N - 1] = mt_twist(r->key[MT_N - 1], r->key[0], r->key[MT_M - 1]);
    r->pos = 0;
}

uint32_t mt19937_next32(mt19937 *r)
{
    if (r->pos == MT_N) mt19937_gen(r);
    uint32_t y = r->key[r->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= y >> 18;
    return y;
}

uint32_t mt19937_interval(mt19937 *r, uint32_t max)
{
    if (max == 0) return 0;
    uint32_t mask = max, v;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    while ((v = mt19937_next32(r) & mask) > max) {}
    return v;
}

/* The draws do not depend on the array, so they are made a batch ahead of the swaps, and the
 * element each swap reaches at random is prefetched a few swaps before: the same swaps in the same
 * order, without waiting on a cache miss each (the shuffles of large indices are memory-bound). */
void mt19937_shuffle_u32(mt19937 *r, uint32_t *x, uint64_t n)
{
    enum { BATCH = 256, AHEAD = 16 };
    uint32_t js[BATCH];
    for (uint64_t i = n > 0 ? n - 1 : 0; i > 0;) {
        const int k = i < BATCH ? (int)i : BATCH; /* swaps of positions i, i-1, ..., i-k+1 */
        for (int q = 0; q < k; q++) js[q] = mt19937_interval(r, (uint32_t)(i - (uint64_t)q));
        for (int q = 0; q < k && q < AHEAD; q++) __builtin_prefetch(&x[js[q]], 1);
        for (int q = 0; q < k; q++) {
            if (q + AHEAD < k) __builtin_prefetch(&x[js[q + AHEAD]], 1);
            const uint64_t at = i - (uint64_t)q;
            const uint32_t j = js[q], t = x[at];
            x[at] = x[j];
            x[j] = t;
        }
        i -= (uint64_t)k;
    }
}

/* ---------------------------------------------------------------- kinds */

int sampler_parse(const char *s, sampler_kind *k)
{
    if (strcmp(s, "random") == 0) *k = SAMPLER_RANDOM;
    else if (strcmp(s, "megatron") == 0) *k = SAMPLER_MEGATRON;
    else return CB_EUSAGE;
    return 0;
}

const char *sampler_name(sampler_kind k) { return k == SAMPLER_MEGATRON ? "megatron" : "random"; }

/* ---------------------------------------------------------------- megatron: the plan */

#define IDX_MAX_ENTRIES (1ULL << 32)
#define SAMPLER_TELL_BYTES (256.0 * 1048576.0) /* indices from this size on announce their build */

/* What GPTDataset refuses, or numpy cannot do, or is past these indices' uint32 entries. */
static int megatron_check(const sampler *sp)
{
    const dataset *d = sp->d;
    if (sp->seed > 0xffffffffULL)
        return err_msg("flag '--seed': %llu is not a Megatron-LM seed (numpy.random.RandomState takes 0..4294967295); "
                       "use a smaller --seed, or --sampler random",
                       sp->seed);
    if (sp->T < 2)
        return err_msg("flag '--seq': %d; Megatron-LM's build_sample_idx needs a sequence length of at least 2 (or use "
                       "--sampler random)",
                       sp->T);
    if (d->ntokens < (uint64_t)sp->T + 1)
        return err_msg("%s: %llu tokens, fewer than one sample of %d (--seq %d and the extra token)", d->prefix,
                       (unsigned long long)d->ntokens, sp->T + 1, sp->T);
    if (d->nseq > INT32_MAX)
        return err_msg("%s: %llu sequences; Megatron-LM's document ids are int32", d->prefix,
                       (unsigned long long)d->nseq);
    if (sp->num_samples > ((1ULL << 62) - 1) / (uint64_t)sp->T)
        return err_msg("%s: %llu samples of %d tokens are more tokens than 2^62", d->prefix,
                       (unsigned long long)sp->num_samples, sp->T);
    return 0;
}

/* _get_num_epochs, the sample count of build_sample_idx and the separate_final_epoch decision;
 * the first shuffle range of the shuffle index into *first_shuffle. */
static int megatron_plan(sampler *sp, uint64_t *first_shuffle)
{
    const dataset *d = sp->d;
    const uint64_t T = (uint64_t)sp->T, tpe = d->ntokens, requested = sp->num_samples * T + 1;
    uint64_t epochs = (requested + tpe - 1) / tpe;
    if (epochs < 1) epochs = 1;
    if (epochs > INT32_MAX || epochs * d->nseq > IDX_MAX_ENTRIES)
        return err_msg("%s: %llu samples of %d tokens take %llu epochs of %llu sequences: a document index past 2^32 "
                       "entries is not supported",
                       d->prefix, (unsigned long long)sp->num_samples, sp->T, (unsigned long long)epochs,
                       (unsigned long long)d->nseq);
    sp->tokens_per_epoch = tpe;
    sp->num_epochs = (int)epochs;
    sp->ndocument_index = epochs * d->nseq;
    sp->num_samples_built = (epochs * tpe - 1) / T; /* drop_last_partial_sequence */
    if (sp->num_samples_built > IDX_MAX_ENTRIES)
        return err_msg("%s: %llu samples in %llu epochs: a sample index past 2^32 entries is not supported", d->prefix,
                       (unsigned long long)sp->num_samples_built, (unsigned long long)epochs);
    sp->separate_final_epoch = 0;
    *first_shuffle = sp->num_samples_built;
    if (epochs > 1) {
        const uint64_t sans_final = ((epochs - 1) * tpe - 1) / T, per_epoch = (tpe - 1) / T;
        const int64_t from_final = (int64_t)sp->num_samples - (int64_t)sans_final;
        if (from_final < 0 || from_final > (int64_t)per_epoch + 1) /* Megatron asserts both */
            return err_msg(
                "%s: %lld samples from the final epoch of %llu: Megatron-LM's GPTDataset would fail its assertion",
                d->prefix, (long long)from_final, (unsigned long long)per_epoch);
        sp->separate_final_epoch = from_final < (int64_t)(0.80 * (double)per_epoch);
        if (sp->separate_final_epoch) *first_shuffle = sans_final;
    }
    return 0;
}

/* The bytes of the three indices of a planned sampler: 4 a document_index entry, 8 a
 * sample_index row, 4 a shuffle_index entry. */
static double planned_bytes(const sampler *sp)
{
    return 4.0 * (double)sp->ndocument_index + 8.0 * (double)(sp->num_samples_built + 1) +
           4.0 * (double)sp->num_samples_built;
}

int sampler_index_bytes(sampler_kind k, const dataset *d, int T, uint64_t num_samples, unsigned long long seed,
                        double *bytes)
{
    sampler sp = {.kind = k, .d = d, .T = T, .seed = seed, .num_samples = num_samples};
    uint64_t first_shuffle;
    *bytes = 0;
    if (k == SAMPLER_RANDOM) return 0;
    if (megatron_check(&sp) != 0 || megatron_plan(&sp, &first_shuffle) != 0) return CB_EFAIL;
    *bytes = planned_bytes(&sp);
    return 0;
}

/* An index array; a large one in transparent huge pages where the kernel grants them on request
 * (the shuffles reach it at random: fewer TLB misses). Freed with free(). */
static void *index_alloc(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    if (bytes < 32 * huge) return malloc(bytes ? bytes : 1);
    if (bytes > SIZE_MAX - huge) return NULL;
    void *p = aligned_alloc(huge, (bytes + huge - 1) / huge * huge);
    if (p) madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE); /* advice: refused is fine */
    return p;
}

static int megatron_alloc(sampler *sp)
{
    const double bytes = planned_bytes(sp);
    char what[1200];
    snprintf(what, sizeof what, "the Megatron sample order of %s (%d epochs, %llu samples)", sp->d->prefix,
             sp->num_epochs, (unsigned long long)sp->num_samples_built);
    if (mem_check_fits(bytes, what) != 0) return CB_EFAIL;
    sp->document_index = index_alloc(sp->ndocument_index * sizeof *sp->document_index);
    sp->sample_index = index_alloc((sp->num_samples_built + 1) * 2 * sizeof *sp->sample_index);
    sp->shuffle_index = index_alloc((sp->num_samples_built ? sp->num_samples_built : 1) * sizeof *sp->shuffle_index);
    if (!sp->document_index || !sp->sample_index || !sp->shuffle_index)
        return err_msg("out of memory: %s needs %.3f GiB", what, bytes / 1073741824.0);
    return 0;
}

/* ---------------------------------------------------------------- megatron: the indices */

/* _build_document_index: every epoch lists the sequences in order; all epochs shuffled together,
 * or, with a separate final epoch, the others together and then the final one. */
static void build_document_index(sampler *sp, mt19937 *rng)
{
    const uint64_t n = sp->d->nseq;
    for (uint64_t e = 0; e < (uint64_t)sp->num_epochs; e++)
        for (uint64_t i = 0; i < n; i++) sp->document_index[e * n + i] = (uint32_t)i;
    if (!sp->separate_final_epoch) {
        mt19937_shuffle_u32(rng, sp->document_index, sp->ndocument_index);
        return;
    }
    const uint64_t first = (uint64_t)(sp->num_epochs - 1) * n;
    mt19937_shuffle_u32(rng, sp->document_index, first);
    mt19937_shuffle_u32(rng, sp->document_index + first, n);
}

/* helpers.cpp build_sample_idx: row k is the (document_index position, token offset) where sample
 * k starts; sample k ends where sample k+1 starts, that token included (the extra token). */
static void build_sample_index(sampler *sp)
{
    const int32_t *sizes = sp->d->seq_sizes;
    const uint32_t *doc = sp->document_index;
    uint32_t *si = sp->sample_index;
    uint64_t pos = 0;
    int64_t off = 0;
    si[0] = si[1] = 0;
    for (uint64_t k = 1; k <= sp->num_samples_built; k++) {
        int64_t remaining = (int64_t)sp->T + 1;
        while (remaining != 0) {
            const int64_t len = sizes[doc[pos]] - off;
            remaining -= len;
            if (remaining <= 0) {
                off += remaining + len - 1;
                remaining = 0;
            } else if (pos == sp->ndocument_index - 1) {
                /* out of documents: unreachable when dropping the last partial sample */
                off = sizes[doc[pos]] - 1;
                break;
            } else {
                pos++;
                off = 0;
            }
        }
        si[2 * k] = (uint32_t)pos;
        si[2 * k + 1] = (uint32_t)off;
    }
}

/* _build_shuffle_index: [0, first) shuffled, then [first, samples) shuffled apart. */
static void build_shuffle_index(sampler *sp, mt19937 *rng, uint64_t first)
{
    const uint64_t n = sp->num_samples_built;
    for (uint64_t i = 0; i < n; i++) sp->shuffle_index[i] = (uint32_t)i;
    mt19937_shuffle_u32(rng, sp->shuffle_index, first);
    if (first < n) mt19937_shuffle_u32(rng, sp->shuffle_index + first, n - first);
}

int sampler_init(sampler *sp, sampler_kind k, const dataset *d, int T, uint64_t num_samples, unsigned long long seed)
{
    *sp = (sampler){.kind = k, .d = d, .T = T, .seed = seed, .num_samples = num_samples};
    if (k == SAMPLER_RANDOM) return 0;
    uint64_t first_shuffle = 0;
    if (megatron_check(sp) != 0 || megatron_plan(sp, &first_shuffle) != 0 || megatron_alloc(sp) != 0) {
        sampler_free(sp);
        return CB_EFAIL;
    }
    /* a large order takes a while to build (about 0.1 us an entry): say so on stderr, a line before
     * and one after, terminal or log alike (two lines; the small ones of tests say nothing) */
    const double bytes = planned_bytes(sp), t0 = timer_now_s();
    const int tell = bytes >= SAMPLER_TELL_BYTES && err_rank() == 0;
    if (tell)
        fprintf(
            stderr,
            "costbench train: building the Megatron sample order of %s: %d epochs, %llu samples, %.1f GiB of indices\n",
            d->prefix, sp->num_epochs, (unsigned long long)sp->num_samples_built, bytes / 1073741824.0);
    mt19937 rng; /* numpy.random.RandomState(seed), used by the document index, then the shuffle index */
    mt19937_seed(&rng, (uint32_t)seed);
    build_document_index(sp, &rng);
    build_sample_index(sp);
    build_shuffle_index(sp, &rng, first_shuffle);
    if (tell) fprintf(stderr, "costbench train: Megatron sample order built in %.1f s\n", timer_now_s() - t0);
    return 0;
}

void sampler_free(sampler *sp)
{
    if (!sp) return;
    free(sp->document_index);
    free(sp->sample_index);
    free(sp->shuffle_index);
    sp->document_index = NULL;
    sp->sample_index = sp->shuffle_index = NULL;
}

/* ---------------------------------------------------------------- reading samples */

/* The T+1 tokens of sample k, from its start in sample_index[shuffle_index[k]] to the start of
 * the next, across documents (_query_document_sample_shuffle_indices): token t goes to in[t] for
 * t < T and to tg[t-1] for t > 0. Ids are checked against [0, V) when V > 0. */
static int read_sample(const sampler *sp, uint64_t k, int *in, int *tg, int V)
{
    const dataset *d = sp->d;
    const uint32_t *si = sp->sample_index + 2 * (uint64_t)sp->shuffle_index[k];
    const uint64_t beg = si[0], end = si[2];
    const int T = sp->T;
    int t = 0;
    for (uint64_t p = beg; p <= end && t <= T; p++) {
        const uint32_t seq = sp->document_index[p];
        const uint64_t size = (uint64_t)d->seq_sizes[seq];
        uint64_t from = p == beg ? si[1] : 0, to = p == end ? (uint64_t)si[3] + 1 : size;
        if (to > size) to = size;
        for (uint64_t o = from; o < to && t <= T; o++, t++) {
            const uint64_t at = d->seq_start[seq] + o;
            const int tok = dataset_token(d, at);
            if (V > 0 && (tok < 0 || tok >= V))
                return err_msg("%s.bin: token %d at position %llu is outside the model's vocabulary (0..%d)", d->prefix,
                               tok, (unsigned long long)at, V - 1);
            if (t < T) in[t] = tok;
            if (t > 0) tg[t - 1] = tok;
        }
    }
    if (t != T + 1)
        return err_msg("%s: Megatron sample %llu holds %d tokens, not %d: inconsistent sample index", d->prefix,
                       (unsigned long long)k, t, T + 1);
    return 0;
}

int sampler_sample(const sampler *sp, uint64_t k, int *tokens)
{
    if (sp->kind != SAMPLER_MEGATRON || k >= sp->num_samples_built)
        return err_msg("%s: no Megatron sample %llu (%llu built)", sp->d->prefix, (unsigned long long)k,
                       (unsigned long long)sp->num_samples_built);
    return read_sample(sp, k, tokens, tokens + 1, 0); /* token t lands in tokens[t] either way */
}

int sampler_batch(const sampler *sp, long step, int micro, int B, int G, int *inputs, int *targets, int V)
{
    if (sp->kind == SAMPLER_RANDOM) return dataset_batch(sp->d, sp->seed, step, micro, inputs, targets, B, sp->T, V);
    const uint64_t first = (uint64_t)step * (uint64_t)G + (uint64_t)micro * (uint64_t)B;
    for (int b = 0; b < B; b++) {
        const uint64_t k = first + (uint64_t)b;
        if (k >= sp->num_samples)
            return err_msg("%s: step %ld reads sample %llu, past the %llu samples the Megatron order was built for",
                           sp->d->prefix, step + 1, (unsigned long long)k, (unsigned long long)sp->num_samples);
        if (read_sample(sp, k, inputs + (size_t)b * sp->T, targets + (size_t)b * sp->T, V) != 0) return CB_EFAIL;
    }
    return 0;
}

void sampler_describe(const sampler *sp, char *buf, size_t n)
{
    if (sp->kind == SAMPLER_RANDOM) {
        snprintf(buf, n,
                 "sampler random: windows of %d tokens at hashed positions of %s's whole token stream (seed %llu)",
                 sp->T + 1, sp->d->prefix, sp->seed);
        return;
    }
    snprintf(buf, n,
             "sampler megatron: %s GPTDataset order over %s (%llu sequences as documents, %llu tokens an epoch): %d "
             "epoch%s%s, %llu samples of %d tokens indexed, the first %llu read, seed %llu",
             MEGATRON_VERSION, sp->d->prefix, (unsigned long long)sp->d->nseq, (unsigned long long)sp->tokens_per_epoch,
             sp->num_epochs, sp->num_epochs == 1 ? "" : "s",
             sp->separate_final_epoch ? " (the final one shuffled apart)" : "",
             (unsigned long long)sp->num_samples_built, sp->T + 1, (unsigned long long)sp->num_samples, sp->seed);
}
