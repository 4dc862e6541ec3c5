#include "attn_tile.h"

#include <math.h>
#include <string.h>

#include "vmath.h"

/* vdpbf16ps needs a compiler that knows AVX512_BF16 (GCC 10, clang 9); the CPU is asked at run
 * time (the caller's `native`). */
#if defined(__x86_64__) && ((defined(__GNUC__) && __GNUC__ >= 10) || defined(__clang__))
#define ATTN_NATIVE_BF16 1
#define BF16_TARGET __attribute__((target("avx512f,avx512bf16,avx512bw,avx512vl")))
#else
#define ATTN_NATIVE_BF16 0
#endif

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* Lanes of a 16-wide step that hold data when `left` elements remain (all 16 when left >= 16). */
static inline unsigned short mask16_tail(int left)
{
    return left >= 16 ? (unsigned short)0xffff : (unsigned short)((1u << left) - 1u);
}

static inline float word_lo(uint32_t w) { return bf16_to_float((bf16)(w & 0xffffu)); }
static inline float word_hi(uint32_t w) { return bf16_to_float((bf16)(w >> 16)); }
static inline float word_f32(uint32_t w)
{
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}
static inline uint32_t word_of(bf16 lo, bf16 hi) { return (uint32_t)lo | (uint32_t)hi << 16; }
/* Word i of A: packed words, or two bf16 values of a tensor in place (memcpy: any object type). */
static inline uint32_t load_word(const void *A, ptrdiff_t i)
{
    uint32_t w;
    memcpy(&w, (const char *)A + 4 * i, sizeof w);
    return w;
}

/* ---------------------------------------------------------------- the products' driver */

/* One micro-tile: C (mr x nn, nn <= 64) (+)= A (mr x kk) B (kk x nn), kk in the operands' own
 * units (floats, or words of two bf16 values). */
typedef void (*micro_fn)(int mr, int nn, int kk, const void *A, ptrdiff_t ars, ptrdiff_t aks, const uint32_t *B,
                         ptrdiff_t ldb, float *C, ptrdiff_t ldc, int acc);

/* Panels of mr_max rows of C, 64 columns at a time; on a diagonal tile each panel's range of
 * columns (N modes) or of the sum (K modes, `unit` elements per word) shrinks to what it needs. */
static void drive(micro_fn mk, int mr_max, int unit, float *C, ptrdiff_t ldc, int acc, const void *A, ptrdiff_t ars,
                  ptrdiff_t aks, const uint32_t *B, ptrdiff_t ldb, int M, int N, int K, attn_tri tri)
{
    for (int m0 = 0; m0 < M; m0 += mr_max) {
        int mr = M - m0 < mr_max ? M - m0 : mr_max;
        int klo = 0, khi = K, nlo = 0, nhi = N;
        if (tri == TRI_N_UPTO_ROW) nhi = m0 + mr < N ? m0 + mr : N;
        else if (tri == TRI_N_FROM_ROW) nlo = (m0 < N ? m0 : N) & ~15;
        else if (tri == TRI_K_UPTO_ROW) khi = m0 + mr < K ? m0 + mr : K;
        else if (tri == TRI_K_FROM_ROW) klo = m0 < K ? m0 : K;
        int plo = klo / unit, phi = (khi + unit - 1) / unit;
        for (int n0 = nlo; n0 < nhi; n0 += 64) {
            int nn = nhi - n0 < 64 ? nhi - n0 : 64;
            const char *a = (const char *)A + 4 * (m0 * ars + plo * aks);
            mk(mr, nn, phi - plo, a, ars, aks, B + plo * ldb + n0, ldb, C + m0 * ldc + n0, ldc, acc);
        }
    }
}

/* Dispatch to a micro-kernel instantiated for constant rows and 16-wide column vectors. */
#define MICRO_CASE(KERNEL, R, V) \
    case (R) * 8 + (V): KERNEL(R, V, tail, kk, A, ars, aks, B, ldb, C, ldc, acc); break;
#define MICRO_CASES_V(KERNEL, R) \
    MICRO_CASE(KERNEL, R, 1) MICRO_CASE(KERNEL, R, 2) MICRO_CASE(KERNEL, R, 3) MICRO_CASE(KERNEL, R, 4)
#define MICRO_CASES_4(KERNEL) \
    MICRO_CASES_V(KERNEL, 1) MICRO_CASES_V(KERNEL, 2) MICRO_CASES_V(KERNEL, 3) MICRO_CASES_V(KERNEL, 4)
#define MICRO_CASES_6(KERNEL) MICRO_CASES_4(KERNEL) MICRO_CASES_V(KERNEL, 5) MICRO_CASES_V(KERNEL, 6)
#define MICRO_SWITCH(CASES, KERNEL, mr, nn)                           \
    do {                                                              \
        int nv_ = ((nn) + 15) / 16;                                   \
        unsigned short tail = mask16_tail((nn) - 16 * (nv_ - 1));     \
        switch ((mr) * 8 + nv_) {                                     \
            CASES(KERNEL)                                             \
        default: break;                                               \
        }                                                             \
    } while (0)
