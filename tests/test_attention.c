/* The tiled attention kernels (kernels/attention.h): the fp32 forward against the double
 * reference at shapes on and off the block edges, the backward against central finite
 * differences, the bf16 kernels against the reference and the fp32 kernels on the same
 * bf16-rounded inputs (both the vdpbf16ps and the portable path), causality, thread-count
 * independence, NaN propagation and the scratch contract; the same for grouped-query attention
 * and ALiBi (attn_shape), grouped queries against multi-head attention with k and v repeated,
 * ALiBi against MPT's key-only bias, and MPT's slopes. The old entry points (attention_forward,
 * ...) are the multi-head wrappers the first tests exercise. */
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

/* Buffers of one shape; the scratch exactly attention_scratch_floats_s(s, 2) floats, so that
 * the sanitizer build catches any overrun. */
typedef struct {
    att_shape s;
    float *qkv, *out, *lse, *dout, *dqkv, *scratch;
    double *qkvd, *outd, *doutd, *lsed;
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
    a->outd = malloc(no * sizeof(double)), a->doutd = malloc(no * sizeof(double));
    a->lse = malloc(nl * sizeof(float)), a->lsed = malloc(nl * sizeof(double));
    a->qkvb = malloc(nq * sizeof(bf16)), a->outb = malloc(no * sizeof(bf16));
    a->scratch = malloc(attention_scratch_floats_s(&s, 2) * sizeof(float));
    if (!a->qkv || !a->dqkv || !a->qkvd || !a->out || !a->dout || !a->outd || !a->doutd || !a->lse || !a->lsed ||
        !a->qkvb || !a->outb || !a->scratch) {
        CHECK(0, "out of memory");
        bufs_free(a);
        return 0;
    }
    rand_fill(a->qkv, nq, &seed);
    for (size_t i = 0; i < nq; i++) a->qkv[i] *= 2.0f; /* peaked softmax rows */
    rand_fill(a->dout, no, &seed);
    to_double(a->qkvd, a->qkv, nq), to_double(a->doutd, a->dout, no);
    return 1;
}

static void bufs_free(att_bufs *a)
{
    free(a->qkv), free(a->dqkv), free(a->qkvd), free(a->out), free(a->dout), free(a->outd), free(a->doutd);
    free(a->lse), free(a->lsed), free(a->qkvb), free(a->outb), free(a->scratch);
}

/* Rounds qkv to bf16 (qkvb) and makes qkv and qkvd those rounded values. */
static void bufs_round_bf16(att_bufs *a)
{
    size_t nq = n_qkv(&a->s);
    for (size_t i = 0; i < nq; i++) a->qkvb[i] = bf16_from_float(a->qkv[i]), a->qkv[i] = bf16_to_float(a->qkvb[i]);
    to_double(a->qkvd, a->qkv, nq);
}

