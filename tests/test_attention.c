/* The tiled attention kernels (kernels/attention.h), what is not one shape at one precision
 * (their forward, lse and backward against the double reference and finite differences, in fp32
 * and bf16, are the registry's: tests/test_ops_attention.c): causality, the two bf16 paths
 * against each other, thread-count independence, NaN propagation and the scratch contract;
 * grouped queries against multi-head attention with k and v repeated, the reference's ALiBi
 * against MPT's key-only bias, and MPT's slopes. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/presets.h"
#include "../kernels/attention.h"
#include "../kernels/attn_tile.h"
#include "../model/gpt.h"
#include "check.h"

typedef attn_shape att_shape;
/* Multi-head attention without bias: the layout the wrappers (attention_forward, ...) take. */
#define MHA(B, T, NH, HS) {(B), (T), (NH), (NH), (HS), NULL}

static size_t n_qkv(const att_shape *s) { return (size_t)s->B * s->T * s->KVH * (s->NH / s->KVH + 2) * s->HS; }
static size_t n_out(const att_shape *s) { return (size_t)s->B * s->T * s->NH * s->HS; }
static size_t n_lse(const att_shape *s) { return (size_t)s->B * s->NH * s->T; }

/* Buffers of one shape; the scratch exactly attention_scratch_floats_gqa(s, 2) floats, so that
 * the sanitizer build catches any overrun. */
typedef struct {
    att_shape s;
    float *qkv, *out, *lse, *dout, *dqkv, *scratch;
    double *qkvd, *outd;
    bf16 *qkvb, *outb;
} att_bufs;

static void bufs_free(att_bufs *a);

static int bufs_alloc(att_bufs *a, att_shape s, unsigned seed)
{
    memset(a, 0, sizeof *a);
    a->s = s;
    size_t nq = n_qkv(&s), no = n_out(&s), nl = n_lse(&s);
    a->qkv = malloc(nq * sizeof(float)), a->dqkv = malloc(nq * sizeof(float)), a->qkvd = malloc(nq * sizeof(double));
    a->out = malloc(no * sizeof(float)), a->dout = malloc(no * sizeof(float));
    a->outd = malloc(no * sizeof(double)), a->lse = malloc(nl * sizeof(float));
    a->qkvb = malloc(nq * sizeof(bf16)), a->outb = malloc(no * sizeof(bf16));
    a->scratch = malloc(attention_scratch_floats_gqa(&s, 2) * sizeof(float));
    if (!a->qkv || !a->dqkv || !a->qkvd || !a->out || !a->dout || !a->outd || !a->lse || !a->qkvb || !a->outb ||
        !a->scratch) {
        CHECK(0, "out of memory");
        bufs_free(a);
        return 0;
    }
    rand_fill(a->qkv, nq, &seed);
    for (size_t i = 0; i < nq; i++) a->qkv[i] *= 2.0f; /* peaked softmax rows */
    rand_fill(a->dout, no, &seed);
    to_double(a->qkvd, a->qkv, nq);
    return 1;
}

static void bufs_free(att_bufs *a)
{
    free(a->qkv), free(a->dqkv), free(a->qkvd), free(a->out), free(a->dout), free(a->outd);
    free(a->lse), free(a->qkvb), free(a->outb), free(a->scratch);
}

/* Rounds qkv to bf16 (qkvb) and makes qkv and qkvd those rounded values. */
static void bufs_round_bf16(att_bufs *a)
{
    size_t nq = n_qkv(&a->s);
    for (size_t i = 0; i < nq; i++) a->qkvb[i] = bf16_from_float(a->qkv[i]), a->qkv[i] = bf16_to_float(a->qkvb[i]);
    to_double(a->qkvd, a->qkv, nq);
}

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

static void widen(float *dst, const bf16 *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = bf16_to_float(src[i]);
}

/* ---------------------------------------------------------------- causality, the bf16 paths */

