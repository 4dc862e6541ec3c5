/* Rotary embedding: the three variants agree, backward against finite differences, and the
 * properties (norm kept, position 0 and rotary_pct 0 identity, q.k depends on m - n only); the
 * bf16 variants against the fp32 ones, and `costbench rope --dtype bf16`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../kernels/rope.h"
#include "check.h"

typedef struct {
    rope_shape s;
    float *tables;
    rope_tables tb;
} rope_env;

static void env_init(rope_env *e, int B, int T, int NH, int HS, int r)
{
    e->s = (rope_shape){.B = B, .T = T, .NH = NH, .HS = HS, .r = r};
    e->tables = malloc(sizeof(float) * (rope_tables_floats(T, r, HS) + 1));
    rope_tables_init(&e->tb, e->tables, T, r, HS, 10000.0);
}

static size_t nqkv(const rope_shape *s) { return (size_t)s->B * s->T * 3 * s->NH * s->HS; }
static size_t nout(const rope_shape *s) { return (size_t)s->B * s->T * s->NH * s->HS; }
static size_t qkv_index(const rope_shape *s, int b, int t, int h, int w, int d)
{
    return (((size_t)b * s->T + t) * s->NH + h) * 3 * s->HS + (size_t)w * s->HS + d;
}
static size_t out_index(const rope_shape *s, int b, int t, int h, int d)
{
    return (((size_t)b * s->NH + h) * s->T + t) * s->HS + d;
}

/* Double-precision forward straight from the definition (Hugging Face's rotate_half). */
static void rope_forward_d(double *q, double *k, const double *qkv, const rope_shape *s, double base)
{
    int r = s->r, h = r / 2;
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            for (int hh = 0; hh < s->NH; hh++)
                for (int w = 0; w < 2; w++) {
                    const double *x = qkv + qkv_index(s, b, t, hh, w, 0);
                    double *o = (w ? k : q) + out_index(s, b, t, hh, 0);
                    for (int d = 0; d < s->HS; d++) {
                        if (d >= r) { o[d] = x[d]; continue; }
                        int i = d % h;
                        double ang = t * pow(base, -2.0 * i / r);
                        double rot = d < h ? -x[d + h] : x[d - h];
                        o[d] = x[d] * cos(ang) + rot * sin(ang);
                    }
                }
}

typedef struct {
    rope_shape s;
    double *q, *k, *dq, *dk;
} rope_fd;

static double rope_loss(void *p, const double *v)
{
    rope_fd *c = p;
    rope_forward_d(c->q, c->k, v, &c->s, 10000.0);
    double l = 0;
    for (size_t i = 0; i < nout(&c->s); i++) l += c->dq[i] * c->q[i] + c->dk[i] * c->k[i];
    return l;
}

/* Extracts the q/k blocks of a qkv-layout buffer into (B, NH, T, HS) tensors. */
static void split_qk(float *q, float *k, const float *qkv, const rope_shape *s)
{
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            for (int h = 0; h < s->NH; h++) {
                memcpy(q + out_index(s, b, t, h, 0), qkv + qkv_index(s, b, t, h, 0, 0), sizeof(float) * s->HS);
                memcpy(k + out_index(s, b, t, h, 0), qkv + qkv_index(s, b, t, h, 1, 0), sizeof(float) * s->HS);
            }
}

static void merge_qk(float *qkv, const float *q, const float *k, const rope_shape *s)
{
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            for (int h = 0; h < s->NH; h++) {
                memcpy(qkv + qkv_index(s, b, t, h, 0, 0), q + out_index(s, b, t, h, 0), sizeof(float) * s->HS);
                memcpy(qkv + qkv_index(s, b, t, h, 1, 0), k + out_index(s, b, t, h, 0), sizeof(float) * s->HS);
            }
}

