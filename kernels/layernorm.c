#include "layernorm.h"

#include <math.h>
#include <stddef.h>

#include "vmath.h"

/* ---------------------------------------------------------------- forward
 *
 * Per row: m = sum(x) / C and v = sum((x - m)^2) / C, each sum in float from c = 0 upwards (the
 * order fixes the bits), rstd = 1 / sqrtf(v + eps), out = (x - m) * rstd * w + b. The sequential
 * sums are a chain of dependent adds, latency-bound at one element per add latency; instead of
 * reordering them (other bits), 16 rows are summed at once, one per vector lane, each lane's
 * chain the scalar one: the same mean and rstd bits at 16 rows per add latency. */

/* One row's statistics, the scalar definition. */
static void stats_row(float *mean, float *rstd, const float *x, int C)
{
    float m = 0.0f;
    for (int c = 0; c < C; c++) m += x[c];
    m /= (float)C;
    float v = 0.0f;
    for (int c = 0; c < C; c++) {
        float d = x[c] - m;
        v += d * d;
    }
    v /= (float)C;
    *mean = m;
    *rstd = 1.0f / sqrtf(v + LAYERNORM_EPS);
}

#ifdef __AVX512F__
#define LN_GROUP 16 /* rows whose statistics are computed together, one per lane */

static inline __m512 unpacklo_pd(__m512 a, __m512 b)
{
    return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}
static inline __m512 unpackhi_pd(__m512 a, __m512 b)
{
    return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}

/* In place: r[k] holds 16 consecutive floats of row k; afterwards r[j] holds column j (lane k
 * from row k). */
static inline __attribute__((always_inline)) void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int k = 0; k < 16; k += 2) {
        t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 16; k += 4) {
        r[k] = unpacklo_pd(t[k], t[k + 2]);
        r[k + 1] = unpackhi_pd(t[k], t[k + 2]);
        r[k + 2] = unpacklo_pd(t[k + 1], t[k + 3]);
        r[k + 3] = unpackhi_pd(t[k + 1], t[k + 3]);
    }
    for (int k = 0; k < 4; k++) {
        t[k] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0x88);
        t[k + 4] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0xdd);
        t[k + 8] = _mm512_shuffle_f32x4(r[k + 8], r[k + 12], 0x88);
        t[k + 12] = _mm512_shuffle_f32x4(r[k + 8], r[k + 12], 0xdd);
    }
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xdd);
    }
}

/* Columns c0 .. c0+15 of the 16 rows at x (row stride C) into r[0..15] (lanes = rows); columns
 * past C read as 0. */
static inline __attribute__((always_inline)) void load_columns(__m512 r[16], const float *x, int C, int c0)
{
    __mmask16 k = vmask_tail(C - c0);
    for (int i = 0; i < 16; i++) r[i] = _mm512_maskz_loadu_ps(k, x + (size_t)i * C + c0);
    transpose16(r);
}

/* stats_row for the 16 rows at x, lane by lane. */
static void stats_group(float *mean, float *rstd, const float *x, int C)
{
    __m512 r[16], m = _mm512_setzero_ps(), v = _mm512_setzero_ps();
    int full = C - C % 16;
    for (int c0 = 0; c0 < full; c0 += 16) {
        /* the first pass reads from memory: 16 streams, prefetched 8 lines ahead each */
        for (int i = 0; i < 16; i++) _mm_prefetch((const char *)(x + (size_t)i * C + c0 + 128), _MM_HINT_T0);
        load_columns(r, x, C, c0);
        for (int j = 0; j < 16; j++) m = _mm512_add_ps(m, r[j]);
    }
    if (full < C) {
        load_columns(r, x, C, full);
        for (int j = 0; j < C - full; j++) m = _mm512_add_ps(m, r[j]);
    }
    m = _mm512_div_ps(m, _mm512_set1_ps((float)C));
    for (int c0 = 0; c0 < full; c0 += 16) {
        load_columns(r, x, C, c0);
        for (int j = 0; j < 16; j++) {
            __m512 d = _mm512_sub_ps(r[j], m);
            v = _mm512_add_ps(v, _mm512_mul_ps(d, d));
        }
    }
    if (full < C) {
        load_columns(r, x, C, full);
        for (int j = 0; j < C - full; j++) {
            __m512 d = _mm512_sub_ps(r[j], m);
            v = _mm512_add_ps(v, _mm512_mul_ps(d, d));
        }
    }
    v = _mm512_div_ps(v, _mm512_set1_ps((float)C));
    _mm512_storeu_ps(mean, m);
    _mm512_storeu_ps(
        rstd, _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_sqrt_ps(_mm512_add_ps(v, _mm512_set1_ps(LAYERNORM_EPS)))));
}
#else
#define LN_GROUP 1
static void stats_group(float *mean, float *rstd, const float *x, int C) { stats_row(mean, rstd, x, C); }
#endif

