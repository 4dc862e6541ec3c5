/* The sampler (model/sampler.h): numpy's legacy MT19937 and RandomState.shuffle against values
 * numpy printed; Megatron-LM's document, sample and shuffle indices on small datasets worked out
 * by hand; the random kind is dataset_batch unchanged; the refusals; and `costbench train
 * --sampler`. Expected values were produced once with numpy 1.24.2 (Debian bookworm's
 * python3-numpy); the tests never run Python. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/err.h"
#include "../model/dataset.h"
#include "../model/sampler.h"
#include "check.h"

/* dir/NAME.bin/.idx from the texts, one document each (byte tokens). 0, or -1 after a failed check. */
static int build_docs(const char *dir, const char *name, const char *const *texts, int n, char *prefix, size_t psz)
{
    char paths[8][256], *files[8];
    for (int i = 0; i < n; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s-%d.txt", dir, name, i);
        write_file_bytes(paths[i], texts[i], strlen(texts[i]));
        files[i] = paths[i];
    }
    snprintf(prefix, psz, "%s/%s", dir, name);
    int rc = dataset_build(prefix, files, n, NULL);
    CHECK(rc == 0, "dataset_build %s failed", prefix);
    return rc == 0 ? 0 : -1;
}

/* Sample k of a megatron sampler as a string (byte tokens). */
static const char *sample_text(const sampler *sp, uint64_t k)
{
    static char s[64];
    int tok[64];
    s[0] = '\0';
    if (sp->T + 1 >= (int)sizeof s || sampler_sample(sp, k, tok) != 0) return s;
    for (int t = 0; t <= sp->T; t++) s[t] = (char)tok[t];
    s[sp->T + 1] = '\0';
    return s;
}

/* One line, "error: ..." and a newline. */
static int one_error_line(const char *e)
{
    return strncmp(e, "error: ", 7) == 0 && strchr(e, '\n') == e + strlen(e) - 1;
}

static int same_u32(const char *what, const uint32_t *x, const uint32_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] != want[i]) {
            check_fail(__FILE__, __LINE__, "%s[%zu] = %u, expected %u", what, i, x[i], want[i]);
            return 0;
        }
    return 1;
}

static void test_sampler_mt19937_numpy(void)
{
    /* numpy: bg = MT19937(); bg._legacy_seeding(S); bg.random_raw(n) */
    mt19937 r;
    mt19937_seed(&r, 5489); /* the reference implementation's default seed */
    CHECK(mt19937_next32(&r) == 3499211612U, "init_genrand(5489): first output is not 3499211612");
    mt19937_seed(&r, 1234);
    uint32_t raw[700];
    for (int i = 0; i < 700; i++) raw[i] = mt19937_next32(&r);
    const uint32_t want_raw[] = {822569775U, 2137449171U, 2671936806U};
    same_u32("raw(1234)", raw, want_raw, 3);
    CHECK(raw[623] == 1664263489U && raw[624] == 303637765U && raw[699] == 3323420446U,
          "outputs 623, 624 and 699 (across the regeneration): %u %u %u", raw[623], raw[624], raw[699]);
    /* numpy: a = numpy.arange(10); numpy.random.RandomState(1234).shuffle(a) */
    uint32_t a[10], b[1000];
    for (uint32_t i = 0; i < 10; i++) a[i] = i;
    mt19937_seed(&r, 1234);
    mt19937_shuffle_u32(&r, a, 10);
    const uint32_t want10[] = {7, 2, 9, 1, 0, 8, 4, 5, 6, 3};
    same_u32("shuffle(arange(10))", a, want10, 10);
    /* the same for arange(1000): b[0, 1, 2, 3, 499, 500, 997, 998, 999] */
    for (uint32_t i = 0; i < 1000; i++) b[i] = i;
    mt19937_seed(&r, 1234);
    mt19937_shuffle_u32(&r, b, 1000);
    const int at[] = {0, 1, 2, 3, 499, 500, 997, 998, 999};
    const uint32_t want1000[] = {681, 990, 155, 768, 604, 797, 294, 723, 815};
    for (int i = 0; i < 9; i++)
        CHECK(b[at[i]] == want1000[i], "shuffle(arange(1000))[%d] = %u, expected %u", at[i], b[at[i]], want1000[i]);
    uint64_t sum = 0;
    for (int i = 0; i < 1000; i++) sum += b[i];
    CHECK(sum == 999 * 1000 / 2, "shuffle(arange(1000)) is not a permutation");
    /* a perturbed expectation must fail the comparison */
    uint32_t wrong[10];
    memcpy(wrong, want10, sizeof wrong);
    wrong[3] ^= 1;
    int f = 0;
    for (int i = 0; i < 10; i++) f |= a[i] != wrong[i];
    CHECK(f, "the comparison accepts a wrong permutation");
    CHECK(mt19937_interval(&r, 0) == 0, "interval(0) is not 0");
}

