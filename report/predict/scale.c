#include "scale.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/stats.h"
#include "../../common/files.h"
#include "stepmodel.h"

const char *const scale_param_names[SP_COUNT] = {"compute", "bandwidth", "latency", "overlap"};

void scale_hw_for_precision(hw_row *hw, const char *precision)
{
    if (strcmp(precision, "fp16-mixed") == 0 && hw->fp16_tflops > 0) hw->bf16_tflops = hw->fp16_tflops;
}

/* Two precisions whose parameters, gradients, optimizer state and activations take the same bytes. */
static int same_storage(train_precision a, train_precision b)
{
    const precision_info *x = precision_info_of(a), *y = precision_info_of(b);
    return x->weight_bytes == y->weight_bytes && x->grad_bytes == y->grad_bytes && x->moment_bytes == y->moment_bytes &&
           x->master_bytes == y->master_bytes && x->act_bytes == y->act_bytes;
}

int scale_precision_matches(train_precision p, const char *precision)
{
    if (!*precision) return 1;
    if (strcmp(precision, PRECISION_NAME_FP16_MIXED) == 0) return p == PRECISION_BF16_MIXED;
    train_precision q;
    return precision_parse(precision, &q) == 0 && same_storage(p, q);
}

static long ranks_per_node(const scale_model *s) { return (long)s->hw.accelerators * s->hw.workers; }
/* Context-parallel degree (0 in a model made before the field: 1). */
static long cp_of(const scale_model *s) { return s->cp > 1 ? s->cp : 1; }

scale_layout_issue scale_layout(const scale_model *s, long nodes)
{
    long D = ranks_per_node(s), M = scale_replica_ranks(s);
    if (nodes < 1) return SCALE_LAYOUT_NODES;
    if ((nodes * D) % M != 0) return SCALE_LAYOUT_RANKS;
    long R = nodes * D / M;
    if (s->global_batch > 0 && s->global_batch % (R * s->micro_batch) != 0) return SCALE_LAYOUT_BATCH;
    if (s->batch_per_replica > 0 && s->batch_per_replica % s->micro_batch != 0) return SCALE_LAYOUT_PER_REPLICA;
    return SCALE_LAYOUT_OK;
}

scale_layout_issue scale_layout_describe(const scale_model *s, long nodes, char *buf, size_t n)
{
    long D = ranks_per_node(s), M = scale_replica_ranks(s);
    scale_layout_issue li = scale_layout(s, nodes);
    switch (li) {
    case SCALE_LAYOUT_NODES: snprintf(buf, n, "node counts must be at least 1, got %ld", nodes); break;
    case SCALE_LAYOUT_RANKS:
        snprintf(buf, n, "%ld x %s holds %ld ranks, not a multiple of tp x pp%s = %ld", nodes, s->hw.instance,
                 nodes * D, cp_of(s) > 1 ? " x cp" : "", M);
        break;
    case SCALE_LAYOUT_BATCH:
        snprintf(buf, n, "at %ld nodes the global batch %ld does not split into %ld replicas x micro-batches of %ld",
                 nodes, s->global_batch, nodes * D / M, s->micro_batch);
        break;
    case SCALE_LAYOUT_PER_REPLICA:
        snprintf(buf, n, "%ld sequences per replica is not a multiple of the micro-batch %ld", s->batch_per_replica,
                 s->micro_batch);
        break;
    default: buf[0] = '\0';
    }
    return li;
}

int scale_check(const scale_model *s, long nodes, const char *flag)
{
    char why[512];
    switch (scale_layout_describe(s, nodes, why, sizeof why)) {
    case SCALE_LAYOUT_OK: return 0;
    case SCALE_LAYOUT_PER_REPLICA:
        return err_usage("flag '--batch-per-device': %ld is not a multiple of the micro-batch %ld",
                         s->batch_per_replica, s->micro_batch);
    default: return err_usage("flag '%s': %s", flag, why);
    }
}

