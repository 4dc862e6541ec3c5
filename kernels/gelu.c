#include "gelu.h"

#include <math.h>

#include "vmath.h"

#define INV_SQRT2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f

#ifdef __AVX512F__
enum { LANES = 16 }; /* floats per __m512 */
/* Software prefetch distance, floats (4 KiB ahead): the exp and erf arithmetic slows the loop
 * enough that the hardware prefetcher alone left it at a third of its in-cache speed on data
 * from memory (Zen 5, measured); one prefetch per 16-float step fetches each line once. */
#define GELU_PREFETCH 1024
#define PREFETCH(p) _mm_prefetch((const char *)(p) + GELU_PREFETCH * sizeof(float), _MM_HINT_T0)

/* cdf(x) = 0.5 (1 + erf(x / sqrt 2)) and e = exp(-x^2 / 2) for 16 lanes */
static inline __m512 cdf512(__m512 x, __m512 *e)
{
    *e = vexp512(_mm512_mul_ps(_mm512_set1_ps(-0.5f), _mm512_mul_ps(x, x)));
    __m512 erf = verf512_from(_mm512_mul_ps(x, _mm512_set1_ps(INV_SQRT2)), *e);
    return _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_add_ps(_mm512_set1_ps(1.0f), erf));
}
#endif

void gelu_forward(float *out, const float *inp, size_t n)
{
#ifdef __AVX512F__
    long nv = (long)((n + LANES - 1) / LANES);
#pragma omp parallel for schedule(static)
    for (long v = 0; v < nv; v++) {
        size_t i = (size_t)v * LANES;
        __mmask16 k = vmask_tail((long)(n - i));
        PREFETCH(inp + i);
        __m512 x = _mm512_maskz_loadu_ps(k, inp + i), e;
        _mm512_mask_storeu_ps(out + i, k, _mm512_mul_ps(x, cdf512(x, &e)));
    }
#else
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + erff(x * INV_SQRT2));
    }
#endif
}

void gelu_forward_bf16(bf16 *out, const float *inp, size_t n)
{
#if defined(__AVX512F__) && defined(VMATH_BF16)
    long nv = (long)((n + LANES - 1) / LANES);
#pragma omp parallel for schedule(static)
    for (long v = 0; v < nv; v++) {
        size_t i = (size_t)v * LANES;
        PREFETCH(inp + i);
        __m512 x = _mm512_maskz_loadu_ps(vmask_tail((long)(n - i)), inp + i), e;
        vbf16_store512(out + i, _mm512_mul_ps(x, cdf512(x, &e)), (long)(n - i));
    }
#else
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
#ifdef __AVX512F__
        __m512 vx = _mm512_set1_ps(x), e;
        out[i] = bf16_from_float(_mm512_cvtss_f32(_mm512_mul_ps(vx, cdf512(vx, &e))));
#else
        out[i] = bf16_from_float(0.5f * x * (1.0f + erff(x * INV_SQRT2)));
#endif
    }
#endif
}

void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
#ifdef __AVX512F__
    long nv = (long)((n + LANES - 1) / LANES);
#pragma omp parallel for schedule(static)
    for (long v = 0; v < nv; v++) {
        size_t i = (size_t)v * LANES;
        __mmask16 k = vmask_tail((long)(n - i));
        PREFETCH(inp + i);
        PREFETCH(dout + i);
        __m512 x = _mm512_maskz_loadu_ps(k, inp + i), e;
        __m512 cdf = cdf512(x, &e);
        __m512 d = _mm512_fmadd_ps(_mm512_mul_ps(x, _mm512_set1_ps(INV_SQRT_2PI)), e, cdf);
        _mm512_mask_storeu_ps(dinp + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dout + i), d));
    }
#else
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float cdf = 0.5f * (1.0f + erff(x * INV_SQRT2));
        float pdf = INV_SQRT_2PI * expf(-0.5f * x * x);
        dinp[i] = dout[i] * (cdf + x * pdf);
    }
#endif
}

void gelu_forward_ref(double *out, const double *inp, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = 0.5 * inp[i] * (1.0 + erf(inp[i] / sqrt(2.0)));
}
