/* What of the kernels is not one operation at one precision (tests/test_ops.c runs those against
 * their references and finite differences): dimension checks, the gradient conventions (dres
 * added, in place, accumulation), closed forms and properties, the vector narrowing, NaN
 * propagation, refused targets, the streamed stores. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/mem.h"
#include "../kernels/adamw.h"
#include "../kernels/crossentropy.h"
#include "../kernels/gelu.h"
#include "../kernels/layernorm.h"
#include "../kernels/matmul.h"
#include "../kernels/vmath.h"
#include "check.h"

/* ---------------------------------------------------------------- matmul */

static void test_matmul_dimension_checks(void)
{
    float a[4] = {0}, b[4] = {0}, c[4] = {0};
    CHECK(matmul_forward(c, a, b, NULL, 0, 2, 2) == KERNEL_EDIM, "N = 0 accepted");
    CHECK(matmul_forward(c, a, b, NULL, 2, -1, 2) == KERNEL_EDIM, "C < 0 accepted");
    CHECK(matmul_forward(c, a, b, NULL, 1 << 20, 1 << 20, 2) == KERNEL_EDIM, "an int-overflowing operand accepted");
    CHECK(matmul_backward_input(NULL, a, b, 2, 2, 2) == KERNEL_EDIM, "NULL dinp accepted");
    CHECK(matmul_gemm(0, 0, 2, 2, 2, 1.0f, a, 1, b, 2, 0.0f, c, 2) == KERNEL_EDIM, "lda < k accepted");
    CHECK(matmul_gemm(0, 0, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2) == KERNEL_OK, "valid gemm refused");
}

/* ---------------------------------------------------------------- layernorm */

static void test_layernorm(void)
{
    enum { N = 5, C = 33 };
    unsigned st = 7;
    float x[N * C], w[C], b[C], out[N * C], mean[N], rstd[N], dout[N * C], dx[N * C] = {0}, dw[C] = {0}, db[C] = {0};
    rand_fill(x, N * C, &st);
    for (int i = 0; i < N * C; i++) x[i] = 3.0f * x[i] + 0.5f;
    rand_fill(w, C, &st);
    rand_fill(b, C, &st);
    rand_fill(dout, N * C, &st);
    layernorm_forward(out, mean, rstd, x, w, b, N, C);
    layernorm_backward(dx, NULL, dw, db, dout, x, w, mean, rstd, N, C);
    /* the residual's gradient is added explicitly: dinp = dres + dx, also in place (dinp == dres);
     * whatever dinp held before is overwritten; parameter gradients accumulate */
    float dres[N * C], dx2[N * C], dw2[C], db2[C];
    double want[N * C], dw_twice[C];
    rand_fill(dres, N * C, &st);
    for (int i = 0; i < N * C; i++) dx2[i] = 1e6f, want[i] = (double)dres[i] + dx[i];
    memcpy(dw2, dw, sizeof dw2), memcpy(db2, db, sizeof db2);
    layernorm_backward(dx2, dres, dw2, db2, dout, x, w, mean, rstd, N, C);
    CHECK(allclose("layernorm dinp = dres + dx", dx2, want, N * C, 1e-6, 1e-6),
          "dres not added, or dinp not overwritten");
    layernorm_backward(dres, dres, dw2, db2, dout, x, w, mean, rstd, N, C);
    CHECK(allclose("layernorm in place", dres, want, N * C, 1e-6, 1e-6), "in-place residual gradient differs");
    for (int i = 0; i < C; i++) dw_twice[i] = 3.0 * dw[i];
    CHECK(allclose("layernorm dweight accumulates", dw2, dw_twice, C, 1e-6, 1e-5), "dweight does not accumulate");
    /* property: with unit weight and zero bias every row has mean 0 and variance 1 */
    for (int i = 0; i < C; i++) w[i] = 1.0f, b[i] = 0.0f;
    layernorm_forward(out, mean, rstd, x, w, b, N, C);
    for (int r = 0; r < N; r++) {
        double m = 0, v = 0;
        for (int i = 0; i < C; i++) m += out[r * C + i];
        m /= C;
        for (int i = 0; i < C; i++) v += (out[r * C + i] - m) * (out[r * C + i] - m);
        v /= C;
        CHECK(fabs(m) < 1e-5 && fabs(v - 1.0) < 1e-3, "row %d: mean %.3g variance %.6g", r, m, v);
    }
}

