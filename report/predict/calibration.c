/* calibration.c: the step model fitted to one run, and its compute efficiency carried to another
 * configuration (see calibration.h). */
#include "calibration.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/stats.h"
#include "../formats/gemmcurve.h"
#include "stepmodel.h"

void calib_kn_describe(const scale_model *s, char *buf, size_t n)
{
    snprintf(buf, n, "K %g, N %g (micro-batch %ld x seq %ld / tp %d)", scale_eff_k(s), scale_eff_n(s), s->micro_batch,
             s->seq, s->tp);
}

/* Why a fitted model misses its point: what the step costs without any compute against the
 * measured step, or the compute at its floor (the device's peak). */
static void fit_miss_reason(const calib_fit *c, double tol_pct, char *why, size_t n)
{
    scale_model s0 = c->cal;
    s0.t_mb_s = 0;
    scale_point p0, p;
    scale_eval(&s0, c->nodes, &p0);
    scale_eval(&c->cal, c->nodes, &p);
    double step = (double)p0.global_batch / c->seq_per_s, comm = p0.tp_s + p0.bubble_s + p0.exposed_s;
    int len = snprintf(why, n,
                       "the model does not reproduce the row within %g%%: it gives %.4g seq/s against %.4g (%+.1f%%): ",
                       tol_pct, p.seq_per_s, c->seq_per_s, 100.0 * (p.seq_per_s / c->seq_per_s - 1.0));
    if (len < 0 || (size_t)len >= n) return;
    if (comm + p0.optimizer_s >= step)
        snprintf(why + len, n - (size_t)len,
                 "its communication (data-parallel %.4g s%s, tensor-parallel %.4g s) and optimizer pass (%.4g s) alone "
                 "take more "
                 "than the measured step of %.4g s at %ld nodes: the step model misses an overlap or a faster path",
                 p0.dp_s, c->cal.zero == 3 ? ", ZeRO-3 gathering the weights in every micro-batch" : "",
                 p0.tp_s + p0.bubble_s, p0.optimizer_s, step, c->nodes);
    else if (c->fit.at_bound[SP_COMPUTE] || c->cal.t_mb_s <= 1.0001 * c->fit.lo[SP_COMPUTE])
        snprintf(why + len, n - (size_t)len,
                 "its compute would need more than 100%% of the dense peak (%.4g s per micro-batch at the peak)",
                 c->fit.lo[SP_COMPUTE]);
    else snprintf(why + len, n - (size_t)len, "the least-squares fit did not converge");
}

int calib_fit_point(calib_fit *c, const char *src, int line, const scale_eff_curve *eff, double tol_pct, char *why,
                    size_t n)
{
    why[0] = '\0';
    c->cal.gemm_curve = eff;
    step_profile_fill(&c->cal); /* its step on that curve, once (nothing to do when its builder filled it so) */
    c->meas = (scale_points){.n = 1};
    c->meas.nodes[0] = c->nodes, c->meas.seq_per_s[0] = c->seq_per_s, c->meas.src[0] = src, c->meas.line[0] = line;
    if (!isfinite(scale_stage_peak(&c->cal)))
        return snprintf(why, n, "%s has no dense %s peak to measure the row's efficiency against", c->cal.hw.instance,
                        precision_info_of(c->cal.precision)->peak_name),
               CB_EUSAGE;
    const int want[SP_COUNT] = {[SP_COMPUTE] = 1};
    if (scale_fit_points(&c->cal, want, &c->meas, &c->fit) != 0)
        return snprintf(why, n, "the least-squares fit of the compute time failed (above)"), CB_EUSAGE;
    scale_point p;
    scale_eval(&c->cal, c->nodes, &p);
    c->fit.resid_pct[0] = 100.0 * (p.seq_per_s / c->seq_per_s - 1.0);
    if (!(fabs(c->fit.resid_pct[0]) <= tol_pct)) return fit_miss_reason(c, tol_pct, why, n), CB_EUSAGE;
    double peak = scale_stage_peak(&c->cal);
    c->eff_cal = scale_stage_flops(&c->cal, 1) / (c->cal.t_mb_s * peak);
    c->mfu_cal = scale_stage_flops(&c->cal, 0) / (c->cal.t_mb_s * peak);
    if (!(c->eff_cal > 0 && c->eff_cal <= 1))
        return snprintf(why, n, "the row's compute efficiency comes out %.4g%% of the peak, outside (0, 100%%]",
                        100 * c->eff_cal),
               CB_EUSAGE;
    step_parts parts;
    double t_dev = step_t_mb_device(&c->cal, &parts);
    c->clamped = parts.gemm_clamped;
    c->phi_cal = t_dev / c->cal.t_mb_s;
    c->e_cal = calib_gemm_share(&c->cal, c->phi_cal);
    if (!(c->phi_cal > 0) || !isfinite(c->phi_cal))
        return snprintf(
                   why, n,
                   "the step model has no device time for the row (its device's peak or memory bandwidth is unknown)"),
               CB_EUSAGE;
    if (c->e_cal > 1.0)
        return snprintf(why, n,
                        "the row implies its GEMMs run at %.4g%% of the dense peak (the device's large-GEMM share %.4g "
                        "x the framework "
                        "efficiency %.4g needed to reproduce the step), above 100%%: the row is faster than the "
                        "model's physics "
                        "allows (a term it lacks: an overlap, a faster kernel; or a wrong row)",
                        100 * c->e_cal, c->e_cal / c->phi_cal, c->phi_cal),
               CB_EUSAGE;
    return 0;
}

