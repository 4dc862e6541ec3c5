/* stepmodel.c: the operation list timed on a device (see stepmodel.h for every rule). */
#include "stepmodel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/err.h"
#include "../formats/gemmcurve.h"
#include "effcurve.h"

static double or_default(double v, double d) { return v > 0 && isfinite(v) ? v : d; }

/* The layout the list is built for. */
static void step_layout(const scale_model *s, long dp, op_layout *l)
{
    memset(l, 0, sizeof *l);
    l->micro_batch = s->micro_batch, l->seq = s->seq;
    l->tp = s->tp, l->pp = s->pp, l->cp = s->cp > 1 ? s->cp : 1, l->sp = s->sp, l->vp = s->interleave;
    l->recompute = s->recompute ? OP_RECOMPUTE_FULL : s->selective ? OP_RECOMPUTE_SELECTIVE : OP_RECOMPUTE_NONE;
    l->recompute_share = scale_recompute_share(s);
    l->attention = s->attn_flash ? OP_ATTN_TILED : OP_ATTN_FULL;
    const precision_info *pi = precision_info_of(s->precision);
    l->act_bytes = (int)pi->act_bytes, l->weight_bytes = (int)pi->weight_bytes, l->grad_bytes = (int)pi->grad_bytes;
    l->optim_bytes = (int)precision_adamw_traffic_bytes(s->precision);
    l->zero = s->zero, l->dp = dp;
    l->fp8 = s->fp8 && s->hw.fp8_tflops > 0; /* an fp8 row on a device without an FP8 peak: refused by its reader */
    int r = s->fp8_recipe;
    l->fp8_recipe = r > 0 && r < OP_FP8_NRECIPES ? (op_fp8_recipe)r : OP_FP8_DELAYED;
}

int step_ops(const scale_model *s, long dp, op_entry *ops, int cap)
{
    op_layout l;
    step_layout(s, dp, &l);
    return op_list(&s->cfg, &l, ops, cap);
}

/* Per rank: the dense peak of the run's precision and the memory bandwidth (a device's share). */
static double rank_peak(const scale_model *s)
{
    return scale_dense_tflops(s) * 1e12 / (s->hw.workers > 0 ? s->hw.workers : 1);
}
static double rank_bw(const scale_model *s)
{
    return s->hw.mem_gb_per_s * 1e9 / (s->hw.workers > 0 ? s->hw.workers : 1);
}

/* f(x) = x / (x + h), h the device's gemm_half_dim (data/devices.csv: fitted to measured GEMM tables;
 * Blackwell's and CDNA3's tensor cores need wider dimensions to fill than Hopper's) */
static double shape_factor(const scale_model *s, double x)
{
    return x / (x + or_default(s->hw.gemm_half_dim, STEP_GEMM_HALF_DIM));
}

const struct gemm_dev_curve_s *step_device_curve(const scale_model *s)
{
    if (precision_info_of(s->precision)->fp32_peak) return NULL; /* the CUDA-core FP32 peak: no grid measures it */
    return gemm_curves_find(s->gemm_measured, s->hw.accelerator);
}

const matmul_curve *step_device_grid(const scale_model *s, int fp8, double *peak)
{
    const gemm_dev_curve *c = step_device_curve(s);
    if (!c) return NULL;
    int d = fp8 ? GEMM_FP8 : c->grid[GEMM_BF16].nk > 0 ? GEMM_BF16 : GEMM_FP16;
    if (c->grid[d].nk == 0) return NULL;
    if (peak) *peak = c->peak_gflops[d] * 1e9;
    return &c->grid[d];
}

static double gemm_time(const scale_model *s, const op_entry *op)
{
    double launch = or_default(s->hw.launch_us, STEP_LAUNCH_US) * 1e-6, e;
    double n = (double)op->n, k = (double)op->k, m = (double)op->m;
    int fp8 = op->fp8 && s->hw.fp8_tflops > 0;
    double peak = fp8 ? s->hw.fp8_tflops * 1e12 / (s->hw.workers > 0 ? s->hw.workers : 1) : rank_peak(s);
    /* fp8 GEMMs reach their own share of the FP8 peak (Hopper's 0.71 against bf16's 0.80: MAMF) */
    double g = or_default(s->hw.gemm_eff, STEP_GEMM_EFF), g8 = fp8 ? or_default(s->hw.fp8_gemm_eff, g) : g;
    const matmul_curve *dg = step_device_grid(s, fp8, &peak); /* the device's measured grid: its e, its peak */
    if (dg) e = scale_eff(dg, k, n, NULL);
    else if (s->gemm_curve && s->gemm_curve->nk > 0) e = scale_eff(s->gemm_curve, k, n, NULL);
    else e = g8 * shape_factor(s, n) * shape_factor(s, k) * shape_factor(s, m);
    return op->flops / (e * peak) + launch;
}

