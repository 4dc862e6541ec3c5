#include "matmul_bench.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../common/oplist.h"
#include "../common/precision.h"
#include "../common/timer.h"
#include "../kernels/bf16.h"
#include "../kernels/matmul.h"
#include "../kernels/onednn.h"
#include <omp.h>

/* What a shape runs as: a concurrent shape always fp32 sgemm, one call per thread (oneDNN
 * is called from one thread at a time); bf16 always on oneDNN; a weight B packed on oneDNN. */
typedef struct {
    mm_dtype dtype;
    mm_backend backend;
    int packed;
} mm_how;

/* The precision a shape asked for (its step total is counted under it). */
static mm_dtype mm_asked(const mm_shape *s) { return s->dtype == MM_BF16 ? MM_BF16 : MM_FP32; }

static mm_how mm_how_of(const mm_shape *s)
{
    mm_how h = {mm_asked(s), s->dtype == MM_BF16 ? MM_ONEDNN : s->backend, 0};
    if (s->concurrent) h.dtype = MM_FP32, h.backend = MM_OPENBLAS;
    if (h.backend != MM_ONEDNN) h.backend = MM_OPENBLAS;
    h.packed = h.backend == MM_ONEDNN && s->weight_b;
    return h;
}

static double a_elems(const mm_shape *s) { return (double)(s->trans_a ? s->k : s->n) * s->lda; }
static double b_elems(const mm_shape *s) { return (double)(s->trans_b ? s->m : s->k) * s->ldb; }
static double c_elems(const mm_shape *s) { return (double)s->n * s->ldc; }

/* The largest operands of the shapes: fp32 A, B, C (one C per thread for concurrent shapes), the
 * bf16 copies of A and B, and a packed B (oneDNN's blocks pad k and m; 64 elements bounds it). */
typedef struct {
    double a, b, c, a16, b16, packed_bytes;
} mm_sizes;

static mm_sizes mm_sizes_of(const mm_shape *s, int n, int nth)
{
    mm_sizes z = {0};
    double cc = 0, cmax = 0;
    for (int i = 0; i < n; i++) {
        mm_how h = mm_how_of(&s[i]);
        z.a = fmax(z.a, a_elems(&s[i]));
        z.b = fmax(z.b, b_elems(&s[i]));
        cmax = fmax(cmax, c_elems(&s[i]));
        if (s[i].concurrent) cc = fmax(cc, (double)mem_round_floats((size_t)c_elems(&s[i])));
        if (h.dtype == MM_BF16) z.a16 = fmax(z.a16, a_elems(&s[i])), z.b16 = fmax(z.b16, b_elems(&s[i]));
        if (h.packed)
            z.packed_bytes = fmax(z.packed_bytes, (s[i].k + 64.0) * (s[i].m + 64.0) * (h.dtype == MM_BF16 ? 2 : 4));
    }
    z.c = fmax(cmax, cc * nth);
    return z;
}

double mm_shapes_bytes(const mm_shape *s, int n)
{
    int nth = omp_get_max_threads();
    mm_sizes z = mm_sizes_of(s, n, nth);
    return 4.0 * (z.a + z.b + z.c + 16.0 * nth) + 2.0 * (z.a16 + z.b16) + z.packed_bytes;
}

typedef struct {
    const mm_shape *s;
    mm_how how;
    onednn_shape os;
    float *A, *B, *C;
    bf16 *A16, *B16;   /* A and B rounded to bf16 (bf16 shapes) */
    onednn_packed pk;  /* B reordered for the current shape (packed shapes) */
    size_t c_stride;   /* floats between the threads' C buffers (concurrent shapes) */
    int rc;            /* the first error of a oneDNN call */
} mm_ctx;

static const void *mm_a(const mm_ctx *c) { return c->how.dtype == MM_BF16 ? (const void *)c->A16 : c->A; }
static const void *mm_b(const mm_ctx *c) { return c->how.dtype == MM_BF16 ? (const void *)c->B16 : c->B; }