static double max_abs(const float *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* Keys and values after token t change nothing before t (exactly: masked terms are zeros). */
static void test_attention_causal(void)
{
    att_shape s = MHA(1, 2 * ATTENTION_BLOCK + 3, 2, 16);
    const int t = ATTENTION_BLOCK + 5, C = s.NH * s.HS, C3 = 3 * C;
    att_bufs a;
    if (!bufs_alloc(&a, s, 3u)) return;
    float *out2 = malloc(n_out(&s) * sizeof(float));
    bf16 *outb2 = malloc(n_out(&s) * sizeof(bf16));
    bufs_round_bf16(&a);
    attention_forward(a.out, a.lse, a.qkv, s.B, s.T, s.NH, s.HS);
    attention_forward_bf16(a.outb, a.lse, a.qkvb, s.B, s.T, s.NH, s.HS);
    for (int j = t; j < s.T; j++)
        for (int e = 0; e < C3; e++)
            if (e % (3 * s.HS) >= s.HS) { /* k and v of every head */
                a.qkv[(size_t)j * C3 + e] = 100.0f;
                a.qkvb[(size_t)j * C3 + e] = bf16_from_float(-100.0f);
            }
    attention_forward(out2, a.lse, a.qkv, s.B, s.T, s.NH, s.HS);
    attention_forward_bf16(outb2, a.lse, a.qkvb, s.B, s.T, s.NH, s.HS);
    int same = 1, sameb = 1;
    for (size_t i = 0; i < (size_t)t * C; i++) same &= a.out[i] == out2[i], sameb &= a.outb[i] == outb2[i];
    CHECK(same, "fp32: a later key or value changed an earlier output");
    CHECK(sameb, "bf16: a later key or value changed an earlier output");
    CHECK(memcmp(a.out + (size_t)t * C, out2 + (size_t)t * C, (size_t)C * sizeof(float)) != 0,
          "token %d ignores its own key", t);
    free(out2), free(outb2);
    bufs_free(&a);
}

/* The two bf16 paths compute the same exact products; only their sums' order may differ. */
static void test_attention_bf16_paths_agree(void)
{
    if (!bf16_cpu_native()) {
        printf("    (no AVX512_BF16 on this CPU: nothing to compare)\n");
        return;
    }
    att_shape s = MHA(2, ATTENTION_BLOCK + 37, 2, 64);
    att_bufs a;
    if (!bufs_alloc(&a, s, 31u)) return;
    const size_t nq = n_qkv(&s), no = n_out(&s), nl = n_lse(&s);
    bf16 *outb2 = malloc(no * sizeof(bf16));
    float *lse2 = malloc(nl * sizeof(float)), *d2 = malloc(nq * sizeof(float)), *o1 = malloc(no * sizeof(float));
    double *o2 = malloc(no * sizeof(double)), *l2 = malloc(nl * sizeof(double)), *dd = malloc(nq * sizeof(double));
    bufs_round_bf16(&a);
    attn_bf16_forward_path(a.outb, a.lse, a.qkvb, &s, 1);
    attn_bf16_forward_path(outb2, lse2, a.qkvb, &s, 0);
    attn_bf16_backward_path(a.dqkv, a.scratch, 2, a.dout, a.qkvb, a.outb, a.lse, &s, 1);
    attn_bf16_backward_path(d2, a.scratch, 2, a.dout, a.qkvb, a.outb, a.lse, &s, 0);
    widen(o1, a.outb, no);
    for (size_t i = 0; i < no; i++) o2[i] = bf16_to_float(outb2[i]);
    to_double(l2, lse2, nl), to_double(dd, d2, nq);
    /* a different rounding of the fp32 output to bf16 is one bf16 ulp (2^-8 relative) */
    CHECK(allclose("bf16 paths: out", o1, o2, no, 1e-6, 1.0 / 128), "vdpbf16ps and portable outputs differ");
    CHECK(allclose("bf16 paths: lse", a.lse, l2, nl, 1e-5, 1e-5), "vdpbf16ps and portable lse differ");
    CHECK(allclose("bf16 paths: dqkv", a.dqkv, dd, nq, 1e-4 * max_abs(d2, nq), 1e-3),
          "vdpbf16ps and portable gradients differ");
    free(outb2), free(lse2), free(d2), free(o1), free(o2), free(l2), free(dd);
    bufs_free(&a);
}

/* ---------------------------------------------------------------- grouped queries, ALiBi */

/* A test shape with grouped queries and ALiBi: alibi_max 0 for no bias, else MPT's slopes for
 * that alibi_bias_max (8: MPT's; smaller: gentler slopes, more keys that matter). */
typedef struct {
    int B, T, NH, KVH, HS;
    double alibi_max;
} gqa_case;

static att_shape gqa_shape(const gqa_case *c, float *slopes)
{
    if (c->alibi_max > 0) attention_alibi_slopes(slopes, c->NH, c->alibi_max);
    att_shape s = {c->B, c->T, c->NH, c->KVH, c->HS, c->alibi_max > 0 ? slopes : NULL};
    return s;
}

static void shape_name(char *buf, size_t n, const char *what, const att_shape *s)
{
    snprintf(buf, n, "%s B=%d T=%d NH=%d KVH=%d HS=%d%s", what, s->B, s->T, s->NH, s->KVH, s->HS,
             s->alibi ? " alibi" : "");
}

/* MPT's bias, slope (j - (T-1)) on key j alone (llm-foundry's build_alibi_bias), in a naive
 * double forward of its own: the same output as -slope (i - j) (a constant per row). */
static void mpt_forward_ref(double *out, const double *qkv, const att_shape *s)
{
    const int G = s->NH / s->KVH, C3 = s->KVH * (G + 2) * s->HS, C = s->NH * s->HS, HS = s->HS;
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->NH; h++)
            for (int i = 0; i < s->T; i++) {
                const double *q = qkv + ((size_t)b * s->T + i) * C3 + ((size_t)(h / G) * (G + 2) + h % G) * HS;
                double *o = out + ((size_t)b * s->T + i) * C + (size_t)h * HS, w[512], mx = -INFINITY, sum = 0;
                for (int j = 0; j <= i; j++) {
                    const double *k = qkv + ((size_t)b * s->T + j) * C3 + ((size_t)(h / G) * (G + 2) + G) * HS;
                    double d = 0;
                    for (int e = 0; e < HS; e++) d += q[e] * k[e];
                    w[j] = d / sqrt((double)HS) + (double)s->alibi[h] * (j - (s->T - 1));
                    mx = fmax(mx, w[j]);
                }
                for (int e = 0; e < HS; e++) o[e] = 0;
                for (int j = 0; j <= i; j++) {
                    const double *v = qkv + ((size_t)b * s->T + j) * C3 + ((size_t)(h / G) * (G + 2) + G + 1) * HS;
                    double p = exp(w[j] - mx);
                    sum += p;
                    for (int e = 0; e < HS; e++) o[e] += p * v[e];
                }
                for (int e = 0; e < HS; e++) o[e] /= sum;
            }
}

