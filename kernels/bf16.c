#include "bf16.h"

#include <immintrin.h>

#define PAR_MIN 65536 /* below this many elements one thread is faster than waking the pool */

int bf16_cpu_native(void)
{
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx512bf16") ? 1 : 0;
    }
    return cached;
}

__attribute__((target("avx512f,avx512bf16,avx512vl"))) static void narrow_native(bf16 *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + i));
        _mm256_storeu_si256((__m256i *)(dst + i), (__m256i)h);
    }
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, src + i));
        _mm256_mask_storeu_epi16(dst + i, k, (__m256i)h);
    }
}

static void narrow_scalar(bf16 *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = bf16_from_float(src[i]);
}

static void narrow(bf16 *dst, const float *src, size_t n)
{
    if (bf16_cpu_native()) narrow_native(dst, src, n);
    else narrow_scalar(dst, src, n);
}

static void widen(float *dst, const bf16 *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)src[i] << 16;
        memcpy(dst + i, &u, sizeof u);
    }
}

/* Large arrays in chunks over the OpenMP threads; below PAR_MIN on the calling thread. f converts
 * n elements from src to dst (dst_eb and src_eb bytes an element). */
#define CHUNK 16384

static void by_chunks(void (*f)(void *, const void *, size_t), void *dst, size_t dst_eb, const void *src,
                      size_t src_eb, size_t n)
{
    long nchunks = (long)((n + CHUNK - 1) / CHUNK);
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (long c = 0; c < nchunks; c++) {
        size_t a = (size_t)c * CHUNK;
        f((char *)dst + a * dst_eb, (const char *)src + a * src_eb, a + CHUNK < n ? CHUNK : n - a);
    }
}

static void narrow_span(void *dst, const void *src, size_t n) { narrow(dst, src, n); }
static void widen_span(void *dst, const void *src, size_t n) { widen(dst, src, n); }

void bf16_from_floats(bf16 *dst, const float *src, size_t n)
{
    by_chunks(narrow_span, dst, sizeof(bf16), src, sizeof(float), n);
}

void bf16_to_floats(float *dst, const bf16 *src, size_t n)
{
    by_chunks(widen_span, dst, sizeof(float), src, sizeof(bf16), n);
}

void bf16_from_floats_2d(bf16 *dst, size_t ld_dst, const float *src, size_t ld_src, int rows, int cols)
{
    if ((size_t)rows * (size_t)cols < PAR_MIN) {
        for (int r = 0; r < rows; r++) narrow(dst + (size_t)r * ld_dst, src + (size_t)r * ld_src, (size_t)cols);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) narrow(dst + (size_t)r * ld_dst, src + (size_t)r * ld_src, (size_t)cols);
}

void bf16_round_floats(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = bf16_to_float(bf16_from_float(x[i]));
}

uint64_t bf16_sr_hash(uint64_t seed, uint64_t step, uint64_t index)
{
    return bf16_sr_hash_k(bf16_sr_key(seed, step), index);
}

uint32_t bf16_sr_bits(uint64_t seed, uint64_t step, uint64_t index)
{
    return (uint32_t)(bf16_sr_hash(seed, step, index) >> 48);
}

void bf16_from_floats_sr(bf16 *dst, const float *src, size_t n, uint64_t seed, uint64_t step, uint64_t offset)
{
    const uint64_t key = bf16_sr_key(seed, step);
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_from_float_sr(src[i], (uint32_t)(bf16_sr_hash_k(key, offset + i) >> 48));
}
