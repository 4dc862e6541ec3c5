/* plan.c: the search of plan.h: layouts -> step model (report/scale.h) -> memory check ->
 * prices -> deadline, budget -> ranking and the cost/time frontier. */
#include "plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"

const char *const plan_bad_names[PLAN_NBAD] = {
    "TP past the ranks of a node", "TP not dividing the heads", "PP not dividing the layers",
    "ranks not a multiple of TP x PP", "global batch not splitting into replicas x micro-batches",
    "no compute time (no peak of that precision, or a calibration the efficiency rule cannot carry there)",
};

static const int plan_tps[] = {1, 2, 4, 8}, plan_pps[] = {1, 2, 4, 8}, plan_zeros[] = {0, 1, 3}, plan_mbs[] = {1, 2, 4, 8};

double plan_carry_mfu(const scale_model *s, const plan_inputs *in, int *clamped)
{
    return in->mfu_cal * scale_eff(in->eff, scale_eff_k(s), scale_eff_n(s), clamped) / in->e_cal;
}

double plan_t_mb_s(const scale_model *s, const plan_inputs *in)
{
    if (!in->calibrated) return scale_t_mb_from_peak(s, in->mfu);
    double mfu = plan_carry_mfu(s, in, NULL);
    return mfu > 0 && mfu <= 1 ? scale_t_mb_from_peak(s, mfu) : NAN;
}

/* What the calibration's carry did at a buildable layout: outside the curve, above the peak. */
static void carry_count(const plan_inputs *in, const scale_model *s, plan_result *res)
{
    int clamped = 0;
    double mfu = plan_carry_mfu(s, in, &clamped);
    res->eff_clamped += clamped;
    if (!(mfu > 1)) return;
    res->over_peak++;
    if (mfu > res->over_peak_mfu) res->over_peak_mfu = mfu, res->over_peak_k = scale_eff_k(s), res->over_peak_n = scale_eff_n(s);
}

double plan_failure_time(double work_s, double mtbf_job_s, double ckpt_s, double restart_s, double *tau_s)
{
    double tau = sqrt(2.0 * ckpt_s * mtbf_job_s);
    *tau_s = tau;
    double overhead = ckpt_s / tau + tau / (2.0 * mtbf_job_s) + restart_s / mtbf_job_s;
    if (!(overhead < 1.0)) return INFINITY;
    return work_s * (1.0 + overhead);
}

/* One layout of the search, decoded from its index. */
typedef struct {
    int inst, tp, pp, zero, mb, recompute;
    long nodes;
    scale_precision prec;
} plan_layout;

static int nodes_steps(long max_nodes)
{
    int k = 0;
    while ((1L << (k + 1)) <= max_nodes) k++;
    return k + 1;
}

/* Layout number i of the mixed-radix enumeration; 0 when the index names no layout (the second
 * precision of a device without a BF16 peak). */
static int layout_decode(const plan_inputs *in, long i, plan_layout *l)
{
    int nn = nodes_steps(in->max_nodes);
    l->recompute = (int)(i % 2), i /= 2;
    int prec = (int)(i % 2);
    i /= 2;
    l->mb = plan_mbs[i % 4], i /= 4;
    l->zero = plan_zeros[i % 3], i /= 3;
    l->pp = plan_pps[i % 4], i /= 4;
    l->tp = plan_tps[i % 4], i /= 4;
    l->nodes = 1L << (i % nn), i /= nn;
    l->inst = (int)i;
    if (!isfinite(in->inst[l->inst].hw.bf16_tflops)) {
        l->prec = PREC_FP32;
        return prec == 0;
    }
    l->prec = prec == 0 ? PREC_MIXED : PREC_BF16;
    return 1;
}

static long layout_count(const plan_inputs *in)
{
    return (long)in->ninst * nodes_steps(in->max_nodes) * 4 * 4 * 3 * 4 * 2 * 2;
}

/* Why the layout cannot be built from the model alone (PLAN_BAD_*: TP and PP against the node and
 * the model), or -1 when it can; the ranks and the batch are scale_layout's. */