static void mm_call(void *p)
{
    mm_ctx *c = p;
    const mm_shape *s = c->s;
    if (c->how.backend == MM_ONEDNN) {
        int rc = c->how.packed ? onednn_gemm_packed(&c->os, mm_a(c), &c->pk, NULL, c->C)
                               : onednn_gemm(&c->os, mm_a(c), mm_b(c), NULL, c->C);
        if (rc != KERNEL_OK && c->rc == KERNEL_OK) c->rc = rc;
        return;
    }
    if (s->concurrent) {
        /* every thread its own call, single-threaded inside the parallel region (OpenBLAS's
         * OpenMP build), as the attention kernel runs its heads */
#pragma omp parallel
        matmul_gemm(s->trans_a, s->trans_b, s->n, s->m, s->k, 1.0f, c->A, s->lda, c->B, s->ldb, 0.0f,
                    c->C + (size_t)omp_get_thread_num() * c->c_stride, s->ldc);
        return;
    }
    matmul_gemm(s->trans_a, s->trans_b, s->n, s->m, s->k, 1.0f, c->A, s->lda, c->B, s->ldb, 0.0f, c->C, s->ldc);
}

/* The weight's reorder into oneDNN's blocked layout (what a training step does once per
 * optimizer step for each weight and layout). */
static void mm_pack_call(void *p)
{
    mm_ctx *c = p;
    int rc = onednn_pack(&c->pk, &c->os, mm_b(c));
    if (rc != KERNEL_OK && c->rc == KERNEL_OK) c->rc = rc;
}

static int mm_onednn_failed(mm_ctx *c, char *msg, size_t n)
{
    if (c->rc == KERNEL_OK) return 0;
    snprintf(msg, n, "oneDNN: %s (%s)", kernel_strerror(c->rc), onednn_last_error());
    return -1;
}

static int mm_pack_check(void *p, char *msg, size_t n)
{
    mm_ctx *c = p;
    c->rc = KERNEL_OK;
    mm_pack_call(p);
    return mm_onednn_failed(c, msg, n);
}

static double mm_load(const mm_ctx *c, int which_b, size_t i)
{
    if (c->how.dtype == MM_BF16) return bf16_to_float((which_b ? c->B16 : c->A16)[i]);
    return (which_b ? c->B : c->A)[i];
}

/* 32 sampled outputs against a double-precision dot product of the operands as stored (bf16:
 * the rounded inputs, so that bf16's rounding is not in the error), within k * 2^-23 * sum|a b|:
 * what fp32 accumulation in any order, and the fp32 rounding of the output, can add. */
static int mm_check(void *p, char *msg, size_t n)
{
    mm_ctx *c = p;
    const mm_shape *s = c->s;
    c->rc = KERNEL_OK;
    mm_call(p);
    if (mm_onednn_failed(c, msg, n)) return -1;
    unsigned seed = 12345u;
    for (int t = 0; t < 32; t++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % (unsigned)s->n);
        seed = seed * 1103515245u + 12345u;
        int j = (int)((seed >> 8) % (unsigned)s->m);
        double ref = 0, mag = 0;
        for (int q = 0; q < s->k; q++) {
            double a = mm_load(c, 0, s->trans_a ? (size_t)q * s->lda + i : (size_t)i * s->lda + q);
            double b = mm_load(c, 1, s->trans_b ? (size_t)j * s->ldb + q : (size_t)q * s->ldb + j);
            ref += a * b;
            mag += fabs(a * b);
        }
        double got = c->C[(size_t)i * s->ldc + j], tol = (double)s->k * FLT_EPSILON * mag + 1e-6;
        if (!(fabs(got - ref) <= tol)) {
            snprintf(msg, n, "%s C[%d][%d] = %.7g, reference %.7g (tolerance %.3g)", mm_dtype_names[c->how.dtype], i, j,
                     got, ref, tol);
            return -1;
        }
    }
    return 0;
}

