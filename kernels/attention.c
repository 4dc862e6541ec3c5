#include "attention.h"

#include <math.h>
#include <string.h>

#include "matmul.h"

size_t attention_scratch_floats(int T) { return (size_t)T * (size_t)T; }

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int NH, int HS)
{
    const int C3 = 3 * NH * HS, C = NH * HS;
    const float scale = 1.0f / sqrtf((float)HS);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *q = qkv + (size_t)b * T * C3 + (size_t)h * 3 * HS, *k = q + HS, *v = q + 2 * HS;
            float *P = att + ((size_t)b * NH + h) * (size_t)T * T;
            /* S = scale * Q K^T */
            matmul_gemm(0, 1, T, T, HS, scale, q, C3, k, C3, 0.0f, P, T);
            /* causal softmax per row */
#pragma omp parallel for schedule(static)
            for (int i = 0; i < T; i++) {
                float *row = P + (size_t)i * T;
                float mx = -INFINITY;
                for (int j = 0; j <= i; j++) mx = row[j] > mx ? row[j] : mx;
                float sum = 0.0f;
                for (int j = 0; j <= i; j++) {
                    row[j] = expf(row[j] - mx);
                    sum += row[j];
                }
                float inv = 1.0f / sum;
                for (int j = 0; j <= i; j++) row[j] *= inv;
                for (int j = i + 1; j < T; j++) row[j] = 0.0f;
            }
            /* O = P V */
            matmul_gemm(0, 0, T, HS, T, 1.0f, P, T, v, C3, 0.0f, out + (size_t)b * T * C + (size_t)h * HS, C);
        }
}

void attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *att, int B,
                        int T, int NH, int HS)
{
    const int C3 = 3 * NH * HS, C = NH * HS;
    const float scale = 1.0f / sqrtf((float)HS);
    float *dP = scratch;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t qo = (size_t)b * T * C3 + (size_t)h * 3 * HS;
            const float *q = qkv + qo, *k = q + HS, *v = q + 2 * HS;
            float *dq = dqkv + qo, *dk = dq + HS, *dv = dq + 2 * HS;
            const float *P = att + ((size_t)b * NH + h) * (size_t)T * T;
            const float *dO = dout + (size_t)b * T * C + (size_t)h * HS;
            /* dP = dO V^T; dV = P^T dO */
            matmul_gemm(0, 1, T, T, HS, 1.0f, dO, C, v, C3, 0.0f, dP, T);
            matmul_gemm(1, 0, T, HS, T, 1.0f, P, T, dO, C, 0.0f, dv, C3);
            /* dS = scale * P * (dP - rowsum(dP * P)) */
#pragma omp parallel for schedule(static)
            for (int i = 0; i < T; i++) {
                const float *p = P + (size_t)i * T;
                float *d = dP + (size_t)i * T;
                float dot = 0.0f;
                for (int j = 0; j <= i; j++) dot += p[j] * d[j];
                for (int j = 0; j <= i; j++) d[j] = scale * p[j] * (d[j] - dot);
                for (int j = i + 1; j < T; j++) d[j] = 0.0f;
            }
            /* dQ = dS K; dK = dS^T Q */
            matmul_gemm(0, 0, T, HS, T, 1.0f, dP, T, k, C3, 0.0f, dq, C3);
            matmul_gemm(1, 0, T, HS, T, 1.0f, dP, T, q, C3, 0.0f, dk, C3);
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
