/* test_ops_rope.c: the registry's entry for rotary embedding (kernels/rope.h). Every shape runs
 * the fused kernel, in place on the qkv buffer in the group layout: partial and full rotary,
 * grouped-query heads, GPT-J's interleaved pairs. On the shapes of the GPT-NeoX layout and
 * pairing the reference and zero_freq variants run too (their contract holds there only).
 * fp32: every forward against the definition in double, v and pass-through dims untouched, norms
 * kept, every backward against finite differences, backward(forward(x)) = x. bf16 (inputs
 * rounded first): fused and zero_freq are the fp32 kernels' results on the widened inputs,
 * rounded, bit for bit; fused within one rounding of the definition; the reference, which rounds
 * after every op, within 2^-7 of the definition, of the fused result and of the fp32 gradient. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../kernels/rope.h"
#include "check.h"
#include "ops.h"

#define ROPE_BASE 10000.0

static const rope_shape rope_shapes[] = {
    {.B = 2, .T = 5, .NH = 2, .HS = 128, .r = 32},                    /* pythia-6.9b's head */
    {.B = 2, .T = 5, .NH = 2, .HS = 96, .r = 24},                     /* neox-20b's */
    {.B = 1, .T = 7, .NH = 3, .HS = 32, .r = 8},                      /* pythia-14m's */
    {.B = 1, .T = 3, .NH = 1, .HS = 64, .r = 64},                     /* full rotary */
    {.B = 1, .T = 4, .NH = 2, .HS = 80, .r = 40},                     /* h 20: a masked tail */
    {.B = 1, .T = 3, .NH = 1, .HS = 288, .r = 72},                    /* a head past 256 dims */
    {.B = 2, .T = 5, .NH = 8, .HS = 32, .r = 32, .kvh = 2},           /* Llama-2-70B-like groups of 4 */
    {.B = 1, .T = 4, .NH = 4, .HS = 40, .r = 40, .kvh = 1},           /* multi-query, a tail (h 20) */
    {.B = 1, .T = 3, .NH = 3, .HS = 32, .r = 8, .kvh = 3},            /* kvh = NH spelled out */
    {.B = 1, .T = 4, .NH = 2, .HS = 256, .r = 64, .gptj = 1},         /* GPT-J-6B's head */
    {.B = 2, .T = 3, .NH = 8, .HS = 48, .r = 24, .kvh = 2, .gptj = 1}, /* grouped and interleaved, h 12 */
    {.B = 1, .T = 6, .NH = 2, .HS = 16, .r = 6, .kvh = 1, .gptj = 1},  /* shorter than a vector (h 3) */
};
#define ROPE_NSHAPES (int)(sizeof rope_shapes / sizeof rope_shapes[0])
static const tolerance rope_tol = {1e-6, 1e-5};
static const tolerance rope_inverse_tol = {1e-6, 1e-6};
static const tolerance rope_fused16_tol = {1e-6, BF16_ROUNDING};
/* The bf16 reference rounds after each op (two products, their sum): 2^-7 absolute and relative. */
static const tolerance rope_ref16_tol = {1.0 / 128, 1.0 / 128};
#define ROPE_FD_SAMPLES 800
#define ROPE_FD_TOL 1e-5

/* The variants writing q and k tensors: 0 reference, 1 zero_freq. */
static const char *const variant_names[2] = {"reference", "zero_freq"};

typedef struct {
    rope_shape s;
    int neox;     /* the GPT-NeoX layout and pairing: the reference and zero_freq variants run */
    size_t n, no; /* qkv elements; elements of q (and of k) in (B, NH, T, HS) */
    rope_tables tb;
    float *x, *dy;        /* the input and a gradient in the qkv layout */
    float *y, *dx, *back; /* fused: forward, backward, backward of the forward */
    float *q[2], *k[2];   /* the variants' forwards */
    float *dq, *dk;       /* dy's q and k heads, (B, NH, T, HS) */
    float *g[2];          /* the variants' backwards: dy with the q and k heads the kernels' */
    float *fq, *fk;       /* the fused forward's q and k heads, (B, NH, T, HS) */
    float *scratch, *zero;
    bf16 *xh, *dyh, *yh, *dxh, *qh[2], *kh[2], *dqh, *dkh, *gh[2], *scratch16, *zeroh, *fqh, *fkh;
    double *xd, *dyd, *yd, *qd, *kd, *gd, *fqd, *fd_out;
} rope_op;