/* A micro_fn (with attributes ATTR) running KERNEL's instance for its (mr, vectors of nn). */
#define MICRO_FN(ATTR, name, CASES, KERNEL)                                                                     \
    ATTR static void name(int mr, int nn, int kk, const void *A, ptrdiff_t ars, ptrdiff_t aks, const uint32_t *B, \
                          ptrdiff_t ldb, float *C, ptrdiff_t ldc, int acc)                                      \
    {                                                                                                           \
        MICRO_SWITCH(CASES, KERNEL, mr, nn);                                                                    \
    }

/* The accumulators' loads and stores, shared by every AVX-512 micro-kernel (the native bf16 one is
 * compiled for AVX-512 even when the build is not: ACC_TARGET lets them inline into it). */
#if defined(__AVX512F__) || ATTN_NATIVE_BF16
#ifdef __AVX512F__
#define ACC_TARGET
#else
#define ACC_TARGET __attribute__((target("avx512f")))
#endif

static ALWAYS_INLINE ACC_TARGET __m512 load_cols(__mmask16 k, int last, const float *p)
{
    return last ? _mm512_maskz_loadu_ps(k, p) : _mm512_loadu_ps(p);
}

static ALWAYS_INLINE ACC_TARGET void store_cols(__mmask16 k, int last, float *p, __m512 x)
{
    if (last) _mm512_mask_storeu_ps(p, k, x);
    else _mm512_storeu_ps(p, x);
}

/* Every micro-kernel's accumulators c (mr x nv vectors, the last one of a row under `tail`): from
 * C (acc) or zero, and back into C. */
static ALWAYS_INLINE ACC_TARGET void acc_load(__m512 c[][4], const int mr, const int nv, __mmask16 tail,
                                              const float *C, ptrdiff_t ldc, int acc)
{
    #pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
        #pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            c[r][v] = acc ? load_cols(tail, v == nv - 1, C + r * ldc + 16 * v) : _mm512_setzero_ps();
}

static ALWAYS_INLINE ACC_TARGET void acc_store(__m512 c[][4], const int mr, const int nv, __mmask16 tail,
                                               float *C, ptrdiff_t ldc)
{
    #pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
        #pragma GCC unroll 8
        for (int v = 0; v < nv; v++) store_cols(tail, v == nv - 1, C + r * ldc + 16 * v, c[r][v]);
}
#endif

/* ---------------------------------------------------------------- fp32 products */

#ifdef __AVX512F__
#define MR_F32 6 /* 6 x 4 accumulators, 4 columns of B and a broadcast: 29 of the 32 registers */

/* The micro-kernels' loops over rows and vectors run a constant number of times; the unroll
 * pragmas make GCC unroll them before it places c[][] (otherwise it keeps the accumulators in
 * memory and stores them every step: 65 instead of 240 GFLOP/s on one Zen 5 core). */

static ALWAYS_INLINE void micro_f32_body(const int mr, const int nv, __mmask16 tail, int kk, const float *A,
                                         ptrdiff_t ars, ptrdiff_t aks, const float *B, ptrdiff_t ldb, float *C,
                                         ptrdiff_t ldc, int acc)
{
    __m512 c[MR_F32][4];
    acc_load(c, mr, nv, tail, C, ldc, acc);
    for (int k = 0; k < kk; k++) {
        __m512 b[4];
        #pragma GCC unroll 8
        for (int v = 0; v < nv; v++) b[v] = load_cols(tail, v == nv - 1, B + 16 * v);
        const float *a = A + k * aks;
        #pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            __m512 av = _mm512_set1_ps(a[r * ars]);
            #pragma GCC unroll 8
            for (int v = 0; v < nv; v++) c[r][v] = _mm512_fmadd_ps(av, b[v], c[r][v]);
        }
        B += ldb;
    }
    acc_store(c, mr, nv, tail, C, ldc);
}

#define MICRO_F32(R, V, tail, kk, A, ars, aks, B, ldb, C, ldc, acc) \
    micro_f32_body(R, V, tail, kk, (const float *)(A), ars, aks, (const float *)(B), ldb, C, ldc, acc)

MICRO_FN(, micro_f32, MICRO_CASES_6, MICRO_F32)
#else
#define MR_F32 4

/* Without AVX-512, one scalar micro-kernel for both operand kinds: words of one float (pairs 0)
 * or of two bf16 values (pairs 1, the high one first as vdpbf16ps). */
static inline void micro_scalar(int pairs, int mr, int nn, int kk, const void *A, ptrdiff_t ars, ptrdiff_t aks,
                                const uint32_t *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc, int acc)
{
    for (int r = 0; r < mr; r++)
        for (int n = 0; n < nn; n++) {
            float s = acc ? C[r * ldc + n] : 0.0f;
            for (int k = 0; k < kk; k++) {
                uint32_t a = load_word(A, r * ars + k * aks), b = B[k * ldb + n];
                if (pairs) s = fmaf(word_lo(a), word_lo(b), fmaf(word_hi(a), word_hi(b), s));
                else s = fmaf(word_f32(a), word_f32(b), s);
            }
            C[r * ldc + n] = s;
        }
}

