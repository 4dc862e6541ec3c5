/* test_ops.c: every kernel operation registered once, run for every precision it has (the
 * registry: ops.h); the runner and its checks, the entries of the elementwise, normalisation,
 * loss, optimizer and linear layers (rotary embedding and attention: test_ops_rope.c,
 * test_ops_attention.c), and the comparators themselves, tested once each: fed a perturbed
 * array, they must fail. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/adamw.h"
#include "../kernels/crossentropy.h"
#include "../kernels/gelu.h"
#include "../kernels/layernorm.h"
#include "../kernels/linear_bf16.h"
#include "../kernels/matmul.h"
#include "../kernels/rmsnorm.h"
#include "../kernels/swiglu.h"
#include "check.h"
#include "ops.h"

const char *const prec_names[OP_NPREC] = {"fp32", "bf16"};

/* ---------------------------------------------------------------- the runner */

static void *arena_get(arena *a, size_t n, size_t size)
{
    void *p = a->n < ARENA_MAX ? calloc(n ? n : 1, size) : NULL;
    if (p) a->p[a->n++] = p;
    else a->oom = 1;
    return p;
}

float *floats(arena *a, size_t n) { return arena_get(a, n, sizeof(float)); }
double *doubles(arena *a, size_t n) { return arena_get(a, n, sizeof(double)); }
bf16 *halves(arena *a, size_t n) { return arena_get(a, n, sizeof(bf16)); }

void ops_run(const op_def *op)
{
    for (int s = 0; s < op->nshapes; s++)
        for (int p = 0; p < OP_NPREC; p++) {
            if (!(op->precs & 1u << p)) continue;
            arena a = {0};
            op_run r = {op->name, p, ""};
            void *x = calloc(1, op->ctx_bytes);
            if (x && op->make(x, &a, s, p, r.shape, sizeof r.shape) && !a.oom) {
                op->run(x, p);
                op->check(x, &r);
            } else {
                CHECK(0, "%s %s shape %d: out of memory", op->name, prec_names[p], s);
            }
            for (int i = 0; i < a.n; i++) free(a.p[i]);
            free(x);
        }
}

static const char *what_of(char *buf, size_t n, const op_run *r, const char *what)
{
    snprintf(buf, n, "%s %s %s: %s", r->op, prec_names[r->prec], r->shape, what);
    return buf;
}

void op_close(const op_run *r, const char *what, const float *got, const double *ref, size_t n, tolerance t)
{
    char w[200];
    CHECK(allclose(what_of(w, sizeof w, r, what), got, ref, n, t.atol, t.rtol), "%s: beyond the reference's tolerance",
          w);
}

void op_close16(const op_run *r, const char *what, const bf16 *got, const double *ref, size_t n, tolerance t)
{
    char w[200];
    CHECK(allclose_bf16(what_of(w, sizeof w, r, what), got, ref, n, t.atol, t.rtol),
          "%s: beyond the reference's tolerance", w);
}

void op_rounded(const op_run *r, const char *what, const bf16 *got, const float *f32, size_t n)
{
    char w[200];
    CHECK(bf16_is_rounding(what_of(w, sizeof w, r, what), got, f32, n), "%s: not the fp32 kernel's result rounded", w);
}

void op_same(const op_run *r, const char *what, const void *a, const void *b, size_t bytes)
{
    char w[200];
    CHECK(memcmp(a, b, bytes) == 0, "%s", what_of(w, sizeof w, r, what));
}

static double fd_loss_eval(void *p, const double *v)
{
    fd_loss *l = p;
    l->ref(l->x, l->which, v, l->out);
    double s = 0;
    for (size_t i = 0; i < l->nout; i++) s += l->dout[i] * l->out[i];
    return s;
}

void op_fd(const op_run *r, const char *what, fd_loss l, int which, double *in, size_t n, const float *grad,
           int nsample, double tol)
{
    char w[200];
    l.which = which;
    CHECK(fd_check(what_of(w, sizeof w, r, what), in, n, grad, fd_loss_eval, &l, nsample, tol),
          "%s vs finite differences", w);
}

void fill(float *x, double *xd, size_t n, unsigned *st, float scale, float shift)
{
    rand_fill(x, n, st);
    for (size_t i = 0; i < n; i++) x[i] = scale * x[i] + shift;
    if (xd) to_double(xd, x, n);
}

void round_bf16(float *x, double *xd, bf16 *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bf16 b = bf16_from_float(x[i]);
        x[i] = bf16_to_float(b);
        if (h) h[i] = b;
    }
    if (xd) to_double(xd, x, n);
}

void widen(float *f, const bf16 *h, size_t n) { bf16_to_floats(f, h, n); }

/* One input of a forward: its double copy and the kernel's gradient of it. */
typedef struct {
    const char *what;
    double *in;
    size_t n;
    const float *grad;
} fd_input;

/* A forward's output out (fp32) against the reference ref within tol, and each input's gradient
 * (input i of the loss l) against finite differences; or at bf16 out16 as out rounded, and
 * within tol of ref. */
