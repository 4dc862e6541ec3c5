/* oplist.c: the operation list of one micro-batch on one rank (see oplist.h for every rule). */
#include "oplist.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "params.h"

const char *const op_kind_names[9] = {"gemm",   "attention", "memory", "tp_comm", "dp_comm",
                                      "gather", "pp_send",   "optimizer", "cp_send"};
const char *const op_pass_names[4] = {"fwd", "bwd", "recompute", "step"};

typedef struct {
    op_entry *out;
    int n, cap;
} op_sink;

static op_entry *put(op_sink *k, const char *name, op_kind kind, op_pass pass, op_scope scope, const char *phase,
                     double count)
{
    if (k->n >= k->cap) {
        k->n = k->cap + 1; /* remembered as too small */
        return NULL;
    }
    op_entry *e = &k->out[k->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->phase, sizeof e->phase, "%s", phase);
    e->kind = kind, e->pass = pass, e->scope = scope, e->count = count, e->batch = 1;
    return e;
}

/* A linear layer Y (n x out) = X (n x in) W^T: forward, input gradient, weight gradient (fp8: at the
 * FP8 peak). */
static void linear(op_sink *k, const char *name, op_scope scope, long n, long in, long out, double count, int recompute,
                   int fp8)
{
    const struct {
        const char *phase;
        op_pass pass;
        long r, i, o;
    } p[4] = {{"fwd", OPP_FWD, n, in, out}, {"bwd_input", OPP_BWD, n, out, in}, {"bwd_weight", OPP_BWD, out, n, in},
              {"fwd", OPP_RECOMPUTE, n, in, out}};
    for (int j = 0; j < (recompute ? 4 : 3); j++) {
        op_entry *e = put(k, name, OPK_GEMM, p[j].pass, scope, p[j].phase, count);
        if (!e) return;
        e->n = p[j].r, e->k = p[j].i, e->m = p[j].o;
        e->flops = 2.0 * (double)e->n * (double)e->k * (double)e->m;
        e->bytes = 0, e->fp8 = fp8;
    }
}

static void mem(op_sink *k, const char *name, op_pass pass, op_scope scope, double bytes, double count)
{
    op_entry *e = put(k, name, OPK_MEM, pass, scope, pass == OPP_BWD ? "bwd" : pass == OPP_STEP ? "step" : "fwd", count);
    if (e) e->bytes = bytes;
}

double op_fp8_cast_bytes(op_fp8_recipe recipe, int amax_known)
{
    const double cast = 2.0 + 1.0 + 1.0; /* read 16-bit, write the two fp8 copies */
    switch (recipe) {
    case OP_FP8_CURRENT: return cast + (amax_known ? 0.0 : 2.0); /* + the amax pass's read */
    case OP_FP8_MXFP8: return cast + 2.0 / 32.0;                 /* + an E8M0 scale per 32 elements, each copy */
    default: return cast;
    }
}

/* The quantisation of one fp8 block Linear (n x in -> out) of a layer: its input forward (a C-wide
 * input with sequence parallelism is cast on its n / tp rows, before the all-gather), again under
 * full recompute, and its output gradient backward. `norm_fed`: a norm produces the input (qkv and
 * mlp_up, TE's LayerNormLinear in Megatron-Core's TE layer spec), whose kernel takes the amax under
 * current scaling (TE pytorch/csrc/extensions/normalization.cpp:116-120 @v2.8, FUSED_NORM_AMAX_FP8). */
static void fp8_casts(op_sink *k, const op_layout *l, long n, long in, long out, long C, int norm_fed)
{
    double sp = l->sp && l->tp > 1 ? (double)l->tp : 1.0;
    double x = (double)n * in / (in == C ? sp : 1.0), dy = (double)n * out / (out == C ? sp : 1.0);
    double bx = op_fp8_cast_bytes(l->fp8_recipe, norm_fed), bdy = op_fp8_cast_bytes(l->fp8_recipe, 0);
    mem(k, "fp8_cast", OPP_FWD, OPS_LAYER, x * bx, 1);
    if (l->recompute == OP_RECOMPUTE_FULL) mem(k, "fp8_cast", OPP_RECOMPUTE, OPS_LAYER, x * bx, 1);
    mem(k, "fp8_cast", OPP_BWD, OPS_LAYER, dy * bdy, 1);
}