/* One output row, (x - m) * s * w + b in that order (no fused multiply-add), into fp32 `of` or,
 * rounded, into bf16 `ob` (the other NULL). */
static inline void out_row(float *of, bf16 *ob, const float *x, const float *w, const float *b, float m, float s, int C)
{
#if defined(__AVX512F__) && defined(VMATH_BF16)
    const __m512 vm = _mm512_set1_ps(m), vs = _mm512_set1_ps(s);
    for (int c = 0; c < C; c += 16) {
        __mmask16 k = vmask_tail(C - c);
        __m512 y = _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + c), vm), vs),
                                 _mm512_maskz_loadu_ps(k, w + c));
        if (b) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(k, b + c));
        if (ob) vbf16_store512(ob + c, y, C - c);
        else _mm512_mask_storeu_ps(of + c, k, y);
    }
#else
    for (int c = 0; c < C; c++) {
        float y = (x[c] - m) * s * w[c] + (b ? b[c] : 0.0f);
        if (ob) ob[c] = bf16_from_float(y);
        else of[c] = y;
    }
#endif
}

/* The forward pass into fp32 out or bf16 outb: statistics LN_GROUP rows at a time, then those
 * rows' outputs while they are in cache; the last N % LN_GROUP rows one at a time. */
static void forward_rows(float *out, bf16 *outb, float *mean, float *rstd, const float *inp, const float *weight,
                         const float *bias, int N, int C)
{
    const int ngroups = N / LN_GROUP, nrest = N % LN_GROUP;
#pragma omp parallel for schedule(static)
    for (int g = 0; g < ngroups + nrest; g++) {
        int i0 = g < ngroups ? g * LN_GROUP : ngroups * LN_GROUP + (g - ngroups), rows = g < ngroups ? LN_GROUP : 1;
        const float *x = inp + (size_t)i0 * C;
        if (rows == 1) stats_row(mean + i0, rstd + i0, x, C);
        else stats_group(mean + i0, rstd + i0, x, C);
        for (int i = i0; i < i0 + rows; i++) {
            size_t o = (size_t)i * C;
            out_row(out ? out + o : NULL, outb ? outb + o : NULL, inp + o, weight, bias, mean[i], rstd[i], C);
        }
    }
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight, const float *bias,
                       int N, int C)
{
    forward_rows(out, NULL, mean, rstd, inp, weight, bias, N, C);
}

void layernorm_forward_bf16(bf16 *out, float *mean, float *rstd, const float *inp, const float *weight,
                            const float *bias, int N, int C)
{
    forward_rows(NULL, out, mean, rstd, inp, weight, bias, N, C);
}

/* ---------------------------------------------------------------- backward */

void layernorm_backward(float *dinp, const float *dres, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean, const float *rstd, int N, int C)
{
    /* dinp: per row, dx = dres + rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * weight */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *dy = dout + (size_t)i * C, *x = inp + (size_t)i * C;
        float *dx = dinp + (size_t)i * C;
        const float *dr = dres ? dres + (size_t)i * C : NULL;
        float m = mean[i], s = rstd[i];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            float g = weight[c] * dy[c];
            dnorm_mean += g;
            dnorm_norm_mean += g * (x[c] - m) * s;
        }
        dnorm_mean /= (float)C;
        dnorm_norm_mean /= (float)C;
        for (int c = 0; c < C; c++) {
            float xhat = (x[c] - m) * s;
            dx[c] = (dr ? dr[c] : 0.0f) + (weight[c] * dy[c] - dnorm_mean - xhat * dnorm_norm_mean) * s;
        }
    }
    /* dweight, dbias: column sums, one block of columns per thread */
    enum { CB = 64 };
    int nblk = (C + CB - 1) / CB;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * CB, c1 = c0 + CB < C ? c0 + CB : C;
        float dw[CB] = {0}, db[CB] = {0};
        for (int i = 0; i < N; i++) {
            const float *dy = dout + (size_t)i * C, *x = inp + (size_t)i * C;
            float m = mean[i], s = rstd[i];
            for (int c = c0; c < c1; c++) {
                dw[c - c0] += dy[c] * (x[c] - m) * s;
                db[c - c0] += dy[c];
            }
        }
        for (int c = c0; c < c1; c++) {
            dweight[c] += dw[c - c0];
            if (dbias) dbias[c] += db[c - c0];
        }
    }
}

void layernorm_forward_ref(double *out, const double *inp, const double *weight, const double *bias, int N, int C)
{
    for (int i = 0; i < N; i++) {
        const double *x = inp + (size_t)i * C;
        double m = 0, v = 0;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= C;
        double s = 1.0 / sqrt(v + (double)LAYERNORM_EPS);
        for (int c = 0; c < C; c++) out[(size_t)i * C + c] = (x[c] - m) * s * weight[c] + (bias ? bias[c] : 0.0);
    }
}
