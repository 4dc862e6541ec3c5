/* plan.c: the search of plan.h: layouts -> compute time (once per layout of the dimensions it
 * depends on) -> step model (report/predict/scale.h) -> memory check -> prices -> deadline, budget ->
 * ranking and the cost/time frontier. */
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/precision.h"

const char *const plan_bad_names[PLAN_NBAD] = {
    "TP past the scale-up domain of a node or not dividing its ranks",
    "PP not dividing the layers",
    "ranks not a multiple of TP x PP",
    "global batch not splitting into replicas x micro-batches (a multiple of PP when interleaved)",
    "no compute time (no peak of that precision, or the calibration carried above 100% of the peak)",
};

static const int plan_pps[] = {1, 2, 4, 8}, plan_vps[] = {1, 2, 4}, plan_zeros[] = {0, 1, 3}, plan_mbs[] = {1, 2, 4, 8};
enum { NPPS = 4, NVPS = 3, NZEROS = 3, NMBS = 4 };

int plan_node_counts(long max_nodes, long *out, int cap)
{
    int n = 0;
    for (long v = 1; v <= 16 && v <= max_nodes && n < cap; v++) out[n++] = v;
    /* 16 x 2^(k/4) is exact at every fourth k: the powers of two are among them */
    for (int k = 1; n < cap; k++) {
        long v = lround(16.0 * pow(2.0, k / 4.0));
        if (v > max_nodes) break;
        if (v > out[n - 1]) out[n++] = v;
    }
    return n;
}

int plan_tp_max(const hw_row *hw)
{
    long w = hw->workers > 0 ? hw->workers : 1, D = (long)hw->accelerators * w;
    long dom = hw->scaleup_domain > 0 ? (long)hw->scaleup_domain * w : D;
    return (int)(dom < D ? dom : D);
}

void plan_instance_device(plan_instance *pi, const dev_row *d)
{
    pi->stochastic_rounding = d && d->stochastic_rounding == 1;
    if (!d) pi->fp8 = pi->hw.fp8_tflops > 0;
    else pi->fp8 = d->fp8_tflops > 0 && strcmp(d->vendor, "aws") != 0; /* Neuron's stacks: no fp8 (plan.h) */
}

int plan_precisions(const plan_instance *pi, plan_prec *out)
{
    if (!isfinite(pi->hw.bf16_tflops)) return out[0] = (plan_prec){PRECISION_FP32, 0}, 1;
    int n = 0;
    out[n++] = (plan_prec){PRECISION_BF16_MIXED, 0};
    if (pi->fp8) out[n++] = (plan_prec){PRECISION_BF16_MIXED, 1};
    if (pi->stochastic_rounding) out[n++] = (plan_prec){PRECISION_BF16_SR, 0};
    return n;
}

const char *plan_prec_name(train_precision prec, int fp8) { return fp8 ? PRECISION_NAME_FP8 : precision_name(prec); }

/* One layout of the search. */
typedef struct {
    int inst, tp, sp, pp, vp, mb, recompute, zero;
    long nodes;
    train_precision prec;
    int fp8;
} plan_layout;

static void model_fill(const plan_inputs *in, const plan_layout *l, scale_model *s)
{
    const step_framework *fw = in->fw ? in->fw : step_framework_default();
    memset(s, 0, sizeof *s);
    s->cfg = in->cfg;
    s->hw = in->inst[l->inst].hw;
    s->tp = l->tp, s->pp = l->pp, s->interleave = l->vp, s->sp = l->sp, s->cp = 1;
    s->seq = in->seq, s->micro_batch = l->mb, s->global_batch = in->global_batch;
    s->zero = l->zero, s->precision = l->prec, s->recompute = l->recompute, s->fp8 = l->fp8;
    s->attn_flash = in->attn_flash;
    s->grad_overlap = fw->grad_overlap, s->gather_prefetch = fw->gather_prefetch;
    s->tp_overlap = fw->tp_overlap && s->sp; /* userbuffers TP overlap needs SP (report/predict/pubmodel.c) */
    s->tp_bwd_overlap = fw->tp_bwd_overlap;
    s->gemm_curve = in->eff;
    s->gemm_measured = in->gemm;
    s->bucket_bytes = 25.0 * 1048576.0;
    s->net_eff = 1.0;
    s->latency_s = isfinite(s->hw.net_latency_us) ? s->hw.net_latency_us * 1e-6 : 0;
    s->overlap = 0;
    step_profile_fill(s); /* the layout's step, once: its carry and every node count and ZeRO stage read it */
}

