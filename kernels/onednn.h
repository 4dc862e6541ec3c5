/* onednn.h: matrix products through oneDNN (Debian libdnnl-dev 2.6), the one module that calls
 * it, as matmul.c is for OpenBLAS. oneDNN picks its kernels at run time (AMX tiles, AVX512-BF16
 * vdpbf16ps, AVX-512 fp32) and DNNL_MAX_CPU_ISA caps the choice; onednn_isa() names the level in
 * effect and onednn_impl() the kernel that ran a given product.
 *
 * Products: C (n x m) = op(A) (n x k) @ op(B) (k x m) [+ bias (m)] [+ C], row-major with leading
 * dimensions, A and B both fp32 or both bf16 (bf16 products accumulate in fp32), C fp32 or bf16
 * (bias and the accumulation are applied in fp32 before a bf16 C is rounded; oneDNN 2.6 has no
 * kernel for fp32 operands with a bf16 C: KERNEL_EBACKEND, "unimplemented"). A primitive per
 * shape is created on first use and kept (creation costs milliseconds; the training step reuses
 * a few dozen shapes).
 *
 * Below AVX-512 (an AVX2 CPU, or DNNL_MAX_CPU_ISA=AVX2) oneDNN 2.6 has no bf16 matmul: bf16
 * products then run on a fallback of ours, both operands widened exactly to fp32 and multiplied by
 * OpenBLAS's sgemm, which onednn_impl names "costbench:bf16-widened-sgemm" (the same products up to
 * the order of the fp32 sums; sgemm's speed, not a bf16 kernel's).
 *
 * Packed weights: a B operand reordered once into the blocked layout oneDNN's kernel for one
 * shape prefers (onednn_pack), then used by many products (onednn_gemm_packed); the training
 * step packs its bf16 weight copies once per optimizer step. The reorder's cost is the caller's
 * to time and report.
 *
 * Thread-safe: every entry takes one lock, so calls from several threads run one at a time (the
 * products themselves use every OpenMP thread). Every function returns KERNEL_OK, KERNEL_EDIM (nothing written: a NULL
 * operand, a dimension <= 0, a leading dimension too small) or KERNEL_EBACKEND (oneDNN refused; the reason is in
 * onednn_last_error()). */
#ifndef CB_ONEDNN_H
#define CB_ONEDNN_H

#include <stddef.h>

#include "kernels.h"

typedef enum { ONEDNN_F32 = 0, ONEDNN_BF16 = 1 } onednn_dtype;

typedef struct {
    onednn_dtype ab, c;  /* operand and result types */
    int trans_a, trans_b;
    int n, m, k;
    int lda, ldb, ldc;
    int bias;       /* add a fp32 bias of m values */
    int accumulate; /* C += product (fp32 C only) */
} onednn_shape;

/* Version "2.6.3" and the CPU ISA level oneDNN uses on this machine (e.g. "avx512_core_amx",
 * "avx512_core_bf16", "avx512_core"), after DNNL_MAX_CPU_ISA. */
const char *onednn_version(void);
const char *onednn_isa(void);
/* 1 when oneDNN runs bf16 products on bf16 hardware here (AVX512_BF16 or AMX), 0 when it would
 * emulate them. */
int onednn_bf16_native(void);
/* 1 when oneDNN has no bf16 matmul at its ISA here, so bf16 products run on the widened fallback. */
int onednn_bf16_widened(void);
/* The implementation name oneDNN reports for the primitive of this shape (e.g. "brg:avx512_core_amx"),
 * creating it if needed; NULL on error. */
const char *onednn_impl(const onednn_shape *s);
/* The same for the primitive onednn_gemm_packed runs for this shape (its B in oneDNN's preferred layout). */
const char *onednn_impl_packed(const onednn_shape *s);
const char *onednn_last_error(void);

int onednn_gemm(const onednn_shape *s, const void *A, const void *B, const float *bias, void *C);

/* A B operand reordered for one shape. */
typedef struct {
    onednn_shape shape; /* the shape it was packed for (ldb as given to onednn_pack) */
    void *data;         /* 64-byte aligned, `bytes` long */
    size_t bytes;
    int blocked;        /* 0: oneDNN prefers the plain layout */
    const void *plain;  /* onednn_pack of a plain-layout B: that B, read in place (data unused); else NULL */
} onednn_packed;

/* Reorders B into p (allocating on first use for this shape; a later call with the same shape
 * reuses the buffer). */
int onednn_pack(onednn_packed *p, const onednn_shape *s, const void *B);
/* The same from an fp32 B (bf16 products only): converts to bf16 and blocks in one reorder, into
 * p's own buffer (also when oneDNN prefers the plain layout: p->data then holds a plain bf16 copy). */
int onednn_pack_f32(onednn_packed *p, const onednn_shape *s, const float *B);
int onednn_gemm_packed(const onednn_shape *s, const void *A, const onednn_packed *p, const float *bias, void *C);
void onednn_packed_free(onednn_packed *p);

/* References in double for tests: C = op(A) op(B) (+ bias) (+ C), reading fp32 or bf16 operands. */
void onednn_gemm_ref(const onednn_shape *s, const void *A, const void *B, const float *bias, double *C);

#endif