/* Sets *clamped when the curve a GEMM runs on does not reach its K or N. */
static void gemm_clamp_check(const scale_model *s, const op_entry *op, int *clamped)
{
    const matmul_curve *dg = step_device_grid(s, op->fp8 && s->hw.fp8_tflops > 0, NULL);
    if (!dg && s->gemm_curve && s->gemm_curve->nk > 0) dg = s->gemm_curve;
    if (dg) scale_eff(dg, (double)op->k, (double)op->n, clamped);
}

double step_link_eff(const hw_row *hw) { return or_default(hw->link_eff, STEP_LINK_EFF); }
double step_link_latency_s(const hw_row *hw) { return or_default(hw->link_latency_us, STEP_LINK_LATENCY_US) * 1e-6; }

double step_attn_eff(const hw_row *hw, double s)
{
    if (hw->attn_eff_max > 0 && hw->attn_s_half >= 0 && s > 0) return hw->attn_eff_max * s / (s + hw->attn_s_half);
    return or_default(hw->attn_eff, STEP_ATTN_EFF);
}

/* A ring collective over the scale-up link among `t` ranks of `bytes` each (all-reduce when
 * `halves` is 2; an all-gather or a reduce-scatter alone is 1). */
static double link_ring(const scale_model *s, double t, double bytes, double halves)
{
    if (t <= 1 || !(s->hw.intra_gb_per_s > 0)) return 0;
    double bw = s->hw.intra_gb_per_s * 1e9 * step_link_eff(&s->hw);
    return halves * (t - 1) / t * bytes / bw + halves * (t - 1) * step_link_latency_s(&s->hw);
}

double step_op_time(const scale_model *s, const op_entry *op)
{
    double launch = or_default(s->hw.launch_us, STEP_LAUNCH_US) * 1e-6;
    switch (op->kind) {
    case OPK_GEMM: return gemm_time(s, op);
    case OPK_ATTN:
        /* the kernel's share at the sequence length it sees: a context-parallel rank's s / cp queries
         * against one s / cp chunk of keys per ring step (op->n) */
        if (s->attn_flash) return op->flops / (step_attn_eff(&s->hw, (double)op->n) * rank_peak(s)) + launch;
        /* batched over the heads: the batch fills the device, no shape loss */
        return op->flops / (or_default(s->hw.gemm_eff, STEP_GEMM_EFF) * rank_peak(s)) + 2.0 * launch;
    case OPK_MEM: /* a memory bandwidth that is not known carries no modelled time (as an unknown link) */
        return rank_bw(s) > 0 ? op->bytes / (or_default(s->hw.mem_eff, STEP_MEM_EFF) * rank_bw(s)) + launch : 0;
    case OPK_TP_COMM: return link_ring(s, s->tp, op->bytes, 2.0);
    case OPK_CP_SEND: { /* one ring step: a send to the next rank over the link, or the network past a node */
        long per_node = (long)s->hw.accelerators * (s->hw.workers > 0 ? s->hw.workers : 1);
        if ((long)s->tp * (s->cp > 1 ? s->cp : 1) <= per_node)
            return s->hw.intra_gb_per_s > 0
                       ? op->bytes / (s->hw.intra_gb_per_s * 1e9 * step_link_eff(&s->hw)) + step_link_latency_s(&s->hw)
                       : 0;
        if (!(s->hw.net_gbit_per_s > 0)) return 0;
        double lat = (s->hw.net_latency_us > 0 ? s->hw.net_latency_us : STEP_NET_LATENCY_US) * 1e-6;
        return op->bytes / (s->hw.net_gbit_per_s * 1e9 / 8.0 * s->net_eff / (double)per_node) + lat;
    }
    case OPK_PP_SEND: /* the stages on one node: its link (unknown: no modelled time); across nodes: pp_send_net */
        return s->hw.intra_gb_per_s > 0 ? op->bytes / (s->hw.intra_gb_per_s * 1e9 * step_link_eff(&s->hw)) : 0;
    default: return 0; /* data-parallel movement and the optimizer: their bytes go into the step profile
                        * (step_profile_fill), which report/predict/scale.c times per step */
    }
}

