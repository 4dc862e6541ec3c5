/* rmsnorm.h: RMSNorm over the last dim, as Llama (Hugging Face LlamaRMSNorm, computed in fp32):
 * out = weight * x / sqrt(mean(x^2) + eps); no mean subtracted, no bias. Llama-2 uses eps 1e-5
 * (rms_norm_eps), Llama-1 1e-6: the caller passes it.
 * inp/out (N, C), weight (C), rstd (N) = 1 / sqrt(mean(x^2) + eps), saved for backward.
 * Backward (kernels.h's convention, as layernorm_backward): dinp = dres + (the gradient through
 * the RMSNorm), an overwrite that adds the residual stream's gradient `dres` explicitly (dres
 * may be NULL, or dinp itself for an in-place update; dinp must not be dout); dweight
 * accumulates (+=). A NaN in a row makes that row's output NaN. */
#ifndef CB_RMSNORM_H
#define CB_RMSNORM_H

#include "bf16.h"
#include "kernels.h"

void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps);
/* rmsnorm_forward with the output rounded to bf16 (the input of a bf16 matmul): rstd
 * bit-identical to rmsnorm_forward's, out[i] = bf16_from_float(rmsnorm_forward's out[i])
 * (fp32 subnormals: see adamw.h). */
void rmsnorm_forward_bf16(bf16 *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps);
void rmsnorm_backward(float *dinp, const float *dres, float *dweight, const float *dout, const float *inp,
                      const float *weight, const float *rstd, int N, int C);

void rmsnorm_forward_ref(double *out, const double *inp, const double *weight, int N, int C, double eps);

#endif