/* ---------------------------------------------------------------- gelu */

static void test_gelu(void)
{
    enum { N = 200 };
    float x[N], dout[N], dx[N] = {0};
    unsigned st = 11;
    rand_fill(x, N, &st);
    for (int i = 0; i < N; i++) x[i] *= 5.0f;
    rand_fill(dout, N, &st);
    gelu_backward(dx, x, dout, N);
    double dref[N];
    to_double(dref, dx, N);
    gelu_backward(dout, x, dout, N); /* in place */
    CHECK(allclose("gelu in-place backward", dout, dref, N, 0, 0), "in-place backward differs");
    /* exact form, not the tanh approximation: gelu(1) = 0.8413447460685429 */
    float one = 1.0f, g;
    gelu_forward(&g, &one, 1);
    CHECK(fabs(g - 0.8413447460685429) < 1e-6, "gelu(1) = %.9g, exact erf form gives 0.841344746", g);
}

/* ---------------------------------------------------------------- cross-entropy */

static void test_crossentropy(void)
{
    enum { N = 4, V = 37 };
    unsigned st = 3;
    float logits[N * V], losses[N], lse[N], dl[N], dlogits[N * V] = {0};
    int targets[N] = {0, 36, 5, 17};
    rand_fill(logits, N * V, &st);
    for (int i = 0; i < N * V; i++) logits[i] *= 8.0f;
    rand_fill(dl, N, &st);
    CHECK(crossentropy_forward(losses, lse, logits, targets, N, V) == 0, "valid targets refused");
    CHECK(crossentropy_backward(dlogits, dl, logits, lse, targets, N, V) == KERNEL_OK, "valid targets refused");
    float inplace[N * V];
    memcpy(inplace, logits, sizeof inplace);
    double dref[N * V];
    to_double(dref, dlogits, N * V);
    CHECK(crossentropy_backward_inplace(inplace, dl, lse, targets, N, V) == 0, "in-place backward refused");
    CHECK(allclose("cross-entropy in-place backward", inplace, dref, N * V, 1e-7, 1e-6), "in-place differs");
    /* uniform logits: loss = ln V */
    for (int i = 0; i < N * V; i++) logits[i] = 0.25f;
    crossentropy_forward(losses, lse, logits, targets, N, V);
    CHECK(fabs(losses[0] - log((double)V)) < 1e-5, "uniform logits: loss %.7g, ln V = %.7g", losses[0], log((double)V));
    int bad[N] = {0, V, 1, 2};
    CHECK(crossentropy_forward(losses, lse, logits, bad, N, V) == KERNEL_EINDEX, "a target of V was accepted");
    bad[1] = -1;
    CHECK(crossentropy_backward(dlogits, dl, logits, lse, bad, N, V) == KERNEL_EINDEX, "a target of -1 was accepted");
    CHECK(crossentropy_backward_inplace(logits, dl, lse, bad, N, V) == KERNEL_EINDEX,
          "in place: a target of -1 was accepted");
}

/* ---------------------------------------------------------------- AdamW, norm, clipping */

static void test_adamw_closed_form(void)
{
    /* constant gradient g: bias-corrected m = g, v = g^2, so every step is p <- a p - lr s with
     * a = 1 - lr wd and s = g / (|g| + eps): p_t = a^t p0 - lr s (1 - a^t) / (1 - a) */
    enum { N = 4, STEPS = 25 };
    float p[N] = {1.0f, -2.0f, 0.5f, 0.0f}, g[N] = {0.3f, -1.5f, 2e-3f, 1.0f}, m[N] = {0}, v[N] = {0};
    adamw_params hp = {1e-2f, 0.9f, 0.999f, 1e-8f, 0.05f, 0.0f};
    double p0[N];
    to_double(p0, p, N);
    for (int t = 1; t <= STEPS; t++) adamw_update(p, g, m, v, N, &hp, t);
    double a = 1.0 - (double)hp.lr * hp.weight_decay, at = pow(a, STEPS), expect[N];
    for (int i = 0; i < N; i++) {
        double s = g[i] / (fabs((double)g[i]) + hp.eps);
        expect[i] = at * p0[i] - (double)hp.lr * s * (1 - at) / (1 - a);
    }
    CHECK(allclose("adamw closed form", p, expect, N, 1e-5, 1e-4), "AdamW does not match its closed form");
}

