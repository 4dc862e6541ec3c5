/* validate.h: `costbench validate`: the step model of report/predict/scale.h scored on published runs
 * (report/formats/published.h). For each file: calibrate on some of its rows (report/predict/calibration.h, the
 * rows mapped by report/predict/pubmodel.h, the same model and fit `costbench scale` uses) and predict
 * every row in seq/s, beside the naive baseline.
 *
 * Several calibration rows: each is fitted on its own, and every row is carried from the nearest
 * of those that fitted: the same device first, then the least |ln(K_t / K_c)| + |ln(N_t / N_c)|
 * (the two axes the efficiency rule carries along), ties to the one listed first. A calibration
 * row is carried from itself, which gives its own seq/s back (the fit's residual).
 *
 * Naive baseline (published/SCHEMA.md): the calibration row's model FLOP/s per device carried
 * unchanged, naive seq/s = F_c x seq/s_c / devices_c x devices_t / F_t, F the model FLOPs of one
 * sequence by costbench's own count for both rows (PaLM: (6 N + 12 L C T) x T,
 * model_flops_per_token), devices the accelerators of the run; from the same calibration row as
 * the model's prediction (the first calibration row when the model has none for the row).
 *
 * A row the model cannot predict (its configuration outside the step model, no calibration that
 * fitted, a carry above 100% of the peak) has no predicted figure and says why. A row whose seq/s
 * is impossible on its own hardware (more than 100% MFU of its data-sheet peak: the rule by which
 * scale --calibrate refuses it, calib_point_plausible) is refused: no prediction, no naive figure,
 * not a calibration, its note "refused: " and the reason, counted in the summary. A row whose
 * device or instance type is unknown (pubmodel.h's pub_names_resolve) is not predicted, its note
 * names it, counted in the summary's unknown_names apart from refused; any other row without a
 * prediction (a configuration outside the step model, no calibration that fitted, a calibration row
 * that did not fit) is counted in unmodelled, its note saying why; a row that took a family, an
 * `A/B` instance or an unknown framework to resolve says so first in its note. The summary's
 * median and max |error| are over the rows that are not calibration rows and have a prediction,
 * the naive figures over the same rows. It reports; it does not judge. */
#ifndef CB_VALIDATE_H
#define CB_VALIDATE_H

#include "formats/devices.h"
#include "formats/inputs.h"
#include "formats/published.h"
#include "predict/band.h"
#include "predict/fweff.h"
#include "predict/scale.h"

typedef struct {
    const char *file;       /* not owned */
    char id[64];
    char framework[32];     /* canonical (common/frameworks.h); set in the lofo and none modes */
    int line;
    int calibration;        /* a row the model was fitted on */
    int refused;            /* its seq/s is impossible on its hardware (note says why): not scored */
    int unknown_names;      /* its device or instance type is unknown (note says which): not predicted */
    int unmodelled;         /* neither refused nor of an unknown name, and no prediction: the model cannot map it
                             * or no calibration fitted (note says why) */
    double published;       /* seq/s */
    double predicted;       /* seq/s; NaN: no prediction (reason says why) */
    double error_pct;       /* predicted / published - 1, % */
    double naive, naive_error_pct;
    double eff_pct;         /* the compute efficiency (hardware FLOPs) carried to it, % of the peak */
    char calibrated_on[64]; /* the id of the calibration row it was carried from */
    int calib_case;         /* calibration.h's calib_case of the row against its calibration row */
    double band_pct;        /* +- the prediction's band (calib_band_pct); NaN without a prediction */
    int inside_band;        /* 1: |error| <= band_pct; 0: outside; -1: no band or no prediction */
    char extrapolated[160]; /* what changed from the calibration row (empty: a near target) */
    char note[1024];        /* why there is no prediction; or what was clamped */
} val_row;

