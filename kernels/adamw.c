#include "adamw.h"

#include <math.h>
#include <stdint.h>

#include "vmath.h"

/* Elements per scheduling block: 16 KiB of each array, a whole number of 16-lane steps. */
#define ADAMW_BLOCK 4096

/* The update's constants, computed once per call exactly as the scalar formula uses them. */
typedef struct {
    float b1, b2, one_b1, one_b2, lr, eps, wd, gs, c1, c2;
} adamw_consts;

static adamw_consts adamw_setup(const adamw_params *hp, int t)
{
    adamw_consts k = {hp->beta1, hp->beta2, 1.0f - hp->beta1, 1.0f - hp->beta2, hp->lr, hp->eps, hp->weight_decay,
                      hp->grad_scale != 0.0f ? hp->grad_scale : 1.0f, 0, 0};
    k.c1 = 1.0f / (float)(1.0 - pow((double)hp->beta1, t));
    k.c2 = 1.0f / (float)(1.0 - pow((double)hp->beta2, t));
    return k;
}

#if defined(__AVX512F__) && defined(VMATH_BF16)
/* Software prefetch 4 KiB ahead in each of the four streams read: with the hardware prefetcher
 * alone the loop ran at 40% of this speed from memory on one core (Zen 5, measured), more so when
 * another process shared the memory bus. */
#define PREFETCH(p) _mm_prefetch((const char *)(p) + 4096, _MM_HINT_T0)

/* Elements [a, b) of the update, 16 per step (a masked step for the tail). Every operation is
 * one IEEE-rounded single-precision operation in the order of the scalar formula (vsqrtps and
 * vdivps are correctly rounded, no fused multiply-adds), so each lane's result is bit for bit
 * what the scalar loop below gives. Returns the count of non-finite weights written (p - p is
 * NaN exactly for them: one subtraction and compare a step, free in this memory-bound loop). */
static inline __attribute__((always_inline)) size_t adamw_span(float *params, const float *grads, float *m, float *v,
                                                             size_t a, size_t b, const adamw_consts *k)
{
    const __m512 b1 = _mm512_set1_ps(k->b1), b2 = _mm512_set1_ps(k->b2), ob1 = _mm512_set1_ps(k->one_b1),
                 ob2 = _mm512_set1_ps(k->one_b2), lr = _mm512_set1_ps(k->lr), eps = _mm512_set1_ps(k->eps),
                 wd = _mm512_set1_ps(k->wd), gs = _mm512_set1_ps(k->gs), c1 = _mm512_set1_ps(k->c1),
                 c2 = _mm512_set1_ps(k->c2);
    size_t bad = 0;
    for (size_t i = a; i < b; i += 16) {
        __mmask16 mk = vmask_tail((long)(b - i));
        PREFETCH(grads + i), PREFETCH(m + i), PREFETCH(v + i), PREFETCH(params + i);
        __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, grads + i), gs);
        __m512 mi = _mm512_add_ps(_mm512_mul_ps(b1, _mm512_maskz_loadu_ps(mk, m + i)), _mm512_mul_ps(ob1, g));
        __m512 vi =
            _mm512_add_ps(_mm512_mul_ps(b2, _mm512_maskz_loadu_ps(mk, v + i)), _mm512_mul_ps(_mm512_mul_ps(ob2, g), g));
        _mm512_mask_storeu_ps(m + i, mk, mi);
        _mm512_mask_storeu_ps(v + i, mk, vi);
        __m512 p = _mm512_maskz_loadu_ps(mk, params + i);
        __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(vi, c2)), eps);
        __m512 step = _mm512_add_ps(_mm512_div_ps(_mm512_mul_ps(mi, c1), den), _mm512_mul_ps(wd, p));
        p = _mm512_sub_ps(p, _mm512_mul_ps(lr, step));
        _mm512_mask_storeu_ps(params + i, mk, p);
        const __m512 z = _mm512_sub_ps(p, p); /* 0, or NaN where p is not finite */
        bad += (size_t)__builtin_popcount(_mm512_mask_cmp_ps_mask(mk, z, z, _CMP_UNORD_Q));
    }
    return bad;
}
#else
static inline size_t adamw_span(float *params, const float *grads, float *m, float *v, size_t a, size_t b,
                                const adamw_consts *k)
{
    size_t bad = 0;
    for (size_t i = a; i < b; i++) {
        float g = grads[i] * k->gs;
        float mi = k->b1 * m[i] + k->one_b1 * g;
        float vi = k->b2 * v[i] + k->one_b2 * g * g;
        m[i] = mi;
        v[i] = vi;
        params[i] -= k->lr * ((mi * k->c1) / (sqrtf(vi * k->c2) + k->eps) + k->wd * params[i]);
        bad += !isfinite(params[i]);
    }
    return bad;
}
#endif

