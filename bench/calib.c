#include "calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../kernels/attention.h"
#include "../kernels/bf16.h"
#include "../kernels/rope.h"
#include "comm.h"
#include "matmul_bench.h"
#include "peak.h"
#include "runner.h"

/* The peak of the run's precision on every rank at once (the job's), or the given one. */
static int measure_peak(const calib_opts *o, calib *c)
{
    const int bf = o->prec != PRECISION_FP32;
    const char *kind = bf ? "bf16 matrix" : "fp32 FMA";
    if (o->peak_gflops > 0) {
        c->peak_gflops = o->peak_gflops;
        snprintf(c->peak_note, sizeof c->peak_note, "--peak-gflops %.1f (given as the %s peak, not measured)", o->peak_gflops, kind);
        return 0;
    }
    runner_opts ro;
    runner_defaults(&ro);
    double one = NAN;
    char which[96];
    int rc = bf ? peak_bf16_matrix(&ro, o->threads, &one, which, sizeof which)
                : peak_fp32_fma(&ro, o->threads, &one, which, sizeof which);
    if (rc != 0 || !isfinite(one) || one <= 0) return err_msg("the %s peak probe failed", kind);
    c->peak_gflops = comm_sum(one);
    int ranks = comm_size();
    if (ranks > 1)
        snprintf(c->peak_note, sizeof c->peak_note, "the %s peak measured in this run on all %d ranks at once, %.1f GFLOP/s (%.1f on rank 0: %s)",
                 kind, ranks, c->peak_gflops, one, which);
    else
        snprintf(c->peak_note, sizeof c->peak_note, "the %s peak measured in this run, %.1f GFLOP/s (%s)", kind, c->peak_gflops,
                 which);
    return 0;
}

/* Milliseconds of one micro-step's matmuls: op_list's GEMMs (mm_shapes_transformer), every
 * shape measured now. The attention core is not among them: the tiled attention kernel runs its
 * own micro-kernels on cache-sized tiles, and predict_attention times it whole. */
static int predict_matmuls(const calib_opts *o, const runner_opts *ro, double peak_gflops, double *mm_ms, char *how, size_t n)
{
    int cap = mm_shapes_transformer_count();
    mm_shape *sh = calloc((size_t)cap, sizeof *sh);
    if (!sh) return err_msg("out of memory");
    int nsh = mm_shapes_transformer(sh, cap, o->cfg, o->B, o->T);
    if (nsh < 0) {
        free(sh);
        return CB_EFAIL;
    }
    if (nsh > 0 && o->prec != PRECISION_FP32) mm_shapes_set_dtype(sh, nsh, MM_BF16, MM_OPENBLAS);
    record r;
    record_init(&r, mm_cols, MM_NCOLS);
    fprintf(stderr, "costbench train: measuring the step's %d matmul shapes, the attention and the rotary kernels for the prediction\n", nsh);
    int rc = mm_run(sh, nsh, ro, o->budget_s, peak_gflops, &r);
    *mm_ms = 0;
    for (int i = 0; rc == 0 && i < r.nrows; i++) *mm_ms += r.num[(size_t)i * r.ncols + MM_STEP_MS];
    if (r.nrows < nsh) snprintf(how, n, "incomplete: %d of %d shapes measured within --budget-s", r.nrows, nsh);
    else snprintf(how, n, "costbench matmul: %d shapes measured now", nsh);
    record_free(&r);
    free(sh);
    return rc;
}

typedef struct {
    float *qkv, *out, *lse, *dout, *dqkv, *scratch;
    attn_shape s; /* the architecture's heads, key/value heads and ALiBi */
    int threads;
    bf16 *qkvh, *outh; /* bf16 precisions: the kernel reads q, k, v and writes its output in bf16 */
} att_ctx;

static void att_fb(void *p)
{
    att_ctx *c = p;
    if (c->qkvh) {
        attention_forward_bf16_s(c->outh, c->lse, c->qkvh, &c->s);
        attention_backward_bf16_s(c->dqkv, c->scratch, c->threads, c->dout, c->qkvh, c->outh, c->lse, &c->s);
        return;
    }
    attention_forward_s(c->out, c->lse, c->qkv, &c->s);
    attention_backward_s(c->dqkv, c->scratch, c->threads, c->dout, c->qkv, c->out, c->lse, &c->s);
}