double scale_t_mb_from_peak(const scale_model *s, double mfu)
{
    /* hardware FLOPs of one micro-batch through one stage, shared by the tp ranks of the stage */
    double peak_rank = scale_peak_per_instance(s) / (double)ranks_per_node(s);
    double flops = step_profile_get(s)->hw_flops_per_token * (double)s->micro_batch * (double)s->seq;
    return flops / ((double)scale_replica_ranks(s) * peak_rank * mfu);
}

/* Data-parallel gradient synchronisation of one step at n nodes with R replicas of m
 * micro-batches: inside a node first (when a node holds several replicas), then across nodes,
 * each a ring (each 0 when its link is unknown: a published run that does not state its
 * network). */
static double dp_sync_s(const scale_model *s, const step_profile *pr, long nodes, long R, long m)
{
    double D = (double)ranks_per_node(s), M = (double)scale_replica_ranks(s), TPP = (double)s->tp * s->pp;
    double dp = 0;
    double r_node = D / M; /* replicas per node (< 1: a replica spans 1/r nodes) */
    double shard = pr->grad_bytes / (double)cp_of(s); /* gradient bytes one rank holds (the list's grad_sync) */
    double link = s->hw.intra_gb_per_s * 1e9 * step_link_eff(&s->hw);
    if (r_node > 1 && isfinite(s->hw.intra_gb_per_s)) {
        dp += 2.0 * (r_node - 1) / r_node * shard / link;
        /* hybrid sharding (FSDP HYBRID_SHARD): ZeRO-3 inside the node, each micro-batch's forward
         * and backward gathering the weights over the device links */
        if (s->hybrid) dp += (double)m * (r_node - 1) / r_node * (pr->gather_bytes / TPP / (double)cp_of(s)) / link;
    }
    double k = r_node >= 1 ? (double)nodes : (double)R; /* ring size across nodes */
    if (k > 1 && isfinite(s->hw.net_gbit_per_s)) { /* an unknown network: not modelled (as an unknown device link) */
        double node_bytes = pr->grad_bytes * TPP * fmin(1.0, r_node);
        double bw = s->hw.net_gbit_per_s * 1e9 / 8.0 * s->net_eff;
        double ring = 2.0 * (k - 1) / k;
        double bytes = ring * node_bytes;
        if (s->zero == 3) /* reduce-scatter of gradients once, all-gather of weights in every forward and backward */
            bytes = (k - 1) / k * node_bytes + (double)m * (k - 1) / k * pr->gather_bytes * fmin(1.0, r_node);
        /* latency: 2 log2 k hops a bucket (NCCL's double binary trees across nodes, since 2.4: logarithmic latency; the
         * ring's 2 (k - 1) hops only below 4 nodes, where they are fewer or equal) */
        double buckets = ceil(shard / s->bucket_bytes), hops = fmin(2.0 * (k - 1), 2.0 * ceil(log2(k)));
        dp += bytes / bw + hops * s->latency_s * buckets;
    }
    return dp;
}

/* AdamW: read weights, gradients and state, write weights and state (precision_adamw_traffic_bytes,
 * common/precision.c), once per step, on the rank's shard (ZeRO >= 1 shards the state and its
 * update across the R replicas); 0 when the memory bandwidth is unknown. */
static double optimizer_time_s(const scale_model *s, const step_profile *pr, long R)
{
    if (!isfinite(s->hw.mem_gb_per_s)) return 0;
    double bytes = pr->optimizer_bytes / (s->zero >= 1 ? (double)R : 1.0) + pr->step_mem_bytes; /* + fp8 weight casts */
    return bytes / (s->hw.mem_gb_per_s * 1e9 / s->hw.workers);
}

/* Memory per rank: the weights, gradients and optimizer state a rank holds (the step profile's) as
 * the ZeRO stage shards them over R replicas (the ZeRO paper's accounting: mixed precision keeps
 * 2 + 2 + 12 bytes a parameter, bf16 weights and gradients, fp32 master, m and v; full bf16 as on
 * Trainium keeps m and v in bf16 too), plus L layers of activations (Korthikanti et al. 2022). */
