#include "swiglu.h"

#include <math.h>
#include <stddef.h>

#include "vmath.h"

/* silu(g) * u = g / (1 + exp(-g)) * u, in that order: with AVX-512 on 16 lanes with vmath.h's
 * vexp512 (about 1 ulp), otherwise with libm's expf. The fp32 and bf16 forwards share it. */
#ifdef __AVX512F__
static inline __m512 silu_mul512(__m512 g, __m512 u)
{
    __m512 e = vexp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
}
#endif

/* One row: out[0..I) from gate = x[0..I), up = x[I..2I), into fp32 `of` or, rounded, bf16 `ob`. */
static inline void forward_row(float *of, bf16 *ob, const float *x, int I)
{
    const float *gate = x, *up = x + I;
#ifdef __AVX512F__
    for (int i = 0; i < I; i += 16) {
        __mmask16 k = vmask_tail(I - i);
        __m512 y = silu_mul512(_mm512_maskz_loadu_ps(k, gate + i), _mm512_maskz_loadu_ps(k, up + i));
        if (!ob) {
            _mm512_mask_storeu_ps(of + i, k, y);
            continue;
        }
#ifdef VMATH_BF16
        vbf16_store512(ob + i, y, I - i);
#else
        float t[16];
        _mm512_storeu_ps(t, y);
        for (int j = 0; j < 16 && i + j < I; j++) ob[i + j] = bf16_from_float(t[j]);
#endif
    }
#else
    for (int i = 0; i < I; i++) {
        float y = gate[i] / (1.0f + expf(-gate[i])) * up[i];
        if (ob) ob[i] = bf16_from_float(y);
        else of[i] = y;
    }
#endif
}

static void forward_rows(float *out, bf16 *outb, const float *inp, int N, int I)
{
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        size_t o = (size_t)n * I;
        forward_row(out ? out + o : NULL, outb ? outb + o : NULL, inp + 2 * o, I);
    }
}

void swiglu_forward(float *out, const float *inp, int N, int I) { forward_rows(out, NULL, inp, N, I); }

void swiglu_forward_bf16(bf16 *out, const float *inp, int N, int I) { forward_rows(NULL, out, inp, N, I); }

/* sig = 1 / (1 + exp(-g)); dgate = dout * up * sig * (1 + g * (1 - sig)); dup = dout * g * sig.
 * For finite g no step overflows: exp(-g) = +inf gives sig = 0 and dgate = dup = 0. */
void swiglu_backward(float *dinp, const float *inp, const float *dout, int N, int I)
{
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *gate = inp + (size_t)n * 2 * I, *up = gate + I, *dy = dout + (size_t)n * I;
        float *dgate = dinp + (size_t)n * 2 * I, *dup = dgate + I;
#ifdef __AVX512F__
        const __m512 one = _mm512_set1_ps(1.0f);
        for (int i = 0; i < I; i += 16) {
            __mmask16 k = vmask_tail(I - i);
            __m512 g = _mm512_maskz_loadu_ps(k, gate + i), u = _mm512_maskz_loadu_ps(k, up + i);
            __m512 d = _mm512_maskz_loadu_ps(k, dy + i);
            __m512 sig = _mm512_div_ps(one, _mm512_add_ps(one, vexp512(_mm512_sub_ps(_mm512_setzero_ps(), g))));
            __m512 dsilu = _mm512_mul_ps(sig, _mm512_fmadd_ps(g, _mm512_sub_ps(one, sig), one));
            _mm512_mask_storeu_ps(dgate + i, k, _mm512_mul_ps(_mm512_mul_ps(d, u), dsilu));
            _mm512_mask_storeu_ps(dup + i, k, _mm512_mul_ps(d, _mm512_mul_ps(g, sig)));
        }
#else
        for (int i = 0; i < I; i++) {
            float g = gate[i], sig = 1.0f / (1.0f + expf(-g));
            dgate[i] = dy[i] * up[i] * (sig * (1.0f + g * (1.0f - sig)));
            dup[i] = dy[i] * (g * sig);
        }
#endif
    }
}

void swiglu_forward_ref(double *out, const double *inp, int N, int I)
{
    for (int n = 0; n < N; n++) {
        const double *gate = inp + (size_t)n * 2 * I, *up = gate + I;
        for (int i = 0; i < I; i++) out[(size_t)n * I + i] = gate[i] / (1.0 + exp(-gate[i])) * up[i];
    }
}
