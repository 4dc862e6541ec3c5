#include "layernorm.h"

#include <math.h>
#include <stddef.h>

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight, const float *bias,
                       int N, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float *o = out + (size_t)i * C;
        float m = 0.0f;
        for (int c = 0; c < C; c++) m += x[c];
        m /= (float)C;
        float v = 0.0f;
        for (int c = 0; c < C; c++) {
            float d = x[c] - m;
            v += d * d;
        }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + LAYERNORM_EPS);
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
        mean[i] = m;
        rstd[i] = s;
    }
}

void layernorm_backward(float *dinp, const float *dres, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean, const float *rstd, int N, int C)
{
    /* dinp: per row, dx = dres + rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * weight */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *dy = dout + (size_t)i * C, *x = inp + (size_t)i * C;
        float *dx = dinp + (size_t)i * C;
        const float *dr = dres ? dres + (size_t)i * C : NULL;
        float m = mean[i], s = rstd[i];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            float g = weight[c] * dy[c];
            dnorm_mean += g;
            dnorm_norm_mean += g * (x[c] - m) * s;
        }
        dnorm_mean /= (float)C;
        dnorm_norm_mean /= (float)C;
        for (int c = 0; c < C; c++) {
            float xhat = (x[c] - m) * s;
            dx[c] = (dr ? dr[c] : 0.0f) + (weight[c] * dy[c] - dnorm_mean - xhat * dnorm_norm_mean) * s;
        }
    }
    /* dweight, dbias: column sums, one block of columns per thread */
    enum { CB = 64 };
    int nblk = (C + CB - 1) / CB;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * CB, c1 = c0 + CB < C ? c0 + CB : C;
        float dw[CB] = {0}, db[CB] = {0};
        for (int i = 0; i < N; i++) {
            const float *dy = dout + (size_t)i * C, *x = inp + (size_t)i * C;
            float m = mean[i], s = rstd[i];
            for (int c = c0; c < c1; c++) {
                dw[c - c0] += dy[c] * (x[c] - m) * s;
                db[c - c0] += dy[c];
            }
        }
        for (int c = c0; c < c1; c++) {
            dweight[c] += dw[c - c0];
            dbias[c] += db[c - c0];
        }
    }
}

void layernorm_forward_ref(double *out, const double *inp, const double *weight, const double *bias, int N, int C)
{
    for (int i = 0; i < N; i++) {
        const double *x = inp + (size_t)i * C;
        double m = 0, v = 0;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= C;
        double s = 1.0 / sqrt(v + (double)LAYERNORM_EPS);
        for (int c = 0; c < C; c++) out[(size_t)i * C + c] = (x[c] - m) * s * weight[c] + bias[c];
    }
}
