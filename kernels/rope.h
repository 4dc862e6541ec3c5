/* rope.h: rotary position embedding. The first r dims of each q and k head are rotated in
 * pairs, the remaining HS - r dims pass through; pair i (i < r/2) turns by the angle
 * t * base^(-2i/r) at position t. Two pairings (rope_shape.gptj):
 *   0  GPT-NeoX / Llama (Hugging Face rotate_half): dims (i, i + r/2);
 *   1  GPT-J (Hugging Face modeling_gptj.py, rotate_every_two with sin/cos repeat_interleave'd):
 *      dims (2i, 2i+1): out[2i] = x[2i] cos - x[2i+1] sin, out[2i+1] = x[2i+1] cos + x[2i] sin.
 * Both use the same tables (cos_half/sin_half, (T, r/2)).
 *
 * Input layout is what the fused QKV projection produces. With kvh key/value heads (grouped-query
 * attention, G = NH / kvh query heads per group; kvh 0 means NH) the "group layout": per token,
 * for each kv head g in 0..kvh-1, the G query heads g*G .. g*G+G-1 (HS floats each), then k_g
 * (HS), then v_g (HS): qkv (B, T, kvh, (G+2)*HS), (NH + 2 kvh) HS floats per token. With kvh = NH
 * (G = 1) that is the per-head [q, k, v] layout (B, T, NH, 3*HS) of GPT-NeoX. rope_qkv_offset
 * finds a head in it. Rotary applies to every q head and every k head; v is untouched.
 *
 * Three variants that must agree on the GPT-NeoX layout:
 *   reference  tensor by tensor as Hugging Face does: neg, cat (rotate_half), mul cos, mul sin,
 *              add, cat with the pass-through part, every step a pass over a materialised
 *              temporary; writes new q, k tensors (B, NH, T, HS).
 *   zero_freq  the Trainium trick: cos/sin tables padded to the whole head (cos 1, sin 0 for the
 *              pass-through dims), one multiply-add pass over every dim; writes new q, k
 *              tensors (B, NH, T, HS).
 *   fused      rotates only the r dims, in place in the qkv buffer, with (T, r/2) tables.
 * reference and zero_freq (benchmark variants of the GPT-NeoX layer) take the NeoX pairing and
 * layout only: kvh 0 or NH, gptj 0; other shapes are outside their contract. fused takes any
 * kvh dividing NH and either pairing; rope_forward_ref_gqa is its double-precision definition.
 * Backward functions take the gradient with respect to the variant's output and write the
 * gradient with respect to the q and k blocks of qkv (dqkv; v blocks untouched). */
#ifndef CB_ROPE_H
#define CB_ROPE_H

#include <stddef.h>

#include "bf16.h"

typedef struct {
    int B, T, NH, HS, r; /* r: rotated dims per head, even, 0 <= r <= HS */
    int kvh;             /* key/value heads, dividing NH; 0 means NH (the per-head [q, k, v] layout) */
    int gptj;            /* 0: rotate_half pairs (i, i + r/2) (GPT-NeoX, Llama); 1: GPT-J's (2i, 2i+1) */
} rope_shape;
/* kvh and gptj zero (what an initialiser that names the other fields gives) mean the NeoX layout
 * and pairing. Some callers initialise by position (bench/calib.c): the field order is fixed. */

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

/* Key/value heads of s: kvh, or NH when kvh is 0. */
int rope_kv_heads(const rope_shape *s);
/* Elements of one token's qkv in the group layout: (NH + 2 kvh) HS. */
size_t rope_qkv_per_token(const rope_shape *s);
/* Element offset, in a group-layout qkv buffer, of the first dim of: which 0, query head `head`
 * (0..NH-1); which 1 (k) or 2 (v), key/value head `head` (0..kvh-1); at token (b, t). The k and v
 * serving query head h are those of kv head h / (NH / kvh). */
size_t rope_qkv_offset(const rope_shape *s, int b, int t, int which, int head);

/* Scratch elements (floats, or bf16 for the bf16 twin) the reference variant needs, forward and backward. */
size_t rope_ref_scratch_floats(const rope_shape *s);

/* Each variant in fp32 and in bf16. The bf16 twins: q and k (and their gradients) in bf16, in the
 * same layouts; tables and arithmetic in fp32; each result rounded to bf16 where the variant
 * stores it (the reference after every op, as PyTorch's ops on bf16 tensors; zero_freq and fused
 * once per output, so that their outputs are the fp32 kernels' results on the widened inputs,
 * rounded). The reference's scratch holds rope_ref_scratch_floats() elements of its type. The
 * training step applies rope_forward_fused_bf16 to its bf16 QKV buffer (its backward stays the
 * fp32 one). The fused kernels of both types take any kvh and either pairing. */
void rope_forward_ref(float *q_out, float *k_out, const float *qkv, const rope_shape *s, const rope_tables *tb,
                      float *scratch);
void rope_forward_ref_bf16(bf16 *q_out, bf16 *k_out, const bf16 *qkv, const rope_shape *s, const rope_tables *tb,
                           bf16 *scratch);
void rope_backward_ref(float *dqkv, const float *dq_out, const float *dk_out, const rope_shape *s,
                       const rope_tables *tb, float *scratch);
void rope_backward_ref_bf16(bf16 *dqkv, const bf16 *dq_out, const bf16 *dk_out, const rope_shape *s,
                            const rope_tables *tb, bf16 *scratch);

void rope_forward_zero_freq(float *q_out, float *k_out, const float *qkv, const rope_shape *s,
                            const rope_tables *tb);
void rope_forward_zero_freq_bf16(bf16 *q_out, bf16 *k_out, const bf16 *qkv, const rope_shape *s,
                                 const rope_tables *tb);
void rope_backward_zero_freq(float *dqkv, const float *dq_out, const float *dk_out, const rope_shape *s,
                             const rope_tables *tb);
void rope_backward_zero_freq_bf16(bf16 *dqkv, const bf16 *dq_out, const bf16 *dk_out, const rope_shape *s,
                                  const rope_tables *tb);

void rope_forward_fused(float *qkv, const rope_shape *s, const rope_tables *tb);
void rope_forward_fused_bf16(bf16 *qkv, const rope_shape *s, const rope_tables *tb);
/* Rotations by -angle (the rotation is orthogonal: its transpose is its inverse). */
void rope_backward_fused(float *dqkv, const rope_shape *s, const rope_tables *tb);
void rope_backward_fused_bf16(bf16 *dqkv, const rope_shape *s, const rope_tables *tb);

/* The fused forward's definition in double, for tests: any kvh and pairing, angles computed from
 * base directly (not from tables). out and qkv: group layout (B, T, kvh, (G+2)*HS); v copied. */
void rope_forward_ref_gqa(double *out, const double *qkv, const rope_shape *s, double base);

/* Bytes each variant reads and writes per token (the model behind the benchmark's GB/s):
 * direction 0 forward, 1 backward; variant 0 reference, 1 zero_freq, 2 fused; q/k elements of
 * elem_bytes (4 fp32, 2 bf16), tables fp32. rope_bytes_per_token: elem_bytes 4. */
double rope_bytes_per_token_dtype(const rope_shape *s, int variant, int direction, int elem_bytes);
double rope_bytes_per_token(const rope_shape *s, int variant, int direction);

#endif
