/* Full bf16 (train --precision bf16): the AdamW update on bf16 state (vectorised against its
 * scalar definition bit for bit, independent of threads and of how the parameters are split,
 * nearest rounding losing an update below half an ulp while stochastic rounding keeps it in
 * expectation, NaN kept, no overflow), the model (the forward and backward of bf16-mixed on the
 * same bf16 weights, bit for bit; the memory estimate), BF16 safetensors (round trip exact,
 * conversions), and the command line (--rounding, bit-identical resume from a BF16 checkpoint,
 * --init across precisions, 1 and 2 MPI ranks with and without ZeRO-1). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/adamw.h"
#include "../model/gpt.h"
#include "../model/safetensors.h"
#include "check.h"

static const adamw_params HP = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.0f};

/* n random bf16 weights and moments (v > 0) and fp32 gradients, deterministic in seed. */
typedef struct {
    bf16 *p, *m, *v;
    float *g, *p32;
    size_t n;
} state;

static int state_new(state *s, size_t n, unsigned seed)
{
    s->n = n;
    s->p = malloc(n * 2), s->m = malloc(n * 2), s->v = malloc(n * 2), s->g = malloc(n * 4), s->p32 = malloc(n * 4);
    if (!s->p || !s->m || !s->v || !s->g || !s->p32) return -1;
    float *tmp = malloc(n * 4);
    if (!tmp) return -1;
    rand_fill(tmp, n, &seed);
    for (size_t i = 0; i < n; i++) s->p[i] = bf16_from_float(tmp[i] * 0.05f);
    rand_fill(tmp, n, &seed);
    for (size_t i = 0; i < n; i++) s->m[i] = bf16_from_float(tmp[i] * 1e-3f);
    rand_fill(tmp, n, &seed);
    for (size_t i = 0; i < n; i++) s->v[i] = bf16_from_float(tmp[i] * tmp[i] * 1e-6f + 1e-8f);
    rand_fill(s->g, n, &seed);
    free(tmp);
    return 0;
}

static void state_free(state *s) { free(s->p), free(s->m), free(s->v), free(s->g), free(s->p32); }

static int same_bits(const state *a, const state *b)
{
    return !memcmp(a->p, b->p, a->n * 2) && !memcmp(a->m, b->m, a->n * 2) && !memcmp(a->v, b->v, a->n * 2) &&
           !memcmp(a->p32, b->p32, a->n * 4);
}

static int copy_state(state *dst, const state *src)
{
    if (state_new(dst, src->n, 1) != 0) return -1;
    memcpy(dst->p, src->p, src->n * 2), memcpy(dst->m, src->m, src->n * 2), memcpy(dst->v, src->v, src->n * 2);
    memcpy(dst->g, src->g, src->n * 4);
    return 0;
}

/* The vectorised update equals the scalar definition bit for bit, in both roundings, over a size
 * that leaves a tail; and splitting the range (as per-tensor calls and ZeRO shards do) or
 * changing the thread count changes nothing. */
static void test_full_bf16_update_matches_reference(void)
{
    const size_t n = 3 * 4096 + 37;
    for (int sr = 0; sr < 2; sr++) {
        state a, b, c, d;
        if (state_new(&a, n, 7) != 0 || copy_state(&b, &a) != 0 || copy_state(&c, &a) != 0 || copy_state(&d, &a) != 0) {
            CHECK(0, "out of memory");
            return;
        }
        adamw_rounding r = {sr, 99, 1000};
        adamw_update_full_bf16(a.p, a.p32, a.g, a.m, a.v, n, &HP, 3, &r);
        adamw_update_full_bf16_ref(b.p, b.p32, b.g, b.m, b.v, n, &HP, 3, &r);
        CHECK(same_bits(&a, &b), "rounding %s: the vectorised update differs from the scalar definition",
              sr ? "stochastic" : "nearest");
        /* two calls, split at an odd place, with the offsets of their first elements */
        const size_t cut = 5001;
        adamw_rounding r1 = {sr, 99, 1000}, r2 = {sr, 99, 1000 + cut};
        adamw_update_full_bf16(c.p, c.p32, c.g, c.m, c.v, cut, &HP, 3, &r1);
        adamw_update_full_bf16(c.p + cut, c.p32 + cut, c.g + cut, c.m + cut, c.v + cut, n - cut, &HP, 3, &r2);
        CHECK(same_bits(&a, &c), "rounding %s: a split update differs from the whole one",
              sr ? "stochastic" : "nearest");
        int threads = omp_get_max_threads();
        omp_set_num_threads(1);
        adamw_update_full_bf16(d.p, d.p32, d.g, d.m, d.v, n, &HP, 3, &r);
        omp_set_num_threads(threads);
        CHECK(same_bits(&a, &d), "rounding %s: 1 thread differs from %d", sr ? "stochastic" : "nearest", threads);
        state_free(&a), state_free(&b), state_free(&c), state_free(&d);
    }
    /* indices across 2^32 (the vectorised hash's lanes are 32-bit: such a step is done one at a time) */
    state a, b;
    if (state_new(&a, 100, 3) != 0 || copy_state(&b, &a) != 0) return;
    adamw_rounding r = {1, 5, ((uint64_t)1 << 32) - 37};
    adamw_update_full_bf16(a.p, a.p32, a.g, a.m, a.v, 100, &HP, 2, &r);
    adamw_update_full_bf16_ref(b.p, b.p32, b.g, b.m, b.v, 100, &HP, 2, &r);
    CHECK(same_bits(&a, &b), "indices across 2^32: the vectorised update differs from the scalar definition");
    state_free(&a), state_free(&b);
}

