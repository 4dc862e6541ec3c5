#include "rmsnorm.h"

#include <math.h>
#include <stddef.h>

#include "vmath.h"

/* ---------------------------------------------------------------- forward
 *
 * Per row: ss = sum(x^2), rstd = 1 / sqrtf(ss / C + eps), out = x * rstd * w in that order (no
 * fused multiply-add), as LlamaRMSNorm in fp32 (w * (x * rsqrt(mean(x^2) + eps))). With AVX-512
 * the sum is 16 lane sums (lane j: the columns c = j mod 16, by fused multiply-add) added by
 * _mm512_reduce_add_ps; without, sequential from c = 0. Either way one order per build, shared
 * by the fp32 and bf16 forwards, so that their outputs are the same numbers. */

static float row_rstd(const float *x, int C, float eps)
{
#ifdef __AVX512F__
    __m512 acc = _mm512_setzero_ps();
    for (int c = 0; c < C; c += 16) {
        __m512 v = _mm512_maskz_loadu_ps(vmask_tail(C - c), x + c);
        acc = _mm512_fmadd_ps(v, v, acc);
    }
    float ss = _mm512_reduce_add_ps(acc);
#else
    float ss = 0.0f;
    for (int c = 0; c < C; c++) ss += x[c] * x[c];
#endif
    return 1.0f / sqrtf(ss / (float)C + eps);
}

/* One output row, x * s * w, into fp32 `of` or, rounded, into bf16 `ob` (the other NULL). */
static inline void out_row(float *of, bf16 *ob, const float *x, const float *w, float s, int C)
{
#if defined(__AVX512F__) && defined(VMATH_BF16)
    const __m512 vs = _mm512_set1_ps(s);
    for (int c = 0; c < C; c += 16) {
        __mmask16 k = vmask_tail(C - c);
        __m512 y = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + c), vs), _mm512_maskz_loadu_ps(k, w + c));
        if (ob) vbf16_store512(ob + c, y, C - c);
        else _mm512_mask_storeu_ps(of + c, k, y);
    }
#else
    for (int c = 0; c < C; c++) {
        float y = x[c] * s * w[c];
        if (ob) ob[c] = bf16_from_float(y);
        else of[c] = y;
    }
#endif
}

static void forward_rows(float *out, bf16 *outb, float *rstd, const float *inp, const float *weight, int N, int C,
                         float eps)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        size_t o = (size_t)i * C;
        rstd[i] = row_rstd(inp + o, C, eps);
        out_row(out ? out + o : NULL, outb ? outb + o : NULL, inp + o, weight, rstd[i], C);
    }
}

void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps)
{
    forward_rows(out, NULL, rstd, inp, weight, N, C, eps);
}

void rmsnorm_forward_bf16(bf16 *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps)
{
    forward_rows(NULL, out, rstd, inp, weight, N, C, eps);
}

/* ---------------------------------------------------------------- backward
 *
 * y = w * x * s with s = (mean(x^2) + eps)^(-1/2), ds/dx_j = -s^3 x_j / C, so with g = dout:
 *   dx_j = dres_j + s * (w_j g_j - x_j * s^2 * mean(w g x)),   dw_j += sum over rows of g_j x_j s. */

/* One row of dinp. dx may be dr (in place): each element is read before it is written. */
static void backward_row(float *dx, const float *dr, const float *dy, const float *x, const float *w, float s, int C)
{
#ifdef __AVX512F__
    __m512 acc = _mm512_setzero_ps();
    for (int c = 0; c < C; c += 16) {
        __mmask16 k = vmask_tail(C - c);
        __m512 wg = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, w + c), _mm512_maskz_loadu_ps(k, dy + c));
        acc = _mm512_fmadd_ps(wg, _mm512_maskz_loadu_ps(k, x + c), acc);
    }
    const float a = s * s * (_mm512_reduce_add_ps(acc) / (float)C);
    const __m512 va = _mm512_set1_ps(a), vs = _mm512_set1_ps(s);
    for (int c = 0; c < C; c += 16) {
        __mmask16 k = vmask_tail(C - c);
        __m512 wg = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, w + c), _mm512_maskz_loadu_ps(k, dy + c));
        __m512 g = _mm512_mul_ps(vs, _mm512_fnmadd_ps(_mm512_maskz_loadu_ps(k, x + c), va, wg));
        if (dr) g = _mm512_add_ps(g, _mm512_maskz_loadu_ps(k, dr + c));
        _mm512_mask_storeu_ps(dx + c, k, g);
    }
#else
    float dot = 0.0f;
    for (int c = 0; c < C; c++) dot += w[c] * dy[c] * x[c];
    const float a = s * s * (dot / (float)C);
    for (int c = 0; c < C; c++) {
        float g = s * (w[c] * dy[c] - x[c] * a);
        dx[c] = dr ? dr[c] + g : g;
    }
#endif
}

void rmsnorm_backward(float *dinp, const float *dres, float *dweight, const float *dout, const float *inp,
                      const float *weight, const float *rstd, int N, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        size_t o = (size_t)i * C;
        backward_row(dinp + o, dres ? dres + o : NULL, dout + o, inp + o, weight, rstd[i], C);
    }
    /* dweight: column sums, one block of columns per thread */
    enum { CB = 64 };
    int nblk = (C + CB - 1) / CB;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * CB, c1 = c0 + CB < C ? c0 + CB : C;
        float dw[CB] = {0};
        for (int i = 0; i < N; i++) {
            const float *dy = dout + (size_t)i * C, *x = inp + (size_t)i * C;
            float s = rstd[i];
            for (int c = c0; c < c1; c++) dw[c - c0] += dy[c] * x[c] * s;
        }
        for (int c = c0; c < c1; c++) dweight[c] += dw[c - c0];
    }
}

void rmsnorm_forward_ref(double *out, const double *inp, const double *weight, int N, int C, double eps)
{
    for (int i = 0; i < N; i++) {
        const double *x = inp + (size_t)i * C;
        double ss = 0;
        for (int c = 0; c < C; c++) ss += x[c] * x[c];
        double s = 1.0 / sqrt(ss / C + eps);
        for (int c = 0; c < C; c++) out[(size_t)i * C + c] = weight[c] * (x[c] * s);
    }
}