/* Buffers for the largest operands of the shapes (C: one per thread for concurrent shapes). */
static int mm_alloc(mm_ctx *ctx, const mm_shape *s, int n, int nth)
{
    mm_sizes z = mm_sizes_of(s, n, nth);
    double cc = 0;
    for (int i = 0; i < n; i++)
        if (s[i].concurrent) cc = fmax(cc, c_elems(&s[i]));
    ctx->c_stride = mem_round_floats((size_t)cc);
    ctx->A = mem_alloc((size_t)z.a, sizeof(float), "matmul A");
    ctx->B = mem_alloc((size_t)z.b, sizeof(float), "matmul B");
    ctx->C = mem_alloc((size_t)z.c, sizeof(float), "matmul C");
    if (!ctx->A || !ctx->B || !ctx->C) return CB_EFAIL;
    runner_fill(ctx->A, (size_t)z.a, 1u);
    runner_fill(ctx->B, (size_t)z.b, 2u);
    runner_fill(ctx->C, (size_t)z.c, 3u);
    if (z.a16 > 0) {
        ctx->A16 = mem_alloc((size_t)z.a16, sizeof(bf16), "matmul A (bf16)");
        ctx->B16 = mem_alloc((size_t)z.b16, sizeof(bf16), "matmul B (bf16)");
        if (!ctx->A16 || !ctx->B16) return CB_EFAIL;
        bf16_from_floats(ctx->A16, ctx->A, (size_t)z.a16);
        bf16_from_floats(ctx->B16, ctx->B, (size_t)z.b16);
    }
    return 0;
}

static void mm_ctx_free(mm_ctx *c)
{
    free(c->A), free(c->B), free(c->C), free(c->A16), free(c->B16);
    onednn_packed_free(&c->pk);
}

/* What a sweep measured, for its closing notes; step sums by the precision the shapes asked for. */
typedef struct {
    double t_start, best_gf[MM_NDTYPES], step_ms[MM_NDTYPES], step_flops[MM_NDTYPES], pack_step_ms[MM_NDTYPES];
    int skipped, capped, demoted, packed, asked[MM_NDTYPES], onednn, onednn_bf16, above_peak;
    char skipped_list[512];
    const char *impls[8];
    int impl_count[8], nimpl;
} mm_tally;

static void mm_tally_impl(mm_tally *t, const char *impl)
{
    for (int i = 0; i < t->nimpl; i++)
        if (strcmp(t->impls[i], impl) == 0) {
            t->impl_count[i]++;
            return;
        }
    if (t->nimpl < 8) t->impls[t->nimpl] = impl, t->impl_count[t->nimpl++] = 1;
}

/* The kernel a shape ran and its ISA level. */
static void mm_impl(const mm_ctx *c, const char **impl, const char **isa)
{
    if (c->how.backend == MM_OPENBLAS) {
        *impl = "cblas_sgemm", *isa = matmul_blas_core();
        return;
    }
    const char *p = c->how.packed ? onednn_impl_packed(&c->os) : onednn_impl(&c->os);
    *impl = p ? p : "?", *isa = onednn_isa();
}

