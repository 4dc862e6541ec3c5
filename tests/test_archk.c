/* The kernels of the Llama-2, GPT-J and MPT architectures: RMSNorm, SwiGLU, and rotary
 * embedding with grouped-query heads and GPT-J's interleaved pairs. RMSNorm's and SwiGLU's
 * forwards against their definitions, backwards against finite differences and bf16 forwards as
 * the fp32 ones rounded are in tests/test_ops.c; here their gradient conventions, closed forms,
 * edges and NaN propagation; rotary embedding's GPT-J pairs against rotate_half's and by hand,
 * NaN through a pair, and the group layout (its forward, backward and bf16 kernels on grouped
 * and GPT-J shapes are the registry's: tests/test_ops_rope.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/rmsnorm.h"
#include "../kernels/rope.h"
#include "../kernels/swiglu.h"
#include "check.h"

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

/* dres added and accumulation, and the rms of the output, at (N, C) (tests/test_ops.c checks the
 * forward against the definition and the backward against finite differences). */
static void check_rmsnorm(int N, int C)
{
    size_t n = (size_t)N * C;
    unsigned st = 3u + (unsigned)C;
    float *x = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float)), *dout = malloc(n * sizeof(float)),
          *dx = malloc(n * sizeof(float)), *dres = malloc(n * sizeof(float)), *dx2 = malloc(n * sizeof(float));
    float *w = malloc(C * sizeof(float)), *dw = calloc((size_t)C, sizeof(float)), *dw2 = malloc(C * sizeof(float));
    float *rstd = malloc(N * sizeof(float));
    double *xd = malloc(n * sizeof(double)), *want = malloc(n * sizeof(double)), *dwd = malloc(C * sizeof(double));
    rand_fill(x, n, &st);
    for (size_t i = 0; i < n; i++) x[i] = 3.0f * x[i] + 0.5f; /* a non-zero mean: RMSNorm must not remove it */
    rand_fill(w, (size_t)C, &st);
    rand_fill(dout, n, &st);
    to_double(xd, x, n);
    rmsnorm_forward(out, rstd, x, w, N, C, RMS_EPS);
    rmsnorm_backward(dx, NULL, dw, dout, x, w, rstd, N, C);
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
        for (int i = 0; i < C; i++) {
            size_t k = (size_t)r * C + i;
            ss += (double)out[k] * out[k], ssx += xd[k] * xd[k];
        }
        double want_rms = sqrt(ssx / C / (ssx / C + RMS_EPS));
        CHECK(fabs(sqrt(ss / C) - want_rms) < 1e-5, "N=%d C=%d row %d: rms %.9g, expected %.9g", N, C, r, sqrt(ss / C),
              want_rms);
    }
    free(x), free(out), free(dout), free(dx), free(dres), free(dx2), free(w), free(dw), free(dw2), free(rstd);
    free(xd), free(want), free(dwd);
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
        float *dout = malloc(n * sizeof(float)), *dx = malloc(n * sizeof(float)),
              *dw = calloc((size_t)C, sizeof(float));
        rand_fill(dout, n, &st);
        rmsnorm_backward(dx, NULL, dw, dout, x, w, rstd, N, C);
        CHECK(isnan(dx[C]) && isnan(dx[2 * (size_t)C - 1]) && !any_nonfinite(dx, (size_t)C) && isnan(dw[C - 1]),
              "N=%d C=%d: a NaN input must reach its row's dinp and dweight", N, C);
        free(x), free(out), free(w), free(rstd), free(rstd2), free(outb), free(dout), free(dx), free(dw);
    }
}

/* ---------------------------------------------------------------- swiglu */

