/* attention.h: causal softmax attention over the fused QKV layout, scaled by 1/sqrt(HS), tiled
 * ("flash" attention: Dao et al. 2022, FlashAttention-2's loop order, Dao 2023): blocks of
 * ATTENTION_BLOCK queries against blocks of as many keys, an online softmax (running max and
 * sum) in the forward, which saves each query's log-sum-exp instead of the (B, NH, T, T)
 * probabilities; the backward recomputes the probabilities block by block from it.
 *
 * Grouped-query attention (Ainslie et al. 2023; Llama-2 70B): KVH key/value heads, each shared
 * by G = NH / KVH consecutive query heads (KVH == NH: multi-head attention, KVH == 1:
 * multi-query). The "group layout", per token, for each kv head g: its G query heads, then k_g,
 * then v_g, HS floats each:
 *   qkv  (B, T, KVH, (G+2)*HS)  query head h = g*G + r at g*(G+2)*HS + r*HS; k_g at
 *                               g*(G+2)*HS + G*HS, v_g after it (the projection's layout, after
 *                               rotary). G = 1 is the (B, T, NH, 3*HS) per-head [q, k, v] layout.
 *   out  (B, T, NH*HS)           head h at h*HS
 *   lse  (B, NH, T)              each query's log-sum-exp of its scaled (and biased) scores
 * ALiBi (Press et al. 2022; MPT): with slopes, score(i, j) = q_i.k_j / sqrt(HS) - slope[h] (i - j)
 * for key j <= query i: the bias added after the scale, as llm-foundry's
 * scaled_multihead_dot_product_attention adds attn_bias to q.k * softmax_scale. MPT's bias,
 * slope (j - (T-1)), depends on the key only; it differs from -slope (i - j) by slope (i - (T-1)),
 * constant along a query's row, which the softmax ignores. The bias has no gradient.
 *
 * The forward runs batches, query heads and blocks of queries in parallel on OpenMP threads; the
 * backward runs (batch, kv group) tasks, one thread owning a group's dk and dv and looping over
 * its G query heads in order: results do not depend on the number of threads. Backward
 * overwrites every element of dqkv (its layout is qkv's; kernels.h); a group's dk and dv sum its
 * query heads' contributions. Its scratch holds attention_scratch_floats_gqa(s, threads) floats,
 * `threads` equal parts, and the backward runs on exactly that many threads (a scratch sized for
 * fewer threads would overflow). The forward needs no scratch: its tiles (about
 * (2 * ATTENTION_BLOCK * HS + ATTENTION_BLOCK^2) * 4 bytes) live on the stack of each thread.
 *
 * Callers check the shape (B, T, NH, KVH, HS >= 1, NH % KVH == 0): the kernels assume it. */
#ifndef CB_ATTENTION_H
#define CB_ATTENTION_H

#include <stddef.h>

#include "bf16.h"
#include "kernels.h"

/* Queries per block (and keys per block); the matmul benchmark's transformer shapes use it. */
#define ATTENTION_BLOCK 64

typedef struct {
    int B, T, NH, KVH, HS; /* KVH: key/value heads, NH % KVH == 0 */
    const float *alibi;    /* (NH) ALiBi slopes, or NULL: no bias */
} attn_shape;

/* Each function in fp32 and in bf16; the _gqa ones take the general shape (attn_shape: grouped-query
 * heads, ALiBi slopes), the others the multi-head layout. lse (B, NH, T): each query row's log-sum-exp of its scaled
 * scores, saved for backward. The bf16 twins (bf16-mixed training): q, k, v and the output in
 * bf16, products in bf16 with fp32 accumulation (P and dS rounded to bf16 before their products,
 * as FlashAttention does in bf16), softmax statistics, lse and dqkv in fp32; dout fp32 (rounded to
 * bf16 for its products). vdpbf16ps where the CPU has AVX512_BF16 (asked at run time), the same
 * products in fp32 FMAs otherwise. */
void attention_forward_gqa(float *out, float *lse, const float *qkv, const attn_shape *s);
void attention_forward_gqa_bf16(bf16 *out, float *lse, const bf16 *qkv, const attn_shape *s);
void attention_backward_gqa(float *dqkv, float *scratch, int threads, const float *dout, const float *qkv,
                            const float *out, const float *lse, const attn_shape *s);
void attention_backward_gqa_bf16(float *dqkv, float *scratch, int threads, const float *dout, const bf16 *qkv,
                                 const bf16 *out, const float *lse, const attn_shape *s);
/* The multi-head layout without bias (KVH = NH, alibi = NULL). */
void attention_forward(float *out, float *lse, const float *qkv, int B, int T, int NH, int HS);
void attention_forward_bf16(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH, int HS);
void attention_backward(float *dqkv, float *scratch, int threads, const float *dout, const float *qkv,
                        const float *out, const float *lse, int B, int T, int NH, int HS);
void attention_backward_bf16(float *dqkv, float *scratch, int threads, const float *dout, const bf16 *qkv,
                             const bf16 *out, const float *lse, int B, int T, int NH, int HS);
/* Floats of scratch for a backward (fp32 or bf16) on `threads` threads. Per thread: T, a few
 * (ATTENTION_BLOCK x max(ATTENTION_BLOCK, HS)) tiles, and 2 HS T where HS <= ATTENTION_BLOCK (the
 * bf16 backward then packs a head's queries once): linear in T, never the (T, T) scores. A
 * thread works through a group's query heads one at a time, reusing its part: the size depends
 * on T and HS only, attention_scratch_floats_gqa(s, n) == attention_scratch_floats(s->T, s->HS, n)
 * for every KVH and ALiBi. */
size_t attention_scratch_floats_gqa(const attn_shape *s, int threads);
size_t attention_scratch_floats(int T, int HS, int threads);

/* Reference in double (for tests): same layout, naive loops, any T, no allocation; the slopes
 * widened to double. */
void attention_forward_ref_gqa(double *out, const double *qkv, const attn_shape *s);
void attention_forward_ref(double *out, const double *qkv, int B, int T, int NH, int HS);

/* MPT's ALiBi slopes (llm-foundry's gen_slopes): n = 2^ceil(log2 NH), slope_i = 2^-((i+1) *
 * alibi_bias_max / n) for i < n; where n != NH, the odd-indexed slopes then the even-indexed
 * ones, the first NH of them. slopes (NH); MPT's alibi_bias_max is 8. */
void attention_alibi_slopes(float *slopes, int NH, double alibi_bias_max);

#endif
