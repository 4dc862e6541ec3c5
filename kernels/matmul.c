#include "matmul.h"

#include <cblas.h>
#include <limits.h>

/* Declared by OpenBLAS's cblas.h in most builds; repeated here for builds whose header lacks them. */
char *openblas_get_corename(void);
int openblas_get_num_threads(void);

static int dims_ok(int a, int b, int c)
{
    if (a <= 0 || b <= 0 || c <= 0) return 0;
    /* every operand's element count must fit in int for cblas offsets */
    if ((long long)a * b > INT_MAX || (long long)a * c > INT_MAX || (long long)b * c > INT_MAX) return 0;
    return 1;
}

int matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC)
{
    if (!out || !inp || !weight || !dims_ok(N, C, OC)) return KERNEL_EDIM;
    if (bias) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < N; i++) {
            float *o = out + (size_t)i * OC;
            for (int j = 0; j < OC; j++) o[j] = bias[j];
        }
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f, out,
                OC);
    return KERNEL_OK;
}

int matmul_backward_input(float *dinp, const float *dout, const float *weight, int N, int C, int OC)
{
    if (!dinp || !dout || !weight || !dims_ok(N, C, OC)) return KERNEL_EDIM;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, weight, C, 0.0f, dinp, C);
    return KERNEL_OK;
}

void matmul_bias_backward(float *dbias, const float *dout, int N, int OC)
{
    /* column sums by blocks of 64 columns, rows streamed contiguously */
    int nblk = (OC + 63) / 64;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblk; blk++) {
        int j0 = blk * 64, j1 = j0 + 64 < OC ? j0 + 64 : OC;
        float acc[64] = {0};
        for (int i = 0; i < N; i++) {
            const float *row = dout + (size_t)i * OC;
            for (int j = j0; j < j1; j++) acc[j - j0] += row[j];
        }
        for (int j = j0; j < j1; j++) dbias[j] += acc[j - j0];
    }
}

int matmul_backward_weight(float *dweight, float *dbias, const float *dout, const float *inp, int N, int C, int OC)
{
    if (!dweight || !dout || !inp || !dims_ok(N, C, OC)) return KERNEL_EDIM;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
    if (dbias) matmul_bias_backward(dbias, dout, N, OC);
    return KERNEL_OK;
}

int matmul_gemm(int trans_a, int trans_b, int n, int m, int k, float alpha, const float *A, int lda, const float *B,
                int ldb, float beta, float *C, int ldc)
{
    if (!A || !B || !C || n <= 0 || m <= 0 || k <= 0) return KERNEL_EDIM;
    if (lda < (trans_a ? n : k) || ldb < (trans_b ? k : m) || ldc < m) return KERNEL_EDIM;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, n, m, k,
                alpha, A, lda, B, ldb, beta, C, ldc);
    return KERNEL_OK;
}

void matmul_forward_ref(double *out, const double *inp, const double *weight, const double *bias, int N, int C, int OC)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < OC; j++) {
            double s = bias ? bias[j] : 0.0;
            for (int c = 0; c < C; c++) s += inp[(size_t)i * C + c] * weight[(size_t)j * C + c];
            out[(size_t)i * OC + j] = s;
        }
}

void matmul_backward_input_ref(double *dinp, const double *dout, const double *weight, int N, int C, int OC)
{
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            double s = 0.0;
            for (int j = 0; j < OC; j++) s += dout[(size_t)i * OC + j] * weight[(size_t)j * C + c];
            dinp[(size_t)i * C + c] = s;
        }
}

void matmul_backward_weight_ref(double *dweight, double *dbias, const double *dout, const double *inp, int N, int C,
                                int OC)
{
    for (int j = 0; j < OC; j++) {
        for (int c = 0; c < C; c++) {
            double s = 0.0;
            for (int i = 0; i < N; i++) s += dout[(size_t)i * OC + j] * inp[(size_t)i * C + c];
            dweight[(size_t)j * C + c] += s;
        }
        if (dbias) {
            double s = 0.0;
            for (int i = 0; i < N; i++) s += dout[(size_t)i * OC + j];
            dbias[j] += s;
        }
    }
}

const char *matmul_blas_core(void) { return openblas_get_corename(); }
int matmul_blas_threads(void) { return openblas_get_num_threads(); }
