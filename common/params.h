/* params.h: the parameter tensors of every architecture costbench trains, and what each one is:
 * per layer or model-wide, a weight matrix (or an embedding), a bias, a norm weight; and its shape
 * under a model_config. One table (param_table) that sizes, initialisation, weight decay, storage
 * in full bf16, ZeRO ranges, Hugging Face names, the parameter counts and the non-finite search all
 * read. Plain data and arithmetic: the shared layer, used by the model and the report alike. */
#ifndef CB_PARAMS_H
#define CB_PARAMS_H

#include <stddef.h>

#include "presets.h"

/* Parameter tensors, in Hugging Face order; (L, ...) ones hold every layer back to back. QKV =
 * model_qkv_rows = (NH + 2 KVH) HS rows in the group layout (per kv head g: its G = NH/KVH query heads, k_g, v_g;
 * GPT-NeoX's per-head [q, k, v] when KVH = NH); FC = model_mlp_in_rows (ffn for GELU; 2 ffn for
 * SwiGLU: gate, then up); I = ffn. Tensors an architecture lacks (biases, the second norm of a
 * shared norm, learned positions, an untied output layer) are empty. */
enum {
    P_WTE,      /* (V, C)       token embedding */
    P_WPE,      /* (maxT, C)    learned positions (GPT-3 presets), else empty */
    P_LN1W,     /* (L, C)       input norm */
    P_LN1B,     /* (L, C) */
    P_QKVW,     /* (L, QKV, C)  fused q, k, v projection */
    P_QKVB,     /* (L, QKV) */
    P_ATTPROJW, /* (L, C, C)    attention output */
    P_ATTPROJB, /* (L, C) */
    P_LN2W,     /* (L, C)       post-attention norm */
    P_LN2B,     /* (L, C) */
    P_FCW,      /* (L, FC, C)   MLP in (GELU) or gate and up (SwiGLU) */
    P_FCB,      /* (L, FC) */
    P_FCPROJW,  /* (L, C, I)    MLP out */
    P_FCPROJB,  /* (L, C) */
    P_LNFW,     /* (C)          final norm */
    P_LNFB,     /* (C) */
    P_UNEMBED,  /* (V, C)       output layer; empty when tied to wte */
    P_UNEMBEDB, /* (V)          the output layer's bias (GPT-J), else empty */
    P_COUNT
};

/* What a parameter tensor is (the same for every architecture). */
typedef enum {
    PARAM_EMBEDDING, /* token or position embedding: N(0, 0.02), decayed, bf16 in full bf16 */
    PARAM_MATRIX,    /* a linear layer's weight: N(0, 0.02), decayed, bf16 in full bf16 */
    PARAM_NORM,      /* a norm's weight: 1, not decayed, fp32 */
    PARAM_BIAS,      /* a linear layer's or a norm's bias: 0, not decayed, fp32 */
} param_role;

typedef struct {
    const char *name;  /* short name for messages: "qkv.weight" */
    param_role role;
    int per_layer;     /* (L, ...): one per layer, back to back */
} param_info;

extern const param_info param_table[P_COUNT];

/* Embeddings and matrices: weight-decayed, drawn N(0, 0.02), stored in bf16 with no fp32 copy in
 * full bf16, multiplied by the matmul kernels. */
static inline int param_is_weight(int k)
{
    return param_table[k].role == PARAM_EMBEDDING || param_table[k].role == PARAM_MATRIX;
}
static inline int param_is_bias(int k) { return param_table[k].role == PARAM_BIAS; }
static inline int param_per_layer(int k) { return param_table[k].per_layer; }

/* One layer's (or the model-wide) shape of parameter k under c: rows x cols (a vector: 1 x n),
 * 0 x 0 when the architecture lacks it. */
void param_shape(const model_config *c, int k, size_t *rows, size_t *cols);
/* Elements of parameter k, every layer included. */
size_t param_size(const model_config *c, int k);

#endif