/* A pipeline send across nodes at the line rate, over the rank's share of its node's network (the
 * hop's latency is added when it is read: step_comm_of). */
static double pp_send_net(const scale_model *s, const op_entry *op)
{
    long per_node = (long)s->hw.accelerators * (s->hw.workers > 0 ? s->hw.workers : 1);
    return s->hw.net_gbit_per_s > 0 ? op->bytes / (s->hw.net_gbit_per_s * 1e9 / 8.0 / (double)per_node) : 0;
}

/* The layers one stage holds (over its vp chunks): L / pp, or an uneven pipeline's count
 * (stepconfig.h's pp_uneven: the first's, the last's, (L - first - last) / (pp - 2) the others'). */
static double stage_layers(const scale_model *s, int first, int last)
{
    if (!s->pp_uneven || s->pp < 2) return (double)s->cfg.L / s->pp;
    if (first) return s->pp_first_layers;
    if (last) return s->pp_last_layers;
    return (double)(s->cfg.L - s->pp_first_layers - s->pp_last_layers) / (s->pp - 2);
}

/* One stage (first and/or last, or neither: a middle one) of the slowest kind: its compute parts. */
static void stage_time(const scale_model *s, const op_entry *ops, int n, int first, int last, step_parts *p)
{
    double layers = stage_layers(s, first, last);
    memset(p, 0, sizeof *p);
    for (int i = 0; i < n; i++) {
        double times = op_times(&ops[i], layers, first, last);
        if (times <= 0) continue;
        double t = step_op_time(s, &ops[i]) * times;
        if (ops[i].kind == OPK_GEMM) gemm_clamp_check(s, &ops[i], &p->gemm_clamped);
        switch (ops[i].kind) {
        case OPK_GEMM: p->gemm_s += t; break;
        case OPK_ATTN: p->attn_s += t; break;
        case OPK_MEM: p->mem_s += t; break;
        case OPK_TP_COMM: p->tp_s += t; break;
        case OPK_PP_SEND:
            p->pp_s += t, p->pp_net_s += pp_send_net(s, &ops[i]) * times, p->pp_sends += times;
            break;
        case OPK_CP_SEND: p->cp_s += t; break;
        default: break;
        }
        if (ops[i].pass == OPP_BWD && ops[i].kind <= OPK_MEM) p->bwd_s += t;
        if (ops[i].scope == OPS_LAYER && ops[i].kind <= OPK_MEM) p->layer_s += t / layers; /* times > 0: layers > 0 */
    }
}

/* An uneven pipeline's stages: b becomes the slowest of the first (a), the last (b) and a middle
 * one (pp > 2), and a the same stage, so the even path's choices (a's compute when slower than b's,
 * b's communication) both read it. */
static void uneven_slowest(const scale_model *s, const op_entry *ops, int n, step_parts *a, step_parts *b)
{
    step_parts m;
    if (s->pp > 2) {
        stage_time(s, ops, n, 0, 0, &m);
        if (m.gemm_s + m.attn_s + m.mem_s > b->gemm_s + b->attn_s + b->mem_s) *b = m;
    }
    if (a->gemm_s + a->attn_s + a->mem_s > b->gemm_s + b->attn_s + b->mem_s) *b = *a;
    *a = *b;
}

/* The backward TP collective time the weight-gradient GEMMs hide per micro-batch (the framework
 * feature tp_bwd_overlap: Megatron-Core's and Transformer Engine's column-parallel Linear issue the
 * input gradient's all-reduce, or with sequence parallelism its reduce-scatter, asynchronously and
 * compute the weight gradient meanwhile: megatron/core/tensor_parallel/layers.py:534-548
 * @core_v0.14.0, TE pytorch/module/layernorm_linear.py:746-752 @v2.8). Per layer, each block's
 * backward collective (the tp_collective entry) hides under its column-parallel layer's wgrad (qkv,
 * mlp_up), up to that GEMM's time; with sequence parallelism only the reduce-scatter half does: the
 * all-gather of the row-parallel layer's output gradient is synchronous (mappings.py:368-377
 * @core_v0.14.0, _ReduceScatterToSequenceParallelRegion.backward; TE module/base.py:1145-1151 @v2.8). */