typedef struct {
    const char *file;       /* not owned */
    int rows, calibration_rows, predicted; /* predicted: rows other than calibration rows with a prediction */
    int refused;                           /* rows refused as impossible (val_row.refused) */
    int unknown_names;                     /* rows on an unknown device or instance (val_row.unknown_names) */
    int unmodelled;                        /* rows with no prediction for another reason (val_row.unmodelled) */
    double median_abs_pct, max_abs_pct, naive_median_abs_pct, naive_max_abs_pct; /* NaN when none */
    /* the joint fit on every row the model maps (calibration.h's calib_fit_joint): what the file
     * says of the model's two parameters; NaN when it did not fit */
    int fit_rows, overhead_fitted;
    double fit_phi, fit_phi_se, fit_overhead_s, fit_overhead_se, fit_rms_pct, fit_worst_pct;
    char fit_worst[64];
    int band_rows;            /* predicted rows with a band */
    double band_coverage_pct; /* the share of them whose |error| lies inside it; NaN when none */
} val_summary;

typedef struct {
    val_row *rows;
    int n, cap;
    val_summary *files;
    int nfiles, fcap;
} val_result;

typedef struct {
    const hw_table *ht;
    const dev_table *dt;
    const hw_overrides *ov;      /* link overrides for every row (NULL: none) */
    double latency_us;           /* < 0: the hardware's */
    const scale_eff_curve *eff;  /* the matmul efficiency curve (NULL or nk 0: the assumed one) */
    double tol_pct;              /* a calibration must reproduce its row within this */
    const scale_model *defaults; /* what a row does not describe: buckets, network efficiency, overlap */
    const band_table *band;      /* data/band.csv (report/predict/band.h); NULL: calibration.h's constants, and no
                                    band in the lofo and none modes */
} val_env;

/* How each file is predicted: from its own calibration row(s) (first_row, validate_file), or with
 * no row of its own (validate_pooled): lofo, a joint fit of phi and the per-step overhead
 * (calibration.h's calib_fit_joint) on the rows of the OTHER files; none, phi alone fitted on them
 * (calib_fit_phi: the framework's default efficiency without the file, as data/framework_eff.csv
 * holds it with every file). The rows fitted: those of the other files with the row's framework
 * (the published `framework` column) when any has it, else every row of the other files (phi is the
 * framework's efficiency against the device model: one fitted across frameworks is a mixture).
 * Their case (band.h): near when those rows include the row's framework and device, layout its
 * framework only, device neither. Their naive: the flat 40% MFU of the data-sheet peak (scale's and
 * plan's uncalibrated default before the model was used, SCALE_ASSUMED_MFU_PCT) through the same
 * step arithmetic; band: band.h's entry for the mode and case, that leaves the file out. */
typedef enum { VAL_FIRST_ROW, VAL_LOFO, VAL_NONE } val_mode;

/* Validates one file into res: its rows, then its summary. ids[0..nids) are the calibration ids
 * of every file (found[i] set for those in this one); none in this file: its first row whose
 * device and instance type are known. Returns 0,
 * or CB_EUSAGE when the file does not load (its file:line error printed), CB_EFAIL out of memory. */
int validate_file(val_result *res, const char *path, const char *const *ids, int nids, int *found, const val_env *env);
/* Every file of paths[0..n) predicted in mode (VAL_LOFO or VAL_NONE) into res, each from the
 * others. Returns 0, or CB_EUSAGE when a file does not load, CB_EFAIL out of memory. */
int validate_pooled(val_result *res, char *const *paths, int n, val_mode mode, const val_env *env);
/* data/framework_eff.csv's table from paths[0..n) (report/predict/fweff.h: phi per framework and
 * `any` fitted on every file, the spread from validate_pooled's VAL_NONE errors). Returns 0, or
 * CB_EUSAGE when a file does not load, CB_EFAIL when a fit fails (its error printed). */
int validate_framework_eff(char *const *paths, int n, const val_env *env, fweff_table *out);
/* The out-of-sample |errors| of res's predicted rows (calibration rows left out) in mode m into
 * samples (band.h), appended at *ns (capacity cap). */
void validate_band_samples(const val_result *res, band_mode m, band_sample *samples, int *ns, int cap);
void validate_free(val_result *res);

#endif