static void op_forward_backward(const op_run *r, const float *out, const bf16 *out16, const double *ref, size_t n,
                                const tolerance tol[OP_NPREC], fd_loss l, const fd_input *in, int nin, int nsample,
                                double fd_tol)
{
    if (r->prec == OP_BF16) {
        op_rounded(r, "out", out16, out, n);
        op_close16(r, "out", out16, ref, n, tol[OP_BF16]);
        return;
    }
    op_close(r, "out", out, ref, n, tol[OP_FP32]);
    for (int i = 0; i < nin; i++) op_fd(r, in[i].what, l, i, in[i].in, in[i].n, in[i].grad, nsample, fd_tol);
}

/* ---------------------------------------------------------------- layernorm */

/* The buffers of a forward of one main input (nin elements) and one output (nout): x, its
 * gradient dx; the output, at bf16 too, its gradient dout; the double copies, the reference and the
 * finite differences' output. */
typedef struct {
    float *x, *dx, *out, *dout;
    bf16 *out16;
    double *xd, *doutd, *ref, *fd_out;
} io_bufs;

static void io_alloc(io_bufs *b, arena *a, size_t nin, size_t nout)
{
    b->x = floats(a, nin), b->dx = floats(a, nin), b->xd = doubles(a, nin);
    b->out = floats(a, nout), b->dout = floats(a, nout), b->out16 = halves(a, nout);
    b->doutd = doubles(a, nout), b->ref = doubles(a, nout), b->fd_out = doubles(a, nout);
}

/* fp32: N=5 C=33 as ever; bf16 (and now fp32 too): rows past a group of 16 and columns past a
 * vector of 16, both ways. Inputs 3 u + 0.5 (a mean to remove). */
static const struct {
    int N, C;
} ln_shapes[] = {{5, 33}, {37, 33}, {16, 64}, {5, 512}, {35, 771}};
static const tolerance ln_tol[OP_NPREC] = {{1e-5, 1e-5}, {1e-5, BF16_ROUNDING}};

typedef struct {
    int N, C;
    io_bufs io;
    float *w, *b, *mean, *rstd, *dw, *db, *mean16, *rstd16;
    double *wd, *bd;
} ln_op;

static int ln_make(void *p, arena *a, int s, int prec, char *label, size_t ln)
{
    ln_op *o = p;
    const int N = ln_shapes[s].N, C = ln_shapes[s].C;
    const size_t n = (size_t)N * C;
    (void)prec;
    o->N = N, o->C = C;
    io_alloc(&o->io, a, n, n);
    o->w = floats(a, C), o->b = floats(a, C), o->dw = floats(a, C), o->db = floats(a, C);
    o->mean = floats(a, N), o->rstd = floats(a, N), o->mean16 = floats(a, N), o->rstd16 = floats(a, N);
    o->wd = doubles(a, C), o->bd = doubles(a, C);
    if (a->oom) return 0;
    unsigned st = 7u + (unsigned)s;
    fill(o->io.x, o->io.xd, n, &st, 3.0f, 0.5f);
    fill(o->w, o->wd, C, &st, 1.0f, 0.0f);
    fill(o->b, o->bd, C, &st, 1.0f, 0.0f);
    fill(o->io.dout, o->io.doutd, n, &st, 1.0f, 0.0f);
    snprintf(label, ln, "N=%d C=%d", N, C);
    return 1;
}

static void ln_run(void *p, int prec)
{
    ln_op *o = p;
    layernorm_forward(o->io.out, o->mean, o->rstd, o->io.x, o->w, o->b, o->N, o->C);
    if (prec == OP_BF16) layernorm_forward_bf16(o->io.out16, o->mean16, o->rstd16, o->io.x, o->w, o->b, o->N, o->C);
    else layernorm_backward(o->io.dx, NULL, o->dw, o->db, o->io.dout, o->io.x, o->w, o->mean, o->rstd, o->N, o->C);
}

static void ln_ref(void *p, int which, const double *v, double *out)
{
    ln_op *o = p;
    layernorm_forward_ref(out, which == 0 ? v : o->io.xd, which == 1 ? v : o->wd, which == 2 ? v : o->bd, o->N, o->C);
}

static void ln_check(void *p, const op_run *r)
{
    ln_op *o = p;
    const size_t n = (size_t)o->N * o->C;
    const fd_input in[] = {
        {"dinp", o->io.xd, n, o->io.dx}, {"dweight", o->wd, o->C, o->dw}, {"dbias", o->bd, o->C, o->db}};
    const fd_loss l = {ln_ref, o, 0, o->io.doutd, o->io.fd_out, n};
    ln_ref(o, -1, NULL, o->io.ref);
    if (r->prec == OP_BF16) {
        op_same(r, "mean differs from layernorm_forward's", o->mean, o->mean16, o->N * sizeof(float));
        op_same(r, "rstd differs from layernorm_forward's", o->rstd, o->rstd16, o->N * sizeof(float));
    }
    op_forward_backward(r, o->io.out, o->io.out16, o->io.ref, n, ln_tol, l, in, 3, 400, 1e-3);
}