/* Milliseconds of the tiled attention kernel, forward + backward, over one micro-step's layers. */
static int predict_attention(const calib_opts *o, const runner_opts *ro, double *ms)
{
    const model_config *m = o->cfg;
    float slopes[1024];
    if (m->pos == POS_ALIBI && m->NH <= 1024) attention_alibi_slopes(slopes, m->NH, 8.0);
    const attn_shape as = {o->B, o->T, m->NH, model_kv_heads(m), m->HS, m->pos == POS_ALIBI && m->NH <= 1024 ? slopes : NULL};
    const size_t nqkv = (size_t)o->B * o->T * (size_t)(m->NH + 2 * as.KVH) * m->HS, nout = (size_t)o->B * o->T * m->C;
    att_ctx ac = {mem_alloc(nqkv, sizeof(float), "attention buffer"), mem_alloc(nout, sizeof(float), "attention buffer"),
                  mem_alloc((size_t)o->B * m->NH * o->T, sizeof(float), "attention buffer"),
                  mem_alloc(nout, sizeof(float), "attention buffer"), mem_alloc(nqkv, sizeof(float), "attention buffer"),
                  mem_alloc(attention_scratch_floats_s(&as, o->threads), sizeof(float), "attention scratch"),
                  as, o->threads, NULL, NULL};
    int bad = CB_EFAIL, bf = o->prec != PRECISION_FP32;
    if (bf) {
        ac.qkvh = mem_alloc(nqkv, sizeof(bf16), "attention buffer");
        ac.outh = mem_alloc(nout, sizeof(bf16), "attention buffer");
    }
    if (ac.qkv && ac.out && ac.lse && ac.dout && ac.dqkv && ac.scratch && (!bf || (ac.qkvh && ac.outh))) {
        runner_fill(ac.qkv, nqkv, 5u);
        runner_fill(ac.dout, nout, 6u);
        if (bf) bf16_from_floats(ac.qkvh, ac.qkv, nqkv);
        bench_case bc = {"attention", att_fb, NULL, NULL};
        runner_result rr;
        bad = runner_run(ro, &bc, &ac, &rr);
        if (!bad) *ms = rr.s.median * 1e3 * m->L;
    }
    free(ac.qkv), free(ac.out), free(ac.lse), free(ac.dout), free(ac.dqkv), free(ac.scratch), free(ac.qkvh), free(ac.outh);
    return bad;
}

typedef struct {
    float *qkv;
    rope_shape s;
    rope_tables *tb;
    bf16 *qkvh; /* bf16-mixed: the forward rotates the bf16 QKV; the backward stays fp32 */
} rope_ctx;

static void rope_fb(void *p)
{
    rope_ctx *c = p;
    if (c->qkvh) rope_forward_fused_bf16(c->qkvh, &c->s, c->tb);
    else rope_forward_fused(c->qkv, &c->s, c->tb);
    rope_backward_fused(c->qkv, &c->s, c->tb);
}

/* Milliseconds of the fused rotary kernel, forward + backward, over one micro-step's layers. */
static int predict_rope(const calib_opts *o, const runner_opts *ro, int rdims, double *ms)
{
    const model_config *c = o->cfg;
    const size_t n = (size_t)o->B * o->T * (size_t)(c->NH + 2 * model_kv_heads(c)) * c->HS;
    rope_tables tb;
    float *store = mem_alloc(rope_tables_floats(o->T, rdims, c->HS), sizeof(float), "rotary tables");
    rope_ctx rc = {mem_alloc(n, sizeof(float), "rotary buffer"),
                   {o->B, o->T, c->NH, c->HS, rdims, model_kv_heads(c), c->rope == ROPE_GPTJ}, &tb, NULL};
    const int bf = o->prec != PRECISION_FP32;
    if (bf) rc.qkvh = mem_alloc(n, sizeof(bf16), "rotary buffer");
    int bad = CB_EFAIL;
    if (rc.qkv && store && (!bf || rc.qkvh)) {
        rope_tables_init(&tb, store, o->T, rdims, c->HS, c->rotary_base);
        runner_fill(rc.qkv, n, 3u);
        if (bf) bf16_from_floats(rc.qkvh, rc.qkv, n);
        bench_case bc = {"rope", rope_fb, NULL, NULL};
        runner_result rr;
        bad = runner_run(ro, &bc, &rc, &rr);
        if (!bad) *ms = rr.s.median * 1e3 * c->L;
    }
    free(rc.qkv), free(rc.qkvh), free(store);
    return bad;
}

/* The memory-bound kinds: the bytes each must move per micro-step, priced at the copy bandwidth.
 * An estimate, not a bound: a kernel whose data stays in the last-level cache (a small layer's
 * activations) moves them faster than the copy probe's arrays, which are 4x that cache. */