static void test_grad_norm(void)
{
    float g[3] = {3.0f, 4.0f, 12.0f};
    double norm = sqrt(grad_sumsq(g, 3));
    CHECK(fabs(norm - 13.0) < 1e-9, "norm of (3, 4, 12) = %.9g, expected 13", norm);
}

/* Clipping is folded into the update (gpt_update passes max_norm / norm as grad_scale): the
 * update with grad_scale f is bit for bit the update of the gradients scaled by f first, and
 * grad_scale 0 means 1. */
static void test_adamw_grad_scale(void)
{
    enum { N = 4096 + 21 };
    static float p1[N], p2[N], p3[N], m1[N], m2[N], m3[N], v1[N], v2[N], v3[N], g[N], gf[N];
    unsigned st = 13;
    rand_fill(p1, N, &st);
    memcpy(p2, p1, sizeof p1), memcpy(p3, p1, sizeof p1);
    adamw_params scaled = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f / 13.0f}, plain = scaled, unit = scaled;
    plain.grad_scale = 0.0f;
    for (int t = 1; t <= 3; t++) {
        rand_fill(g, N, &st);
        for (int i = 0; i < N; i++) gf[i] = g[i] * scaled.grad_scale;
        adamw_update(p1, g, m1, v1, N, &scaled, t);
        adamw_update(p2, gf, m2, v2, N, &plain, t);
        unit.grad_scale = 1.0f;
        adamw_update(p3, gf, m3, v3, N, &unit, t);
    }
    CHECK(memcmp(p1, p2, sizeof p1) == 0 && memcmp(m1, m2, sizeof m1) == 0 && memcmp(v1, v2, sizeof v1) == 0,
          "grad_scale 1/13 differs from scaling the gradients by 1/13 first");
    CHECK(memcmp(p2, p3, sizeof p2) == 0, "grad_scale 0 is not grad_scale 1");
}

/* ---------------------------------------------------------------- bf16 outputs
 *
 * Each bf16 kernel is its fp32 kernel with the stored result rounded (tests/test_ops.c compares
 * them bit for bit); here what is not per precision: the vector narrowing itself, the fp32
 * layernorm's exact sums, NaN propagation, refused targets, the streamed stores. */

static int bf16_any_nonfinite(const bf16 *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(bf16_to_float(x[i]))) return 1;
    return 0;
}

static void test_bf16_vector_narrowing(void)
{
#ifdef VMATH_BF16
    const uint32_t bits[16] = {0x3f808000u /* tie, even: down */,
                               0x3f818000u /* tie, odd: up */,
                               0x3f808001u,
                               0xbf817fffu,
                               0x7f7fffffu /* FLT_MAX: to inf */,
                               0x7f800000u,
                               0xff800000u,
                               0x7fc00000u,
                               0xffffffffu,
                               0x7f800001u /* signalling NaN: quiet */,
                               0x00000000u,
                               0x80000000u,
                               0x00800000u /* FLT_MIN */,
                               0x3eaaaaabu,
                               0xc2c80000u,
                               0x00000001u /* subnormal */};
    float x[16];
    memcpy(x, bits, sizeof x);
    bf16 h[16], hi[16];
    _mm256_storeu_si256((__m256i *)h, vbf16_narrow512(_mm512_loadu_ps(x)));
    _mm256_storeu_si256((__m256i *)hi, vbf16_narrow512_int(_mm512_loadu_ps(x)));
    for (int i = 0; i < 16; i++) {
        bf16 want = bf16_from_float(x[i]);
        CHECK(hi[i] == want, "integer narrowing 0x%08x: 0x%04x, expected 0x%04x", bits[i], hi[i], want);
#ifdef __AVX512BF16__
        if (i == 15) want = 0; /* vcvtneps2bf16 flushes fp32 subnormals to zero */
#endif
        CHECK(h[i] == want, "narrowing 0x%08x: 0x%04x, expected 0x%04x", bits[i], h[i], want);
    }
    float back[16];
    _mm512_storeu_ps(back, vbf16_load512(h, 16));
    for (int i = 0; i < 16; i++)
        CHECK(memcmp(&back[i], &(uint32_t){(uint32_t)h[i] << 16}, 4) == 0, "widening lane %d", i);
    /* a masked tail touches only its lanes */
    bf16 t[16];
    for (int i = 0; i < 16; i++) t[i] = 0x1234;
    vbf16_store512(t, _mm512_set1_ps(1.0f), 5);
    CHECK(t[4] == 0x3f80 && t[5] == 0x1234, "a 5-lane store wrote 0x%04x 0x%04x", t[4], t[5]);
#endif
}

