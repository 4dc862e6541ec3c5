/* gemmcurve.h: a GPU matmul CSV (what `costbench-gpu matmul --csv FILE` writes: common/schema.h's
 * mm_cols, then peak_gflops, peak_source, the GPU's provenance from `device` on, then the host's
 * machine_cols) read as a DEVICE curve of the step model: per dtype, the grid of its sweep rows
 * (op "linear": Y (n x m) = X (n x k) W^T, m = k), e at each (k, n) = gflops_median / the
 * device's data-sheet dense peak of that dtype per worker (data/devices.csv; pct_of_peak is not
 * read: its peak may be the clocks'). Transformer rows (`--shapes transformer`) are checked and
 * otherwise not used.
 *
 * The curves a run uses (gemm_curves): data/gemm/DEVICE.csv for every device of data/devices.csv
 * that has one (a GPU CSV as written, its `device` that DEVICE), and a --matmul-csv GPU CSV, which
 * replaces the shipped file of its device. A curve applies to its device and to the variant rows
 * whose family it is. report/predict/stepmodel.h says which GEMMs it times. */
#ifndef CB_GEMMCURVE_H
#define CB_GEMMCURVE_H

#include <stddef.h>

#include "devices.h"
#include "matmulcsv.h"

typedef enum { GEMM_FP32, GEMM_TF32, GEMM_FP16, GEMM_BF16, GEMM_FP8, GEMM_NDTYPES } gemm_dtype;
extern const char *const gemm_dtype_names[GEMM_NDTYPES]; /* "fp32", "tf32", "fp16", "bf16", "fp8" */

#define GEMM_CURVE_NAMES 16
typedef struct gemm_dev_curve_s {
    char path[4096];                       /* as shown: the flag's file, or data/gemm/DEVICE.csv */
    char device[48];                       /* the data/devices.csv key of the file's rows */
    char names[GEMM_CURVE_NAMES][48];      /* the device and its variant rows: where the curve applies */
    int nnames;
    char gpu_name[96], cublaslt[32], date[16]; /* provenance: gpu_name, cublaslt, date_utc's day */
    double peak_gflops[GEMM_NDTYPES];      /* the data-sheet dense peak per worker each grid is against */
    matmul_curve grid[GEMM_NDTYPES];       /* nk 0: that dtype not measured */
} gemm_dev_curve;

/* Loads a GPU matmul CSV against the devices of dt. Refused, one error "file:line: the rule": a
 * device not in dt (or empty), two devices in one file, an unknown dtype, a dtype the device has no
 * data-sheet peak of, a sweep cell with e > 1, a dtype's sweep grid with a (k, n) not measured;
 * a file without sweep rows. Returns 0 or CB_EFAIL. */
int gemm_dev_curve_load(gemm_dev_curve *c, const char *path, const dev_table *dt);
/* 1: path is a GPU matmul CSV (a matmul CSV, columns k and gflops_median, with a `device` column);
 * 0: not (a CPU matmul CSV, or another kind that matmul_curve_load refuses);
 * CB_EFAIL: it does not load (error printed). */
int gemm_csv_is_device(const char *path);

typedef struct gemm_curves_s {
    gemm_dev_curve *c; /* (n) */
    int n;
} gemm_curves;

/* The shipped curves (data/gemm/DEVICE.csv of each device row of dt) and, when matmul_csv is a GPU
 * CSV, that file in place of its device's (NULL: none). Returns 0, CB_EUSAGE (matmul_csv's error)
 * or CB_EFAIL (a shipped file's error). */
int gemm_curves_load(gemm_curves *s, const dev_table *dt, const char *matmul_csv);
void gemm_curves_free(gemm_curves *s);
/* The curves of a scale, plan or validate run from its flags: --gemm (NULL or "measured": the
 * curves, as gemm_curves_load with data/devices.csv; "cited": none) and --matmul-csv: a GPU CSV is
 * its device's curve (no calibration needed; not with --gemm cited), a CPU one (*cpu_csv set: the
 * caller loads it with matmul_curve_load) needs `calibrated`. Returns 0, CB_EUSAGE or CB_EFAIL. */
int gemm_curves_from_flags(gemm_curves *s, const char *matmul_csv, const char *gemm, int calibrated, int *cpu_csv);
/* The curve that applies to device (its own, or its family's); NULL: none (or s NULL). */
const gemm_dev_curve *gemm_curves_find(const gemm_curves *s, const char *device);
/* "h100-sxm5-80gb, h200-sxm-141gb" (the devices with a curve) into buf; "" when none. */
void gemm_curves_list(const gemm_curves *s, char *buf, size_t n);
/* The grid's smallest and largest e. */
void gemm_grid_range(const matmul_curve *g, double *lo, double *hi);

#endif
