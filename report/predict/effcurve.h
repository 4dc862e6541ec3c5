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

#include "../formats/matmulcsv.h"

#define SCALE_EFF_K0 512.0
#define SCALE_EFF_N0 512.0
/* The assumed curve's range: K and N from K0/8 and N0/8 up. Below it the curve's N (or K) term
 * falls as 1/N towards 0, and a calibration there would be multiplied by thousands (N = 1/8 at
 * seq_len 1 and tp 8: 1/4097 against 1/3 at N 256): e is taken at the edge instead (clamped). */
#define SCALE_EFF_MIN 64.0
/* The measured curve: the grid of a `costbench matmul` CSV (formats/matmulcsv.h matmul_curve_load;
 * nk 0: none, the default curve). The name predict's signatures use for it. */
typedef matmul_curve scale_eff_curve;
/* e(K, N): the default curve on its range (K, N >= SCALE_EFF_MIN), or log-linear in K and N
 * between the measured points; outside the range, e at its nearest edge (*clamped set to 1 then;
 * may be NULL), so the ratio of two e never exceeds the curve's own largest over its smallest. */
double scale_eff(const scale_eff_curve *c, double K, double N, int *clamped);
/* "K 64.. and N 64.. (the assumed curve's range)" or "K 768..6144 and N 512..16384 (measured)". */
void scale_eff_range(const scale_eff_curve *c, char *buf, size_t n);

#endif
