/* linear_bf16.h: the linear-layer products of bf16 mixed-precision training, over oneDNN
 * (kernels/onednn.h): bf16 operands, fp32 accumulation. Same shapes and gradient conventions as
 * matmul.h (N rows, C input width, OC output width; weight (OC, C) row-major; input gradients
 * overwritten, weight and bias gradients accumulated in fp32).
 *
 * The weight enters the products as a bf16 copy made from the fp32 master weight once per
 * optimizer step (linear_bf16_pack): two copies, each in the blocked layout oneDNN's kernel for
 * its product prefers (W^T for the forward, W for the input gradient), converted and reordered
 * in one pass. The weight gradient reads the activations and needs no copy.
 *
 * Each returns KERNEL_OK, KERNEL_EDIM or KERNEL_EBACKEND (onednn_last_error() says why). */
#ifndef CB_LINEAR_BF16_H
#define CB_LINEAR_BF16_H

#include <stddef.h>

#include "bf16.h"
#include "kernels.h"
#include "onednn.h"

typedef struct {
    onednn_packed fwd, bwd;
    int N, C, OC, out_bf16, bias;
} linear_bf16_weight;

/* (Re)makes both bf16 copies of `weight` (OC, C) for products over N rows; out_bf16: the forward
 * writes bf16; bias: the forward adds a bias (the forward's bias argument must then be non-NULL,
 * else NULL). */
int linear_bf16_pack(linear_bf16_weight *w, const float *weight, int N, int C, int OC, int out_bf16, int bias);
/* The same from a bf16 weight (full-bf16 training); where oneDNN's kernel reads the plain layout
 * the weight is read in place: it must then stay where it is until the next pack. */
int linear_bf16_pack_bf16(linear_bf16_weight *w, const bf16 *weight, int N, int C, int OC, int out_bf16, int bias);
void linear_bf16_weight_free(linear_bf16_weight *w);
/* Bytes both copies of weights of this many elements take (about; the blocked layouts pad). */
double linear_bf16_weight_bytes(double elements);

/* out = inp @ weight^T (+ bias) into out32 (fp32) or out16 (bf16), as packed: exactly one non-NULL. */
int linear_bf16_forward(float *out32, bf16 *out16, const bf16 *inp, const linear_bf16_weight *w, const float *bias);
/* dinp = dout @ weight (fp32, overwritten). */
int linear_bf16_backward_input(float *dinp, const bf16 *dout, const linear_bf16_weight *w);
/* dweight += dout^T @ inp (fp32); dbias += colsum(dout32) from the fp32 gradient (NULL: none). */
int linear_bf16_backward_weight(float *dweight, float *dbias, const bf16 *dout, const float *dout32, const bf16 *inp,
                                int N, int C, int OC);

#endif
