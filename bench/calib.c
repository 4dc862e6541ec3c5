#include "calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../common/oplist.h"
#include "../common/precision.h"
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
    const int bf = gpt_prec_act(o->prec) == ELEM_BF16;
    const char *kind = bf ? "bf16 matrix" : "fp32 FMA";
    if (o->peak_gflops > 0) {
        c->peak_gflops = o->peak_gflops;
        snprintf(c->peak_note, sizeof c->peak_note, "--peak-gflops %.1f (given as the %s peak, not measured)",
                o->peak_gflops, kind);
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
        snprintf(c->peak_note, sizeof c->peak_note, "the %s peak measured in this run on all %d ranks at once, %.1f "
                "GFLOP/s (%.1f on rank 0: %s)",
                 kind, ranks, c->peak_gflops, one, which);
    else
        snprintf(c->peak_note, sizeof c->peak_note, "the %s peak measured in this run, %.1f GFLOP/s (%s)", kind,
                c->peak_gflops,
                 which);
    return 0;
}

/* Milliseconds of one micro-step's matmuls: op_list's GEMMs (mm_shapes_transformer), every
 * shape measured now. The attention core is not among them: the tiled attention kernel runs its
 * own micro-kernels on cache-sized tiles, and predict_attention times it whole. */
static int predict_matmuls(const calib_opts *o, const runner_opts *ro, double peak_gflops, double *mm_ms, char *how,
        size_t n)
{
    int cap = mm_shapes_transformer_count();
    mm_shape *sh = calloc((size_t)cap, sizeof *sh);
    if (!sh) return err_msg("out of memory");
    int nsh = mm_shapes_transformer(sh, cap, o->cfg, o->B, o->T);
    if (nsh < 0) {
        free(sh);
        return CB_EFAIL;
    }
    if (nsh > 0 && gpt_prec_act(o->prec) == ELEM_BF16) mm_shapes_set_dtype(sh, nsh, MM_BF16, MM_OPENBLAS);
    record r;
    record_init(&r, mm_cols, MM_NCOLS);
    fprintf(stderr, "costbench train: measuring the step's %d matmul shapes, the attention and the rotary kernels for "
            "the prediction\n", nsh);
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
    bf16 *qkv_bf16, *out_bf16; /* bf16 precisions: the kernel reads q, k, v and writes its output in bf16 */
} att_ctx;

static void att_fb(void *p)
{
    att_ctx *c = p;
    if (c->qkv_bf16) {
        attention_forward_gqa_bf16(c->out_bf16, c->lse, c->qkv_bf16, &c->s);
        attention_backward_gqa_bf16(c->dqkv, c->scratch, c->threads, c->dout, c->qkv_bf16, c->out_bf16, c->lse, &c->s);
        return;
    }
    attention_forward_gqa(c->out, c->lse, c->qkv, &c->s);
    attention_backward_gqa(c->dqkv, c->scratch, c->threads, c->dout, c->qkv, c->out, c->lse, &c->s);
}

/* Milliseconds of the tiled attention kernel, forward + backward, over one micro-step's layers. */
static int predict_attention(const calib_opts *o, const runner_opts *ro, double *ms)
{
    const model_config *m = o->cfg;
    float slopes[1024];
    if (m->pos == POS_ALIBI && m->NH <= 1024) attention_alibi_slopes(slopes, m->NH, MODEL_ALIBI_BIAS_MAX);
    const attn_shape as = {o->B, o->T, m->NH, model_kv_heads(m), m->HS,
            m->pos == POS_ALIBI && m->NH <= 1024 ? slopes : NULL};
    const size_t nqkv = (size_t)o->B * o->T * (size_t)(m->NH + 2 * as.KVH) * m->HS, nout = (size_t)o->B * o->T * m->C;
    att_ctx ac = {mem_alloc(nqkv, sizeof(float), "attention buffer"),
                  mem_alloc(nout, sizeof(float), "attention buffer"),
                  mem_alloc((size_t)o->B * m->NH * o->T, sizeof(float), "attention buffer"),
                  mem_alloc(nout, sizeof(float), "attention buffer"),
                  mem_alloc(nqkv, sizeof(float), "attention buffer"),
                  mem_alloc(attention_scratch_floats_gqa(&as, o->threads), sizeof(float), "attention scratch"),
                  as,
                  o->threads,
                  NULL,
                  NULL};
    int bad = CB_EFAIL, bf = gpt_prec_act(o->prec) == ELEM_BF16;
    if (bf) {
        ac.qkv_bf16 = mem_alloc(nqkv, sizeof(bf16), "attention buffer");
        ac.out_bf16 = mem_alloc(nout, sizeof(bf16), "attention buffer");
    }
    if (ac.qkv && ac.out && ac.lse && ac.dout && ac.dqkv && ac.scratch && (!bf || (ac.qkv_bf16 && ac.out_bf16))) {
        runner_fill(ac.qkv, nqkv, 5u);
        runner_fill(ac.dout, nout, 6u);
        if (bf) bf16_from_floats(ac.qkv_bf16, ac.qkv, nqkv);
        bench_case bc = {"attention", att_fb, NULL, NULL};
        runner_result rr;
        bad = runner_run(ro, &bc, &ac, &rr);
        if (!bad) *ms = rr.s.median * 1e3 * m->L;
    }
    free(ac.qkv), free(ac.out), free(ac.lse), free(ac.dout), free(ac.dqkv), free(ac.scratch), free(ac.qkv_bf16),
            free(ac.out_bf16);
    return bad;
}