static void test_swiglu(void)
{
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
    const float gates[] = {0.0f,   -0.0f,   20.0f, -20.0f, 50.0f, -50.0f, 88.0f,
                           100.0f, -100.0f, 1e30f, -1e30f, 3e38f, -3e38f};
    for (int j = 0; j < 13; j++) x[j] = gates[j], x[I + j] = 0.5f;
    swiglu_forward(out, x, N, I);
    swiglu_forward_bf16(outb, x, N, I);
    CHECK(bf16_is_rounding("swiglu_forward_bf16", outb, out, N * I),
          "swiglu_forward_bf16 is not the rounding of swiglu_forward");
    CHECK(!any_nonfinite(out, N * I), "a finite gate gave a non-finite silu");
    CHECK(fabs(out[2] - 20.0 / (1.0 + exp(-20.0)) * 0.5) < 1e-6 && out[7] == 50.0f && out[8] == 0.0f &&
              out[11] == 1.5e38f,
          "large gates: silu(20)/2 = %.9g, silu(100)/2 = %.9g, silu(-100)/2 = %.9g, silu(3e38)/2 = %.9g", out[2],
          out[7], out[8], out[11]);
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

/* ---------------------------------------------------------------- rope: grouped-query heads, GPT-J pairs */

#define ROPE_BASE 10000.0

typedef struct {
    rope_shape s;
    float *tables;
    rope_tables tb;
    size_t n; /* qkv elements */
} gqa_env;

static void gqa_init(gqa_env *e, rope_shape s)
{
    e->s = s;
    e->tables = malloc(sizeof(float) * (rope_tables_floats(s.T, s.r, s.HS) + 1));
    rope_tables_init(&e->tb, e->tables, s.T, s.r, s.HS, ROPE_BASE);
    e->n = (size_t)s.B * s.T * rope_qkv_per_token(&s);
}

/* GPT-J's pairing is rotate_half's on de-interleaved dims: fused gptj on x equals fused neox on x
 * with dims (2i, 2i+1) moved to (i, i + h), bit for bit (the same arithmetic per pair); the HF
 * formula by hand at one element; NaN reaches its pair partner and nothing else. */
static void test_rope_gptj_pairs(void)
{
    rope_shape sj = {.B = 1, .T = 7, .NH = 4, .HS = 96, .r = 40, .kvh = 2, .gptj = 1}, sn = sj;
    sn.gptj = 0;
    gqa_env e;
    gqa_init(&e, sj);
    const size_t n = e.n;
    const int h = sj.r / 2;
    float *xj = malloc(n * sizeof(float)), *xn = malloc(n * sizeof(float)), *orig = malloc(n * sizeof(float));
    unsigned st = 808;
    rand_fill(xj, n, &st);
    memcpy(orig, xj, n * sizeof(float));
    memcpy(xn, xj, n * sizeof(float));
    const size_t heads = n / sj.HS;
    for (size_t hd = 0; hd < heads; hd++)
        for (int i = 0; i < h; i++) {
            xn[hd * sj.HS + i] = xj[hd * sj.HS + 2 * i];
            xn[hd * sj.HS + h + i] = xj[hd * sj.HS + 2 * i + 1];
        }
    rope_forward_fused(xj, &sj, &e.tb);
    rope_forward_fused(xn, &sn, &e.tb);
    int same = 1;
    for (size_t hd = 0; hd < heads; hd++)
        for (int i = 0; i < h; i++)
            same &=
                xn[hd * sj.HS + i] == xj[hd * sj.HS + 2 * i] && xn[hd * sj.HS + h + i] == xj[hd * sj.HS + 2 * i + 1];
    CHECK(same, "gptj pairs are not rotate_half's on the de-interleaved dims");
    /* by hand, Hugging Face's apply_rotary_pos_emb: k head 1 at t = 5, pair i = 3 (dims 6, 7) */
    size_t o = rope_qkv_offset(&sj, 0, 5, 1, 1);
    double a = orig[o + 6], b = orig[o + 7], ang = 5.0 * pow(ROPE_BASE, -2.0 * 3 / sj.r);
    CHECK(fabs(xj[o + 6] - (a * cos(ang) - b * sin(ang))) < 1e-6 &&
              fabs(xj[o + 7] - (b * cos(ang) + a * sin(ang))) < 1e-6,
          "gptj k head 1 t 5 dims 6, 7: %.9g %.9g, expected %.9g %.9g", xj[o + 6], xj[o + 7],
          a * cos(ang) - b * sin(ang), b * cos(ang) + a * sin(ang));
    /* NaN at query head 5, t 2, dim 9: dims 8 and 9 of that head NaN, nothing else (gptj); with
     * neox dims 9 and 9 + h */
    for (int style = 0; style < 2; style++) {
        rope_shape *s = style ? &sn : &sj;
        bf16 *xh = malloc(n * sizeof(bf16));
        memcpy(xj, orig, n * sizeof(float));
        size_t q = rope_qkv_offset(s, 0, 2, 0, 5);
        xj[q + 9] = NAN;
        for (size_t i = 0; i < n; i++) xh[i] = bf16_from_float(xj[i]);
        rope_forward_fused(xj, s, &e.tb);
        rope_forward_fused_bf16(xh, s, &e.tb);
        size_t p1 = q + 9, p2 = style ? q + 9 + h : q + 8;
        int ok = isnan(xj[p1]) && isnan(xj[p2]) && isnan(bf16_to_float(xh[p1])) && isnan(bf16_to_float(xh[p2]));
        for (size_t i = 0; i < n && ok; i++)
            if (i != p1 && i != p2) ok = isfinite(xj[i]) && isfinite(bf16_to_float(xh[i]));
        CHECK(ok, "%s: a NaN must reach its pair partner and nothing else", style ? "neox" : "gptj");
        memcpy(xj, orig, n * sizeof(float));
        xj[q + 9] = NAN;
        rope_backward_fused(xj, s, &e.tb);
        CHECK(isnan(xj[p1]) && isnan(xj[p2]) && isfinite(xj[q + 10]), "%s backward: NaN not propagated to its pair",
              style ? "neox" : "gptj");
        free(xh);
    }
    free(xj), free(xn), free(orig), free(e.tables);
}

/* The group layout: with kvh = NH it is the per-head [q, k, v] layout (positional initialisers
 * included); with groups, q heads then k then v per group; the bytes model counts kvh k heads. */
static void test_rope_group_layout(void)
{
    rope_shape old = {.B = 2, .T = 3, .NH = 4, .HS = 16, .r = 8}; /* kvh 0, gptj 0: the old layout */
    CHECK(old.kvh == 0 && old.gptj == 0 && rope_kv_heads(&old) == 4 && rope_qkv_per_token(&old) == 3 * 4 * 16,
          "a positional shape is not the per-head layout");
    int ok = 1;
    for (int t = 0; t < 3; t++)
        for (int hh = 0; hh < 4; hh++)
            for (int w = 0; w < 3; w++)
                ok &= rope_qkv_offset(&old, 1, t, w, hh) == (((size_t)1 * 3 + t) * 4 + hh) * 3 * 16 + (size_t)w * 16;
    CHECK(ok, "kvh = NH offsets differ from (B, T, NH, 3*HS)");
    rope_shape g = {.B = 1, .T = 2, .NH = 8, .HS = 4, .r = 4, .kvh = 2};
    /* token 1: group 0 = q0 q1 q2 q3 k0 v0, group 1 = q4 .. q7 k1 v1; 12 heads of 4 */
    CHECK(rope_qkv_per_token(&g) == 48 && rope_qkv_offset(&g, 0, 1, 0, 5) == 48 + 7 * 4 &&
              rope_qkv_offset(&g, 0, 1, 1, 0) == 48 + 4 * 4 && rope_qkv_offset(&g, 0, 1, 2, 1) == 48 + 11 * 4,
          "group layout offsets: q5 %zu k0 %zu v1 %zu", rope_qkv_offset(&g, 0, 1, 0, 5),
          rope_qkv_offset(&g, 0, 1, 1, 0), rope_qkv_offset(&g, 0, 1, 2, 1));
    rope_shape full = {.B = 1, .T = 1, .NH = 8, .HS = 128, .r = 128}, grouped = full;
    grouped.kvh = 2;
    double bf = rope_bytes_per_token(&full, 2, 0), bg = rope_bytes_per_token(&grouped, 2, 0);
    CHECK(bf == 4.0 * (16 * 2 * 128 + 2 * 128) && bg == 4.0 * (10 * 2 * 128 + 2 * 128),
          "fused bytes per token %.0f, grouped %.0f", bf, bg);
}

const test_case tests_archk[] = {
    {"archk_rmsnorm", test_rmsnorm},
    {"archk_rmsnorm_bf16_nan", test_rmsnorm_bf16},
    {"archk_swiglu", test_swiglu},
    {"archk_swiglu_edges_bf16", test_swiglu_edges_bf16},
    {"archk_rope_gptj_pairs_nan", test_rope_gptj_pairs},
    {"archk_rope_group_layout", test_rope_group_layout},
    {NULL, NULL},
};