static void micro_f32(int mr, int nn, int kk, const void *A, ptrdiff_t ars, ptrdiff_t aks, const uint32_t *B,
                      ptrdiff_t ldb, float *C, ptrdiff_t ldc, int acc)
{
    micro_scalar(0, mr, nn, kk, A, ars, aks, B, ldb, C, ldc, acc);
}
#endif

void attn_tile_gemm_f32(float *C, ptrdiff_t ldc, int acc, const float *A, ptrdiff_t ars, ptrdiff_t aks,
                        const float *B, ptrdiff_t ldb, int M, int N, int K, attn_tri tri)
{
    drive(micro_f32, MR_F32, 1, C, ldc, acc, A, ars, aks, (const uint32_t *)B, ldb, M, N, K, tri);
}

/* ---------------------------------------------------------------- bf16 products */

#if ATTN_NATIVE_BF16
#define MR_BF16 6

static ALWAYS_INLINE BF16_TARGET void micro_bf16_body(const int mr, const int nv, __mmask16 tail, int kk, const void *A,
                                                      ptrdiff_t ars, ptrdiff_t aks, const uint32_t *B, ptrdiff_t ldb,
                                                      float *C, ptrdiff_t ldc, int acc)
{
    __m512 c[MR_BF16][4];
    acc_load(c, mr, nv, tail, C, ldc, acc);
    for (int k = 0; k < kk; k++) {
        __m512i b[4];
        #pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            b[v] = v == nv - 1 ? _mm512_maskz_loadu_epi32(tail, B + 16 * v) : _mm512_loadu_si512(B + 16 * v);
        const char *a = (const char *)A + 4 * k * aks;
        #pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            __m512i av = _mm512_set1_epi32((int)load_word(a, r * ars));
            #pragma GCC unroll 8
            for (int v = 0; v < nv; v++) c[r][v] = _mm512_dpbf16_ps(c[r][v], (__m512bh)av, (__m512bh)b[v]);
        }
        B += ldb;
    }
    acc_store(c, mr, nv, tail, C, ldc);
}

#define MICRO_BF16(R, V, tail, kk, A, ars, aks, B, ldb, C, ldc, acc) \
    micro_bf16_body(R, V, tail, kk, A, ars, aks, B, ldb, C, ldc, acc)

MICRO_FN(BF16_TARGET, micro_bf16_native, MICRO_CASES_6, MICRO_BF16)
#endif

/* The portable bf16 products: each word's two values widened (exactly) and added with two FMAs,
 * the high (odd) element first as vdpbf16ps does. */
#ifdef __AVX512F__
#define MR_PORT 4

static ALWAYS_INLINE void micro_port_body(const int mr, const int nv, __mmask16 tail, int kk, const void *A,
                                          ptrdiff_t ars, ptrdiff_t aks, const uint32_t *B, ptrdiff_t ldb, float *C,
                                          ptrdiff_t ldc, int acc)
{
    const __m512i hi_mask = _mm512_set1_epi32((int)0xffff0000u);
    __m512 c[MR_PORT][4];
    acc_load(c, mr, nv, tail, C, ldc, acc);
    for (int k = 0; k < kk; k++) {
        __m512 blo[4], bhi[4];
        #pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            __m512i w = _mm512_maskz_loadu_epi32(v == nv - 1 ? tail : 0xffff, B + 16 * v);
            blo[v] = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
            bhi[v] = _mm512_castsi512_ps(_mm512_and_si512(w, hi_mask));
        }
        const char *a = (const char *)A + 4 * k * aks;
        #pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            uint32_t w = load_word(a, r * ars);
            __m512 alo = _mm512_set1_ps(word_lo(w)), ahi = _mm512_set1_ps(word_hi(w));
            #pragma GCC unroll 8
            for (int v = 0; v < nv; v++) c[r][v] = _mm512_fmadd_ps(alo, blo[v], _mm512_fmadd_ps(ahi, bhi[v], c[r][v]));
        }
        B += ldb;
    }
    acc_store(c, mr, nv, tail, C, ldc);
}

#define MICRO_PORT(R, V, tail, kk, A, ars, aks, B, ldb, C, ldc, acc) \
    micro_port_body(R, V, tail, kk, A, ars, aks, B, ldb, C, ldc, acc)

MICRO_FN(, micro_bf16_port, MICRO_CASES_4, MICRO_PORT)
#else
#define MR_PORT 4

static void micro_bf16_port(int mr, int nn, int kk, const void *A, ptrdiff_t ars, ptrdiff_t aks, const uint32_t *B,
                            ptrdiff_t ldb, float *C, ptrdiff_t ldc, int acc)
{
    micro_scalar(1, mr, nn, kk, A, ars, aks, B, ldb, C, ldc, acc);
}
#endif