static double tp_bwd_hidden(const scale_model *s, const op_entry *ops, int n)
{
    const op_entry *tp = NULL, *wgrad[2] = {NULL, NULL};
    for (int i = 0; i < n; i++) {
        if (ops[i].kind == OPK_TP_COMM && ops[i].pass == OPP_BWD) tp = &ops[i];
        if (ops[i].kind != OPK_GEMM || strcmp(ops[i].phase, "bwd_weight") != 0) continue;
        if (strcmp(ops[i].name, "qkv") == 0) wgrad[0] = &ops[i];
        if (strcmp(ops[i].name, "mlp_up") == 0) wgrad[1] = &ops[i];
    }
    if (!tp || !wgrad[0] || !wgrad[1]) return 0;
    double comm = step_op_time(s, tp) * (s->sp && s->tp > 1 ? 0.5 : 1.0), hidden = 0;
    for (int k = 0; k < 2; k++) {
        double w = step_op_time(s, wgrad[k]);
        if (isfinite(w)) hidden += fmin(comm, w); /* a device without peaks: its GEMM time hides nothing */
    }
    return hidden * (double)s->cfg.L / s->pp;
}

/* The TP collectives one micro-batch exposes on a stage of parts c: with tp_overlap (userbuffers)
 * hidden under the stage's GEMMs, forward and backward; else with tp_bwd_overlap the backward ones
 * the wgrad GEMMs hide (tp_bwd_hidden); else all of them. */
static double tp_exposed(const scale_model *s, const op_entry *ops, int n, const step_parts *c)
{
    if (s->tp_overlap) return isfinite(c->gemm_s) ? fmax(0.0, c->tp_s - c->gemm_s) : c->tp_s;
    if (s->tp_bwd_overlap) return fmax(0.0, c->tp_s - tp_bwd_hidden(s, ops, n));
    return c->tp_s;
}

/* The fields of s its step depends on (zeroed first: the key is compared byte for byte). */
static void step_key_of(const scale_model *s, step_key *k)
{
    memset(k, 0, sizeof *k);
    k->cfg = s->cfg, k->hw = s->hw;
    k->tp = s->tp, k->pp = s->pp, k->interleave = s->interleave, k->cp = s->cp, k->sp = s->sp;
    k->recompute = s->recompute, k->selective = s->selective, k->attn_flash = s->attn_flash, k->fp8 = s->fp8;
    k->fp8_recipe = s->fp8_recipe, k->tp_bwd_overlap = s->tp_bwd_overlap;
    k->tp_overlap = s->tp_overlap, k->seq = s->seq, k->micro_batch = s->micro_batch, k->precision = s->precision;
    k->pp_uneven = s->pp_uneven, k->pp_first_layers = s->pp_first_layers, k->pp_last_layers = s->pp_last_layers;
    k->recompute_share = scale_recompute_share(s);
    k->gemm_curve = s->gemm_curve && s->gemm_curve->nk > 0 ? s->gemm_curve : NULL; /* an empty curve: the rule */
    k->gemm_device = step_device_curve(s);
}

/* The list's per-step entries (the gradient a rank synchronises, AdamW's traffic) of `ops` (built
 * at ZeRO 0), the weights a replica gathers per micro-batch of `z3` (the same layout at ZeRO 3), the
 * state a rank holds and the FLOPs a token. */