static const op_def op_layernorm = {"layernorm", OP_BOTH, 5, sizeof(ln_op), ln_make, ln_run, ln_check};

/* ---------------------------------------------------------------- rmsnorm */

/* Inputs scale u + shift: a non-zero mean RMSNorm must not remove. The first four as the fp32
 * tests had them (vector tails of 1, none, 10, shorter than a vector), the last four the bf16
 * tests' (rows past a group of 16, C = 4096). */
static const struct {
    int N, C;
    float scale, shift;
} rms_shapes[] = {{5, 33, 3, 0.5f},  {3, 64, 3, 0.5f},  {7, 250, 3, 0.5f},  {2, 7, 3, 0.5f},
                  {37, 33, 4, -1.0f}, {16, 64, 4, -1.0f}, {5, 4096, 4, -1.0f}, {9, 771, 4, -1.0f}};
static const tolerance rms_tol[OP_NPREC] = {{1e-6, 1e-5}, {1e-6, BF16_ROUNDING}};
#define RMS_EPS 1e-5f

typedef struct {
    int N, C;
    io_bufs io;
    float *w, *rstd, *dw, *rstd16;
    double *wd;
} rms_op;

static int rms_make(void *p, arena *a, int s, int prec, char *label, size_t ln)
{
    rms_op *o = p;
    const int N = rms_shapes[s].N, C = rms_shapes[s].C;
    const size_t n = (size_t)N * C;
    (void)prec;
    o->N = N, o->C = C;
    io_alloc(&o->io, a, n, n);
    o->w = floats(a, C), o->dw = floats(a, C), o->rstd = floats(a, N), o->rstd16 = floats(a, N);
    o->wd = doubles(a, C);
    if (a->oom) return 0;
    unsigned st = 3u + (unsigned)C + (unsigned)s;
    fill(o->io.x, o->io.xd, n, &st, rms_shapes[s].scale, rms_shapes[s].shift);
    fill(o->w, o->wd, C, &st, 1.0f, 0.0f);
    fill(o->io.dout, o->io.doutd, n, &st, 1.0f, 0.0f);
    for (size_t i = 0; i < n; i++) o->io.dx[i] = 1e6f; /* overwritten, not added to */
    snprintf(label, ln, "N=%d C=%d", N, C);
    return 1;
}

static void rms_run(void *p, int prec)
{
    rms_op *o = p;
    rmsnorm_forward(o->io.out, o->rstd, o->io.x, o->w, o->N, o->C, RMS_EPS);
    if (prec == OP_BF16) rmsnorm_forward_bf16(o->io.out16, o->rstd16, o->io.x, o->w, o->N, o->C, RMS_EPS);
    else rmsnorm_backward(o->io.dx, NULL, o->dw, o->io.dout, o->io.x, o->w, o->rstd, o->N, o->C);
}

static void rms_ref(void *p, int which, const double *v, double *out)
{
    rms_op *o = p;
    rmsnorm_forward_ref(out, which == 0 ? v : o->io.xd, which == 1 ? v : o->wd, o->N, o->C, RMS_EPS);
}

static void rms_check(void *p, const op_run *r)
{
    rms_op *o = p;
    const size_t n = (size_t)o->N * o->C;
    const fd_input in[] = {{"dinp", o->io.xd, n, o->io.dx}, {"dweight", o->wd, o->C, o->dw}};
    const fd_loss l = {rms_ref, o, 0, o->io.doutd, o->io.fd_out, n};
    rms_ref(o, -1, NULL, o->io.ref);
    if (r->prec == OP_BF16) op_same(r, "rstd differs from rmsnorm_forward's", o->rstd, o->rstd16, o->N * sizeof(float));
    op_forward_backward(r, o->io.out, o->io.out16, o->io.ref, n, rms_tol, l, in, 2, 400, 1e-4);
}

static const op_def op_rmsnorm = {"rmsnorm", OP_BOTH, 8, sizeof(rms_op), rms_make, rms_run, rms_check};

/* ---------------------------------------------------------------- gelu */

/* 200 elements of 5 u; 1007 of 6 u (a masked tail) with 0, -10, 10 and 1e-20 first. */
static const struct {
    int n;
    float scale;
} gelu_shapes[] = {{200, 5}, {1007, 6}};
static const tolerance gelu_tol[OP_NPREC] = {{1e-6, 1e-5}, {1e-6, BF16_ROUNDING}};

typedef struct {
    size_t n;
    io_bufs io;
} gelu_op;

