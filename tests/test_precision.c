/* bf16 mixed precision: the whole model's gradient and loss against the fp32 model on the same
 * weights and tokens (within bf16's precision: 8 significant bits, a relative rounding error of
 * at most 2^-9 per rounded tensor), recomputation and resumption bit for bit, the command line
 * (--precision, the ISA it names, a run capped below AMX with DNNL_MAX_CPU_ISA); stochastic
 * rounding to bf16 (unbiased, deterministic across threads and splits, NaN/Inf kept, no overflow). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <float.h>
#include <omp.h>

#include "../kernels/bf16.h"
#include "../kernels/onednn.h"
#include "../model/gpt.h"
#include "../common/machine.h"
#include "check.h"

static model_config small(int parallel, int learned, int tied, int V)
{
    model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "small");
    c.L = 2, c.C = 64, c.NH = 4, c.HS = 16, c.V = V, c.max_T = 64;
    c.rotary_pct = learned ? 0.0 : 0.25, c.rotary_base = 10000;
    c.parallel_residual = parallel, c.pos = learned ? POS_LEARNED : POS_ROTARY, c.tied_embeddings = tied;
    return c;
}

/* ||a - b|| / ||b|| over n floats */
static double rel_l2(const float *a, const float *b, size_t n)
{
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        r += (double)b[i] * b[i];
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

/* The same weights and tokens through both precisions. Tolerances: the loss within 1e-2 relative,
 * each parameter tensor's gradient within 5e-2 relative L2 and the whole gradient within 2e-2
 * (bf16 rounding of the matmul inputs, about 2^-9 relative each, compounded over the layers;
 * measured 0.8% and 1.4% on these shapes; with the weights at 10x the initialisation the model is
 * chaotic, loss 40, and both precisions diverge from each other by 50-100%). */
static void check_against_fp32(int parallel, int learned, int tied, const char *label)
{
    model_config c = small(parallel, learned, tied, 97);
    gpt_model a, b;
    CHECK(gpt_init(&a, &c, 2, 24, 0, PRECISION_FP32) == 0 && gpt_init(&b, &c, 2, 24, 0, PRECISION_BF16_MIXED) == 0,
          "%s: init failed", label);
    gpt_init_weights(&a, 11);
    for (size_t i = 0; i < a.w.nparams; i++) a.w.params[i] *= 3.0f; /* every path carries signal, short of chaos */
    fill_tokens(&a, 5);
    copy_weights_and_tokens(&b, &a);
    double la = NAN, lb = NAN;
    CHECK(train_micro_step(&a, 1.0f, &la) == 0, "%s: fp32 step failed", label);
    CHECK(train_micro_step(&b, 1.0f, &lb) == 0, "%s: bf16-mixed step failed", label);
    CHECK(isfinite(lb) && fabs(lb - la) <= 1e-2 * fabs(la), "%s: loss bf16-mixed %.6f vs fp32 %.6f", label, lb, la);
    double all = rel_l2(b.w.grads, a.w.grads, a.w.nparams);
    CHECK(all <= 2e-2, "%s: whole gradient differs by %.3g relative L2", label, all);
    for (int k = 0; k < P_COUNT; k++) {
        if (!a.w.sizes[k] || (k == P_UNEMBED && tied)) continue;
        double e = rel_l2(b.w.g[k], a.w.g[k], a.w.sizes[k]);
        char name[96];
        gpt_param_name(&a, k, 0, name, sizeof name);
        CHECK(e <= 5e-2, "%s: gradient of %s (all layers) differs by %.3g relative L2", label, name, e);
    }
    /* the master weights stay fp32 and untouched by the forward */
    CHECK(memcmp(a.w.params, b.w.params, a.w.nparams * sizeof(float)) == 0,
          "%s: the forward changed the master weights", label);
    gpt_free(&a), gpt_free(&b);
}

static void test_bf16_gradient_vs_fp32(void)
{
    check_against_fp32(1, 0, 0, "neox (parallel residual, rotary)");
    check_against_fp32(0, 1, 1, "gpt3 (sequential, learned positions, tied)");
}

static void test_bf16_loss_at_init(void)
{
    model_config c = small(1, 0, 0, 512);
    gpt_model m;
    CHECK(gpt_init(&m, &c, 2, 32, 0, PRECISION_BF16_MIXED) == 0, "init failed");
    gpt_init_weights(&m, 3);
    fill_tokens(&m, 9);
    double loss = NAN;
    CHECK(gpt_forward(&m, 1.0f, &loss) == 0, "forward failed");
    CHECK(fabs(loss - log(512.0)) < 0.05, "bf16-mixed loss at init %.4f, expected about ln V = %.4f", loss, log(512.0));
    gpt_free(&m);
}

/* --recompute rebuilds the same bf16 activations: identical gradients. */
static void test_bf16_recompute_identical(void)
{
    model_config c = small(1, 0, 0, 97);
    gpt_model a, b;
    CHECK(gpt_init(&a, &c, 2, 24, 0, PRECISION_BF16_MIXED) == 0 &&
              gpt_init(&b, &c, 2, 24, 1, PRECISION_BF16_MIXED) == 0,
          "init failed");
    gpt_init_weights(&a, 4);
    fill_tokens(&a, 2);
    copy_weights_and_tokens(&b, &a);
    double la = NAN, lb = NAN;
    CHECK(train_micro_step(&a, 1.0f, &la) == 0, "step failed");
    CHECK(train_micro_step(&b, 1.0f, &lb) == 0, "recompute step failed");
    CHECK(la == lb && memcmp(a.w.grads, b.w.grads, a.w.nparams * sizeof(float)) == 0,
          "bf16-mixed --recompute changes the gradients");
    gpt_free(&a), gpt_free(&b);
}

/* After updates the bf16 copies follow the new master weights: the next forward gives the loss a
 * fresh model given the same master weights gives, bit for bit. */
static void test_bf16_copy_follows_update(void)
{
    model_config c = small(1, 0, 0, 97);
    gpt_model m, f;
    CHECK(gpt_init(&m, &c, 1, 8, 0, PRECISION_BF16_MIXED) == 0 && gpt_init(&f, &c, 1, 8, 0, PRECISION_BF16_MIXED) == 0,
          "init failed");
    gpt_init_weights(&m, 8);
    fill_tokens(&m, 1);
    adamw_params hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.0f};
    double before = NAN, loss = NAN, fresh = NAN;
    for (int s = 0; s < 2; s++) {
        CHECK(train_micro_step(&m, 1.0f, &loss) == 0, "step failed");
        if (s == 0) before = loss;
        gpt_update(&m, &hp, gpt_grad_norm(&m), 1.0f);
    }
    CHECK(gpt_forward(&m, 1.0f, &loss) == 0, "forward failed");
    copy_weights_and_tokens(&f, &m);
    CHECK(gpt_forward(&f, 1.0f, &fresh) == 0, "fresh forward failed");
    CHECK(loss == fresh && loss != before,
          "after two updates: loss %.9g, a fresh model on the same weights %.9g (first %.9g)", loss, fresh, before);
    gpt_free(&m), gpt_free(&f);
}

