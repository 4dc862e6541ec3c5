/* swiglu.h: the SwiGLU activation of Llama's MLP (Hugging Face LlamaMLP with hidden_act "silu":
 * down_proj(silu(gate_proj(x)) * up_proj(x))), on the output of one fused gate/up projection.
 * inp (N, 2*I), each row [gate (I) | up (I)]; out (N, I) = silu(gate) * up, with
 * silu(g) = g * sigmoid(g) = g / (1 + exp(-g)) in fp32 (exp(-g) overflows to +inf for g below
 * about -88, giving silu -0: the limit; NaN propagates; silu(-inf) is NaN, as in PyTorch).
 * Backward overwrites dinp (N, 2*I) = [dgate | dup] (kernels.h): dgate = dout * up * silu'(gate),
 * silu'(g) = sigmoid(g) (1 + g (1 - sigmoid(g))), dup = dout * silu(gate). dinp must not alias
 * inp or dout. */
#ifndef CB_SWIGLU_H
#define CB_SWIGLU_H

#include "bf16.h"
#include "kernels.h"

void swiglu_forward(float *out, const float *inp, int N, int I);
/* swiglu_forward rounded to bf16 (the input of the down projection's bf16 matmul; the caller
 * keeps the fp32 inp for backward): out[i] = bf16_from_float(swiglu_forward's out[i]), bit for
 * bit (fp32 subnormals: see adamw.h; silu(g) is subnormal for g in about [-103, -87]). */
void swiglu_forward_bf16(bf16 *out, const float *inp, int N, int I);
void swiglu_backward(float *dinp, const float *inp, const float *dout, int N, int I);
void swiglu_forward_ref(double *out, const double *inp, int N, int I);

#endif
