#include "rope_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../kernels/rope.h"


const char *rope_bench_dtype_name(rb_dtype dt) { return dt == RB_BF16 ? "bf16" : "fp32"; }

int rope_bench_dtype_parse(const char *name)
{
    if (strcmp(name, "fp32") == 0) return RB_FP32;
    if (strcmp(name, "bf16") == 0) return RB_BF16;
    return -1;
}

/* Buffers hold elements of the run's dtype (float or bf16); tables are fp32 in both. */
typedef struct {
    rope_shape s;
    rope_tables tb;
    rb_dtype dt;
    float *tables;
    void *qkv, *dqkv, *q_out, *k_out, *dq, *dk, *scratch;
    double *flush;
    size_t nflush;
    volatile double sink;
} rb_ctx;

static size_t rb_elem_bytes(rb_dtype dt) { return dt == RB_BF16 ? sizeof(bf16) : sizeof(float); }

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

static void run_ref_f(void *p)
{
    rb_ctx *c = p;
    rope_forward_ref(c->q_out, c->k_out, c->qkv, &c->s, &c->tb, c->scratch);
}
static void run_zf_f(void *p) { rb_ctx *c = p; rope_forward_zero_freq(c->q_out, c->k_out, c->qkv, &c->s, &c->tb); }
static void run_fu_f(void *p) { rb_ctx *c = p; rope_forward_fused(c->qkv, &c->s, &c->tb); }
static void run_ref_b(void *p) { rb_ctx *c = p; rope_backward_ref(c->dqkv, c->dq, c->dk, &c->s, &c->tb, c->scratch); }
static void run_zf_b(void *p) { rb_ctx *c = p; rope_backward_zero_freq(c->dqkv, c->dq, c->dk, &c->s, &c->tb); }
static void run_fu_b(void *p) { rb_ctx *c = p; rope_backward_fused(c->dqkv, &c->s, &c->tb); }
static void run_ref_f16(void *p)
{
    rb_ctx *c = p;
    rope_forward_ref_bf16(c->q_out, c->k_out, c->qkv, &c->s, &c->tb, c->scratch);
}
static void run_zf_f16(void *p)
{
    rb_ctx *c = p;
    rope_forward_zero_freq_bf16(c->q_out, c->k_out, c->qkv, &c->s, &c->tb);
}
static void run_fu_f16(void *p) { rb_ctx *c = p; rope_forward_fused_bf16(c->qkv, &c->s, &c->tb); }
static void run_ref_b16(void *p)
{
    rb_ctx *c = p;
    rope_backward_ref_bf16(c->dqkv, c->dq, c->dk, &c->s, &c->tb, c->scratch);
}
static void run_zf_b16(void *p) { rb_ctx *c = p; rope_backward_zero_freq_bf16(c->dqkv, c->dq, c->dk, &c->s, &c->tb); }
static void run_fu_b16(void *p) { rb_ctx *c = p; rope_backward_fused_bf16(c->dqkv, &c->s, &c->tb); }

/* [dtype][direction][variant] */
static void (*const rb_fns[2][2][3])(void *) = {
    {{run_ref_f, run_zf_f, run_fu_f}, {run_ref_b, run_zf_b, run_fu_b}},
    {{run_ref_f16, run_zf_f16, run_fu_f16}, {run_ref_b16, run_zf_b16, run_fu_b16}},
};

/* The preset's heads, head size and rotated dimensions at B x T, in the per-head [q, k, v] layout
 * and the GPT-NeoX pairing (kvh and gptj zero) whatever the preset's: the layout the comparisons
 * below index. */
static rope_shape rb_shape(const model_config *cfg, int B, int T)
{
    return (rope_shape){.B = B, .T = T, .NH = cfg->NH, .HS = cfg->HS, .r = model_rotary_dims(cfg)};
}

static size_t qkv_elems(const rope_shape *s) { return (size_t)s->B * s->T * rope_qkv_per_token(s); }
static size_t out_elems(const rope_shape *s) { return (size_t)s->B * s->T * s->NH * s->HS; }

double rope_bench_bytes(const model_config *cfg, int tokens, rb_dtype dt)
{
    rope_shape s = rb_shape(cfg, 1, tokens);
    /* qkv, dqkv, saved copy; q/k out, dq/dk; reference scratch; bf16: the fp32 buffer the
     * inputs are generated in before rounding */
    double bytes =
        (double)rb_elem_bytes(dt) * (3.0 * qkv_elems(&s) + 4.0 * out_elems(&s) + rope_ref_scratch_floats(&s));
    return dt == RB_BF16 ? bytes + 4.0 * qkv_elems(&s) : bytes;
}

