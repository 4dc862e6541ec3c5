/* vmath.h: vectorised exp and erf for the memory-bound kernels (AVX-512 where the build targets
 * it, scalar libm otherwise). exp: range reduction x = n ln2 + r, |r| <= ln2/2, Cephes' degree-6
 * polynomial, 2^n by vscalefps (about 1 ulp). erf: Abramowitz & Stegun 7.1.26 (absolute error
 * <= 1.5e-7), sharing exp(-z^2) with the GELU derivative. Both propagate NaN (kernels.h). */
#ifndef CB_VMATH_H
#define CB_VMATH_H

#include <math.h>

#ifdef __AVX512F__
#include <immintrin.h>

/* Lanes of a 16-wide step that hold data when `left` elements remain (all 16 when left >= 16). */
static inline __mmask16 vmask_tail(long left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

/* exp(x). The clamps keep x inside the range where 2^n is representable (exp(89) overflows to
 * +inf through vscalefps, as it must); x is their SECOND operand because vminps/vmaxps return the
 * second operand when either is NaN: exp(NaN) is NaN, never a finite number that hides it. */
static inline __m512 vexp512(__m512 x)
{
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(_mm512_set1_ps(89.0f), x));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

/* erf(z) for z = x / sqrt(2), given e = exp(-z^2) = exp(-x^2 / 2). */
static inline __m512 verf512_from(__m512 z, __m512 e)
{
    __m512 az = _mm512_abs_ps(z);
    __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(az, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
    __m512 p = _mm512_set1_ps(1.061405429f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
    __m512 y = _mm512_fnmadd_ps(_mm512_mul_ps(p, t), e, _mm512_set1_ps(1.0f));
    /* erf is odd: copy z's sign */
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y),
                                               _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32((int)0x80000000u))));
}
#endif

#endif