/* The attention core of the rank's heads (and a materialised attention's traffic of scores). */
static void attention(op_sink *k, const model_config *c, const op_layout *l, long n, int recompute_core)
{
    double heads = (double)c->NH / l->tp * (double)l->micro_batch, s = (double)l->seq / l->cp, B = l->act_bytes;
    double keys = (double)l->seq; /* a context-parallel rank's queries see every key (ring attention) */
    int tiled = l->attention == OP_ATTN_TILED;
    /* scores per head: the causal half for tiled kernels, every one for materialised attention */
    double scores = tiled ? s * (keys + 1.0) / 2.0 : s * keys;
    const struct {
        op_pass pass;
        const char *phase;
        double per_score;
    } p[3] = {{OPP_FWD, "fwd", 4.0}, {OPP_BWD, "bwd", tiled ? 10.0 : 8.0}, {OPP_RECOMPUTE, "fwd", 4.0}};
    for (int j = 0; j < (recompute_core ? 3 : 2); j++) {
        op_entry *e = put(k, "attn_core", OPK_ATTN, p[j].pass, OPS_LAYER, p[j].phase, 1);
        if (!e) return;
        e->n = (long)s, e->k = c->HS, e->m = (long)keys, e->batch = heads;
        e->flops = p[j].per_score * (double)c->HS * scores * heads;
        if (!tiled) {
            double per = p[j].pass == OPP_BWD ? 5.0 * B + 1.0 : 4.0 * B + 1.0;
            mem(k, "attn_scores_mem", p[j].pass, OPS_LAYER, per * scores * heads, 1);
        }
    }
    (void)n;
}

/* The part of c one of tp tensor-parallel ranks holds, as a config for the shape functions of
 * common/presets.h (model_qkv_rows, model_mlp_in_rows, model_ffn): NH / tp query heads, the key/
 * value heads' share (one, replicated, when there are fewer than tp), ffn / tp MLP width. */
static model_config tp_shard(const model_config *c, int tp)
{
    model_config r = *c;
    int kv = model_kv_heads(c);
    r.NH = c->NH / tp, r.KVH = kv >= tp ? kv / tp : 1, r.ffn = model_ffn(c) / tp;
    return r;
}

/* The memory-bound ops of one layer's forward (pass OPP_FWD or OPP_RECOMPUTE) or backward. */
static void layer_memory(op_sink *k, const model_config *c, const op_layout *l, long n, op_pass pass)
{
    const model_config r = tp_shard(c, l->tp);
    double B = l->act_bytes, C = c->C, rows_sp = l->sp && l->tp > 1 ? (double)n / l->tp : (double)n;
    double bwd = pass == OPP_BWD;
    double norm = rows_sp * C * B * (bwd ? 3.0 : 2.0);
    mem(k, "norm", pass, OPS_LAYER, norm, c->shared_norm ? 1 : 2);
    /* the activation reads the MLP's first output (GELU: ffn; SwiGLU: gate and up) and writes ffn;
     * backward it reads that and dy and writes the gradient of the first output */
    double act = (bwd ? 2.0 : 1.0) * model_mlp_in_rows(&r) + model_ffn(&r);
    mem(k, "act", pass, OPS_LAYER, (double)n * act * B, 1);
    const int rot = model_rotary_dims(c);
    if (rot > 0) { /* the rotated dimensions of the rank's q and k heads */
        double qk = (double)(r.NH + model_kv_heads(&r)) * rot;
        mem(k, "rotary", pass, OPS_LAYER, (double)n * qk * B * 2.0, 1);
    }
    if (c->parallel_residual) /* x + attn + mlp: read 3, write 1 */
        mem(k, "residual", pass, OPS_LAYER, rows_sp * C * B * 4.0, 1);
    else
        mem(k, "residual", pass, OPS_LAYER, rows_sp * C * B * 3.0, 2);
}

static void tp_comm(op_sink *k, const model_config *c, const op_layout *l, long n, op_pass pass)
{
    if (l->tp <= 1) return;
    op_entry *e = put(k, "tp_collective", OPK_TP_COMM, pass, OPS_LAYER, pass == OPP_BWD ? "bwd" : "fwd", 2);
    if (e) e->bytes = (double)n * c->C * l->act_bytes;
}

/* Ring attention's K and V chunks (and their gradients backward) around the cp ranks of a layer:
 * each send s / cp tokens x the rank's key/value heads x HS x 2 (K and V), cp - 1 of them a pass. */
