#include "rope.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vmath.h"
#include "../common/presets.h"

int rope_rotary_dims(int HS, double rotary_pct) { return rotary_dims_of(HS, rotary_pct); }

int rope_kv_heads(const rope_shape *s) { return s->kvh > 0 ? s->kvh : s->NH; }

size_t rope_qkv_per_token(const rope_shape *s) { return ((size_t)s->NH + 2 * (size_t)rope_kv_heads(s)) * (size_t)s->HS; }

size_t rope_qkv_offset(const rope_shape *s, int b, int t, int which, int head)
{
    const int kvh = rope_kv_heads(s), G = s->NH / kvh;
    const int g = which == 0 ? head / G : head, j = which == 0 ? head % G : G + which - 1;
    return ((size_t)b * s->T + (size_t)t) * rope_qkv_per_token(s) + ((size_t)g * (G + 2) + (size_t)j) * s->HS;
}

size_t rope_tables_floats(int T, int r, int HS)
{
    return (size_t)T * ((size_t)r /* half cos+sin */ + 2 * (size_t)r + 2 * (size_t)HS);
}

void rope_tables_init(rope_tables *tb, float *storage, int T, int r, int HS, double base)
{
    int h = r / 2;
    tb->T = T;
    tb->r = r;
    tb->HS = HS;
    tb->cos_half = storage;
    tb->sin_half = tb->cos_half + (size_t)T * h;
    tb->cos_r = tb->sin_half + (size_t)T * h;
    tb->sin_r = tb->cos_r + (size_t)T * r;
    tb->cos_full = tb->sin_r + (size_t)T * r;
    tb->sin_full = tb->cos_full + (size_t)T * HS;
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < h; i++) {
            double inv_freq = pow(base, -2.0 * i / (double)r);
            double a = (double)t * inv_freq;
            float c = (float)cos(a), sn = (float)sin(a);
            tb->cos_half[(size_t)t * h + i] = c;
            tb->sin_half[(size_t)t * h + i] = sn;
            tb->cos_r[(size_t)t * r + i] = c;
            tb->cos_r[(size_t)t * r + i + h] = c;
            tb->sin_r[(size_t)t * r + i] = sn;
            tb->sin_r[(size_t)t * r + i + h] = sn;
            tb->cos_full[(size_t)t * HS + i] = c;
            tb->cos_full[(size_t)t * HS + i + h] = c;
            tb->sin_full[(size_t)t * HS + i] = sn;
            tb->sin_full[(size_t)t * HS + i + h] = sn;
        }
        for (int d = r; d < HS; d++) {
            tb->cos_full[(size_t)t * HS + d] = 1.0f;
            tb->sin_full[(size_t)t * HS + d] = 0.0f;
        }
    }
}

/* ---------------------------------------------------------------- reference (Hugging Face) */

/* Index helpers: temporaries are (B, NH, T, w) contiguous; qkv is (B, T, NH, 3*HS). */
#define ROWS(s) ((size_t)(s)->B * (size_t)(s)->NH * (size_t)(s)->T)

static inline size_t src_off(const rope_shape *s, size_t row, int which)
{
    /* row enumerates (b, head, t) in (B, NH, T) order */
    size_t t = row % (size_t)s->T, bh = row / (size_t)s->T;
    size_t hh = bh % (size_t)s->NH, b = bh / (size_t)s->NH;
    return ((b * (size_t)s->T + t) * (size_t)s->NH + hh) * 3 * (size_t)s->HS + (size_t)which * (size_t)s->HS;
}

/* Software prefetch. Every variant walks qkv with a stride of 3 NH HS elements, reading or
 * writing a few lines per head per token: too scattered for the hardware prefetcher, which left
 * the fused kernel at a fifth of its prefetched speed on one Zen 5 core (measured). So each pass
 * over qkv fetches the lines it will touch PF_AHEAD rows (or tokens) ahead, in all three
 * variants alike, so that they differ by the passes and bytes they need and not by luck. */
#define PF_AHEAD 2
static inline void prefetch_bytes(const void *p, size_t bytes)
{
    const uintptr_t end = (uintptr_t)p + bytes;
    for (uintptr_t a = (uintptr_t)p & ~(uintptr_t)63; a < end; a += 64) __builtin_prefetch((const void *)a, 1, 3);
}

/* Elements [first, first + n) of block `which` of row i + PF_AHEAD (elements of eb bytes). */
static inline void prefetch_row(const void *qkv, size_t eb, const rope_shape *s, long i, long rows, int which, int first,
                                int n)
{
    if (i + PF_AHEAD < rows)
        prefetch_bytes((const char *)qkv + (src_off(s, (size_t)(i + PF_AHEAD), which) + (size_t)first) * eb, (size_t)n * eb);
}

size_t rope_ref_scratch_floats(const rope_shape *s)
{
    size_t h = (size_t)s->r / 2, r = (size_t)s->r;
    return ROWS(s) * (h + 4 * r);
}