/* plan_t_mb_s, and what a calibration's carry did: *over set when it refused above 100% of the
 * peak (the share it reached into *eff_t: the larger of the hardware FLOPs' and the GEMMs'; its
 * reason into why), *clamped when the target lies outside a measured curve. */
static double t_mb_of(const scale_model *s, const plan_inputs *in, int *over, double *eff_t, int *clamped, char *why,
                      size_t n)
{
    *over = 0, *clamped = 0, *eff_t = NAN;
    if (!in->cal && !(in->phi > 0)) return scale_t_mb_from_peak(s, in->mfu);
    if (!in->cal) {
        step_parts parts; /* a GEMM outside its device's measured curve (report/formats/gemmcurve.h) */
        double t_dev = step_t_mb_device(s, &parts);
        *clamped = parts.gemm_clamped;
        return t_dev / in->phi;
    }
    double e = NAN;
    if (calib_fit_carry(in->cal, s, eff_t, clamped, &e, why, n) == 0) return calib_t_mb(s, *eff_t);
    *over = *eff_t > 1 || e > 1;
    if (*over) *eff_t = fmax(*eff_t, e);
    return NAN;
}

double plan_t_mb_s(const scale_model *s, const plan_inputs *in)
{
    int over, clamped;
    double eff_t;
    char why[1024];
    return t_mb_of(s, in, &over, &eff_t, &clamped, why, sizeof why);
}

void plan_cand_model(const plan_inputs *in, const plan_cand *c, scale_model *s)
{
    const plan_layout l = {.inst = c->inst, .tp = c->tp, .sp = c->sp, .pp = c->pp, .vp = c->vp, .mb = c->micro_batch,
                           .recompute = c->recompute, .zero = c->zero, .nodes = c->nodes, .prec = c->prec,
                           .fp8 = c->fp8};
    model_fill(in, &l, s);
    s->t_mb_s = plan_t_mb_s(s, in);
}

calib_case plan_cand_case(const plan_inputs *in, const plan_cand *c, double *band_pct, char *why, size_t n)
{
    if (why && n) why[0] = '\0';
    *band_pct = NAN;
    if (!in->cal) {
        if (in->phi > 0) *band_pct = in->phi_band_pct; /* the framework's default phi: its spread */
        return CALIB_NEAR;
    }
    scale_model s;
    plan_cand_model(in, c, &s);
    *band_pct = calib_band_pct(in->cal, &s, c->nodes);
    return calib_case_of(&in->cal->cal, in->cal->nodes, &s, c->nodes, why, n);
}

double plan_failure_time(double work_s, double mtbf_job_s, double ckpt_s, double restart_s, double *tau_s)
{
    double tau = sqrt(2.0 * ckpt_s * mtbf_job_s);
    *tau_s = tau;
    double overhead = ckpt_s / tau + tau / (2.0 * mtbf_job_s) + restart_s / mtbf_job_s;
    if (!(overhead < 1.0)) return INFINITY;
    return work_s * (1.0 + overhead);
}

/* ------------------------------------------------------------------ the search */

/* What the search walks: its inputs, the node counts, the result it fills. */
typedef struct {
    const plan_inputs *in;
    plan_result *res;
    long nodes[PLAN_MAX_NODE_COUNTS];
    int nn;
} plan_walk;

static int cand_push(plan_result *res, const plan_cand *c)
{
    if (res->n == res->cap) {
        int cap = res->cap ? 2 * res->cap : 1024;
        plan_cand *p = realloc(res->c, (size_t)cap * sizeof *p);
        if (!p) return err_msg("plan: out of memory for %d candidates", cap);
        res->c = p, res->cap = cap;
    }
    res->c[res->n++] = *c;
    return 0;
}

/* The layout at each of its instance's prices. */
static int layout_price(const plan_inputs *in, const plan_layout *l, const scale_point *pt, plan_result *res)
{
    const plan_instance *pi = &in->inst[l->inst];
    double work_s = in->tokens / pt->tokens_per_s, tau = NAN, train_s = work_s;
    if (in->mtbf_s > 0)
        train_s = plan_failure_time(work_s, in->mtbf_s / (double)l->nodes, in->ckpt_s, in->restart_s, &tau);
    if (!isfinite(train_s)) {
        res->endless++;
        return 0;
    }
    for (int o = 0; o < pi->noffers; o++) {
        plan_cand c = {.inst = l->inst, .offer = o, .nodes = l->nodes, .tp = l->tp, .pp = l->pp, .vp = l->vp,
                       .sp = l->sp, .zero = l->zero, .micro_batch = l->mb, .recompute = l->recompute, .prec = l->prec, .fp8 = l->fp8,
                       .pt = *pt, .usd_per_hour = pi->usd_per_hour[o], .train_s = train_s, .tau_s = tau,
                       .lost_pct = 100.0 * (train_s - work_s) / train_s};
        c.cost_usd = train_s / 3600.0 * (double)l->nodes * c.usd_per_hour;
        c.meets_deadline = train_s <= in->deadline_s;
        c.within_budget = in->budget_usd <= 0 || c.cost_usd <= in->budget_usd;
        if (!c.meets_deadline) res->too_slow++;
        else if (!c.within_budget) res->over_budget++;
        else res->ok++;
        if (cand_push(res, &c) != 0) return CB_EFAIL;
    }
    return 0;
}