/* Three documents "abcde", "fgh", "ijklmno" (15 tokens an epoch), T = 4, seed 1234.
 *
 * N = 4 samples: requested tokens 4*4 + 1 = 17 > 15, so 2 epochs; samples per epoch (15-1)/4 = 3,
 * samples before the final epoch ((2-1)*15 - 1)/4 = 3, so 4 - 3 = 1 from the final epoch, fewer
 * than int(0.80 * 3) = 2: the final epoch is separate. The document index is shuffle([0,1,2])
 * then shuffle([0,1,2]) with one RandomState(1234): [0,1,2] and [1,2,0] (numpy). The documents in
 * that order read "abcde|fgh|ijklmno|fgh|ijklmno|abcde" (30 tokens), so (30-1)/4 = 7 samples,
 * sample j starting at flat token 4j: 0 (doc pos 0, off 0), 4 (0,4), 8 (2,0), 12 (2,4), 16 (3,1),
 * 20 (4,2), 24 (4,6), and the end row 28 (5,3). The shuffle index is [0,3) shuffled then [3,7)
 * shuffled: [2,1,0] and [3,5,4,6] (numpy). So sample 0 is j = 2, flat 8..12 "ijklm"; sample 1 is
 * j = 1, "efghi"; sample 2 "abcde"; sample 3 is j = 3, flat 12..16 "mnofg".
 *
 * N = 5: 5 - 3 = 2 from the final epoch, not fewer than 2: one shuffle of all 6 entries, [2,1,2,0,
 * 1,0] (numpy): "ijklmno|fgh|ijklmno|abcde|fgh|abcde"; starts 0 (0,0), 4 (0,4), 8 (1,1), 12 (2,2),
 * 16 (2,6), 20 (3,3), 24 (4,2), end 28 (5,3); shuffle of [0,7): [5,0,3,4,2,6,1] (numpy), so the
 * samples read "defgh" (flat 20..24), "ijklm", "klmno", "oabcd", "ghijk". */
static void test_sampler_megatron_by_hand(void)
{
    char *dir = test_tmpdir(), prefix[512];
    const char *texts[] = {"abcde", "fgh", "ijklmno"};
    dataset d;
    if (!dir || build_docs(dir, "hand", texts, 3, prefix, sizeof prefix) != 0) return;
    if (dataset_open(&d, prefix) != 0) {
        CHECK(0, "cannot open %s", prefix);
        return;
    }
    CHECK(d.nseq == 3 && d.seq_sizes[1] == 3 && d.seq_start[2] == 8, "sizes and offsets: %d, %llu", d.seq_sizes[1],
          (unsigned long long)d.seq_start[2]);
    sampler sp;
    CHECK(sampler_init(&sp, SAMPLER_MEGATRON, &d, 4, 4, 1234) == 0, "init N=4");
    CHECK(sp.num_epochs == 2 && sp.separate_final_epoch && sp.num_samples_built == 7 && sp.ndocument_index == 6,
          "N=4: %d epochs, separate %d, %llu samples", sp.num_epochs, sp.separate_final_epoch,
          (unsigned long long)sp.num_samples_built);
    const uint32_t doc4[] = {0, 1, 2, 1, 2, 0}, smp4[] = {0, 0, 0, 4, 2, 0, 2, 4, 3, 1, 4, 2, 4, 6, 5, 3},
                   shf4[] = {2, 1, 0, 3, 5, 4, 6};
    if (sp.document_index && same_u32("document_index", sp.document_index, doc4, 6) &&
        same_u32("sample_index", sp.sample_index, smp4, 16) && same_u32("shuffle_index", sp.shuffle_index, shf4, 7)) {
        const char *want[] = {"ijklm", "efghi", "abcde", "mnofg"};
        for (int k = 0; k < 4; k++)
            CHECK(strcmp(sample_text(&sp, (uint64_t)k), want[k]) == 0, "N=4 sample %d: '%s', expected '%s'", k,
                  sample_text(&sp, (uint64_t)k), want[k]);
    }
    sampler_free(&sp);
    CHECK(sampler_init(&sp, SAMPLER_MEGATRON, &d, 4, 5, 1234) == 0, "init N=5");
    CHECK(sp.num_epochs == 2 && !sp.separate_final_epoch && sp.num_samples_built == 7, "N=5: %d epochs, separate %d",
          sp.num_epochs, sp.separate_final_epoch);
    const uint32_t doc5[] = {2, 1, 2, 0, 1, 0}, smp5[] = {0, 0, 0, 4, 1, 1, 2, 2, 2, 6, 3, 3, 4, 2, 5, 3},
                   shf5[] = {5, 0, 3, 4, 2, 6, 1};
    if (sp.document_index && same_u32("document_index", sp.document_index, doc5, 6) &&
        same_u32("sample_index", sp.sample_index, smp5, 16) && same_u32("shuffle_index", sp.shuffle_index, shf5, 7)) {
        const char *want[] = {"defgh", "ijklm", "klmno", "oabcd", "ghijk"};
        for (int k = 0; k < 5; k++)
            CHECK(strcmp(sample_text(&sp, (uint64_t)k), want[k]) == 0, "N=5 sample %d: '%s', expected '%s'", k,
                  sample_text(&sp, (uint64_t)k), want[k]);
    }
    sampler_free(&sp);
    dataset_close(&d);
    rm_tree(dir);
}