static int gelu_make(void *p, arena *a, int s, int prec, char *label, size_t ln)
{
    gelu_op *o = p;
    const size_t n = (size_t)gelu_shapes[s].n;
    (void)prec;
    o->n = n;
    io_alloc(&o->io, a, n, n);
    if (a->oom) return 0;
    unsigned st = 11u + 20u * (unsigned)s;
    fill(o->io.x, NULL, n, &st, gelu_shapes[s].scale, 0.0f);
    if (s == 1) o->io.x[0] = 0.0f, o->io.x[1] = -10.0f, o->io.x[2] = 10.0f, o->io.x[3] = 1e-20f;
    to_double(o->io.xd, o->io.x, n);
    fill(o->io.dout, o->io.doutd, n, &st, 1.0f, 0.0f);
    snprintf(label, ln, "n=%zu", n);
    return 1;
}

static void gelu_run(void *p, int prec)
{
    gelu_op *o = p;
    gelu_forward(o->io.out, o->io.x, o->n);
    if (prec == OP_BF16) gelu_forward_bf16(o->io.out16, o->io.x, o->n);
    else gelu_backward(o->io.dx, o->io.x, o->io.dout, o->n);
}

static void gelu_ref(void *p, int which, const double *v, double *out)
{
    gelu_op *o = p;
    gelu_forward_ref(out, which == 0 ? v : o->io.xd, o->n);
}

static void gelu_check(void *p, const op_run *r)
{
    gelu_op *o = p;
    const fd_input in[] = {{"dinp", o->io.xd, o->n, o->io.dx}};
    const fd_loss l = {gelu_ref, o, 0, o->io.doutd, o->io.fd_out, o->n};
    gelu_ref(o, -1, NULL, o->io.ref);
    op_forward_backward(r, o->io.out, o->io.out16, o->io.ref, o->n, gelu_tol, l, in, 1, (int)o->n, 1e-4);
}

static const op_def op_gelu = {"gelu", OP_BOTH, 2, sizeof(gelu_op), gelu_make, gelu_run, gelu_check};

/* ---------------------------------------------------------------- swiglu */

/* Rows [gate | up] of scale u: intermediate widths with a vector tail of 5, whole vectors,
 * shorter than a vector, and tails of 13 (the bf16 test's 45). */
static const struct {
    int N, I;
    float scale;
} swiglu_shapes[] = {{3, 37, 6}, {2, 64, 6}, {4, 5, 6}, {3, 45, 8}};
static const tolerance swiglu_tol[OP_NPREC] = {{1e-6, 1e-5}, {1e-6, BF16_ROUNDING}};

typedef struct {
    int N, I;
    io_bufs io;
} swiglu_op;

static int swiglu_make(void *p, arena *a, int s, int prec, char *label, size_t ln)
{
    swiglu_op *o = p;
    const int N = swiglu_shapes[s].N, I = swiglu_shapes[s].I;
    const size_t ni = (size_t)N * 2 * I, no = (size_t)N * I;
    (void)prec;
    o->N = N, o->I = I;
    io_alloc(&o->io, a, ni, no);
    if (a->oom) return 0;
    unsigned st = 17u + (unsigned)I;
    fill(o->io.x, o->io.xd, ni, &st, swiglu_shapes[s].scale, 0.0f);
    fill(o->io.dout, o->io.doutd, no, &st, 1.0f, 0.0f);
    for (size_t i = 0; i < ni; i++) o->io.dx[i] = 1e6f; /* overwritten, not added to */
    snprintf(label, ln, "N=%d I=%d", N, I);
    return 1;
}

static void swiglu_run(void *p, int prec)
{
    swiglu_op *o = p;
    swiglu_forward(o->io.out, o->io.x, o->N, o->I);
    if (prec == OP_BF16) swiglu_forward_bf16(o->io.out16, o->io.x, o->N, o->I);
    else swiglu_backward(o->io.dx, o->io.x, o->io.dout, o->N, o->I);
}

static void swiglu_ref(void *p, int which, const double *v, double *out)
{
    swiglu_op *o = p;
    swiglu_forward_ref(out, which == 0 ? v : o->io.xd, o->N, o->I);
}

static void swiglu_check(void *p, const op_run *r)
{
    swiglu_op *o = p;
    const size_t ni = (size_t)o->N * 2 * o->I, no = (size_t)o->N * o->I;
    const fd_input in[] = {{"dinp", o->io.xd, ni, o->io.dx}};
    const fd_loss l = {swiglu_ref, o, 0, o->io.doutd, o->io.fd_out, no};
    swiglu_ref(o, -1, NULL, o->io.ref);
    op_forward_backward(r, o->io.out, o->io.out16, o->io.ref, no, swiglu_tol, l, in, 1, 600, 1e-4);
}

static const op_def op_swiglu = {"swiglu", OP_BOTH, 4, sizeof(swiglu_op), swiglu_make, swiglu_run, swiglu_check};

/* ---------------------------------------------------------------- cross-entropy */

/* Logits 8 u; V = 37, and 77 (four vector steps and a masked tail of 13). */
static const struct {
    int N, V;
    int targets[6];
} ce_shapes[] = {{4, 37, {0, 36, 5, 17}}, {6, 77, {0, 76, 64, 5, 70, 33}}};
static const tolerance ce_tol = {1e-5, 1e-5}; /* the losses: fp32 at both precisions */
/* The gradient's finite-difference tolerance: fp32's; bf16's, one rounding of it. */
static const double ce_fd_tol[OP_NPREC] = {1e-4, BF16_ROUNDING};