/* d(logits) is made in the forward for the announced backward scale; a backward given another scale
 * recomputes it: both paths give the same gradients, bit for bit. */
static void test_bf16_backward_scale_paths(void)
{
    model_config c = small(1, 0, 0, 97);
    gpt_model a, b;
    CHECK(gpt_init(&a, &c, 2, 16, 0, PRECISION_BF16_MIXED) == 0 &&
              gpt_init(&b, &c, 2, 16, 0, PRECISION_BF16_MIXED) == 0,
          "init failed");
    gpt_init_weights(&a, 6);
    fill_tokens(&a, 4);
    copy_weights_and_tokens(&b, &a);
    double la, lb;
    gpt_zero_grad(&a); /* announced 1, given 1/3: the second pass */
    CHECK(gpt_forward(&a, 1.0f, &la) == 0 && gpt_backward(&a, 1.0f / 3.0f, NULL) == 0, "step failed");
    CHECK(train_micro_step(&b, 1.0f / 3.0f, &lb) == 0, "step failed"); /* announced and given 1/3 */
    CHECK(la == lb && memcmp(a.w.grads, b.w.grads, a.w.nparams * sizeof(float)) == 0,
          "d(logits) from the forward and from a second pass give different gradients");
    gpt_free(&a), gpt_free(&b);
}

