// rope.cuh: the rotary embedding's three variants (kernels/rope.h) as CUDA kernels, forward and
// backward, for E = float and E = __nv_bfloat16 (bf16 storage, fp32 arithmetic, each stored
// result rounded to nearest), on the GPT-NeoX layout only: qkv (B, T, NH, 3*HS), per head
// [q, k, v], rotate_half pairs (i, i + r/2), i < r/2 (rope_shape's kvh 0 or NH, gptj 0).
//
//   reference  Hugging Face's tensor-by-tensor sequence, one kernel per torch op, each writing a
//              materialised temporary in `scratch` (rope_ref_scratch_floats(s) elements of E):
//              neg, cat (rotate_half), mul cos, mul sin, add, cat with the pass-through dims;
//              writes q_out, k_out (B, NH, T, HS). The backward runs the ops autograd runs
//              (kernels/rope_elem.inc, ref_backward_one) into dqkv's q and k blocks.
//   zero_freq  one pass over every dim of every head with (T, HS) tables padded with cos 1,
//              sin 0 on the pass-through dims; writes q_out, k_out (B, NH, T, HS) (backward:
//              dqkv's q and k blocks from dq_out, dk_out).
//   fused      the r rotated dims only, in place in qkv (dqkv), with (T, r/2) tables; the
//              pass-through dims and v are neither read nor written.
//
// Tables: a rope_tables whose six pointers are device arrays (rope_gpu_tables_upload). The
// launchers run on the default stream and return 0, CB_EUSAGE (a shape outside the contract:
// grouped heads, GPT-J pairs, an odd r) or CB_EFAIL (a launch error; they do not synchronise, so
// an execution error shows at the caller's next synchronising call).
#ifndef CB_CUDA_ROPE_CUH
#define CB_CUDA_ROPE_CUH

#include <cuda_bf16.h>

extern "C" {
#include "../rope.h"
}

// Device copies of host tables `h` (rope_tables_init's), each array its own allocation (so every
// vector load of a table row is aligned); dev->T, r, HS as h's. Returns 0 or CB_EFAIL.
int rope_gpu_tables_upload(rope_tables *dev, const rope_tables *h);
// Frees what rope_gpu_tables_upload allocated (NULL pointers skipped) and clears them.
void rope_gpu_tables_free(rope_tables *dev);

template <typename E>
int rope_gpu_forward_ref(E *q_out, E *k_out, const E *qkv, const rope_shape *s, const rope_tables *tb, E *scratch);
template <typename E>
int rope_gpu_backward_ref(E *dqkv, const E *dq_out, const E *dk_out, const rope_shape *s, const rope_tables *tb,
                          E *scratch);
template <typename E>
int rope_gpu_forward_zero_freq(E *q_out, E *k_out, const E *qkv, const rope_shape *s, const rope_tables *tb);
template <typename E>
int rope_gpu_backward_zero_freq(E *dqkv, const E *dq_out, const E *dk_out, const rope_shape *s,
                                const rope_tables *tb);
template <typename E> int rope_gpu_forward_fused(E *qkv, const rope_shape *s, const rope_tables *tb);
// The rotation by -angle (its transpose), in place in dqkv's q and k blocks.
template <typename E> int rope_gpu_backward_fused(E *dqkv, const rope_shape *s, const rope_tables *tb);

#endif