typedef struct {
    int N, V, rc[4];
    const int *targets;
    float *logits, *keep, *losses, *lse, *dl, *dlogits, *losses16, *lse16, *dwide;
    bf16 *d16, *d16b;
    double *logitsd, *dld, *ref, *fd_out;
} ce_op;

static int ce_make(void *p, arena *a, int s, int prec, char *label, size_t ln)
{
    ce_op *o = p;
    const int N = ce_shapes[s].N, V = ce_shapes[s].V;
    const size_t n = (size_t)N * V;
    (void)prec;
    o->N = N, o->V = V, o->targets = ce_shapes[s].targets;
    o->logits = floats(a, n), o->keep = floats(a, n), o->dlogits = floats(a, n), o->dwide = floats(a, n);
    o->losses = floats(a, N), o->lse = floats(a, N), o->dl = floats(a, N), o->losses16 = floats(a, N);
    o->lse16 = floats(a, N), o->d16 = halves(a, n), o->d16b = halves(a, n);
    o->logitsd = doubles(a, n), o->dld = doubles(a, N), o->ref = doubles(a, N), o->fd_out = doubles(a, N);
    if (a->oom) return 0;
    unsigned st = 3u + 10u * (unsigned)s;
    fill(o->logits, o->logitsd, n, &st, 8.0f, 0.0f);
    fill(o->dl, o->dld, N, &st, 1.0f, 0.0f);
    memcpy(o->keep, o->logits, n * sizeof(float));
    for (size_t i = 0; i < n; i++) o->dlogits[i] = 1e6f; /* overwritten, not accumulated into */
    snprintf(label, ln, "N=%d V=%d", N, V);
    return 1;
}

static void ce_run(void *p, int prec)
{
    ce_op *o = p;
    const int N = o->N, V = o->V;
    o->rc[0] = crossentropy_forward(o->losses, o->lse, o->logits, o->targets, N, V);
    o->rc[1] = crossentropy_backward(o->dlogits, o->dl, o->logits, o->lse, o->targets, N, V);
    if (prec != OP_BF16) return;
    o->rc[2] = crossentropy_fused_bf16(o->losses16, o->lse16, o->d16, o->logits, o->dl, o->targets, N, V);
    o->rc[3] = crossentropy_backward_bf16(o->d16b, o->dl, o->logits, o->lse, o->targets, N, V);
}

static void ce_ref(void *p, int which, const double *v, double *out)
{
    ce_op *o = p;
    crossentropy_forward_ref(out, which == 0 ? v : o->logitsd, o->targets, o->N, o->V);
}

static void ce_check(void *p, const op_run *r)
{
    ce_op *o = p;
    const size_t n = (size_t)o->N * o->V;
    const float *grad = o->dlogits;
    CHECK(o->rc[0] == KERNEL_OK && o->rc[1] == KERNEL_OK, "%s %s: valid targets refused", r->op, r->shape);
    ce_ref(o, -1, NULL, o->ref);
    if (r->prec == OP_BF16) {
        CHECK(o->rc[2] == KERNEL_OK && o->rc[3] == KERNEL_OK, "%s bf16 %s: valid targets refused", r->op, r->shape);
        op_same(r, "fused: losses differ from crossentropy_forward's", o->losses, o->losses16, o->N * sizeof(float));
        op_same(r, "fused: lse differs from crossentropy_forward's", o->lse, o->lse16, o->N * sizeof(float));
        op_rounded(r, "crossentropy_backward_bf16's dlogits", o->d16b, o->dlogits, n);
        op_same(r, "fused: dlogits differ from crossentropy_backward_bf16's", o->d16, o->d16b, n * sizeof(bf16));
        op_same(r, "the logits were changed", o->logits, o->keep, n * sizeof(float));
        widen(o->dwide, o->d16, n);
        grad = o->dwide;
    }
    op_close(r, "losses", r->prec == OP_BF16 ? o->losses16 : o->losses, o->ref, o->N, ce_tol);
    fd_loss l = {ce_ref, o, 0, o->dld, o->fd_out, (size_t)o->N};
    op_fd(r, "dlogits", l, 0, o->logitsd, n, grad, (int)n, ce_fd_tol[r->prec]);
}

static const op_def op_crossentropy = {"cross-entropy", OP_BOTH, 2, sizeof(ce_op), ce_make, ce_run, ce_check};

/* ---------------------------------------------------------------- AdamW */

/* Five steps from zero moments, random gradients, weight decay and a gradient scale; 50
 * elements, and several scheduling blocks with a masked tail. bf16: adamw_update_full_bf16 (weights
 * and moments stored in bf16, the gradient rounded as it enters, nearest rounding) from weights
 * rounded first, against the same double reference on the rounded weights and gradients. */