static double mem_per_rank_gib(const scale_model *s, const step_profile *pr, long R)
{
    double Rd = (double)R;
    double w = pr->weight_bytes / (s->zero >= 3 ? Rd : 1), g = pr->grad_bytes / (s->zero >= 2 ? Rd : 1);
    double o = pr->state_bytes / (s->zero >= 1 ? Rd : 1);
    return (w + g + o + pr->act_bytes) / 1073741824.0;
}

/* What of the data-parallel traffic the step waits for. ZeRO-3/FSDP with prefetching gathers:
 * hidden under the compute of every micro-batch, but for one layer's share (the first gather
 * and the last reduce-scatter). The gradient reduction overlapped with the backward (the
 * framework's feature, or --overlap's share): hidden under the last micro-batch's backward (2/3
 * of it), but for the last bucket, one layer's gradients. Else all of it, after the backward. */
static double dp_exposed(const scale_model *s, double dp, long m)
{
    double layers = (double)s->cfg.L / s->pp;
    if ((s->zero == 3 || s->hybrid) && s->gather_prefetch)
        return fmax(dp - (double)m * s->t_mb_s, dp / ((double)m * layers));
    double hide = fmax(s->overlap, s->grad_overlap ? 1.0 : 0.0) * (2.0 / 3.0) * s->t_mb_s;
    return fmax(dp - hide, s->grad_overlap ? dp / layers : 0.0);
}

void scale_eval(const scale_model *s, long nodes, scale_point *p)
{
    memset(p, 0, sizeof *p);
    long R = (long)((double)nodes * (double)ranks_per_node(s) / (double)scale_replica_ranks(s));
    long per_replica = s->global_batch > 0 ? s->global_batch / R : s->batch_per_replica;
    long m = per_replica / s->micro_batch;
    p->nodes = nodes;
    p->replicas = R;
    p->global_batch = per_replica * R;
    p->micro_batches = m;
    const step_profile *pr = step_profile_get(s); /* the step, computed once per configuration */
    double tp_mb = step_comm_of(s, pr, nodes);
    p->compute_s = (double)m * s->t_mb_s;
    p->tp_s = (double)m * tp_mb;
    p->bubble_s = (s->pp - 1) / (double)s->interleave * (s->t_mb_s + tp_mb);
    p->dp_s = dp_sync_s(s, pr, nodes, R, m);
    p->exposed_s = dp_exposed(s, p->dp_s, m);
    p->optimizer_s = optimizer_time_s(s, pr, R);
    p->step_s = p->compute_s + p->tp_s + p->bubble_s + p->exposed_s + p->optimizer_s + s->step_overhead_s;
    p->seq_per_s = (double)p->global_batch / p->step_s;
    p->tokens_per_s = p->seq_per_s * (double)s->seq;
    p->mfu_pct = mfu_pct(pr->model_flops_per_token, p->tokens_per_s,
                         scale_peak_per_instance(s) * (double)nodes);
    p->mem_gib = mem_per_rank_gib(s, pr, R);
    p->mem_avail_gib = s->hw.mem_gib / s->hw.workers;
}

/* ------------------------------------------------------------------ fit */

void scale_points_where(const scale_points *pts, int i, char *buf, size_t n)
{
    if (pts->line[i] > 0) snprintf(buf, n, "%s:%d", pts->src[i], pts->line[i]);
    else snprintf(buf, n, "flag '%s'", pts->src[i]);
}

void scale_param_range(const scale_model *s, int which, double *lo, double *hi)
{
    *lo = 0, *hi = INFINITY;
    if (which == SP_COMPUTE) {
        double t = scale_t_mb_from_peak(s, 1.0); /* hardware FLOPs at 100% of the peak */
        if (isfinite(t) && t > 0) *lo = t;
    } else if (which == SP_BANDWIDTH || which == SP_OVERLAP) {
        *hi = 1;
    }
}