/* Blocks of ADAMW_BLOCK elements, one contiguous run of them per thread (static schedule). */
size_t adamw_update(float *params, const float *grads, float *m, float *v, size_t n, const adamw_params *hp, int t)
{
    const adamw_consts k = adamw_setup(hp, t);
    const long nblk = (long)((n + ADAMW_BLOCK - 1) / ADAMW_BLOCK);
    if (nblk <= 1) return adamw_span(params, grads, m, v, 0, n, &k);
    size_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
    for (long blk = 0; blk < nblk; blk++) {
        size_t a = (size_t)blk * ADAMW_BLOCK, b = a + ADAMW_BLOCK < n ? a + ADAMW_BLOCK : n;
        bad += adamw_span(params, grads, m, v, a, b, &k);
    }
    return bad;
}

/* ---------------------------------------------------------------- full bf16 */

/* One element of the full-bf16 update (the scalar definition; rb: the element's 64 hash bits).
 * Returns 1 when the weight written is not finite. */
static inline int full_bf16_one(bf16 *p, float *p32, const float *grads, bf16 *m, bf16 *v, size_t i,
                                 const adamw_consts *k, int sr, uint64_t rb)
{
    float g =
        bf16_to_float(sr ? bf16_from_float_sr(grads[i], (uint32_t)rb & 0xffffu) : bf16_from_float(grads[i])) * k->gs;
    float mi = k->b1 * bf16_to_float(m[i]) + k->one_b1 * g;
    float vi = k->b2 * bf16_to_float(v[i]) + k->one_b2 * g * g;
    float pp = bf16_to_float(p[i]);
    pp -= k->lr * ((mi * k->c1) / (sqrtf(vi * k->c2) + k->eps) + k->wd * pp);
    m[i] = sr ? bf16_from_float_sr(mi, (uint32_t)(rb >> 32) & 0xffffu) : bf16_from_float(mi);
    v[i] = sr ? bf16_from_float_sr(vi, (uint32_t)(rb >> 16) & 0xffffu) : bf16_from_float(vi);
    p[i] = sr ? bf16_from_float_sr(pp, (uint32_t)(rb >> 48)) : bf16_from_float(pp);
    if (p32) p32[i] = bf16_to_float(p[i]);
    return (p[i] & 0x7f80u) == 0x7f80u;
}

size_t adamw_update_full_bf16_ref(bf16 *p, float *p32, const float *grads, bf16 *m, bf16 *v, size_t n,
                                  const adamw_params *hp, int t, const adamw_rounding *r)
{
    const adamw_consts k = adamw_setup(hp, t);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += (size_t)full_bf16_one(p, p32, grads, m, v, i, &k, r->stochastic,
                                     r->stochastic ? bf16_sr_hash(r->seed, (uint64_t)t, r->offset + i) : 0);
    return bad;
}

