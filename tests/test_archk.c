/* The kernels of the Llama-2, GPT-J and MPT architectures: RMSNorm, SwiGLU, and rotary
 * embedding with grouped-query heads and GPT-J's interleaved pairs. Each forward against its
 * double-precision definition, each backward against finite differences in double, the bf16
 * forwards against the fp32 ones rounded (bit for bit), NaN propagation, vector tails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/rmsnorm.h"
#include "../kernels/rope.h"
#include "../kernels/swiglu.h"
#include "check.h"

/* out[i] == bf16_from_float(ref[i]) for every i. */
static int is_rounding(const char *what, const bf16 *out, const float *ref, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (out[i] != bf16_from_float(ref[i])) {
            printf("    %s: element %zu is 0x%04x (%.9g), the rounding of %.9g is 0x%04x\n", what, i, out[i],
                   bf16_to_float(out[i]), ref[i], bf16_from_float(ref[i]));
            return 0;
        }
    return 1;
}

static int any_nonfinite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 1;
    return 0;
}

static int bf16_any_nonfinite(const bf16 *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(bf16_to_float(x[i]))) return 1;
    return 0;
}

/* ---------------------------------------------------------------- rmsnorm */

#define RMS_EPS 1e-5f

typedef struct {
    int N, C, which; /* which: 0 differentiate by inp, 1 by weight */
    double *x, *w, *dout, *out;
} rms_fd;

static double rms_loss(void *p, const double *v)
{
    rms_fd *c = p;
    rmsnorm_forward_ref(c->out, c->which == 0 ? v : c->x, c->which == 1 ? v : c->w, c->N, c->C, RMS_EPS);
    double l = 0;
    for (size_t i = 0; i < (size_t)c->N * c->C; i++) l += c->dout[i] * c->out[i];
    return l;
}

/* Forward vs the definition, backward vs finite differences, dres and accumulation, at (N, C). */
static void check_rmsnorm(int N, int C)
{
    size_t n = (size_t)N * C;
    unsigned st = 3u + (unsigned)C;
    float *x = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float)), *dout = malloc(n * sizeof(float)),
          *dx = malloc(n * sizeof(float)), *dres = malloc(n * sizeof(float)), *dx2 = malloc(n * sizeof(float));
    float *w = malloc(C * sizeof(float)), *dw = calloc((size_t)C, sizeof(float)), *dw2 = malloc(C * sizeof(float));
    float *rstd = malloc(N * sizeof(float));
    double *xd = malloc(n * sizeof(double)), *outd = malloc(n * sizeof(double)), *doutd = malloc(n * sizeof(double)),
           *want = malloc(n * sizeof(double)), *wd = malloc(C * sizeof(double)), *dwd = malloc(C * sizeof(double));
    rand_fill(x, n, &st);
    for (size_t i = 0; i < n; i++) x[i] = 3.0f * x[i] + 0.5f; /* a non-zero mean: RMSNorm must not remove it */
    rand_fill(w, (size_t)C, &st);
    rand_fill(dout, n, &st);
    to_double(xd, x, n), to_double(wd, w, (size_t)C), to_double(doutd, dout, n);
    char what[96];
    rmsnorm_forward(out, rstd, x, w, N, C, RMS_EPS);
    rmsnorm_forward_ref(outd, xd, wd, N, C, RMS_EPS);
    snprintf(what, sizeof what, "rmsnorm forward N=%d C=%d", N, C);
    CHECK(allclose(what, out, outd, n, 1e-6, 1e-5), "%s differs from the definition", what);
    for (size_t i = 0; i < n; i++) dx[i] = 1e6f; /* overwritten, not added to */
    rmsnorm_backward(dx, NULL, dw, dout, x, w, rstd, N, C);
    rms_fd c = {N, C, 0, xd, wd, doutd, outd};
    snprintf(what, sizeof what, "rmsnorm dinp N=%d C=%d", N, C);
    CHECK(fd_check(what, xd, n, dx, rms_loss, &c, 400, 1e-4), "%s vs finite differences", what);
    c.which = 1;
    snprintf(what, sizeof what, "rmsnorm dweight N=%d C=%d", N, C);
    CHECK(fd_check(what, wd, (size_t)C, dw, rms_loss, &c, 400, 1e-4), "%s vs finite differences", what);
    /* dinp = dres + dx, also in place (dinp == dres); dweight accumulates */
    rand_fill(dres, n, &st);
    for (size_t i = 0; i < n; i++) dx2[i] = 1e6f, want[i] = (double)dres[i] + dx[i];
    memcpy(dw2, dw, C * sizeof(float));
    rmsnorm_backward(dx2, dres, dw2, dout, x, w, rstd, N, C);
    CHECK(allclose("rmsnorm dinp = dres + dx", dx2, want, n, 1e-6, 1e-6), "dres not added, or dinp not overwritten");
    rmsnorm_backward(dres, dres, dw2, dout, x, w, rstd, N, C);
    CHECK(allclose("rmsnorm in place", dres, want, n, 1e-6, 1e-6), "in-place residual gradient differs");
    for (int i = 0; i < C; i++) dwd[i] = 3.0 * dw[i];
    CHECK(allclose("rmsnorm dweight accumulates", dw2, dwd, (size_t)C, 1e-6, 1e-5), "dweight does not accumulate");
    /* property: with unit weight every row has root mean square 1 (up to eps) */
    for (int i = 0; i < C; i++) w[i] = 1.0f;
    rmsnorm_forward(out, rstd, x, w, N, C, RMS_EPS);
    for (int r = 0; r < N; r++) {
        double ss = 0, ssx = 0;
        for (int i = 0; i < C; i++) ss += (double)out[(size_t)r * C + i] * out[(size_t)r * C + i], ssx += xd[(size_t)r * C + i] * xd[(size_t)r * C + i];
        double want_rms = sqrt(ssx / C / (ssx / C + RMS_EPS));
        CHECK(fabs(sqrt(ss / C) - want_rms) < 1e-5, "N=%d C=%d row %d: rms %.9g, expected %.9g", N, C, r, sqrt(ss / C), want_rms);
    }
    free(x), free(out), free(dout), free(dx), free(dres), free(dx2), free(w), free(dw), free(dw2), free(rstd);
    free(xd), free(outd), free(doutd), free(want), free(wd), free(dwd);
}

