/* test_ops_attention.c: the registry's entry for the tiled attention kernels
 * (kernels/attention.h): multi-head (through the wrappers attention_forward and
 * attention_backward), grouped-query and ALiBi shapes, on and off the block edges, T = 1, odd
 * and large HS. fp32: the forward and each query's lse against the double reference, every
 * element of dqkv written and against central finite differences. bf16, on inputs rounded first
 * (so that only the kernel's own roundings count), on both paths (portable, and vdpbf16ps where
 * the CPU has AVX512_BF16): the forward and lse against the reference, dqkv against the fp32
 * backward on the same rounded inputs and the path's own output. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../kernels/attention.h"
#include "../kernels/attn_tile.h"
#include "check.h"
#include "ops.h"

#define FD_ALL (1 << 20)

/* alibi_max 0: no bias; else MPT's slopes for that alibi_bias_max (8: MPT's; smaller: gentler
 * slopes, more keys that matter). nsample: finite-difference samples of dqkv. */
static const struct {
    int B, T, NH, KVH, HS;
    double alibi_max;
    int nsample;
} attn_shapes[] = {
    {1, 1, 2, 2, 64, 0, 30},                          /* T = 1 */
    {2, 37, 2, 2, 16, 0, 30},                         /* one partial block */
    {1, ATTENTION_BLOCK, 2, 2, 64, 0, 30},            /* exactly one block */
    {1, 2 * ATTENTION_BLOCK + 3, 2, 2, 64, 0, 30},    /* two blocks and 3 rows */
    {2, 100, 3, 3, 16, 0, 30},
    {1, 70, 1, 1, 80, 0, 30},                         /* HS not a multiple of 16 (pythia-2.8b's) */
    {1, 45, 2, 2, 5, 0, 30},                          /* odd HS */
    {1, 70, 1, 1, 256, 0, 30},                        /* pythia-1b's heads: the largest stack tiles */
    {2, 6, 2, 2, 4, 0, FD_ALL},                       /* every element */
    {1, ATTENTION_BLOCK + 37, 2, 2, 16, 0, 120},      /* a full and a partial block */
    {1, 2 * ATTENTION_BLOCK + 3, 1, 1, 8, 0, 150},    /* three blocks */
    {1, 70, 1, 1, 64, 0, 100},
    {2, ATTENTION_BLOCK + 37, 8, 2, 16, 0, 30},       /* G = 4 */
    {1, 2 * ATTENTION_BLOCK + 3, 8, 1, 32, 0, 30},    /* multi-query */
    {2, ATTENTION_BLOCK + 37, 8, 8, 16, 8, 30},       /* ALiBi, MPT's slopes */
    {1, 2 * ATTENTION_BLOCK + 3, 12, 12, 64, 8, 30},  /* ALiBi, NH not a power of two */
    {1, 2 * ATTENTION_BLOCK + 3, 8, 2, 64, 1, 30},    /* both, gentle slopes */
    {2, 45, 6, 3, 5, 4, 30},                          /* both, odd HS */
    {1, 1, 4, 2, 16, 8, 30},                          /* both, T = 1 */
    {2, 6, 4, 2, 4, 0, FD_ALL},                       /* GQA, every element */
    {1, ATTENTION_BLOCK + 37, 8, 2, 8, 0, 150},       /* GQA, a full and a partial block */
    {1, ATTENTION_BLOCK + 6, 4, 1, 8, 0, 150},        /* multi-query */
    {2, 6, 2, 2, 4, 8, FD_ALL},                       /* ALiBi, every element */
    {1, ATTENTION_BLOCK + 37, 4, 4, 8, 1, 150},       /* ALiBi */
    {1, 2 * ATTENTION_BLOCK + 3, 4, 2, 8, 2, 150},    /* both, three blocks */
    {2, 7, 6, 3, 4, 8, FD_ALL},                       /* both, every element */
    {2, 37, 8, 2, 16, 0, 30},                         /* GQA, one partial block */
    {1, 2 * ATTENTION_BLOCK + 3, 8, 1, 64, 0, 30},    /* multi-query, HS 64 */
    {1, 2 * ATTENTION_BLOCK + 3, 4, 4, 64, 8, 30},    /* ALiBi, HS 64 */
    {1, 70, 8, 2, 80, 1, 30},                         /* both, HS 80 */
    {1, 70, 2, 1, 256, 2, 30},                        /* both, HS 256 */
};
#define ATTN_NSHAPES (int)(sizeof attn_shapes / sizeof attn_shapes[0])
static const tolerance attn_out_tol = {1e-5, 1e-4};
static const tolerance attn_lse_tol = {1e-5, 1e-5};
#define ATTN_FD_TOL 1e-3
/* bf16: the output is rounded to bf16 (2^-8 relative) and P is rounded to bf16 before P V, each
 * weight off by up to 2^-8 relative: |out - ref| <= 1e-2 + 2e-2 |ref|. lse comes from exact bf16
 * products summed in fp32: attn_lse_tol. */