void attn_tile_gemm_bf16(float *C, ptrdiff_t ldc, int acc, const void *A, ptrdiff_t ars, ptrdiff_t aks,
                         const uint32_t *B, ptrdiff_t ldb, int M, int N, int K, attn_tri tri, int native)
{
#if ATTN_NATIVE_BF16
    if (native) {
        drive(micro_bf16_native, MR_BF16, 2, C, ldc, acc, A, ars, aks, B, ldb, M, N, K, tri);
        return;
    }
#else
    (void)native;
#endif
    drive(micro_bf16_port, MR_PORT, 2, C, ldc, acc, A, ars, aks, B, ldb, M, N, K, tri);
}

/* ---------------------------------------------------------------- softmax steps */

#if ATTN_NATIVE_BF16
/* Words 0..15 of x to the low halves of 16 words, words 16..31 to the high halves. */
static const uint16_t interleave_idx[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                            8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};

/* 16 words pairing a (low halves) and b (high halves), rounded to bf16. */
BF16_TARGET static inline __m512i pair_words(__m512i idx, __m512 a, __m512 b)
{
    return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(b, a));
}

#endif

#ifdef __AVX512F__
/* Lanes of queries [q0, q0 + 16) that may see key k (q >= k). */
static inline __mmask16 causal_lanes(int k, int q0)
{
    return k <= q0 ? (__mmask16)0xffff : k - q0 >= 16 ? (__mmask16)0 : (__mmask16)(0xffffu << (k - q0));
}

/* The running max of queries [q0, q0 + 16) over keys [0, kend) of a tile, from mo. */
static inline __m512 col_max(const float *st, ptrdiff_t ld, int kend, int q0, int diag, __m512 vs, __m512 mo)
{
    __m512 mx = mo;
    for (int k = 0; k < kend; k++) {
        __mmask16 km = diag ? causal_lanes(k, q0) : (__mmask16)0xffff;
        __m512 s = _mm512_mul_ps(_mm512_loadu_ps(st + k * ld + q0), vs);
        mx = _mm512_mask_max_ps(mx, km, mx, s); /* the second operand on NaN: a NaN score is kept */
    }
    return mx;
}

/* exp(scale s - mx) of key k for queries [q0, q0 + 16), zero where masked or k >= kend. */
static inline __m512 col_prob(const float *st, ptrdiff_t ld, int k, int kend, int q0, int diag, __m512 vs, __m512 mx)
{
    if (k >= kend) return _mm512_setzero_ps();
    __mmask16 km = diag ? causal_lanes(k, q0) : (__mmask16)0xffff;
    return _mm512_maskz_mov_ps(km, vexp512(_mm512_fmsub_ps(_mm512_loadu_ps(st + k * ld + q0), vs, mx)));
}

void attn_tile_softmax_cols(float *st, ptrdiff_t ld, int nk, int nq, int diag, float scale, float *m, float *l,
                            float *alpha)
{
    const __m512 vs = _mm512_set1_ps(scale);
    for (int q0 = 0; q0 < nq; q0 += 16) {
        const __mmask16 qm = vmask_tail(nq - q0);
        const int kend = diag ? (nk < q0 + 16 ? nk : q0 + 16) : nk;
        const __m512 mo = _mm512_maskz_loadu_ps(qm, m + q0), mx = col_max(st, ld, kend, q0, diag, vs, mo);
        __m512 al = vexp512(_mm512_sub_ps(mo, mx)), sum = _mm512_setzero_ps();
        for (int k = 0; k < nk; k++) {
            __m512 p = col_prob(st, ld, k, kend, q0, diag, vs, mx);
            _mm512_mask_storeu_ps(st + k * ld + q0, qm, p);
            sum = _mm512_add_ps(sum, p);
        }
        _mm512_mask_storeu_ps(l + q0, qm, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(qm, l + q0), al, sum));
        _mm512_mask_storeu_ps(m + q0, qm, mx);
        _mm512_mask_storeu_ps(alpha + q0, qm, al);
    }
}

/* P = exp(ss s - lse) and dS = scale P (dP - D) for keys [k0, k0 + 16) of a row (vs = ss, vg =
 * scale), zero from kend on. */
static inline void row_prob_grad(const float *p, const float *d, int k0, int kend, __m512 vs, __m512 vg, __m512 vl,
                                 __m512 vd, __m512 *e, __m512 *g)
{
    __mmask16 valid = kend > k0 ? vmask_tail(kend - k0) : 0;
    if (!valid) {
        *e = *g = _mm512_setzero_ps();
        return;
    }
    *e = _mm512_maskz_mov_ps(valid, vexp512(_mm512_fmsub_ps(_mm512_loadu_ps(p + k0), vs, vl)));
    *g = _mm512_maskz_mov_ps(valid, _mm512_mul_ps(_mm512_mul_ps(*e, vg), _mm512_sub_ps(_mm512_loadu_ps(d + k0), vd)));
}

