/* crossentropy.h: softmax cross-entropy over a vocabulary, the softmax fused into the loss
 * (no (N, V) probability tensor): forward keeps each row's log-sum-exp, backward recomputes
 * softmax from the logits. logits (N, V), targets (N) in [0, V), losses and lse (N).
 * Backward overwrites dlogits = dlosses[i] * (softmax(logits_i) - onehot(target_i)) (kernels.h),
 * into a separate buffer or in place over the logits. All return KERNEL_OK, or KERNEL_EINDEX
 * (nothing written) if a target is outside [0, V). */
#ifndef CB_CROSSENTROPY_H
#define CB_CROSSENTROPY_H

#include "bf16.h"
#include "kernels.h"

int crossentropy_forward(float *losses, float *lse, const float *logits, const int *targets, int N, int V);
int crossentropy_backward(float *dlogits, const float *dlosses, const float *logits, const float *lse,
                          const int *targets, int N, int V);
/* Same gradient, written over the logits (no second (N, V) buffer). */
int crossentropy_backward_inplace(float *logits, const float *dlosses, const float *lse, const int *targets, int N,
                                  int V);
/* crossentropy_backward's gradient rounded to bf16 into a separate buffer (the fp32 logits are
 * left as they are): dlogits[i] = bf16_from_float(crossentropy_backward's dlogits[i]), bit for
 * bit (fp32 subnormals: see adamw.h). The input of the unembedding matmul's backward in the bf16
 * step. */
int crossentropy_backward_bf16(bf16 *dlogits, const float *dlosses, const float *logits, const float *lse,
                               const int *targets, int N, int V);
/* Forward and bf16 backward in one pass over the logits, for a caller that knows dlosses before
 * the forward (the mean loss: 1 / N each): losses and lse bit-identical to crossentropy_forward's,
 * dlogits to crossentropy_backward_bf16's given that lse. */
int crossentropy_fused_bf16(float *losses, float *lse, bf16 *dlogits, const float *logits, const float *dlosses,
                            const int *targets, int N, int V);
void crossentropy_forward_ref(double *losses, const double *logits, const int *targets, int N, int V);

#endif
