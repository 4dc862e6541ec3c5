#include "scale.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/err.h"
#include "../common/stats.h"

const char *const scale_precision_names[3] = {"fp32", "mixed", "bf16"};
const char *const scale_param_names[SP_COUNT] = {"compute", "bandwidth", "latency", "overlap"};

/* Bytes per parameter: weights, gradients, optimizer state (ZeRO paper's accounting: mixed
 * precision keeps 2 + 2 + 12 bytes: bf16 weights and gradients, fp32 master, m and v; full bf16 as
 * on Trainium with stochastic rounding keeps m and v in bf16 too). */
static void bytes_per_param(scale_precision p, double *w, double *g, double *o)
{
    switch (p) {
    case PREC_FP32: *w = 4, *g = 4, *o = 8; break;
    case PREC_MIXED: *w = 2, *g = 2, *o = 12; break;
    default: *w = 2, *g = 2, *o = 4; break;
    }
}

static long ranks_per_node(const scale_model *s) { return (long)s->hw.accelerators * s->hw.workers; }

int scale_check(const scale_model *s, long nodes, const char *flag)
{
    long D = ranks_per_node(s), M = (long)s->tp * s->pp;
    if (nodes < 1) return err_usage("flag '%s': node counts must be at least 1, got %ld", flag, nodes);
    if ((nodes * D) % M != 0)
        return err_usage("flag '%s': %ld x %s holds %ld ranks, not a multiple of tp x pp = %ld", flag, nodes, s->hw.instance,
                         nodes * D, M);
    long R = nodes * D / M;
    if (s->global_batch > 0 && s->global_batch % (R * s->micro_batch) != 0)
        return err_usage("flag '%s': at %ld nodes the global batch %ld does not split into %ld replicas x micro-batches of %ld",
                         flag, nodes, s->global_batch, R, s->micro_batch);
    if (s->batch_per_replica > 0 && s->batch_per_replica % s->micro_batch != 0)
        return err_usage("flag '--batch-per-device': %ld is not a multiple of the micro-batch %ld", s->batch_per_replica,
                         s->micro_batch);
    return 0;
}

double scale_peak_per_instance(const scale_model *s)
{
    double tf = s->precision == PREC_FP32 ? s->hw.fp32_tflops : s->hw.bf16_tflops;
    return tf * 1e12 * s->hw.accelerators;
}

double scale_t_mb_from_peak(const scale_model *s, double mfu)
{
    /* hardware FLOPs of one micro-batch through one stage, shared by the tp ranks of the stage */
    double peak_rank = scale_peak_per_instance(s) / (double)ranks_per_node(s);
    double flops = model_hardware_flops_per_token(&s->cfg, (int)s->seq, s->recompute) * (double)s->micro_batch * (double)s->seq;
    return flops / ((double)s->tp * s->pp * peak_rank * mfu);
}