static const size_t adamw_sizes[] = {50, 3 * 4096 + 21};
#define ADAMW_LR 1e-2f
static const adamw_params adamw_hp = {ADAMW_LR, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f};
#define ADAMW_STEPS 5
/* bf16: each step rounds the weight (half a bf16 ulp: up to 2^-8 relative) and the moments (as
 * much each, carried into the later steps), so that the update, about lr a step, is off by up to
 * some 2^-6 relative; five steps. */
static const tolerance adamw_tol[OP_NPREC] = {{1e-6, 1e-5}, {ADAMW_STEPS * ADAMW_LR / 64, ADAMW_STEPS / 256.0}};
static const adamw_rounding adamw_nearest = {0, 0, 0};

typedef struct {
    size_t n;
    float *p, *m, *v, *g[ADAMW_STEPS], *p32, *q32, *pw;
    bf16 *p16, *m16, *v16, *q16, *qm16, *qv16;
    double *pd, *md, *vd, *gd[ADAMW_STEPS];
} adamw_op;

static int adamw_make(void *q, arena *a, int s, int prec, char *label, size_t ln)
{
    adamw_op *o = q;
    const size_t n = adamw_sizes[s];
    o->n = n;
    o->p = floats(a, n), o->m = floats(a, n), o->v = floats(a, n);
    o->p32 = floats(a, n), o->q32 = floats(a, n), o->pw = floats(a, n);
    o->p16 = halves(a, n), o->m16 = halves(a, n), o->v16 = halves(a, n);
    o->q16 = halves(a, n), o->qm16 = halves(a, n), o->qv16 = halves(a, n);
    o->pd = doubles(a, n), o->md = doubles(a, n), o->vd = doubles(a, n);
    for (int t = 0; t < ADAMW_STEPS; t++) o->g[t] = floats(a, n), o->gd[t] = doubles(a, n);
    if (a->oom) return 0;
    unsigned st = 9u + (unsigned)s;
    fill(o->p, o->pd, n, &st, 1.0f, 0.0f);
    for (int t = 0; t < ADAMW_STEPS; t++) fill(o->g[t], o->gd[t], n, &st, 1.0f, 0.0f);
    if (prec == OP_BF16) {
        round_bf16(o->p, o->pd, o->p16, n);
        memcpy(o->q16, o->p16, n * sizeof(bf16));
        for (int t = 0; t < ADAMW_STEPS; t++) /* the kernel rounds the gradients; the reference sees that */
            for (size_t i = 0; i < n; i++) o->gd[t][i] = bf16_to_float(bf16_from_float(o->g[t][i]));
    }
    snprintf(label, ln, "n=%zu, %d steps", n, ADAMW_STEPS);
    return 1;
}

static void adamw_run(void *q, int prec)
{
    adamw_op *o = q;
    const size_t n = o->n;
    for (int t = 1; t <= ADAMW_STEPS; t++) {
        if (prec == OP_FP32) {
            adamw_update(o->p, o->g[t - 1], o->m, o->v, n, &adamw_hp, t);
            continue;
        }
        adamw_update_full_bf16(o->p16, o->p32, o->g[t - 1], o->m16, o->v16, n, &adamw_hp, t, &adamw_nearest);
        adamw_update_full_bf16_ref(o->q16, o->q32, o->g[t - 1], o->qm16, o->qv16, n, &adamw_hp, t, &adamw_nearest);
    }
}

static void adamw_check(void *q, const op_run *r)
{
    adamw_op *o = q;
    const size_t n = o->n;
    for (int t = 1; t <= ADAMW_STEPS; t++) adamw_update_ref(o->pd, o->gd[t - 1], o->md, o->vd, n, &adamw_hp, t);
    if (r->prec == OP_FP32) {
        op_close(r, "params", o->p, o->pd, n, adamw_tol[OP_FP32]);
        return;
    }
    op_same(r, "params differ from the scalar definition's", o->p16, o->q16, n * sizeof(bf16));
    op_same(r, "m differs from the scalar definition's", o->m16, o->qm16, n * sizeof(bf16));
    op_same(r, "v differs from the scalar definition's", o->v16, o->qv16, n * sizeof(bf16));
    widen(o->pw, o->p16, n);
    op_same(r, "the fp32 copy is not the bf16 params widened", o->p32, o->pw, n * sizeof(float));
    op_close16(r, "params", o->p16, o->pd, n, adamw_tol[OP_BF16]);
}

static const op_def op_adamw = {"adamw", OP_BOTH, 2, sizeof(adamw_op), adamw_make, adamw_run, adamw_check};

/* ---------------------------------------------------------------- linear layer */

/* out = inp @ weight^T + bias and its gradients: fp32 through matmul.h (OpenBLAS), bf16 through
 * linear_bf16.h (oneDNN: inputs, weight and output gradient in bf16, fp32 accumulation; the
 * reference takes the same rounded values, so only the accumulation differs, as in fp32). */
static const struct {
    int N, C, OC;
} linear_shapes[] = {{7, 5, 6}, {64, 96, 80}};
static const tolerance linear_tol = {1e-5, 1e-5};

