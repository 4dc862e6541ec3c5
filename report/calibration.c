/* calibration.c: the step model fitted to one run, and its compute efficiency carried to another
 * configuration (see calibration.h). */
#include "calibration.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/err.h"
#include "stepmodel.h"

void calib_kn_describe(const scale_model *s, char *buf, size_t n)
{
    snprintf(buf, n, "K %g, N %g (micro-batch %ld x seq %ld / tp %d)", scale_eff_k(s), scale_eff_n(s), s->micro_batch, s->seq, s->tp);
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
    int len = snprintf(why, n, "the model does not reproduce the row within %g%%: it gives %.4g seq/s against %.4g (%+.1f%%): ", tol_pct,
                       p.seq_per_s, c->seq_per_s, 100.0 * (p.seq_per_s / c->seq_per_s - 1.0));
    if (len < 0 || (size_t)len >= n) return;
    if (comm + p0.optimizer_s >= step)
        snprintf(why + len, n - (size_t)len,
                 "its communication (data-parallel %.4g s%s, tensor-parallel %.4g s) and optimizer pass (%.4g s) alone take more "
                 "than the measured step of %.4g s at %ld nodes: the step model misses an overlap or a faster path",
                 p0.dp_s, c->cal.zero == 3 ? ", ZeRO-3 gathering the weights in every micro-batch" : "", p0.tp_s + p0.bubble_s,
                 p0.optimizer_s, step, c->nodes);
    else if (c->fit.at_bound[SP_COMPUTE] || c->cal.t_mb_s <= 1.0001 * c->fit.lo[SP_COMPUTE])
        snprintf(why + len, n - (size_t)len, "its compute would need more than 100%% of the dense peak (%.4g s per micro-batch at the peak)",
                 c->fit.lo[SP_COMPUTE]);
    else snprintf(why + len, n - (size_t)len, "the least-squares fit did not converge");
}

int calib_fit_point(calib_fit *c, const char *src, int line, const scale_eff_curve *eff, double tol_pct, char *why, size_t n)
{
    why[0] = '\0';
    c->meas = (scale_points){.n = 1};
    c->meas.nodes[0] = c->nodes, c->meas.seq_per_s[0] = c->seq_per_s, c->meas.src[0] = src, c->meas.line[0] = line;
    if (!isfinite(scale_stage_peak(&c->cal)))
        return snprintf(why, n, "%s has no dense %s peak to measure the row's efficiency against", c->cal.hw.instance,
                        c->cal.precision == PREC_FP32 ? "FP32" : "16-bit"),
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
        return snprintf(why, n, "the row's compute efficiency comes out %.4g%% of the peak, outside (0, 100%%]", 100 * c->eff_cal), CB_EUSAGE;
    c->clamped = 0;
    c->cal.gemm_curve = eff;
    double t_dev = step_t_mb_device(&c->cal, NULL);
    c->phi_cal = t_dev / c->cal.t_mb_s;
    c->e_cal = calib_gemm_share(&c->cal, c->phi_cal);
    if (!(c->phi_cal > 0) || !isfinite(c->phi_cal))
        return snprintf(why, n, "the step model has no device time for the row (its device's peak or memory bandwidth is unknown)"), CB_EUSAGE;
    if (c->e_cal > 1.0)
        return snprintf(why, n,
                        "the row implies its GEMMs run at %.4g%% of the dense peak (the device's large-GEMM share %.4g x the framework "
                        "efficiency %.4g needed to reproduce the step), above 100%%: the row is faster than the model's physics "
                        "allows (a term it lacks: an overlap, a faster kernel; or a wrong row)",
                        100 * c->e_cal, c->e_cal / c->phi_cal, c->phi_cal),
               CB_EUSAGE;
    return 0;
}

double calib_gemm_share(const scale_model *s, double phi)
{
    double g = s->gemm_curve && s->gemm_curve->nk > 0 ? 1.0 : s->hw.gemm_eff > 0 ? s->hw.gemm_eff : STEP_GEMM_EFF;
    return g * phi;
}

int calib_fit_carry(const calib_fit *c, const scale_model *target, const scale_eff_curve *eff, double *eff_t, int *clamped, double *e_t,
                    char *why, size_t n)
{
    why[0] = '\0';
    *clamped = 0;
    scale_model t = *target;
    t.gemm_curve = eff;
    double t_mb = step_t_mb_device(&t, NULL) / c->phi_cal;
    double e = calib_gemm_share(&t, c->phi_cal);
    if (e_t) *e_t = e;
    *eff_t = scale_stage_flops(&t, 1) / (t_mb * scale_stage_peak(&t));
    if (!isfinite(t_mb))
        return snprintf(why, n, "the step model has no device time for the target (its device's peak or memory bandwidth is unknown)"),
               CB_EUSAGE;
    if (*eff_t <= 1 && e <= 1) return 0;
    char kn[256];
    calib_kn_describe(target, kn, sizeof kn);
    snprintf(why, n,
             "the calibration's framework efficiency %.4g carried to the target's %s on %s gives %.4g%% of the dense peak in hardware "
             "FLOPs (its GEMMs at %.4g%%), above 100%%: the row and the target differ by a term the model lacks",
             c->phi_cal, kn, t.hw.instance, 100 * *eff_t, 100 * e);
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

calib_case calib_case_of(const scale_model *cal, long cal_nodes, const scale_model *target, long nodes, char *why, size_t n)
{
    char tmp[256];
    if (!why) why = tmp, n = sizeof tmp;
    why[0] = '\0';
    if (strcmp(cal->hw.accelerator, target->hw.accelerator) != 0) {
        snprintf(why, n, "another device (%s, calibrated on %s)", target->hw.accelerator, cal->hw.accelerator);
        return CALIB_DEVICE;
    }
    if (cal->tp != target->tp) {
        snprintf(why, n, "another TP degree (%d, calibrated at %d)", target->tp, cal->tp);
        return CALIB_LAYOUT;
    }
    double r = tokens_per_device(target, nodes) / tokens_per_device(cal, cal_nodes);
    if (r >= 4.0 || r <= 0.25) {
        snprintf(why, n, "%.3gx the tokens per device per step of the calibration", r);
        return CALIB_LAYOUT;
    }
    return CALIB_NEAR;
}

double calib_band_pct(const calib_fit *c, const scale_model *target, long nodes)
{
    static const double band[3] = {CALIB_BAND_NEAR_PCT, CALIB_BAND_LAYOUT_PCT, CALIB_BAND_DEVICE_PCT};
    return fabs(c->fit.resid_pct[0]) + band[calib_case_of(&c->cal, c->nodes, target, nodes, NULL, 0)];
}