void attn_tile_probs_grads(float *P, float *dS, ptrdiff_t ld, int nq, int nk, int diag, float ss, float scale,
                           const float *lse, const float *D)
{
    const __m512 vs = _mm512_set1_ps(ss), vg = _mm512_set1_ps(scale);
    for (int q = 0; q < nq; q++) {
        const int kend = diag ? (nk < q + 1 ? nk : q + 1) : nk;
        const __m512 vl = _mm512_set1_ps(lse[q]), vd = _mm512_set1_ps(D[q]);
        float *p = P + q * ld, *d = dS + q * ld;
        for (int k0 = 0; k0 < nk; k0 += 16) {
            __m512 e, g;
            row_prob_grad(p, d, k0, kend, vs, vg, vl, vd, &e, &g);
            _mm512_mask_storeu_ps(p + k0, vmask_tail(nk - k0), e);
            _mm512_mask_storeu_ps(d + k0, vmask_tail(nk - k0), g);
        }
    }
}

#if ATTN_NATIVE_BF16
/* attn_tile_softmax_cols with P written only as pairs of keys in bf16 (the words P V reads). */
BF16_TARGET static void softmax_cols_pairs_native(const float *st, ptrdiff_t ld, int nk, int nq, int diag, float scale,
                                                  float *m, float *l, float *alpha, uint32_t *pp, ptrdiff_t ldp)
{
    const __m512 vs = _mm512_set1_ps(scale);
    const __m512i idx = _mm512_loadu_si512(interleave_idx);
    for (int q0 = 0; q0 < nq; q0 += 16) {
        const __mmask16 qm = vmask_tail(nq - q0);
        const int kend = diag ? (nk < q0 + 16 ? nk : q0 + 16) : nk;
        const __m512 mo = _mm512_maskz_loadu_ps(qm, m + q0), mx = col_max(st, ld, kend, q0, diag, vs, mo);
        __m512 al = vexp512(_mm512_sub_ps(mo, mx)), sum = _mm512_setzero_ps();
        for (int k = 0; k < nk; k += 2) {
            __m512 p0 = col_prob(st, ld, k, kend, q0, diag, vs, mx),
                   p1 = col_prob(st, ld, k + 1, kend, q0, diag, vs, mx);
            sum = _mm512_add_ps(_mm512_add_ps(sum, p0), p1);
            _mm512_mask_storeu_epi32(pp + k / 2 * ldp + q0, qm, pair_words(idx, p0, p1));
        }
        _mm512_mask_storeu_ps(l + q0, qm, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(qm, l + q0), al, sum));
        _mm512_mask_storeu_ps(m + q0, qm, mx);
        _mm512_mask_storeu_ps(alpha + q0, qm, al);
    }
}

/* attn_tile_probs_grads with P and dS written only as bf16: pairs of queries (P, dS) and rows (dS). */
BF16_TARGET static void probs_grads_pairs_native(const float *S, const float *dP, ptrdiff_t ld, int nq, int nk,
                                                 int diag, float ss, float scale, const float *lse, const float *D,
                                                 uint32_t *pp, uint32_t *dsp, ptrdiff_t ldp, uint32_t *dsb,
                                                 ptrdiff_t ldb)
{
    const __m512 vs = _mm512_set1_ps(ss), vg = _mm512_set1_ps(scale);
    const __m512i idx = _mm512_loadu_si512(interleave_idx);
    for (int q = 0; q < nq; q += 2) {
        const int two = q + 1 < nq;
        const int kend0 = diag ? (nk < q + 1 ? nk : q + 1) : nk,
                  kend1 = two ? (diag ? (nk < q + 2 ? nk : q + 2) : nk) : 0;
        const __m512 vl0 = _mm512_set1_ps(lse[q]), vd0 = _mm512_set1_ps(D[q]);
        const __m512 vl1 = _mm512_set1_ps(two ? lse[q + 1] : 0.0f), vd1 = _mm512_set1_ps(two ? D[q + 1] : 0.0f);
        for (int k0 = 0; k0 < nk; k0 += 16) {
            __m512 e0, g0, e1, g1;
            row_prob_grad(S + q * ld, dP + q * ld, k0, kend0, vs, vg, vl0, vd0, &e0, &g0);
            row_prob_grad(S + (q + 1) * ld, dP + (q + 1) * ld, k0, kend1, vs, vg, vl1, vd1, &e1, &g1);
            const __mmask16 km = vmask_tail(nk - k0);
            const __mmask8 wm = (__mmask8)(mask16_tail((nk - k0 + 1) / 2) & 0xff);
            _mm512_mask_storeu_epi32(pp + q / 2 * ldp + k0, km, pair_words(idx, e0, e1));
            _mm512_mask_storeu_epi32(dsp + q / 2 * ldp + k0, km, pair_words(idx, g0, g1));
            _mm256_mask_storeu_epi32(dsb + q * ldb + k0 / 2, wm, (__m256i)_mm512_cvtneps_pbh(g0));
            if (two) _mm256_mask_storeu_epi32(dsb + (q + 1) * ldb + k0 / 2, wm, (__m256i)_mm512_cvtneps_pbh(g1));
        }
    }
}
#endif
#else
void attn_tile_softmax_cols(float *st, ptrdiff_t ld, int nk, int nq, int diag, float scale, float *m, float *l,
                            float *alpha)
{
    for (int q = 0; q < nq; q++) {
        const int kend = diag ? (nk < q + 1 ? nk : q + 1) : nk;
        float mo = m[q], mx = mo;
        for (int k = 0; k < kend; k++) {
            float s = st[k * ld + q] * scale;
            mx = s > mx || isnan(s) ? s : mx;
        }
        float al = expf(mo - mx), sum = 0.0f;
        for (int k = 0; k < nk; k++) {
            float p = k < kend ? expf(fmaf(st[k * ld + q], scale, -mx)) : 0.0f;
            st[k * ld + q] = p;
            sum += p;
        }
        l[q] = fmaf(l[q], al, sum);
        m[q] = mx;
        alpha[q] = al;
    }
}

