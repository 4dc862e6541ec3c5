/* calibration.h: the step model of report/predict/scale.h fitted to one measured run, and what that fit
 * carries to another configuration. Shared by `--calibrate` (scale, plan: report/predict/calib_row.c) and
 * `costbench validate` (report/validate.c). A failure comes back as a reason in `why`; the one thing
 * that prints is a least-squares fit that fails (common/stats.c's error line, through
 * scale_fit_points or the joint fit's), before that reason.
 *
 * The fit: the compute time of one micro-batch through one stage, t_mb, is the one free
 * parameter (scale_fit_points), and the model must then reproduce the run's seq/s within a
 * tolerance. What carries is the framework efficiency phi = t_device / t_mb, t_device the step
 * model's time of the run's own operation list on its own device (report/predict/stepmodel.h); a run
 * whose phi would put its GEMMs above the dense peak (gemm_eff x phi > 1) is refused, naming the
 * share. To a target: t_mb_t = t_device(target) / phi, on the target's own device. The compute
 * efficiency in hardware FLOPs (eff = hardware FLOPs of one micro-batch through one stage / (t_mb
 * x the dense peak of the stage's tp ranks)) is what the carry reports, and calib_t_mb turns it
 * back into t_mb_t (scale_t_mb_from_peak). Carried to its own configuration, a calibration gives
 * back its t_mb and so the run's seq/s. */
#ifndef CB_CALIBRATION_H
#define CB_CALIBRATION_H

#include <stddef.h>

#include "scale.h"

typedef struct {
    scale_model cal;    /* the run's configuration, t_mb_s fitted */
    long nodes;         /* its node count */
    double seq_per_s;   /* as measured or published */
    scale_points meas;  /* its one point */
    scale_fit fit;
    double eff_cal;     /* compute efficiency in hardware FLOPs (0..1] */
    double mfu_cal;     /* the same in model FLOPs (the recomputed forward not counted) */
    double e_cal;       /* the share of the dense peak its GEMMs reach: the device's gemm_eff x phi_cal */
    double phi_cal;     /* framework efficiency: the step model's device time (report/predict/stepmodel.h) / the fitted time;
                           what carries to other configurations and devices */
    int clamped;        /* a GEMM's K or N outside a measured curve's range: e at the nearest edge there */
} calib_fit;

/* Fits c->cal's t_mb to (c->nodes, c->seq_per_s), src:line naming the point (line 0: a flag);
 * verified within tol_pct; then eff_cal, mfu_cal and e_cal on `eff`. Returns 0, or CB_EUSAGE with
 * the reason in why: the model cannot reproduce the run (its modelled communication or optimizer
 * pass alone take longer than the measured step; it would need more than 100% of the peak). */
int calib_fit_point(calib_fit *c, const char *src, int line, const scale_eff_curve *eff, double tol_pct, char *why,
                    size_t n);

/* The calibration's phi carried to `target` (its step filled on the GEMM curve the calibration was
 * fitted on: its builder sets target->gemm_curve before step_profile_fill): its compute efficiency
 * in hardware FLOPs into *eff_t (calib_t_mb turns it into t_device(target) / phi), the share of the
 * peak its GEMMs reach into *e_t (may be NULL); *clamped 1 when one of the target's GEMMs lies
 * outside a measured curve (a `costbench matmul` CSV: e taken at its edge), else 0. Returns 0, or
 * CB_EUSAGE with the reason in why when the target has no device time or the carry comes out above
 * 100% of the peak. */
int calib_fit_carry(const calib_fit *c, const scale_model *target, double *eff_t, int *clamped, double *e_t, char *why,
                    size_t n);

/* The share of the dense peak a model's GEMMs reach at framework efficiency phi (its device's
 * gemm_eff x phi; 1 x phi on a measured CPU curve; the largest e of its grid x phi on a measured
 * device curve, report/formats/gemmcurve.h). */
double calib_gemm_share(const scale_model *s, double phi);

/* The target's compute time from the carried efficiency (its hardware FLOPs at eff_t of its peak). */
double calib_t_mb(const scale_model *target, double eff_t);