/* The gradient norm's sum of squares: the same bits on 1 and 2 threads, and within 1e-12 of a
 * plain double sum. */
static void test_grad_sumsq_thread_invariant(void)
{
    const size_t n = 1000003;
    float *g = malloc(n * sizeof *g);
    if (!g) return;
    unsigned seed = 11;
    rand_fill(g, n, &seed);
    double ref = 0;
    for (size_t i = 0; i < n; i++) ref += (double)g[i] * g[i];
    int threads = omp_get_max_threads();
    double s2 = grad_sumsq(g, n);
    omp_set_num_threads(1);
    double s1 = grad_sumsq(g, n);
    omp_set_num_threads(threads);
    CHECK(s1 == s2, "sum of squares: %.17g on 1 thread, %.17g on %d", s1, s2, threads);
    CHECK(fabs(s1 - ref) <= 1e-12 * ref, "sum of squares %.17g, double reference %.17g", s1, ref);
    free(g);
}

/* Weight 1 (ulp 2^-7), constant gradient 1, lr 1e-3: the update (lr (1 + wd) at t = 1) is under
 * half an ulp. Nearest rounding leaves every weight at 1; stochastic rounding moves them by it on
 * average (mean within 4 standard errors of 1 - lr (1 + wd)). */
static void test_full_bf16_small_updates(void)
{
    const size_t n = 200000;
    bf16 *p = malloc(n * 2), *m = calloc(n, 2), *v = calloc(n, 2);
    float *g = malloc(n * 4);
    if (!p || !m || !v || !g) {
        CHECK(0, "out of memory");
        free(p), free(m), free(v), free(g);
        return;
    }
    for (int sr = 0; sr < 2; sr++) {
        for (size_t i = 0; i < n; i++) p[i] = 0x3f80, m[i] = v[i] = 0, g[i] = 1.0f;
        adamw_rounding r = {sr, 5, 0};
        adamw_update_full_bf16(p, NULL, g, m, v, n, &HP, 1, &r);
        double sum = 0, sumsq = 0;
        for (size_t i = 0; i < n; i++) {
            double x = bf16_to_float(p[i]);
            sum += x, sumsq += x * x;
        }
        double mean = sum / n, sd = sqrt(fmax(sumsq / n - mean * mean, 0)), se = sd / sqrt((double)n);
        double want = 1.0 - 1e-3 * (1.0 + 0.1);
        if (!sr) CHECK(sum == (double)n, "nearest rounding moved a weight: mean %.9g", mean);
        else
            CHECK(fabs(mean - want) <= 4 * se && se > 0, "stochastic rounding: mean %.9g, expected %.9g (se %.3g)",
                  mean, want, se);
    }
    free(p), free(m), free(v), free(g);
}

/* A NaN gradient makes its weight NaN (never a number that hides it); weights at the largest
 * finite bf16 pushed outwards stay finite under stochastic rounding. */
static void test_full_bf16_nan_and_overflow(void)
{
    enum { N = 64 };
    bf16 p[N], m[N], v[N];
    float g[N];
    for (int i = 0; i < N; i++) p[i] = 0x7f7f, m[i] = v[i] = 0, g[i] = -1.0f; /* largest finite, growing */
    g[3] = NAN;
    adamw_params hp = HP;
    hp.lr = 1e36f, hp.weight_decay = 0.0f; /* about an ulp of 3.4e38 a step */
    adamw_rounding r = {1, 3, 0};
    adamw_update_full_bf16(p, NULL, g, m, v, N, &hp, 1, &r);
    CHECK(isnan(bf16_to_float(p[3])) && isnan(bf16_to_float(m[3])),
          "a NaN gradient did not reach its weight and moment");
    for (int i = 0; i < N; i++)
        if (i != 3)
            CHECK(isfinite(bf16_to_float(p[i])), "element %d: the largest finite weight overflowed to %g", i,
                  bf16_to_float(p[i]));
}

