/* bf16.h: the bfloat16 storage type and its conversions (hand-written: no Debian library offers
 * them as plain C). bf16 is the upper half of an IEEE fp32: widening is exact; narrowing rounds
 * to nearest, ties to even, and keeps NaN a NaN (quiet) and infinities infinite. Where the CPU
 * has AVX512_BF16 the narrowing uses vcvtneps2bf16 (same rounding; it treats fp32 subnormal
 * inputs as zero, so a value below 1.2e-38 may narrow to 0 instead of to a bf16 subnormal). */
#ifndef CB_BF16_H
#define CB_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint16_t bf16;

static inline float bf16_to_float(bf16 h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline bf16 bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (bf16)((u >> 16) | 0x0040u); /* NaN stays NaN (quiet) */
    u += 0x7fffu + ((u >> 16) & 1u);                                         /* round to nearest even */
    return (bf16)(u >> 16);
}

/* Narrow n floats (round to nearest even, NaN kept); parallel over OpenMP threads when large. */
void bf16_from_floats(bf16 *dst, const float *src, size_t n);
/* Widen n bf16 values (exact). */
void bf16_to_floats(float *dst, const bf16 *src, size_t n);
/* Narrow a (rows x cols) block with row strides (elements) ld_src and ld_dst. */
void bf16_from_floats_2d(bf16 *dst, size_t ld_dst, const float *src, size_t ld_src, int rows, int cols);
/* Round n floats in place to the nearest bf16 value (what a bf16 store and reload would give). */
void bf16_round_floats(float *x, size_t n);
/* Stochastic rounding (full-bf16 training's update, as Trainium rounds it): |x| is rounded up with
 * probability equal to the discarded low 16 bits as a fraction of a bf16 ulp, so E[result] = x.
 * The random bits come from a counter-based hash of (seed, step, offset + i): the result depends
 * neither on the thread count nor on how a tensor is split across calls or ranks (offset: the
 * index of src[0] in the whole tensor). NaN stays NaN (quiet), infinities stay infinite, and a
 * finite value never rounds up to infinity (it stays at the largest finite bf16). */
void bf16_from_floats_sr(bf16 *dst, const float *src, size_t n, uint64_t seed, uint64_t step, uint64_t offset);
/* The counter-based hash behind stochastic rounding: 64 random bits for element `index` of a
 * tensor at `step`. A key per (seed, step), splitmix64's finaliser of seed*K0 ^ (step+A1)*K1;
 * then per element two 32-bit hashes (lowbias32, a 32-bit finaliser with near-ideal avalanche)
 * of x = lo(index) ^ hi(index)*0x9e3779b9: h1 = lowbias32(x ^ lo(key)), h2 = lowbias32(h1 +
 * hi(key)); the result is h2 << 32 | h1. 32-bit lanes keep it cheap to vectorise (vmath.h). */
#define BF16_SR_K0 0x9e3779b97f4a7c15ULL
#define BF16_SR_K1 0xbf58476d1ce4e5b9ULL
#define BF16_SR_K2 0x94d049bb133111ebULL
#define BF16_SR_A1 0x632be59bd9b4e019ULL
static inline uint64_t bf16_sr_key(uint64_t seed, uint64_t step)
{
    uint64_t z = seed * BF16_SR_K0 ^ (step + BF16_SR_A1) * BF16_SR_K1;
    z ^= z >> 30, z *= BF16_SR_K1;
    z ^= z >> 27, z *= BF16_SR_K2;
    return z ^ (z >> 31);
}
static inline uint32_t bf16_sr_mix32(uint32_t x)
{
    x ^= x >> 16, x *= 0x7feb352du;
    x ^= x >> 15, x *= 0x846ca68bu;
    return x ^ (x >> 16);
}
static inline uint64_t bf16_sr_hash_k(uint64_t key, uint64_t index)
{
    uint32_t x = (uint32_t)index ^ (uint32_t)(index >> 32) * 0x9e3779b9u;
    uint32_t h1 = bf16_sr_mix32(x ^ (uint32_t)key), h2 = bf16_sr_mix32(h1 + (uint32_t)(key >> 32));
    return (uint64_t)h2 << 32 | h1;
}
uint64_t bf16_sr_hash(uint64_t seed, uint64_t step, uint64_t index);
/* The 16 random bits stochastic rounding adds below the bf16 mantissa for element `index`: the
 * hash's top 16 bits. (The full-bf16 AdamW update, adamw.h, takes its four roundings of one
 * element from the hash's four 16-bit fields.) */
uint32_t bf16_sr_bits(uint64_t seed, uint64_t step, uint64_t index);
static inline bf16 bf16_from_float_sr(float f, uint32_t rbits)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) return bf16_from_float(f); /* NaN (quiet) and infinities as they are */
    uint32_t r = (u + (rbits & 0xffffu)) >> 16;
    if ((r & 0x7f80u) == 0x7f80u) r = (u >> 16 & 0x8000u) | 0x7f7fu; /* no rounding up into infinity */
    return (bf16)r;
}

/* 1 when this CPU has AVX512_BF16 (vcvtneps2bf16, vdpbf16ps). */
int bf16_cpu_native(void);

#endif