/* The variants agree to atol + rtol |value|. fp32: rounding-level differences. bf16 (inputs in
 * [-1, 1)): the reference rounds to bf16 after each op (a product, a product, their sum), the
 * others once, so they differ by up to about 2 bf16 roundings (2^-8 each, relative) of the
 * magnitudes involved: 2^-7 absolute and relative. */
#define AGREE_ATOL 1e-5
#define AGREE_RTOL 1e-5
#define AGREE_ATOL_BF16 0.0078125
#define AGREE_RTOL_BF16 0.0078125

typedef struct {
    rb_dtype dt;
    double atol, rtol, worst; /* worst: the largest difference seen */
    char *msg;
    size_t n;
} rb_agree;

static inline double rb_get(const void *p, size_t i, rb_dtype dt)
{
    return dt == RB_BF16 ? (double)bf16_to_float(((const bf16 *)p)[i]) : (double)((const float *)p)[i];
}

/* |x - y| within tolerance; the largest difference seen into a->worst. */
static int rb_close(rb_agree *a, double x, double y)
{
    double e = fabs(x - y);
    if (!(e <= a->atol + a->rtol * fabs(y))) return 0;
    if (e > a->worst) a->worst = e;
    return 1;
}

/* Compares the q/k blocks of a qkv-layout buffer with (B, NH, T, HS) q and k tensors. */
static int agree_layout(const rope_shape *s, const void *qkv, const void *q, const void *k, const char *what,
                        rb_agree *a)
{
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->NH; h++)
            for (int t = 0; t < s->T; t++)
                for (int w = 0; w < 2; w++) {
                    size_t xo = (((size_t)b * s->T + t) * s->NH + h) * 3 * s->HS + (size_t)w * s->HS;
                    size_t yo = (((size_t)b * s->NH + h) * s->T + t) * s->HS;
                    for (int d = 0; d < s->HS; d++) {
                        double x = rb_get(qkv, xo + d, a->dt), y = rb_get(w ? k : q, yo + d, a->dt);
                        if (!rb_close(a, x, y)) {
                            snprintf(a->msg, a->n, "%s: b=%d head=%d t=%d dim=%d: %.8g vs %.8g", what, b, h, t, d, x,
                                     y);
                            return -1;
                        }
                    }
                }
    return 0;
}

/* Compares the q/k blocks of two qkv-layout buffers. */
static int agree_qk(const rope_shape *s, const void *x, const void *y, const char *what, rb_agree *a)
{
    const size_t N = (size_t)s->B * s->T * s->NH;
    for (size_t i = 0; i < N; i++)
        for (int d = 0; d < 2 * s->HS; d++) {
            size_t o = i * 3 * s->HS + (size_t)d;
            double u = rb_get(x, o, a->dt), v = rb_get(y, o, a->dt);
            if (!rb_close(a, u, v)) {
                snprintf(a->msg, a->n, "%s: row %zu dim %d: %.8g vs %.8g", what, i, d, u, v);
                return -1;
            }
        }
    return 0;
}

/* The three variants must agree, forward and backward, on this run's data. */
static int rb_verify(rb_ctx *c, void *save, rb_agree *a)
{
    const rope_shape *s = &c->s;
    const size_t nq = qkv_elems(s), eb = rb_elem_bytes(c->dt), hs_bytes = (size_t)s->HS * eb;
    void (*const(*fn)[3])(void *) = rb_fns[c->dt];
    void *qkv = c->qkv;
    memcpy(save, qkv, nq * eb);
    fn[0][0](c); /* reference forward: q_out, k_out from qkv */
    c->qkv = save;
    fn[0][2](c); /* fused forward, in place in the copy */
    c->qkv = qkv;
    if (agree_layout(s, save, c->q_out, c->k_out, "forward fused vs reference", a) != 0) return -1;
    fn[0][1](c);
    if (agree_layout(s, save, c->q_out, c->k_out, "forward zero_freq vs fused", a) != 0) return -1;
    /* backward: gradients w.r.t. the outputs in dq, dk */
    fn[1][0](c);
    memcpy(save, c->dqkv, nq * eb);
    fn[1][1](c);
    if (agree_qk(s, c->dqkv, save, "backward zero_freq vs reference", a) != 0) return -1;
    /* fused takes the output gradient in the qkv layout and transforms it in place */
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->NH; h++)
            for (int t = 0; t < s->T; t++) {
                char *x = (char *)c->dqkv + (((size_t)b * s->T + t) * s->NH + h) * 3 * hs_bytes;
                size_t o = (((size_t)b * s->NH + h) * s->T + t) * hs_bytes;
                memcpy(x, (const char *)c->dq + o, hs_bytes);
                memcpy(x + hs_bytes, (const char *)c->dk + o, hs_bytes);
            }
    fn[1][2](c);
    if (agree_qk(s, c->dqkv, save, "backward fused vs reference", a) != 0) return -1;
    return 0;
}