typedef struct {
    scale_model *s;
    const int *which; /* SP_* of each fitted parameter */
    const double *lo, *hi;
    int np;
    const scale_points *pts;
} fit_ctx;

/* Each parameter is fitted in a coordinate x that keeps it inside its range [lo, hi]:
 * lo + exp(x) when hi is infinite, lo + (hi - lo) / (1 + exp(-x)) when it is not. */
static double param_from_x(double x, double lo, double hi)
{
    return isfinite(hi) ? lo + (hi - lo) / (1.0 + exp(-x)) : lo + exp(x);
}

/* The inverse, for a start value v (moved inside the range when it is on an edge). */
static double param_to_x(double v, double lo, double hi)
{
    if (isfinite(hi)) {
        double u = fmin(fmax((v - lo) / (hi - lo), 0.01), 0.99);
        return log(u / (1 - u));
    }
    double d = v - lo;
    if (!(d > 0)) d = lo > 0 ? 0.01 * lo : 10e-6;
    return log(d);
}

static double *param_ref(scale_model *s, int which)
{
    switch (which) {
    case SP_COMPUTE: return &s->t_mb_s;
    case SP_BANDWIDTH: return &s->net_eff;
    case SP_LATENCY: return &s->latency_s;
    default: return &s->overlap;
    }
}

static double param_get(const scale_model *s, int which)
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
    for (int i = 0; i < c->np; i++) *param_ref(&s, c->which[i]) = param_from_x(x[i], c->lo[i], c->hi[i]);
    for (int i = 0; i < c->pts->n; i++) {
        scale_point p;
        scale_eval(&s, c->pts->nodes[i], &p);
        f[i] = p.seq_per_s / c->pts->seq_per_s[i] - 1.0; /* relative error */
    }
    return 0;
}

/* Sum of squared relative errors of the model at the points. */
static double fit_cost(const scale_model *s, const scale_points *pts)
{
    double ss = 0;
    for (int i = 0; i < pts->n; i++) {
        scale_point p;
        scale_eval(s, pts->nodes[i], &p);
        double e = p.seq_per_s / pts->seq_per_s[i] - 1.0;
        ss += e * e;
    }
    return ss;
}

/* Largest relative change of any prediction when parameter `which` moves by a factor e (the
 * network efficiency down, as the line rate is its top; the overlap by one unit of its logit). */
static double sensitivity(const scale_model *s, int which, const scale_points *pts)
{
    scale_model a = *s;
    switch (which) {
    case SP_COMPUTE: a.t_mb_s *= exp(1.0); break;
    case SP_BANDWIDTH: a.net_eff /= exp(1.0); break;
    case SP_LATENCY: a.latency_s *= exp(1.0); break;
    default: a.overlap = param_from_x(param_to_x(s->overlap, 0, 1) + 1.0, 0, 1); break;
    }
    double worst = 0;
    for (int i = 0; i < pts->n; i++) {
        scale_point p0, p1;
        scale_eval(s, pts->nodes[i], &p0);
        scale_eval(&a, pts->nodes[i], &p1);
        worst = fmax(worst, fabs(p1.seq_per_s / p0.seq_per_s - 1.0));
    }
    return worst;
}

/* A start for the compute time: what makes the first point's step time come out right with the
 * other terms as they are (inside the compute's range). */
static void compute_start(scale_model *s, const scale_points *pts, double lo)
{
    if (!(s->t_mb_s > 0) || !isfinite(s->t_mb_s)) s->t_mb_s = 1.0;
    scale_point p;
    scale_eval(s, pts->nodes[0], &p);
    double step = (double)p.global_batch / pts->seq_per_s[0];
    double per_t =
        (double)p.micro_batches + (s->pp - 1) / (double)s->interleave; /* compute + bubble per second of t_mb */
    double t = (step - (p.step_s - p.compute_s - p.bubble_s)) / per_t;
    if (isfinite(t) && t > 0) s->t_mb_s = t;
    if (!(s->t_mb_s > lo)) s->t_mb_s = 1.01 * lo;
}