/* One tensor (q: which=0, k: which=1). Each loop is one torch op over the whole tensor. */
static void ref_forward_one(float *out, const float *qkv, const rope_shape *s, const rope_tables *tb, float *scratch,
                            int which)
{
    const long rows = (long)ROWS(s);
    const int r = s->r, h = r / 2, HS = s->HS, T = s->T;
    float *neg = scratch, *half = neg + ROWS(s) * h, *a = half + ROWS(s) * r, *bb = a + ROWS(s) * r,
          *emb = bb + ROWS(s) * r;
    /* x2 = x[..., h:r]; neg = -x2 */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *x = qkv + src_off(s, (size_t)i, which);
        prefetch_row(qkv, sizeof(float), s, i, rows, which, h, h);
        for (int d = 0; d < h; d++) neg[(size_t)i * h + d] = -x[h + d];
    }
    /* half = cat(neg, x1) */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *x = qkv + src_off(s, (size_t)i, which);
        prefetch_row(qkv, sizeof(float), s, i, rows, which, 0, h);
        for (int d = 0; d < h; d++) half[(size_t)i * r + d] = neg[(size_t)i * h + d];
        for (int d = 0; d < h; d++) half[(size_t)i * r + h + d] = x[d];
    }
    /* a = x[..., :r] * cos */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *x = qkv + src_off(s, (size_t)i, which), *c = tb->cos_r + (size_t)(i % T) * r;
        prefetch_row(qkv, sizeof(float), s, i, rows, which, 0, r);
        for (int d = 0; d < r; d++) a[(size_t)i * r + d] = x[d] * c[d];
    }
    /* b = half * sin */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *sn = tb->sin_r + (size_t)(i % T) * r;
        for (int d = 0; d < r; d++) bb[(size_t)i * r + d] = half[(size_t)i * r + d] * sn[d];
    }
    /* emb = a + b */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows * r; i++) emb[i] = a[i] + bb[i];
    /* out = cat(emb, x[..., r:]) */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *x = qkv + src_off(s, (size_t)i, which);
        float *o = out + (size_t)i * HS;
        prefetch_row(qkv, sizeof(float), s, i, rows, which, r, HS - r);
        memcpy(o, emb + (size_t)i * r, (size_t)r * sizeof(float));
        memcpy(o + r, x + r, (size_t)(HS - r) * sizeof(float));
    }
}

void rope_forward_ref(float *q_out, float *k_out, const float *qkv, const rope_shape *s, const rope_tables *tb,
                      float *scratch)
{
    ref_forward_one(q_out, qkv, s, tb, scratch, 0);
    ref_forward_one(k_out, qkv, s, tb, scratch, 1);
}

/* The ops autograd runs for the forward above, each over a materialised temporary
 * (the zero-filled tensors of slice-backward are not modelled: this is a lower bound). */
static void ref_backward_one(float *dqkv, const float *dy, const rope_shape *s, const rope_tables *tb, float *scratch,
                             int which)
{
    const long rows = (long)ROWS(s);
    const int r = s->r, h = r / 2, HS = s->HS, T = s->T;
    float *dhalf = scratch, *dxr1 = dhalf + ROWS(s) * r, *dx2 = dxr1 + ROWS(s) * r, *cat = dx2 + ROWS(s) * h,
          *g = cat + ROWS(s) * r;
    /* mul-by-sin backward: dhalf = demb * sin */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *sn = tb->sin_r + (size_t)(i % T) * r, *d = dy + (size_t)i * HS;
        for (int k = 0; k < r; k++) dhalf[(size_t)i * r + k] = d[k] * sn[k];
    }
    /* mul-by-cos backward: dxr1 = demb * cos */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *c = tb->cos_r + (size_t)(i % T) * r, *d = dy + (size_t)i * HS;
        for (int k = 0; k < r; k++) dxr1[(size_t)i * r + k] = d[k] * c[k];
    }
    /* neg backward on dhalf[..., :h] */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++)
        for (int k = 0; k < h; k++) dx2[(size_t)i * h + k] = -dhalf[(size_t)i * r + k];
    /* cat backward + slice backward: cat(dhalf[..., h:], dx2) */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        for (int k = 0; k < h; k++) cat[(size_t)i * r + k] = dhalf[(size_t)i * r + h + k];
        for (int k = 0; k < h; k++) cat[(size_t)i * r + h + k] = dx2[(size_t)i * h + k];
    }
    /* gradient accumulation of the two paths into x[..., :r] */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows * r; i++) g[i] = dxr1[i] + cat[i];
    /* concatenate with the pass-through gradient into the qkv layout */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        float *dx = dqkv + src_off(s, (size_t)i, which);
        prefetch_row(dqkv, sizeof(float), s, i, rows, which, 0, HS);
        memcpy(dx, g + (size_t)i * r, (size_t)r * sizeof(float));
        memcpy(dx + r, dy + (size_t)i * HS + r, (size_t)(HS - r) * sizeof(float));
    }
}