static model_config tiny_cfg(int tied)
{
    model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "tiny");
    c.L = 2, c.C = 64, c.NH = 4, c.HS = 16, c.V = 97, c.max_T = 32;
    c.rotary_pct = 0.25, c.rotary_base = 10000, c.parallel_residual = 1, c.tied_embeddings = tied;
    return c;
}

/* On the same bf16-representable weights and tokens, full bf16 computes exactly what bf16-mixed
 * computes (the same bf16 products; the small tensors in fp32): loss and every gradient bit for
 * bit. The memory estimate: 2 bytes a weight (plus the fp32 copies of the small tensors) and 4
 * for both moments, against 4 and 8. */
static void test_full_bf16_model_matches_mixed(void)
{
    for (int tied = 0; tied < 2; tied++) {
        model_config c = tiny_cfg(tied);
        gpt_model a, b;
        if (gpt_init(&a, &c, 2, 16, 0, PRECISION_BF16_MIXED) != 0 ||
            gpt_init(&b, &c, 2, 16, 0, PRECISION_BF16_SR) != 0) {
            CHECK(0, "init failed");
            return;
        }
        gpt_init_weights(&a, 3);
        gpt_init_weights(&b, 3);
        for (int k = 0; k < P_COUNT; k++) /* a's weights: b's bf16 values */
            if (a.w.sizes[k]) bf16_to_floats(a.w.p[k], b.w.p_bf16[k], a.w.sizes[k]);
        gpt_params_changed(&a);
        fill_tokens(&a, 9);
        memcpy(b.inputs, a.inputs, 32 * sizeof(int)), memcpy(b.targets, a.targets, 32 * sizeof(int));
        double la = NAN, lb = NAN;
        CHECK(train_micro_step(&a, 1.0f, &la) == 0 && train_micro_step(&b, 1.0f, &lb) == 0, "steps failed");
        CHECK(la == lb, "tied %d: loss bf16-mixed %.9g, full bf16 %.9g", tied, la, lb);
        CHECK(!memcmp(a.w.grads, b.w.grads, a.w.nparams * sizeof(float)), "tied %d: the gradients differ", tied);
        gpt_free(&a), gpt_free(&b);
    }
    model_config c = tiny_cfg(0);
    gpt_mem mixed, full;
    gpt_estimate(&c, 2, 16, 0, PRECISION_BF16_MIXED, &mixed);
    gpt_estimate(&c, 2, 16, 0, PRECISION_BF16_SR, &full);
    CHECK(full.moments * 2 == mixed.moments && full.params < 0.55 * mixed.params && full.params > 0.5 * mixed.params,
          "estimate: weights %.0f vs %.0f bytes, moments %.0f vs %.0f", full.params, mixed.params, full.moments,
          mixed.moments);
}

/* BF16 tensors written and read back bit for bit; read as fp32 exactly widened; an F32 tensor
 * read into bf16 rounded to nearest; a non-finite BF16 value refused with the tensor's name. */
static void test_bf16_safetensors_round_trip(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char path[512];
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    bf16 h[6] = {0x3f80, 0xbf81, 0x0001, 0x7f7f, 0x8000, 0x4049};
    float f[3] = {1.00390625f, -2.5f, 3.0e-3f};
    st_out t[2] = {{.name = "w.bf16", .data = h, .bf16 = 1, .ndim = 2, .shape = {2, 3}},
                   {.name = "w.f32", .data = f, .bf16 = 0, .ndim = 1, .shape = {3}}};
    const char *meta[] = {"format", "pt"};
    CHECK(st_write(path, t, 2, meta, 1) == 0, "write failed");
    st_file sf;
    if (st_open(&sf, path) != 0) {
        CHECK(0, "cannot open what was written");
        return;
    }
    CHECK(!strcmp(st_find(&sf, "w.bf16")->dtype, "BF16") && !strcmp(st_find(&sf, "w.f32")->dtype, "F32"), "dtypes");
    bf16 back[6];
    float wide[6];
    int64_t s23[2] = {2, 3}, s3[1] = {3};
    CHECK(st_read_bf16(&sf, "w.bf16", back, s23, 2) == 0 && !memcmp(back, h, sizeof h), "BF16 round trip not exact");
    CHECK(st_read_f32(&sf, "w.bf16", wide, s23, 2) == 0, "BF16 read as fp32 failed");
    for (int i = 0; i < 6; i++) CHECK(wide[i] == bf16_to_float(h[i]), "element %d widened to %.9g", i, wide[i]);
    CHECK(st_read_bf16(&sf, "w.f32", back, s3, 1) == 0, "F32 read as bf16 failed");
    for (int i = 0; i < 3; i++)
        CHECK(back[i] == bf16_from_float(f[i]), "element %d: %04x, not rounded to nearest", i, back[i]);
    st_close(&sf);
    bf16 bad[2] = {0x3f80, 0x7fc0};
    st_out tb = {.name = "w.nan", .data = bad, .bf16 = 1, .ndim = 1, .shape = {2}};
    CHECK(st_write(path, &tb, 1, meta, 1) == 0 && st_open(&sf, path) == 0, "write NaN tensor");
    capture_stderr_begin();
    int rc = st_read_bf16(&sf, "w.nan", back, (int64_t[]){2}, 1);
    const char *err = capture_stderr_end();
    CHECK(rc != 0 && strstr(err, "w.nan") && strstr(err, "not finite"), "a NaN in a BF16 tensor: %d, %s", rc, err);
    st_close(&sf);
    rm_tree(dir);
}

