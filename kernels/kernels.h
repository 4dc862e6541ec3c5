/* kernels.h: what every kernel of kernels/ promises.
 *
 * Memory: kernels never print, and allocate nothing but onednn.c's cached primitives and the
 * packed weights it is asked for; callers pass every other buffer, scratch included, sized by the
 * kernel's own *_floats() function.
 *
 * Gradients: a backward kernel OVERWRITES (=) the gradients of its inputs (activations), and
 * ACCUMULATES (+=) into the gradients of parameters (weights, biases), so that the micro-batches
 * of one optimizer step sum there. Where an input gradient must be added to another (a residual
 * stream), the kernel takes that gradient as an explicit operand (layernorm_backward's `dres`).
 *
 * Errors: a kernel that can fail on its arguments returns KERNEL_OK or a negative KERNEL_E*
 * code and writes nothing; callers check every such return (kernel_strerror names the code).
 * Kernels without a return value cannot fail on valid pointers.
 *
 * NaN and infinities propagate: a non-finite input yields non-finite outputs, never a finite
 * number that hides it. */
#ifndef CB_KERNELS_H
#define CB_KERNELS_H

/* The error codes lie far from 0, 1 and 2 (the command line's exit codes), so that a code that
 * leaked into an exit status or a log could not pass for one. */
enum {
    KERNEL_OK = 0,
    KERNEL_EDIM = -101,     /* a dimension <= 0, a leading dimension too small, or beyond BLAS int indexing */
    KERNEL_EINDEX = -102,   /* an index argument (a target token) outside its range */
    KERNEL_EBACKEND = -103, /* the library behind the kernel (oneDNN) refused or failed */
};

static inline const char *kernel_strerror(int code)
{
    return code == KERNEL_OK         ? "no error"
           : code == KERNEL_EDIM     ? "invalid dimensions"
           : code == KERNEL_EINDEX   ? "index out of range"
           : code == KERNEL_EBACKEND ? "the oneDNN backend failed"
                                     : "unknown error";
}

#endif