void rope_backward_ref(float *dqkv, const float *dq_out, const float *dk_out, const rope_shape *s,
                       const rope_tables *tb, float *scratch)
{
    ref_backward_one(dqkv, dq_out, s, tb, scratch, 0);
    ref_backward_one(dqkv, dk_out, s, tb, scratch, 1);
}

/* ---------------------------------------------------------------- zero-frequency (whole head) */

/* out[d] = x[d] * C[d] + R(x)[d] * S[d] over all HS dims, with R(x) = (-x[h:r], x[0:h], x[r:HS])
 * and (C, S) = (1, 0) on the pass-through dims. */
static inline void zf_head_forward(float *restrict o, const float *restrict x, const float *restrict C,
                                   const float *restrict S, int r, int HS)
{
    const int h = r / 2;
    for (int d = 0; d < h; d++) o[d] = x[d] * C[d] - x[d + h] * S[d];
    for (int d = h; d < r; d++) o[d] = x[d] * C[d] + x[d - h] * S[d];
    for (int d = r; d < HS; d++) o[d] = x[d] * C[d] + x[d] * S[d];
}

/* dx[j] = dy[j] C[j] + R^T(dy * S)[j], R^T(z) = (z[h:r], -z[0:h], z[r:HS]). */
static inline void zf_head_backward(float *restrict dx, const float *restrict dy, const float *restrict C,
                                    const float *restrict S, int r, int HS)
{
    const int h = r / 2;
    for (int j = 0; j < h; j++) dx[j] = dy[j] * C[j] + dy[j + h] * S[j + h];
    for (int j = h; j < r; j++) dx[j] = dy[j] * C[j] - dy[j - h] * S[j - h];
    for (int j = r; j < HS; j++) dx[j] = dy[j] * C[j] + dy[j] * S[j];
}

void rope_forward_zero_freq(float *q_out, float *k_out, const float *qkv, const rope_shape *s,
                            const rope_tables *tb)
{
    const long rows = (long)ROWS(s);
    const int HS = s->HS, T = s->T;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *C = tb->cos_full + (size_t)(i % T) * HS, *S = tb->sin_full + (size_t)(i % T) * HS;
        size_t q = src_off(s, (size_t)i, 0);
        prefetch_row(qkv, sizeof(float), s, i, rows, 0, 0, 2 * HS);
        zf_head_forward(q_out + (size_t)i * HS, qkv + q, C, S, s->r, HS);
        zf_head_forward(k_out + (size_t)i * HS, qkv + q + HS, C, S, s->r, HS);
    }
}

void rope_backward_zero_freq(float *dqkv, const float *dq_out, const float *dk_out, const rope_shape *s,
                             const rope_tables *tb)
{
    const long rows = (long)ROWS(s);
    const int HS = s->HS, T = s->T;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *C = tb->cos_full + (size_t)(i % T) * HS, *S = tb->sin_full + (size_t)(i % T) * HS;
        size_t q = src_off(s, (size_t)i, 0);
        prefetch_row(dqkv, sizeof(float), s, i, rows, 0, 0, 2 * HS);
        zf_head_backward(dqkv + q, dq_out + (size_t)i * HS, C, S, s->r, HS);
        zf_head_backward(dqkv + q + HS, dk_out + (size_t)i * HS, C, S, s->r, HS);
    }
}

/* ---------------------------------------------------------------- fused, in place */

/* One rotation over the pairs (x[i], x[i + h]), i < h. With AVX-512, 16 pairs per step under a
 * mask, so that any h (12 for NeoX-20B, 16 for Pythia-6.9B) is one or two vector steps;
 * sign = -1 applies the inverse rotation (backward). */
#ifdef __AVX512F__
static inline void rot_pairs(float *x, const float *c, const float *sn, int h, float sign)
{
    const __m512 sg = _mm512_set1_ps(sign);
    for (int i = 0; i < h; i += 16) {
        __mmask16 k = vmask_tail(h - i);
        __m512 a = _mm512_maskz_loadu_ps(k, x + i), b = _mm512_maskz_loadu_ps(k, x + h + i);
        __m512 cc = _mm512_maskz_loadu_ps(k, c + i), ss = _mm512_mul_ps(sg, _mm512_maskz_loadu_ps(k, sn + i));
        _mm512_mask_storeu_ps(x + i, k, _mm512_fnmadd_ps(b, ss, _mm512_mul_ps(a, cc)));
        _mm512_mask_storeu_ps(x + h + i, k, _mm512_fmadd_ps(a, ss, _mm512_mul_ps(b, cc)));
    }
}
#else
static inline void rot_pairs(float *restrict x, const float *restrict c, const float *restrict sn, int h, float sign)
{
    float *restrict x2 = x + h;
    for (int i = 0; i < h; i++) {
        float a = x[i], b = x2[i], sv = sign * sn[i];
        x[i] = a * c[i] - b * sv;
        x2[i] = b * c[i] + a * sv;
    }
}
#endif