double calib_gemm_share(const scale_model *s, double phi)
{
    double g = s->gemm_curve && s->gemm_curve->nk > 0 ? 1.0 : s->hw.gemm_eff > 0 ? s->hw.gemm_eff : STEP_GEMM_EFF, lo;
    const matmul_curve *dg = step_device_grid(s, 0, NULL);
    if (dg) gemm_grid_range(dg, &lo, &g); /* a measured device curve: its largest e */
    return g * phi;
}

int calib_fit_carry(const calib_fit *c, const scale_model *target, double *eff_t, int *clamped, double *e_t, char *why,
                    size_t n)
{
    why[0] = '\0';
    const scale_model *t = target;
    step_parts parts;
    double t_mb = step_t_mb_device(t, &parts) / c->phi_cal;
    *clamped = parts.gemm_clamped;
    double e = calib_gemm_share(t, c->phi_cal);
    if (e_t) *e_t = e;
    *eff_t = scale_stage_flops(t, 1) / (t_mb * scale_stage_peak(t));
    if (!isfinite(t_mb))
        return snprintf(why, n,
                        "the step model has no device time for the target (its device's peak or memory bandwidth is "
                        "unknown)"),
               CB_EUSAGE;
    if (*eff_t <= 1 && e <= 1) return 0;
    char kn[256];
    calib_kn_describe(target, kn, sizeof kn);
    snprintf(why, n,
             "the calibration's framework efficiency %.4g carried to the target's %s on %s gives %.4g%% of the dense "
             "peak in hardware "
             "FLOPs (its GEMMs at %.4g%%), above 100%%: the row and the target differ by a term the model lacks",
             c->phi_cal, kn, t->hw.instance, 100 * *eff_t, 100 * e);
    return CB_EUSAGE;
}

double calib_t_mb(const scale_model *target, double eff_t) { return scale_t_mb_from_peak(target, eff_t); }

/* Tokens per device per step of a model at n nodes. */
static double tokens_per_device(const scale_model *s, long nodes)
{
    scale_point p;
    scale_eval(s, nodes, &p);
    double devices = (double)nodes * s->hw.accelerators;
    return (double)p.global_batch * (double)s->seq / devices;
}

double calib_attn_share(const scale_model *s)
{
    const step_profile *p = step_profile_get(s);
    return p->t_device_s > 0 && isfinite(p->t_device_s) ? p->parts.attn_s / p->t_device_s : 0;
}

/* Appends "; " (when why holds something) and the formatted reason to why[0..n). */
static void why_add(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void why_add(char *why, size_t n, const char *fmt, ...)
{
    size_t len = strlen(why);
    if (len + 3 >= n) return;
    if (len) why[len++] = ';', why[len++] = ' ', why[len] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + len, n - len, fmt, ap);
    va_end(ap);
}

/* The recomputation of s as text: none, selective, full, or full of a share of the layers. */
static const char *recompute_name(const scale_model *s, char *buf, size_t n)
{
    double share = scale_recompute_share(s);
    if (s->recompute && share < 1) snprintf(buf, n, "full of %.0f%% of the layers", 100 * share);
    else snprintf(buf, n, "%s", s->recompute ? "full" : s->selective ? "selective" : "none");
    return buf;
}

/* What keeps phi from carrying at all (CALIB_DEVICE): another device, precision or framework
 * feature; the first of them into why (the rest matter less than the first). Returns 1 when any. */