typedef struct {
    float *qkv;
    rope_shape s;
    rope_tables *tb;
    bf16 *qkv_bf16; /* any bf16 precision: the forward rotates the bf16 QKV; the backward stays fp32 */
} rope_ctx;

static void rope_fb(void *p)
{
    rope_ctx *c = p;
    if (c->qkv_bf16) rope_forward_fused_bf16(c->qkv_bf16, &c->s, c->tb);
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
    const int bf = gpt_prec_act(o->prec) == ELEM_BF16;
    if (bf) rc.qkv_bf16 = mem_alloc(n, sizeof(bf16), "rotary buffer");
    int bad = CB_EFAIL;
    if (rc.qkv && store && (!bf || rc.qkv_bf16)) {
        rope_tables_init(&tb, store, o->T, rdims, c->HS, c->rotary_base);
        runner_fill(rc.qkv, n, 3u);
        if (bf) bf16_from_floats(rc.qkv_bf16, rc.qkv, n);
        bench_case bc = {"rope", rope_fb, NULL, NULL};
        runner_result rr;
        bad = runner_run(ro, &bc, &rc, &rr);
        if (!bad) *ms = rr.s.median * 1e3 * c->L;
    }
    free(rc.qkv), free(rc.qkv_bf16), free(store);
    return bad;
}

/* The operation list (common/oplist.h) of one micro-batch as this process trains it: one rank,
 * tiled attention, no recomputation. Its memory-bound kernels read and write fp32 activations
 * at every precision (bf16-mixed keeps the norms, the MLP's input, the residual stream and the
 * logits in fp32; only the linear layers' inputs are bf16, narrowed below), so 4 bytes an
 * element. AdamW streams 7 values a parameter (common/precision.h's adamw_traffic_bytes of this
 * trainer's storage: fp32 weights, gradients and moments, 28 bytes; full bf16: g at 4, the rest at
 * 2, 16), and this trainer makes two more passes over the fp32 gradients every step (the clipping
 * norm reads them, zeroing writes them: 2 x 4 bytes, not AdamW's). */
static int calib_op_list(const calib_opts *o, op_entry *ops)
{
    const int full = gpt_prec_store(o->prec) == ELEM_BF16;
    const op_layout lay = {.micro_batch = o->B, .seq = o->T, .tp = 1, .pp = 1, .cp = 1, .sp = 0,
            .recompute = OP_RECOMPUTE_NONE,
                           .attention = OP_ATTN_TILED, .act_bytes = 4, .weight_bytes = full ? 2 : 4, .grad_bytes = 4,
                           .optim_bytes = (int)(adamw_traffic_bytes(full ? 2 : 4, 4, full ? 2 : 4, 0) + 2 * 4), .zero = 0, .dp = 1};
    int n = op_list(o->cfg, &lay, ops, OP_LIST_MAX);
    if (n < 0) return err_msg("%s at B=%d T=%d: no operation list", o->cfg->name, o->B, o->T);
    return n;
}

/* The breakdown's kind of a memory-bound op of the list; -1: measured, not priced from bytes. */
static int calib_kind_of(const op_entry *e)
{
    static const struct {
        const char *name;
        int kind;
    } map[] = {{"norm", K_NORM}, {"act", K_MLP_ACT}, {"cross_entropy", K_XENT}, {"rotary", -1}, {"attn_scores_mem",
            -1}};
    if (e->kind == OPK_OPTIM) return K_OPTIMIZER;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(e->name, map[i].name) == 0) return map[i].kind;
    return K_OTHER; /* residual adds, the embedding, and any op the list adds */
}

