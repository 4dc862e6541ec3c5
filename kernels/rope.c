#include "rope.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "elem.h"
#include "../common/presets.h"

int rope_rotary_dims(int HS, double rotary_pct) { return rotary_dims_of(HS, rotary_pct); }

int rope_kv_heads(const rope_shape *s) { return s->kvh > 0 ? s->kvh : s->NH; }

size_t rope_qkv_per_token(const rope_shape *s)
{
    return ((size_t)s->NH + 2 * (size_t)rope_kv_heads(s)) * (size_t)s->HS;
}

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
static inline void prefetch_row(const void *qkv, size_t eb, const rope_shape *s, long i, long rows, int which,
                                int first, int n)
{
    if (i + PF_AHEAD < rows)
        prefetch_bytes((const char *)qkv + (src_off(s, (size_t)(i + PF_AHEAD), which) + (size_t)first) * eb,
                       (size_t)n * eb);
}

size_t rope_ref_scratch_floats(const rope_shape *s)
{
    size_t h = (size_t)s->r / 2, r = (size_t)s->r;
    return ROWS(s) * (h + 4 * r);
}

/* ---------------------------------------------------------------- zero-frequency, one fp32 head */

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

/* Up to this many dims a head runs through zf_head_forward as floats (rope_elem.inc). */
#define ZF_MAX_HS 256

#ifdef ELEM_VEC
/* rot_every_two's lanes: pair i's cos and sin duplicated across its two lanes. */
static const int32_t DUP_PAIRS[16] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
#endif

/* ---------------------------------------------------------------- the variants, fp32 and bf16 */

#define E float
#define SFX(name) name
#define ELEM(helper) helper##_f32
#include "rope_elem.inc"
#undef E
#undef SFX
#undef ELEM

#define E bf16
#define SFX(name) name##_bf16
#define ELEM(helper) helper##_bf16
#include "rope_elem.inc"
#undef E
#undef SFX
#undef ELEM

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
