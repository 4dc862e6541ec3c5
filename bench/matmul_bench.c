#include "matmul_bench.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../common/timer.h"
#include "../kernels/attention.h"
#include "../kernels/matmul.h"
#include <omp.h>


static mm_shape mk(const char *op, const char *phase, int n, int k, int m, int ta, int tb, int lda, int ldb, int ldc,
                   double count)
{
    mm_shape s;
    memset(&s, 0, sizeof s);
    snprintf(s.op, sizeof s.op, "%s", op);
    snprintf(s.phase, sizeof s.phase, "%s", phase);
    s.n = n, s.k = k, s.m = m, s.trans_a = ta, s.trans_b = tb, s.lda = lda, s.ldb = ldb, s.ldc = ldc, s.count = count;
    return s;
}

int mm_shapes_sweep(mm_shape *out, int cap, const long *ns, int nn, const long *ks, int nk)
{
    int c = 0;
    for (int i = 0; i < nk; i++)
        for (int j = 0; j < nn && c < cap; j++) {
            int n = (int)ns[j], k = (int)ks[i];
            out[c++] = mk("linear", "fwd", n, k, k, 0, 1, k, k, k, NAN);
        }
    return c;
}

/* A linear layer Y (N, OC) = X (N, IC) W^T: forward, dX = dY W, dW = dY^T X (as kernels/matmul.c). */
static int linear3(mm_shape *o, const char *op, int N, int IC, int OC, double count)
{
    o[0] = mk(op, "fwd", N, IC, OC, 0, 1, IC, IC, OC, count);
    o[1] = mk(op, "bwd_input", N, OC, IC, 0, 0, OC, IC, IC, count);
    o[2] = mk(op, "bwd_weight", OC, N, IC, 1, 0, OC, IC, IC, count);
    return 3;
}

/* 4 linear layers and the logits, 3 products each; 6 attention products per causal row block */
int mm_shapes_transformer_count(int T) { return 5 * 3 + 6 * ((T + ATTENTION_BLOCK - 1) / ATTENTION_BLOCK); }

int mm_shapes_transformer(mm_shape *out, int cap, const model_config *cfg, int B, int T)
{
    if (cap < mm_shapes_transformer_count(T)) return CB_EFAIL;
    const int N = B * T, C = cfg->C, HS = cfg->HS, C3 = 3 * C;
    const double L = cfg->L, heads = (double)cfg->L * B * cfg->NH;
    int c = 0;
    c += linear3(out + c, "qkv", N, C, 3 * C, L);
    c += linear3(out + c, "attn_out", N, C, C, L);
    c += linear3(out + c, "mlp_up", N, C, 4 * C, L);
    c += linear3(out + c, "mlp_down", N, 4 * C, C, L);
    /* attention as kernels/attention.c runs it: per (batch, head), one head per thread, rows in
     * causal blocks of ATTENTION_BLOCK against keys [0, r1), with the fused QKV layout's strides */
    for (int r0 = 0; r0 < T && c + 6 + 3 <= cap; r0 += ATTENTION_BLOCK) {
        int r1 = r0 + ATTENTION_BLOCK < T ? r0 + ATTENTION_BLOCK : T, nr = r1 - r0;
        out[c++] = mk("attn_scores", "fwd", nr, HS, r1, 0, 1, C3, C3, T, heads);
        out[c++] = mk("attn_pv", "fwd", nr, r1, HS, 0, 0, T, C3, C, heads);
        out[c++] = mk("attn_dp", "bwd_input", nr, HS, r1, 0, 1, C, C3, T, heads);
        out[c++] = mk("attn_dv", "bwd_weight", r1, nr, HS, 1, 0, T, C, C3, heads);
        out[c++] = mk("attn_dq", "bwd_input", nr, r1, HS, 0, 0, T, C3, C3, heads);
        out[c++] = mk("attn_dk", "bwd_weight", r1, nr, HS, 1, 0, T, C3, C3, heads);
        for (int i = c - 6; i < c; i++) out[i].concurrent = 1;
    }
    c += linear3(out + c, "logits", N, C, cfg->V, 1);
    return c;
}