static void check_shape(int B, int T, int NH, int HS, int r, const char *label)
{
    rope_env e;
    env_init(&e, B, T, NH, HS, r);
    const rope_shape *s = &e.s;
    size_t nq = nqkv(s), no = nout(s);
    float *qkv = malloc(sizeof(float) * nq), *fused = malloc(sizeof(float) * nq);
    float *q = malloc(sizeof(float) * no), *k = malloc(sizeof(float) * no), *fq = malloc(sizeof(float) * no),
          *fk = malloc(sizeof(float) * no);
    float *scratch = malloc(sizeof(float) * (rope_ref_scratch_floats(s) + 1));
    double *qkvd = malloc(sizeof(double) * nq), *qd = malloc(sizeof(double) * no), *kd = malloc(sizeof(double) * no);
    unsigned st = 77u + (unsigned)HS;
    rand_fill(qkv, nq, &st);
    to_double(qkvd, qkv, nq);
    rope_forward_d(qd, kd, qkvd, s, 10000.0);
    char what[128];
    /* forward: each variant against the double-precision definition */
    rope_forward_ref(q, k, qkv, s, &e.tb, scratch);
    snprintf(what, sizeof what, "%s reference forward q", label);
    CHECK(allclose(what, q, qd, no, 1e-6, 1e-5) && allclose(what, k, kd, no, 1e-6, 1e-5), "%s", what);
    rope_forward_zero_freq(q, k, qkv, s, &e.tb);
    snprintf(what, sizeof what, "%s zero_freq forward", label);
    CHECK(allclose(what, q, qd, no, 1e-6, 1e-5) && allclose(what, k, kd, no, 1e-6, 1e-5), "%s", what);
    memcpy(fused, qkv, sizeof(float) * nq);
    rope_forward_fused(fused, s, &e.tb);
    split_qk(fq, fk, fused, s);
    snprintf(what, sizeof what, "%s fused forward", label);
    CHECK(allclose(what, fq, qd, no, 1e-6, 1e-5) && allclose(what, fk, kd, no, 1e-6, 1e-5), "%s", what);
    for (size_t i = 0; i < nq; i++)
        if ((i / s->HS) % 3 == 2) CHECK(fused[i] == qkv[i], "fused forward touched a v element at %zu", i);

    /* backward: each variant against finite differences of the definition */
    float *dq = malloc(sizeof(float) * no), *dk = malloc(sizeof(float) * no), *dqkv = malloc(sizeof(float) * nq);
    double *dqd = malloc(sizeof(double) * no), *dkd = malloc(sizeof(double) * no);
    rand_fill(dq, no, &st);
    rand_fill(dk, no, &st);
    to_double(dqd, dq, no), to_double(dkd, dk, no);
    rope_fd c = {*s, qd, kd, dqd, dkd};
    for (int v = 0; v < 3; v++) {
        memset(dqkv, 0, sizeof(float) * nq);
        if (v == 0) rope_backward_ref(dqkv, dq, dk, s, &e.tb, scratch);
        if (v == 1) rope_backward_zero_freq(dqkv, dq, dk, s, &e.tb);
        if (v == 2) {
            merge_qk(dqkv, dq, dk, s);
            rope_backward_fused(dqkv, s, &e.tb);
        }
        snprintf(what, sizeof what, "%s %s backward", label, v == 0 ? "reference" : v == 1 ? "zero_freq" : "fused");
        /* v blocks carry no gradient through rotary: zero them in the comparison */
        for (size_t i = 0; i < nq; i++)
            if ((i / s->HS) % 3 == 2) dqkv[i] = 0.0f;
        CHECK(fd_check(what, qkvd, nq, dqkv, rope_loss, &c, 600, 1e-5), "%s vs finite differences", what);
    }
    free(dq), free(dk), free(dqkv), free(dqd), free(dkd);
    free(qkv), free(fused), free(q), free(k), free(fq), free(fk), free(scratch), free(qkvd), free(qd), free(kd);
    free(e.tables);
}

