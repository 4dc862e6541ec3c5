/* rope.h: rotary position embedding, GPT-NeoX convention (Hugging Face GPTNeoXAttention):
 * the first r = rotary_pct * HS dims of each q and k head are rotated, pairing dim i with
 * i + r/2 (rotate_half); the remaining HS - r dims pass through; angle(t, i) = t * base^(-2i/r).
 *
 * Input layout is what the fused QKV projection produces: qkv (B, T, NH, 3*HS), each head's
 * q, k and v blocks of HS floats side by side. Three variants that must agree:
 *   reference  tensor by tensor as Hugging Face does: neg, cat (rotate_half), mul cos, mul sin,
 *              add, cat with the pass-through part, every step a pass over a materialised
 *              temporary; writes new q, k tensors (B, NH, T, HS).
 *   zero_freq  the Trainium trick: cos/sin tables padded to the whole head (cos 1, sin 0 for the
 *              pass-through dims), one multiply-add pass over every dim; writes new q, k
 *              tensors (B, NH, T, HS).
 *   fused      rotates only the r dims, in place in the qkv buffer, with (T, r/2) tables.
 * Backward functions take the gradient with respect to the variant's output and write the
 * gradient with respect to the q and k blocks of qkv (dqkv; v blocks untouched). */
#ifndef CB_ROPE_H
#define CB_ROPE_H

#include <stddef.h>

#include "bf16.h"

typedef struct {
    int B, T, NH, HS, r; /* r: rotated dims per head, even, 0 <= r <= HS */
} rope_shape;

typedef struct {
    int T, r, HS;
    float *cos_half, *sin_half; /* (T, r/2)  fused */
    float *cos_r, *sin_r;       /* (T, r)    reference: cat(freqs, freqs) as Hugging Face */
    float *cos_full, *sin_full; /* (T, HS)   zero_freq: padded with cos 1, sin 0 */
} rope_tables;

/* r = rotary_pct * HS rounded down to an even number (as int(HS * pct) in Hugging Face, made even). */
int rope_rotary_dims(int HS, double rotary_pct);
/* Floats of table storage for (T, r, HS). */
size_t rope_tables_floats(int T, int r, int HS);
/* Fills the tables (computed in double) in caller-owned storage of rope_tables_floats() floats. */
void rope_tables_init(rope_tables *tb, float *storage, int T, int r, int HS, double base);

/* Scratch floats the reference variant needs (forward and backward). */
size_t rope_ref_scratch_floats(const rope_shape *s);

void rope_forward_ref(float *q_out, float *k_out, const float *qkv, const rope_shape *s, const rope_tables *tb,
                      float *scratch);
void rope_backward_ref(float *dqkv, const float *dq_out, const float *dk_out, const rope_shape *s,
                       const rope_tables *tb, float *scratch);

void rope_forward_zero_freq(float *q_out, float *k_out, const float *qkv, const rope_shape *s,
                            const rope_tables *tb);
void rope_backward_zero_freq(float *dqkv, const float *dq_out, const float *dk_out, const rope_shape *s,
                             const rope_tables *tb);

void rope_forward_fused(float *qkv, const rope_shape *s, const rope_tables *tb);
void rope_backward_fused(float *dqkv, const rope_shape *s, const rope_tables *tb);

/* bf16 variants: q and k (and their gradients) in bf16, in the same layouts; tables and
 * arithmetic in fp32; each result rounded to bf16 where the variant stores it (the reference
 * after every op, as PyTorch's ops on bf16 tensors; zero_freq and fused once per output, so
 * that their outputs are the fp32 kernels' results on the widened inputs, rounded). The
 * reference's scratch holds rope_ref_scratch_floats() bf16 elements. The training step applies
 * rope_forward_fused_bf16 to its bf16 QKV buffer (its backward stays the fp32 one). */
void rope_forward_ref_bf16(bf16 *q_out, bf16 *k_out, const bf16 *qkv, const rope_shape *s, const rope_tables *tb,
                           bf16 *scratch);
void rope_backward_ref_bf16(bf16 *dqkv, const bf16 *dq_out, const bf16 *dk_out, const rope_shape *s,
                            const rope_tables *tb, bf16 *scratch);
void rope_forward_zero_freq_bf16(bf16 *q_out, bf16 *k_out, const bf16 *qkv, const rope_shape *s,
                                 const rope_tables *tb);
void rope_backward_zero_freq_bf16(bf16 *dqkv, const bf16 *dq_out, const bf16 *dk_out, const rope_shape *s,
                                  const rope_tables *tb);
void rope_forward_fused_bf16(bf16 *qkv, const rope_shape *s, const rope_tables *tb);
void rope_backward_fused_bf16(bf16 *dqkv, const rope_shape *s, const rope_tables *tb);

/* Bytes each variant reads and writes per token (the model behind the benchmark's GB/s):
 * direction 0 forward, 1 backward; variant 0 reference, 1 zero_freq, 2 fused; q/k elements of
 * elem_bytes (4 fp32, 2 bf16), tables fp32. rope_bytes_per_token: elem_bytes 4. */
double rope_bytes_per_token_dtype(const rope_shape *s, int variant, int direction, int elem_bytes);
double rope_bytes_per_token(const rope_shape *s, int variant, int direction);

#endif