/* GPT-J's pairs (x[2i], x[2i+1]), i < h, with rot_pairs' arithmetic per pair (the same bits as
 * rot_pairs on the de-interleaved data). With AVX-512, 8 pairs per step: the pairs swapped
 * within each 64-bit lane, cos and sin duplicated across the pair, sin negated on even lanes. */
#ifdef __AVX512F__
static const int32_t DUP_PAIRS[16] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};

static inline void rot_every_two(float *x, const float *c, const float *sn, int h, float sign)
{
    const __m512i dup = _mm512_loadu_si512(DUP_PAIRS);
    const __m512 sg = _mm512_mask_blend_ps(0xAAAA, _mm512_set1_ps(-sign), _mm512_set1_ps(sign));
    for (int i = 0; i < h; i += 8) {
        __mmask16 k = vmask_tail(2L * (h - i)), k8 = vmask_tail(h - i) & 0xff;
        __m512 v = _mm512_maskz_loadu_ps(k, x + 2 * i);
        __m512 cc = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(k8, c + i));
        __m512 ss = _mm512_mul_ps(sg, _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(k8, sn + i)));
        _mm512_mask_storeu_ps(x + 2 * i, k, _mm512_fmadd_ps(_mm512_permute_ps(v, 0xB1), ss, _mm512_mul_ps(v, cc)));
    }
}
#else
static inline void rot_every_two(float *x, const float *c, const float *sn, int h, float sign)
{
    for (int i = 0; i < h; i++) {
        float a = x[2 * i], b = x[2 * i + 1], sv = sign * sn[i];
        x[2 * i] = a * c[i] - b * sv;
        x[2 * i + 1] = b * c[i] + a * sv;
    }
}
#endif

typedef void (*rot_fn)(float *x, const float *c, const float *sn, int h, float sign);

/* One token of the group layout: per kv group, its G query heads and its k head rotated, v
 * skipped; the rotated dims prefetched `ahead` elements on (0: none), each query head fetching
 * itself and the head after it (for G = 1, q and k together: the pre-grouping kernel's order).
 * This shape, one straight pass over the heads, matters: a nested loop over the G + 1 rotated
 * heads of each group ran the pythia-6.9b shape 40% slower (measured, Zen 5). Inlined with a
 * constant `rot`, one copy per pairing. */
static inline __attribute__((always_inline)) void fused_token(float *x, const float *c, const float *sn, int h, int HS,
                                                              int kvh, int G, size_t ahead, float sign, rot_fn rot)
{
    const size_t span = 2 * (size_t)h * sizeof(float);
    for (int g = 0; g < kvh; g++, x += HS) { /* the step over v_g */
        for (int j = 0; j < G; j++, x += HS) {
            if (ahead) prefetch_bytes(x + ahead, span), prefetch_bytes(x + HS + ahead, span);
            rot(x, c, sn, h, sign);
        }
        rot(x, c, sn, h, sign); /* k_g */
        x += HS;
    }
}

static void rope_fused_inplace(float *qkv, const rope_shape *s, const rope_tables *tb, float sign)
{
    const long N = (long)s->B * s->T;
    const int h = s->r / 2, HS = s->HS, T = s->T, kvh = rope_kv_heads(s), G = s->NH / kvh;
    const size_t stride = rope_qkv_per_token(s);
    if (h == 0) return;
#pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++) {
        const float *c = tb->cos_half + (size_t)(n % T) * h, *sn = tb->sin_half + (size_t)(n % T) * h;
        float *tok = qkv + (size_t)n * stride;
        size_t ahead = n + PF_AHEAD < N ? PF_AHEAD * stride : 0;
        if (s->gptj) fused_token(tok, c, sn, h, HS, kvh, G, ahead, sign, rot_every_two);
        else fused_token(tok, c, sn, h, HS, kvh, G, ahead, sign, rot_pairs);
    }
}

void rope_forward_fused(float *qkv, const rope_shape *s, const rope_tables *tb) { rope_fused_inplace(qkv, s, tb, 1.0f); }

/* The rotation is orthogonal: its backward is the rotation by -angle. */
void rope_backward_fused(float *dqkv, const rope_shape *s, const rope_tables *tb)
{
    rope_fused_inplace(dqkv, s, tb, -1.0f);
}

/* ---------------------------------------------------------------- bf16 variants
 *
 * q, k (and their gradients) in bf16, tables in fp32, arithmetic in fp32, every result rounded
 * to bf16 where the variant stores it: the reference after each op (as PyTorch runs each op of a
 * bf16 tensor), zero_freq and fused once per output. Span helpers, 16 lanes a step. */