static void test_rope_variants_pythia69b(void) { check_shape(2, 5, 2, 128, 32, "pythia-6.9b head (128, r 32)"); }
static void test_rope_variants_neox20b(void) { check_shape(2, 5, 2, 96, 24, "neox-20b head (96, r 24)"); }
static void test_rope_variants_small(void)
{
    check_shape(1, 7, 3, 32, 8, "pythia-14m head (32, r 8)");
    check_shape(1, 3, 1, 64, 64, "full rotary (64, r 64)");
}

static void test_rope_rotary_dims(void)
{
    CHECK(rope_rotary_dims(128, 0.25) == 32, "pythia-6.9b: r = %d", rope_rotary_dims(128, 0.25));
    CHECK(rope_rotary_dims(96, 0.25) == 24, "neox-20b: r = %d", rope_rotary_dims(96, 0.25));
    CHECK(rope_rotary_dims(80, 0.25) == 20, "pythia-2.8b: r = %d", rope_rotary_dims(80, 0.25));
    CHECK(rope_rotary_dims(64, 0.0) == 0, "rotary_pct 0: r = %d", rope_rotary_dims(64, 0.0));
}

static void test_rope_properties(void)
{
    rope_env e;
    const int T = 16, HS = 96, r = 24;
    env_init(&e, 1, T, 1, HS, r);
    size_t nq = nqkv(&e.s);
    float *qkv = malloc(sizeof(float) * nq), *orig = malloc(sizeof(float) * nq);
    unsigned st = 99;
    float qv[96], kv[96];
    rand_fill(qv, HS, &st);
    rand_fill(kv, HS, &st);
    /* the same q and k vectors at every position */
    for (int t = 0; t < T; t++) {
        memcpy(qkv + qkv_index(&e.s, 0, t, 0, 0, 0), qv, sizeof qv);
        memcpy(qkv + qkv_index(&e.s, 0, t, 0, 1, 0), kv, sizeof kv);
        memset(qkv + qkv_index(&e.s, 0, t, 0, 2, 0), 0, sizeof qv);
    }
    memcpy(orig, qkv, sizeof(float) * nq);
    rope_forward_fused(qkv, &e.s, &e.tb);
    /* position 0 is the identity */
    for (int d = 0; d < HS; d++) CHECK(qkv[d] == orig[d], "position 0 changed dim %d", d);
    /* norms are kept */
    for (int t = 0; t < T; t++) {
        double n0 = 0, n1 = 0;
        for (int d = 0; d < HS; d++) {
            double a = orig[qkv_index(&e.s, 0, t, 0, 0, d)], b = qkv[qkv_index(&e.s, 0, t, 0, 0, d)];
            n0 += a * a, n1 += b * b;
        }
        CHECK(fabs(sqrt(n1) - sqrt(n0)) < 1e-5 * sqrt(n0), "position %d: norm %.9g became %.9g", t, sqrt(n0), sqrt(n1));
    }
    /* q_m . k_n depends only on m - n */
    for (int delta = 0; delta < 4; delta++) {
        double first = NAN;
        for (int n = 0; n + delta < T; n++) {
            int m = n + delta;
            double dot = 0;
            for (int d = 0; d < HS; d++)
                dot += (double)qkv[qkv_index(&e.s, 0, m, 0, 0, d)] * qkv[qkv_index(&e.s, 0, n, 0, 1, d)];
            if (n == 0) first = dot;
            else
                CHECK(fabs(dot - first) < 1e-4 * (1 + fabs(first)), "m - n = %d: q.k %.9g at n=%d vs %.9g at n=0",
                      delta, dot, n, first);
        }
    }
    free(e.tables);
    /* rotary_pct 0: every variant is the identity */
    env_init(&e, 1, T, 1, HS, 0);
    float *q = malloc(sizeof(float) * nout(&e.s)), *k = malloc(sizeof(float) * nout(&e.s));
    float *scratch = malloc(sizeof(float) * (rope_ref_scratch_floats(&e.s) + 1));
    memcpy(qkv, orig, sizeof(float) * nq);
    rope_forward_fused(qkv, &e.s, &e.tb);
    CHECK(memcmp(qkv, orig, sizeof(float) * nq) == 0, "rotary_pct 0: fused changed the input");
    rope_forward_zero_freq(q, k, orig, &e.s, &e.tb);
    CHECK(memcmp(q, qv, sizeof qv) == 0 && memcmp(k + (size_t)(T - 1) * HS, kv, sizeof kv) == 0,
          "rotary_pct 0: zero_freq is not the identity");
    rope_forward_ref(q, k, orig, &e.s, &e.tb, scratch);
    CHECK(memcmp(q + (size_t)(T - 1) * HS, qv, sizeof qv) == 0 && memcmp(k, kv, sizeof kv) == 0,
          "rotary_pct 0: reference is not the identity");
    free(q), free(k), free(scratch), free(qkv), free(orig), free(e.tables);
}