/* The statistics as layernorm.h defines them: float sums from c = 0 upwards. */
static void ln_stats_scalar(float *mean, float *rstd, const float *x, int C)
{
    float m = 0.0f, v = 0.0f;
    for (int c = 0; c < C; c++) m += x[c];
    m /= (float)C;
    for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
    v /= (float)C;
    *mean = m;
    *rstd = 1.0f / sqrtf(v + LAYERNORM_EPS);
}

static void test_layernorm_bf16(void)
{
    /* rows past a group of 16 and columns past a vector of 16, both ways */
    const int shapes[][2] = {{37, 33}, {16, 64}, {5, 512}, {35, 771}};
    for (int k = 0; k < 4; k++) {
        const int N = shapes[k][0], C = shapes[k][1];
        size_t n = (size_t)N * C;
        unsigned st = 21u + (unsigned)k;
        float *x = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float)), *w = malloc(C * sizeof(float)),
              *b = malloc(C * sizeof(float)), *mean = malloc(N * sizeof(float)), *rstd = malloc(N * sizeof(float));
        bf16 *outb = malloc(n * sizeof(bf16));
        rand_fill(x, n, &st);
        for (size_t i = 0; i < n; i++) x[i] = 3.0f * x[i] + 0.5f;
        rand_fill(w, (size_t)C, &st);
        rand_fill(b, (size_t)C, &st);
        layernorm_forward(out, mean, rstd, x, w, b, N, C);
        int exact = 1;
        for (int i = 0; i < N && exact; i++) {
            float m, s;
            ln_stats_scalar(&m, &s, x + (size_t)i * C, C);
            exact = m == mean[i] && s == rstd[i];
            for (int c = 0; c < C && exact; c++)
                exact = out[(size_t)i * C + c] == (x[(size_t)i * C + c] - m) * s * w[c] + b[c];
            CHECK(exact,
                  "N=%d C=%d row %d: not the scalar definition's bits (mean %.9g vs %.9g, rstd %.9g vs %.9g)",
                  N, C, i, mean[i], m, rstd[i], s);
        }
        /* NaN in row 1 (inside the first group of 16): that row's output NaN, the others finite */
        x[(size_t)C + 3] = NAN;
        layernorm_forward_bf16(outb, mean, rstd, x, w, b, N, C);
        CHECK(isnan(mean[1]) && bf16_any_nonfinite(outb + C, (size_t)C) && !bf16_any_nonfinite(outb, (size_t)C) &&
                  !bf16_any_nonfinite(outb + 2 * (size_t)C, n - 2 * (size_t)C),
              "N=%d C=%d: a NaN in row 1 must make row 1 NaN and only it", N, C);
        free(x), free(out), free(w), free(b), free(mean), free(rstd), free(outb);
    }
}