static double a_elems(const mm_shape *s) { return (double)(s->trans_a ? s->k : s->n) * s->lda; }
static double b_elems(const mm_shape *s) { return (double)(s->trans_b ? s->m : s->k) * s->ldb; }
static double c_elems(const mm_shape *s) { return (double)s->n * s->ldc; }

/* Floats of the C buffer: one per thread for concurrent shapes, one otherwise. */
static double c_total(const mm_shape *s, int n, int nth)
{
    double c = 0;
    for (int i = 0; i < n; i++) c = fmax(c, c_elems(&s[i]) * (s[i].concurrent ? nth : 1));
    return c;
}

double mm_shapes_bytes(const mm_shape *s, int n)
{
    double a = 0, b = 0;
    for (int i = 0; i < n; i++) {
        a = fmax(a, a_elems(&s[i]));
        b = fmax(b, b_elems(&s[i]));
    }
    return 4.0 * (a + b + c_total(s, n, omp_get_max_threads()) + 16.0 * omp_get_max_threads());
}

typedef struct {
    const mm_shape *s;
    float *A, *B, *C;
    size_t c_stride; /* floats between the threads' C buffers (concurrent shapes) */
} mm_ctx;

static void mm_call(void *p)
{
    mm_ctx *c = p;
    const mm_shape *s = c->s;
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

/* 32 sampled outputs against a double-precision dot product, bounded by k * eps * sum|a b|. */
static int mm_check(void *p, char *msg, size_t n)
{
    mm_ctx *c = p;
    const mm_shape *s = c->s;
    mm_call(p);
    unsigned seed = 12345u;
    for (int t = 0; t < 32; t++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % (unsigned)s->n);
        seed = seed * 1103515245u + 12345u;
        int j = (int)((seed >> 8) % (unsigned)s->m);
        double ref = 0, mag = 0;
        for (int q = 0; q < s->k; q++) {
            double a = s->trans_a ? c->A[(size_t)q * s->lda + i] : c->A[(size_t)i * s->lda + q];
            double b = s->trans_b ? c->B[(size_t)j * s->ldb + q] : c->B[(size_t)q * s->ldb + j];
            ref += a * b;
            mag += fabs(a * b);
        }
        double got = c->C[(size_t)i * s->ldc + j], tol = (double)s->k * FLT_EPSILON * mag + 1e-6;
        if (!(fabs(got - ref) <= tol)) {
            snprintf(msg, n, "C[%d][%d] = %.7g, reference %.7g (tolerance %.3g)", i, j, got, ref, tol);
            return -1;
        }
    }
    return 0;
}

/* Buffers for the largest A, B and C of the shapes (C: one per thread for concurrent shapes). */
static int mm_alloc(mm_ctx *ctx, const mm_shape *s, int n, int nth)
{
    double amax = 0, bmax = 0, cmax = 0, cc = 0;
    for (int i = 0; i < n; i++) {
        amax = fmax(amax, a_elems(&s[i]));
        bmax = fmax(bmax, b_elems(&s[i]));
        cmax = fmax(cmax, c_elems(&s[i]));
        if (s[i].concurrent) cc = fmax(cc, c_elems(&s[i]));
    }
    ctx->c_stride = mem_round_floats((size_t)cc);
    size_t cfloats = (size_t)fmax(cmax, (double)ctx->c_stride * nth);
    ctx->A = mem_alloc((size_t)amax, sizeof(float), "matmul A");
    ctx->B = mem_alloc((size_t)bmax, sizeof(float), "matmul B");
    ctx->C = mem_alloc(cfloats, sizeof(float), "matmul C");
    if (!ctx->A || !ctx->B || !ctx->C) return CB_EFAIL;
    runner_fill(ctx->A, (size_t)amax, 1u);
    runner_fill(ctx->B, (size_t)bmax, 2u);
    runner_fill(ctx->C, cfloats, 3u);
    return 0;
}

/* What a sweep measured, for its closing notes. */
typedef struct {
    double t_start, best_gf, step_ms, step_flops;
    int skipped, capped;
    char skipped_list[512];
} mm_tally;

