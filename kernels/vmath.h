/* vmath.h: vectorised exp, erf and bf16 conversions for the memory-bound kernels (AVX-512 where
 * the build targets it, scalar libm otherwise). exp: range reduction x = n ln2 + r,
 * |r| <= ln2/2, Cephes' degree-6 polynomial, 2^n by vscalefps (about 1 ulp). erf: Abramowitz &
 * Stegun 7.1.26 (absolute error <= 1.5e-7), sharing exp(-z^2) with the GELU derivative. All
 * propagate NaN (kernels.h). */
#ifndef CB_VMATH_H
#define CB_VMATH_H

#include <math.h>

#include "bf16.h"

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

#if defined(__AVX512BW__) && defined(__AVX512VL__)
#define VMATH_BF16 1 /* the helpers below: 16-bit masked loads and stores need AVX512BW and VL */

/* bf16 <-> fp32 for 16 lanes. Narrowing rounds as bf16_from_float (bf16.h) does, to nearest
 * even with NaN kept a quiet NaN: by vcvtneps2bf16 where the build targets AVX512_BF16 (one
 * instruction; it flushes fp32 subnormals, |x| < 2^-126, to a signed zero, as bf16_from_floats
 * does on such CPUs), otherwise in integer arithmetic (vbf16_narrow512_int: bit for bit
 * bf16_from_float, subnormals included). */
static inline __m256i vbf16_narrow512_int(__m512 x)
{
    __m512i u = _mm512_castps_si512(x), hi = _mm512_srli_epi32(u, 16);
    __m512i odd = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x0040));
    return _mm512_cvtepi32_epi16(r);
}

static inline __m256i vbf16_narrow512(__m512 x)
{
#ifdef __AVX512BF16__
    return (__m256i)_mm512_cvtneps_pbh(x);
#else
    return vbf16_narrow512_int(x);
#endif
}

static inline __m512 vbf16_widen512(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The first `left` (at most 16) bf16 values at p, widened; the lanes past them are 0. */
static inline __m512 vbf16_load512(const bf16 *p, long left)
{
    return vbf16_widen512(_mm256_maskz_loadu_epi16(vmask_tail(left), p));
}

/* Narrows x and stores its first `left` (at most 16) lanes at p. */
static inline void vbf16_store512(bf16 *p, __m512 x, long left)
{
    _mm256_mask_storeu_epi16(p, vmask_tail(left), vbf16_narrow512(x));
}

#define VMATH_SR 1

static inline __m512i vsr_mix32(__m512i x)
{
    x = _mm512_mullo_epi32(_mm512_xor_si512(x, _mm512_srli_epi32(x, 16)), _mm512_set1_epi32(0x7feb352d));
    x = _mm512_mullo_epi32(_mm512_xor_si512(x, _mm512_srli_epi32(x, 15)), _mm512_set1_epi32((int)0x846ca68bu));
    return _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
}

/* bf16_sr_hash_k (bf16.h) of the 16 indices base .. base + 15, as its two 32-bit halves (h1: bits
 * 0-31, h2: 32-63). The indices must not cross a multiple of 2^32 (the caller's scalar path
 * takes such a step). */
static inline void vsr_hash16(uint64_t key, uint64_t base, __m512i *h1, __m512i *h2)
{
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    __m512i x = _mm512_xor_si512(_mm512_add_epi32(_mm512_set1_epi32((int)(uint32_t)base), lane),
                                 _mm512_set1_epi32((int)((uint32_t)(base >> 32) * 0x9e3779b9u)));
    *h1 = vsr_mix32(_mm512_xor_si512(x, _mm512_set1_epi32((int)(uint32_t)key)));
    *h2 = vsr_mix32(_mm512_add_epi32(*h1, _mm512_set1_epi32((int)(uint32_t)(key >> 32))));
}

/* bf16_from_float_sr (bf16.h) of 16 lanes with random bits rb (16 bits in each 32-bit lane): the
 * high half of u + rb, except for lanes of magnitude 2^127 or more (where rounding up could reach
 * infinity, and NaN and infinities), which take the careful path. */
static inline __m256i vbf16_narrow512_sr(__m512 x, __m512i rb)
{
    __m512i u = _mm512_castps_si512(x);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, rb), 16);
    __mmask16 big =
        _mm512_cmpge_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f000000));
    if (__builtin_expect(big != 0, 0)) {
        const __m512i expo = _mm512_set1_epi32(0x7f800000), e16 = _mm512_set1_epi32(0x7f80);
        __mmask16 special = _mm512_cmpeq_epi32_mask(_mm512_and_si512(u, expo), expo); /* NaN, infinities */
        __mmask16 ovf = _mm512_cmpeq_epi32_mask(_mm512_and_si512(r, e16), e16) & (__mmask16)~special;
        __m512i hi = _mm512_srli_epi32(u, 16);
        __m512i maxf = _mm512_or_si512(_mm512_and_si512(hi, _mm512_set1_epi32(0x8000)), _mm512_set1_epi32(0x7f7f));
        r = _mm512_mask_mov_epi32(r, ovf, maxf);
        r = _mm512_mask_mov_epi32(r, special, hi);
        __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        r = _mm512_mask_or_epi32(r, nan, r, _mm512_set1_epi32(0x0040));
    }
    return _mm512_cvtepi32_epi16(r);
}
#endif /* VMATH_BF16 */

/* erf(z) for z = x / sqrt(2), given e = exp(-z^2) = exp(-x^2 / 2). */
static inline __m512 verf512_from(__m512 z, __m512 e)
{
    __m512 az = _mm512_abs_ps(z);
    __m512 t =
        _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(az, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
    __m512 p = _mm512_set1_ps(1.061405429f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
    __m512 y = _mm512_fnmadd_ps(_mm512_mul_ps(p, t), e, _mm512_set1_ps(1.0f));
    /* erf is odd: copy z's sign */
    return _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(y), _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32((int)0x80000000u))));
}
#endif

#endif