/* The parameters to fit (compute first), into which[]; marks the undetermined ones. */
static int fit_choose(const scale_model *s, const int *want, const scale_points *pts, scale_fit *fit, int *which)
{
    int np = 0;
    for (int k = 0; k < SP_COUNT; k++) {
        if (!(k == SP_COMPUTE || want[k])) continue;
        if (k != SP_COMPUTE && (sensitivity(s, k, pts) < 0.01 || np >= pts->n)) {
            fit->undetermined[k] = 1;
            continue;
        }
        which[np++] = k;
    }
    return np;
}

/* Whether the points pull fitted parameter k past an edge of its range: it ended within 1% (of
 * the range, or of its start when the range is open) of the edge, and the squared residuals
 * fall further when it steps that far beyond. */
static int pulled_past_edge(const scale_model *s, int k, double start, const scale_fit *fit, const scale_points *pts)
{
    double lo = fit->lo[k], hi = fit->hi[k], v = param_get(s, k);
    double step = 0.01 * (isfinite(hi) ? hi - lo : lo > 0 ? lo : start);
    double beyond;
    if (v - lo <= step) beyond = lo - step;
    else if (hi - v <= step) beyond = hi + step;
    else return 0;
    scale_model a = *s;
    *param_ref(&a, k) = beyond;
    return fit_cost(&a, pts) < fit_cost(s, pts);
}

/* Residual of every point with the model as fitted, the worst of them and the rms. */
static void fit_residuals(const scale_model *s, const scale_points *pts, scale_fit *fit)
{
    double ss = 0;
    fit->worst = 0;
    for (int i = 0; i < pts->n; i++) {
        scale_point p;
        scale_eval(s, pts->nodes[i], &p);
        double e = 100.0 * (p.seq_per_s / pts->seq_per_s[i] - 1.0);
        fit->resid_pct[i] = e;
        ss += e * e;
        if (!(fabs(e) <= fabs(fit->resid_pct[fit->worst]))) fit->worst = i; /* NaN counts as worst */
    }
    fit->rms_err_pct = sqrt(ss / pts->n);
}

int scale_fit_points(scale_model *s, const int *want, const scale_points *pts, scale_fit *fit)
{
    memset(fit, 0, sizeof *fit);
    int n = pts->n;
    fit->npoints = n;
    if (n < 1 || n > SCALE_MAX_POINTS)
        return err_msg("scale: %d calibration points, expected 1 to %d", n, SCALE_MAX_POINTS);
    for (int k = 0; k < SP_COUNT; k++) scale_param_range(s, k, &fit->lo[k], &fit->hi[k]);
    double latency0 = s->latency_s;
    if (s->latency_s <= 0 && want[SP_LATENCY]) s->latency_s = 10e-6; /* a start for the fit */
    compute_start(s, pts, fit->lo[SP_COMPUTE]);
    int which[SP_COUNT], np = fit_choose(s, want, pts, fit, which);
    if (fit->undetermined[SP_LATENCY]) s->latency_s = latency0; /* the start is no value to keep */
    double x[SP_COUNT], v0[SP_COUNT], lo[SP_COUNT], hi[SP_COUNT];
    for (int i = 0; i < np; i++) {
        lo[i] = fit->lo[which[i]], hi[i] = fit->hi[which[i]], v0[i] = param_get(s, which[i]);
        x[i] = param_to_x(v0[i], lo[i], hi[i]);
    }
    fit_ctx c = {s, which, lo, hi, np, pts};
    stats_fit_result r;
    int rc = stats_fit_nls(residuals, &c, np, n, x, &r);
    for (int i = 0; i < np && rc == 0; i++) {
        double v = param_from_x(x[i], lo[i], hi[i]);
        *param_ref(s, which[i]) = v;
        fit->fitted[which[i]] = 1;
        /* relative standard error: the coordinate's, times d(value)/dx / value */
        double dvdx = isfinite(hi[i]) ? (v - lo[i]) * (hi[i] - v) / (hi[i] - lo[i]) : v - lo[i];
        fit->se_rel[which[i]] = n > np ? r.se[i] * dvdx / v : NAN;
    }
    if (!fit->fitted[SP_LATENCY]) s->latency_s = latency0;
    if (rc != 0) return CB_EFAIL;
    fit->nfitted = np;
    for (int i = 0; i < np; i++) fit->at_bound[which[i]] = pulled_past_edge(s, which[i], v0[i], fit, pts);
    for (int k = 0; k < SP_COUNT; k++) fit->value[k] = param_get(s, k);
    fit_residuals(s, pts, fit);
    return 0;
}

