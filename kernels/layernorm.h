/* layernorm.h: LayerNorm over the last dim (eps 1e-5, as GPT-NeoX), forward and backward.
 * inp/out (N, C), weight/bias (C), mean/rstd (N) saved for backward. bias (and dbias) may be
 * NULL: a LayerNorm without bias (MPT's).
 * Backward (kernels.h's convention): dinp = dres + (the gradient through the LayerNorm), an
 * overwrite that adds the residual stream's gradient `dres` explicitly (dres may be NULL, or
 * dinp itself for an in-place update); dweight and dbias accumulate (+=). */
#ifndef CB_LAYERNORM_H
#define CB_LAYERNORM_H

#include "bf16.h"
#include "kernels.h"

#define LAYERNORM_EPS 1e-5f

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight, const float *bias,
                       int N, int C);
/* layernorm_forward with the output rounded to bf16 (the input of a bf16 matmul): mean and rstd
 * bit-identical to layernorm_forward's, out[i] = bf16_from_float(layernorm_forward's out[i])
 * (fp32 subnormals: see adamw.h). */
void layernorm_forward_bf16(bf16 *out, float *mean, float *rstd, const float *inp, const float *weight,
                            const float *bias, int N, int C);
void layernorm_backward(float *dinp, const float *dres, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean, const float *rstd, int N, int C);

void layernorm_forward_ref(double *out, const double *inp, const double *weight, const double *bias, int N, int C);

#endif