/* Each query's log-sum-exp of its scaled (and biased) scores, in double. */
static void lse_ref(double *lse, const double *qkv, att_shape s)
{
    const int G = s.NH / s.KVH, C3 = s.KVH * (G + 2) * s.HS;
    const double scale = 1.0 / sqrt((double)s.HS);
    for (int b = 0; b < s.B; b++)
        for (int h = 0; h < s.NH; h++) {
            const size_t qo = ((size_t)(h / G) * (G + 2) + h % G) * s.HS, ko = ((size_t)(h / G) * (G + 2) + G) * s.HS;
            const double slope = s.alibi ? s.alibi[h] : 0.0;
            for (int i = 0; i < s.T; i++) {
                const double *q = qkv + ((size_t)b * s.T + i) * C3 + qo;
                double mx = -INFINITY, sum = 0;
                for (int pass = 0; pass < 2; pass++)
                    for (int j = 0; j <= i; j++) {
                        const double *k = qkv + ((size_t)b * s.T + j) * C3 + ko;
                        double d = 0;
                        for (int e = 0; e < s.HS; e++) d += q[e] * k[e];
                        d = d * scale - slope * (i - j);
                        if (pass == 0) mx = fmax(mx, d);
                        else sum += exp(d - mx);
                    }
                lse[((size_t)b * s.NH + h) * s.T + i] = mx + log(sum);
            }
        }
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

/* ---------------------------------------------------------------- fp32 forward */

static const att_shape fwd_shapes[] = {
    MHA(1, 1, 2, 64),                      /* T = 1 */
    MHA(2, 37, 2, 16),                     /* one partial block */
    MHA(1, ATTENTION_BLOCK, 2, 64),        /* exactly one block */
    MHA(1, 2 * ATTENTION_BLOCK + 3, 2, 64), /* two blocks and 3 rows */
    MHA(2, 100, 3, 16),
    MHA(1, 70, 1, 80), /* HS not a multiple of 16 (pythia-2.8b's) */
    MHA(1, 45, 2, 5),  /* odd HS */
    MHA(1, 70, 1, 256), /* pythia-1b's heads: the forward's stack tiles at their largest */
};

static void test_attention_forward_reference(void)
{
    for (size_t c = 0; c < sizeof fwd_shapes / sizeof fwd_shapes[0]; c++) {
        att_shape s = fwd_shapes[c];
        att_bufs a;
        if (!bufs_alloc(&a, s, 11u + (unsigned)c)) return;
        attention_forward(a.out, a.lse, a.qkv, s.B, s.T, s.NH, s.HS);
        attention_forward_ref(a.outd, a.qkvd, s.B, s.T, s.NH, s.HS);
        lse_ref(a.lsed, a.qkvd, s);
        char what[96];
        snprintf(what, sizeof what, "forward B=%d T=%d NH=%d HS=%d", s.B, s.T, s.NH, s.HS);
        CHECK(allclose(what, a.out, a.outd, n_out(&s), 1e-5, 1e-4), "%s differs from the reference", what);
        CHECK(allclose(what, a.lse, a.lsed, n_lse(&s), 1e-5, 1e-5), "%s: lse differs from the reference", what);
        bufs_free(&a);
    }
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

/* ---------------------------------------------------------------- fp32 backward */

typedef struct {
    att_shape s;
    double *dout, *out;
} att_fd;

static double att_loss(void *p, const double *v)
{
    att_fd *c = p;
    attention_forward_ref_s(c->out, v, &c->s);
    double l = 0;
    for (size_t i = 0; i < n_out(&c->s); i++) l += c->dout[i] * c->out[i];
    return l;
}

static void test_attention_backward_fd(void)
{
    static const struct {
        att_shape s;
        int nsample;
    } cases[] = {
        {MHA(2, 6, 2, 4), 1 << 20},                    /* every element */
        {MHA(1, ATTENTION_BLOCK + 37, 2, 16), 120},    /* a full and a partial block */
        {MHA(1, 2 * ATTENTION_BLOCK + 3, 1, 8), 150},  /* three blocks */
        {MHA(1, 70, 1, 64), 100},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        att_shape s = cases[c].s;
        att_bufs a;
        if (!bufs_alloc(&a, s, 5u + (unsigned)c)) return;
        for (size_t i = 0; i < n_qkv(&s); i++) a.dqkv[i] = NAN; /* every element must be written */
        attention_forward(a.out, a.lse, a.qkv, s.B, s.T, s.NH, s.HS);
        attention_backward(a.dqkv, a.scratch, 2, a.dout, a.qkv, a.out, a.lse, s.B, s.T, s.NH, s.HS);
        att_fd f = {s, a.doutd, a.outd};
        char what[96];
        snprintf(what, sizeof what, "dqkv B=%d T=%d NH=%d HS=%d", s.B, s.T, s.NH, s.HS);
        CHECK(all_finite(a.dqkv, n_qkv(&s)), "%s: an element left unwritten or not finite", what);
        CHECK(fd_check(what, a.qkvd, n_qkv(&s), a.dqkv, att_loss, &f, cases[c].nsample, 1e-3),
              "%s vs finite differences", what);
        bufs_free(&a);
    }
}

/* ---------------------------------------------------------------- bf16 */

/* Tolerances of the bf16 kernels, on inputs already rounded to bf16 (so that only the kernel's
 * own roundings count): the output is rounded to bf16 (relative 2^-9) and P is rounded to bf16
 * before P V, each weight off by up to 2^-9 relative: |out - ref| <= 1e-2 + 2e-2 |ref|. lse
 * comes from exact bf16 products summed in fp32: |lse - ref| <= 1e-5 + 1e-5 |ref|. */
#define BF16_OUT_ATOL 1e-2
#define BF16_OUT_RTOL 2e-2
#define BF16_LSE_TOL 1e-5
/* The backward rounds dO, P and dS to bf16 (each 2^-9 relative) before products of up to T
 * terms with fp32 sums: against the fp32 backward on the same inputs (its own output rounded to
 * bf16 too), |d - d32| <= 2e-2 max|d32| + 5e-2 |d32|. */
#define BF16_GRAD_ATOL 2e-2
#define BF16_GRAD_RTOL 5e-2

static double max_abs(const float *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* The bf16 kernels (path `native`) at shape s: forward against the double reference, backward
 * against the fp32 backward on the same bf16-rounded inputs. */
static void bf16_shape_check(att_shape s, int native, unsigned seed)
{
    const char *path = native ? "vdpbf16ps" : "portable";
    att_bufs a;
    if (!bufs_alloc(&a, s, seed)) return;
    const size_t nq = n_qkv(&s), no = n_out(&s), nl = n_lse(&s);
    float *outw = malloc(no * sizeof(float)), *lse32 = malloc(nl * sizeof(float)), *d32 = malloc(nq * sizeof(float));
    double *d32d = malloc(nq * sizeof(double));
    bufs_round_bf16(&a);
    char what[160];
    snprintf(what, sizeof what, "bf16 (%s) B=%d T=%d NH=%d KVH=%d HS=%d%s", path, s.B, s.T, s.NH, s.KVH, s.HS,
             s.alibi ? " alibi" : "");
    attn_bf16_forward_path(a.outb, a.lse, a.qkvb, &s, native);
    attention_forward_ref_s(a.outd, a.qkvd, &s);
    lse_ref(a.lsed, a.qkvd, s);
    widen(outw, a.outb, no);
    CHECK(allclose(what, outw, a.outd, no, BF16_OUT_ATOL, BF16_OUT_RTOL), "%s: forward vs reference", what);
    CHECK(allclose(what, a.lse, a.lsed, nl, BF16_LSE_TOL, BF16_LSE_TOL), "%s: lse vs reference", what);
    /* backward against the fp32 backward on the same rounded q, k, v and output */
    for (size_t i = 0; i < nq; i++) a.dqkv[i] = NAN;
    attn_bf16_backward_path(a.dqkv, a.scratch, 2, a.dout, a.qkvb, a.outb, a.lse, &s, native);
    attention_forward_s(a.out, lse32, a.qkv, &s);
    attention_backward_s(d32, a.scratch, 2, a.dout, a.qkv, outw, lse32, &s);
    to_double(d32d, d32, nq);
    CHECK(all_finite(a.dqkv, nq), "%s: dqkv has unwritten or non-finite elements", what);
    CHECK(allclose(what, a.dqkv, d32d, nq, BF16_GRAD_ATOL * max_abs(d32, nq), BF16_GRAD_RTOL),
          "%s: backward vs the fp32 backward", what);
    free(outw), free(lse32), free(d32), free(d32d);
    bufs_free(&a);
}

static void bf16_path_check(int native)
{
    static const att_shape shapes[] = {
        MHA(1, 1, 2, 64),  MHA(2, 37, 2, 16), MHA(1, 2 * ATTENTION_BLOCK + 3, 2, 64),
        MHA(1, 70, 1, 80), MHA(1, 45, 2, 5),  MHA(1, 70, 1, 256),
    };
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++)
        bf16_shape_check(shapes[c], native, 21u + (unsigned)c);
}

static void test_attention_bf16(void)
{
    bf16_path_check(0);
    if (bf16_cpu_native()) bf16_path_check(1);
    else printf("    (no AVX512_BF16 on this CPU: the vdpbf16ps path is not tested)\n");
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

static void test_attention_gqa_alibi_forward(void)
{
    static const gqa_case cases[] = {
        {2, ATTENTION_BLOCK + 37, 8, 2, 16, 0},     /* G = 4 */
        {1, 2 * ATTENTION_BLOCK + 3, 8, 1, 32, 0},  /* multi-query */
        {2, ATTENTION_BLOCK + 37, 8, 8, 16, 8},     /* ALiBi, MPT's slopes */
        {1, 2 * ATTENTION_BLOCK + 3, 12, 12, 64, 8}, /* ALiBi, NH not a power of two */
        {1, 2 * ATTENTION_BLOCK + 3, 8, 2, 64, 1},  /* both, gentle slopes */
        {2, 45, 6, 3, 5, 4},                        /* both, odd HS */
        {1, 1, 4, 2, 16, 8},                        /* T = 1 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float slopes[16];
        att_shape s = gqa_shape(&cases[c], slopes);
        att_bufs a;
        if (!bufs_alloc(&a, s, 61u + (unsigned)c)) return;
        attention_forward_s(a.out, a.lse, a.qkv, &s);
        attention_forward_ref_s(a.outd, a.qkvd, &s);
        lse_ref(a.lsed, a.qkvd, s);
        char what[128];
        shape_name(what, sizeof what, "forward", &s);
        CHECK(allclose(what, a.out, a.outd, n_out(&s), 1e-5, 1e-4), "%s differs from the reference", what);
        CHECK(allclose(what, a.lse, a.lsed, n_lse(&s), 1e-5, 1e-5), "%s: lse differs from the reference", what);
        if (s.alibi) {
            double *mpt = malloc(n_out(&s) * sizeof(double));
            float *reff = malloc(n_out(&s) * sizeof(float));
            mpt_forward_ref(mpt, a.qkvd, &s);
            to_float(reff, a.outd, n_out(&s));
            CHECK(allclose(what, reff, mpt, n_out(&s), 1e-6, 1e-6),
                  "%s: the reference differs from MPT's key-only bias", what);
            free(mpt), free(reff);
        }
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
    attention_forward_s(a.out, a.lse, a.qkv, &s);
    attention_forward_s(b.out, b.lse, b.qkv, &m);
    CHECK(memcmp(a.out, b.out, n_out(&s) * sizeof(float)) == 0 && memcmp(a.lse, b.lse, n_lse(&s) * sizeof(float)) == 0,
          "grouped forward differs from multi-head forward with k, v repeated");
    attention_backward_s(a.dqkv, a.scratch, 2, a.dout, a.qkv, a.out, a.lse, &s);
    attention_backward_s(b.dqkv, b.scratch, 2, b.dout, b.qkv, b.out, b.lse, &m);
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

static void test_attention_gqa_alibi_backward_fd(void)
{
    static const struct {
        gqa_case c;
        int nsample;
    } cases[] = {
        {{2, 6, 4, 2, 4, 0}, 1 << 20},                     /* GQA, every element */
        {{1, ATTENTION_BLOCK + 37, 8, 2, 8, 0}, 150},      /* GQA, a full and a partial block */
        {{1, ATTENTION_BLOCK + 6, 4, 1, 8, 0}, 150},       /* multi-query */
        {{2, 6, 2, 2, 4, 8}, 1 << 20},                     /* ALiBi, every element */
        {{1, ATTENTION_BLOCK + 37, 4, 4, 8, 1}, 150},      /* ALiBi */
        {{1, 2 * ATTENTION_BLOCK + 3, 4, 2, 8, 2}, 150},   /* both, three blocks */
        {{2, 7, 6, 3, 4, 8}, 1 << 20},                     /* both, every element */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float slopes[16];
        att_shape s = gqa_shape(&cases[c].c, slopes);
        att_bufs a;
        if (!bufs_alloc(&a, s, 81u + (unsigned)c)) return;
        for (size_t i = 0; i < n_qkv(&s); i++) a.dqkv[i] = NAN; /* every element must be written */
        attention_forward_s(a.out, a.lse, a.qkv, &s);
        attention_backward_s(a.dqkv, a.scratch, 2, a.dout, a.qkv, a.out, a.lse, &s);
        att_fd f = {s, a.doutd, a.outd};
        char what[128];
        shape_name(what, sizeof what, "dqkv", &s);
        CHECK(all_finite(a.dqkv, n_qkv(&s)), "%s: an element left unwritten or not finite", what);
        CHECK(fd_check(what, a.qkvd, n_qkv(&s), a.dqkv, att_loss, &f, cases[c].nsample, 1e-3),
              "%s vs finite differences", what);
        bufs_free(&a);
    }
}

static void test_attention_gqa_alibi_bf16(void)
{
    static const gqa_case cases[] = {
        {2, 37, 8, 2, 16, 0}, {1, 2 * ATTENTION_BLOCK + 3, 8, 1, 64, 0}, {1, 2 * ATTENTION_BLOCK + 3, 4, 4, 64, 8},
        {1, 70, 8, 2, 80, 1}, {1, 45, 6, 3, 5, 4}, {1, 70, 2, 1, 256, 2},
    };
    for (int native = 0; native < 2; native++) {
        if (native && !bf16_cpu_native()) {
            printf("    (no AVX512_BF16 on this CPU: the vdpbf16ps path is not tested)\n");
            break;
        }
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            float slopes[16];
            bf16_shape_check(gqa_shape(&cases[c], slopes), native, 91u + (unsigned)c);
        }
    }
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
        float *d1 = malloc(nq * sizeof(float)), *s1 = malloc(attention_scratch_floats_s(&s, 1) * sizeof(float));
        bufs_round_bf16(&a);
        attention_forward_s(a.out, a.lse, a.qkv, &s);
        attention_backward_s(d1, s1, 1, a.dout, a.qkv, a.out, a.lse, &s);
        attention_backward_s(a.dqkv, a.scratch, 2, a.dout, a.qkv, a.out, a.lse, &s);
        CHECK(memcmp(d1, a.dqkv, nq * sizeof(float)) == 0, "fp32 GQA backward%s: 1 and 2 threads differ",
              alibi ? " (alibi)" : "");
        attention_forward_bf16_s(a.outb, a.lse, a.qkvb, &s);
        attention_backward_bf16_s(d1, s1, 1, a.dout, a.qkvb, a.outb, a.lse, &s);
        attention_backward_bf16_s(a.dqkv, a.scratch, 2, a.dout, a.qkvb, a.outb, a.lse, &s);
        CHECK(memcmp(d1, a.dqkv, nq * sizeof(float)) == 0, "bf16 GQA backward%s: 1 and 2 threads differ",
              alibi ? " (alibi)" : "");
        CHECK(attention_scratch_floats_s(&s, 3) == attention_scratch_floats(s.T, s.HS, 3),
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
    {"attention: fp32 forward and lse vs double reference (T = 1, partial blocks, HS 5..256)",
     test_attention_forward_reference},
    {"attention: causal (later keys and values change no earlier output, fp32 and bf16)", test_attention_causal},
    {"attention: fp32 backward vs finite differences (every element written)", test_attention_backward_fd},
    {"attention: bf16 vs reference and vs fp32 backward on bf16-rounded inputs (both paths)", test_attention_bf16},
    {"attention: bf16 vdpbf16ps and portable paths agree", test_attention_bf16_paths_agree},
    {"attention: 1 and 2 threads give the same bits (exact scratch sizes)", test_attention_threads},
    {"attention: NaN in one query reaches only its row", test_attention_nan},
    {"attention: backward scratch per thread, linear in T, within 8 blocks x (T + HS)", test_attention_scratch_linear},
    {"attention: the model's memory estimate is linear in T (pythia-410m B=4 T=2048 under 24 GiB)",
     test_attention_model_estimate},
    {"attention: GQA (KVH 2, 1) and ALiBi forward vs double reference; ALiBi as MPT's key-only bias",
     test_attention_gqa_alibi_forward},
    {"attention: GQA equals multi-head attention with k, v repeated (forward bits, backward summed)",
     test_attention_gqa_is_repeated_mha},
    {"attention: GQA, ALiBi and both, backward vs finite differences", test_attention_gqa_alibi_backward_fd},
    {"attention: GQA and ALiBi in bf16 vs reference and vs the fp32 backward (both paths)",
     test_attention_gqa_alibi_bf16},
    {"attention: GQA backward, 1 and 2 threads give the same bits (fp32, bf16, ALiBi)", test_attention_gqa_threads},
    {"attention: ALiBi slopes of MPT's gen_slopes (NH 8, 12, 1)", test_attention_alibi_slopes},
    {NULL, NULL},
};