typedef struct {
    int N, C, OC, rc[4];
    float *x, *w, *b, *dout, *out, *dx, *dw, *db;
    bf16 *xh, *douth;
    double *xd, *wd, *bd, *doutd, *outd, *dxd, *dwd, *dbd, *fd_out;
} linear_op;

static int linear_make(void *p, arena *a, int s, int prec, char *label, size_t ln)
{
    linear_op *o = p;
    const int N = linear_shapes[s].N, C = linear_shapes[s].C, OC = linear_shapes[s].OC;
    const size_t ni = (size_t)N * C, nw = (size_t)OC * C, no = (size_t)N * OC;
    o->N = N, o->C = C, o->OC = OC;
    o->x = floats(a, ni), o->dx = floats(a, ni), o->w = floats(a, nw), o->dw = floats(a, nw);
    o->b = floats(a, OC), o->db = floats(a, OC), o->dout = floats(a, no), o->out = floats(a, no);
    o->xh = halves(a, ni), o->douth = halves(a, no);
    o->xd = doubles(a, ni), o->dxd = doubles(a, ni), o->wd = doubles(a, nw), o->dwd = doubles(a, nw);
    o->bd = doubles(a, OC), o->dbd = doubles(a, OC), o->doutd = doubles(a, no), o->outd = doubles(a, no);
    o->fd_out = doubles(a, no);
    if (a->oom) return 0;
    unsigned st = 42u + (unsigned)s;
    fill(o->x, o->xd, ni, &st, 1.0f, 0.0f);
    fill(o->w, o->wd, nw, &st, 1.0f, 0.0f);
    fill(o->b, o->bd, OC, &st, 1.0f, 0.0f);
    fill(o->dout, o->doutd, no, &st, 1.0f, 0.0f);
    if (prec == OP_BF16) {
        round_bf16(o->x, o->xd, o->xh, ni);
        round_bf16(o->w, o->wd, NULL, nw); /* as linear_bf16_pack rounds it */
        round_bf16(o->dout, o->doutd, o->douth, no);
    }
    snprintf(label, ln, "N=%d C=%d OC=%d", N, C, OC);
    return 1;
}

static void linear_run(void *p, int prec)
{
    linear_op *o = p;
    const int N = o->N, C = o->C, OC = o->OC;
    if (prec == OP_FP32) {
        o->rc[0] = KERNEL_OK;
        o->rc[1] = matmul_forward(o->out, o->x, o->w, o->b, N, C, OC);
        o->rc[2] = matmul_backward_input(o->dx, o->dout, o->w, N, C, OC);
        o->rc[3] = matmul_backward_weight(o->dw, o->db, o->dout, o->x, N, C, OC);
        return;
    }
    linear_bf16_weight lw = {0};
    o->rc[0] = linear_bf16_pack(&lw, o->w, N, C, OC, 0, 1);
    o->rc[1] = o->rc[0] ? o->rc[0] : linear_bf16_forward(o->out, NULL, o->xh, &lw, o->b);
    o->rc[2] = o->rc[0] ? o->rc[0] : linear_bf16_backward_input(o->dx, o->douth, &lw);
    o->rc[3] = linear_bf16_backward_weight(o->dw, o->db, o->douth, o->dout, o->xh, N, C, OC);
    linear_bf16_weight_free(&lw);
}

static void linear_ref(void *p, int which, const double *v, double *out)
{
    linear_op *o = p;
    matmul_forward_ref(out, which == 0 ? v : o->xd, which == 1 ? v : o->wd, which == 2 ? v : o->bd, o->N, o->C, o->OC);
}

static void linear_check(void *p, const op_run *r)
{
    linear_op *o = p;
    const int N = o->N, C = o->C, OC = o->OC;
    for (int i = 0; i < 4; i++)
        CHECK(o->rc[i] == KERNEL_OK, "%s %s %s: call %d refused valid dims (%d)", r->op, prec_names[r->prec], r->shape,
              i, o->rc[i]);
    linear_ref(o, -1, NULL, o->outd);
    matmul_backward_input_ref(o->dxd, o->doutd, o->wd, N, C, OC);
    matmul_backward_weight_ref(o->dwd, o->dbd, o->doutd, o->xd, N, C, OC);
    op_close(r, "out", o->out, o->outd, (size_t)N * OC, linear_tol);
    op_close(r, "dinp", o->dx, o->dxd, (size_t)N * C, linear_tol);
    op_close(r, "dweight", o->dw, o->dwd, (size_t)OC * C, linear_tol);
    op_close(r, "dbias", o->db, o->dbd, (size_t)OC, linear_tol);
    fd_loss l = {linear_ref, o, 0, o->doutd, o->fd_out, (size_t)N * OC};
    op_fd(r, "dinp", l, 0, o->xd, (size_t)N * C, o->dx, 200, 1e-4);
    op_fd(r, "dweight", l, 1, o->wd, (size_t)OC * C, o->dw, 200, 1e-4);
    op_fd(r, "dbias", l, 2, o->bd, (size_t)OC, o->db, 200, 1e-4);
}