#define TINY                                                                                                      \
    "--model", "pythia-14m", "--layers", "2", "--d-model", "64", "--heads", "4", "--vocab", "256", "--seq", "32", \
        "--micro-batch", "2", "--no-predict", "--peak-gflops", "100", "--quiet", "--discard-steps", "0"

/* --rounding: only with --precision bf16, only its two values; the summary names the precision. */
static void test_cli_rounding_flag(void)
{
    char err[4096];
    const char *fp[] = {"train", TINY, "--steps", "1", "--rounding", "nearest", NULL};
    int rc = cli_run(fp, NULL, 0, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "--rounding") && strstr(err, "fp32"), "--rounding with fp32: %d, %s", rc, err);
    const char *bad[] = {"train", TINY, "--steps", "1", "--precision", "bf16", "--rounding", "up", NULL};
    rc = cli_run(bad, NULL, 0, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "'up'"), "--rounding up: %d, %s", rc, err);
    char *dir = test_tmpdir();
    if (!dir) return;
    char sum[512], txt[4096];
    for (int near = 0; near < 2; near++) {
        snprintf(sum, sizeof sum, "%s/s%d.csv", dir, near);
        const char *ok[] = {"train",         TINY,   "--steps",    "2",
                            "--precision",   "bf16", "--rounding", near ? "nearest" : "stochastic",
                            "--summary-csv", sum,    NULL};
        CHECK(cli_run(ok, NULL, 0, err, sizeof err) == 0, "bf16 run: %s", err);
        slurp(sum, txt, sizeof txt);
        CHECK(strstr(txt, near ? ",bf16-nearest," : ",bf16-sr,") != NULL, "summary precision (%s): %s",
              near ? "nearest" : "stochastic", txt);
    }
    rm_tree(dir);
}

/* A full-bf16 run resumed from its step-3 checkpoint (BF16 weights and moments) repeats the
 * uninterrupted losses bit for bit. */
static void test_cli_full_bf16_resume(void)
{
    char err[8192];
    char *dir = test_tmpdir();
    if (!dir) return;
    char ck[512], full[512], res[512], latest[600], step6[600], model[600];
    snprintf(ck, sizeof ck, "%s/ckpt", dir);
    snprintf(full, sizeof full, "%s/full.csv", dir);
    snprintf(res, sizeof res, "%s/resumed.csv", dir);
    const char *a[] = {"train", TINY, "--precision", "bf16", "--steps", "6", "--save", ck, "--save-every", "3", "--csv",
                       full, NULL};
    CHECK(cli_run(a, NULL, 0, err, sizeof err) == 0, "run with checkpoints: %s", err);
    snprintf(model, sizeof model, "%s/step-00000003/model.safetensors", ck);
    st_file sf;
    if (st_open(&sf, model) == 0) {
        const st_tensor *w = st_find(&sf, "gpt_neox.layers.0.mlp.dense_h_to_4h.weight");
        CHECK(w && !strcmp(w->dtype, "BF16") && st_meta(&sf, "precision") &&
                  !strcmp(st_meta(&sf, "precision"), "bf16-sr"),
              "the checkpoint's weights are not BF16 with precision bf16-sr");
        st_close(&sf);
    } else {
        CHECK(0, "no %s", model);
    }
    snprintf(latest, sizeof latest, "%s/latest", ck);
    snprintf(step6, sizeof step6, "%s/step-00000006", ck);
    write_text(latest, "step-00000003\n");
    rm_tree(step6);
    const char *r[] = {"train", TINY, "--precision", "bf16", "--steps", "6", "--resume", ck, "--csv", res, NULL};
    CHECK(cli_run(r, NULL, 0, err, sizeof err) == 0, "resume: %s", err);
    double lf[8], lr[8];
    int nf = csv_column(full, "loss", lf, 8), nr = csv_column(res, "loss", lr, 8);
    CHECK(nf == 6 && nr == 3, "logs: %d uninterrupted steps, %d resumed", nf, nr);
    for (int i = 0; nf == 6 && nr == 3 && i < 3; i++)
        CHECK(lf[3 + i] == lr[i], "step %d: uninterrupted loss %.9g, resumed %.9g", 4 + i, lf[3 + i], lr[i]);
    /* the bf16 checkpoint's weights start an fp32 run (--init widens them exactly) */
    const char *i32[] = {"train", TINY, "--steps", "1", "--init", model, NULL};
    CHECK(cli_run(i32, NULL, 0, err, sizeof err) == 0, "--init of an fp32 run from BF16 weights: %s", err);
    rm_tree(dir);
}

