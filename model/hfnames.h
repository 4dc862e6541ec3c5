/* hfnames.h: Hugging Face tensor names and layouts of each family, so that checkpoints of
 * GPTNeoXForCausalLM (pythia, neox; the GPT-3 presets use its names too), LlamaForCausalLM,
 * GPTJForCausalLM and MPTForCausalLM load with --init and ours load in Hugging Face.
 *
 * One internal tensor slice (parameter k of layer l) is one or more Hugging Face tensors
 * ("pieces"): Llama's and GPT-J's q_proj, k_proj and v_proj are the q, k and v rows of the fused
 * QKV projection (group layout, gpt.h); MPT's Wqkv is [all q; all k; all v]; Llama's gate_proj and
 * up_proj are the two halves of the fused MLP linear. A piece's row r is internal row
 * hf_row(m, piece, r); 1-D tensors (biases) map elements the same way. */
#ifndef CB_HFNAMES_H
#define CB_HFNAMES_H

#include <stddef.h>
#include <stdint.h>

#include "gpt.h"

typedef enum {
    HF_ROWS, /* rows [row0, row0 + rows) as they are */
    HF_Q,    /* the q rows of the fused QKV, head by head */
    HF_K,    /* the k rows */
    HF_V,    /* the v rows */
    HF_QKV   /* [q; k; v] (MPT's Wqkv) */
} hf_map;

typedef struct {
    char name[112];
    int ndim;
    int64_t shape[2];
    hf_map map;
    size_t row0;  /* HF_ROWS: first internal row */
    size_t cols;  /* elements per row (1 for 1-D tensors) */
} hf_piece;

/* The pieces of parameter k's layer-l slice (empty tensors: 0). At most 3. */
int hf_pieces(const gpt_model *m, int k, int layer, hf_piece *out);
/* The internal row of piece row r. */
size_t hf_row(const gpt_model *m, const hf_piece *p, size_t r);
/* 1 when piece p is the slice's rows in order (no copy needed to read or write it). */
int hf_identity(const gpt_model *m, const hf_piece *p);

#endif
