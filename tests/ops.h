/* ops.h: the operations registry of tests/test_ops.c, shared by the files that define entries
 * (test_ops.c, test_ops_rope.c, test_ops_attention.c).
 *
 * An entry (op_def) says how to build the inputs of each of its shapes (seeded), how to run the
 * kernel at a precision (the element types the kernel has: fp32, bf16), and how to check what it
 * wrote: against the double-precision reference within the precision's tolerance (atol + rtol
 * |ref|; the max abs/rel errors are printed on failure), bf16 outputs also as the fp32 kernel's
 * result rounded where the kernel promises that, and every backward against central finite
 * differences in double on a sample of elements. ops_run runs each shape at each precision of an
 * entry; a failed check names the op, the precision and the shape. */
#ifndef CB_TEST_OPS_H
#define CB_TEST_OPS_H

#include <stddef.h>

#include "../kernels/bf16.h"

enum { OP_FP32, OP_BF16, OP_NPREC };
extern const char *const prec_names[OP_NPREC];
#define OP_BOTH (1u << OP_FP32 | 1u << OP_BF16)

typedef struct {
    double atol, rtol;
} tolerance;

/* One rounding to bf16 is off by at most 2^-8 of the value's power of two (half an ulp), less of the
 * value itself: room for the fp32 kernel's own error. */
#define BF16_ROUNDING (1.0 / 256)

/* The buffers of one run, freed together; oom set when one could not be had. */
#define ARENA_MAX 64
typedef struct {
    void *p[ARENA_MAX];
    int n, oom;
} arena;

/* n zeroed elements of the type from the arena (NULL, and oom set, when out of memory). */
float *floats(arena *a, size_t n);
double *doubles(arena *a, size_t n);
bf16 *halves(arena *a, size_t n);

/* What a check names: the op, the precision, the shape. */
typedef struct {
    const char *op;
    int prec;
    char shape[96];
} op_run;

typedef struct {
    const char *name;
    unsigned precs; /* 1 << OP_FP32 | 1 << OP_BF16: the element types the kernel has */
    int nshapes;
    size_t ctx_bytes;
    /* Allocates (from the arena) and fills the inputs of shape s, seeded; at OP_BF16 the inputs the
     * bf16 kernel reads in bf16 are rounded first, so that the reference sees the same values.
     * Writes the shape's label; 0 when out of memory. */
    int (*make)(void *x, arena *a, int s, int prec, char *label, size_t n);
    void (*run)(void *x, int prec); /* the kernel at prec (and the fp32 kernel a bf16 result rounds) */
    void (*check)(void *x, const op_run *r);
} op_def;

void ops_run(const op_def *op);

/* The checks, each naming r and `what` on failure: got within t of the double reference; got
 * the fp32 kernel's result f32 rounded, bit for bit; a and b the same bytes. */
void op_close(const op_run *r, const char *what, const float *got, const double *ref, size_t n, tolerance t);
void op_close16(const op_run *r, const char *what, const bf16 *got, const double *ref, size_t n, tolerance t);
void op_rounded(const op_run *r, const char *what, const bf16 *got, const float *f32, size_t n);
void op_same(const op_run *r, const char *what, const void *a, const void *b, size_t bytes);

/* The loss of a finite-difference check: sum dout . ref(inputs with input `which` = v). */
typedef struct {
    void (*ref)(void *x, int which, const double *v, double *out);
    void *x;
    int which;
    const double *dout;
    double *out;
    size_t nout;
} fd_loss;

/* The gradient grad of input `which` (in, n) against finite differences of the loss. */
void op_fd(const op_run *r, const char *what, fd_loss l, int which, double *in, size_t n, const float *grad,
           int nsample, double tol);

/* Uniform numbers in [shift - scale, shift + scale), as fp32 and (when xd) double. */
void fill(float *x, double *xd, size_t n, unsigned *st, float scale, float shift);
/* x rounded to bf16 (into h when non-NULL), the double copy (when xd) following. */
void round_bf16(float *x, double *xd, bf16 *h, size_t n);
void widen(float *f, const bf16 *h, size_t n);

extern const op_def op_rope, op_attention;

#endif