/* Full bf16 over 2 MPI ranks: ZeRO-1 (each rank rounds its shard, by global element index) gives
 * the losses of plain data parallelism bit for bit; both within fp32 summation order (1e-4
 * relative) of 1 rank at the same global batch. */
static void test_cli_full_bf16_ranks(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char l1[512], l2[512], lz[512], out[8192], err[8192];
    snprintf(l1, sizeof l1, "%s/one.csv", dir);
    snprintf(l2, sizeof l2, "%s/two.csv", dir);
    snprintf(lz, sizeof lz, "%s/zero.csv", dir);
    const char *a1[] = {"train", TINY, "--precision", "bf16", "--global-batch", "4", "--steps", "4", "--csv", l1, NULL};
    const char *a2[] = {"train", TINY, "--precision", "bf16", "--global-batch", "4", "--steps", "4", "--csv", l2, NULL};
    const char *az[] = {"train", TINY, "--precision", "bf16", "--global-batch", "4", "--steps", "4", "--csv", lz,
                        "--zero", "1", NULL};
    CHECK(cli_run(a1, out, sizeof out, err, sizeof err) == 0, "1 rank: %s", err);
    CHECK(mpi_run(2, a2, out, sizeof out, err, sizeof err) == 0, "2 ranks: %s", err);
    CHECK(mpi_run(2, az, out, sizeof out, err, sizeof err) == 0, "2 ranks, ZeRO-1: %s", err);
    double x1[8], x2[8], xz[8];
    int n1 = csv_column(l1, "loss", x1, 8), n2 = csv_column(l2, "loss", x2, 8), nz = csv_column(lz, "loss", xz, 8);
    CHECK(n1 == 4 && n2 == 4 && nz == 4, "rows: %d, %d, %d", n1, n2, nz);
    for (int i = 0; i < 4 && n1 == 4 && n2 == 4 && nz == 4; i++) {
        CHECK(x2[i] == xz[i], "step %d: 2 ranks %.9g, with ZeRO-1 %.9g", i + 1, x2[i], xz[i]);
        CHECK(fabs(x2[i] - x1[i]) <= 1e-4 * fabs(x1[i]), "step %d: 2 ranks %.9g, 1 rank %.9g", i + 1, x2[i], x1[i]);
    }
    rm_tree(dir);
}

const test_case tests_fullbf16[] = {
    {"full bf16: the AdamW update matches its scalar definition, split and threads invariant",
     test_full_bf16_update_matches_reference},
    {"full bf16: the gradient norm's sum of squares is thread-count invariant", test_grad_sumsq_thread_invariant},
    {"full bf16: nearest rounding drops a sub-half-ulp update, stochastic keeps it on average",
     test_full_bf16_small_updates},
    {"full bf16: NaN reaches the weight, the largest finite weight does not overflow", test_full_bf16_nan_and_overflow},
    {"full bf16: forward and backward equal bf16-mixed's on the same bf16 weights; memory estimate",
     test_full_bf16_model_matches_mixed},
    {"safetensors: BF16 round trip exact, conversions, NaN refused", test_bf16_safetensors_round_trip},
    {"cli: --rounding checked and named in the summary", test_cli_rounding_flag},
    {"cli: full bf16 resumes bit for bit from BF16 checkpoints; --init from them in fp32", test_cli_full_bf16_resume},
    {"cli: full bf16 on 2 MPI ranks, ZeRO-1 bit-identical, 1 rank within summation order", test_cli_full_bf16_ranks},
    {NULL, NULL},
};