static int layout_invalid(const plan_inputs *in, const plan_layout *l)
{
    const hw_row *hw = &in->inst[l->inst].hw;
    long D = (long)hw->accelerators * hw->workers;
    int kvh = in->cfg.KVH > 0 ? in->cfg.KVH : in->cfg.NH;
    if (l->tp > D) return PLAN_BAD_TP_RANKS;
    if (in->cfg.NH % l->tp != 0 || kvh % l->tp != 0) return PLAN_BAD_TP_HEADS;
    if (in->cfg.L % l->pp != 0) return PLAN_BAD_PP_LAYERS;
    return -1;
}

static void model_fill(const plan_inputs *in, const plan_layout *l, scale_model *s)
{
    memset(s, 0, sizeof *s);
    s->cfg = in->cfg;
    s->hw = in->inst[l->inst].hw;
    s->tp = l->tp, s->pp = l->pp, s->interleave = 1;
    s->seq = in->seq, s->micro_batch = l->mb, s->global_batch = in->global_batch;
    s->zero = l->zero, s->precision = l->prec, s->recompute = l->recompute;
    s->bucket_bytes = 25.0 * 1048576.0;
    s->net_eff = 1.0;
    s->latency_s = isfinite(s->hw.net_latency_us) ? s->hw.net_latency_us * 1e-6 : 0;
    s->overlap = 0;
    s->attn_flash = !in->attn_full;
    s->t_mb_s = plan_t_mb_s(s, in);
}

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
    if (in->mtbf_s > 0) train_s = plan_failure_time(work_s, in->mtbf_s / (double)l->nodes, in->ckpt_s, in->restart_s, &tau);
    if (!isfinite(train_s)) {
        res->endless++;
        return 0;
    }
    for (int o = 0; o < pi->noffers; o++) {
        plan_cand c = {.inst = l->inst, .offer = o, .nodes = l->nodes, .tp = l->tp, .pp = l->pp, .zero = l->zero,
                       .micro_batch = l->mb, .recompute = l->recompute, .prec = l->prec, .pt = *pt,
                       .usd_per_hour = pi->usd_per_hour[o], .train_s = train_s, .tau_s = tau,
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

/* Cost, then time; among equals the simpler layout (fewer model-parallel ranks, lower ZeRO
 * stage, no recomputation), then the one with more memory to spare. */
static int cand_cmp(const void *a, const void *b)
{
    const plan_cand *x = a, *y = b;
    if (x->cost_usd != y->cost_usd) return x->cost_usd < y->cost_usd ? -1 : 1;
    if (x->train_s != y->train_s) return x->train_s < y->train_s ? -1 : 1;
    if (x->tp * x->pp != y->tp * y->pp) return x->tp * x->pp < y->tp * y->pp ? -1 : 1;
    if (x->zero != y->zero) return x->zero < y->zero ? -1 : 1;
    if (x->recompute != y->recompute) return x->recompute < y->recompute ? -1 : 1;
    if (x->pt.mem_gib != y->pt.mem_gib) return x->pt.mem_gib < y->pt.mem_gib ? -1 : 1;
    return 0;
}

int plan_same_result(const plan_cand *a, const plan_cand *b)
{
    return a->inst == b->inst && a->offer == b->offer && a->nodes == b->nodes && fabs(a->cost_usd - b->cost_usd) <= 1e-9 * a->cost_usd &&
           fabs(a->train_s - b->train_s) <= 1e-9 * a->train_s;
}

int plan_search(const plan_inputs *in, plan_result *res)
{
    memset(res, 0, sizeof *res);
    long total = layout_count(in);
    for (long i = 0; i < total; i++) {
        plan_layout l;
        if (!layout_decode(in, i, &l)) continue;
        res->layouts++;
        int why = layout_invalid(in, &l);
        scale_model s;
        if (why < 0) {
            model_fill(in, &l, &s);
            scale_layout_issue li = scale_layout(&s, l.nodes);
            if (li == SCALE_LAYOUT_OK && in->calibrated) carry_count(in, &s, res);
            why = li == SCALE_LAYOUT_RANKS ? PLAN_BAD_RANKS : li != SCALE_LAYOUT_OK ? PLAN_BAD_BATCH : !isfinite(s.t_mb_s) ? PLAN_BAD_COMPUTE : -1;
        }
        if (why >= 0) {
            res->bad[why]++;
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
