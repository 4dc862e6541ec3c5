/* matmul.h: the linear-layer products over cblas_sgemm (the one place OpenBLAS is called
 * from, besides the peak probe), with dimension checks, plus double-precision references.
 * Row-major throughout. Shapes: N rows (tokens), C input width, OC output width. Every function
 * returns KERNEL_OK, or KERNEL_EDIM (nothing written) for a NULL operand, a dimension <= 0 or an
 * operand beyond 2^31-1 elements (kernels.h). */
#ifndef CB_MATMUL_H
#define CB_MATMUL_H

#include <stddef.h>

#include "kernels.h"

/* out = inp @ weight^T + bias.   out (N, OC), inp (N, C), weight (OC, C), bias (OC) or NULL */
int matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC);
/* dinp = dout @ weight (overwrites dinp).   dinp (N, C), dout (N, OC), weight (OC, C) */
int matmul_backward_input(float *dinp, const float *dout, const float *weight, int N, int C, int OC);
/* dweight += dout^T @ inp, dbias += colsum(dout) (parameter gradients accumulate).
 * dweight (OC, C), dbias (OC) or NULL */
int matmul_backward_weight(float *dweight, float *dbias, const float *dout, const float *inp, int N, int C, int OC);

/* dbias += colsum(dout): dbias (OC), dout (N, OC). */
void matmul_bias_backward(float *dbias, const float *dout, int N, int OC);

/* General C (n x m) = alpha * op(A) (n x k) @ op(B) (k x m) + beta * C, row-major, with leading
 * dimensions; `costbench matmul` runs its shapes through it. */
int matmul_gemm(int trans_a, int trans_b, int n, int m, int k, float alpha, const float *A, int lda, const float *B,
                int ldb, float beta, float *C, int ldc);

/* References in double (for tests): same shapes and semantics, naive loops. */
void matmul_forward_ref(double *out, const double *inp, const double *weight, const double *bias, int N, int C, int OC);
void matmul_backward_input_ref(double *dinp, const double *dout, const double *weight, int N, int C, int OC);
void matmul_backward_weight_ref(double *dweight, double *dbias, const double *dout, const double *inp, int N, int C,
                                int OC);

/* OpenBLAS introspection. */
const char *matmul_blas_core(void); /* openblas_get_corename() */
int matmul_blas_threads(void);

#endif