/* One document of exactly T+1 tokens "abcde", T = 4. One sample: that window. Six samples: 5
 * epochs (6*4 + 1 = 25 tokens), and since a sample starts on the token its predecessor ended on,
 * sample j of the unshuffled order is the window rotated by 4j mod 5; Megatron's shuffle
 * [5,2,3,1,0,4] (numpy) reads rotations 0, 3, 2, 4, 0, 1. */
static void test_sampler_megatron_one_window(void)
{
    char *dir = test_tmpdir(), prefix[512];
    const char *texts[] = {"abcde"};
    dataset d;
    if (!dir || build_docs(dir, "one", texts, 1, prefix, sizeof prefix) != 0) return;
    if (dataset_open(&d, prefix) != 0) {
        CHECK(0, "cannot open %s", prefix);
        return;
    }
    sampler sp;
    CHECK(sampler_init(&sp, SAMPLER_MEGATRON, &d, 4, 1, 1234) == 0, "init N=1");
    CHECK(sp.num_epochs == 1 && sp.num_samples_built == 1 && strcmp(sample_text(&sp, 0), "abcde") == 0,
          "N=1: %d epochs, '%s'", sp.num_epochs, sample_text(&sp, 0));
    int in[2 * 4], tg[2 * 4];
    CHECK(sampler_batch(&sp, 0, 0, 1, 1, in, tg, 256) == 0 && in[0] == 'a' && in[3] == 'd' && tg[0] == 'b' &&
              tg[3] == 'e',
          "inputs are not 'abcd' and targets 'bcde'");
    sampler_free(&sp);
    CHECK(sampler_init(&sp, SAMPLER_MEGATRON, &d, 4, 6, 1234) == 0, "init N=6");
    CHECK(sp.num_epochs == 5 && !sp.separate_final_epoch && sp.num_samples_built == 6, "N=6: %d epochs", sp.num_epochs);
    const char *want[] = {"abcde", "deabc", "cdeab", "eabcd", "abcde", "bcdea"};
    for (int k = 0; k < 6; k++)
        CHECK(strcmp(sample_text(&sp, (uint64_t)k), want[k]) == 0, "N=6 sample %d: '%s', expected '%s'", k,
              sample_text(&sp, (uint64_t)k), want[k]);
    /* step s, micro-batch m, row b of B = 1, G = 2 reads sample 2s + m */
    CHECK(sampler_batch(&sp, 1, 1, 1, 2, in, tg, 256) == 0 && in[0] == 'e' && tg[3] == 'd',
          "step 1 micro 1 is not sample 3 'eabcd'");
    capture_stderr_begin();
    int rc = sampler_batch(&sp, 3, 0, 1, 2, in, tg, 256);
    const char *e = capture_stderr_end();
    CHECK(rc != 0 && strstr(e, "past the 6 samples") && one_error_line(e), "sample 6 of 6 read: %d '%s'", rc, e);
    capture_stderr_begin();
    rc = sampler_batch(&sp, 0, 0, 1, 2, in, tg, 100); /* 'd' and 'e' are past a vocabulary of 100 */
    e = capture_stderr_end();
    CHECK(rc != 0 && strstr(e, "one.bin: token 100 at position 3 is outside") && one_error_line(e),
          "token outside [0, V): %d '%s'", rc, e);
    sampler_free(&sp);
    dataset_close(&d);
    rm_tree(dir);
}