static size_t out_index(const rope_shape *s, int b, int t, int h)
{
    return (((size_t)b * s->NH + h) * s->T + t) * s->HS;
}

/* Copies the q and k heads of qkv (NeoX layout) into (B, NH, T, HS) tensors q and k, or back
 * (to_qkv); elements of `size` bytes. */
static void qk_copy(const rope_shape *s, void *qkv, void *q, void *k, size_t size, int to_qkv)
{
    const size_t row = size * s->HS;
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            for (int h = 0; h < s->NH; h++)
                for (int w = 0; w < 2; w++) {
                    char *in = (char *)qkv + size * rope_qkv_offset(s, b, t, w, h);
                    char *out = (char *)(w ? k : q) + size * out_index(s, b, t, h);
                    if (to_qkv) memcpy(in, out, row);
                    else memcpy(out, in, row);
                }
}

/* The NeoX variants' forward straight from the definition, in double (Hugging Face's rotate_half),
 * into (B, NH, T, HS) q and k. */
static void rope_forward_d(double *q, double *k, const double *qkv, const rope_shape *s)
{
    const int r = s->r, h = r / 2;
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            for (int hh = 0; hh < s->NH; hh++)
                for (int w = 0; w < 2; w++) {
                    const double *x = qkv + rope_qkv_offset(s, b, t, w, hh);
                    double *o = (w ? k : q) + out_index(s, b, t, hh);
                    for (int d = 0; d < s->HS; d++) {
                        if (d >= r) {
                            o[d] = x[d];
                            continue;
                        }
                        const double ang = t * pow(ROPE_BASE, -2.0 * (d % h) / r);
                        o[d] = x[d] * cos(ang) + (d < h ? -x[d + h] : x[d - h]) * sin(ang);
                    }
                }
}

static void rope_alloc(rope_op *o, arena *a)
{
    const size_t n = o->n, no = o->no, ns = rope_ref_scratch_floats(&o->s) + 1;
    o->x = floats(a, n), o->dy = floats(a, n), o->y = floats(a, n), o->dx = floats(a, n), o->back = floats(a, n);
    o->fq = floats(a, no), o->fk = floats(a, no);
    o->dq = floats(a, no), o->dk = floats(a, no), o->scratch = floats(a, ns), o->zero = floats(a, no);
    o->xh = halves(a, n), o->dyh = halves(a, n), o->yh = halves(a, n), o->dxh = halves(a, n);
    o->dqh = halves(a, no), o->dkh = halves(a, no), o->scratch16 = halves(a, ns), o->zeroh = halves(a, no);
    o->fqh = halves(a, no), o->fkh = halves(a, no);
    for (int v = 0; v < 2; v++) {
        o->q[v] = floats(a, no), o->k[v] = floats(a, no), o->g[v] = floats(a, n);
        o->qh[v] = halves(a, no), o->kh[v] = halves(a, no), o->gh[v] = halves(a, n);
    }
    o->xd = doubles(a, n), o->dyd = doubles(a, n), o->yd = doubles(a, n), o->gd = doubles(a, n);
    o->fd_out = doubles(a, n), o->qd = doubles(a, no), o->kd = doubles(a, no), o->fqd = doubles(a, no);
}

static int rope_make(void *p, arena *a, int sh, int prec, char *label, size_t ln)
{
    rope_op *o = p;
    const rope_shape *s = &rope_shapes[sh];
    o->s = *s;
    o->neox = (s->kvh == 0 || s->kvh == s->NH) && !s->gptj;
    o->n = (size_t)s->B * s->T * rope_qkv_per_token(s), o->no = (size_t)s->B * s->T * s->NH * s->HS;
    float *tables = floats(a, rope_tables_floats(s->T, s->r, s->HS) + 1);
    rope_alloc(o, a);
    if (a->oom) return 0;
    rope_tables_init(&o->tb, tables, s->T, s->r, s->HS, ROPE_BASE);
    unsigned st = 101u + (unsigned)(s->HS * 7 + s->NH + s->gptj);
    fill(o->x, o->xd, o->n, &st, 1.0f, 0.0f);
    fill(o->dy, o->dyd, o->n, &st, 1.0f, 0.0f);
    if (prec == OP_BF16) round_bf16(o->x, o->xd, o->xh, o->n), round_bf16(o->dy, o->dyd, o->dyh, o->n);
    if (o->neox) qk_copy(s, o->dy, o->dq, o->dk, sizeof(float), 0), qk_copy(s, o->dyh, o->dqh, o->dkh, sizeof(bf16), 0);
    snprintf(label, ln, "B=%d T=%d NH=%d kvh=%d HS=%d r=%d %s", s->B, s->T, s->NH, rope_kv_heads(s), s->HS, s->r,
             s->gptj ? "gptj" : "neox");
    return 1;
}