static void cp_sends(op_sink *k, const model_config *c, const op_layout *l, int recompute_core)
{
    if (l->cp <= 1) return;
    const model_config r = tp_shard(c, l->tp);
    double kv = (double)l->micro_batch * ((double)l->seq / l->cp) * model_kv_heads(&r) * c->HS * 2.0 * l->act_bytes;
    const op_pass pass[3] = {OPP_FWD, OPP_BWD, OPP_RECOMPUTE};
    for (int j = 0; j < (recompute_core ? 3 : 2); j++) {
        op_entry *e = put(k, "cp_kv_send", OPK_CP_SEND, pass[j], OPS_LAYER, pass[j] == OPP_BWD ? "bwd" : "fwd",
                          (double)(l->cp - 1));
        if (e) e->bytes = pass[j] == OPP_BWD ? 2.0 * kv : kv; /* backward: dK and dV ride with K and V */
    }
}

/* Full recompute of a share of the stage's layers (op_layout.recompute_share): every per-layer
 * recompute entry (GEMMs, attention, ring sends, fp8 casts, memory-bound ops, TP collectives) runs
 * `share` times a layer, the recomputed layers' work spread over all of the stage's layers. */
static void recompute_share_apply(op_sink *k, const op_layout *l)
{
    double share = l->recompute_share > 0 && l->recompute_share < 1 ? l->recompute_share : 1.0;
    for (int i = 0; i < k->n && i < k->cap; i++)
        if (k->out[i].pass == OPP_RECOMPUTE && k->out[i].scope == OPS_LAYER) k->out[i].count *= share;
}

int op_tp_splits(const model_config *c, int t)
{
    int kv = model_kv_heads(c);
    return t >= 1 && c->NH % t == 0 && (kv % t == 0 || t % kv == 0) && model_ffn(c) % t == 0;
}