void attn_tile_probs_grads(float *P, float *dS, ptrdiff_t ld, int nq, int nk, int diag, float ss, float scale,
                           const float *lse, const float *D)
{
    for (int q = 0; q < nq; q++) {
        const int kend = diag ? (nk < q + 1 ? nk : q + 1) : nk;
        float *p = P + q * ld, *d = dS + q * ld;
        for (int k = 0; k < nk; k++) {
            float e = k < kend ? expf(fmaf(p[k], ss, -lse[q])) : 0.0f;
            d[k] = k < kend ? e * scale * (d[k] - D[q]) : 0.0f;
            p[k] = e;
        }
    }
}
#endif

void attn_tile_softmax_cols_pairs(float *st, ptrdiff_t ld, int nk, int nq, int diag, float scale, float *m, float *l,
                                  float *alpha, uint32_t *pp, ptrdiff_t ldp, int native)
{
#if ATTN_NATIVE_BF16 && defined(__AVX512F__)
    if (native) {
        softmax_cols_pairs_native(st, ld, nk, nq, diag, scale, m, l, alpha, pp, ldp);
        return;
    }
#endif
    attn_tile_softmax_cols(st, ld, nk, nq, diag, scale, m, l, alpha);
    attn_tile_pairs_f32(pp, ldp, st, ld, nk, nq, native);
}

void attn_tile_probs_grads_pairs(float *P, float *dS, ptrdiff_t ld, int nq, int nk, int diag, float ss,
                                 float scale, const float *lse, const float *D, uint32_t *pp, uint32_t *dsp,
                                 ptrdiff_t ldp, uint32_t *dsb, ptrdiff_t ldb, int native)
{
#if ATTN_NATIVE_BF16 && defined(__AVX512F__)
    if (native) {
        probs_grads_pairs_native(P, dS, ld, nq, nk, diag, ss, scale, lse, D, pp, dsp, ldp, dsb, ldb);
        return;
    }
#endif
    attn_tile_probs_grads(P, dS, ld, nq, nk, diag, ss, scale, lse, D);
    attn_tile_pairs_f32(pp, ldp, P, ld, nq, nk, native);
    attn_tile_pairs_f32(dsp, ldp, dS, ld, nq, nk, native);
    attn_tile_rows_f32(dsb, ldb, dS, ld, nq, nk, native);
}

/* The bias in fp32: -slope times the distance (exact: an integer below 2^24), then one FMA. */
void attn_tile_alibi(float *x, ptrdiff_t ld, int rows, int cols, int keys_rows, int diag, float scale, float slope,
                     int dqk)
{
    const float ms = -slope;
    for (int r = 0; r < rows; r++) {
        float *xr = x + r * ld;
        if (keys_rows) { /* row r is key r; columns c >= r on a diagonal tile */
            for (int c = diag ? r : 0; c < cols; c++) xr[c] = fmaf(xr[c], scale, ms * (float)(dqk + c - r));
        } else { /* row r is query r; columns c <= r on a diagonal tile */
            const int end = diag && r + 1 < cols ? r + 1 : cols;
            for (int c = 0; c < end; c++) xr[c] = fmaf(xr[c], scale, ms * (float)(dqk + r - c));
        }
    }
}

void attn_tile_scale_rows(float *x, ptrdiff_t ld, int rows, int cols, const float *f)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) x[r * ld + c] *= f[r];
}

/* ---------------------------------------------------------------- bf16 packings */