static void profile_bytes(const scale_model *s, const op_entry *ops, int n, const op_entry *z3, int n3,
                          step_profile *p)
{
    double f8 = 0, f = 0, layers = (double)s->cfg.L / s->pp;
    for (int i = 0; i < n; i++) {
        if (ops[i].kind == OPK_DP_COMM && ops[i].scope == OPS_STEP) p->grad_bytes += ops[i].bytes;
        if (ops[i].kind == OPK_OPTIM) p->optimizer_bytes += ops[i].bytes;
        if (ops[i].kind == OPK_MEM && ops[i].scope == OPS_STEP) p->step_mem_bytes += ops[i].bytes;
        if (ops[i].kind != OPK_GEMM && ops[i].kind != OPK_ATTN) continue;
        double fl = ops[i].flops * op_times(&ops[i], layers, 1, 1); /* a stage that is first and last: every kind */
        f += fl, f8 += ops[i].fp8 ? fl : 0;
    }
    p->fp8_flops_share = f > 0 ? f8 / f : 0;
    for (int i = 0; i < n3; i++) /* every layer, the first stage's and the last's: the whole replica */
        if (z3[i].kind == OPK_GATHER) p->gather_bytes += z3[i].bytes * op_times(&z3[i], s->cfg.L, 1, 1) * s->tp;
    const precision_info *pi = precision_info_of(s->precision);
    double rank_params = p->grad_bytes / pi->grad_bytes; /* the gradients a rank holds: one per parameter */
    p->weight_bytes = p->gather_bytes / 2.0 / ((double)s->tp * s->pp);
    p->state_bytes = rank_params * precision_optimizer_bytes(s->precision);
    p->model_flops_per_token = model_flops_per_token(&s->cfg, (int)s->seq);
    /* with the recomputed forward of the share of the layers full recompute runs again (all: common/counts.c's) */
    double hw_all = model_hardware_flops_per_token(&s->cfg, (int)s->seq, s->recompute), share = scale_recompute_share(s);
    p->hw_flops_per_token = share < 1 ? p->model_flops_per_token + share * (hw_all - p->model_flops_per_token) : hw_all;
}

/* Activations a rank keeps for the backward, L layers' worth (the first stage's, which holds the
 * most micro-batches in flight under 1F1B): Korthikanti et al. 2022's s b h (10 + 24/t + 5 a s/(h t))
 * bytes per layer in 16-bit, scaled to the precision's activation bytes. */
static double act_bytes_of(const scale_model *s)
{
    const model_config *c = &s->cfg;
    double sbh = (double)s->seq * s->micro_batch * c->C;
    /* the 5 a s / (h t) term is the attention scores, softmax and dropout mask: tiled (flash)
     * attention and selective recomputation keep none of it (Korthikanti et al. 2022, section 4.2) */
    double scores = s->attn_flash || s->selective ? 0.0 : 5.0 * c->NH * (double)s->seq / ((double)c->C * s->tp);
    /* sequence parallelism splits the 10 s b h outside the TP regions (and the recomputed inputs) over the TP ranks too
     * (Korthikanti et al. 2022, Table 2: s b h (34 / t + 5 a s / (h t))) */
    double sp_div = s->sp && s->tp > 1 ? (double)s->tp : 1.0;
    /* full recompute keeps a layer's input alone, on the share of the layers it recomputes (the others
     * keep all of theirs: Megatron-Core's block method) */
    double kept = sbh * (10.0 / sp_div + 24.0 / s->tp + scores), share = scale_recompute_share(s);
    double per_layer = share * 2.0 * sbh / sp_div + (1.0 - share) * kept;
    per_layer *= precision_info_of(s->precision)->act_bytes / 2.0; /* the formula's bytes are 16-bit ones */
    /* the first stage keeps pp micro-batches of its layers: L / pp each when even */
    double layers = s->pp_uneven && s->pp > 1 ? (double)s->pp_first_layers * s->pp : (double)c->L;
    return layers * per_layer;
}

/* The list of s's layout built once and timed: the slowest stage's compute, the exposed
 * communication every stage runs, the per-step bytes. The list is built at ZeRO 0 (the stage
 * changes only what moves per step, which scale.c shards by its replicas) and once more at ZeRO 3
 * for its gathers, so the profile holds for every stage. */