static const op_def op_linear = {"linear", OP_BOTH, 2, sizeof(linear_op), linear_make, linear_run, linear_check};

/* ---------------------------------------------------------------- the comparators */

static void test_allclose_rejects(void)
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

static void test_allclose_bf16_rejects(void)
{
    const bf16 h = bf16_from_float(0.75f);
    const double same = 0.75, big = 0.75 + 0.5;
    CHECK(allclose_bf16("exact", &h, &same, 1, 0, 0), "an exact bf16 value failed");
    printf("    (the next line is the bf16 comparator rejecting a 0.5 error, as it must)\n");
    CHECK(!allclose_bf16("perturbed", &h, &big, 1, 1.0 / 128, 1.0 / 128), "allclose_bf16 passed a 0.5 error");
}

static void test_bf16_rounding_rejects(void)
{
    enum { N = 1007 };
    float x[N];
    bf16 h[N];
    unsigned st = 31;
    rand_fill(x, N, &st);
    for (int i = 0; i < N; i++) h[i] = bf16_from_float(x[i]);
    CHECK(bf16_is_rounding("rounded", h, x, N), "the rounding itself failed");
    h[7] ^= 1; /* one bf16 ulp off */
    printf("    (the next line is the bf16 comparator rejecting a one-ulp error, as it must)\n");
    CHECK(!bf16_is_rounding("perturbed", h, x, N), "the bf16 comparator passed a one-ulp error");
}

static double square_sum(void *ctx, const double *x)
{
    (void)ctx;
    double s = 0;
    for (int i = 0; i < 32; i++) s += 0.5 * x[i] * x[i];
    return s;
}

/* The gradient of sum x^2 / 2 is x: passes; with one element off by 1% of the rms, it fails. */
static void test_fd_check_rejects(void)
{
    enum { N = 32 };
    double x[N];
    float g[N];
    unsigned st = 5;
    rand_fill_d(x, N, &st);
    to_float(g, x, N);
    CHECK(fd_check("exact", x, N, g, square_sum, NULL, N, 1e-4), "an exact gradient failed the finite differences");
    g[9] += 0.01f * 0.58f;
    printf("    (the next line is the finite-difference check rejecting a perturbed gradient, as it must)\n");
    CHECK(!fd_check("perturbed", x, N, g, square_sum, NULL, N, 1e-3), "a perturbed gradient passed");
}

/* ---------------------------------------------------------------- the registry */

static void test_layernorm(void) { ops_run(&op_layernorm); }
static void test_rmsnorm(void) { ops_run(&op_rmsnorm); }
static void test_gelu(void) { ops_run(&op_gelu); }
static void test_swiglu(void) { ops_run(&op_swiglu); }
static void test_crossentropy(void) { ops_run(&op_crossentropy); }
static void test_adamw(void) { ops_run(&op_adamw); }
static void test_linear(void) { ops_run(&op_linear); }
static void test_rope(void) { ops_run(&op_rope); }

static void test_attention(void)
{
    if (!bf16_cpu_native()) printf("    (no AVX512_BF16 on this CPU: the vdpbf16ps path is not tested)\n");
    ops_run(&op_attention);
}

const test_case tests_ops[] = {
    {"ops comparator: allclose rejects a perturbed array and a NaN", test_allclose_rejects},
    {"ops comparator: allclose_bf16 rejects a 0.5 error", test_allclose_bf16_rejects},
    {"ops comparator: bf16_is_rounding rejects a one-ulp error", test_bf16_rounding_rejects},
    {"ops comparator: fd_check rejects a perturbed gradient", test_fd_check_rejects},
    {"ops layernorm: fp32 vs reference and finite differences; bf16 the rounding, mean/rstd identical",
     test_layernorm},
    {"ops rmsnorm: fp32 vs reference and finite differences; bf16 the rounding, rstd identical", test_rmsnorm},
    {"ops gelu: fp32 vs reference and finite differences; bf16 the rounding", test_gelu},
    {"ops swiglu: fp32 vs reference and finite differences; bf16 the rounding", test_swiglu},
    {"ops cross-entropy: losses vs reference, dlogits vs finite differences (fp32; bf16 = fp32 rounded, fused)",
     test_crossentropy},
    {"ops adamw: five steps vs the double reference; full bf16 its scalar definition, within its roundings",
     test_adamw},
    {"ops linear: matmul (fp32) and linear_bf16 (bf16) forward and backward vs reference and finite differences",
     test_linear},
    {"ops rope: fused (partial rotary, GQA, GPT-J pairs), reference and zero_freq vs the definition and finite "
     "differences; bf16 the rounding",
     test_rope},
    {"ops attention: multi-head, GQA and ALiBi, fp32 vs reference and finite differences; bf16 (both paths) vs "
     "reference and the fp32 backward",
     test_attention},
    {NULL, NULL},
};
