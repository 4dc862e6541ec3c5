/* Kernels against double-precision references, backward passes against central finite
 * differences, and closed-form properties. */
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

/* ---------------------------------------------------------------- comparator */

static void test_comparator_catches_perturbation(void)
{
    enum { N = 64 };
    float x[N];
    double r[N];
    unsigned st = 1;
    rand_fill(x, N, &st);
    to_double(r, x, N);
    CHECK(allclose("identical", x, r, N, 1e-7, 1e-6), "identical arrays must compare equal");
    x[17] += 1e-3f;
    printf("    (the next line is the comparator rejecting a perturbed array, as it must)\n");
    CHECK(!allclose("perturbed", x, r, N, 1e-6, 1e-5), "a 1e-3 perturbation passed a 1e-6 tolerance");
    x[17] = NAN;
    CHECK(!allclose("nan", x, r, N, 1e30, 1e30), "a NaN passed the comparator");
}

/* ---------------------------------------------------------------- matmul */

typedef struct {
    int N, C, OC, which; /* which: 0 inp, 1 weight, 2 bias */
    double *x, *w, *b, *dout, *out;
} mm_fd;

static double mm_loss(void *p, const double *v)
{
    mm_fd *c = p;
    const double *x = c->which == 0 ? v : c->x, *w = c->which == 1 ? v : c->w, *b = c->which == 2 ? v : c->b;
    matmul_forward_ref(c->out, x, w, b, c->N, c->C, c->OC);
    double l = 0;
    for (int i = 0; i < c->N * c->OC; i++) l += c->dout[i] * c->out[i];
    return l;
}

static void test_matmul_forward_backward(void)
{
    const int sizes[2][3] = {{7, 5, 6}, {64, 96, 80}};
    for (int s = 0; s < 2; s++) {
        int N = sizes[s][0], C = sizes[s][1], OC = sizes[s][2];
        unsigned st = 42u + s;
        float *x = malloc(sizeof(float) * N * C), *w = malloc(sizeof(float) * OC * C), *b = malloc(sizeof(float) * OC);
        float *out = malloc(sizeof(float) * N * OC), *dout = malloc(sizeof(float) * N * OC);
        float *dx = calloc((size_t)N * C, sizeof(float)), *dw = calloc((size_t)OC * C, sizeof(float)),
              *db = calloc((size_t)OC, sizeof(float));
        double *xd = malloc(sizeof(double) * N * C), *wd = malloc(sizeof(double) * OC * C), *bd = malloc(sizeof(double) * OC);
        double *outd = malloc(sizeof(double) * N * OC), *doutd = malloc(sizeof(double) * N * OC);
        double *dxd = calloc((size_t)N * C, sizeof(double)), *dwd = calloc((size_t)OC * C, sizeof(double)),
               *dbd = calloc((size_t)OC, sizeof(double));
        rand_fill(x, (size_t)N * C, &st);
        rand_fill(w, (size_t)OC * C, &st);
        rand_fill(b, (size_t)OC, &st);
        rand_fill(dout, (size_t)N * OC, &st);
        to_double(xd, x, (size_t)N * C);
        to_double(wd, w, (size_t)OC * C);
        to_double(bd, b, (size_t)OC);
        to_double(doutd, dout, (size_t)N * OC);
        CHECK(matmul_forward(out, x, w, b, N, C, OC) == 0, "matmul_forward refused valid dims");
        matmul_forward_ref(outd, xd, wd, bd, N, C, OC);
        CHECK(allclose("matmul forward", out, outd, (size_t)N * OC, 1e-5, 1e-5), "forward differs from reference");
        CHECK(matmul_backward_input(dx, dout, w, N, C, OC) == 0, "backward_input refused valid dims");
        CHECK(matmul_backward_weight(dw, db, dout, x, N, C, OC) == 0, "backward_weight refused valid dims");
        matmul_backward_input_ref(dxd, doutd, wd, N, C, OC);
        matmul_backward_weight_ref(dwd, dbd, doutd, xd, N, C, OC);
        CHECK(allclose("matmul dinp", dx, dxd, (size_t)N * C, 1e-5, 1e-5), "dinp differs from reference");
        CHECK(allclose("matmul dweight", dw, dwd, (size_t)OC * C, 1e-5, 1e-5), "dweight differs from reference");
        CHECK(allclose("matmul dbias", db, dbd, (size_t)OC, 1e-5, 1e-5), "dbias differs from reference");
        mm_fd c = {N, C, OC, 0, xd, wd, bd, doutd, outd};
        c.which = 0;
        CHECK(fd_check("matmul dinp", xd, (size_t)N * C, dx, mm_loss, &c, 200, 1e-4), "dinp vs finite differences");
        c.which = 1;
        CHECK(fd_check("matmul dweight", wd, (size_t)OC * C, dw, mm_loss, &c, 200, 1e-4), "dweight vs finite differences");
        c.which = 2;
        CHECK(fd_check("matmul dbias", bd, (size_t)OC, db, mm_loss, &c, 200, 1e-4), "dbias vs finite differences");
        free(x), free(w), free(b), free(out), free(dout), free(dx), free(dw), free(db);
        free(xd), free(wd), free(bd), free(outd), free(doutd), free(dxd), free(dwd), free(dbd);
    }
}

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