static void test_rope_bytes_model(void)
{
    rope_shape s = {.B = 1, .T = 1, .NH = 32, .HS = 128, .r = 32};
    /* fused: q and k, r floats read and written per head, plus r table floats per token */
    double f = rope_bytes_per_token(&s, 2, 0);
    CHECK(f == 4.0 * 2 * (32 * 2 * 32 + 32), "fused bytes per token %.0f", f);
    CHECK(rope_bytes_per_token(&s, 0, 0) > 4 * f, "the reference moves less than 4x the fused bytes");
}

/* ---------------------------------------------------------------- bf16 */

/* bf16 tolerances, inputs in [-1, 1): one rounding to bf16 (relative error <= 2^-8) for zero_freq
 * and fused; the reference rounds after each op (two products, their sum): 2^-7 absolute and
 * relative. */
#define BF16_ONE_ROUNDING 0.00390625
#define BF16_REF_TOL 0.0078125

static void narrow_all(bf16 *h, const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++) h[i] = bf16_from_float(f[i]);
}

static void widen_d(double *d, const bf16 *h, size_t n)
{
    for (size_t i = 0; i < n; i++) d[i] = bf16_to_float(h[i]);
}

/* h[i] == bf16_from_float(f[i]) for every i (the fp32 kernel's result on the same inputs, rounded). */
static int rounding_of(const char *what, const bf16 *h, const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (h[i] != bf16_from_float(f[i])) {
            printf("    %s: element %zu is %.9g, the rounding of the fp32 kernel's %.9g is %.9g\n", what, i,
                   bf16_to_float(h[i]), f[i], bf16_to_float(bf16_from_float(f[i])));
            return 0;
        }
    return 1;
}

/* Widened bf16 values within atol + rtol |ref| of ref. */
static int close_bf16(const char *what, const bf16 *h, const double *ref, size_t n, double atol, double rtol)
{
    float *f = malloc(n * sizeof(float));
    bf16_to_floats(f, h, n);
    int ok = allclose(what, f, ref, n, atol, rtol);
    free(f);
    return ok;
}

/* Scatters (B, NH, T, HS) bf16 gradients into the q/k blocks of a qkv-layout buffer. */
static void merge_qk_bf16(bf16 *qkv, const bf16 *q, const bf16 *k, const rope_shape *s)
{
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            for (int h = 0; h < s->NH; h++) {
                memcpy(qkv + qkv_index(s, b, t, h, 0, 0), q + out_index(s, b, t, h, 0), sizeof(bf16) * s->HS);
                memcpy(qkv + qkv_index(s, b, t, h, 1, 0), k + out_index(s, b, t, h, 0), sizeof(bf16) * s->HS);
            }
}

typedef struct {
    size_t nq, no;
    float *f, *qf, *kf;        /* fp32 results on the widened inputs */
    bf16 *x, *h, *qh, *kh, *scratch;
    double *xd, *qd, *kd;
} bf_bufs;