/* ------------------------------------------------------------------ verification */

void scale_fit_residual_list(const scale_fit *fit, const scale_points *pts, char *buf, size_t n)
{
    size_t len = 0;
    if (n) buf[0] = '\0';
    for (int i = 0; i < pts->n; i++) {
        char item[64];
        int k = snprintf(item, sizeof item, "%s%ld nodes %+.1f%%", i ? ", " : "", pts->nodes[i], fit->resid_pct[i]);
        if (len + (size_t)k + 24 >= n) { /* keep room for the tail */
            if (len + 24 < n) snprintf(buf + len, n - len, ", ... (%d more)", pts->n - i);
            return;
        }
        memcpy(buf + len, item, (size_t)k + 1);
        len += (size_t)k;
    }
}

static const char *const param_labels[SP_COUNT] = {"compute time per micro-batch per stage", "network efficiency",
                                                   "latency per hop", "overlap"};
static const char *const param_floor[SP_COUNT] = {"100% of the data-sheet peak", "0", "0", "0"};
static const char *const param_top[SP_COUNT] = {"", "1, the line rate", "", "1, the whole last backward"};

/* "network efficiency 1 (1, the line rate), ..." for the fitted parameters at an edge; 0 if none. */
static int bound_list(const scale_fit *fit, char *buf, size_t n)
{
    int count = 0;
    buf[0] = '\0';
    for (int k = 0; k < SP_COUNT; k++) {
        if (!fit->fitted[k] || !fit->at_bound[k]) continue;
        double v = fit->value[k], shown = k == SP_LATENCY ? v * 1e6 : v;
        int top = isfinite(fit->hi[k]) && v >= 0.5 * (fit->lo[k] + fit->hi[k]);
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s %.4g%s (at its %s: %s)", count ? "; " : "", param_labels[k], shown,
                 k == SP_COMPUTE   ? " s"
                 : k == SP_LATENCY ? " us"
                                   : "",
                 top ? "top" : "floor", top ? param_top[k] : param_floor[k]);
        count++;
    }
    return count;
}