static void test_gelu_bf16_nan(void)
{
    enum { N = 1007 }; /* a masked tail */
    float x[N];
    bf16 outb[N];
    unsigned st = 31;
    rand_fill(x, N, &st);
    for (int i = 0; i < N; i++) x[i] *= 6.0f;
    x[500] = NAN;
    gelu_forward_bf16(outb, x, N);
    CHECK(isnan(bf16_to_float(outb[500])) && !bf16_any_nonfinite(outb, 500) && !bf16_any_nonfinite(outb + 501, N - 501),
          "gelu_forward_bf16: NaN did not propagate to its element alone");
}

static void test_crossentropy_bf16(void)
{
    enum { N = 6, V = 77 }; /* 77: four vector steps and a masked tail of 13 */
    unsigned st = 13;
    float logits[N * V], losses[N], lse[N], losses2[N], lse2[N], dl[N];
    bf16 db[N * V], db2[N * V], before[N * V];
    int targets[N] = {0, 76, 64, 5, 70, 33};
    rand_fill(logits, N * V, &st);
    for (int i = 0; i < N * V; i++) logits[i] *= 8.0f;
    rand_fill(dl, N, &st);
    CHECK(crossentropy_forward(losses, lse, logits, targets, N, V) == KERNEL_OK, "forward refused valid targets");
    /* a bad target: KERNEL_EINDEX and nothing written */
    int bad[N] = {0, 1, V, 2, 3, 4};
    for (int i = 0; i < N * V; i++) before[i] = db[i] = (bf16)(0x1234 + i);
    memcpy(losses2, losses, sizeof losses), memcpy(lse2, lse, sizeof lse);
    CHECK(crossentropy_backward_bf16(db, dl, logits, lse, bad, N, V) == KERNEL_EINDEX,
          "backward_bf16: a target of V accepted");
    bad[2] = -1;
    CHECK(crossentropy_fused_bf16(losses2, lse2, db, logits, dl, bad, N, V) == KERNEL_EINDEX,
          "fused: a target of -1 accepted");
    CHECK(memcmp(db, before, sizeof db) == 0 && memcmp(losses2, losses, sizeof losses) == 0 &&
              memcmp(lse2, lse, sizeof lse) == 0,
          "a refused call wrote its outputs");
    /* NaN in row 1: its loss and gradient NaN, row 0 finite */
    logits[V + 40] = NAN;
    CHECK(crossentropy_fused_bf16(losses2, lse2, db2, logits, dl, targets, N, V) == KERNEL_OK && isnan(losses2[1]) &&
              isfinite(losses2[0]) && bf16_any_nonfinite(db2 + V, V) && !bf16_any_nonfinite(db2, V),
          "fused: a NaN logit did not propagate to its row alone");
}

/* A gradient large enough for the streamed stores (rows of V = 2^20 + 53: aligned and unaligned
 * row starts, a masked tail). */
static void test_crossentropy_bf16_large(void)
{
    const int N = 4, V = (1 << 20) + 53;
    size_t n = (size_t)N * V;
    float *logits = mem_alloc(n, sizeof(float), "logits"), *dref = mem_alloc(n, sizeof(float), "dlogits");
    bf16 *db = mem_alloc(n, sizeof(bf16), "bf16 dlogits"), *db2 = mem_alloc(n, sizeof(bf16), "bf16 dlogits");
    float losses[4], lse[4], losses2[4], lse2[4], dl[4] = {0.25f, -0.5f, 1.0f, 0.125f};
    int targets[4] = {0, V - 1, V - 40, 12345};
    unsigned st = 29;
    if (!logits || !dref || !db || !db2) {
        CHECK(0, "out of memory");
    } else {
        rand_fill(logits, n, &st);
        for (size_t i = 0; i < n; i++) logits[i] *= 6.0f;
        crossentropy_forward(losses, lse, logits, targets, N, V);
        crossentropy_backward(dref, dl, logits, lse, targets, N, V);
        CHECK(crossentropy_backward_bf16(db, dl, logits, lse, targets, N, V) == KERNEL_OK &&
                  bf16_is_rounding("crossentropy_backward_bf16, streamed", db, dref, n),
              "large V: not the rounding of crossentropy_backward");
        CHECK(crossentropy_fused_bf16(losses2, lse2, db2, logits, dl, targets, N, V) == KERNEL_OK &&
                  memcmp(db, db2, n * sizeof(bf16)) == 0 && memcmp(losses, losses2, sizeof losses) == 0 &&
                  memcmp(lse, lse2, sizeof lse) == 0,
              "large V: fused differs from forward + backward_bf16");
    }
    free(logits), free(dref), free(db), free(db2);
}