/* ---------------------------------------------------------------- stochastic rounding */

/* The mean of many stochastic roundings of x is x, within 4 standard errors. */
static void check_sr_unbiased(float x, const char *what)
{
    enum { N = 200000 };
    float *src = malloc(N * sizeof(float));
    bf16 *dst = malloc(N * sizeof(bf16));
    for (int i = 0; i < N; i++) src[i] = x;
    bf16_from_floats_sr(dst, src, N, 42, 7, 0);
    float lo = bf16_to_float(dst[0]), hi = lo;
    double sum = 0;
    for (int i = 0; i < N; i++) {
        float v = bf16_to_float(dst[i]);
        sum += v;
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
    double mean = sum / N, p = (fabs((double)x) - fabs((double)lo)) / (fabs((double)hi) - fabs((double)lo));
    double se = fabs((double)hi - lo) * sqrt(p * (1 - p) / N);
    CHECK(fabs(mean - x) <= 4 * se + 1e-12,
          "%s: mean of %d stochastic roundings of %.9g is %.9g (4 standard errors %.3g)", what, N, x, mean, 4 * se);
    CHECK(hi != lo, "%s: stochastic rounding of %.9g never varied", what, x);
    free(src), free(dst);
}

static void test_bf16_sr_unbiased(void)
{
    check_sr_unbiased(1.0f + 0x1p-10f, "1 + 2^-10 (1/8 of an ulp)");
    check_sr_unbiased(-3.0f - 0x1p-7f * 0.7f, "-3 - 0.35 ulp");
    check_sr_unbiased(1e-3f, "1e-3");
    /* an update below half an ulp: round to nearest loses it, stochastic rounding keeps it in expectation */
    float w = 1.0f, u = 1e-4f;
    CHECK(bf16_to_float(bf16_from_float(w + u)) == w, "round to nearest kept an update below half an ulp");
    check_sr_unbiased(w + u, "1 + 1e-4 (an update below half an ulp)");
}

/* The same bits whatever the thread count and however the tensor is split across calls. */
static void test_bf16_sr_deterministic(void)
{
    enum { N = 300000 };
    float *src = malloc(N * sizeof(float));
    bf16 *a = malloc(N * sizeof(bf16)), *b = malloc(N * sizeof(bf16)), *c = malloc(N * sizeof(bf16));
    unsigned st = 5u;
    rand_fill(src, N, &st);
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    bf16_from_floats_sr(a, src, N, 9, 3, 0);
    omp_set_num_threads(2);
    bf16_from_floats_sr(b, src, N, 9, 3, 0);
    omp_set_num_threads(threads);
    bf16_from_floats_sr(c, src, 1000, 9, 3, 0);
    bf16_from_floats_sr(c + 1000, src + 1000, N - 1000, 9, 3, 1000);
    CHECK(memcmp(a, b, N * sizeof(bf16)) == 0, "stochastic rounding differs between 1 and 2 threads");
    CHECK(memcmp(a, c, N * sizeof(bf16)) == 0, "stochastic rounding differs when the tensor is split in two calls");
    bf16_from_floats_sr(b, src, N, 9, 4, 0);
    CHECK(memcmp(a, b, N * sizeof(bf16)) != 0, "another step gives the same random bits");
    free(src), free(a), free(b), free(c);
}

/* NaN and infinities pass through; nothing finite becomes infinite; exact values stay exact. */
static void test_bf16_sr_edges(void)
{
    const float big = 0x1.fep127f; /* the largest finite bf16 */
    const float in[] = {NAN,      -NAN,        INFINITY, -INFINITY, big,  -big,     FLT_MAX,
                        -FLT_MAX, 0x1.ffp127f, 0.0f,     -0.0f,     1.0f, 0x1p-130f};
    const int n = (int)(sizeof in / sizeof in[0]);
    for (uint64_t s = 0; s < 64; s++) {
        bf16 out[16];
        bf16_from_floats_sr(out, in, (size_t)n, s, s * 7, 0);
        CHECK(isnan(bf16_to_float(out[0])) && isnan(bf16_to_float(out[1])), "NaN did not stay NaN");
        CHECK(bf16_to_float(out[2]) == INFINITY && bf16_to_float(out[3]) == -INFINITY,
              "infinity did not stay infinite");
        for (int i = 4; i < 9; i++)
            CHECK(isfinite(bf16_to_float(out[i])) && fabsf(bf16_to_float(out[i])) == big,
                  "%.9g rounded stochastically to %.9g, not the largest finite bf16", in[i], bf16_to_float(out[i]));
        CHECK(bf16_to_float(out[9]) == 0.0f && bf16_to_float(out[11]) == 1.0f, "an exact bf16 value changed");
        CHECK(isfinite(bf16_to_float(out[12])), "a subnormal became non-finite");
    }
}

#define TINY                                                                                                      \
    "--model", "pythia-14m", "--layers", "2", "--d-model", "64", "--heads", "4", "--vocab", "256", "--seq", "32", \
        "--micro-batch", "2", "--no-predict", "--peak-gflops", "100", "--quiet", "--discard-steps", "0"

static int losses_of(const char *csv, double *out, int cap) { return csv_column(csv, "loss", out, cap); }

/* A bf16-mixed run resumed from its step-3 checkpoint repeats the uninterrupted run's losses bit for
 * bit (the bf16 copies are remade from the fp32 master weights the checkpoint holds). */
static void test_cli_bf16_resume_identical(void)
{
    char err[8192];
    char *dir = test_tmpdir();
    if (!dir) return;
    char ck[512], full[512], res[512], latest[600], step6[600];
    snprintf(ck, sizeof ck, "%s/ckpt", dir);
    snprintf(full, sizeof full, "%s/full.csv", dir);
    snprintf(res, sizeof res, "%s/resumed.csv", dir);
    const char *a[] = {"train", TINY, "--precision", "bf16-mixed", "--steps", "6", "--save", ck, "--save-every", "3",
                       "--csv", full, NULL};
    CHECK(cli_run(a, NULL, 0, err, sizeof err) == 0, "bf16-mixed run with checkpoints: %s", err);
    /* back to the step-3 checkpoint, as if the run had stopped there */
    snprintf(latest, sizeof latest, "%s/latest", ck);
    snprintf(step6, sizeof step6, "%s/step-00000006", ck);
    write_text(latest, "step-00000003\n");
    rm_tree(step6);
    const char *r[] = {"train", TINY, "--precision", "bf16-mixed", "--steps", "6", "--resume", ck, "--csv", res, NULL};
    CHECK(cli_run(r, NULL, 0, err, sizeof err) == 0 && strstr(err, "resumed from"), "resume: %s", err);
    double lf[8], lr[8];
    int nf = losses_of(full, lf, 8), nr = losses_of(res, lr, 8);
    CHECK(nf == 6 && nr == 3, "logs: %d uninterrupted steps, %d resumed", nf, nr);
    for (int i = 0; nf == 6 && nr == 3 && i < 3; i++)
        CHECK(lf[3 + i] == lr[i], "step %d: uninterrupted loss %.9g, resumed %.9g", 4 + i, lf[3 + i], lr[i]);
    rm_tree(dir);
}

static void test_cli_bf16_precision_flag(void)
{
    char out[65536], err[8192];
    const char *bad[] = {"train", TINY, "--steps", "1", "--precision", "fp16", NULL};
    int rc = cli_run(bad, NULL, 0, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "--precision") && strstr(err, "fp16") && !strchr(strchr(err, '\n') + 1, '\n'),
          "unknown precision: status %d, %s", rc, err);
    char *dir = test_tmpdir();
    if (!dir) return;
    char sum[512];
    snprintf(sum, sizeof sum, "%s/summary.csv", dir);
    const char *ok[] = {"train", TINY, "--steps", "2", "--precision", "bf16-mixed", "--summary-csv", sum, NULL};
    CHECK(cli_run(ok, out, sizeof out, err, sizeof err) == 0, "bf16-mixed run: %s", err);
    CHECK(strstr(out, "oneDNN") && strstr(out, onednn_isa()), "the output does not name oneDNN's ISA %s:\n%s",
          onednn_isa(), out);
    char text[8192];
    slurp(sum, text, sizeof text);
    CHECK(strstr(text, "precision") && strstr(text, "bf16-mixed"), "summary CSV lacks the precision:\n%s", text);
    rm_tree(dir);
}