#if ATTN_NATIVE_BF16
BF16_TARGET static void pairs_f32_native(uint32_t *dst, ptrdiff_t ld, const float *src, ptrdiff_t lds, int rows,
                                         int cols)
{
    const __m512i idx = _mm512_loadu_si512(interleave_idx);
    for (int p = 0; 2 * p < rows; p++) {
        const float *r0 = src + 2 * p * lds, *r1 = r0 + lds;
        const int pair = 2 * p + 1 < rows;
        for (int c0 = 0; c0 < cols; c0 += 16) {
            __mmask16 k = mask16_tail(cols - c0);
            __m512 a = _mm512_maskz_loadu_ps(k, r0 + c0),
                   b = pair ? _mm512_maskz_loadu_ps(k, r1 + c0) : _mm512_setzero_ps();
            _mm512_mask_storeu_epi32(dst + p * ld + c0, k, pair_words(idx, a, b));
        }
    }
}

BF16_TARGET static void rows_f32_native(uint32_t *dst, ptrdiff_t ld, const float *src, ptrdiff_t lds, int rows,
                                        int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c0 = 0; c0 < cols; c0 += 32) {
            int left = cols - c0;
            __m512 a = _mm512_maskz_loadu_ps(mask16_tail(left), src + r * lds + c0);
            __m512 b = left > 16 ? _mm512_maskz_loadu_ps(mask16_tail(left - 16), src + r * lds + c0 + 16)
                                 : _mm512_setzero_ps();
            _mm512_mask_storeu_epi32(dst + r * ld + c0 / 2, mask16_tail((left + 1) / 2),
                                     (__m512i)_mm512_cvtne2ps_pbh(b, a));
        }
}
#endif

void attn_tile_pairs_f32(uint32_t *dst, ptrdiff_t ld, const float *src, ptrdiff_t lds, int rows, int cols, int native)
{
#if ATTN_NATIVE_BF16
    if (native) {
        pairs_f32_native(dst, ld, src, lds, rows, cols);
        return;
    }
#else
    (void)native;
#endif
    for (int p = 0; 2 * p < rows; p++)
        for (int c = 0; c < cols; c++) {
            bf16 lo = bf16_from_float(src[2 * p * lds + c]);
            bf16 hi = 2 * p + 1 < rows ? bf16_from_float(src[(2 * p + 1) * lds + c]) : 0;
            dst[p * ld + c] = word_of(lo, hi);
        }
}

void attn_tile_rows_f32(uint32_t *dst, ptrdiff_t ld, const float *src, ptrdiff_t lds, int rows, int cols, int native)
{
#if ATTN_NATIVE_BF16
    if (native) {
        rows_f32_native(dst, ld, src, lds, rows, cols);
        return;
    }
#else
    (void)native;
#endif
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c += 2)
            dst[r * ld + c / 2] =
                word_of(bf16_from_float(src[r * lds + c]), c + 1 < cols ? bf16_from_float(src[r * lds + c + 1]) : 0);
}

void attn_tile_rows_bf16(uint32_t *dst, ptrdiff_t ld, const bf16 *src, ptrdiff_t lds, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        memcpy(dst + r * ld, src + r * lds, (size_t)(cols & ~1) * sizeof(bf16));
        if (cols & 1) dst[r * ld + cols / 2] = word_of(src[r * lds + cols - 1], 0);
    }
}

#ifdef __AVX512BW__
void attn_tile_pairs_bf16(uint32_t *dst, ptrdiff_t ld, const bf16 *src, ptrdiff_t lds, int rows, int cols)
{
    static const uint16_t lo_idx[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                        8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    const __m512i ilo = _mm512_loadu_si512(lo_idx), ihi = _mm512_add_epi16(ilo, _mm512_set1_epi16(16));
    for (int p = 0; 2 * p < rows; p++) {
        const bf16 *r0 = src + 2 * p * lds, *r1 = r0 + lds;
        const int pair = 2 * p + 1 < rows;
        for (int c0 = 0; c0 < cols; c0 += 32) {
            int left = cols - c0;
            __mmask32 k = left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1u);
            __m512i a = _mm512_maskz_loadu_epi16(k, r0 + c0);
            __m512i b = pair ? _mm512_maskz_loadu_epi16(k, r1 + c0) : _mm512_setzero_si512();
            _mm512_mask_storeu_epi32(dst + p * ld + c0, vmask_tail(left), _mm512_permutex2var_epi16(a, ilo, b));
            if (left > 16)
                _mm512_mask_storeu_epi32(dst + p * ld + c0 + 16, vmask_tail(left - 16),
                                         _mm512_permutex2var_epi16(a, ihi, b));
        }
    }
}
#else
void attn_tile_pairs_bf16(uint32_t *dst, ptrdiff_t ld, const bf16 *src, ptrdiff_t lds, int rows, int cols)
{
    for (int p = 0; 2 * p < rows; p++)
        for (int c = 0; c < cols; c++)
            dst[p * ld + c] = word_of(src[2 * p * lds + c], 2 * p + 1 < rows ? src[(2 * p + 1) * lds + c] : 0);
}
#endif

/* dst (cols x rows, stride ld) = src (rows x cols, stride lds)^T, 32-bit elements. */
#ifdef __AVX512F__
/* One block of at most 16 x 16: unpack 32-bit then 64-bit pairs within 128-bit lanes, then
 * two rounds of 128-bit lane shuffles; missing rows read as zeros, only rows x cols written. */