/* adamw_update's documented expression, element by element (the pre-vectorisation loop). */
static void adamw_scalar(float *p, const float *g, float *m, float *v, size_t n, const adamw_params *hp, int t)
{
    const float b1 = hp->beta1, b2 = hp->beta2, gs = hp->grad_scale != 0.0f ? hp->grad_scale : 1.0f;
    const float c1 = 1.0f / (float)(1.0 - pow((double)b1, t)), c2 = 1.0f / (float)(1.0 - pow((double)b2, t));
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * gs;
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= hp->lr * ((mi * c1) / (sqrtf(vi * c2) + hp->eps) + hp->weight_decay * p[i]);
    }
}

/* Five steps of adamw_update and of adamw_scalar from the same state: bit-identical; then a NaN
 * gradient makes its parameter NaN, and only it. */
static void check_adamw_scalar(size_t n)
{
    float *st_[7];
    for (int i = 0; i < 7; i++) st_[i] = calloc(n, sizeof(float));
    float *p1 = st_[0], *m1 = st_[1], *v1 = st_[2], *p3 = st_[3], *m3 = st_[4], *v3 = st_[5], *g = st_[6];
    unsigned st = 17;
    rand_fill(p1, n, &st);
    memcpy(p3, p1, n * sizeof(float));
    adamw_params hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f};
    for (int t = 1; t <= 5; t++) {
        rand_fill(g, n, &st);
        adamw_update(p1, g, m1, v1, n, &hp, t);
        adamw_scalar(p3, g, m3, v3, n, &hp, t);
    }
    size_t nb = n * sizeof(float);
    CHECK(memcmp(p1, p3, nb) == 0 && memcmp(m1, m3, nb) == 0 && memcmp(v1, v3, nb) == 0,
          "n=%zu: adamw_update is not its scalar expression bit for bit", n);
    g[4100] = NAN;
    adamw_update(p1, g, m1, v1, n, &hp, 6);
    int others = 1;
    for (size_t i = 0; i < n; i++) others &= i == 4100 || isfinite(p1[i]);
    CHECK(isnan(p1[4100]) && others, "n=%zu: adamw_update: a NaN gradient did not propagate to its element alone", n);
    for (int i = 0; i < 7; i++) free(st_[i]);
}

static void test_adamw_scalar(void)
{
    check_adamw_scalar(3 * 4096 + 21);           /* several scheduling blocks and a masked tail */
    check_adamw_scalar(((size_t)1 << 20) + 37); /* many blocks over the threads */
}

const test_case tests_kernels[] = {
    {"matmul: dimension checks", test_matmul_dimension_checks},
    {"layernorm: dres added, in place, dweight accumulates; mean 0 variance 1", test_layernorm},
    {"gelu: exact erf form, in-place backward", test_gelu},
    {"cross-entropy: in-place backward, uniform logits give ln V, bad targets", test_crossentropy},
    {"adamw: constant gradient matches the closed form", test_adamw_closed_form},
    {"grad norm", test_grad_norm},
    {"adamw: grad_scale (clipping folded into the update) = gradients scaled first; 0 means 1",
     test_adamw_grad_scale},
    {"bf16: vector narrowing rounds as bf16_from_float (ties, NaN, infinities), widening exact",
     test_bf16_vector_narrowing},
    {"layernorm: the scalar sums' bits; bf16 output NaN in its row alone", test_layernorm_bf16},
    {"gelu: bf16 output NaN", test_gelu_bf16_nan},
    {"cross-entropy: bf16 gradient and fused refuse bad targets writing nothing, NaN", test_crossentropy_bf16},
    {"cross-entropy: bf16 gradient and fused at V = 2^20 + 53 (streamed stores)", test_crossentropy_bf16_large},
    {"adamw: vectorised = scalar expression, NaN", test_adamw_scalar},
    {NULL, NULL},
};