#if defined(__AVX512F__) && defined(VMATH_SR)
/* Rounds 16 lanes to bf16: to nearest, or stochastically with the 16 random bits in each lane of rb. */
static inline __m256i full_narrow(__m512 x, int sr, __m512i rb)
{
    return sr ? vbf16_narrow512_sr(x, rb) : vbf16_narrow512(x);
}

/* Elements [a, b): 16 a step, each lane bit for bit full_bf16_one; the count of non-finite
 * weights written (exponent all ones in the bf16 result). */
static size_t full_bf16_span(bf16 *p, float *p32, const float *grads, bf16 *m, bf16 *v, size_t a, size_t b,
                           const adamw_consts *k, int sr, uint64_t key, uint64_t offset)
{
    const __m512 b1 = _mm512_set1_ps(k->b1), b2 = _mm512_set1_ps(k->b2), ob1 = _mm512_set1_ps(k->one_b1),
                 ob2 = _mm512_set1_ps(k->one_b2), lr = _mm512_set1_ps(k->lr), eps = _mm512_set1_ps(k->eps),
                 wd = _mm512_set1_ps(k->wd), gs = _mm512_set1_ps(k->gs), c1 = _mm512_set1_ps(k->c1),
                 c2 = _mm512_set1_ps(k->c2);
    const __m512i low = _mm512_set1_epi32(0xffff);
    const __m256i expo = _mm256_set1_epi16(0x7f80);
    __m512i h1 = _mm512_setzero_si512(), h2 = h1;
    size_t bad = 0;
    for (size_t i = a; i < b; i += 16) {
        const uint64_t at = offset + i;
        if (sr && (uint32_t)at > 0xfffffff0u) { /* the 16 indices cross a multiple of 2^32: one at a time */
            for (size_t j = i; j < b && j < i + 16; j++)
                bad += (size_t)full_bf16_one(p, p32, grads, m, v, j, k, 1, bf16_sr_hash_k(key, offset + j));
            continue;
        }
        __mmask16 mk = vmask_tail((long)(b - i));
        PREFETCH(grads + i), PREFETCH(m + i), PREFETCH(v + i), PREFETCH(p + i);
        if (sr) vsr_hash16(key, at, &h1, &h2);
        __m512 g = vbf16_widen512(full_narrow(_mm512_maskz_loadu_ps(mk, grads + i), sr, _mm512_and_si512(h1, low)));
        g = _mm512_mul_ps(g, gs);
        __m512 mi = _mm512_add_ps(_mm512_mul_ps(b1, vbf16_load512(m + i, (long)(b - i))), _mm512_mul_ps(ob1, g));
        __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2, vbf16_load512(v + i, (long)(b - i))),
                                  _mm512_mul_ps(_mm512_mul_ps(ob2, g), g));
        __m512 pp = vbf16_load512(p + i, (long)(b - i));
        __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(vi, c2)), eps);
        __m512 step = _mm512_add_ps(_mm512_div_ps(_mm512_mul_ps(mi, c1), den), _mm512_mul_ps(wd, pp));
        pp = _mm512_sub_ps(pp, _mm512_mul_ps(lr, step));
        _mm256_mask_storeu_epi16(m + i, mk, full_narrow(mi, sr, _mm512_and_si512(h2, low)));
        _mm256_mask_storeu_epi16(v + i, mk, full_narrow(vi, sr, _mm512_srli_epi32(h1, 16)));
        __m256i ph = full_narrow(pp, sr, _mm512_srli_epi32(h2, 16));
        _mm256_mask_storeu_epi16(p + i, mk, ph);
        if (p32) _mm512_mask_storeu_ps(p32 + i, mk, vbf16_widen512(ph));
        bad += (size_t)__builtin_popcount(_mm256_mask_cmpeq_epi16_mask(mk, _mm256_and_si256(ph, expo), expo));
    }
    return bad;
}
#else
static size_t full_bf16_span(bf16 *p, float *p32, const float *grads, bf16 *m, bf16 *v, size_t a, size_t b,
                             const adamw_consts *k, int sr, uint64_t key, uint64_t offset)
{
    size_t bad = 0;
    for (size_t i = a; i < b; i++)
        bad += (size_t)full_bf16_one(p, p32, grads, m, v, i, k, sr, sr ? bf16_sr_hash_k(key, offset + i) : 0);
    return bad;
}
#endif