static const tolerance attn_out16_tol = {1e-2, 2e-2};
/* The backward rounds dO, P and dS to bf16 (each 2^-8 relative) before products of up to T
 * terms with fp32 sums: against the fp32 backward on the same inputs (its own output rounded to
 * bf16 too), |d - d32| <= 2e-2 max|d32| + 5e-2 |d32|. */
#define ATTN_GRAD16_ATOL 2e-2
#define ATTN_GRAD16_RTOL 5e-2
#define ATTN_THREADS 2

static const char *const path_names[2] = {"portable", "vdpbf16ps"};

typedef struct {
    attn_shape s;
    float slopes[16];
    int nsample, npaths; /* bf16 paths: the portable one, and vdpbf16ps where the CPU has it */
    size_t nq, no, nl;
    float *qkv, *dout, *out, *lse, *dqkv, *scratch, *lse32;
    float *lse16[2], *dqkv16[2], *outw[2], *d32[2]; /* per bf16 path */
    bf16 *qkvb, *outb[2];
    double *qkvd, *doutd, *outd, *lsed, *d32d, *fd_out;
} attn_op;

static int attn_make(void *p, arena *a, int sh, int prec, char *label, size_t ln)
{
    attn_op *o = p;
    const int NH = attn_shapes[sh].NH, KVH = attn_shapes[sh].KVH;
    if (attn_shapes[sh].alibi_max > 0) attention_alibi_slopes(o->slopes, NH, attn_shapes[sh].alibi_max);
    o->s = (attn_shape){attn_shapes[sh].B, attn_shapes[sh].T, NH, KVH, attn_shapes[sh].HS,
                        attn_shapes[sh].alibi_max > 0 ? o->slopes : NULL};
    const attn_shape *s = &o->s;
    o->nsample = attn_shapes[sh].nsample, o->npaths = 1 + (bf16_cpu_native() != 0);
    o->nq = (size_t)s->B * s->T * KVH * (NH / KVH + 2) * s->HS, o->no = (size_t)s->B * s->T * NH * s->HS;
    o->nl = (size_t)s->B * NH * s->T;
    const size_t nq = o->nq, no = o->no, nl = o->nl;
    o->qkv = floats(a, nq), o->dqkv = floats(a, nq), o->dout = floats(a, no), o->out = floats(a, no);
    o->lse = floats(a, nl), o->lse32 = floats(a, nl);
    o->scratch = floats(a, attention_scratch_floats_gqa(s, ATTN_THREADS)); /* exactly: the sanitizer sees overruns */
    for (int q = 0; q < 2; q++) {
        o->lse16[q] = floats(a, nl), o->dqkv16[q] = floats(a, nq), o->outw[q] = floats(a, no);
        o->d32[q] = floats(a, nq), o->outb[q] = halves(a, no);
    }
    o->qkvb = halves(a, nq);
    o->qkvd = doubles(a, nq), o->d32d = doubles(a, nq), o->doutd = doubles(a, no), o->outd = doubles(a, no);
    o->fd_out = doubles(a, no), o->lsed = doubles(a, nl);
    if (a->oom) return 0;
    unsigned st = 11u + (unsigned)sh;
    fill(o->qkv, o->qkvd, nq, &st, 2.0f, 0.0f); /* peaked softmax rows */
    fill(o->dout, o->doutd, no, &st, 1.0f, 0.0f);
    if (prec == OP_BF16) round_bf16(o->qkv, o->qkvd, o->qkvb, nq);
    snprintf(label, ln, "B=%d T=%d NH=%d KVH=%d HS=%d%s", s->B, s->T, NH, KVH, s->HS, s->alibi ? " alibi" : "");
    return 1;
}

static void nan_fill(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = NAN; /* every element must be written */
}