static void profile_build(const scale_model *s, step_profile *p)
{
    memset(p, 0, sizeof *p);
    step_key_of(s, &p->key);
    p->valid = 1, p->t_device_s = NAN;
    p->act_bytes = act_bytes_of(s);
    op_layout l;
    step_layout(s, 1, &l);
    l.zero = 0;
    op_entry ops[OP_LIST_MAX], z3[OP_LIST_MAX];
    int n = op_list(&s->cfg, &l, ops, OP_LIST_MAX);
    if (n < 0) return;
    l.zero = 3;
    int n3 = op_list(&s->cfg, &l, z3, OP_LIST_MAX);
    /* timed at the line rate: a send across nodes is divided by the network efficiency, a fitted
     * parameter, when it is read (step_comm_of) */
    scale_model u = *s;
    u.net_eff = 1.0;
    step_parts a, b;
    stage_time(&u, ops, n, 1, s->pp == 1, &a);
    if (s->pp > 1) stage_time(&u, ops, n, 0, 1, &b);
    /* an uneven pipeline: the step is set by its slowest stage, the first, the last or a middle
     * one (which holds the most layers and neither the embedding nor the logits) */
    if (s->pp_uneven && s->pp > 1) uneven_slowest(&u, ops, n, &a, &b);
    /* every stage runs the same collectives and sends per layer and micro-batch (the last stage's
     * here; an uneven pipeline's slowest stage's); the links time them whether or not the device
     * has peaks (its GEMM time is then NaN, and hides nothing) */
    const step_parts *c = s->pp > 1 ? &b : &a;
    double tp = tp_exposed(&u, ops, n, c);
    long per_node = (long)s->hw.accelerators * (s->hw.workers > 0 ? s->hw.workers : 1);
    p->tp_per_mb_s = tp, p->pp_link_per_mb_s = c->pp_s, p->pp_net_per_mb_s = c->pp_net_s, p->pp_sends = c->pp_sends;
    /* ring attention overlaps each K/V send with the attention of the chunk in hand (TE's p2p ring,
     * async and double-buffered: context_parallel.py); what the attention cannot cover is exposed */
    p->cp_per_mb_s = fmax(0.0, c->cp_s - (isfinite(c->attn_s) ? c->attn_s : 0.0));
    p->cp_over_net = (long)s->tp * (s->cp > 1 ? s->cp : 1) > per_node;
    if (rank_peak(s) > 0) {
        if (s->pp > 1 && b.gemm_s + b.attn_s + b.mem_s > a.gemm_s + a.attn_s + a.mem_s) a = b;
        p->parts = a;
        p->t_device_s = a.gemm_s + a.attn_s + a.mem_s;
    }
    profile_bytes(s, ops, n, z3, n3 > 0 ? n3 : 0, p);
}

void step_profile_fill(scale_model *s)
{
    step_key k;
    step_key_of(s, &k);
    if (s->prof.valid && memcmp(&k, &s->prof.key, sizeof k) == 0) return; /* its step already */
    profile_build(s, &s->prof);
}

const step_profile *step_profile_get(const scale_model *s)
{
    step_key k;
    step_key_of(s, &k);
    if (s->prof.valid && memcmp(&k, &s->prof.key, sizeof k) == 0) return &s->prof;
    err_msg("internal: the step of %s on %s was read before it was computed for its configuration "
            "(report/predict/stepmodel.h's step_profile_fill); no figure printed",
            s->cfg.name, s->hw.instance);
    exit(1);
}

double step_t_mb_device(const scale_model *s, step_parts *parts)
{
    const step_profile *p = step_profile_get(s);
    if (parts) *parts = p->parts;
    return p->t_device_s;
}

int step_pp_over_net(long nodes) { return nodes > 1; }

double step_comm_of(const scale_model *s, const step_profile *p, long nodes)
{
    double cp = p->cp_over_net && p->cp_per_mb_s > 0 ? p->cp_per_mb_s / s->net_eff : p->cp_per_mb_s;
    double pp = p->pp_link_per_mb_s;
    if (p->pp_sends > 0 && step_pp_over_net(nodes)) /* each send a network hop: its latency, not shared; an */
        pp = p->pp_net_per_mb_s > 0                   /* unknown network: not modelled (as an unknown link) */
                 ? p->pp_net_per_mb_s / s->net_eff + p->pp_sends * (s->latency_s > 0 ? s->latency_s : 0)
                 : 0;
    return p->tp_per_mb_s + pp + cp;
}

double step_comm_per_mb(const scale_model *s)
{
    long per_node = (long)s->hw.accelerators * (s->hw.workers > 0 ? s->hw.workers : 1);
    long nodes = per_node > 0 ? (scale_replica_ranks(s) + per_node - 1) / per_node : 1;
    return step_comm_of(s, step_profile_get(s), nodes);
}