int op_list(const model_config *c, const op_layout *l, op_entry *out, int cap)
{
    if (l->tp < 1 || l->cp < 1 || l->pp < 1 || l->micro_batch < 1 || l->seq < 1 || !op_tp_splits(c, l->tp) ||
        l->seq % l->cp != 0)
        return -1;
    op_sink k = {out, 0, cap};
    const model_config r = tp_shard(c, l->tp);
    long n = l->micro_batch * l->seq / l->cp, C = c->C;
    int full = l->recompute == OP_RECOMPUTE_FULL, f8 = l->fp8 != 0;
    const long lin[4][2] = {{C, model_qkv_rows(&r)}, {(long)r.NH * r.HS, C}, {C, model_mlp_in_rows(&r)}, {model_ffn(&r), C}};
    linear(&k, "qkv", OPS_LAYER, n, lin[0][0], lin[0][1], 1, full, f8);
    attention(&k, c, l, n, l->recompute != OP_RECOMPUTE_NONE);
    cp_sends(&k, c, l, l->recompute != OP_RECOMPUTE_NONE);
    linear(&k, "attn_out", OPS_LAYER, n, lin[1][0], lin[1][1], 1, full, f8);
    linear(&k, "mlp_up", OPS_LAYER, n, lin[2][0], lin[2][1], 1, full, f8);
    linear(&k, "mlp_down", OPS_LAYER, n, lin[3][0], lin[3][1], 1, full, f8);
    double wcast = 0;
    for (int i = 0; f8 && i < 4; i++) {
        fp8_casts(&k, l, n, lin[i][0], lin[i][1], C, i == 0 || i == 2);
        wcast += (double)lin[i][0] * (double)lin[i][1];
    }
    if (f8) /* the stage's weights, once per step (its layers: c->L / pp; no norm takes their amax) */
        mem(&k, "fp8_cast", OPP_STEP, OPS_STEP, wcast * (double)c->L / l->pp * op_fp8_cast_bytes(l->fp8_recipe, 0), 1);
    layer_memory(&k, c, l, n, OPP_FWD);
    layer_memory(&k, c, l, n, OPP_BWD);
    tp_comm(&k, c, l, n, OPP_FWD);
    tp_comm(&k, c, l, n, OPP_BWD);
    if (full) layer_memory(&k, c, l, n, OPP_RECOMPUTE), tp_comm(&k, c, l, n, OPP_RECOMPUTE);
    if (full) recompute_share_apply(&k, l);
    /* the first stage's embedding, the last stage's logits and loss */
    double rows_sp = l->sp && l->tp > 1 ? (double)n / l->tp : (double)n, B = l->act_bytes;
    double V = ceil((double)c->V / l->tp);
    mem(&k, "embedding", OPP_FWD, OPS_FIRST, rows_sp * C * B * 2.0, 1);
    mem(&k, "embedding", OPP_BWD, OPS_FIRST, rows_sp * C * B * 2.0, 1);
    mem(&k, "norm", OPP_FWD, OPS_LAST, rows_sp * C * B * 2.0, 1); /* the final norm */
    mem(&k, "norm", OPP_BWD, OPS_LAST, rows_sp * C * B * 3.0, 1);
    /* a vocabulary the TP ranks do not divide is padded (Megatron-LM pads it to a multiple of 128 x tp) */
    linear(&k, "logits", OPS_LAST, n, C, (long)((c->V + l->tp - 1) / l->tp), 1, 0, 0); /* 16-bit under fp8 too */
    mem(&k, "cross_entropy", OPP_FWD, OPS_LAST, (double)n * V * (B + 4.0), 1);
    mem(&k, "cross_entropy", OPP_BWD, OPS_LAST, (double)n * V * (4.0 + B), 1);
    /* data movement: weights per layer of the rank's tensor-parallel shard */
    double layer_params = model_params_non_embedding(c) / c->L / l->tp;
    double rank_params = model_params_total(c) / ((double)l->tp * l->pp);
    if (l->zero >= 3) {
        /* the model-wide tensors too: the first stage's embeddings (token, learned positions), the
         * last stage's final norm and output layer (with tied embeddings, none: the first stage's
         * table is the one gathered), each the TP rank's share */
        double first = (double)(param_size(c, P_WTE) + param_size(c, P_WPE)) / l->tp;
        double last = (model_params_total(c) - model_params_non_embedding(c)) / l->tp - first;
        const struct {
            op_scope scope;
            double params;
        } parts[3] = {{OPS_LAYER, layer_params}, {OPS_FIRST, first}, {OPS_LAST, last}};
        for (int i = 0; i < 3; i++) {
            op_entry *g = put(&k, "param_gather", OPK_GATHER, OPP_FWD, parts[i].scope, "fwd", 1);
            if (g) g->bytes = parts[i].params * l->weight_bytes;
            g = put(&k, "param_gather", OPK_GATHER, OPP_BWD, parts[i].scope, "bwd", 1);
            if (g) g->bytes = parts[i].params * l->weight_bytes;
            g = put(&k, "grad_sync", OPK_DP_COMM, OPP_BWD, parts[i].scope, "bwd", 1);
            if (g) g->bytes = parts[i].params * l->grad_bytes;
        }
    } else {
        op_entry *g = put(&k, "grad_sync", OPK_DP_COMM, OPP_STEP, OPS_STEP, "step", 1);
        if (g) g->bytes = rank_params * l->grad_bytes;
    }
    if (l->pp > 1) {
        /* each tensor-parallel rank sends its 1/tp of the activation (Megatron-LM's scatter/gather
         * across the stage boundary, Narayanan et al. 2021 section 4.1; with sequence parallelism
         * the activation is split already) */
        double v = l->vp > 1 ? l->vp : 1, send = (double)n / l->tp * C * B;
        op_entry *p = put(&k, "pp_send", OPK_PP_SEND, OPP_FWD, OPS_MB, "fwd", v);
        if (p) p->bytes = send;
        p = put(&k, "pp_send", OPK_PP_SEND, OPP_BWD, OPS_MB, "bwd", v);
        if (p) p->bytes = send;
    }
    op_entry *o = put(&k, "optimizer", OPK_OPTIM, OPP_STEP, OPS_STEP, "step", 1);
    if (o) o->bytes = rank_params / (l->zero >= 1 && l->dp > 1 ? (double)l->dp : 1.0) * l->optim_bytes;
    return k.n > cap ? -1 : k.n;
}

double op_times(const op_entry *op, double layers, int first, int last)
{
    switch (op->scope) {
    case OPS_LAYER: return layers * op->count;
    case OPS_FIRST: return first ? op->count : 0;
    case OPS_LAST: return last ? op->count : 0;
    case OPS_MB: return op->count;
    default: return 0;
    }
}

double op_list_flops(const op_entry *ops, int n, double layers, int first, int last, unsigned pass_mask)
{
    double f = 0;
    for (int i = 0; i < n; i++)
        if ((ops[i].kind == OPK_GEMM || ops[i].kind == OPK_ATTN) && (pass_mask & (1u << ops[i].pass)))
            f += ops[i].flops * op_times(&ops[i], layers, first, last);
    return f;
}
