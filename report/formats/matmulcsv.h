/* matmulcsv.h: the CSV `costbench matmul --csv FILE` writes (common/schema.h's mm_cols), read as
 * a GEMM efficiency grid: e at each measured (K, N), K the inner dimension k and N the rows n. The
 * step model (report/predict/scale.h, scale_eff) interpolates on it. */
#ifndef CB_MATMULCSV_H
#define CB_MATMULCSV_H

#define MATMUL_CURVE_MAX 64
typedef struct matmul_curve_s {
    int nk, nn;                                    /* 0: none loaded */
    double k[MATMUL_CURVE_MAX], n[MATMUL_CURVE_MAX]; /* ascending */
    double e[MATMUL_CURVE_MAX][MATMUL_CURVE_MAX];    /* [k][n]: the mean over rows of that (n, k) */
    char column[16];                               /* "pct_of_peak" or "gflops_median" */
} matmul_curve;

/* Index of v on the ascending axis xs[0..*n) of a grid, added in order when new; -1 when the axis
 * holds MATMUL_CURVE_MAX values already. */
int matmul_axis_add(double *xs, int *n, double v);

/* Loads a `costbench matmul` CSV (columns n, k and pct_of_peak, else gflops_median; m checked
 * when present): n, k, m at least 1, pct_of_peak in (0, 100], gflops_median positive and finite;
 * every (k, n) of the grid its distinct values span must be measured. A file without those
 * columns is one error (it is not a matmul CSV). Returns 0 or CB_EFAIL. */
int matmul_curve_load(matmul_curve *c, const char *path);

#endif