static void bf_alloc(bf_bufs *u, const rope_shape *s)
{
    u->nq = nqkv(s), u->no = nout(s);
    u->f = malloc(u->nq * sizeof(float)), u->qf = malloc(u->no * sizeof(float)), u->kf = malloc(u->no * sizeof(float));
    u->x = malloc(u->nq * sizeof(bf16)), u->h = malloc(u->nq * sizeof(bf16));
    u->qh = malloc(u->no * sizeof(bf16)), u->kh = malloc(u->no * sizeof(bf16));
    u->scratch = malloc((rope_ref_scratch_floats(s) + 1) * sizeof(bf16));
    u->xd = malloc(u->nq * sizeof(double)), u->qd = malloc(u->no * sizeof(double)),
    u->kd = malloc(u->no * sizeof(double));
}

static void bf_free(bf_bufs *u)
{
    free(u->f), free(u->qf), free(u->kf), free(u->x), free(u->h), free(u->qh), free(u->kh), free(u->scratch);
    free(u->xd), free(u->qd), free(u->kd);
}

/* Forward: fused and zero_freq are the fp32 kernels' results rounded (bit for bit); all three are
 * within bf16 tolerance of the double-precision definition, and of each other. */
static void check_forward_bf16(const rope_env *e, bf_bufs *u, const char *label)
{
    const rope_shape *s = &e->s;
    char what[160];
    bf16_to_floats(u->f, u->x, u->nq); /* the bf16 inputs, exactly */
    widen_d(u->xd, u->x, u->nq);
    rope_forward_d(u->qd, u->kd, u->xd, s, 10000.0);
    rope_forward_fused(u->f, s, &e->tb);
    memcpy(u->h, u->x, u->nq * sizeof(bf16));
    rope_forward_fused_bf16(u->h, s, &e->tb);
    snprintf(what, sizeof what, "%s bf16 fused forward", label);
    CHECK(rounding_of(what, u->h, u->f, u->nq), "%s: not the fp32 fused kernel's result rounded", what);
    if (s->HS == 128) { /* once: the comparators reject what they must */
        u->h[3] ^= 1;
        printf("    (the next two lines are the bf16 comparators rejecting a one-ulp error and a 0.5 error, as they "
               "must)\n");
        CHECK(!rounding_of("perturbed", u->h, u->f, u->nq), "rounding_of passed a one-ulp error");
        double d0 = bf16_to_float(u->h[3]), big = d0 + 0.5;
        CHECK(!close_bf16("perturbed", u->h + 3, &big, 1, BF16_REF_TOL, BF16_REF_TOL), "close_bf16 passed a 0.5 error");
        u->h[3] ^= 1;
    }
    bf16 *fq = malloc(u->no * sizeof(bf16)), *fk = malloc(u->no * sizeof(bf16));
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            for (int hh = 0; hh < s->NH; hh++) {
                memcpy(fq + out_index(s, b, t, hh, 0), u->h + qkv_index(s, b, t, hh, 0, 0), sizeof(bf16) * s->HS);
                memcpy(fk + out_index(s, b, t, hh, 0), u->h + qkv_index(s, b, t, hh, 1, 0), sizeof(bf16) * s->HS);
            }
    CHECK(close_bf16(what, fq, u->qd, u->no, 1e-6, BF16_ONE_ROUNDING) &&
              close_bf16(what, fk, u->kd, u->no, 1e-6, BF16_ONE_ROUNDING),
          "%s vs the definition", what);
    bf16_to_floats(u->f, u->x, u->nq);
    rope_forward_zero_freq(u->qf, u->kf, u->f, s, &e->tb);
    rope_forward_zero_freq_bf16(u->qh, u->kh, u->x, s, &e->tb);
    snprintf(what, sizeof what, "%s bf16 zero_freq forward", label);
    CHECK(rounding_of(what, u->qh, u->qf, u->no) && rounding_of(what, u->kh, u->kf, u->no),
          "%s: not the fp32 zero_freq kernel's result rounded", what);
    rope_forward_ref_bf16(u->qh, u->kh, u->x, s, &e->tb, u->scratch);
    snprintf(what, sizeof what, "%s bf16 reference forward", label);
    CHECK(close_bf16(what, u->qh, u->qd, u->no, BF16_REF_TOL, BF16_REF_TOL) &&
              close_bf16(what, u->kh, u->kd, u->no, BF16_REF_TOL, BF16_REF_TOL),
          "%s vs the definition", what);
    /* the variants agree with each other (the benchmark's check) */
    double *fd = malloc(u->no * sizeof(double));
    widen_d(fd, fq, u->no);
    snprintf(what, sizeof what, "%s bf16 reference vs fused forward", label);
    CHECK(close_bf16(what, u->qh, fd, u->no, BF16_REF_TOL, BF16_REF_TOL), "%s", what);
    free(fq), free(fk), free(fd);
}