/* One hint: why the worst point cannot be reproduced, when the model can tell. */
static void fit_hint(const scale_model *s, const scale_fit *fit, const scale_points *pts)
{
    int w = fit->worst;
    scale_model s0 = *s;
    s0.t_mb_s = 0; /* what the step costs without any compute: the least it can take */
    scale_point p0;
    scale_eval(&s0, pts->nodes[w], &p0);
    double step = (double)p0.global_batch / pts->seq_per_s[w], comm = p0.tp_s + p0.bubble_s + p0.exposed_s;
    char zero3[96] = "", bounds[512];
    if (s->zero == 3)
        snprintf(zero3, sizeof zero3, ", ZeRO-3 gathering the weights in each of %ld micro-batches", p0.micro_batches);
    if (comm >= step)
        err_hint("the modelled communication alone takes %.4g s per step at %ld nodes (data-parallel %.4g s%s; "
                 "tensor-parallel %.4g s), "
                 "more than the measured step time %.4g s: check --zero, --net-efficiency, --latency-us, --bucket-mib "
                 "and the "
                 "measurement (--overlap hides traffic only under the last micro-batch's backward)",
                 comm, pts->nodes[w], p0.dp_s, zero3, p0.tp_s + p0.bubble_s, step);
    else if (p0.optimizer_s >= step)
        err_hint("the modelled optimizer pass alone takes %.4g s per step at %ld nodes (AdamW state at %s's memory "
                 "bandwidth), "
                 "more than the measured step time %.4g s: check --zero, --precision and the measurement",
                 p0.optimizer_s, pts->nodes[w], s->hw.instance, step);
    else if (comm + p0.optimizer_s >= step)
        err_hint("the modelled communication (%.4g s) and optimizer pass (%.4g s) alone take more than the measured "
                 "step time "
                 "%.4g s at %ld nodes: check --zero, --net-efficiency, --precision and the measurement",
                 comm, p0.optimizer_s, step, pts->nodes[w]);
    else if (bound_list(fit, bounds, sizeof bounds) > 0)
        err_hint("the fit hit a parameter bound: %s; the points ask for more than the model allows there", bounds);
    else if (fit->nfitted < pts->n)
        err_hint("with %d parameter%s fitted the model's shape does not follow these %d points: fit more (--fit "
                 "compute,bandwidth,latency,overlap), check the points, or loosen --fit-tolerance",
                 fit->nfitted, fit->nfitted == 1 ? "" : "s", pts->n);
    else
        err_hint("the least-squares fit did not converge to these points");
}

int scale_fit_verify(const scale_model *s, scale_fit *fit, const scale_points *pts, double tol_pct)
{
    fit_residuals(s, pts, fit); /* the model as it stands, not as the fit left its numbers */
    int w = fit->worst;
    if (fabs(fit->resid_pct[w]) <= tol_pct) return 0;
    char where[CB_WHERE_MAX], list[768];
    scale_points_where(pts, w, where, sizeof where);
    scale_point p;
    scale_eval(s, pts->nodes[w], &p);
    if (pts->line[w] > 0) /* a row of a file: its file:line first, as every input error */
        err_msg("%s: the calibration does not reproduce its points within %g%% (--fit-tolerance): at %ld nodes "
                "measured %.4g seq/s, "
                "the model gives %.4g seq/s (error %+.1f%%)",
                where, tol_pct, pts->nodes[w], pts->seq_per_s[w], p.seq_per_s, fit->resid_pct[w]);
    else
        err_msg("the calibration does not reproduce its points within %g%% (--fit-tolerance): at %ld nodes (%s) "
                "measured %.4g seq/s, "
                "the model gives %.4g seq/s (error %+.1f%%)",
                tol_pct, pts->nodes[w], where, pts->seq_per_s[w], p.seq_per_s, fit->resid_pct[w]);
    fit_hint(s, fit, pts);
    if (pts->n > 1) {
        scale_fit_residual_list(fit, pts, list, sizeof list);
        err_hint("residuals (model / measured - 1) at the %d points: %s", pts->n, list);
    }
    return CB_EFAIL;
}

/* ------------------------------------------------------------------ carrying a calibration */

double scale_eff_k(const scale_model *s) { return (double)s->cfg.C; }
double scale_eff_n(const scale_model *s) { return (double)s->micro_batch * (double)s->seq / (double)s->tp; }

double scale_stage_flops(const scale_model *s, int hardware)
{
    const step_profile *pr = step_profile_get(s);
    double per_token = hardware ? pr->hw_flops_per_token : pr->model_flops_per_token;
    return per_token * (double)s->micro_batch * (double)s->seq / (double)s->pp;
}

double scale_stage_peak(const scale_model *s)
{
    return scale_peak_per_instance(s) / (double)ranks_per_node(s) * (double)s->tp * (double)cp_of(s);
}

double scale_compute_mfu(const scale_model *s) { return scale_stage_flops(s, 0) / (s->t_mb_s * scale_stage_peak(s)); }