#if defined(__AVX512F__) && defined(VMATH_BF16)
/* o = bf16(a * t) */
static void span_mul_bf16(bf16 *o, const bf16 *a, const float *t, int n)
{
    for (int i = 0; i < n; i += 16)
        vbf16_store512(o + i, _mm512_mul_ps(vbf16_load512(a + i, n - i), _mm512_maskz_loadu_ps(vmask_tail(n - i), t + i)),
                       n - i);
}

/* o = bf16(a + b) */
static void span_add_bf16(bf16 *o, const bf16 *a, const bf16 *b, long n)
{
    for (long i = 0; i < n; i += 16)
        vbf16_store512(o + i, _mm512_add_ps(vbf16_load512(a + i, n - i), vbf16_load512(b + i, n - i)), n - i);
}

/* o = bf16(x C -/+ y S): zero_freq's expression in its scalar order (two products, then the sum
 * or difference; no fused multiply-add), so that it is the fp32 zero_freq's value, rounded. */
static void span_rot_bf16(bf16 *restrict o, const bf16 *x, const bf16 *y, const float *C, const float *S, int n, int sub)
{
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = vmask_tail(n - i);
        __m512 a = _mm512_mul_ps(vbf16_load512(x + i, n - i), _mm512_maskz_loadu_ps(k, C + i));
        __m512 b = _mm512_mul_ps(vbf16_load512(y + i, n - i), _mm512_maskz_loadu_ps(k, S + i));
        vbf16_store512(o + i, sub ? _mm512_sub_ps(a, b) : _mm512_add_ps(a, b), n - i);
    }
}

/* rot_pairs on bf16 pairs: the fp32 kernel's arithmetic on the widened values, rounded. */
static inline void rot_pairs_bf16(bf16 *x, const float *c, const float *sn, int h, float sign)
{
    const __m512 sg = _mm512_set1_ps(sign);
    for (int i = 0; i < h; i += 16) {
        __mmask16 k = vmask_tail(h - i);
        __m512 a = vbf16_load512(x + i, h - i), b = vbf16_load512(x + h + i, h - i);
        __m512 cc = _mm512_maskz_loadu_ps(k, c + i), ss = _mm512_mul_ps(sg, _mm512_maskz_loadu_ps(k, sn + i));
        vbf16_store512(x + i, _mm512_fnmadd_ps(b, ss, _mm512_mul_ps(a, cc)), h - i);
        vbf16_store512(x + h + i, _mm512_fmadd_ps(a, ss, _mm512_mul_ps(b, cc)), h - i);
    }
}

/* rot_every_two on bf16 pairs: the fp32 kernel's arithmetic on the widened values, rounded. */
static inline void rot_every_two_bf16(bf16 *x, const float *c, const float *sn, int h, float sign)
{
    const __m512i dup = _mm512_loadu_si512(DUP_PAIRS);
    const __m512 sg = _mm512_mask_blend_ps(0xAAAA, _mm512_set1_ps(-sign), _mm512_set1_ps(sign));
    for (int i = 0; i < h; i += 8) {
        __mmask16 k8 = vmask_tail(h - i) & 0xff;
        __m512 v = vbf16_load512(x + 2 * i, 2L * (h - i));
        __m512 cc = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(k8, c + i));
        __m512 ss = _mm512_mul_ps(sg, _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(k8, sn + i)));
        vbf16_store512(x + 2 * i, _mm512_fmadd_ps(_mm512_permute_ps(v, 0xB1), ss, _mm512_mul_ps(v, cc)), 2L * (h - i));
    }
}
#else
static void span_mul_bf16(bf16 *o, const bf16 *a, const float *t, int n)
{
    for (int i = 0; i < n; i++) o[i] = bf16_from_float(bf16_to_float(a[i]) * t[i]);
}