/* Backward: the same, against the fp32 kernels' gradients. */
static void check_backward_bf16(const rope_env *e, bf_bufs *u, const char *label)
{
    const rope_shape *s = &e->s;
    char what[160];
    unsigned st = 5u + (unsigned)s->HS;
    bf16 *dq = malloc(u->no * sizeof(bf16)), *dk = malloc(u->no * sizeof(bf16));
    float *dqf = malloc(u->no * sizeof(float)), *dkf = malloc(u->no * sizeof(float));
    float *scratch = malloc((rope_ref_scratch_floats(s) + 1) * sizeof(float));
    double *gd = malloc(u->nq * sizeof(double));
    rand_fill(dqf, u->no, &st), rand_fill(dkf, u->no, &st);
    narrow_all(dq, dqf, u->no), narrow_all(dk, dkf, u->no);
    bf16_to_floats(dqf, dq, u->no), bf16_to_floats(dkf, dk, u->no);
    /* fused: in place on the gradient in the qkv layout */
    memset(u->f, 0, u->nq * sizeof(float)), memset(u->h, 0, u->nq * sizeof(bf16));
    merge_qk(u->f, dqf, dkf, s);
    merge_qk_bf16(u->h, dq, dk, s);
    rope_backward_fused(u->f, s, &e->tb);
    rope_backward_fused_bf16(u->h, s, &e->tb);
    snprintf(what, sizeof what, "%s bf16 fused backward", label);
    CHECK(rounding_of(what, u->h, u->f, u->nq), "%s: not the fp32 fused kernel's gradient rounded", what);
    /* zero_freq */
    memset(u->f, 0, u->nq * sizeof(float)), memset(u->h, 0, u->nq * sizeof(bf16));
    rope_backward_zero_freq(u->f, dqf, dkf, s, &e->tb);
    rope_backward_zero_freq_bf16(u->h, dq, dk, s, &e->tb);
    snprintf(what, sizeof what, "%s bf16 zero_freq backward", label);
    CHECK(rounding_of(what, u->h, u->f, u->nq), "%s: not the fp32 zero_freq kernel's gradient rounded", what);
    /* reference: within tolerance of the fp32 reference (the gradient, exact up to fp32 rounding) */
    memset(u->f, 0, u->nq * sizeof(float)), memset(u->h, 0, u->nq * sizeof(bf16));
    rope_backward_ref(u->f, dqf, dkf, s, &e->tb, scratch);
    rope_backward_ref_bf16(u->h, dq, dk, s, &e->tb, u->scratch);
    to_double(gd, u->f, u->nq);
    snprintf(what, sizeof what, "%s bf16 reference backward", label);
    CHECK(close_bf16(what, u->h, gd, u->nq, BF16_REF_TOL, BF16_REF_TOL), "%s vs fp32", what);
    free(dq), free(dk), free(dqf), free(dkf), free(scratch), free(gd);
}