static int case_device(const scale_model *c, const scale_model *t, char *why, size_t n)
{
    if (strcmp(c->hw.accelerator, t->hw.accelerator) != 0)
        return why_add(why, n, "another device (%s, calibrated on %s)", t->hw.accelerator, c->hw.accelerator), 1;
    if (c->precision != t->precision || c->fp8 != t->fp8)
        return why_add(why, n, "another precision (%s%s, calibrated in %s%s)", precision_info_of(t->precision)->name,
                         t->fp8 ? " + fp8 GEMMs" : "", precision_info_of(c->precision)->name,
                       c->fp8 ? " + fp8 GEMMs" : ""),
               1;
    if (c->grad_overlap != t->grad_overlap || c->gather_prefetch != t->gather_prefetch || c->tp_overlap != t->tp_overlap)
        return why_add(why, n, "another framework's overlaps (gradient %d, prefetch %d, tp %d; calibrated with %d, %d, %d)",
                         t->grad_overlap, t->gather_prefetch, t->tp_overlap, c->grad_overlap, c->gather_prefetch,
                       c->tp_overlap),
               1;
    return 0;
}

/* A parallel degree, 0 (not stated) read as 1. */
static int degree(int d) { return d > 1 ? d : 1; }

/* Another layout on the same device and framework (CALIB_LAYOUT); every change into why. Returns 1
 * when any. */
static int case_layout(const scale_model *c, long cn, const scale_model *t, long tn, char *why, size_t n)
{
    int any = 0;
    if (c->tp != t->tp)
        any = 1, why_add(why, n, "another TP degree (%d, calibrated at %d)", t->tp, c->tp);
    if (degree(c->pp) != degree(t->pp) || degree(c->cp) != degree(t->cp))
        any = 1, why_add(why, n, "another PP/CP (%d/%d, calibrated at %d/%d)", degree(t->pp), degree(t->cp),
                         degree(c->pp), degree(c->cp));
    char rt[48], rc[48];
    if (c->recompute != t->recompute || c->selective != t->selective ||
        scale_recompute_share(c) != scale_recompute_share(t))
        any = 1, why_add(why, n, "another recomputation (%s, calibrated with %s)", recompute_name(t, rt, sizeof rt),
                         recompute_name(c, rc, sizeof rc));
    double ac = calib_attn_share(c), at = calib_attn_share(t);
    if (fabs(at - ac) > CALIB_ATTN_SHARE_NEAR)
        any = 1, why_add(why, n, "attention %.0f%% of the device time (calibrated at %.0f%%)", 100 * at, 100 * ac);
    double r = tokens_per_device(t, tn) / tokens_per_device(c, cn);
    if (r >= 4.0 || r <= 0.25) any = 1, why_add(why, n, "%.3gx the tokens per device per step of the calibration", r);
    return any;
}

calib_case calib_case_of(const scale_model *cal, long cal_nodes, const scale_model *target, long nodes, char *why,
                         size_t n)
{
    char tmp[256];
    if (!why) why = tmp, n = sizeof tmp;
    why[0] = '\0';
    if (case_device(cal, target, why, n)) return CALIB_DEVICE;
    return case_layout(cal, cal_nodes, target, nodes, why, n) ? CALIB_LAYOUT : CALIB_NEAR;
}

double calib_band_pct(const calib_fit *c, const scale_model *target, long nodes)
{
    static const double band[3] = {CALIB_BAND_NEAR_PCT, CALIB_BAND_LAYOUT_PCT, CALIB_BAND_DEVICE_PCT};
    return fabs(c->fit.resid_pct[0]) + band[calib_case_of(&c->cal, c->nodes, target, nodes, NULL, 0)];
}

/* ------------------------------------------------------------------ several rows at once */

double calib_joint_predict(const calib_joint *j, const scale_model *s, long nodes)
{
    scale_model m = *s;
    m.t_mb_s = step_t_mb_device(&m, NULL) / j->phi;
    m.step_overhead_s = j->overhead_s;
    scale_point p;
    scale_eval(&m, nodes, &p);
    return p.seq_per_s;
}

typedef struct {
    const scale_model *rows;
    const long *nodes;
    const double *sps;
    int n, with_overhead;
    double phi_max; /* the largest phi that keeps every row's GEMMs at or below the peak */
} joint_ctx;

/* x[0] a logistic coordinate of phi in (0, phi_max), x[1] = sqrt(overhead): no bounds to hit */
static double joint_phi(const joint_ctx *c, double x) { return c->phi_max / (1.0 + exp(-x)); }
static int joint_residuals(const double *x, double *f, void *data)
{
    const joint_ctx *c = data;
    calib_joint j = {.phi = joint_phi(c, x[0]), .overhead_s = c->with_overhead ? x[1] * x[1] : 0};
    for (int i = 0; i < c->n; i++) f[i] = calib_joint_predict(&j, &c->rows[i], c->nodes[i]) / c->sps[i] - 1.0;
    return 0;
}

