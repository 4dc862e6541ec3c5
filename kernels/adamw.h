/* adamw.h: AdamW (Loshchilov & Hutter 2019: decoupled weight decay, bias-corrected moments),
 * and the global gradient L2 norm's sum of squares; clipping by the norm is the update's
 * grad_scale. t is the 1-based step count. */
#ifndef CB_ADAMW_H
#define CB_ADAMW_H

#include <stddef.h>

#include <stdint.h>

#include "bf16.h"

typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    float grad_scale; /* gradients are multiplied by this first (clipping); 0 means 1 */
} adamw_params;

/* m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  p -= lr * (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + wd p)
 * in single precision, each element exactly as the scalar expression
 *   g = grad * gs;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g g;
 *   p -= lr * ((m c1) / (sqrtf(v c2) + eps) + wd p),  c1 = 1 / (1 - b1^t), c2 = 1 / (1 - b2^t)
 * evaluated left to right without fused multiply-adds (vectorised, the same bits).
 * Returns the count of weights the update left non-finite (counted as they are written: a
 * corrupt optimizer state or an overflow is seen without a second pass). */
size_t adamw_update(float *params, const float *grads, float *m, float *v, size_t n, const adamw_params *hp, int t);

/* bf16 outputs of kernels/ (here and in the other kernels' headers) are bf16_from_float's
 * rounding bit for bit, except that fp32 subnormals narrow to a signed zero where the build
 * targets AVX512_BF16 (vcvtneps2bf16; vmath.h), as bf16_from_floats does. */

/* Full-bf16 AdamW (precisions bf16-sr and bf16): weights p and both moments m, v stored in bf16,
 * the gradient rounded to bf16 as it enters (the precision stores gradients in bf16), every
 * element's update computed in single precision from the widened values, in adamw_update's order:
 *   g = bf16(grad) gs;  m = b1 M + (1 - b1) g;  v = b2 V + (1 - b2) g g;
 *   p = P - lr ((m c1) / (sqrtf(v c2) + eps) + wd P)
 * and p, m, v written back in bf16: rounded to nearest even (r->stochastic == 0; the gradient
 * too), or stochastically (bf16_from_float_sr) with the four 16-bit fields of
 * bf16_sr_hash(r->seed, t, r->offset + i): p bits 48-63, m 32-47, v 16-31, the gradient 0-15.
 * The result depends neither on the thread count nor on how the tensor is split (offset: index
 * of element 0 in the whole model, as ZeRO shards and per-tensor calls see it). p32 (n; NULL:
 * none) receives the new weights widened. Narrowing to nearest follows bf16.h (subnormal fp32
 * inputs may narrow to zero where the build targets AVX512_BF16). Returns the count of bf16
 * weights written non-finite (an fp32 result past bf16's largest finite value rounds to infinity). */
typedef struct {
    int stochastic;
    uint64_t seed, offset;
} adamw_rounding;
size_t adamw_update_full_bf16(bf16 *p, float *p32, const float *grads, bf16 *m, bf16 *v, size_t n,
                              const adamw_params *hp, int t, const adamw_rounding *r);
/* The same, one scalar element at a time (the reference of the tests). */
size_t adamw_update_full_bf16_ref(bf16 *p, float *p32, const float *grads, bf16 *m, bf16 *v, size_t n,
                                  const adamw_params *hp, int t, const adamw_rounding *r);
void adamw_update_ref(double *params, const double *grads, double *m, double *v, size_t n, const adamw_params *hp,
                      int t);
/* Sum of squares accumulated in double (combine buffers, then sqrt for the global norm); the same
 * bits whatever the thread count. */
double grad_sumsq(const float *g, size_t n);

#endif