static void check_shape_bf16(int B, int T, int NH, int HS, int r, const char *label)
{
    rope_env e;
    env_init(&e, B, T, NH, HS, r);
    bf_bufs u;
    bf_alloc(&u, &e.s);
    unsigned st = 91u + (unsigned)HS;
    rand_fill(u.f, u.nq, &st);
    narrow_all(u.x, u.f, u.nq);
    check_forward_bf16(&e, &u, label);
    check_backward_bf16(&e, &u, label);
    bf_free(&u);
    free(e.tables);
}

static void test_rope_bf16_variants(void)
{
    check_shape_bf16(2, 5, 2, 128, 32, "pythia-6.9b head (128, r 32)");
    check_shape_bf16(2, 5, 2, 96, 24, "neox-20b head (96, r 24)");
    check_shape_bf16(1, 7, 3, 32, 8, "pythia-14m head (32, r 8)");
    check_shape_bf16(1, 3, 1, 64, 64, "full rotary (64, r 64)");
    check_shape_bf16(1, 4, 2, 80, 40, "pythia-2.8b-like head (80, r 40: h 20, a masked tail)");
    check_shape_bf16(1, 3, 1, 288, 72, "a head past 256 dims (288, r 72)");
}

static int bf16_has_nan(const bf16 *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isnan(bf16_to_float(x[i]))) return 1;
    return 0;
}

static void test_rope_bf16_nan(void)
{
    rope_env e;
    env_init(&e, 1, 6, 2, 32, 8);
    bf_bufs u;
    bf_alloc(&u, &e.s);
    unsigned st = 3;
    rand_fill(u.f, u.nq, &st);
    narrow_all(u.x, u.f, u.nq);
    /* a NaN q element of token 3, head 0, in the rotated dims */
    size_t at = qkv_index(&e.s, 0, 3, 0, 0, 1);
    u.x[at] = bf16_from_float(NAN);
    memcpy(u.h, u.x, u.nq * sizeof(bf16));
    rope_forward_fused_bf16(u.h, &e.s, &e.tb);
    CHECK(bf16_has_nan(u.h + qkv_index(&e.s, 0, 3, 0, 0, 0), 8) && !bf16_has_nan(u.h, qkv_index(&e.s, 0, 3, 0, 0, 0)),
          "bf16 fused forward: the NaN did not reach its pair alone");
    rope_forward_zero_freq_bf16(u.qh, u.kh, u.x, &e.s, &e.tb);
    CHECK(bf16_has_nan(u.qh, u.no), "bf16 zero_freq forward hid a NaN");
    rope_forward_ref_bf16(u.qh, u.kh, u.x, &e.s, &e.tb, u.scratch);
    CHECK(bf16_has_nan(u.qh, u.no), "bf16 reference forward hid a NaN");
    rope_backward_fused_bf16(u.h, &e.s, &e.tb);
    CHECK(bf16_has_nan(u.h, u.nq), "bf16 fused backward hid a NaN");
    bf16 *dq = calloc(u.no, sizeof(bf16)), *dk = calloc(u.no, sizeof(bf16));
    dk[out_index(&e.s, 0, 2, 1, 5)] = bf16_from_float(NAN);
    rope_backward_zero_freq_bf16(u.h, dq, dk, &e.s, &e.tb);
    CHECK(bf16_has_nan(u.h, u.nq), "bf16 zero_freq backward hid a NaN");
    rope_backward_ref_bf16(u.h, dq, dk, &e.s, &e.tb, u.scratch);
    CHECK(bf16_has_nan(u.h, u.nq), "bf16 reference backward hid a NaN");
    free(dq), free(dk);
    bf_free(&u);
    free(e.tables);
}

