/* calib_row.h: `--calibrate FILE[:LINE]` and `--calibrate FILE:ID`, shared by costbench scale and
 * costbench plan. FILE is a throughput CSV (rows named by LINE) or a published-runs CSV
 * (report/formats/published.h; rows named by LINE or ID, mapped by report/predict/pubmodel.h). */
#ifndef CB_CALIB_ROW_H
#define CB_CALIB_ROW_H

#include "calibration.h"
#include "../formats/devices.h"
#include "../formats/inputs.h"
#include "scale.h"

typedef struct {
    char path[4096];
    tput_row row;          /* the row (a published run: its summary in these columns, instance = its node) */
    scale_model cal;       /* its configuration, compute time fitted to its point */
    scale_points meas;     /* its point */
    scale_fit fit;
    double mfu_cal;        /* its compute MFU (model FLOPs) */
    double eff_cal; /* its compute efficiency in hardware FLOPs (= mfu_cal without recomputation): what carries */
    double e_cal;          /* the share of the dense peak its GEMMs reach (calibration.h) */
    int clamped;           /* a GEMM of the row outside a measured curve (--matmul-csv): e at its edge */
    char where[4100];      /* "FILE:LINE" of the row, the lead of every message about it */
    calib_fit fc;          /* the fit itself (report/predict/calibration.h) */
} calib_row;

/* What a calibration row is built against: the instance types, the flags' link overrides (NULL:
 * none; they apply to the calibration row as to the target), --latency-us (< 0: the hardware's)
 * and --models (NULL: data/models.csv), where a throughput row's model is looked up. */
typedef struct {
    const hw_table *ht;
    const hw_overrides *ov;
    double latency_us;
    const char *models_path;
} calib_env;

/* The throughput rules of common/presets.h (throughput_why) for seq_per_s of the model s on
 * `nodes` nodes, against the data-sheet (or, on this machine, measured) dense peak of those nodes:
 * the one rule by which scale and plan refuse a calibration point and validate refuses a
 * published row. Returns 0, or -1 with why. */
int calib_point_plausible(const scale_model *s, long nodes, double seq_per_s, char *why, size_t n);

/* Appends one point after checking it: its layout (when `layout_flag` is given) and
 * calib_point_plausible. src and line say where it came from (line 0: a flag). */
int calib_point_add(scale_points *pl, const scale_model *s, long nodes, double seq_per_s, const char *src, int line,
                    const char *layout_flag);
/* Reads the row the spec names: FILE:LINE, FILE:ID (a published-runs file) or FILE alone (its only
 * data row). A throughput row's configuration comes from its columns (model preset, instance of
 * ht, tp, pp, seq, batch, precision; the settings a row does not describe from `defaults`); a
 * published row's from every field (report/predict/pubmodel.h); both through one measured run
 * (report/predict/measrun.h). The flags' link overrides apply to it.
 * Fits the compute time to its point (verified within tol_pct) and computes its efficiencies and
 * e(K, N) on `eff` (outside the curve's range: at its edge, and a warning naming the row). A row
 * measured on this machine (instance "this machine") runs on the peak it records (peak_gflops).
 * Returns 0 or CB_EUSAGE after one error line: the row's "FILE:LINE: ..." whatever rejects it (a
 * bad flag value: "flag '--calibrate': ..."). */
int calib_row_load(calib_row *c, const char *spec, const calib_env *env, const scale_model *defaults,
                   const scale_eff_curve *eff, double tol_pct);
/* The hardware of the row the spec names (as calib_row_load builds it, without the fit): what a
 * target on "this machine" runs on. Returns 0 or CB_EUSAGE after calib_row_load's error. */
int calib_row_hardware(const char *spec, const calib_env *env, const scale_model *defaults, hw_row *hw);
/* The row's framework efficiency carried to `target` (calibration.h's calib_fit_carry): the
 * target's compute efficiency in hardware FLOPs into *eff_t (its GEMMs' share of the peak into
 * *e_target, may be NULL; *clamped 1 when a GEMM lies outside a measured curve); the target's t_mb is then scale_t_mb_from_peak(target,
 * *eff_t) = t_device(target) / phi. Returns 0, or CB_EUSAGE after one error naming the row when
 * the carry comes out above 100% of the peak or the target has no device time. */
int calib_row_carry(const calib_row *c, const scale_model *target, double *eff_t, int *clamped, double *e_target);

#endif