static void transpose16(uint32_t *dst, ptrdiff_t ld, const uint32_t *src, ptrdiff_t lds, int rows, int cols)
{
    __m512i r[16], t[16];
    const __mmask16 cm = vmask_tail(cols), rm = vmask_tail(rows);
    for (int i = 0; i < 16; i++) r[i] = i < rows ? _mm512_maskz_loadu_epi32(cm, src + i * lds) : _mm512_setzero_si512();
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) {
        r[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
        r[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
        r[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
        r[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
    }
    /* r[4g + c], 128-bit lane L: column 4L + c of rows 4g .. 4g + 3 */
    for (int c = 0; c < 4; c++) {
        __m512i a0 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x88), a1 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xdd);
        __m512i b0 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x88),
                b1 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xdd);
        t[c] = _mm512_shuffle_i32x4(a0, b0, 0x88);      /* column c */
        t[8 + c] = _mm512_shuffle_i32x4(a0, b0, 0xdd);  /* column 8 + c */
        t[4 + c] = _mm512_shuffle_i32x4(a1, b1, 0x88);  /* column 4 + c */
        t[12 + c] = _mm512_shuffle_i32x4(a1, b1, 0xdd); /* column 12 + c */
    }
    for (int i = 0; i < cols; i++) _mm512_mask_storeu_epi32(dst + i * ld, rm, t[i]);
}

static void transpose32(uint32_t *dst, ptrdiff_t ld, const uint32_t *src, ptrdiff_t lds, int rows, int cols)
{
    for (int r0 = 0; r0 < rows; r0 += 16)
        for (int c0 = 0; c0 < cols; c0 += 16)
            transpose16(dst + c0 * ld + r0, ld, src + r0 * lds + c0, lds, rows - r0 < 16 ? rows - r0 : 16,
                        cols - c0 < 16 ? cols - c0 : 16);
}
#endif

void attn_tile_pairs_t_bf16(uint32_t *dst, ptrdiff_t ld, const bf16 *src, ptrdiff_t lds, int rows, int cols)
{
#ifdef __AVX512F__
    if (cols % 2 == 0 && lds % 2 == 0 && (uintptr_t)src % 4 == 0) {
        /* src read by intrinsics only */
        transpose32(dst, ld, (const uint32_t *)(const void *)src, lds / 2, rows, cols / 2);
        return;
    }
#endif
    for (int p = 0; 2 * p < cols; p++)
        for (int r = 0; r < rows; r++)
            dst[p * ld + r] = word_of(src[r * lds + 2 * p], 2 * p + 1 < cols ? src[r * lds + 2 * p + 1] : 0);
}

void attn_tile_transpose(float *dst, ptrdiff_t ld, const float *src, ptrdiff_t lds, int rows, int cols)
{
#ifdef __AVX512F__
    transpose32((uint32_t *)(void *)dst, ld, (const uint32_t *)(const void *)src, lds, rows, cols);
#else
    for (int c = 0; c < cols; c++)
        for (int r = 0; r < rows; r++) dst[c * ld + r] = src[r * lds + c];
#endif
}

void attn_tile_rowdot(float *D, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const float *x = a + r * lda, *y = b + r * ldb;
#ifdef __AVX512F__
        __m512 s = _mm512_setzero_ps();
        for (int c = 0; c < cols; c += 16) {
            __mmask16 k = vmask_tail(cols - c);
            s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, x + c), _mm512_maskz_loadu_ps(k, y + c), s);
        }
        D[r] = _mm512_reduce_add_ps(s);
#else
        float s = 0.0f;
        for (int c = 0; c < cols; c++) s = fmaf(x[c], y[c], s);
        D[r] = s;
#endif
    }
}

void attn_tile_rowdot_bf16(float *D, const uint32_t *a, ptrdiff_t lda, const bf16 *b, ptrdiff_t ldb, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const uint32_t *x = a + r * lda;
        const bf16 *y = b + r * ldb;
#if defined(__AVX512F__) && defined(__AVX512BW__)
        const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
        __m512 s = _mm512_setzero_ps();
        for (int c = 0; c < cols; c += 32) {
            int left = cols - c;
            __mmask32 k = left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1u);
            __m512i u = _mm512_maskz_loadu_epi16(k, x + c / 2), w = _mm512_maskz_loadu_epi16(k, y + c);
            s = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(u, hi)),
                                _mm512_castsi512_ps(_mm512_and_si512(w, hi)), s);
            s = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(u, 16)),
                                _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)), s);
        }
        D[r] = _mm512_reduce_add_ps(s);
#else
        float s = 0.0f;
        for (int c = 0; c < cols; c++) s = fmaf(c % 2 ? word_hi(x[c / 2]) : word_lo(x[c / 2]), bf16_to_float(y[c]), s);
        D[r] = s;
#endif
    }
}