static void rb_free(rb_ctx *c)
{
    free(c->tables), free(c->qkv), free(c->dqkv), free(c->q_out), free(c->k_out), free(c->dq), free(c->dk);
    free(c->scratch), free(c->flush);
}

/* Deterministic inputs in [-1, 1) (runner_fill's), rounded to bf16 for a bf16 run; `tmp` holds n
 * floats (bf16 runs only). */
static void rb_fill(void *x, size_t n, unsigned seed, rb_dtype dt, float *tmp)
{
    if (dt == RB_FP32) {
        runner_fill(x, n, seed);
        return;
    }
    runner_fill(tmp, n, seed);
    bf16_from_floats(x, tmp, n);
}

/* Every buffer of the variants at this shape, filled; the cache-flush buffer when flush_bytes > 0. */
static int rb_alloc(rb_ctx *c, const model_config *cfg, int T, double flush_bytes)
{
    size_t nq = qkv_elems(&c->s), no = out_elems(&c->s), eb = rb_elem_bytes(c->dt);
    c->tables = mem_alloc(rope_tables_floats(T, c->s.r, c->s.HS), sizeof(float), "rope tables");
    c->qkv = mem_alloc(nq, eb, "qkv");
    c->dqkv = mem_alloc(nq, eb, "dqkv");
    c->q_out = mem_alloc(no, eb, "q out");
    c->k_out = mem_alloc(no, eb, "k out");
    c->dq = mem_alloc(no, eb, "dq");
    c->dk = mem_alloc(no, eb, "dk");
    c->scratch = mem_alloc(rope_ref_scratch_floats(&c->s), eb, "reference scratch");
    if (flush_bytes > 0) {
        c->nflush = (size_t)(flush_bytes / sizeof(double));
        if (!(c->flush = mem_alloc(c->nflush, sizeof(double), "cache flush buffer"))) return CB_EFAIL;
        long nf = (long)c->nflush;
#pragma omp parallel for schedule(static)
        for (long i = 0; i < nf; i++) c->flush[i] = 1.0;
    }
    if (!c->tables || !c->qkv || !c->dqkv || !c->q_out || !c->k_out || !c->dq || !c->dk || !c->scratch) return CB_EFAIL;
    rope_tables_init(&c->tb, c->tables, T, c->s.r, c->s.HS, cfg->rotary_base);
    float *tmp = NULL;
    if (c->dt == RB_BF16 && !(tmp = mem_alloc(nq, sizeof(float), "fp32 inputs"))) return CB_EFAIL;
    void *bufs[] = {c->qkv, c->dqkv, c->dq, c->dk, c->q_out, c->k_out};
    size_t lens[] = {nq, nq, no, no, no, no};
    for (int i = 0; i < 6; i++) rb_fill(bufs[i], lens[i], 7u + (unsigned)i, c->dt, tmp);
    free(tmp);
    return 0;
}

static const char *const rb_vname[3] = {"reference", "zero_freq", "fused"};
static const char *const rb_dname[2] = {"forward", "backward"};