static void test_rmsnorm(void)
{
    check_rmsnorm(5, 33);  /* a vector tail of 1 */
    check_rmsnorm(3, 64);  /* whole vectors */
    check_rmsnorm(7, 250); /* a tail of 10 */
    check_rmsnorm(2, 7);   /* shorter than a vector */
}

static void test_rmsnorm_bf16(void)
{
    const int shapes[][2] = {{37, 33}, {16, 64}, {5, 4096}, {9, 771}};
    for (int k = 0; k < 4; k++) {
        const int N = shapes[k][0], C = shapes[k][1];
        size_t n = (size_t)N * C;
        unsigned st = 41u + (unsigned)k;
        float *x = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float)), *w = malloc(C * sizeof(float)),
              *rstd = malloc(N * sizeof(float)), *rstd2 = malloc(N * sizeof(float));
        bf16 *outb = malloc(n * sizeof(bf16));
        rand_fill(x, n, &st);
        for (size_t i = 0; i < n; i++) x[i] = 4.0f * x[i] - 1.0f;
        rand_fill(w, (size_t)C, &st);
        rmsnorm_forward(out, rstd, x, w, N, C, RMS_EPS);
        rmsnorm_forward_bf16(outb, rstd2, x, w, N, C, RMS_EPS);
        CHECK(memcmp(rstd, rstd2, N * sizeof(float)) == 0, "N=%d C=%d: bf16 rstd differs from rmsnorm_forward's", N, C);
        CHECK(is_rounding("rmsnorm_forward_bf16", outb, out, n), "N=%d C=%d: not the rounding of rmsnorm_forward", N, C);
        /* NaN in row 1, in the vector tail when there is one: that row NaN, the others finite */
        x[(size_t)C + (size_t)C - 1] = NAN;
        rmsnorm_forward(out, rstd, x, w, N, C, RMS_EPS);
        rmsnorm_forward_bf16(outb, rstd2, x, w, N, C, RMS_EPS);
        int row_nan = 1;
        for (int c = 0; c < C; c++) row_nan &= isnan(out[(size_t)C + c]) && isnan(bf16_to_float(outb[(size_t)C + c]));
        CHECK(isnan(rstd[1]) && isnan(rstd2[1]) && row_nan && !any_nonfinite(out, (size_t)C) &&
                  !any_nonfinite(out + 2 * (size_t)C, n - 2 * (size_t)C) && !bf16_any_nonfinite(outb, (size_t)C) &&
                  !bf16_any_nonfinite(outb + 2 * (size_t)C, n - 2 * (size_t)C),
              "N=%d C=%d: a NaN in row 1 must make all of row 1 NaN and only it", N, C);
        /* and through backward: dinp of row 1 NaN, dweight NaN */
        float *dout = malloc(n * sizeof(float)), *dx = malloc(n * sizeof(float)), *dw = calloc((size_t)C, sizeof(float));
        rand_fill(dout, n, &st);
        rmsnorm_backward(dx, NULL, dw, dout, x, w, rstd, N, C);
        CHECK(isnan(dx[C]) && isnan(dx[2 * (size_t)C - 1]) && !any_nonfinite(dx, (size_t)C) && isnan(dw[C - 1]),
              "N=%d C=%d: a NaN input must reach its row's dinp and dweight", N, C);
        free(x), free(out), free(w), free(rstd), free(rstd2), free(outb), free(dout), free(dx), free(dw);
    }
}

