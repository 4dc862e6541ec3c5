#include "attention.h"

#include <math.h>
#include <string.h>

#include "matmul.h"
#include "vmath.h"

#include <omp.h>

/* Rows are processed in blocks of ATT_BLOCK: block [r0, r1) only needs keys [0, r1), so the
 * causal mask skips the upper-right blocks (about 40% of the score and value products at
 * T = 512). Heads run in parallel, one (batch, head) per thread; the sgemm calls inside run
 * single-threaded (OpenBLAS's OpenMP build does so inside a parallel region). */
#define ATT_BLOCK ATTENTION_BLOCK

static size_t block_rows(int T) { return (size_t)(T < ATT_BLOCK ? T : ATT_BLOCK); }

size_t attention_scratch_floats(int T, int threads) { return block_rows(T) * (size_t)T * (size_t)(threads > 0 ? threads : 1); }

static void softmax_rows(float *P, int T, int r0, int r1)
{
    for (int i = r0; i < r1; i++) {
        float *row = P + (size_t)i * T;
        int n = i + 1;
#ifdef __AVX512F__
        __m512 vm = _mm512_set1_ps(-INFINITY);
        for (int j = 0; j < n; j += 16) {
            __mmask16 k = vmask_tail(n - j);
            vm = _mm512_mask_max_ps(vm, k, vm, _mm512_maskz_loadu_ps(k, row + j));
        }
        __m512 vmx = _mm512_set1_ps(_mm512_reduce_max_ps(vm)), vs = _mm512_setzero_ps();
        for (int j = 0; j < n; j += 16) {
            __mmask16 k = vmask_tail(n - j);
            __m512 e = _mm512_maskz_mov_ps(k, vexp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), vmx)));
            _mm512_mask_storeu_ps(row + j, k, e);
            vs = _mm512_add_ps(vs, e);
        }
        __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vs));
        for (int j = 0; j < n; j += 16) {
            __mmask16 k = vmask_tail(n - j);
            _mm512_mask_storeu_ps(row + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), inv));
        }
#else
        float mx = -INFINITY;
        for (int j = 0; j < n; j++) mx = row[j] > mx ? row[j] : mx;
        float sum = 0.0f;
        for (int j = 0; j < n; j++) {
            row[j] = expf(row[j] - mx);
            sum += row[j];
        }
        float inv = 1.0f / sum;
        for (int j = 0; j < n; j++) row[j] *= inv;
#endif
        for (int j = n; j < r1; j++) row[j] = 0.0f;
    }
}

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int NH, int HS)
{
    const int C3 = 3 * NH * HS, C = NH * HS;
    const float scale = 1.0f / sqrtf((float)HS);
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *q = qkv + (size_t)b * T * C3 + (size_t)h * 3 * HS, *k = q + HS, *v = q + 2 * HS;
        float *P = att + (size_t)bh * T * T;
        float *o = out + (size_t)b * T * C + (size_t)h * HS;
        for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
            int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, nr = r1 - r0;
            /* S = scale * Q K^T for rows [r0, r1), keys [0, r1) */
            matmul_gemm(0, 1, nr, r1, HS, scale, q + (size_t)r0 * C3, C3, k, C3, 0.0f, P + (size_t)r0 * T, T);
            softmax_rows(P, T, r0, r1);
            /* O = P V */
            matmul_gemm(0, 0, nr, HS, r1, 1.0f, P + (size_t)r0 * T, T, v, C3, 0.0f, o + (size_t)r0 * C, C);
        }
    }
}

void attention_backward(float *dqkv, float *scratch, int threads, const float *dout, const float *qkv,
                        const float *att, int B, int T, int NH, int HS)
{
    const int C3 = 3 * NH * HS, C = NH * HS;
    const float scale = 1.0f / sqrtf((float)HS);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 1)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        float *dPb = scratch + (size_t)omp_get_thread_num() * block_rows(T) * T; /* rows [r0, r1) of dP */
        size_t qo = (size_t)b * T * C3 + (size_t)h * 3 * HS;
        const float *q = qkv + qo, *k = q + HS, *v = q + 2 * HS;
        float *dq = dqkv + qo, *dk = dq + HS, *dv = dq + 2 * HS;
        const float *P = att + (size_t)bh * T * T;
        const float *dO = dout + (size_t)b * T * C + (size_t)h * HS;
        for (int t = 0; t < T; t++) {
            memset(dk + (size_t)t * C3, 0, (size_t)HS * sizeof(float));
            memset(dv + (size_t)t * C3, 0, (size_t)HS * sizeof(float));
        }
        for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
            int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, nr = r1 - r0;
            const float *Pb = P + (size_t)r0 * T;
            /* dP = dO V^T; dV += P^T dO (keys [0, r1)) */
            matmul_gemm(0, 1, nr, r1, HS, 1.0f, dO + (size_t)r0 * C, C, v, C3, 0.0f, dPb, T);
            matmul_gemm(1, 0, r1, HS, nr, 1.0f, Pb, T, dO + (size_t)r0 * C, C, 1.0f, dv, C3);
            /* dS = scale * P * (dP - rowsum(dP * P)) */
            for (int i = r0; i < r1; i++) {
                const float *p = P + (size_t)i * T;
                float *d = dPb + (size_t)(i - r0) * T;
                float dot = 0.0f;
                for (int j = 0; j <= i; j++) dot += p[j] * d[j];
                for (int j = 0; j <= i; j++) d[j] = scale * p[j] * (d[j] - dot);
                for (int j = i + 1; j < r1; j++) d[j] = 0.0f;
            }
            /* dQ = dS K; dK += dS^T Q */
            matmul_gemm(0, 0, nr, HS, r1, 1.0f, dPb, T, k, C3, 0.0f, dq + (size_t)r0 * C3, C3);
            matmul_gemm(1, 0, r1, HS, nr, 1.0f, dPb, T, q + (size_t)r0 * C3, C3, 1.0f, dk, C3);
        }
    }
}

void attention_forward_ref(double *out, const double *qkv, int B, int T, int NH, int HS)
{
    const int C3 = 3 * NH * HS, C = NH * HS;
    const double scale = 1.0 / sqrt((double)HS);
    double p[4096];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const double *q = qkv + ((size_t)b * T + i) * C3 + (size_t)h * 3 * HS;
                double mx = -INFINITY;
                for (int j = 0; j <= i && j < 4096; j++) {
                    const double *k = qkv + ((size_t)b * T + j) * C3 + (size_t)h * 3 * HS + HS;
                    double s = 0;
                    for (int d = 0; d < HS; d++) s += q[d] * k[d];
                    p[j] = s * scale;
                    if (p[j] > mx) mx = p[j];
                }
                double sum = 0;
                for (int j = 0; j <= i; j++) {
                    p[j] = exp(p[j] - mx);
                    sum += p[j];
                }
                double *o = out + ((size_t)b * T + i) * C + (size_t)h * HS;
                for (int d = 0; d < HS; d++) o[d] = 0;
                for (int j = 0; j <= i; j++) {
                    const double *v = qkv + ((size_t)b * T + j) * C3 + (size_t)h * 3 * HS + 2 * HS;
                    for (int d = 0; d < HS; d++) o[d] += p[j] / sum * v[d];
                }
            }
}