static void mm_add_row(record *rec, const mm_shape *sh, const runner_result *r, double peak_gflops, mm_tally *t)
{
    double flops = 2.0 * sh->n * sh->m * sh->k, gf = flops / r->s.median / 1e9;
    if (gf > t->best_gf) t->best_gf = gf;
    t->capped += r->capped;
    int row = record_add_row(rec);
    if (row < 0) return;
    record_str(rec, row, MM_OP, sh->op);
    record_str(rec, row, MM_PHASE, sh->phase);
    const double v[][2] = {{MM_N, sh->n}, {MM_K, sh->k}, {MM_M, sh->m}, {MM_COUNT, sh->count}, {MM_GF_MED, gf},
                           {MM_GF_MIN, flops / r->s.max / 1e9}, {MM_GF_MAX, flops / r->s.min / 1e9}, {MM_CV, r->s.cv_pct},
                           {MM_MS, r->s.median * 1e3}, {MM_PCT, peak_gflops > 0 ? 100.0 * gf / peak_gflops : NAN}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) record_num(rec, row, (int)v[i][0], v[i][1]);
    if (isfinite(sh->count)) {
        record_num(rec, row, MM_STEP_MS, sh->count * r->s.median * 1e3);
        t->step_ms += sh->count * r->s.median * 1e3;
        t->step_flops += sh->count * flops;
    }
}

/* Whether shape sh would overrun the budget, predicted from the best rate so far (the first
 * shape always runs); a skipped shape is listed. */
static int mm_skip(const mm_shape *sh, const runner_opts *ro, double budget_s, mm_tally *t)
{
    double predict = t->best_gf > 0 ? 2.0 * sh->n * sh->m * sh->k / t->best_gf / 1e9 * (ro->warmup + ro->min_samples + 1) : 0;
    if (predict < ro->min_time_s) predict = ro->min_time_s;
    if (!(t->best_gf > 0 && budget_s > 0 && timer_now_s() - t->t_start + predict > budget_s)) return 0;
    t->skipped++;
    size_t l = strlen(t->skipped_list);
    snprintf(t->skipped_list + l, sizeof t->skipped_list - l, "%s%s n=%d k=%d m=%d", t->skipped > 1 ? ";" : "", sh->op, sh->n,
             sh->k, sh->m);
    return 1;
}

int mm_run(const mm_shape *s, int n, const runner_opts *ro, double budget_s, double peak_gflops, record *rec)
{
    mm_ctx ctx = {0};
    int nth = omp_get_max_threads(), rc = mm_alloc(&ctx, s, n, nth);
    mm_tally t = {.t_start = timer_now_s()};
    for (int i = 0; i < n && rc == 0; i++) {
        const mm_shape *sh = &s[i];
        if (mm_skip(sh, ro, budget_s, &t)) continue;
        char label[96];
        snprintf(label, sizeof label, "%s %s n=%d k=%d m=%d", sh->op, sh->phase, sh->n, sh->k, sh->m);
        runner_progress(i, n, label);
        ctx.s = sh;
        bench_case bc = {label, mm_call, mm_check, NULL};
        runner_result r;
        if ((rc = runner_run(ro, &bc, &ctx, &r)) != 0) break;
        /* a concurrent sample ran one call per thread: the time per call is the share of one */
        if (sh->concurrent) r.s.median /= nth, r.s.min /= nth, r.s.max /= nth;
        mm_add_row(rec, sh, &r, peak_gflops, &t);
    }
    runner_progress(n, n, "");
    if (rc == 0 && t.skipped)
        record_note(rec, "time budget %.0f s reached: %d shape(s) not measured (%s); raise --budget-s to include them",
                    budget_s, t.skipped, t.skipped_list);
    if (rc == 0 && t.capped)
        record_note(rec, "%d shape(s) took so long that fewer than %d samples fit in %.0f s: their spread is from fewer samples",
                    t.capped, ro->min_samples, ro->max_time_s);
    if (rc == 0 && t.step_ms > 0)
        record_note(rec, "one training step's matmuls: %.3f TFLOP, %.1f ms predicted from these medians (%.1f GFLOP/s overall)%s",
                    t.step_flops / 1e12, t.step_ms, t.step_flops / t.step_ms / 1e6, t.skipped ? "; incomplete: shapes were skipped" : "");
    free(ctx.A);
    free(ctx.B);
    free(ctx.C);
    return rc;
}