/* ---------------------------------------------------------------- swiglu */

typedef struct {
    int N, I;
    double *dout, *out;
} swiglu_fd;

static double swiglu_loss(void *p, const double *v)
{
    swiglu_fd *c = p;
    swiglu_forward_ref(c->out, v, c->N, c->I);
    double l = 0;
    for (size_t i = 0; i < (size_t)c->N * c->I; i++) l += c->dout[i] * c->out[i];
    return l;
}

static void check_swiglu(int N, int I)
{
    size_t ni = (size_t)N * 2 * I, no = (size_t)N * I;
    unsigned st = 17u + (unsigned)I;
    float *x = malloc(ni * sizeof(float)), *dx = malloc(ni * sizeof(float)), *out = malloc(no * sizeof(float)),
          *dout = malloc(no * sizeof(float));
    double *xd = malloc(ni * sizeof(double)), *outd = malloc(no * sizeof(double)), *doutd = malloc(no * sizeof(double));
    rand_fill(x, ni, &st);
    for (size_t i = 0; i < ni; i++) x[i] *= 6.0f;
    rand_fill(dout, no, &st);
    to_double(xd, x, ni), to_double(doutd, dout, no);
    char what[96];
    swiglu_forward(out, x, N, I);
    swiglu_forward_ref(outd, xd, N, I);
    snprintf(what, sizeof what, "swiglu forward N=%d I=%d", N, I);
    CHECK(allclose(what, out, outd, no, 1e-6, 1e-5), "%s differs from the definition", what);
    for (size_t i = 0; i < ni; i++) dx[i] = 1e6f;
    swiglu_backward(dx, x, dout, N, I);
    swiglu_fd c = {N, I, doutd, outd};
    snprintf(what, sizeof what, "swiglu dinp N=%d I=%d", N, I);
    CHECK(fd_check(what, xd, ni, dx, swiglu_loss, &c, 600, 1e-4), "%s vs finite differences", what);
    free(x), free(dx), free(out), free(dout), free(xd), free(outd), free(doutd);
}

static void test_swiglu(void)
{
    check_swiglu(3, 37);  /* a vector tail of 5 */
    check_swiglu(2, 64);  /* whole vectors */
    check_swiglu(4, 5);   /* shorter than a vector */
    /* the gate/up split: silu(1) * 2 = 2 / (1 + e^-1) */
    float in[2] = {1.0f, 2.0f}, o;
    swiglu_forward(&o, in, 1, 1);
    CHECK(fabs(o - 2.0 / (1.0 + exp(-1.0))) < 1e-6, "silu(1) * 2 = %.9g, expected %.9g", o, 2.0 / (1.0 + exp(-1.0)));
}

