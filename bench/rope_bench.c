#include "rope_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../kernels/rope.h"

const rec_col rb_cols[RB_NCOLS] = {
    {"model", "", REC_STR, 0},      {"variant", "", REC_STR, 0},         {"direction", "", REC_STR, 0},
    {"cache", "", REC_STR, 0},
    {"tokens", "", REC_NUM, 0},     {"heads", "", REC_NUM, 0},           {"head_dim", "", REC_NUM, 0},
    {"rotary_dims", "", REC_NUM, 0}, {"ns_per_token_median", "ns", REC_NUM, 2},
    {"ns_per_token_min", "ns", REC_NUM, 2}, {"ns_per_token_max", "ns", REC_NUM, 2}, {"cv_pct", "%", REC_NUM, 1},
    {"bytes_per_token", "B", REC_NUM, 0}, {"gbps_median", "GB/s", REC_NUM, 2}, {"pct_of_copy_bw", "%", REC_NUM, 1},
    {"speedup_vs_reference", "x", REC_NUM, 2},
};

typedef struct {
    rope_shape s;
    rope_tables tb;
    float *tables, *qkv, *dqkv, *q_out, *k_out, *dq, *dk, *scratch;
    double *flush;
    size_t nflush;
    volatile double sink;
} rb_ctx;

/* Evicts the caches: reads a buffer larger than the last-level cache (untimed). */
static void rb_flush(void *p)
{
    rb_ctx *c = p;
    double s = 0;
    long n = (long)c->nflush;
#pragma omp parallel for schedule(static) reduction(+ : s)
    for (long i = 0; i < n; i += 8) s += c->flush[i];
    c->sink = s;
}

static void run_ref_f(void *p) { rb_ctx *c = p; rope_forward_ref(c->q_out, c->k_out, c->qkv, &c->s, &c->tb, c->scratch); }
static void run_zf_f(void *p) { rb_ctx *c = p; rope_forward_zero_freq(c->q_out, c->k_out, c->qkv, &c->s, &c->tb); }
static void run_fu_f(void *p) { rb_ctx *c = p; rope_forward_fused(c->qkv, &c->s, &c->tb); }
static void run_ref_b(void *p) { rb_ctx *c = p; rope_backward_ref(c->dqkv, c->dq, c->dk, &c->s, &c->tb, c->scratch); }
static void run_zf_b(void *p) { rb_ctx *c = p; rope_backward_zero_freq(c->dqkv, c->dq, c->dk, &c->s, &c->tb); }
static void run_fu_b(void *p) { rb_ctx *c = p; rope_backward_fused(c->dqkv, &c->s, &c->tb); }

static size_t qkv_floats(const rope_shape *s) { return (size_t)s->B * s->T * 3 * s->NH * s->HS; }
static size_t out_floats(const rope_shape *s) { return (size_t)s->B * s->T * s->NH * s->HS; }

double rope_bench_bytes(const model_config *cfg, int tokens)
{
    rope_shape s = {1, tokens, cfg->NH, cfg->HS, rope_rotary_dims(cfg->HS, cfg->rotary_pct)};
    /* qkv, dqkv, saved copy; q/k out, dq/dk; reference scratch */
    return 4.0 * (3.0 * qkv_floats(&s) + 4.0 * out_floats(&s) + rope_ref_scratch_floats(&s));
}

#define AGREE_ATOL 1e-5
#define AGREE_RTOL 1e-5

/* Compares the q/k blocks of a qkv-layout buffer with (B, NH, T, HS) q and k tensors; the largest
 * difference seen goes into *worst. */
static int agree_layout(const rope_shape *s, const float *qkv, const float *q, const float *k, const char *what,
                        char *msg, size_t n, double *worst)
{
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->NH; h++)
            for (int t = 0; t < s->T; t++)
                for (int w = 0; w < 2; w++) {
                    const float *x = qkv + (((size_t)b * s->T + t) * s->NH + h) * 3 * s->HS + (size_t)w * s->HS;
                    const float *y = (w ? k : q) + (((size_t)b * s->NH + h) * s->T + t) * s->HS;
                    for (int d = 0; d < s->HS; d++) {
                        double e = fabs((double)x[d] - y[d]);
                        if (!(e <= AGREE_ATOL + AGREE_RTOL * fabs((double)y[d]))) {
                            snprintf(msg, n, "%s: b=%d head=%d t=%d dim=%d: %.8g vs %.8g", what, b, h, t, d, x[d], y[d]);
                            return -1;
                        }
                        if (e > *worst) *worst = e;
                    }
                }
    return 0;
}