/* The random kind is dataset_batch, unchanged; megatron's batches are its samples in order. */
static void test_sampler_random_and_layout(void)
{
    char *dir = test_tmpdir(), prefix[512];
    const char *texts[] = {"The quick brown fox jumps over the lazy dog. ",
                           "Pythia and GPT-NeoX rotate a quarter of each head."};
    dataset d;
    if (!dir || build_docs(dir, "two", texts, 2, prefix, sizeof prefix) != 0) return;
    if (dataset_open(&d, prefix) != 0) {
        CHECK(0, "cannot open %s", prefix);
        return;
    }
    enum { B = 3, T = 8, G = 6 };
    int in[B * T], tg[B * T], in2[B * T], tg2[B * T], tok[T + 1];
    sampler sp;
    CHECK(sampler_init(&sp, SAMPLER_RANDOM, &d, T, 30, 99) == 0, "init random");
    for (long s = 0; s < 5; s++) {
        CHECK(sampler_batch(&sp, s, 1, B, G, in, tg, 256) == 0 && dataset_batch(&d, 99, s, 1, in2, tg2, B, T, 256) == 0,
              "batch %ld", s);
        CHECK(memcmp(in, in2, sizeof in) == 0 && memcmp(tg, tg2, sizeof tg) == 0,
              "step %ld: random differs from dataset_batch", s);
    }
    sampler_free(&sp);
    CHECK(sampler_init(&sp, SAMPLER_MEGATRON, &d, T, 30, 99) == 0, "init megatron");
    for (long s = 0; s < 5; s++)
        for (int m = 0; m < G / B; m++) {
            CHECK(sampler_batch(&sp, s, m, B, G, in, tg, 256) == 0, "batch %ld %d", s, m);
            for (int b = 0; b < B; b++) {
                CHECK(sampler_sample(&sp, (uint64_t)(s * G + m * B + b), tok) == 0, "sample %ld", s * G + m * B + b);
                CHECK(memcmp(in + b * T, tok, T * sizeof *tok) == 0 &&
                          memcmp(tg + b * T, tok + 1, T * sizeof *tok) == 0,
                      "step %ld micro %d row %d is not sample %ld", s, m, b, s * G + m * B + b);
            }
        }
    char line[2048];
    sampler_describe(&sp, line, sizeof line);
    CHECK(strstr(line, "megatron: Megatron-LM core_v0.19.0 GPTDataset order") && strstr(line, "seed 99"),
          "describe: %s", line);
    sampler_free(&sp);
    sampler_free(NULL);
    dataset_close(&d);
    rm_tree(dir);
}