typedef struct {
    int N, C, which;
    double *x, *w, *b, *dout, *out;
} ln_fd;

static double ln_loss(void *p, const double *v)
{
    ln_fd *c = p;
    layernorm_forward_ref(c->out, c->which == 0 ? v : c->x, c->which == 1 ? v : c->w, c->which == 2 ? v : c->b, c->N, c->C);
    double l = 0;
    for (int i = 0; i < c->N * c->C; i++) l += c->dout[i] * c->out[i];
    return l;
}

static void test_layernorm(void)
{
    enum { N = 5, C = 33 };
    unsigned st = 7;
    float x[N * C], w[C], b[C], out[N * C], mean[N], rstd[N], dout[N * C], dx[N * C] = {0}, dw[C] = {0}, db[C] = {0};
    double xd[N * C], wd[C], bd[C], outd[N * C], doutd[N * C];
    rand_fill(x, N * C, &st);
    for (int i = 0; i < N * C; i++) x[i] = 3.0f * x[i] + 0.5f;
    rand_fill(w, C, &st);
    rand_fill(b, C, &st);
    rand_fill(dout, N * C, &st);
    to_double(xd, x, N * C), to_double(wd, w, C), to_double(bd, b, C), to_double(doutd, dout, N * C);
    layernorm_forward(out, mean, rstd, x, w, b, N, C);
    layernorm_forward_ref(outd, xd, wd, bd, N, C);
    CHECK(allclose("layernorm forward", out, outd, N * C, 1e-5, 1e-5), "forward differs from reference");
    layernorm_backward(dx, NULL, dw, db, dout, x, w, mean, rstd, N, C);
    ln_fd c = {N, C, 0, xd, wd, bd, doutd, outd};
    CHECK(fd_check("layernorm dinp", xd, N * C, dx, ln_loss, &c, 400, 1e-3), "dinp vs finite differences");
    c.which = 1;
    CHECK(fd_check("layernorm dweight", wd, C, dw, ln_loss, &c, 400, 1e-3), "dweight vs finite differences");
    c.which = 2;
    CHECK(fd_check("layernorm dbias", bd, C, db, ln_loss, &c, 400, 1e-3), "dbias vs finite differences");
    /* the residual's gradient is added explicitly: dinp = dres + dx, also in place (dinp == dres);
     * whatever dinp held before is overwritten; parameter gradients accumulate */
    float dres[N * C], dx2[N * C], dw2[C], db2[C];
    double want[N * C], dw_twice[C];
    rand_fill(dres, N * C, &st);
    for (int i = 0; i < N * C; i++) dx2[i] = 1e6f, want[i] = (double)dres[i] + dx[i];
    memcpy(dw2, dw, sizeof dw2), memcpy(db2, db, sizeof db2);
    layernorm_backward(dx2, dres, dw2, db2, dout, x, w, mean, rstd, N, C);
    CHECK(allclose("layernorm dinp = dres + dx", dx2, want, N * C, 1e-6, 1e-6), "dres not added, or dinp not overwritten");
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

typedef struct {
    size_t n;
    double *dout, *out;
} gelu_fd;

static double gelu_loss(void *p, const double *v)
{
    gelu_fd *c = p;
    gelu_forward_ref(c->out, v, c->n);
    double l = 0;
    for (size_t i = 0; i < c->n; i++) l += c->dout[i] * c->out[i];
    return l;
}

static void test_gelu(void)
{
    enum { N = 200 };
    float x[N], out[N], dout[N], dx[N] = {0};
    double xd[N], outd[N], doutd[N];
    unsigned st = 11;
    rand_fill(x, N, &st);
    for (int i = 0; i < N; i++) x[i] *= 5.0f;
    rand_fill(dout, N, &st);
    to_double(xd, x, N), to_double(doutd, dout, N);
    gelu_forward(out, x, N);
    gelu_forward_ref(outd, xd, N);
    CHECK(allclose("gelu forward", out, outd, N, 1e-6, 1e-5), "forward differs from reference");
    gelu_backward(dx, x, dout, N);
    gelu_fd c = {N, doutd, outd};
    CHECK(fd_check("gelu dinp", xd, N, dx, gelu_loss, &c, N, 1e-4), "dinp vs finite differences");
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

typedef struct {
    int N, V;
    const int *targets;
    double *dl, *losses;
} ce_fd;

static double ce_loss(void *p, const double *v)
{
    ce_fd *c = p;
    crossentropy_forward_ref(c->losses, v, c->targets, c->N, c->V);
    double l = 0;
    for (int i = 0; i < c->N; i++) l += c->dl[i] * c->losses[i];
    return l;
}

static void test_crossentropy(void)
{
    enum { N = 4, V = 37 };
    unsigned st = 3;
    float logits[N * V], losses[N], lse[N], dl[N], dlogits[N * V] = {0};
    double logitsd[N * V], lossesd[N], dld[N];
    int targets[N] = {0, 36, 5, 17};
    rand_fill(logits, N * V, &st);
    for (int i = 0; i < N * V; i++) logits[i] *= 8.0f;
    rand_fill(dl, N, &st);
    to_double(logitsd, logits, N * V), to_double(dld, dl, N);
    CHECK(crossentropy_forward(losses, lse, logits, targets, N, V) == 0, "valid targets refused");
    crossentropy_forward_ref(lossesd, logitsd, targets, N, V);
    CHECK(allclose("cross-entropy forward", losses, lossesd, N, 1e-5, 1e-5), "forward differs from reference");
    for (int i = 0; i < N * V; i++) dlogits[i] = 1e6f; /* overwritten, not accumulated into */
    CHECK(crossentropy_backward(dlogits, dl, logits, lse, targets, N, V) == KERNEL_OK, "valid targets refused");
    ce_fd c = {N, V, targets, dld, lossesd};
    CHECK(fd_check("cross-entropy dlogits", logitsd, N * V, dlogits, ce_loss, &c, N * V, 1e-4), "dlogits vs finite differences");
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
    CHECK(crossentropy_backward_inplace(logits, dl, lse, bad, N, V) == KERNEL_EINDEX, "in place: a target of -1 was accepted");
}

/* ---------------------------------------------------------------- AdamW, norm, clip */

static void test_adamw_matches_reference(void)
{
    enum { N = 50 };
    unsigned st = 9;
    float p[N], g[N], m[N] = {0}, v[N] = {0};
    double pd[N], gd[N], md[N] = {0}, vd[N] = {0};
    rand_fill(p, N, &st);
    to_double(pd, p, N);
    adamw_params hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f};
    for (int t = 1; t <= 5; t++) {
        rand_fill(g, N, &st);
        to_double(gd, g, N);
        adamw_update(p, g, m, v, N, &hp, t);
        adamw_update_ref(pd, gd, md, vd, N, &hp, t);
    }
    CHECK(allclose("adamw params after 5 steps", p, pd, N, 1e-6, 1e-5), "AdamW differs from reference");
}

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

static void test_grad_norm_and_clip(void)
{
    float g[3] = {3.0f, 4.0f, 12.0f};
    double norm = sqrt(grad_sumsq(g, 3));
    CHECK(fabs(norm - 13.0) < 1e-9, "norm of (3, 4, 12) = %.9g, expected 13", norm);
    float f = grad_clip(g, 3, norm, 1.0f);
    double after = sqrt(grad_sumsq(g, 3));
    CHECK(fabs(after - 1.0) < 1e-5 && fabs(f - 1.0 / 13.0) < 1e-6, "clipped norm %.7g (factor %.7g)", after, f);
    CHECK(grad_clip(g, 3, after, 5.0f) == 1.0f, "a norm under the limit was clipped");
}

/* ---------------------------------------------------------------- bf16 outputs
 *
 * Each bf16 kernel is its fp32 kernel with the stored result rounded: compared bit for bit with
 * bf16_from_float of the fp32 kernel's output (inputs here are normal numbers, where the native
 * vcvtneps2bf16 and bf16_from_float agree). */


static int bf16_any_nonfinite(const bf16 *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(bf16_to_float(x[i]))) return 1;
    return 0;
}

