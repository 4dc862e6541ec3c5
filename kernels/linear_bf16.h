/* linear_bf16.h: the linear-layer products of bf16 mixed-precision training, over oneDNN
 * (kernels/onednn.h): bf16 operands, fp32 accumulation. Same shapes and gradient conventions as
 * matmul.h (N rows, C input width, OC output width; weight (OC, C) row-major; input gradients
 * overwritten, weight and bias gradients accumulated in fp32). Each returns KERNEL_OK,
 * KERNEL_EDIM or KERNEL_EBACKEND (onednn_last_error() says why). */
#ifndef CB_LINEAR_BF16_H
#define CB_LINEAR_BF16_H

#include "bf16.h"
#include "kernels.h"

/* out = inp @ weight^T + bias, out fp32 (out32) or bf16 (out16): exactly one of them non-NULL. */
int linear_bf16_forward(float *out32, bf16 *out16, const bf16 *inp, const bf16 *weight, const float *bias, int N, int C,
                        int OC);
/* dinp = dout @ weight (fp32, overwritten). */
int linear_bf16_backward_input(float *dinp, const bf16 *dout, const bf16 *weight, int N, int C, int OC);
/* dweight += dout^T @ inp (fp32); dbias += colsum(dout32) from the fp32 gradient (NULL: none). */
int linear_bf16_backward_weight(float *dweight, float *dbias, const bf16 *dout, const float *dout32, const bf16 *inp,
                                int N, int C, int OC);

#endif