static void span_add_bf16(bf16 *o, const bf16 *a, const bf16 *b, long n)
{
    for (long i = 0; i < n; i++) o[i] = bf16_from_float(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

static void span_rot_bf16(bf16 *restrict o, const bf16 *x, const bf16 *y, const float *C, const float *S, int n, int sub)
{
    for (int i = 0; i < n; i++) {
        float a = bf16_to_float(x[i]) * C[i], b = bf16_to_float(y[i]) * S[i];
        o[i] = bf16_from_float(sub ? a - b : a + b);
    }
}

static inline void rot_pairs_bf16(bf16 *x, const float *c, const float *sn, int h, float sign)
{
    for (int i = 0; i < h; i++) {
        float a = bf16_to_float(x[i]), b = bf16_to_float(x[h + i]), sv = sign * sn[i];
        x[i] = bf16_from_float(a * c[i] - b * sv);
        x[h + i] = bf16_from_float(b * c[i] + a * sv);
    }
}

static inline void rot_every_two_bf16(bf16 *x, const float *c, const float *sn, int h, float sign)
{
    for (int i = 0; i < h; i++) {
        float a = bf16_to_float(x[2 * i]), b = bf16_to_float(x[2 * i + 1]), sv = sign * sn[i];
        x[2 * i] = bf16_from_float(a * c[i] - b * sv);
        x[2 * i + 1] = bf16_from_float(b * c[i] + a * sv);
    }
}
#endif

/* -x, exactly: the sign bit flipped (NaN stays NaN). */
static void span_neg_bf16(bf16 *o, const bf16 *a, int n)
{
    for (int i = 0; i < n; i++) o[i] = (bf16)(a[i] ^ 0x8000u);
}

/* The reference's ops on bf16 tensors; the same passes as ref_forward_one. */
static void ref_forward_one_bf16(bf16 *out, const bf16 *qkv, const rope_shape *s, const rope_tables *tb,
                                 bf16 *scratch, int which)
{
    const long rows = (long)ROWS(s);
    const int r = s->r, h = r / 2, HS = s->HS, T = s->T;
    bf16 *neg = scratch, *half = neg + ROWS(s) * h, *a = half + ROWS(s) * r, *bb = a + ROWS(s) * r,
         *emb = bb + ROWS(s) * r;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        prefetch_row(qkv, sizeof(bf16), s, i, rows, which, h, h);
        span_neg_bf16(neg + (size_t)i * h, qkv + src_off(s, (size_t)i, which) + h, h);
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        prefetch_row(qkv, sizeof(bf16), s, i, rows, which, 0, h);
        memcpy(half + (size_t)i * r, neg + (size_t)i * h, (size_t)h * sizeof(bf16));
        memcpy(half + (size_t)i * r + h, qkv + src_off(s, (size_t)i, which), (size_t)h * sizeof(bf16));
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        prefetch_row(qkv, sizeof(bf16), s, i, rows, which, 0, r);
        span_mul_bf16(a + (size_t)i * r, qkv + src_off(s, (size_t)i, which), tb->cos_r + (size_t)(i % T) * r, r);
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) span_mul_bf16(bb + (size_t)i * r, half + (size_t)i * r, tb->sin_r + (size_t)(i % T) * r, r);
    const long chunk = 4096;
#pragma omp parallel for schedule(static)
    for (long c0 = 0; c0 < rows * r; c0 += chunk) {
        long n = rows * r - c0 < chunk ? rows * r - c0 : chunk;
        span_add_bf16(emb + c0, a + c0, bb + c0, n);
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const bf16 *x = qkv + src_off(s, (size_t)i, which);
        bf16 *o = out + (size_t)i * HS;
        prefetch_row(qkv, sizeof(bf16), s, i, rows, which, r, HS - r);
        memcpy(o, emb + (size_t)i * r, (size_t)r * sizeof(bf16));
        memcpy(o + r, x + r, (size_t)(HS - r) * sizeof(bf16));
    }
}

void rope_forward_ref_bf16(bf16 *q_out, bf16 *k_out, const bf16 *qkv, const rope_shape *s, const rope_tables *tb,
                           bf16 *scratch)
{
    ref_forward_one_bf16(q_out, qkv, s, tb, scratch, 0);
    ref_forward_one_bf16(k_out, qkv, s, tb, scratch, 1);
}

/* The autograd ops of ref_backward_one on bf16 tensors. */
static void ref_backward_one_bf16(bf16 *dqkv, const bf16 *dy, const rope_shape *s, const rope_tables *tb,
                                  bf16 *scratch, int which)
{
    const long rows = (long)ROWS(s);
    const int r = s->r, h = r / 2, HS = s->HS, T = s->T;
    bf16 *dhalf = scratch, *dxr1 = dhalf + ROWS(s) * r, *dx2 = dxr1 + ROWS(s) * r, *cat = dx2 + ROWS(s) * h,
         *g = cat + ROWS(s) * r;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++)
        span_mul_bf16(dhalf + (size_t)i * r, dy + (size_t)i * HS, tb->sin_r + (size_t)(i % T) * r, r);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++)
        span_mul_bf16(dxr1 + (size_t)i * r, dy + (size_t)i * HS, tb->cos_r + (size_t)(i % T) * r, r);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) span_neg_bf16(dx2 + (size_t)i * h, dhalf + (size_t)i * r, h);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        memcpy(cat + (size_t)i * r, dhalf + (size_t)i * r + h, (size_t)h * sizeof(bf16));
        memcpy(cat + (size_t)i * r + h, dx2 + (size_t)i * h, (size_t)h * sizeof(bf16));
    }
    const long chunk = 4096;
#pragma omp parallel for schedule(static)
    for (long c0 = 0; c0 < rows * r; c0 += chunk) {
        long n = rows * r - c0 < chunk ? rows * r - c0 : chunk;
        span_add_bf16(g + c0, dxr1 + c0, cat + c0, n);
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        bf16 *dx = dqkv + src_off(s, (size_t)i, which);
        prefetch_row(dqkv, sizeof(bf16), s, i, rows, which, 0, HS);
        memcpy(dx, g + (size_t)i * r, (size_t)r * sizeof(bf16));
        memcpy(dx + r, dy + (size_t)i * HS + r, (size_t)(HS - r) * sizeof(bf16));
    }
}