/* Whether the rows can tell an overhead from phi: one row's prediction moves relative to the
 * others by 0.2% or more when the overhead is 1% of the mean step. */
static int overhead_determined(const joint_ctx *c, double phi)
{
    if (c->n < 2) return 0;
    double mean_step = 0;
    for (int i = 0; i < c->n; i++) {
        scale_point p;
        scale_model m = c->rows[i];
        m.t_mb_s = step_t_mb_device(&m, NULL) / phi;
        scale_eval(&m, c->nodes[i], &p);
        mean_step += p.step_s / c->n;
    }
    calib_joint a = {.phi = phi}, b = {.phi = phi, .overhead_s = 0.01 * mean_step};
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < c->n; i++) {
        double r =
            calib_joint_predict(&b, &c->rows[i], c->nodes[i]) / calib_joint_predict(&a, &c->rows[i], c->nodes[i]);
        lo = fmin(lo, r), hi = fmax(hi, r);
    }
    return hi / lo - 1.0 >= 0.002;
}

/* calib_fit_joint, the overhead allowed or held at 0. */
static int fit_joint(const scale_model *rows, const long *nodes, const double *seq_per_s, int n, int allow_overhead,
                     calib_joint *out, char *why, size_t wn)
{
    memset(out, 0, sizeof *out);
    why[0] = '\0';
    if (n < 1 || n > CALIB_JOINT_MAX)
        return snprintf(why, wn, "%d rows, expected 1 to %d", n, CALIB_JOINT_MAX), CB_EUSAGE;
    for (int i = 0; i < n; i++)
        if (!isfinite(step_t_mb_device(&rows[i], NULL)))
            return snprintf(why, wn, "row %d: the step model has no device time for it (its device's peak is unknown)",
                            i + 1),
                   CB_EUSAGE;
    joint_ctx c = {rows, nodes, seq_per_s, n, 0, INFINITY};
    for (int i = 0; i < n; i++) c.phi_max = fmin(c.phi_max, 1.0 / calib_gemm_share(&rows[i], 1.0));
    double x[2] = {0, 0};
    stats_fit_result r;
    if (stats_fit_nls(joint_residuals, &c, 1, n, x, &r) != 0)
        return snprintf(why, wn, "the fit of phi did not converge"), CB_EUSAGE;
    /* d phi / dx = phi (1 - phi / phi_max) */
    out->phi = joint_phi(&c, x[0]), out->phi_se = n > 1 ? r.se[0] * out->phi * (1 - out->phi / c.phi_max) : NAN,
    out->overhead_se = NAN;
    if (allow_overhead && overhead_determined(&c, out->phi)) {
        c.with_overhead = 1;
        x[1] = 0.1;
        if (stats_fit_nls(joint_residuals, &c, 2, n, x, &r) != 0)
            return snprintf(why, wn, "the fit of phi and the overhead did not converge"), CB_EUSAGE;
        out->phi = joint_phi(&c, x[0]), out->overhead_s = x[1] * x[1], out->overhead_fitted = 1;
        out->phi_se = n > 2 ? r.se[0] * out->phi * (1 - out->phi / c.phi_max) : NAN,
        out->overhead_se = n > 2 ? r.se[1] * 2.0 * fabs(x[1]) : NAN;
    }
    out->n = n;
    double ss = 0;
    for (int i = 0; i < n; i++) {
        out->resid_pct[i] = 100.0 * (calib_joint_predict(out, &rows[i], nodes[i]) / seq_per_s[i] - 1.0);
        ss += out->resid_pct[i] * out->resid_pct[i];
        if (fabs(out->resid_pct[i]) > fabs(out->resid_pct[out->worst])) out->worst = i;
    }
    out->rms_pct = sqrt(ss / n);
    return 0;
}

int calib_fit_joint(const scale_model *rows, const long *nodes, const double *seq_per_s, int n, calib_joint *out,
                    char *why, size_t wn)
{
    return fit_joint(rows, nodes, seq_per_s, n, 1, out, why, wn);
}

int calib_fit_phi(const scale_model *rows, const long *nodes, const double *seq_per_s, int n, calib_joint *out,
                  char *why, size_t wn)
{
    return fit_joint(rows, nodes, seq_per_s, n, 0, out, why, wn);
}