static void mm_add_row(record *rec, const mm_ctx *c, const runner_result *r, double pack_ms, const mm_peaks *pk,
                       mm_tally *t)
{
    const mm_shape *sh = c->s;
    double flops = 2.0 * sh->n * sh->m * sh->k, gf = flops / r->s.median / 1e9, peak = pk->gflops[c->how.dtype];
    const mm_dtype d = mm_asked(sh);
    if (gf > t->best_gf[d]) t->best_gf[d] = gf;
    t->capped += r->capped;
    t->above_peak += peak > 0 && gf > peak;
    const char *impl, *isa;
    mm_impl(c, &impl, &isa);
    if (c->how.backend == MM_ONEDNN) {
        mm_tally_impl(t, impl);
        t->onednn++;
        t->onednn_bf16 += c->how.dtype == MM_BF16;
    }
    int row = record_add_row(rec);
    if (row < 0) return;
    const char *str[] = {sh->op, sh->phase, mm_dtype_names[c->how.dtype], mm_backend_names[c->how.backend], impl, isa};
    const int scol[] = {MM_OP, MM_PHASE, MM_DTYPE, MM_BACKEND, MM_IMPL, MM_ISA};
    for (size_t i = 0; i < sizeof scol / sizeof scol[0]; i++) record_str(rec, row, scol[i], str[i]);
    const double v[][2] = {{MM_N, sh->n}, {MM_K, sh->k}, {MM_M, sh->m}, {MM_COUNT, sh->count}, {MM_GF_MED, gf},
                           {MM_GF_MIN, flops / r->s.max / 1e9}, {MM_GF_MAX, flops / r->s.min / 1e9},
                           {MM_CV, r->s.cv_pct}, {MM_MS, r->s.median * 1e3},
                           {MM_PCT, peak > 0 ? 100.0 * gf / peak : NAN}, {MM_PACK_MS, pack_ms}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) record_num(rec, row, (int)v[i][0], v[i][1]);
    if (isfinite(sh->count)) {
        record_num(rec, row, MM_STEP_MS, sh->count * r->s.median * 1e3);
        t->step_ms[d] += sh->count * r->s.median * 1e3;
        t->step_flops[d] += sh->count * flops;
        if (isfinite(pack_ms)) t->pack_step_ms[d] += sh->count * pack_ms;
    }
}

/* Whether shape sh would overrun the budget, predicted from the best rate of its precision so far
 * (the first shape of each precision always runs); a skipped shape is listed. */
static int mm_skip(const mm_shape *sh, const runner_opts *ro, double budget_s, mm_tally *t)
{
    double best = t->best_gf[mm_asked(sh)];
    double predict = best > 0 ? 2.0 * sh->n * sh->m * sh->k / best / 1e9 * (ro->warmup + ro->min_samples + 1) : 0;
    if (predict < ro->min_time_s) predict = ro->min_time_s;
    if (!(best > 0 && budget_s > 0 && timer_now_s() - t->t_start + predict > budget_s)) return 0;
    t->skipped++;
    size_t l = strlen(t->skipped_list);
    snprintf(t->skipped_list + l, sizeof t->skipped_list - l, "%s%s %s n=%d k=%d m=%d", t->skipped > 1 ? ";" : "",
             mm_dtype_names[mm_asked(sh)], sh->op, sh->n, sh->k, sh->m);
    return 1;
}

/* Points ctx at shape sh: how it runs and its oneDNN description. */
static void mm_prepare(mm_ctx *c, const mm_shape *sh)
{
    c->s = sh;
    c->how = mm_how_of(sh);
    c->os = (onednn_shape){.ab = c->how.dtype == MM_BF16 ? ONEDNN_BF16 : ONEDNN_F32, .c = ONEDNN_F32,
                           .trans_a = sh->trans_a, .trans_b = sh->trans_b, .n = sh->n, .m = sh->m, .k = sh->k,
                           .lda = sh->lda, .ldb = sh->ldb, .ldc = sh->ldc};
}

/* One shape: the weight's reorder (packed shapes), then the product. */
static int mm_measure(mm_ctx *ctx, const mm_shape *sh, const runner_opts *ro, const mm_peaks *pk, record *rec,
                      mm_tally *t)
{
    char label[128];
    mm_prepare(ctx, sh);
    snprintf(label, sizeof label, "%s %s %s %s n=%d k=%d m=%d", mm_dtype_names[ctx->how.dtype],
             mm_backend_names[ctx->how.backend], sh->op, sh->phase, sh->n, sh->k, sh->m);
    runner_result r;
    double pack_ms = NAN;
    if (ctx->how.packed) {
        char plabel[160];
        snprintf(plabel, sizeof plabel, "%s: weight reorder", label);
        bench_case pc = {plabel, mm_pack_call, mm_pack_check, NULL};
        if (runner_run(ro, &pc, ctx, &r) != 0) return CB_EFAIL;
        pack_ms = r.s.median * 1e3;
        t->packed++;
    }
    bench_case bc = {label, mm_call, mm_check, NULL};
    if (runner_run(ro, &bc, ctx, &r) != 0) return CB_EFAIL;
    /* a concurrent sample ran one call per thread: the time per call is the share of one */
    if (sh->concurrent) {
        int nth = omp_get_max_threads();
        r.s.median /= nth, r.s.min /= nth, r.s.max /= nth;
    }
    t->demoted += mm_asked(sh) != ctx->how.dtype || (mm_asked(sh) == MM_FP32 && sh->backend != ctx->how.backend);
    mm_add_row(rec, ctx, &r, pack_ms, pk, t);
    return 0;
}