static void test_bf16_vector_narrowing(void)
{
#ifdef VMATH_BF16
    const uint32_t bits[16] = {0x3f808000u /* tie, even: down */, 0x3f818000u /* tie, odd: up */, 0x3f808001u, 0xbf817fffu,
                               0x7f7fffffu /* FLT_MAX: to inf */, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffffffffu,
                               0x7f800001u /* signalling NaN: quiet */, 0x00000000u, 0x80000000u, 0x00800000u /* FLT_MIN */,
                               0x3eaaaaabu, 0xc2c80000u, 0x00000001u /* subnormal */};
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
    for (int i = 0; i < 16; i++) CHECK(memcmp(&back[i], &(uint32_t){(uint32_t)h[i] << 16}, 4) == 0, "widening lane %d", i);
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
              *b = malloc(C * sizeof(float)), *mean = malloc(N * sizeof(float)), *rstd = malloc(N * sizeof(float)),
              *mean2 = malloc(N * sizeof(float)), *rstd2 = malloc(N * sizeof(float));
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
            CHECK(exact, "N=%d C=%d row %d: not the scalar definition's bits (mean %.9g vs %.9g, rstd %.9g vs %.9g)", N, C, i,
                  mean[i], m, rstd[i], s);
        }
        layernorm_forward_bf16(outb, mean2, rstd2, x, w, b, N, C);
        CHECK(memcmp(mean, mean2, N * sizeof(float)) == 0 && memcmp(rstd, rstd2, N * sizeof(float)) == 0,
              "N=%d C=%d: bf16 mean/rstd differ from layernorm_forward's", N, C);
        CHECK(bf16_is_rounding("layernorm_forward_bf16", outb, out, n), "N=%d C=%d: not the rounding of layernorm_forward", N, C);
        /* NaN in row 1 (inside the first group of 16): that row's output NaN, the others finite */
        x[(size_t)C + 3] = NAN;
        layernorm_forward_bf16(outb, mean2, rstd2, x, w, b, N, C);
        CHECK(isnan(mean2[1]) && bf16_any_nonfinite(outb + C, (size_t)C) && !bf16_any_nonfinite(outb, (size_t)C) &&
                  !bf16_any_nonfinite(outb + 2 * (size_t)C, n - 2 * (size_t)C),
              "N=%d C=%d: a NaN in row 1 must make row 1 NaN and only it", N, C);
        free(x), free(out), free(w), free(b), free(mean), free(rstd), free(mean2), free(rstd2), free(outb);
    }
}

