/* attention.h: causal softmax attention over the fused QKV layout, scaled by 1/sqrt(HS), tiled
 * ("flash" attention: Dao et al. 2022, FlashAttention-2's loop order, Dao 2023): blocks of
 * ATTENTION_BLOCK queries against blocks of as many keys, an online softmax (running max and
 * sum) in the forward, which saves each query's log-sum-exp instead of the (B, NH, T, T)
 * probabilities; the backward recomputes the probabilities block by block from it.
 *   qkv  (B, T, NH, 3*HS)  per head q, k, v blocks (the projection's layout, after rotary)
 *   out  (B, T, NH*HS)
 *   lse  (B, NH, T)        each query's log-sum-exp of its scaled scores (keys <= the query)
 * Heads, batches (and, in the forward, blocks of queries) run in parallel on OpenMP threads,
 * one whole head or block per thread: results do not depend on the number of threads.
 * Backward overwrites every element of dqkv (q, k and v blocks; kernels.h). Its scratch holds
 * attention_scratch_floats(T, HS, threads) floats, `threads` equal parts, and the backward runs
 * on exactly that many threads (a scratch sized for fewer threads would overflow). The forward
 * needs no scratch: its tiles (about (2 * ATTENTION_BLOCK * HS + ATTENTION_BLOCK^2) * 4 bytes)
 * live on the stack of each thread. */
#ifndef CB_ATTENTION_H
#define CB_ATTENTION_H

#include <stddef.h>

#include "bf16.h"
#include "kernels.h"

/* Queries per block (and keys per block); the matmul benchmark's transformer shapes use it. */
#define ATTENTION_BLOCK 64

/* lse (B, NH, T): each query row's log-sum-exp of its scaled scores, saved for backward */
void attention_forward(float *out, float *lse, const float *qkv, int B, int T, int NH, int HS);
void attention_backward(float *dqkv, float *scratch, int threads, const float *dout, const float *qkv,
                        const float *out, const float *lse, int B, int T, int NH, int HS);
/* bf16 variant (bf16-mixed training): q, k, v and the output in bf16, products in bf16 with fp32
 * accumulation (P and dS rounded to bf16 before their products, as FlashAttention does in bf16),
 * softmax statistics, lse and dqkv in fp32; dout fp32 (rounded to bf16 for its products).
 * vdpbf16ps where the CPU has AVX512_BF16 (asked at run time), the same products in fp32 FMAs
 * otherwise. */
void attention_forward_bf16(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH, int HS);
void attention_backward_bf16(float *dqkv, float *scratch, int threads, const float *dout, const bf16 *qkv,
                             const bf16 *out, const float *lse, int B, int T, int NH, int HS);
/* Floats of scratch for a backward (fp32 or bf16) on `threads` threads. Per thread: T, a few
 * (ATTENTION_BLOCK x max(ATTENTION_BLOCK, HS)) tiles, and 2 HS T where HS <= ATTENTION_BLOCK (the
 * bf16 backward then packs a head's queries once): linear in T, never the (T, T) scores. */
size_t attention_scratch_floats(int T, int HS, int threads);

/* Reference in double (for tests): same layout, naive loops, any T, no allocation. */
void attention_forward_ref(double *out, const double *qkv, int B, int T, int NH, int HS);

#endif