/* The oneDNN kernels that ran, and whether its bf16 is emulated. */
static void mm_notes_onednn(record *rec, const mm_tally *t)
{
    const char *cap = getenv("DNNL_MAX_CPU_ISA");
    char kernels[256] = "";
    for (int i = 0, l = 0; i < t->nimpl && l < (int)sizeof kernels; i++)
        l += snprintf(kernels + l, sizeof kernels - (size_t)l, "%s%s (%d shape%s)", i ? ", " : "", t->impls[i],
                      t->impl_count[i], t->impl_count[i] == 1 ? "" : "s");
    record_note(rec, "oneDNN %s at ISA %s (%s%s%s); kernels: %s", onednn_version(), onednn_isa(),
                cap ? "DNNL_MAX_CPU_ISA=" : "", cap ? cap : "DNNL_MAX_CPU_ISA unset: the best this CPU has",
                cap ? " caps it" : "", kernels);
    if (t->onednn_bf16 && !onednn_bf16_native())
        record_note(rec,
                    "bf16 without bf16 instructions: at ISA %s %s, so bf16 rows measure that emulation, not bf16 "
                    "hardware%s",
                    onednn_isa(),
                    onednn_bf16_widened() ? "oneDNN has no bf16 matmul and costbench widens bf16 to fp32 for "
                                            "OpenBLAS's sgemm (impl costbench:bf16-widened-sgemm)"
                                          : "oneDNN converts bf16 to fp32 and multiplies in fp32",
                    bf16_cpu_native() ? " (this CPU has AVX512_BF16: DNNL_MAX_CPU_ISA keeps oneDNN from it)" : "");
    if (t->packed)
        record_note(rec, "packed weights: each weight B reordered once into oneDNN's blocked layout before its product "
                         "is timed; pack_ms is that reorder's median, reordered once per optimizer step, not per call");
}

static void mm_notes(record *rec, const mm_tally *t, const runner_opts *ro, double budget_s)
{
    if (t->onednn) mm_notes_onednn(rec, t);
    if (t->demoted)
        record_note(rec, "concurrent shapes: fp32 OpenBLAS sgemm whatever the dtype and backend asked, one call per "
                         "thread at once (oneDNN is called from one thread at a time)");
    record_note(rec, "checked before timing: 32 sampled outputs per shape against a double-precision dot product of "
                     "the operands as stored (bf16 rows: the bf16-rounded inputs), within k x 2^-23 x sum|a b|, which "
                     "covers fp32 accumulation in any order");
    if (t->above_peak)
        record_note(rec,
                    "warning: %d row(s) above 100%% of their peak: that peak is wrong (measured while the machine was "
                    "busy, or given too low); rerun, or give --peak-gflops",
                    t->above_peak);
    if (t->skipped)
        record_note(rec, "time budget %.0f s reached: %d shape(s) not measured (%s); raise --budget-s to include them",
                    budget_s, t->skipped, t->skipped_list);
    if (t->capped)
        record_note(rec,
                    "%d shape(s) took so long that fewer than %d samples fit in %.0f s: their spread is from fewer "
                    "samples",
                    t->capped, ro->min_samples, ro->max_time_s);
    for (int d = 0; d < MM_NDTYPES; d++) {
        if (!(t->step_ms[d] > 0)) continue;
        record_note(rec,
                    "one training step's matmuls%s%s: %.3f TFLOP, %.1f ms predicted from these medians (%.1f GFLOP/s "
                    "overall)%s",
                    d == MM_BF16 ? " in bf16" : t->asked[MM_BF16] ? " in fp32" : "",
                    d == MM_BF16 && t->demoted ? " (concurrent shapes in fp32)" : "", t->step_flops[d] / 1e12,
                    t->step_ms[d], t->step_flops[d] / t->step_ms[d] / 1e6,
                    t->skipped ? "; incomplete: shapes were skipped" : "");
        if (t->pack_step_ms[d] > 0)
            record_note(rec,
                        "%s weight reorders: %.1f ms per optimizer step (each layer's weights once per layout: W for "
                        "bwd_input, W^T's blocks for fwd), not per micro-batch",
                        mm_dtype_names[d], t->pack_step_ms[d]);
    }
}