static void test_gelu_bf16(void)
{
    enum { N = 1007 }; /* a masked tail */
    float x[N], out[N];
    bf16 outb[N];
    unsigned st = 31;
    rand_fill(x, N, &st);
    for (int i = 0; i < N; i++) x[i] *= 6.0f;
    x[0] = 0.0f, x[1] = -10.0f, x[2] = 10.0f, x[3] = 1e-20f;
    gelu_forward(out, x, N);
    gelu_forward_bf16(outb, x, N);
    CHECK(bf16_is_rounding("gelu_forward_bf16", outb, out, N), "gelu_forward_bf16 is not the rounding of gelu_forward");
    outb[7] ^= 1; /* one bf16 ulp off */
    printf("    (the next line is the bf16 comparator rejecting a one-ulp error, as it must)\n");
    CHECK(!bf16_is_rounding("perturbed", outb, out, N), "the bf16 comparator passed a one-ulp error");
    x[500] = NAN;
    gelu_forward_bf16(outb, x, N);
    CHECK(isnan(bf16_to_float(outb[500])) && !bf16_any_nonfinite(outb, 500) && !bf16_any_nonfinite(outb + 501, N - 501),
          "gelu_forward_bf16: NaN did not propagate to its element alone");
}

static void test_crossentropy_bf16(void)
{
    enum { N = 6, V = 77 }; /* 77: four vector steps and a masked tail of 13 */
    unsigned st = 13;
    float logits[N * V], keep[N * V], losses[N], lse[N], losses2[N], lse2[N], dl[N], dref[N * V];
    bf16 db[N * V], db2[N * V], before[N * V];
    int targets[N] = {0, 76, 64, 5, 70, 33};
    rand_fill(logits, N * V, &st);
    for (int i = 0; i < N * V; i++) logits[i] *= 8.0f;
    rand_fill(dl, N, &st);
    memcpy(keep, logits, sizeof keep);
    CHECK(crossentropy_forward(losses, lse, logits, targets, N, V) == KERNEL_OK, "forward refused valid targets");
    CHECK(crossentropy_backward(dref, dl, logits, lse, targets, N, V) == KERNEL_OK, "backward refused valid targets");
    CHECK(crossentropy_backward_bf16(db, dl, logits, lse, targets, N, V) == KERNEL_OK, "backward_bf16 refused valid targets");
    CHECK(bf16_is_rounding("crossentropy_backward_bf16", db, dref, N * V), "not the rounding of crossentropy_backward");
    CHECK(memcmp(logits, keep, sizeof keep) == 0, "backward_bf16 changed the logits");
    CHECK(crossentropy_fused_bf16(losses2, lse2, db2, logits, dl, targets, N, V) == KERNEL_OK, "fused refused valid targets");
    CHECK(memcmp(losses, losses2, sizeof losses) == 0 && memcmp(lse, lse2, sizeof lse) == 0,
          "fused: losses or lse differ from crossentropy_forward's");
    CHECK(memcmp(db, db2, sizeof db) == 0, "fused: dlogits differ from crossentropy_backward_bf16's");
    CHECK(memcmp(logits, keep, sizeof keep) == 0, "fused changed the logits");
    /* a bad target: KERNEL_EINDEX and nothing written */
    int bad[N] = {0, 1, V, 2, 3, 4};
    for (int i = 0; i < N * V; i++) before[i] = db[i] = (bf16)(0x1234 + i);
    memcpy(losses2, losses, sizeof losses), memcpy(lse2, lse, sizeof lse);
    CHECK(crossentropy_backward_bf16(db, dl, logits, lse, bad, N, V) == KERNEL_EINDEX, "backward_bf16: a target of V accepted");
    bad[2] = -1;
    CHECK(crossentropy_fused_bf16(losses2, lse2, db, logits, dl, bad, N, V) == KERNEL_EINDEX, "fused: a target of -1 accepted");
    CHECK(memcmp(db, before, sizeof db) == 0 && memcmp(losses2, losses, sizeof losses) == 0 && memcmp(lse2, lse, sizeof lse) == 0,
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

/* Five steps of adamw_update, adamw_update_bf16 with and without a copy and adamw_scalar from
 * the same state: all bit-identical, the copy the rounding; then a NaN gradient. */
static void check_adamw_bf16(size_t n)
{
    float *st_[13];
    for (int i = 0; i < 13; i++) st_[i] = calloc(n, sizeof(float));
    float *p1 = st_[0], *m1 = st_[1], *v1 = st_[2], *p2 = st_[3], *m2 = st_[4], *v2 = st_[5], *p3 = st_[6], *m3 = st_[7],
          *v3 = st_[8], *p4 = st_[9], *m4 = st_[10], *v4 = st_[11], *g = st_[12];
    bf16 *pb = mem_calloc(n, sizeof(bf16), "bf16 copy"); /* 64-byte aligned: the streamed stores need 32 */
    unsigned st = 17;
    rand_fill(p1, n, &st);
    memcpy(p2, p1, n * sizeof(float)), memcpy(p3, p1, n * sizeof(float)), memcpy(p4, p1, n * sizeof(float));
    adamw_params hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f};
    for (int t = 1; t <= 5; t++) {
        rand_fill(g, n, &st);
        adamw_update(p1, g, m1, v1, n, &hp, t);
        adamw_update_bf16(p2, pb, g, m2, v2, n, &hp, t);
        adamw_scalar(p3, g, m3, v3, n, &hp, t);
        adamw_update_bf16(p4, NULL, g, m4, v4, n, &hp, t);
    }
    size_t nb = n * sizeof(float);
    CHECK(memcmp(p1, p3, nb) == 0 && memcmp(m1, m3, nb) == 0 && memcmp(v1, v3, nb) == 0,
          "n=%zu: adamw_update is not its scalar expression bit for bit", n);
    CHECK(memcmp(p1, p2, nb) == 0 && memcmp(m1, m2, nb) == 0 && memcmp(v1, v2, nb) == 0,
          "n=%zu: adamw_update_bf16: params, m or v differ from adamw_update's", n);
    CHECK(memcmp(p1, p4, nb) == 0 && memcmp(m1, m4, nb) == 0 && memcmp(v1, v4, nb) == 0,
          "n=%zu: adamw_update_bf16 without a copy differs from adamw_update", n);
    CHECK(bf16_is_rounding("adamw bf16 copy", pb, p2, n), "n=%zu: the bf16 copy is not the rounding of the updated params", n);
    /* NaN: a NaN gradient makes its parameter and its copy NaN, and only those */
    g[4100] = NAN;
    adamw_update_bf16(p2, pb, g, m2, v2, n, &hp, 6);
    CHECK(isnan(p2[4100]) && isnan(bf16_to_float(pb[4100])) && !bf16_any_nonfinite(pb, 4100) &&
              !bf16_any_nonfinite(pb + 4101, n - 4101),
          "n=%zu: adamw_update_bf16: a NaN gradient did not propagate to its element alone", n);
    for (int i = 0; i < 13; i++) free(st_[i]);
    free(pb);
}

static void test_adamw_bf16(void)
{
    check_adamw_bf16(3 * 4096 + 21);      /* several scheduling blocks and a masked tail */
    check_adamw_bf16(((size_t)1 << 20) + 37); /* large enough for the streamed copy */
}

const test_case tests_kernels[] = {
    {"comparator: rejects a perturbed array", test_comparator_catches_perturbation},
    {"matmul: forward and backward vs reference and finite differences", test_matmul_forward_backward},
    {"matmul: dimension checks", test_matmul_dimension_checks},
    {"layernorm: forward, backward (finite differences), mean 0 variance 1", test_layernorm},
    {"gelu: exact erf form, backward (finite differences)", test_gelu},
    {"cross-entropy: fused softmax, backward (finite differences), bad targets", test_crossentropy},
    {"adamw: matches the double-precision reference", test_adamw_matches_reference},
    {"adamw: constant gradient matches the closed form", test_adamw_closed_form},
    {"grad norm and clipping", test_grad_norm_and_clip},
    {"bf16: vector narrowing rounds as bf16_from_float (ties, NaN, infinities), widening exact", test_bf16_vector_narrowing},
    {"layernorm: the scalar sums' bits, bf16 output the rounding with identical mean/rstd, NaN", test_layernorm_bf16},
    {"gelu: bf16 output the rounding of gelu_forward, NaN", test_gelu_bf16},
    {"cross-entropy: bf16 gradient the rounding of backward, fused = forward + backward, bad targets, NaN", test_crossentropy_bf16},
    {"cross-entropy: bf16 gradient and fused at V = 2^20 + 53 (streamed stores)", test_crossentropy_bf16_large},
    {"adamw: vectorised = scalar expression; bf16 variant bit-identical, its copy the rounding, NaN", test_adamw_bf16},
    {NULL, NULL},
};