/* g[v] = dy with its q and k heads zero (the variants write those), in fp32 and bf16. */
static void rope_grad_init(rope_op *o)
{
    for (int v = 0; v < 2; v++) {
        memcpy(o->g[v], o->dy, o->n * sizeof(float));
        qk_copy(&o->s, o->g[v], o->zero, o->zero, sizeof(float), 1);
        memcpy(o->gh[v], o->dyh, o->n * sizeof(bf16));
        qk_copy(&o->s, o->gh[v], o->zeroh, o->zeroh, sizeof(bf16), 1);
    }
}

static void rope_run(void *p, int prec)
{
    rope_op *o = p;
    const rope_shape *s = &o->s;
    const rope_tables *tb = &o->tb;
    memcpy(o->y, o->x, o->n * sizeof(float)), memcpy(o->dx, o->dy, o->n * sizeof(float));
    rope_forward_fused(o->y, s, tb);
    rope_backward_fused(o->dx, s, tb);
    memcpy(o->back, o->y, o->n * sizeof(float));
    rope_backward_fused(o->back, s, tb);
    if (prec == OP_BF16) {
        memcpy(o->yh, o->xh, o->n * sizeof(bf16)), memcpy(o->dxh, o->dyh, o->n * sizeof(bf16));
        rope_forward_fused_bf16(o->yh, s, tb);
        rope_backward_fused_bf16(o->dxh, s, tb);
    }
    if (!o->neox) return;
    rope_grad_init(o);
    rope_forward_ref(o->q[0], o->k[0], o->x, s, tb, o->scratch);
    rope_forward_zero_freq(o->q[1], o->k[1], o->x, s, tb);
    rope_backward_ref(o->g[0], o->dq, o->dk, s, tb, o->scratch);
    rope_backward_zero_freq(o->g[1], o->dq, o->dk, s, tb);
    if (prec != OP_BF16) return;
    rope_forward_ref_bf16(o->qh[0], o->kh[0], o->xh, s, tb, o->scratch16);
    rope_forward_zero_freq_bf16(o->qh[1], o->kh[1], o->xh, s, tb);
    rope_backward_ref_bf16(o->gh[0], o->dqh, o->dkh, s, tb, o->scratch16);
    rope_backward_zero_freq_bf16(o->gh[1], o->dqh, o->dkh, s, tb);
}

static void rope_ref(void *p, int which, const double *v, double *out)
{
    rope_op *o = p;
    rope_forward_ref_gqa(out, which == 0 ? v : o->xd, &o->s, ROPE_BASE);
}

/* Elements of v heads and pass-through dims: those the fused kernels leave as they are. */
static int is_fixed(const rope_shape *s, size_t i)
{
    size_t per = rope_qkv_per_token(s), in_tok = i % per, G = (size_t)(s->NH / rope_kv_heads(s));
    size_t head = (in_tok / s->HS) % (G + 2), d = in_tok % s->HS;
    return head == G + 1 || d >= (size_t)s->r;
}

/* fp32 fused: the definition, v and pass-through untouched, every q and k head's norm kept (at
 * the last batch row), the backward against finite differences and as the inverse rotation. */