static void predict_memory_bound(const calib_opts *o, double gbps, calib *c)
{
    const model_config *m = o->cfg;
    const double BT = (double)o->B * o->T, C = m->C, L = m->L, V = m->V, acc = o->accum;
    const double bw = gbps * 1e9 / 1e3; /* bytes per ms */
    const int bf = o->prec != PRECISION_FP32;
    const double out = bf ? 2.0 : 4.0; /* bytes of an element the next linear layer reads */
    double bytes[GPT_KIND_COUNT] = {0};
    /* LayerNorm: forward reads x and writes its output; backward reads x, dout, dres, writes dinp */
    bytes[K_LAYERNORM] = acc * (2 * L + 1) * BT * C * (4.0 + out + 16.0);
    /* GELU: forward reads fp32 and writes the output; backward reads input and gradient, writes one */
    /* the MLP's activation (GELU or SwiGLU): reads its input, writes its output; backward reads both
     * and writes the input's gradient */
    const double I = model_ffn(m), FC = (m->mlp == MLP_SWIGLU ? 2 : 1) * I;
    bytes[K_GELU] = acc * L * BT * (FC * 4.0 + I * out + FC * 4.0 + I * 4.0 + FC * 4.0);
    /* cross-entropy: fp32 reads the logits, then reads and writes their gradient in place; bf16-mixed
     * reads them once and writes a bf16 gradient */
    bytes[K_XENT] = acc * BT * V * (bf ? 4.0 + 2.0 : 4.0 + 8.0);
    /* residual adds, embedding; bf16-mixed also narrows the gradients entering the linear layers */
    bytes[K_OTHER] = acc * (L * BT * C * (m->parallel_residual ? 16.0 : 24.0) + BT * C * 8.0 * 2 +
                            (bf ? L * BT * C * (1 + 4 + 3) * 6.0 : 0));
    /* AdamW (fp32 state: reads g, p, m, v, writes p, m, v at 4 bytes; full bf16: g at 4, the rest
     * at 2), the norm, zeroing; bf16 precisions also make two bf16 copies of each weight matrix
     * (from fp32, or from the bf16 weights) */
    double mats = L * (((double)m->NH + 2.0 * model_kv_heads(m)) * m->HS * C + C * C + (FC + I) * C) + V * C;
    const int full = precision_full_bf16(o->prec);
    bytes[K_OPTIMIZER] = model_params_total(m) * ((full ? 16.0 : 28.0) + 4.0 + 4.0) + (bf ? mats * 2 * ((full ? 2.0 : 4.0) + 2.0) : 0);
    for (int k = K_LAYERNORM; k < GPT_KIND_COUNT; k++) {
        if (k == K_ROTARY) continue;
        c->pred_ms[k] = bytes[k] / bw;
        snprintf(c->how[k], sizeof c->how[k], "bytes moved at %.1f GB/s copy bandwidth (estimate; cache-resident data is faster)",
                 gbps);
    }
}

static int predict_kinds(const calib_opts *o, calib *c)
{
    runner_opts ro;
    runner_defaults(&ro);
    ro.min_samples = 3, ro.min_time_s = 0.05;
    double mm = 0, att_ms = 0, rope_ms = 0;
    const int rdims = o->cfg->learned_pos || o->cfg->pos != POS_ROTARY ? 0 : rope_rotary_dims(o->cfg->HS, o->cfg->rotary_pct);
    if (predict_matmuls(o, &ro, c->peak_gflops, &mm, c->how[K_MATMUL], sizeof c->how[K_MATMUL]) != 0) return CB_EFAIL;
    if (predict_attention(o, &ro, &att_ms) != 0) return CB_EFAIL;
    if (rdims > 0 && predict_rope(o, &ro, rdims, &rope_ms) != 0) return CB_EFAIL;
    c->pred_ms[K_MATMUL] = o->accum * mm;
    c->pred_ms[K_ATTENTION] = o->accum * att_ms;
    snprintf(c->how[K_ATTENTION], sizeof c->how[K_ATTENTION], "the tiled attention kernel (%s): forward+backward measured now",
             o->prec != PRECISION_FP32 ? "bf16" : "fp32");
    c->pred_ms[K_ROTARY] = o->accum * rope_ms;
    snprintf(c->how[K_ROTARY], sizeof c->how[K_ROTARY], "%s",
             rdims == 0                        ? "no rotary embedding"
             : o->prec != PRECISION_FP32 ? "costbench rope: fused forward (bf16) + backward (fp32) measured now"
                                               : "costbench rope: fused forward+backward measured now");
    runner_opts co;
    runner_defaults(&co);
    co.min_samples = 3;
    double gbps = peak_copy_gbps(o->threads, 256.0 * 1048576, &co);
    if (!isfinite(gbps) || gbps <= 0) return err_msg("the copy bandwidth probe failed");
    predict_memory_bound(o, gbps, c);
    return 0;
}

int calib_measure(const calib_opts *o, calib *c)
{
    memset(c, 0, sizeof *c);
    for (int k = 0; k < GPT_KIND_COUNT; k++) {
        c->pred_ms[k] = NAN;
        snprintf(c->how[k], sizeof c->how[k], "not predicted (--no-predict)");
    }
    if (measure_peak(o, c) != 0) return CB_EFAIL;
    return o->predict ? predict_kinds(o, c) : 0;
}