/* Why a layout of these dimensions cannot be built whatever its node count (TP against the node,
 * PP against the layers), or -1 when it can. */
static int key_invalid(const plan_inputs *in, const plan_layout *k)
{
    const hw_row *hw = &in->inst[k->inst].hw;
    long D = (long)hw->accelerators * (hw->workers > 0 ? hw->workers : 1);
    if (k->tp > plan_tp_max(hw) || D % k->tp != 0) return PLAN_BAD_TP_RANKS;
    if (in->cfg.L % k->pp != 0) return PLAN_BAD_PP_LAYERS;
    return -1;
}

/* Why s cannot run at `nodes` (PLAN_BAD_*), or -1: the ranks and the batch (scale_layout), and
 * interleaved stages need a multiple of PP micro-batches per replica (Megatron-LM's schedule). */
static int nodes_invalid(const scale_model *s, long nodes)
{
    scale_layout_issue li = scale_layout(s, nodes);
    if (li == SCALE_LAYOUT_RANKS) return PLAN_BAD_RANKS;
    if (li != SCALE_LAYOUT_OK) return PLAN_BAD_BATCH;
    long D = (long)s->hw.accelerators * (s->hw.workers > 0 ? s->hw.workers : 1), R = nodes * D / scale_replica_ranks(s);
    if (s->interleave > 1 && (s->global_batch / (R * s->micro_batch)) % s->pp != 0) return PLAN_BAD_BATCH;
    return -1;
}

/* The compute time of a key's model, and what a calibration's carry did there. */
static void key_compute(plan_walk *w, scale_model *s, int *over)
{
    plan_result *res = w->res;
    int clamped;
    double eff_t;
    char why[1024];
    s->t_mb_s = t_mb_of(s, w->in, over, &eff_t, &clamped, why, sizeof why);
    res->eff_clamped += clamped ? w->nn * NZEROS : 0;
    if (*over && !(eff_t <= res->over_peak_eff)) {
        res->over_peak_eff = eff_t;
        snprintf(res->over_peak_why, sizeof res->over_peak_why, "%s", why);
    }
}

/* Every node count and ZeRO stage of one key (the other dimensions): its compute time once, then
 * each layout checked, evaluated, held against the rank's memory and priced. */
static int key_search(plan_walk *w, const plan_layout *k)
{
    const plan_inputs *in = w->in;
    plan_result *res = w->res;
    int why = key_invalid(in, k), over = 0;
    scale_model s;
    model_fill(in, k, &s);
    if (why < 0) key_compute(w, &s, &over);
    for (int i = 0; i < w->nn; i++)
        for (int z = 0; z < NZEROS; z++) {
            res->layouts++;
            plan_layout l = *k;
            l.nodes = w->nodes[i], l.zero = plan_zeros[z];
            s.zero = l.zero;
            int bad = why >= 0 ? why : nodes_invalid(&s, l.nodes);
            if (bad < 0 && !isfinite(s.t_mb_s)) bad = PLAN_BAD_COMPUTE, res->over_peak += over;
            if (bad >= 0) {
                res->bad[bad]++;
                continue;
            }
            scale_point pt;
            scale_eval(&s, l.nodes, &pt);
            if (!(pt.mem_gib <= pt.mem_avail_gib)) {
                res->oom++;
                continue;
            }
            if (layout_price(in, &l, &pt, res) != 0) return CB_EFAIL;
        }
    return 0;
}

/* The keys of one parallel layout: precision (plan_precisions), recomputation, micro-batch. */
static int keys_search(plan_walk *w, const plan_layout *base)
{
    plan_prec precs[PLAN_MAX_PRECS];
    int nprec = plan_precisions(&w->in->inst[base->inst], precs);
    for (int prec = 0; prec < nprec; prec++)
        for (int rc = 0; rc < 2; rc++)
            for (int m = 0; m < NMBS; m++) {
                plan_layout k = *base;
                k.prec = precs[prec].prec, k.fp8 = precs[prec].fp8;
                k.recompute = rc, k.mb = plan_mbs[m];
                if (key_search(w, &k) != 0) return CB_EFAIL;
            }
    return 0;
}