static void test_sampler_refusals(void)
{
    char *dir = test_tmpdir(), prefix[512];
    const char *texts[] = {"abcde"};
    dataset d;
    if (!dir || build_docs(dir, "small", texts, 1, prefix, sizeof prefix) != 0) return;
    if (dataset_open(&d, prefix) != 0) {
        CHECK(0, "cannot open %s", prefix);
        return;
    }
    struct {
        int T;
        uint64_t n;
        unsigned long long seed;
        const char *expect;
    } bad[] = {
        {4, 10, 1ULL << 32, "flag '--seed': 4294967296"},
        {1, 10, 1, "flag '--seq': 1"},
        {5, 10, 1, "small: 5 tokens, fewer than one sample of 6"},
        {4, 1ULL << 33, 1, "past 2^32 entries"},
        {4, 1ULL << 61, 1, "more tokens than 2^62"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sampler sp;
        capture_stderr_begin();
        int rc = sampler_init(&sp, SAMPLER_MEGATRON, &d, bad[i].T, bad[i].n, bad[i].seed);
        const char *e = capture_stderr_end();
        CHECK(rc == CB_EFAIL && one_error_line(e) && strstr(e, bad[i].expect),
              "case %zu: rc %d, expected one line with '%s': '%s'", i, rc, bad[i].expect, e);
        sampler_free(&sp);
    }
    sampler_kind k;
    CHECK(sampler_parse("megatron", &k) == 0 && k == SAMPLER_MEGATRON && sampler_parse("random", &k) == 0 &&
              k == SAMPLER_RANDOM && sampler_parse("Megatron", &k) != 0 &&
              strcmp(sampler_name(SAMPLER_MEGATRON), "megatron") == 0,
          "sampler_parse / sampler_name");
    dataset_close(&d);
    rm_tree(dir);
}

#define TINY                                                                                                        \
    "--model", "pythia-14m", "--layers", "1", "--d-model", "32", "--heads", "2", "--vocab", "256", "--micro-batch", \
        "2", "--seq", "16", "--steps", "2", "--no-predict", "--peak-gflops", "100", "--quiet"

static void test_sampler_cli(void)
{
    char *dir = test_tmpdir(), prefix[512], tiny[512], out[16384], err[4096];
    const char *texts[] = {"The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.",
                           "Pythia and GPT-NeoX rotate a quarter of each head.", "short"};
    const char *small[] = {"0123456789"};
    if (!dir || build_docs(dir, "cli", texts, 3, prefix, sizeof prefix) != 0 ||
        build_docs(dir, "tiny", small, 1, tiny, sizeof tiny) != 0)
        return;
    /* 89 + 50 + 5 = 144 tokens: (144 - 1) / 16 = 8 samples of 17 tokens in one epoch */
    struct {
        const char *args[8];
        int rc;
        const char *in_out, *in_err;
    } runs[] = {
        {{"--data", prefix, "--sampler", "megatron", NULL},
         0,
         "sampler megatron: Megatron-LM core_v0.19.0 GPTDataset order",
         NULL},
        {{"--data", prefix, "--global-batch", "4", NULL},
         0,
         "1 epoch, 8 samples of 17 tokens indexed, the first 8 read, seed 1234",
         NULL},
        {{"--data", prefix, "--sampler", "random", NULL}, 0, "sampler random: windows of 17 tokens", NULL},
        {{"--sampler", "megatron", NULL},
         0,
         "tokens: synthetic, uniform in [0, V) (--sampler has no effect without --data)",
         NULL},
        {{"--data", prefix, "--sampler", "shuffled", NULL}, 2, NULL, "flag '--sampler': unknown value 'shuffled'"},
        {{"--data", prefix, "--seed", "4294967296", NULL},
         2,
         NULL,
         "flag '--seed': 4294967296 is not a Megatron-LM seed"},
        {{"--data", tiny, NULL}, 1, NULL, "tiny: 10 tokens, fewer than one sample of 17"},
        {{"--data", prefix, "--vocab", "100", NULL}, 1, NULL, "cli.bin: token 1"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        const char *args[40] = {"train", TINY};
        int n = 0;
        while (args[n]) n++;
        for (int j = 0; runs[i].args[j]; j++) args[n++] = runs[i].args[j];
        args[n] = NULL;
        int rc = cli_run(args, out, sizeof out, err, sizeof err);
        CHECK(rc == runs[i].rc, "run %zu: exit %d, expected %d: %s", i, rc, runs[i].rc, err);
        if (runs[i].in_out)
            CHECK(strstr(out, runs[i].in_out) != NULL, "run %zu: no '%s' on stdout: %s", i, runs[i].in_out, out);
        if (runs[i].in_err)
            CHECK(strstr(err, runs[i].in_err) && one_error_line(err), "run %zu: expected one line with '%s': %s", i,
                  runs[i].in_err, err);
    }
    rm_tree(dir);
}

const test_case tests_sampler[] = {
    {"sampler: MT19937 and RandomState.shuffle equal numpy's for seed 1234", test_sampler_mt19937_numpy},
    {"sampler: megatron indices and samples of 3 documents, separate final epoch or not, by hand",
     test_sampler_megatron_by_hand},
    {"sampler: megatron over one document of T+1 tokens; batch layout, past the end, vocabulary",
     test_sampler_megatron_one_window},
    {"sampler: random is dataset_batch unchanged; megatron batches are samples s G + m B + b",
     test_sampler_random_and_layout},
    {"sampler: megatron refuses big seeds, T < 2, small datasets, huge indices with one line", test_sampler_refusals},
    {"sampler: cli train --sampler megatron|random, the default, the note, bad values", test_sampler_cli},
    {NULL, NULL},
};
