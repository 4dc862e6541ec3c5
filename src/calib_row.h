/* calib_row.h: `--calibrate FILE[:LINE]`, shared by costbench scale and costbench plan. */
#ifndef CB_CALIB_ROW_H
#define CB_CALIB_ROW_H

#include "../report/inputs.h"
#include "../report/scale.h"

typedef struct {
    char path[4096];
    tput_row row;          /* the row */
    scale_model cal;       /* its configuration, compute time fitted to its point */
    scale_points meas;     /* its point */
    scale_fit fit;
    double mfu_cal, e_cal; /* its compute MFU and matmul efficiency e(K, N) */
    int clamped;           /* its K or N outside the curve's range: e_cal at the nearest edge */
    char where[4100];      /* "FILE:LINE" of the row, the lead of every message about it */
} calib_row;

/* Appends one point after checking it: its layout (when `layout_flag` is given) and the
 * throughput rules of common/presets.h against the data-sheet peak of the nodes it ran on. src
 * and line say where it came from (line 0: a flag). */
int calib_point_add(scale_points *pl, const scale_model *s, long nodes, double seq_per_s, const char *src, int line,
                    const char *layout_flag);
/* Reads the row FILE[:LINE] names (FILE alone: its only data row), builds its configuration from
 * its columns (model preset, instance of ht, tp, pp, seq, batch, precision; the settings a row
 * does not describe from `defaults`), fits the compute time to its point (verified within
 * tol_pct) and computes its MFU and e(K, N) on `eff` (outside the curve's range: at its edge, and
 * a warning naming the row). A row measured on this machine (instance "this machine") runs on
 * the peak it records (peak_gflops). Returns 0 or CB_EUSAGE after one error line: the row's
 * "FILE:LINE: column 'x': ..." whatever rejects it (a bad flag value: "flag '--calibrate': ..."). */
int calib_row_load(calib_row *c, const char *spec, const hw_table *ht, const scale_model *defaults, double latency_us,
                   const scale_eff_curve *eff, double tol_pct);
/* The compute MFU carried to `target`: MFU_cal x e(K_t, N_t) / e(K_c, N_c) into *mfu (its e into
 * *e_target; *clamped set when the target lies outside the curve's range, with a warning).
 * Returns 0, or CB_EUSAGE after one error naming the row when the rule carries it above 100% of
 * the peak (the rule then misses a term; it never prints such an MFU). */
int calib_row_carry(const calib_row *c, const scale_model *target, const scale_eff_curve *eff, double *mfu, int *clamped, double *e_target);

#endif