/* The reference's ALiBi (-slope (i - j)) gives MPT's output, whose bias depends on the key only. */
static void test_attention_alibi_is_mpt(void)
{
    static const gqa_case cases[] = {
        {2, ATTENTION_BLOCK + 37, 8, 8, 16, 8},      /* MPT's slopes */
        {1, 2 * ATTENTION_BLOCK + 3, 12, 12, 64, 8}, /* NH not a power of two */
        {1, 2 * ATTENTION_BLOCK + 3, 8, 2, 64, 1},   /* grouped, gentle slopes */
        {2, 45, 6, 3, 5, 4},                         /* grouped, odd HS */
        {1, 1, 4, 2, 16, 8},                         /* T = 1 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float slopes[16];
        att_shape s = gqa_shape(&cases[c], slopes);
        att_bufs a;
        if (!bufs_alloc(&a, s, 63u + (unsigned)c)) return;
        double *mpt = malloc(n_out(&s) * sizeof(double));
        float *reff = malloc(n_out(&s) * sizeof(float));
        attention_forward_ref_gqa(a.outd, a.qkvd, &s);
        mpt_forward_ref(mpt, a.qkvd, &s);
        to_float(reff, a.outd, n_out(&s));
        char what[128];
        shape_name(what, sizeof what, "forward", &s);
        CHECK(allclose(what, reff, mpt, n_out(&s), 1e-6, 1e-6), "%s: the reference differs from MPT's key-only bias",
              what);
        free(mpt), free(reff);
        bufs_free(&a);
    }
}

/* Grouped queries are multi-head attention with each kv head's k and v repeated for its G query
 * heads: the same forward bits (the same products on the same values), and dk, dv the sums of
 * the repeated heads' gradients. */
static void test_attention_gqa_is_repeated_mha(void)
{
    float slopes[8];
    const gqa_case c = {2, ATTENTION_BLOCK + 37, 8, 2, 16, 2};
    const att_shape s = gqa_shape(&c, slopes);
    const att_shape m = {s.B, s.T, s.NH, s.NH, s.HS, s.alibi};
    const int G = s.NH / s.KVH, HS = s.HS, C3g = s.KVH * (G + 2) * HS, C3m = 3 * s.NH * HS;
    att_bufs a, b;
    if (!bufs_alloc(&a, s, 71u)) return;
    if (!bufs_alloc(&b, m, 72u)) {
        bufs_free(&a);
        return;
    }
    memcpy(b.dout, a.dout, n_out(&s) * sizeof(float));
    for (size_t t = 0; t < (size_t)s.B * s.T; t++)
        for (int h = 0; h < s.NH; h++) {
            const float *g = a.qkv + t * C3g + (size_t)(h / G) * (G + 2) * HS;
            float *d = b.qkv + t * C3m + (size_t)h * 3 * HS;
            memcpy(d, g + (size_t)(h % G) * HS, HS * sizeof(float));
            memcpy(d + HS, g + (size_t)G * HS, 2 * HS * sizeof(float));
        }
    attention_forward_gqa(a.out, a.lse, a.qkv, &s);
    attention_forward_gqa(b.out, b.lse, b.qkv, &m);
    CHECK(memcmp(a.out, b.out, n_out(&s) * sizeof(float)) == 0 && memcmp(a.lse, b.lse, n_lse(&s) * sizeof(float)) == 0,
          "grouped forward differs from multi-head forward with k, v repeated");
    attention_backward_gqa(a.dqkv, a.scratch, 2, a.dout, a.qkv, a.out, a.lse, &s);
    attention_backward_gqa(b.dqkv, b.scratch, 2, b.dout, b.qkv, b.out, b.lse, &m);
    /* b's gradients gathered into the group layout, in double */
    double *ref = calloc(n_qkv(&s), sizeof(double));
    for (size_t t = 0; t < (size_t)s.B * s.T; t++)
        for (int h = 0; h < s.NH; h++) {
            double *g = ref + t * C3g + (size_t)(h / G) * (G + 2) * HS;
            const float *d = b.dqkv + t * C3m + (size_t)h * 3 * HS;
            for (int e = 0; e < HS; e++) g[(size_t)(h % G) * HS + e] = d[e];
            for (int e = 0; e < 2 * HS; e++) g[(size_t)G * HS + e] += d[HS + e];
        }
    CHECK(allclose("grouped dqkv vs repeated multi-head", a.dqkv, ref, n_qkv(&s), 1e-6, 1e-5),
          "grouped backward differs from the multi-head backward summed over each group");
    free(ref);
    bufs_free(&a), bufs_free(&b);
}

/* A group's dk and dv are one thread's: 1 and 2 threads give the same bits, fp32 and bf16. */
static void test_attention_gqa_threads(void)
{
    float slopes[8];
    const gqa_case c = {2, ATTENTION_BLOCK + 37, 8, 2, 16, 4};
    for (int alibi = 0; alibi < 2; alibi++) {
        att_shape s = gqa_shape(&c, slopes);
        if (!alibi) s.alibi = NULL;
        att_bufs a;
        if (!bufs_alloc(&a, s, 101u)) return;
        const size_t nq = n_qkv(&s);
        float *d1 = malloc(nq * sizeof(float)), *s1 = malloc(attention_scratch_floats_gqa(&s, 1) * sizeof(float));
        bufs_round_bf16(&a);
        attention_forward_gqa(a.out, a.lse, a.qkv, &s);
        attention_backward_gqa(d1, s1, 1, a.dout, a.qkv, a.out, a.lse, &s);
        attention_backward_gqa(a.dqkv, a.scratch, 2, a.dout, a.qkv, a.out, a.lse, &s);
        CHECK(memcmp(d1, a.dqkv, nq * sizeof(float)) == 0, "fp32 GQA backward%s: 1 and 2 threads differ",
              alibi ? " (alibi)" : "");
        attention_forward_gqa_bf16(a.outb, a.lse, a.qkvb, &s);
        attention_backward_gqa_bf16(d1, s1, 1, a.dout, a.qkvb, a.outb, a.lse, &s);
        attention_backward_gqa_bf16(a.dqkv, a.scratch, 2, a.dout, a.qkvb, a.outb, a.lse, &s);
        CHECK(memcmp(d1, a.dqkv, nq * sizeof(float)) == 0, "bf16 GQA backward%s: 1 and 2 threads differ",
              alibi ? " (alibi)" : "");
        CHECK(attention_scratch_floats_gqa(&s, 3) == attention_scratch_floats(s.T, s.HS, 3),
              "GQA scratch is not per thread");
        free(d1), free(s1);
        bufs_free(&a);
    }
}

/* MPT's slopes, worked out from gen_slopes: NH = 8: n = 8, m_i = i + 1, 2^-1 .. 2^-8. NH = 12:
 * n = 16, m_i = (i + 1) / 2, slopes 2^-0.5, 2^-1, ..., 2^-8; the odd-indexed ones (2^-1 .. 2^-8)
 * then the even-indexed (2^-0.5, 2^-1.5, ...), the first 12. NH = 1: n = 1, 2^-8. */
static void test_attention_alibi_slopes(void)
{
    float s8[8], s12[12], s1[1];
    attention_alibi_slopes(s8, 8, 8.0);
    for (int h = 0; h < 8; h++)
        CHECK(s8[h] == ldexpf(1.0f, -(h + 1)), "NH=8: slope %d is %.9g, expected 2^-%d", h, s8[h], h + 1);
    static const double want12[12] = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
                                      0.70710678118654752, 0.35355339059327376, 0.17677669529663688,
                                      0.08838834764831844};
    attention_alibi_slopes(s12, 12, 8.0);
    for (int h = 0; h < 12; h++)
        CHECK(fabs(s12[h] - want12[h]) <= 1e-7 * want12[h], "NH=12: slope %d is %.9g, expected %.9g", h, s12[h],
              want12[h]);
    attention_alibi_slopes(s1, 1, 8.0);
    CHECK(s1[0] == 1.0f / 256, "NH=1: slope %.9g, expected 2^-8", s1[0]);
}

/* ---------------------------------------------------------------- threads, NaN, scratch */

/* One and two threads give the same bits; the scratch is exactly as large as promised for
 * each (allocated to size, so that the sanitizer build catches an overrun). */
static void test_attention_threads(void)
{
    att_shape s = MHA(2, ATTENTION_BLOCK + 37, 3, 16);
    att_bufs a;
    if (!bufs_alloc(&a, s, 41u)) return;
    const size_t nq = n_qkv(&s), no = n_out(&s), nl = n_lse(&s);
    float *out1 = malloc(no * sizeof(float)), *lse1 = malloc(nl * sizeof(float)), *d1 = malloc(nq * sizeof(float));
    float *s1 = malloc(attention_scratch_floats(s.T, s.HS, 1) * sizeof(float));
    bf16 *ob1 = malloc(no * sizeof(bf16));
    const int saved = omp_get_max_threads();
    bufs_round_bf16(&a);
    for (int prec = 0; prec < 2; prec++) {
        const char *p = prec ? "bf16" : "fp32";
        omp_set_num_threads(1);
        if (prec) attention_forward_bf16(ob1, lse1, a.qkvb, s.B, s.T, s.NH, s.HS);
        else attention_forward(out1, lse1, a.qkv, s.B, s.T, s.NH, s.HS);
        omp_set_num_threads(2);
        if (prec) attention_forward_bf16(a.outb, a.lse, a.qkvb, s.B, s.T, s.NH, s.HS);
        else attention_forward(a.out, a.lse, a.qkv, s.B, s.T, s.NH, s.HS);
        omp_set_num_threads(saved);
        int same = prec ? memcmp(ob1, a.outb, no * sizeof(bf16)) == 0 : memcmp(out1, a.out, no * sizeof(float)) == 0;
        CHECK(same && memcmp(lse1, a.lse, nl * sizeof(float)) == 0, "%s forward: 1 and 2 threads differ", p);
        CHECK(all_finite(a.lse, nl), "%s: lse not finite", p);
        if (prec) {
            attention_backward_bf16(d1, s1, 1, a.dout, a.qkvb, a.outb, a.lse, s.B, s.T, s.NH, s.HS);
            attention_backward_bf16(a.dqkv, a.scratch, 2, a.dout, a.qkvb, a.outb, a.lse, s.B, s.T, s.NH, s.HS);
        } else {
            attention_backward(d1, s1, 1, a.dout, a.qkv, a.out, a.lse, s.B, s.T, s.NH, s.HS);
            attention_backward(a.dqkv, a.scratch, 2, a.dout, a.qkv, a.out, a.lse, s.B, s.T, s.NH, s.HS);
        }
        CHECK(memcmp(d1, a.dqkv, nq * sizeof(float)) == 0, "%s backward: 1 and 2 threads differ", p);
    }
    free(out1), free(lse1), free(d1), free(s1), free(ob1);
    bufs_free(&a);
}

/* A NaN in one query reaches that row's output and lse, and no other row's. */
static void test_attention_nan(void)
{
    att_shape s = MHA(2, ATTENTION_BLOCK + 9, 2, 16);
    const int C = s.NH * s.HS, C3 = 3 * C, b = 1, t = 40, h = 1;
    att_bufs a;
    if (!bufs_alloc(&a, s, 51u)) return;
    const size_t nq = n_qkv(&s), no = n_out(&s), row = ((size_t)b * s.T + t) * C + (size_t)h * s.HS;
    const size_t lrow = ((size_t)b * s.NH + h) * s.T + t;
    float *outw = malloc(no * sizeof(float));
    a.qkv[((size_t)b * s.T + t) * C3 + (size_t)h * 3 * s.HS + 3] = NAN;
    bufs_round_bf16(&a);
    for (int prec = 0; prec < 2; prec++) {
        const char *p = prec ? "bf16" : "fp32";
        if (prec) {
            attention_forward_bf16(a.outb, a.lse, a.qkvb, s.B, s.T, s.NH, s.HS);
            widen(outw, a.outb, no);
        } else {
            attention_forward(outw, a.lse, a.qkv, s.B, s.T, s.NH, s.HS);
        }
        int row_nan = 1, others = 1;
        for (size_t i = 0; i < no; i++) {
            if (i >= row && i < row + (size_t)s.HS) row_nan &= isnan(outw[i]);
            else others &= isfinite(outw[i]);
        }
        for (size_t i = 0; i < n_lse(&s); i++) others &= i == lrow || isfinite(a.lse[i]);
        CHECK(row_nan && isnan(a.lse[lrow]), "%s: the NaN query's output row or lse is not NaN", p);
        CHECK(others, "%s: a NaN in one query reached another row", p);
        if (prec) attention_backward_bf16(a.dqkv, a.scratch, 2, a.dout, a.qkvb, a.outb, a.lse, s.B, s.T, s.NH, s.HS);
        else attention_backward(a.dqkv, a.scratch, 2, a.dout, a.qkv, outw, a.lse, s.B, s.T, s.NH, s.HS);
        CHECK(!all_finite(a.dqkv, nq), "%s backward hid a NaN", p);
    }
    free(outw);
    bufs_free(&a);
}

/* The backward's scratch is per thread, linear in T (never the (T, T) scores): within 8 blocks
 * times (T + HS) floats, plus a few (block x block) tiles. */
static void test_attention_scratch_linear(void)
{
    for (int HS = 16; HS <= 256; HS *= 2) {
        size_t s1 = attention_scratch_floats(1024, HS, 1), s2 = attention_scratch_floats(2048, HS, 1);
        size_t s4 = attention_scratch_floats(4096, HS, 1);
        CHECK(s4 - s2 == 2 * (s2 - s1), "HS=%d: scratch %zu, %zu, %zu floats at T=1024, 2048, 4096: not linear", HS, s1,
              s2, s4);
        for (int T = 1; T <= 65536; T *= 8) {
            size_t sT = attention_scratch_floats(T, HS, 1),
                   bound = (size_t)8 * ATTENTION_BLOCK * (ATTENTION_BLOCK + T + HS);
            CHECK(sT <= bound, "HS=%d T=%d: %zu floats of scratch, more than 8 blocks x (block + T + HS) = %zu", HS, T,
                  sT, bound);
        }
        CHECK(attention_scratch_floats(2048, HS, 3) == 3 * s2, "HS=%d: scratch is not per thread", HS);
    }
}

/* The model's memory estimate keeps (B, NH, T) per layer for attention, not (B, NH, T, T):
 * pythia-410m at B=4, T=2048 (refused at 43 GiB with the saved probabilities) fits in 24 GiB. */
static void test_attention_model_estimate(void)
{
    model_config c;
    CHECK(model_preset_find("pythia-410m", &c) == 0, "preset pythia-410m missing");
    gpt_mem m2, m4;
    gpt_estimate(&c, 4, 2048, 0, PRECISION_FP32, &m2);
    gpt_estimate(&c, 4, 4096, 0, PRECISION_FP32, &m4);
    CHECK(m4.acts_layer == 2 * m2.acts_layer,
          "one layer's activations: %.0f bytes at T=2048, %.0f at T=4096: not linear", m2.acts_layer, m4.acts_layer);
    CHECK(m2.total < 24.0 * (1u << 30), "pythia-410m at B=4 T=2048: %.1f GiB estimated", m2.total / (1u << 30));
}

const test_case tests_attention[] = {
    {"attention: causal (later keys and values change no earlier output, fp32 and bf16)", test_attention_causal},
    {"attention: bf16 vdpbf16ps and portable paths agree", test_attention_bf16_paths_agree},
    {"attention: 1 and 2 threads give the same bits (exact scratch sizes)", test_attention_threads},
    {"attention: NaN in one query reaches only its row", test_attention_nan},
    {"attention: backward scratch per thread, linear in T, within 8 blocks x (T + HS)", test_attention_scratch_linear},
    {"attention: the model's memory estimate is linear in T (pythia-410m B=4 T=2048 under 24 GiB)",
     test_attention_model_estimate},
    {"attention: the reference's ALiBi is MPT's key-only bias", test_attention_alibi_is_mpt},
    {"attention: GQA equals multi-head attention with k, v repeated (forward bits, backward summed)",
     test_attention_gqa_is_repeated_mha},
    {"attention: GQA backward, 1 and 2 threads give the same bits (fp32, bf16, ALiBi)", test_attention_gqa_threads},
    {"attention: ALiBi slopes of MPT's gen_slopes (NH 8, 12, 1)", test_attention_alibi_slopes},
    {NULL, NULL},
};