static void attn_run(void *p, int prec)
{
    attn_op *o = p;
    const attn_shape *s = &o->s;
    if (prec == OP_FP32) {
        nan_fill(o->dqkv, o->nq);
        if (s->KVH == s->NH && !s->alibi) { /* multi-head: the wrappers */
            attention_forward(o->out, o->lse, o->qkv, s->B, s->T, s->NH, s->HS);
            attention_backward(o->dqkv, o->scratch, ATTN_THREADS, o->dout, o->qkv, o->out, o->lse, s->B, s->T, s->NH,
                               s->HS);
        } else {
            attention_forward_gqa(o->out, o->lse, o->qkv, s);
            attention_backward_gqa(o->dqkv, o->scratch, ATTN_THREADS, o->dout, o->qkv, o->out, o->lse, s);
        }
        return;
    }
    attention_forward_gqa(o->out, o->lse32, o->qkv, s);
    for (int q = 0; q < o->npaths; q++) {
        attn_bf16_forward_path(o->outb[q], o->lse16[q], o->qkvb, s, q);
        nan_fill(o->dqkv16[q], o->nq);
        attn_bf16_backward_path(o->dqkv16[q], o->scratch, ATTN_THREADS, o->dout, o->qkvb, o->outb[q], o->lse16[q], s,
                                q);
        widen(o->outw[q], o->outb[q], o->no);
        attention_backward_gqa(o->d32[q], o->scratch, ATTN_THREADS, o->dout, o->qkv, o->outw[q], o->lse32, s);
    }
}

static void attn_ref(void *p, int which, const double *v, double *out)
{
    attn_op *o = p;
    attention_forward_ref_gqa(out, which == 0 ? v : o->qkvd, &o->s);
}

/* Each query's log-sum-exp of its scaled (and biased) scores, in double. */
static void lse_ref(double *lse, const double *qkv, const attn_shape *s)
{
    const int G = s->NH / s->KVH, C3 = s->KVH * (G + 2) * s->HS;
    const double scale = 1.0 / sqrt((double)s->HS);
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->NH; h++) {
            const size_t qo = ((size_t)(h / G) * (G + 2) + h % G) * s->HS, ko = ((size_t)(h / G) * (G + 2) + G) * s->HS;
            const double slope = s->alibi ? s->alibi[h] : 0.0;
            for (int i = 0; i < s->T; i++) {
                const double *q = qkv + ((size_t)b * s->T + i) * C3 + qo;
                double mx = -INFINITY, sum = 0;
                for (int pass = 0; pass < 2; pass++)
                    for (int j = 0; j <= i; j++) {
                        const double *k = qkv + ((size_t)b * s->T + j) * C3 + ko;
                        double d = 0;
                        for (int e = 0; e < s->HS; e++) d += q[e] * k[e];
                        d = d * scale - slope * (i - j);
                        if (pass == 0) mx = fmax(mx, d);
                        else sum += exp(d - mx);
                    }
                lse[((size_t)b * s->NH + h) * s->T + i] = mx + log(sum);
            }
        }
}

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

static double max_abs(const float *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* One bf16 path: the forward and lse against the reference, dqkv against the fp32 backward. */
static void attn_check_path(attn_op *o, const op_run *r, int q)
{
    char what[96];
    snprintf(what, sizeof what, "(%s) out", path_names[q]);
    op_close16(r, what, o->outb[q], o->outd, o->no, attn_out16_tol);
    snprintf(what, sizeof what, "(%s) lse", path_names[q]);
    op_close(r, what, o->lse16[q], o->lsed, o->nl, attn_lse_tol);
    CHECK(all_finite(o->dqkv16[q], o->nq), "%s bf16 (%s) %s: dqkv has unwritten or non-finite elements", r->op,
          path_names[q], r->shape);
    to_double(o->d32d, o->d32[q], o->nq);
    const tolerance t = {ATTN_GRAD16_ATOL * max_abs(o->d32[q], o->nq), ATTN_GRAD16_RTOL};
    snprintf(what, sizeof what, "(%s) dqkv vs the fp32 backward", path_names[q]);
    op_close(r, what, o->dqkv16[q], o->d32d, o->nq, t);
}

static void attn_check(void *p, const op_run *r)
{
    attn_op *o = p;
    attn_ref(o, -1, NULL, o->outd);
    lse_ref(o->lsed, o->qkvd, &o->s);
    if (r->prec == OP_BF16) {
        for (int q = 0; q < o->npaths; q++) attn_check_path(o, r, q);
        return;
    }
    op_close(r, "out", o->out, o->outd, o->no, attn_out_tol);
    op_close(r, "lse", o->lse, o->lsed, o->nl, attn_lse_tol);
    CHECK(all_finite(o->dqkv, o->nq), "%s fp32 %s: dqkv: an element left unwritten or not finite", r->op, r->shape);
    fd_loss l = {attn_ref, o, 0, o->doutd, o->fd_out, o->no};
    op_fd(r, "dqkv", l, 0, o->qkvd, o->nq, o->dqkv, o->nsample, ATTN_FD_TOL);
}

const op_def op_attention = {"attention", OP_BOTH, ATTN_NSHAPES, sizeof(attn_op), attn_make, attn_run, attn_check};