/* Whether oneDNN can run the precisions the shapes need on oneDNN at its ISA level (oneDNN 2.6
 * has no bf16 matmul below AVX-512, which DNNL_MAX_CPU_ISA can impose): one error line if not. */
static int mm_backend_ready(const mm_shape *s, int n)
{
    for (int d = 0; d < MM_NDTYPES; d++) {
        int need = 0;
        for (int i = 0; i < n && !need; i++) {
            mm_how h = mm_how_of(&s[i]);
            need = h.backend == MM_ONEDNN && h.dtype == (mm_dtype)d;
        }
        onednn_dtype t = d == MM_BF16 ? ONEDNN_BF16 : ONEDNN_F32;
        onednn_shape probe = {.ab = t, .c = ONEDNN_F32, .n = 16, .m = 16, .k = 16, .lda = 16, .ldb = 16, .ldc = 16};
        if (!need || onednn_impl(&probe)) continue;
        const char *cap = getenv("DNNL_MAX_CPU_ISA");
        return err_msg("oneDNN %s at ISA %s%s%s has no %s matmul (%s)%s", onednn_version(), onednn_isa(),
                       cap ? ", capped by DNNL_MAX_CPU_ISA=" : "", cap ? cap : "", mm_dtype_names[d],
                       onednn_last_error(),
                       d == MM_BF16 ? "; its bf16 matmul needs AVX-512 (avx512_core, where it emulates bf16, or above)"
                                    : "");
    }
    return 0;
}

int mm_run_peaks(const mm_shape *s, int n, const runner_opts *ro, double budget_s, const mm_peaks *peaks, record *rec)
{
    if (mm_backend_ready(s, n) != 0) return CB_EFAIL;
    mm_ctx ctx = {0};
    int nth = omp_get_max_threads(), rc = mm_alloc(&ctx, s, n, nth);
    mm_tally t = {.t_start = timer_now_s()};
    for (int i = 0; i < n; i++) t.asked[mm_asked(&s[i])]++;
    for (int i = 0; i < n && rc == 0; i++) {
        if (mm_skip(&s[i], ro, budget_s, &t)) continue;
        char label[96];
        snprintf(label, sizeof label, "%s %s %s n=%d k=%d m=%d", mm_dtype_names[mm_asked(&s[i])], s[i].op, s[i].phase,
                 s[i].n, s[i].k, s[i].m);
        runner_progress(i, n, label);
        rc = mm_measure(&ctx, &s[i], ro, peaks, rec, &t);
    }
    runner_progress(n, n, "");
    if (rc == 0) mm_notes(rec, &t, ro, budget_s);
    mm_ctx_free(&ctx);
    return rc;
}

int mm_run(const mm_shape *s, int n, const runner_opts *ro, double budget_s, double peak_gflops, record *rec)
{
    mm_peaks pk;
    for (int d = 0; d < MM_NDTYPES; d++) pk.gflops[d] = peak_gflops;
    return mm_run_peaks(s, n, ro, budget_s, &pk, rec);
}