/* A run capped below AMX (what an AMX machine falls back to) still trains and names that ISA. */
static void test_cli_bf16_isa_capped(void)
{
    char out[65536], err[8192];
    setenv("DNNL_MAX_CPU_ISA", "AVX512_CORE_BF16", 1);
    const char *a[] = {"train", TINY, "--steps", "2", "--precision", "bf16-mixed", NULL};
    int rc = cli_run(a, out, sizeof out, err, sizeof err);
    unsetenv("DNNL_MAX_CPU_ISA");
    CHECK(rc == 0, "bf16-mixed under DNNL_MAX_CPU_ISA=AVX512_CORE_BF16: %s", err);
    CHECK(!strstr(out, "amx"), "capped below AMX, yet the output names AMX:\n%s", out);
    /* a CPU without AVX-512 (an AVX2 one) stays at its own level, below the cap */
    const char *level = machine_has_cpu_flag("avx512f") ? "avx512_core" : "avx2";
    CHECK(strstr(out, level), "the output does not name the ISA in effect (%s):\n%s", level, out);
    /* below AVX-512 oneDNN 2.6 has no bf16 matmul: the products run widened to fp32 on sgemm, said */
    setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
    rc = cli_run(a, out, sizeof out, err, sizeof err);
    unsetenv("DNNL_MAX_CPU_ISA");
    CHECK(rc == 0, "bf16-mixed under DNNL_MAX_CPU_ISA=AVX2: status %d, %s", rc, err);
    CHECK(strstr(out, "avx2") && strstr(out, "costbench:bf16-widened-sgemm") && strstr(out, "widened to fp32"),
          "AVX2: the output does not name the widened fallback:\n%s", out);
}

