/* gelu.h: GELU, exact erf form as GPT-NeoX (hidden_act "gelu"): 0.5 x (1 + erf(x / sqrt 2)).
 * Backward overwrites dinp = dout * gelu'(inp) (kernels.h); dinp may be dout (in place). */
#ifndef CB_GELU_H
#define CB_GELU_H

#include <stddef.h>

#include "bf16.h"
#include "kernels.h"

void gelu_forward(float *out, const float *inp, size_t n);
/* gelu_forward rounded to bf16 (the input of the MLP's second matmul; the caller keeps the fp32
 * inp for backward): out[i] = bf16_from_float(gelu_forward's out[i]), bit for bit (fp32
 * subnormals: see adamw.h). */
void gelu_forward_bf16(bf16 *out, const float *inp, size_t n);
void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
void gelu_forward_ref(double *out, const double *inp, size_t n);

#endif