size_t adamw_update_full_bf16(bf16 *p, float *p32, const float *grads, bf16 *m, bf16 *v, size_t n,
                              const adamw_params *hp, int t, const adamw_rounding *r)
{
    const adamw_consts k = adamw_setup(hp, t);
    const uint64_t key = bf16_sr_key(r->seed, (uint64_t)t);
    const long nblk = (long)((n + ADAMW_BLOCK - 1) / ADAMW_BLOCK);
    size_t bad = 0;
#pragma omp parallel for schedule(static) if (nblk > 1) reduction(+ : bad)
    for (long blk = 0; blk < nblk; blk++) {
        size_t a = (size_t)blk * ADAMW_BLOCK, b = a + ADAMW_BLOCK < n ? a + ADAMW_BLOCK : n;
        bad += full_bf16_span(p, p32, grads, m, v, a, b, &k, r->stochastic, key, r->offset);
    }
    return bad;
}

void adamw_update_ref(double *params, const double *grads, double *m, double *v, size_t n, const adamw_params *hp,
                      int t)
{
    const double gs = hp->grad_scale != 0.0f ? hp->grad_scale : 1.0;
    for (size_t i = 0; i < n; i++) {
        double g = grads[i] * gs;
        m[i] = hp->beta1 * m[i] + (1.0 - hp->beta1) * g;
        v[i] = hp->beta2 * v[i] + (1.0 - hp->beta2) * g * g;
        double mh = m[i] / (1.0 - pow(hp->beta1, t)), vh = v[i] / (1.0 - pow(hp->beta2, t));
        params[i] -= hp->lr * (mh / (sqrt(vh) + hp->eps) + hp->weight_decay * params[i]);
    }
}

/* Sum of squares of g[a, b) in double, in a fixed order: 32 accumulators (four 8-lane vectors)
 * then the scalar tail, combined in lane order. */
static double sumsq_span(const float *g, size_t a, size_t b)
{
    double acc[32] = {0};
    size_t i = a;
#ifdef __AVX512F__
    __m512d v[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
    for (; i + 32 <= b; i += 32)
        for (int j = 0; j < 4; j++) {
            __m512d x = _mm512_cvtps_pd(_mm256_loadu_ps(g + i + 8 * j));
            v[j] = _mm512_fmadd_pd(x, x, v[j]);
        }
    for (int j = 0; j < 4; j++) _mm512_storeu_pd(acc + 8 * j, v[j]);
#endif
    for (; i < b; i++) acc[i % 32] += (double)g[i] * (double)g[i];
    double s = 0;
    for (int j = 0; j < 32; j++) s += acc[j];
    return s;
}

/* 64 fixed chunks (whatever the thread count), their sums added in order: the same bits on any
 * number of threads, and vectorised (an OpenMP double reduction is neither: one dependent add
 * per element ran at a third of the memory bandwidth). */
#define SUMSQ_CHUNKS 64
double grad_sumsq(const float *g, size_t n)
{
    double part[SUMSQ_CHUNKS];
    const size_t per = (n + SUMSQ_CHUNKS - 1) / SUMSQ_CHUNKS;
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int c = 0; c < SUMSQ_CHUNKS; c++) {
        size_t a = (size_t)c * per < n ? (size_t)c * per : n, b = a + per < n ? a + per : n;
        part[c] = sumsq_span(g, a, b);
    }
    double s = 0;
    for (int c = 0; c < SUMSQ_CHUNKS; c++) s += part[c];
    return s;
}