/* ------------------------------------------------------------------ several rows at once
 * One framework efficiency phi (t_mb = t_device / phi) and one fixed cost per optimizer step
 * (overhead_s >= 0: the framework's per-step work the operation list does not name: the
 * optimizer's launches, gradient clipping, logging, a data loader's stall) fitted to every row by
 * least squares on the relative seq/s errors (GSL, common/stats.h), phi kept below what would put
 * any row's GEMMs above the dense peak (1 / its gemm_eff). The overhead is
 * fitted when two or more rows can tell it from phi (an overhead of 1% of the mean step moves
 * some row's prediction by 0.2% or more relative to the others); otherwise it stays 0 and is said
 * undetermined. */
#define CALIB_JOINT_MAX 256
typedef struct {
    int n, overhead_fitted;
    double phi, overhead_s;       /* fitted */
    double phi_se, overhead_se;   /* standard errors (NaN: exact, as many parameters as rows) */
    double resid_pct[CALIB_JOINT_MAX];
    double rms_pct;
    int worst;
} calib_joint;
/* Fits rows[0..n) (each configured, t_mb unset) at nodes[i] to seq_per_s[i]. Returns 0, or
 * CB_EUSAGE with the reason in why (no device time for a row; the fit did not converge). */
int calib_fit_joint(const scale_model *rows, const long *nodes, const double *seq_per_s, int n, calib_joint *out,
                    char *why, size_t wn);
/* The same with phi alone (the overhead held at 0): a framework's default efficiency
 * (data/framework_eff.csv). */
int calib_fit_phi(const scale_model *rows, const long *nodes, const double *seq_per_s, int n, calib_joint *out,
                  char *why, size_t wn);
/* The prediction of a configured model at n nodes with the joint parameters, seq/s. */
double calib_joint_predict(const calib_joint *j, const scale_model *s, long nodes);

/* ------------------------------------------------------------------ how sure a prediction is
 * How far a target lies from its calibration, by what changed (the validation's cases):
 *   CALIB_NEAR     the same device, precision, framework features, TP/PP/CP degrees and
 *                  recomputation; attention's share of the device time (step_parts attn_s /
 *                  t_device_s: the sequence length's weight in the step) within CALIB_ATTN_SHARE_NEAR
 *                  of the calibration's; within 4x the tokens per device per step
 *   CALIB_LAYOUT   the same device, precision and framework features; another layout (TP, PP, CP,
 *                  recomputation), another attention share, or 4x the tokens per device or more
 *   CALIB_DEVICE   another device, precision (fp8 or the training precision) or framework features
 *                  (gradient overlap, ZeRO-3 prefetch, TP overlap): phi itself may not carry
 * The band of a prediction is +-(|the calibration's own residual| + the CALIB_BAND_*_PCT of its
 * case): report/predict/band.h's out-of-sample percentiles, the first_row entries of data/band.csv
 * over every shipped file (tests/test_band.c checks them equal). `costbench validate` scores a
 * shipped file with the entries that leave that file out (data/band.csv). A target outside
 * CALIB_NEAR is extrapolated, and says what changed. */
typedef enum { CALIB_NEAR, CALIB_LAYOUT, CALIB_DEVICE } calib_case;
/* An assumption, not fitted: a share 5 points of the device time away, with attention's modelled
 * speed off by 2x, moves the step by 5%, half the band. */
#define CALIB_ATTN_SHARE_NEAR 0.05
#define CALIB_BAND_NEAR_PCT 12.3   /* data/band.csv first_row near, every file */
#define CALIB_BAND_LAYOUT_PCT 25.3 /* data/band.csv first_row layout, every file */
#define CALIB_BAND_DEVICE_PCT 38.4 /* data/band.csv first_row device, every file */
/* The case of target against the calibration's configuration; what changed into why ("another TP
 * degree (8, calibrated at 1)"; empty for CALIB_NEAR; may be NULL). Both models' steps filled. */
calib_case calib_case_of(const scale_model *cal, long cal_nodes, const scale_model *target, long nodes, char *why,
                         size_t n);
/* Attention's share of a model's device time (0 when it has none). */
double calib_attn_share(const scale_model *s);
/* The band, +- percent, of a prediction of target from c. */
double calib_band_pct(const calib_fit *c, const scale_model *target, long nodes);

/* "K 2048, N 256 (micro-batch 1 x seq 2048 / tp 8)" of a model. */
void calib_kn_describe(const scale_model *s, char *buf, size_t n);

#endif