static void rb_add_row(record *rec, const rb_ctx *c, const model_config *cfg, int tokens, int v, int d,
                       const runner_result *r, double copy_gbps, double ref_ns)
{
    double ns = r->s.median / tokens * 1e9, bpt = rope_bytes_per_token_dtype(&c->s, v, d, (int)rb_elem_bytes(c->dt));
    int row = record_add_row(rec);
    if (row < 0) return;
    record_str(rec, row, RB_MODEL, cfg->name);
    record_str(rec, row, RB_VARIANT, rb_vname[v]);
    record_str(rec, row, RB_DIR, rb_dname[d]);
    record_str(rec, row, RB_CACHE, c->flush ? "cold" : "warm");
    record_str(rec, row, RB_DTYPE, rope_bench_dtype_name(c->dt));
    const double vals[][2] = {{RB_TOKENS, tokens}, {RB_HEADS, c->s.NH}, {RB_HS, c->s.HS}, {RB_R, c->s.r},
                              {RB_NS_MED, ns}, {RB_NS_MIN, r->s.min / tokens * 1e9},
                              {RB_NS_MAX, r->s.max / tokens * 1e9}, {RB_CV, r->s.cv_pct}, {RB_BYTES, bpt},
                              {RB_GBPS, bpt / ns}, {RB_PCT_BW, copy_gbps > 0 ? 100.0 * (bpt / ns) / copy_gbps : NAN},
                              {RB_SPEEDUP, ref_ns / ns}};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) record_num(rec, row, (int)vals[i][0], vals[i][1]);
}

/* Times the three variants forward and backward; a row each. */
static int rb_time(rb_ctx *c, const model_config *cfg, int tokens, const runner_opts *ro, double copy_gbps, record *rec)
{
    for (int d = 0; d < 2; d++) {
        double ref_ns = NAN;
        for (int v = 0; v < 3; v++) {
            char label[96];
            snprintf(label, sizeof label, "%s %s %s %s", cfg->name, rope_bench_dtype_name(c->dt), rb_vname[v],
                     rb_dname[d]);
            runner_progress(d * 3 + v, 6, label);
            bench_case bc = {label, rb_fns[c->dt][d][v], NULL, c->flush ? rb_flush : NULL};
            runner_result r;
            if (runner_run(ro, &bc, c, &r) != 0) return CB_EFAIL;
            if (v == 0) ref_ns = r.s.median / tokens * 1e9;
            rb_add_row(rec, c, cfg, tokens, v, d, &r, copy_gbps, ref_ns);
        }
    }
    runner_progress(6, 6, "");
    return 0;
}

int rope_bench_run(const model_config *cfg, int tokens, int T, rb_dtype dt, const runner_opts *ro, double copy_gbps,
                   double flush_bytes, record *rec)
{
    rb_ctx c;
    memset(&c, 0, sizeof c);
    c.s = rb_shape(cfg, tokens / T, T);
    c.dt = dt;
    if (c.s.r == 0) return err_usage("model '%s' has no rotary dims (rotary_pct %g)", cfg->name, cfg->rotary_pct);
    int rc = rb_alloc(&c, cfg, T, flush_bytes);
    void *save = rc == 0 ? mem_alloc(qkv_elems(&c.s), rb_elem_bytes(dt), "qkv copy") : NULL;
    char msg[512] = "";
    rb_agree a = {dt, dt == RB_BF16 ? AGREE_ATOL_BF16 : AGREE_ATOL, dt == RB_BF16 ? AGREE_RTOL_BF16 : AGREE_RTOL,
                  0, msg, sizeof msg};
    if (rc == 0 && !save) rc = CB_EFAIL;
    if (rc == 0 && rb_verify(&c, save, &a) != 0)
        rc = err_msg("rope %s %s: the variants disagree: %s", cfg->name, rope_bench_dtype_name(dt), msg);
    free(save);
    if (rc == 0) rc = rb_time(&c, cfg, tokens, ro, copy_gbps, rec);
    if (rc == 0) {
        int eb = (int)rb_elem_bytes(dt);
        record_note(rec,
                    "%s %s: B=%d T=%d; per call the fused variant reads and writes %.1f MB in place, the reference "
                    "%.1f MB",
                    cfg->name, rope_bench_dtype_name(dt), c.s.B, c.s.T,
                    rope_bytes_per_token_dtype(&c.s, 2, 0, eb) * tokens / 1e6,
                    rope_bytes_per_token_dtype(&c.s, 0, 0, eb) * tokens / 1e6);
        record_note(rec,
                    "%s %s: the three variants agree, forward and backward, to %.2g at most (tolerance %g + %g x "
                    "|value|)",
                    cfg->name, rope_bench_dtype_name(dt), a.worst, a.atol, a.rtol);
    }
    rb_free(&c);
    return rc;
}