static int agree_qk(const rope_shape *s, const float *a, const float *b, const char *what, char *msg, size_t n, double *worst)
{
    const size_t N = (size_t)s->B * s->T * s->NH;
    for (size_t i = 0; i < N; i++)
        for (int w = 0; w < 2; w++)
            for (int d = 0; d < s->HS; d++) {
                size_t o = i * 3 * s->HS + (size_t)w * s->HS + d;
                double e = fabs((double)a[o] - b[o]);
                if (e > *worst) *worst = e;
                if (!(e <= AGREE_ATOL + AGREE_RTOL * fabs((double)b[o]))) {
                    snprintf(msg, n, "%s: row %zu dim %d: %.8g vs %.8g", what, i, w * s->HS + d, a[o], b[o]);
                    return -1;
                }
            }
    return 0;
}

/* The three variants must agree, forward and backward, on this run's data; the largest
 * difference between any two into *worst. */
static int rb_verify(rb_ctx *c, float *save, char *msg, size_t n, double *worst)
{
    const rope_shape *s = &c->s;
    size_t nq = qkv_floats(s);
    memcpy(save, c->qkv, nq * sizeof(float));
    rope_forward_ref(c->q_out, c->k_out, c->qkv, s, &c->tb, c->scratch);
    rope_forward_fused(save, s, &c->tb);
    if (agree_layout(s, save, c->q_out, c->k_out, "forward fused vs reference", msg, n, worst) != 0) return -1;
    rope_forward_zero_freq(c->q_out, c->k_out, c->qkv, s, &c->tb);
    if (agree_layout(s, save, c->q_out, c->k_out, "forward zero_freq vs fused", msg, n, worst) != 0) return -1;
    /* backward: gradients w.r.t. the outputs in dq, dk */
    rope_backward_ref(c->dqkv, c->dq, c->dk, s, &c->tb, c->scratch);
    memcpy(save, c->dqkv, nq * sizeof(float));
    rope_backward_zero_freq(c->dqkv, c->dq, c->dk, s, &c->tb);
    if (agree_qk(s, c->dqkv, save, "backward zero_freq vs reference", msg, n, worst) != 0) return -1;
    /* fused takes the output gradient in the qkv layout and transforms it in place */
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->NH; h++)
            for (int t = 0; t < s->T; t++) {
                float *x = c->dqkv + (((size_t)b * s->T + t) * s->NH + h) * 3 * s->HS;
                size_t o = (((size_t)b * s->NH + h) * s->T + t) * s->HS;
                memcpy(x, c->dq + o, (size_t)s->HS * sizeof(float));
                memcpy(x + s->HS, c->dk + o, (size_t)s->HS * sizeof(float));
            }
    rope_backward_fused(c->dqkv, s, &c->tb);
    if (agree_qk(s, c->dqkv, save, "backward fused vs reference", msg, n, worst) != 0) return -1;
    return 0;
}

static void rb_free(rb_ctx *c)
{
    free(c->tables), free(c->qkv), free(c->dqkv), free(c->q_out), free(c->k_out), free(c->dq), free(c->dk);
    free(c->scratch), free(c->flush);
}

/* Every buffer of the variants at this shape, filled; the cache-flush buffer when flush_bytes > 0. */
static int rb_alloc(rb_ctx *c, const model_config *cfg, int T, double flush_bytes)
{
    size_t nq = qkv_floats(&c->s), no = out_floats(&c->s);
    c->tables = mem_alloc(rope_tables_floats(T, c->s.r, c->s.HS), sizeof(float), "rope tables");
    c->qkv = mem_alloc(nq, sizeof(float), "qkv");
    c->dqkv = mem_alloc(nq, sizeof(float), "dqkv");
    c->q_out = mem_alloc(no, sizeof(float), "q out");
    c->k_out = mem_alloc(no, sizeof(float), "k out");
    c->dq = mem_alloc(no, sizeof(float), "dq");
    c->dk = mem_alloc(no, sizeof(float), "dk");
    c->scratch = mem_alloc(rope_ref_scratch_floats(&c->s), sizeof(float), "reference scratch");
    if (flush_bytes > 0) {
        c->nflush = (size_t)(flush_bytes / sizeof(double));
        if (!(c->flush = mem_alloc(c->nflush, sizeof(double), "cache flush buffer"))) return CB_EFAIL;
        long nf = (long)c->nflush;
#pragma omp parallel for schedule(static)
        for (long i = 0; i < nf; i++) c->flush[i] = 1.0;
    }
    if (!c->tables || !c->qkv || !c->dqkv || !c->q_out || !c->k_out || !c->dq || !c->dk || !c->scratch) return CB_EFAIL;
    rope_tables_init(&c->tb, c->tables, T, c->s.r, c->s.HS, cfg->rotary_base);
    float *bufs[] = {c->qkv, c->dqkv, c->dq, c->dk, c->q_out, c->k_out};
    size_t lens[] = {nq, nq, no, no, no, no};
    for (int i = 0; i < 6; i++) runner_fill(bufs[i], lens[i], 7u + (unsigned)i);
    return 0;
}