static void test_rope_bytes_model_dtype(void)
{
    rope_shape s = {.B = 1, .T = 1, .NH = 32, .HS = 128, .r = 32};
    for (int v = 0; v < 3; v++)
        for (int d = 0; d < 2; d++)
            CHECK(rope_bytes_per_token_dtype(&s, v, d, 4) == rope_bytes_per_token(&s, v, d),
                  "variant %d: fp32 bytes differ", v);
    /* bf16 fused: 2-byte q/k elements, the r fp32 table floats unchanged */
    double f = rope_bytes_per_token_dtype(&s, 2, 0, 2);
    CHECK(f == 2.0 * (2 * 32 * 2 * 32 + 4 * 32), "bf16 fused bytes per token %.0f", f);
}

/* costbench rope --dtype bf16 on a tiny shape: every row says bf16, the bytes follow the dtype;
 * a dtype it does not know is a usage error. */
static void test_rope_bf16_cli(void)
{
    static char out[65536], err[16384];
    char *dir = test_tmpdir();
    if (!dir) return;
    char csv[4200];
    snprintf(csv, sizeof csv, "%s/rope.csv", dir);
    const char *args[] = {
        "rope", "--dtype",       "bf16", "--model",     "pythia-14m", "--tokens", "256",  "--seq", "128", "--min-time",
        "0.01", "--min-samples", "2",    "--copy-gbps", "10",         "--cache",  "warm", "--csv", csv,   NULL};
    int rc = cli_run(args, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "rope --dtype bf16: exit %d: %s", rc, err);
    table t;
    if (rc == 0 && table_load(&t, csv) == 0) {
        int cd = table_col(&t, "dtype", 1), cv = table_col(&t, "variant", 1), cb = table_col(&t, "bytes_per_token", 1);
        CHECK(t.nrows == 6, "rows %d, expected 6", t.nrows);
        for (int i = 0; cd >= 0 && cv >= 0 && cb >= 0 && i < t.nrows; i++) {
            CHECK(strcmp(table_cell(&t, i, cd), "bf16") == 0, "row %d: dtype '%s'", i, table_cell(&t, i, cd));
            /* pythia-14m: 4 heads, r 8: fused 2 x (2 bytes x 4 x 2r + 4 bytes x r) = 320 */
            if (strcmp(table_cell(&t, i, cv), "fused") == 0)
                CHECK(strtod(table_cell(&t, i, cb), NULL) == 320.0, "fused bytes_per_token %s, expected 320",
                      table_cell(&t, i, cb));
        }
        table_free(&t);
    } else {
        CHECK(0, "rope --dtype bf16 wrote no readable CSV");
    }
    CHECK(strstr(out, "bf16") && strstr(out, "agree"), "the table does not say bf16 and that the variants agree: %s",
          out);
    const char *bad[] = {"rope", "--dtype", "fp16", NULL};
    rc = cli_run(bad, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "flag '--dtype': expected fp32 or bf16, got 'fp16'"), "--dtype fp16: exit %d: %s", rc,
          err);
    unlink(csv);
    rmdir(dir);
}

const test_case tests_rope[] = {
    {"rope: rotary dims from rotary_pct", test_rope_rotary_dims},
    {"rope: three variants vs definition and finite differences, pythia-6.9b head", test_rope_variants_pythia69b},
    {"rope: three variants vs definition and finite differences, neox-20b head", test_rope_variants_neox20b},
    {"rope: three variants, small and full-rotary heads", test_rope_variants_small},
    {"rope: norm kept, position 0 identity, q.k depends on m - n, rotary_pct 0 identity", test_rope_properties},
    {"rope: bytes model", test_rope_bytes_model},
    {"rope bf16: fused and zero_freq = fp32 kernels rounded, all three vs definition and each other, backward",
     test_rope_bf16_variants},
    {"rope bf16: NaN propagates through every variant, forward and backward", test_rope_bf16_nan},
    {"rope bf16: bytes model follows the element size", test_rope_bytes_model_dtype},
    {"rope bf16: costbench rope --dtype bf16 on a tiny shape, a bad --dtype", test_rope_bf16_cli},
    {NULL, NULL},
};
