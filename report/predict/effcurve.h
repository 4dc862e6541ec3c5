/* effcurve.h: the matmul efficiency curve.
 * The compute efficiency of one micro-batch through one stage: MFU = model FLOPs of it / (t_mb x
 * the dense peak of the stage's tp ranks in the model's precision). A measured curve (a `costbench
 * matmul` CSV: e at K = d_model and N rows) times the step model's GEMMs when given
 * (scale_model.gemm_curve); the default saturating curve e = 1 / (1 + K0/K) x 1 / (1 + N0/N)
 * (K0 = N0 = 512, assumptions) is what the previous carry rule used; K and N (scale.h's scale_eff_k,
 * scale_eff_n) are what validate ranks calibration rows' nearness by. */
#ifndef CB_EFFCURVE_H
#define CB_EFFCURVE_H

#include <stddef.h>

#define SCALE_EFF_K0 512.0
#define SCALE_EFF_N0 512.0
/* The assumed curve's range: K and N from K0/8 and N0/8 up. Below it the curve's N (or K) term
 * falls as 1/N towards 0, and a calibration there would be multiplied by thousands (N = 1/8 at
 * seq_len 1 and tp 8: 1/4097 against 1/3 at N 256): e is taken at the edge instead (clamped). */
#define SCALE_EFF_MIN 64.0
#define SCALE_EFF_MAX 64
typedef struct scale_eff_curve_s {
    int nk, nn; /* 0: the default curve */
    double k[SCALE_EFF_MAX], n[SCALE_EFF_MAX]; /* ascending */
    double e[SCALE_EFF_MAX][SCALE_EFF_MAX];    /* [k][n]: the mean over rows of that (n, k) */
    char column[16];                           /* "pct_of_peak" or "gflops_median" */
} scale_eff_curve;

/* Loads a `costbench matmul` CSV (columns n, k and pct_of_peak, else gflops_median; m checked
 * when present): n, k, m at least 1, pct_of_peak in (0, 100], gflops_median positive and finite;
 * every (k, n) of the grid its distinct values span must be measured. A file without those
 * columns is one error (it is not a matmul CSV). Returns 0 or CB_EFAIL. */
int scale_eff_load(scale_eff_curve *c, const char *path);
/* e(K, N): the default curve on its range (K, N >= SCALE_EFF_MIN), or log-linear in K and N
 * between the measured points; outside the range, e at its nearest edge (*clamped set to 1 then;
 * may be NULL), so the ratio of two e never exceeds the curve's own largest over its smallest. */
double scale_eff(const scale_eff_curve *c, double K, double N, int *clamped);
/* "K 64.. and N 64.. (the assumed curve's range)" or "K 768..6144 and N 512..16384 (measured)". */
void scale_eff_range(const scale_eff_curve *c, char *buf, size_t n);

#endif