void rope_backward_ref_bf16(bf16 *dqkv, const bf16 *dq_out, const bf16 *dk_out, const rope_shape *s,
                            const rope_tables *tb, bf16 *scratch)
{
    ref_backward_one_bf16(dqkv, dq_out, s, tb, scratch, 0);
    ref_backward_one_bf16(dqkv, dk_out, s, tb, scratch, 1);
}

/* zf_head_forward / zf_head_backward on bf16 heads. Up to ZF_MAX_HS dims (every preset) the
 * head is widened into a buffer, the fp32 function runs on it and its output is narrowed: the
 * fp32 kernel's bits rounded by construction, and 2-3x faster than three masked spans per head
 * (12-dim spans for NeoX-20B). Wider heads take the spans (the same expression, so the same
 * bits). */
#define ZF_MAX_HS 256

static void narrow_span(bf16 *o, const float *f, int n)
{
#if defined(__AVX512F__) && defined(VMATH_BF16)
    for (int d = 0; d < n; d += 16) vbf16_store512(o + d, _mm512_loadu_ps(f + d), n - d);
#else
    for (int d = 0; d < n; d++) o[d] = bf16_from_float(f[d]);
#endif
}

static inline void zf_head_forward_bf16(bf16 *o, const bf16 *x, const float *C, const float *S, int r, int HS)
{
    const int h = r / 2;
    if (HS <= ZF_MAX_HS) {
        float xf[ZF_MAX_HS], of[ZF_MAX_HS];
        for (int d = 0; d < HS; d++) xf[d] = bf16_to_float(x[d]);
        zf_head_forward(of, xf, C, S, r, HS);
        narrow_span(o, of, HS);
        return;
    }
    span_rot_bf16(o, x, x + h, C, S, h, 1);
    span_rot_bf16(o + h, x + h, x, C + h, S + h, h, 0);
    span_rot_bf16(o + r, x + r, x + r, C + r, S + r, HS - r, 0);
}

static inline void zf_head_backward_bf16(bf16 *dx, const bf16 *dy, const float *C, const float *S, int r, int HS)
{
    const int h = r / 2;
    if (HS <= ZF_MAX_HS) {
        float yf[ZF_MAX_HS], xf[ZF_MAX_HS];
        for (int d = 0; d < HS; d++) yf[d] = bf16_to_float(dy[d]);
        zf_head_backward(xf, yf, C, S, r, HS);
        narrow_span(dx, xf, HS);
        return;
    }
    span_rot_bf16(dx, dy, dy + h, C, S + h, h, 0);
    span_rot_bf16(dx + h, dy + h, dy, C + h, S, h, 1);
    span_rot_bf16(dx + r, dy + r, dy + r, C + r, S + r, HS - r, 0);
}

void rope_forward_zero_freq_bf16(bf16 *q_out, bf16 *k_out, const bf16 *qkv, const rope_shape *s,
                                 const rope_tables *tb)
{
    const long rows = (long)ROWS(s);
    const int HS = s->HS, T = s->T;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *C = tb->cos_full + (size_t)(i % T) * HS, *S = tb->sin_full + (size_t)(i % T) * HS;
        size_t q = src_off(s, (size_t)i, 0);
        prefetch_row(qkv, sizeof(bf16), s, i, rows, 0, 0, 2 * HS);
        zf_head_forward_bf16(q_out + (size_t)i * HS, qkv + q, C, S, s->r, HS);
        zf_head_forward_bf16(k_out + (size_t)i * HS, qkv + q + HS, C, S, s->r, HS);
    }
}

void rope_backward_zero_freq_bf16(bf16 *dqkv, const bf16 *dq_out, const bf16 *dk_out, const rope_shape *s,
                                  const rope_tables *tb)
{
    const long rows = (long)ROWS(s);
    const int HS = s->HS, T = s->T;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < rows; i++) {
        const float *C = tb->cos_full + (size_t)(i % T) * HS, *S = tb->sin_full + (size_t)(i % T) * HS;
        size_t q = src_off(s, (size_t)i, 0);
        prefetch_row(dqkv, sizeof(bf16), s, i, rows, 0, 0, 2 * HS);
        zf_head_backward_bf16(dqkv + q, dq_out + (size_t)i * HS, C, S, s->r, HS);
        zf_head_backward_bf16(dqkv + q + HS, dk_out + (size_t)i * HS, C, S, s->r, HS);
    }
}

typedef void (*rot_fn_bf16)(bf16 *x, const float *c, const float *sn, int h, float sign);