/* "bf16 e 0.52-0.80 over k 1024-16384, n 1024-32768" of grid d into buf. */
static void grid_text(const gemm_dev_curve *c, int d, char *buf, size_t n)
{
    const matmul_curve *g = &c->grid[d];
    double lo, hi;
    gemm_grid_range(g, &lo, &hi);
    snprintf(buf, n, "%s e %.2f-%.2f over k %g-%g, n %g-%g", gemm_dtype_names[d], lo, hi, g->k[0], g->k[g->nk - 1],
             g->n[0], g->n[g->nn - 1]);
}

/* The measured curve's line: its file, provenance, the grids the run's GEMMs are on. */
static void source_measured(const scale_model *s, const gemm_dev_curve *c, const char *dev, char *buf, size_t n)
{
    char fam[96] = "", g16[160], g8[200] = "";
    if (strcmp(c->device, dev) != 0) snprintf(fam, sizeof fam, "its family %s's ", c->device);
    double lo, hi;
    const matmul_curve *dg = step_device_grid(s, 0, NULL);
    grid_text(c, dg == &c->grid[GEMM_BF16] ? GEMM_BF16 : GEMM_FP16, g16, sizeof g16);
    if (c->grid[GEMM_FP8].nk > 0 && s->hw.fp8_tflops > 0) { /* an fp8 run's fp8 GEMMs */
        grid_text(c, GEMM_FP8, g8 + 2, sizeof g8 - 2);
        g8[0] = ';', g8[1] = ' ';
    } else if (s->fp8 && s->hw.fp8_tflops > 0)
        snprintf(g8, sizeof g8, "; fp8 GEMMs on the cited figures (fp8 not measured: fp8_gemm_eff %.2f x shape factors)",
                 or_default(s->hw.fp8_gemm_eff, or_default(s->hw.gemm_eff, STEP_GEMM_EFF)));
    gemm_grid_range(dg, &lo, &hi);
    snprintf(buf, n, "GEMMs on %s: %smeasured curve %s (%s%s%s%s%s; %s%s)", dev, fam, c->path,
             c->gpu_name[0] ? c->gpu_name : "GPU not named", c->cublaslt[0] ? ", cuBLASLt " : "", c->cublaslt,
             c->date[0] ? ", " : "", c->date, g16, g8);
}

void step_gemm_source(const scale_model *s, char *buf, size_t n)
{
    const char *dev = s->hw.accelerator[0] ? s->hw.accelerator : s->hw.instance;
    const gemm_dev_curve *c = gemm_curves_find(s->gemm_measured, s->hw.accelerator);
    if (step_device_grid(s, 0, NULL)) {
        source_measured(s, c, dev, buf, n);
        return;
    }
    char eff[96], why[256] = "";
    if (s->hw.gemm_eff > 0) snprintf(eff, sizeof eff, "gemm_eff %.2f", s->hw.gemm_eff);
    else snprintf(eff, sizeof eff, "gemm_eff %.2f, the default: data/devices.csv leaves it empty", STEP_GEMM_EFF);
    if (c && precision_info_of(s->precision)->fp32_peak)
        snprintf(why, sizeof why, "; its measured curve %.60s is not used at fp32 (the step model's fp32 peak is the "
                 "CUDA-core FP32 one, which no tensor-core grid measures)", c->path);
    else if (c) snprintf(why, sizeof why, "; its measured curve %.150s has no bf16 or fp16 sweep", c->path);
    if (s->gemm_curve && s->gemm_curve->nk > 0)
        snprintf(buf, n, "GEMMs on %s: the --matmul-csv curve (its %s, log-linear in K and N)", dev,
                 s->gemm_curve->column);
    else snprintf(buf, n, "GEMMs on %s: cited figures (%s x shape factors, data/devices.csv)%s", dev, eff, why);
}

void step_gemm_brief(const scale_model *s, char *buf, size_t n)
{
    const gemm_dev_curve *c = step_device_grid(s, 0, NULL) ? step_device_curve(s) : NULL;
    if (c) snprintf(buf, n, "GEMMs on the measured curve of %s", c->device);
    else if (n) buf[0] = '\0';
}