static void rope_check_fused(rope_op *o, const op_run *r, fd_loss l)
{
    const rope_shape *s = &o->s;
    op_close(r, "fused forward", o->y, o->yd, o->n, rope_tol);
    int fixed_ok = 1;
    for (size_t i = 0; i < o->n; i++)
        if (is_fixed(s, i)) fixed_ok &= o->y[i] == o->x[i];
    CHECK(fixed_ok, "%s %s: a v element or a pass-through dim changed", r->op, r->shape);
    for (int t = 0; t < s->T; t++)
        for (int w = 0; w < 2; w++)
            for (int hh = 0; hh < (w ? rope_kv_heads(s) : s->NH); hh++) {
                const size_t at = rope_qkv_offset(s, s->B - 1, t, w, hh);
                double n0 = 0, n1 = 0;
                for (int d = 0; d < s->HS; d++)
                    n0 += (double)o->x[at + d] * o->x[at + d], n1 += (double)o->y[at + d] * o->y[at + d];
                CHECK(fabs(sqrt(n1) - sqrt(n0)) <= 1e-6 * sqrt(n0), "%s %s t %d %s head %d: norm %.9g became %.9g",
                      r->op, r->shape, t, w ? "k" : "q", hh, sqrt(n0), sqrt(n1));
            }
    op_fd(r, "fused backward", l, 0, o->xd, o->n, o->dx, ROPE_FD_SAMPLES, ROPE_FD_TOL);
    op_close(r, "fused backward of forward (the identity)", o->back, o->xd, o->n, rope_inverse_tol);
}

/* bf16: the fp32 kernels' results rounded; fused near the definition, the reference near the
 * definition, the fused result and the fp32 reference's gradient. */
static void rope_check_bf16(rope_op *o, const op_run *r)
{
    op_rounded(r, "fused forward", o->yh, o->y, o->n);
    op_close16(r, "fused forward", o->yh, o->yd, o->n, rope_fused16_tol);
    op_rounded(r, "fused backward", o->dxh, o->dx, o->n);
    if (!o->neox) return;
    op_rounded(r, "zero_freq forward q", o->qh[1], o->q[1], o->no);
    op_rounded(r, "zero_freq forward k", o->kh[1], o->k[1], o->no);
    op_rounded(r, "zero_freq backward", o->gh[1], o->g[1], o->n);
    op_close16(r, "reference forward q", o->qh[0], o->qd, o->no, rope_ref16_tol);
    op_close16(r, "reference forward k", o->kh[0], o->kd, o->no, rope_ref16_tol);
    qk_copy(&o->s, o->yh, o->fqh, o->fkh, sizeof(bf16), 0);
    for (size_t i = 0; i < o->no; i++) o->fqd[i] = bf16_to_float(o->fqh[i]);
    op_close16(r, "reference vs fused forward q", o->qh[0], o->fqd, o->no, rope_ref16_tol);
    to_double(o->gd, o->g[0], o->n);
    op_close16(r, "reference backward vs fp32's", o->gh[0], o->gd, o->n, rope_ref16_tol);
}

static void rope_check(void *p, const op_run *r)
{
    rope_op *o = p;
    fd_loss l = {rope_ref, o, 0, o->dyd, o->fd_out, o->n};
    rope_ref(o, -1, NULL, o->yd);
    if (o->neox) rope_forward_d(o->qd, o->kd, o->xd, &o->s);
    if (r->prec == OP_BF16) {
        rope_check_bf16(o, r);
        return;
    }
    rope_check_fused(o, r, l);
    if (!o->neox) return;
    qk_copy(&o->s, o->y, o->fq, o->fk, sizeof(float), 0);
    op_close(r, "fused forward q vs rotate_half", o->fq, o->qd, o->no, rope_tol);
    op_close(r, "fused forward k vs rotate_half", o->fk, o->kd, o->no, rope_tol);
    char what[64];
    for (int v = 0; v < 2; v++) {
        snprintf(what, sizeof what, "%s forward q", variant_names[v]);
        op_close(r, what, o->q[v], o->qd, o->no, rope_tol);
        snprintf(what, sizeof what, "%s forward k", variant_names[v]);
        op_close(r, what, o->k[v], o->kd, o->no, rope_tol);
        snprintf(what, sizeof what, "%s backward", variant_names[v]);
        op_fd(r, what, l, 0, o->xd, o->n, o->g[v], ROPE_FD_SAMPLES, ROPE_FD_TOL);
    }
}

const op_def op_rope = {"rope", OP_BOTH, ROPE_NSHAPES, sizeof(rope_op), rope_make, rope_run, rope_check};