/* fused_token on bf16 heads. */
static inline __attribute__((always_inline)) void fused_token_bf16(bf16 *x, const float *c, const float *sn, int h, int HS,
                                                                   int kvh, int G, size_t ahead, float sign, rot_fn_bf16 rot)
{
    const size_t span = 2 * (size_t)h * sizeof(bf16);
    for (int g = 0; g < kvh; g++, x += HS) {
        for (int j = 0; j < G; j++, x += HS) {
            if (ahead) prefetch_bytes(x + ahead, span), prefetch_bytes(x + HS + ahead, span);
            rot(x, c, sn, h, sign);
        }
        rot(x, c, sn, h, sign);
        x += HS;
    }
}

static void rope_fused_inplace_bf16(bf16 *qkv, const rope_shape *s, const rope_tables *tb, float sign)
{
    const long N = (long)s->B * s->T;
    const int h = s->r / 2, HS = s->HS, T = s->T, kvh = rope_kv_heads(s), G = s->NH / kvh;
    const size_t stride = rope_qkv_per_token(s);
    if (h == 0) return;
#pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++) {
        const float *c = tb->cos_half + (size_t)(n % T) * h, *sn = tb->sin_half + (size_t)(n % T) * h;
        bf16 *tok = qkv + (size_t)n * stride;
        size_t ahead = n + PF_AHEAD < N ? PF_AHEAD * stride : 0;
        if (s->gptj) fused_token_bf16(tok, c, sn, h, HS, kvh, G, ahead, sign, rot_every_two_bf16);
        else fused_token_bf16(tok, c, sn, h, HS, kvh, G, ahead, sign, rot_pairs_bf16);
    }
}

void rope_forward_fused_bf16(bf16 *qkv, const rope_shape *s, const rope_tables *tb)
{
    rope_fused_inplace_bf16(qkv, s, tb, 1.0f);
}

void rope_backward_fused_bf16(bf16 *dqkv, const rope_shape *s, const rope_tables *tb)
{
    rope_fused_inplace_bf16(dqkv, s, tb, -1.0f);
}

/* ---------------------------------------------------------------- double-precision definition */

void rope_forward_ref_gqa(double *out, const double *qkv, const rope_shape *s, double base)
{
    const int r = s->r, h = r / 2, HS = s->HS, kvh = rope_kv_heads(s), G = s->NH / kvh;
    const size_t per_token = rope_qkv_per_token(s);
    memcpy(out, qkv, (size_t)s->B * s->T * per_token * sizeof(double));
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            for (int g = 0; g < kvh; g++)
                for (int j = 0; j <= G; j++) { /* the group's G query heads, then its k head */
                    size_t o = ((size_t)b * s->T + t) * per_token + ((size_t)g * (G + 2) + j) * HS;
                    const double *x = qkv + o;
                    for (int d = 0; d < r; d++) {
                        /* x cos + rotate(x) sin: rotate_half (-x2, x1) or rotate_every_two (-x[2i+1], x[2i]) */
                        int i = s->gptj ? d / 2 : d % h;
                        double rot = s->gptj ? (d % 2 ? x[d - 1] : -x[d + 1]) : (d < h ? -x[d + h] : x[d - h]);
                        double ang = (double)t * pow(base, -2.0 * i / r);
                        out[o + d] = x[d] * cos(ang) + rot * sin(ang);
                    }
                }
}

/* Bytes model, per token, for q and k together (x2), in elements of q/k data (elem_bytes each:
 * 4 fp32, 2 bf16) and of tables (fp32 in every variant):
 *   fused      per head: read r, write r; tables r/2 cos + r/2 sin once per token.
 *   zero_freq  per head: read HS, write HS; tables HS cos + HS sin once per token.
 *   reference  forward per head: neg (h, h), cat (2h, r), mul cos (r, r), mul sin (r, r),
 *              add (2r, r), cat (HS, HS) = 10r + 2HS; tables: r cos + r sin per token.
 *              backward per head: mul sin (r, r), mul cos (r, r), neg (h, h), cat (2h, r),
 *              add (2r, r), cat (HS, HS) = 10r + 2HS; tables as forward.
 * Per token NH q heads and kvh k heads (2 NH without grouping); tables are shared by all heads
 * of a token and read once per token per tensor (q, k). The
 * reference's temporaries have the tensors' dtype (as PyTorch's ops on bf16 tensors). */
double rope_bytes_per_token_dtype(const rope_shape *s, int variant, int direction, int elem_bytes)
{
    (void)direction; /* the backward passes move the same amounts as their forwards */
    const double r = s->r, HS = s->HS, NH = s->NH, KVH = rope_kv_heads(s);
    double per_head, tables;
    switch (variant) {
    case 0: per_head = 10 * r + 2 * HS; tables = 2 * r; break;
    case 1: per_head = 2 * HS; tables = 2 * HS; break;
    default: per_head = 2 * r; tables = r; break;
    }
    return (double)elem_bytes * (NH + KVH) * per_head + 2.0 * 4.0 * tables;
}

double rope_bytes_per_token(const rope_shape *s, int variant, int direction)
{
    return rope_bytes_per_token_dtype(s, variant, direction, 4);
}
