/* attention.h: causal softmax attention over the fused QKV layout, scores and outputs via
 * sgemm (matmul_gemm), scaled by 1/sqrt(HS).
 *   qkv  (B, T, NH, 3*HS)  per head q, k, v blocks (the projection's layout, after rotary)
 *   out  (B, T, NH*HS)
 *   att  (B, NH, T, T)     softmax probabilities, saved for backward (zero above the diagonal)
 * Backward overwrites every element of dqkv (q, k and v blocks; kernels.h). Its scratch holds
 * one (min(T, ATTENTION_BLOCK), T) block of score gradients per thread: `threads` of them,
 * attention_scratch_floats(T, threads) floats, and the backward runs on exactly that many
 * threads (a scratch sized for fewer threads than the backward uses would overflow). */
#ifndef CB_ATTENTION_H
#define CB_ATTENTION_H

#include <stddef.h>

#include "kernels.h"

/* Rows are processed in blocks of this many (the causal mask skips the blocks above the
 * diagonal); the matmul benchmark's transformer shapes use the same blocks. */
#define ATTENTION_BLOCK 128

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int NH, int HS);
void attention_backward(float *dqkv, float *scratch, int threads, const float *dout, const float *qkv,
                        const float *att, int B, int T, int NH, int HS);
/* Floats of scratch for a backward on `threads` threads at sequence length T. */
size_t attention_scratch_floats(int T, int threads);

void attention_forward_ref(double *out, const double *qkv, int B, int T, int NH, int HS);

#endif