void scale_eval(const scale_model *s, long nodes, scale_point *p)
{
    memset(p, 0, sizeof *p);
    const model_config *c = &s->cfg;
    double D = (double)ranks_per_node(s), M = (double)s->tp * s->pp;
    double N = model_params_total(c);
    double wb, gb, ob;
    bytes_per_param(s->precision, &wb, &gb, &ob);
    double act_bytes = s->precision == PREC_FP32 ? 4 : 2;
    long R = (long)((double)nodes * D / M);
    long per_replica = s->global_batch > 0 ? s->global_batch / R : s->batch_per_replica;
    long m = per_replica / s->micro_batch;
    p->nodes = nodes;
    p->replicas = R;
    p->global_batch = per_replica * R;
    p->micro_batches = m;

    /* tensor-parallel all-reduces of one micro-batch through one stage */
    double tp_mb = 0;
    if (s->tp > 1 && isfinite(s->hw.intra_gb_per_s)) {
        double per = (double)s->micro_batch * s->seq * c->C * act_bytes;
        tp_mb = (4.0 + 2.0 * s->recompute) * ((double)c->L / s->pp) * 2.0 * (s->tp - 1) / s->tp * per / (s->hw.intra_gb_per_s * 1e9);
    }
    double t_mb = s->t_mb_s + tp_mb;
    p->compute_s = (double)m * s->t_mb_s;
    p->tp_s = (double)m * tp_mb;
    p->bubble_s = (s->pp - 1) / (double)s->interleave * t_mb;

    /* data-parallel gradient synchronisation: inside a node first (when a node holds several
     * replicas), then across nodes, each a ring */
    double dp = 0;
    double r_node = D / M; /* replicas per node (< 1: a replica spans 1/r nodes) */
    double shard = N / M * gb; /* gradient bytes one rank holds */
    if (r_node > 1 && isfinite(s->hw.intra_gb_per_s))
        dp += 2.0 * (r_node - 1) / r_node * shard / (s->hw.intra_gb_per_s * 1e9);
    double k = r_node >= 1 ? (double)nodes : (double)R; /* ring size across nodes */
    if (k > 1) {
        double node_bytes = N * gb * fmin(1.0, r_node);
        double bw = s->hw.net_gbit_per_s * 1e9 / 8.0 * s->net_eff;
        double ring = 2.0 * (k - 1) / k;
        double bytes = ring * node_bytes;
        if (s->zero == 3) /* reduce-scatter of gradients once, all-gather of weights in every forward and backward */
            bytes = (k - 1) / k * node_bytes + (double)m * 2.0 * (k - 1) / k * N * wb * fmin(1.0, r_node);
        double buckets = ceil(shard / s->bucket_bytes);
        dp += bytes / bw + 2.0 * (k - 1) * s->latency_s * buckets;
    }
    p->dp_s = dp;
    p->exposed_s = fmax(0.0, dp - s->overlap * (2.0 / 3.0) * s->t_mb_s);

    /* AdamW: read weights, gradients and state, write weights and state, once per step, on the
     * rank's shard (ZeRO >= 1 shards the state and its update across the replicas) */
    double shard_params = N / M / (s->zero >= 1 ? (double)R : 1.0);
    if (isfinite(s->hw.mem_gb_per_s)) {
        double bytes = shard_params * (2 * wb + gb + 2 * ob);
        p->optimizer_s = bytes / (s->hw.mem_gb_per_s * 1e9 / s->hw.workers);
    }
    p->step_s = p->compute_s + p->tp_s + p->bubble_s + p->exposed_s + p->optimizer_s;
    p->seq_per_s = (double)p->global_batch / p->step_s;
    p->tokens_per_s = p->seq_per_s * (double)s->seq;
    double peak = scale_peak_per_instance(s);
    p->mfu_pct = isfinite(peak) ? 100.0 * model_flops_per_token(c, (int)s->seq) * p->tokens_per_s / (peak * (double)nodes) : NAN;

    /* memory per rank */
    double Rd = (double)R;
    double w = wb / (s->zero >= 3 ? Rd : 1), g = gb / (s->zero >= 2 ? Rd : 1), o = ob / (s->zero >= 1 ? Rd : 1);
    double states = N / M * (w + g + o);
    double sbh = (double)s->seq * s->micro_batch * c->C;
    double per_layer = s->recompute ? 2.0 * sbh
                                    : sbh * (10.0 + 24.0 / s->tp + 5.0 * c->NH * (double)s->seq / ((double)c->C * s->tp));
    if (s->precision == PREC_FP32) per_layer *= 2;
    p->mem_gib = (states + c->L * per_layer) / 1073741824.0;
    p->mem_avail_gib = s->hw.mem_gib / s->hw.workers;
}

/* ------------------------------------------------------------------ fit */

typedef struct {
    scale_model *s;
    const int *which; /* SP_* of each fitted parameter */
    int np, n;
    const long *nodes;
    const double *seq_per_s;
} fit_ctx;