/* The parallel layouts of one instance type: TP (common/oplist.h's op_tp_splits), sequence
 * parallelism (with TP), PP, virtual stages (with PP, PP x stages dividing the layers). */
static int inst_search(plan_walk *w, int inst)
{
    const model_config *c = &w->in->cfg;
    for (int tp = 1; tp <= c->NH; tp++)
        for (int sp = 0; op_tp_splits(c, tp) && sp <= (tp > 1); sp++)
            for (int p = 0; p < NPPS; p++)
                for (int v = 0; v < NVPS; v++) {
                    const plan_layout base = {.inst = inst, .tp = tp, .sp = sp, .pp = plan_pps[p], .vp = plan_vps[v]};
                    if (base.vp > 1 && (base.pp == 1 || c->L % (base.pp * base.vp) != 0)) continue;
                    if (keys_search(w, &base) != 0) return CB_EFAIL;
                }
    return 0;
}

/* Cost, then time; among equals the simpler layout (fewer model-parallel ranks, no virtual
 * stages, no sequence parallelism, lower ZeRO stage, no recomputation, bf16-mixed before fp8 and
 * full bf16), then the one with more memory to spare. */
static int cand_cmp(const void *a, const void *b)
{
    const plan_cand *x = a, *y = b;
    if (x->cost_usd != y->cost_usd) return x->cost_usd < y->cost_usd ? -1 : 1;
    if (x->train_s != y->train_s) return x->train_s < y->train_s ? -1 : 1;
    if (x->tp * x->pp != y->tp * y->pp) return x->tp * x->pp < y->tp * y->pp ? -1 : 1;
    if (x->vp != y->vp) return x->vp < y->vp ? -1 : 1;
    if (x->sp != y->sp) return x->sp < y->sp ? -1 : 1;
    if (x->zero != y->zero) return x->zero < y->zero ? -1 : 1;
    if (x->recompute != y->recompute) return x->recompute < y->recompute ? -1 : 1;
    if (x->fp8 != y->fp8) return x->fp8 < y->fp8 ? -1 : 1;
    if (x->prec != y->prec) return x->prec < y->prec ? -1 : 1;
    if (x->pt.mem_gib != y->pt.mem_gib) return x->pt.mem_gib < y->pt.mem_gib ? -1 : 1;
    return 0;
}

int plan_same_result(const plan_cand *a, const plan_cand *b)
{
    return a->inst == b->inst && a->offer == b->offer && a->nodes == b->nodes &&
           fabs(a->cost_usd - b->cost_usd) <= 1e-9 * a->cost_usd && fabs(a->train_s - b->train_s) <= 1e-9 * a->train_s;
}

int plan_search(const plan_inputs *in, plan_result *res)
{
    memset(res, 0, sizeof *res);
    plan_walk w = {.in = in, .res = res};
    w.nn = plan_node_counts(in->max_nodes, w.nodes, PLAN_MAX_NODE_COUNTS);
    for (int i = 0; i < in->ninst; i++)
        if (inst_search(&w, i) != 0) return CB_EFAIL;
    if (res->n > 1) qsort(res->c, (size_t)res->n, sizeof *res->c, cand_cmp);
    return 0;
}

void plan_result_free(plan_result *res)
{
    if (!res) return;
    free(res->c);
    memset(res, 0, sizeof *res);
}

int plan_pareto(const plan_result *res, int inst, int offer, int *idx)
{
    /* res->c is by cost ascending: walking it, a candidate is on the frontier when it is faster
     * than every cheaper one (ties in cost were ordered faster first). */
    int n = 0;
    double best_s = INFINITY;
    for (int i = 0; i < res->n; i++)
        if ((inst < 0 || (res->c[i].inst == inst && res->c[i].offer == offer)) && res->c[i].train_s < best_s) {
            best_s = res->c[i].train_s;
            idx[n++] = i;
        }
    for (int a = 0, b = n - 1; a < b; a++, b--) { /* time ascending */
        int t = idx[a];
        idx[a] = idx[b], idx[b] = t;
    }
    return n;
}

int plan_fastest(const plan_result *res, int within_budget)
{
    int best = -1;
    for (int i = 0; i < res->n; i++) {
        if (within_budget && !res->c[i].within_budget) continue;
        if (best < 0 || res->c[i].train_s < res->c[best].train_s) best = i;
    }
    return best;
}