static void rb_add_row(record *rec, const rb_ctx *c, const model_config *cfg, int tokens, int v, int d,
                       const runner_result *r, double copy_gbps, double ref_ns)
{
    static const char *vname[3] = {"reference", "zero_freq", "fused"}, *dname[2] = {"forward", "backward"};
    double ns = r->s.median / tokens * 1e9, bpt = rope_bytes_per_token(&c->s, v, d);
    int row = record_add_row(rec);
    if (row < 0) return;
    record_str(rec, row, RB_MODEL, cfg->name);
    record_str(rec, row, RB_VARIANT, vname[v]);
    record_str(rec, row, RB_DIR, dname[d]);
    record_str(rec, row, RB_CACHE, c->flush ? "cold" : "warm");
    const double vals[][2] = {{RB_TOKENS, tokens}, {RB_HEADS, c->s.NH}, {RB_HS, c->s.HS}, {RB_R, c->s.r}, {RB_NS_MED, ns},
                              {RB_NS_MIN, r->s.min / tokens * 1e9}, {RB_NS_MAX, r->s.max / tokens * 1e9}, {RB_CV, r->s.cv_pct},
                              {RB_BYTES, bpt}, {RB_GBPS, bpt / ns},
                              {RB_PCT_BW, copy_gbps > 0 ? 100.0 * (bpt / ns) / copy_gbps : NAN}, {RB_SPEEDUP, ref_ns / ns}};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) record_num(rec, row, (int)vals[i][0], vals[i][1]);
}

/* Times the three variants forward and backward; a row each. */
static int rb_time(rb_ctx *c, const model_config *cfg, int tokens, const runner_opts *ro, double copy_gbps, record *rec)
{
    static const char *vname[3] = {"reference", "zero_freq", "fused"}, *dname[2] = {"forward", "backward"};
    void (*fns[2][3])(void *) = {{run_ref_f, run_zf_f, run_fu_f}, {run_ref_b, run_zf_b, run_fu_b}};
    for (int d = 0; d < 2; d++) {
        double ref_ns = NAN;
        for (int v = 0; v < 3; v++) {
            char label[96];
            snprintf(label, sizeof label, "%s %s %s", cfg->name, vname[v], dname[d]);
            runner_progress(d * 3 + v, 6, label);
            bench_case bc = {label, fns[d][v], NULL, c->flush ? rb_flush : NULL};
            runner_result r;
            if (runner_run(ro, &bc, c, &r) != 0) return CB_EFAIL;
            if (v == 0) ref_ns = r.s.median / tokens * 1e9;
            rb_add_row(rec, c, cfg, tokens, v, d, &r, copy_gbps, ref_ns);
        }
    }
    runner_progress(6, 6, "");
    return 0;
}

int rope_bench_run(const model_config *cfg, int tokens, int T, const runner_opts *ro, double copy_gbps,
                   double flush_bytes, record *rec)
{
    rb_ctx c;
    memset(&c, 0, sizeof c);
    c.s = (rope_shape){tokens / T, T, cfg->NH, cfg->HS, rope_rotary_dims(cfg->HS, cfg->rotary_pct)};
    if (c.s.r == 0) return err_usage("model '%s' has no rotary dims (rotary_pct %g)", cfg->name, cfg->rotary_pct);
    int rc = rb_alloc(&c, cfg, T, flush_bytes);
    float *save = rc == 0 ? mem_alloc(qkv_floats(&c.s), sizeof(float), "qkv copy") : NULL;
    char msg[512] = "";
    double worst = 0;
    if (rc == 0 && !save) rc = CB_EFAIL;
    if (rc == 0 && rb_verify(&c, save, msg, sizeof msg, &worst) != 0) rc = err_msg("rope %s: the variants disagree: %s", cfg->name, msg);
    free(save);
    if (rc == 0) rc = rb_time(&c, cfg, tokens, ro, copy_gbps, rec);
    if (rc == 0) {
        record_note(rec, "%s: B=%d T=%d; per call the fused variant reads and writes %.1f MB in place, the reference %.1f MB",
                    cfg->name, c.s.B, c.s.T, rope_bytes_per_token(&c.s, 2, 0) * tokens / 1e6,
                    rope_bytes_per_token(&c.s, 0, 0) * tokens / 1e6);
        record_note(rec, "%s: the three variants agree, forward and backward, to %.2g at most (tolerance %g + %g x |value|)",
                    cfg->name, worst, AGREE_ATOL, AGREE_RTOL);
    }
    rb_free(&c);
    return rc;
}