/* Parameters are fitted in log space (overlap through a logistic) so that they stay valid. */
static void set_param(scale_model *s, int which, double x)
{
    switch (which) {
    case SP_COMPUTE: s->t_mb_s = exp(x); break;
    case SP_BANDWIDTH: s->net_eff = exp(x); break;
    case SP_LATENCY: s->latency_s = exp(x); break;
    default: s->overlap = 1.0 / (1.0 + exp(-x)); break;
    }
}

static double get_param(const scale_model *s, int which)
{
    switch (which) {
    case SP_COMPUTE: return log(s->t_mb_s);
    case SP_BANDWIDTH: return log(s->net_eff);
    case SP_LATENCY: return log(s->latency_s > 0 ? s->latency_s : 10e-6);
    default: {
        double o = fmin(fmax(s->overlap, 0.01), 0.99);
        return log(o / (1 - o));
    }
    }
}

static double param_value(const scale_model *s, int which)
{
    switch (which) {
    case SP_COMPUTE: return s->t_mb_s;
    case SP_BANDWIDTH: return s->net_eff;
    case SP_LATENCY: return s->latency_s;
    default: return s->overlap;
    }
}

static int residuals(const double *x, double *f, void *data)
{
    fit_ctx *c = data;
    scale_model s = *c->s;
    for (int i = 0; i < c->np; i++) set_param(&s, c->which[i], x[i]);
    for (int i = 0; i < c->n; i++) {
        scale_point p;
        scale_eval(&s, c->nodes[i], &p);
        f[i] = p.seq_per_s / c->seq_per_s[i] - 1.0; /* relative error */
    }
    return 0;
}

/* Largest relative change of any prediction when parameter `which` moves by one unit of its
 * fitted coordinate. */
static double sensitivity(const scale_model *s, int which, const long *nodes, int n)
{
    scale_model a = *s;
    set_param(&a, which, get_param(s, which) + 1.0);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        scale_point p0, p1;
        scale_eval(s, nodes[i], &p0);
        scale_eval(&a, nodes[i], &p1);
        worst = fmax(worst, fabs(p1.seq_per_s / p0.seq_per_s - 1.0));
    }
    return worst;
}

int scale_fit_points(scale_model *s, const int *want, const long *nodes, const double *seq_per_s, int n, scale_fit *fit)
{
    memset(fit, 0, sizeof *fit);
    fit->npoints = n;
    if (n < 1) return err_msg("scale: nothing to fit");
    if (s->latency_s <= 0 && want[SP_LATENCY]) s->latency_s = 10e-6; /* a start for the fit */
    int which[SP_COUNT], np = 0;
    for (int k = 0; k < SP_COUNT; k++) {
        if (!(k == SP_COMPUTE || want[k])) continue;
        if (k != SP_COMPUTE && sensitivity(s, k, nodes, n) < 0.01) {
            fit->undetermined[k] = 1;
            continue;
        }
        if (np >= n) {
            fit->undetermined[k] = 1;
            continue;
        }
        which[np++] = k;
    }
    double x[SP_COUNT];
    for (int i = 0; i < np; i++) x[i] = get_param(s, which[i]);
    fit_ctx c = {s, which, np, n, nodes, seq_per_s};
    stats_fit_result r;
    if (stats_fit_nls(residuals, &c, np, n, x, &r) != 0) return CB_EFAIL;
    for (int i = 0; i < np; i++) {
        set_param(s, which[i], x[i]);
        fit->fitted[which[i]] = 1;
        /* the standard error of a log coordinate is (to first order) a relative error */
        fit->se_rel[which[i]] = n > np ? r.se[i] : NAN;
    }
    for (int k = 0; k < SP_COUNT; k++) fit->value[k] = param_value(s, k);
    double f[256];
    residuals(x, f, &c);
    double ss = 0;
    for (int i = 0; i < n; i++) ss += f[i] * f[i];
    fit->rms_err_pct = 100.0 * sqrt(ss / n);
    return 0;
}