/* The model's rows of operations agree with the precision table: bf16 storage exactly for the
 * full-bf16 precisions, bf16 products exactly where activations are 2 bytes. */
static void test_prec_rows_match_table(void)
{
    for (int k = 0; k < PRECISION_COUNT; k++) {
        const train_precision p = (train_precision)k;
        const precision_info *pi = precision_info_of(p);
        CHECK((gpt_prec_store(p) == ELEM_BF16) == pi->weights_bf16, "%s: storage disagrees with the table",
              pi->name);
        CHECK((gpt_prec_act(p) == ELEM_BF16) == (pi->act_bytes == 2), "%s: products disagree with the table",
              pi->name);
    }
}

const test_case tests_precision[] = {
    {"precision: the model's rows agree with the precision table", test_prec_rows_match_table},
    {"bf16-mixed: gradient and loss against fp32 on the same weights", test_bf16_gradient_vs_fp32},
    {"bf16-mixed: loss at init near ln V", test_bf16_loss_at_init},
    {"bf16-mixed: --recompute gives identical gradients", test_bf16_recompute_identical},
    {"bf16-mixed: the bf16 weights follow the updated master weights", test_bf16_copy_follows_update},
    {"bf16-mixed: d(logits) from the forward or a second pass, the same gradients", test_bf16_backward_scale_paths},
    {"bf16 stochastic rounding: unbiased, and keeps an update below half an ulp in expectation", test_bf16_sr_unbiased},
    {"bf16 stochastic rounding: the same bits on 1 or 2 threads and split across calls", test_bf16_sr_deterministic},
    {"bf16 stochastic rounding: NaN and infinities kept, no overflow to infinity", test_bf16_sr_edges},
    {"cli: bf16-mixed resumed run repeats the losses bit for bit", test_cli_bf16_resume_identical},
    {"cli: --precision checked, named in the output and the summary CSV", test_cli_bf16_precision_flag},
    {"cli: bf16-mixed under DNNL_MAX_CPU_ISA below AMX, and widened to fp32 sgemm below AVX-512", test_cli_bf16_isa_capped},
    {NULL, NULL},
};
