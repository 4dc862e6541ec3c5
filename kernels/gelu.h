/* gelu.h: GELU, exact erf form as GPT-NeoX (hidden_act "gelu"): 0.5 x (1 + erf(x / sqrt 2)).
 * Backward overwrites dinp = dout * gelu'(inp) (kernels.h); dinp may be dout (in place). */
#ifndef CB_GELU_H
#define CB_GELU_H

#include <stddef.h>

#include "kernels.h"

void gelu_forward(float *out, const float *inp, size_t n);
void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
void gelu_forward_ref(double *out, const double *inp, size_t n);

#endif