/* Large |gate| (exp overflow), zeros, NaN and infinities; the bf16 forward is the rounding. */
static void test_swiglu_edges_bf16(void)
{
    enum { I = 45, N = 3 }; /* tails of 13 */
    float x[N * 2 * I], out[N * I], dx[N * 2 * I], dout[N * I];
    bf16 outb[N * I];
    unsigned st = 5;
    rand_fill(x, N * 2 * I, &st);
    for (int i = 0; i < N * 2 * I; i++) x[i] *= 8.0f;
    rand_fill(dout, N * I, &st);
    const float gates[] = {0.0f, -0.0f, 20.0f, -20.0f, 50.0f, -50.0f, 88.0f, 100.0f, -100.0f, 1e30f, -1e30f, 3e38f, -3e38f};
    for (int j = 0; j < 13; j++) x[j] = gates[j], x[I + j] = 0.5f;
    swiglu_forward(out, x, N, I);
    swiglu_forward_bf16(outb, x, N, I);
    CHECK(is_rounding("swiglu_forward_bf16", outb, out, N * I), "swiglu_forward_bf16 is not the rounding of swiglu_forward");
    CHECK(!any_nonfinite(out, N * I), "a finite gate gave a non-finite silu");
    CHECK(fabs(out[2] - 20.0 / (1.0 + exp(-20.0)) * 0.5) < 1e-6 && out[7] == 50.0f && out[8] == 0.0f && out[11] == 1.5e38f,
          "large gates: silu(20)/2 = %.9g, silu(100)/2 = %.9g, silu(-100)/2 = %.9g, silu(3e38)/2 = %.9g", out[2], out[7], out[8],
          out[11]);
    CHECK(fabs(out[5] - (-50.0 / (1.0 + exp(50.0)) * 0.5)) < 1e-25, "silu(-50)/2 = %.9g", out[5]);
    swiglu_backward(dx, x, dout, N, I);
    CHECK(!any_nonfinite(dx, N * 2 * I), "a finite gate gave a non-finite gradient");
    CHECK(dx[8] == 0.0f && dx[I + 8] == 0.0f && fabs(dx[7] - dout[7] * 0.5) <= 1e-6 * fabs(dout[7]),
          "large gates: dgate(-100) %.9g, dup(-100) %.9g, dgate(100) %.9g", dx[8], dx[I + 8], dx[7]);
    /* NaN in a gate and in an up value: only their outputs (and gradients) NaN */
    x[I + 2 * I + 20] = NAN;     /* row 1, up 20 */
    x[2 * 2 * I + 44] = NAN;     /* row 2, gate 44 (in the tail) */
    swiglu_forward(out, x, N, I);
    swiglu_forward_bf16(outb, x, N, I);
    int others = 1;
    for (int i = 0; i < N * I; i++)
        if (i != I + 20 && i != 2 * I + 44) others &= isfinite(out[i]) && isfinite(bf16_to_float(outb[i]));
    CHECK(isnan(out[I + 20]) && isnan(out[2 * I + 44]) && isnan(bf16_to_float(outb[I + 20])) &&
              isnan(bf16_to_float(outb[2 * I + 44])) && others,
          "NaN in gate or up must give NaN there and only there");
    swiglu_backward(dx, x, dout, N, I);
    CHECK(isnan(dx[2 * I + 20]) && isnan(dx[2 * 2 * I + 44]) && isnan(dx[2 * 2 * I + I + 44]),
          "NaN must reach dgate of a NaN up and both gradients of a NaN gate");
    /* infinities stay non-finite */
    float inf_in[4] = {INFINITY, -INFINITY, 1.0f, 1.0f}, inf_out[2];
    swiglu_forward(inf_out, inf_in, 1, 2);
    CHECK(inf_out[0] == INFINITY && !isfinite(inf_out[1]), "silu(+inf) = %g, silu(-inf) = %g", inf_out[0], inf_out[1]);
}

const test_case tests_archk[] = {
    {"archk_rmsnorm", test_rmsnorm},
    {"archk_rmsnorm_bf16_nan", test_rmsnorm_bf16},
    {"archk_swiglu", test_swiglu},
    {"archk_swiglu_edges_bf16", test_swiglu_edges_bf16},
    {NULL, NULL},
};