/* The bytes of each memory-bound kind per optimizer step: the list's memory-bound ops every
 * micro-batch and its optimizer once, plus what bf16 adds in this trainer and the list has no op
 * for: each layer's gradient entering a linear layer's backward (dY of its bwd_input, n x k) narrowed
 * to bf16 (read at 4 bytes, written at 2), and the bf16 copies of every weight matrix (k x m of
 * each forward GEMM), two a matrix, once per optimizer step (read at 4 bytes, or 2 in full bf16,
 * written at 2). */
static void memory_bound_bytes(const calib_opts *o, const op_entry *ops, int n, double bytes[GPT_KIND_COUNT])
{
    const double L = o->cfg->L, acc = o->accum;
    const int bf = gpt_prec_act(o->prec) == ELEM_BF16, full = gpt_prec_store(o->prec) == ELEM_BF16;
    for (int i = 0; i < n; i++) {
        const op_entry *e = &ops[i];
        double times = op_times(e, L, 1, 1);
        if (e->kind == OPK_MEM || e->kind == OPK_OPTIM) {
            int k = calib_kind_of(e);
            if (k >= 0) bytes[k] += e->kind == OPK_OPTIM ? e->bytes : acc * times * e->bytes;
        }
        if (e->kind != OPK_GEMM || !bf) continue;
        if (strcmp(e->phase, "bwd_input") == 0 && e->scope == OPS_LAYER)
            bytes[K_OTHER] += acc * times * (double)e->n * e->k * (4.0 + 2.0);
        if (strcmp(e->phase, "fwd") == 0 && e->pass == OPP_FWD)
            bytes[K_OPTIMIZER] += times * (double)e->k * e->m * 2 * ((full ? 2.0 : 4.0) + 2.0);
    }
}

/* The memory-bound kinds: their bytes (memory_bound_bytes) priced at the copy bandwidth. An
 * estimate, not a bound: a kernel whose data stays in the last-level cache (a small layer's
 * activations) moves them faster than the copy probe's arrays, which are 4x that cache. */
static int predict_memory_bound(const calib_opts *o, double gbps, calib *c)
{
    op_entry ops[OP_LIST_MAX];
    int n = calib_op_list(o, ops);
    if (n < 0) return CB_EFAIL;
    double bytes[GPT_KIND_COUNT] = {0};
    memory_bound_bytes(o, ops, n, bytes);
    const double bw = gbps * 1e9 / 1e3; /* bytes per ms */
    for (int k = K_NORM; k < GPT_KIND_COUNT; k++) {
        if (k == K_ROTARY) continue;
        c->pred_ms[k] = bytes[k] / bw;
        snprintf(c->how[k], sizeof c->how[k], "bytes moved at %.1f GB/s copy bandwidth (estimate; cache-resident data "
                "is faster)",
                 gbps);
    }
    return 0;
}

static int predict_kinds(const calib_opts *o, calib *c)
{
    runner_opts ro;
    runner_defaults(&ro);
    ro.min_samples = 3, ro.min_time_s = 0.05;
    double mm = 0, att_ms = 0, rope_ms = 0;
    const int rdims = model_rotary_dims(o->cfg);
    if (predict_matmuls(o, &ro, c->peak_gflops, &mm, c->how[K_MATMUL], sizeof c->how[K_MATMUL]) != 0) return CB_EFAIL;
    if (predict_attention(o, &ro, &att_ms) != 0) return CB_EFAIL;
    if (rdims > 0 && predict_rope(o, &ro, rdims, &rope_ms) != 0) return CB_EFAIL;
    c->pred_ms[K_MATMUL] = o->accum * mm;
    c->pred_ms[K_ATTENTION] = o->accum * att_ms;
    snprintf(c->how[K_ATTENTION], sizeof c->how[K_ATTENTION],
            "the tiled attention kernel (%s): forward+backward measured now",
             gpt_prec_act(o->prec) == ELEM_BF16 ? "bf16" : "fp32");
    c->pred_ms[K_ROTARY] = o->accum * rope_ms;
    snprintf(c->how[K_ROTARY], sizeof c->how[K_ROTARY], "%s",
             rdims == 0                        ? "no rotary embedding"
             : gpt_prec_act(o->prec) == ELEM_BF16 ? "costbench rope: fused forward (bf16) + backward (fp32) measured "
                     "now"
                                               : "costbench rope: fused forward+backward measured now");
    runner_opts co;
    runner_defaults(&co);
    co.min_samples = 3;
    double gbps = peak_copy_gbps(o->threads, 256.0 * 1048576, &co);
    if (!isfinite(gbps) || gbps <= 0) return err_msg("the copy bandwidth probe failed");
    return predict_memory_bound(o, gbps, c);
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
