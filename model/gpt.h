/* gpt.h: a GPT-NeoX-style decoder as Hugging Face's GPTNeoXForCausalLM defines it (token
 * embedding, per layer input and post-attention LayerNorm, fused QKV with bias laid out per head,
 * partial rotary on q and k, causal attention scaled by 1/sqrt(HS), output projection, MLP 4x
 * with exact GELU, parallel residual x + attn(ln1(x)) + mlp(ln2(x)), final LayerNorm, untied
 * output projection without bias, cross-entropy); the GPT-3 presets (learned positions,
 * sequential residual, tied embeddings) run through the same code. fp32.
 *
 * Memory: one slab per kind (parameters, gradients, AdamW moments, activations), 64-byte
 * aligned, allocated up front after the estimate has been checked against this machine. */
#ifndef CB_GPT_H
#define CB_GPT_H

#include <stddef.h>

#include "../kernels/adamw.h"
#include "../kernels/rope.h"
#include "../common/presets.h"

/* Parameter tensors, in Hugging Face order; (L, ...) ones hold every layer back to back. */
enum {
    P_WTE,      /* (V, C)       gpt_neox.embed_in.weight */
    P_WPE,      /* (maxT, C)    learned positions (GPT-3 presets), else empty */
    P_LN1W,     /* (L, C)       layers.i.input_layernorm.weight */
    P_LN1B,     /* (L, C) */
    P_QKVW,     /* (L, 3C, C)   layers.i.attention.query_key_value.weight, per head (q, k, v) */
    P_QKVB,     /* (L, 3C) */
    P_ATTPROJW, /* (L, C, C)    layers.i.attention.dense.weight */
    P_ATTPROJB, /* (L, C) */
    P_LN2W,     /* (L, C)       layers.i.post_attention_layernorm.weight */
    P_LN2B,     /* (L, C) */
    P_FCW,      /* (L, 4C, C)   layers.i.mlp.dense_h_to_4h.weight */
    P_FCB,      /* (L, 4C) */
    P_FCPROJW,  /* (L, C, 4C)   layers.i.mlp.dense_4h_to_h.weight */
    P_FCPROJB,  /* (L, C) */
    P_LNFW,     /* (C)          gpt_neox.final_layer_norm.weight */
    P_LNFB,     /* (C) */
    P_UNEMBED,  /* (V, C)       embed_out.weight; empty when tied to wte */
    P_COUNT
};

/* Per-layer activations saved for backward (with recomputation only layer inputs are kept and
 * one layer's worth of the rest is rebuilt in backward). */
typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd; /* (BT, C), (BT), (BT) */
    float *qkv;                       /* (BT, 3C) after rotary */
    float *att;                       /* (B, NH, T, T) */
    float *atty;                      /* (BT, C) */
    float *attproj;                   /* (BT, C) attention block output */
    float *res2;                      /* (BT, C) x + attn (sequential residual only) */
    float *ln2, *ln2_mean, *ln2_rstd; /* (BT, C), (BT), (BT) */
    float *fch, *fchg;                /* (BT, 4C) before and after GELU */
} gpt_layer_acts;

typedef struct {
    double params, grads, moments, acts_kept, acts_layer, logits, scratch, total;
    double acts_full_no_recompute, acts_full_recompute; /* for the printed comparison */
} gpt_mem;

typedef struct gpt_model_s {
    model_config cfg;
    int B, T, recompute;
    size_t sizes[P_COUNT], offsets[P_COUNT], nparams;
    float *params, *grads, *m, *v; /* slabs */
    float *p[P_COUNT], *g[P_COUNT];
    float *rope_store;
    rope_tables rope;
    int rotary_dims;
    /* activations */
    float *acts;                   /* slab */
    float *x;                      /* (L+1, BT, C) layer inputs; x[L] is the last layer's output */
    gpt_layer_acts *layer;         /* (L) views, all the same one with recompute */
    float *lnf, *lnf_mean, *lnf_rstd, *logits, *lse, *losses; /* (BT,C) (BT) (BT) (BT,V) (BT) (BT) */
    float *dres, *dln, *dqkv, *datty, *dfch, *datt_scratch, *dlosses; /* backward scratch */
    int *inputs, *targets;         /* (B, T) */
    int adam_t;
    size_t mom_lo, mom_hi;         /* AdamW moments held for params [mom_lo, mom_hi) (ZeRO-1 shard) */
    double last_loss;
    /* time per op kind of the last step, seconds */
    double t_kind[8];
    /* called by gpt_backward when gradients become final: layer == L after the output layer and
     * the final LayerNorm, layer l after layer l, -1 after the embeddings (NULL: not called) */
    void (*grads_ready)(void *ctx, const struct gpt_model_s *m, int layer);
    void *grads_ready_ctx;
} gpt_model;

enum { K_MATMUL, K_ATTENTION, K_ROTARY, K_LAYERNORM, K_GELU, K_XENT, K_OPTIMIZER, K_OTHER };
extern const char *const gpt_kind_names[8];

/* Hugging Face tensor name of parameter k (layer i for per-layer ones) into buf. */
void gpt_param_name(const gpt_model *m, int k, int layer, char *buf, size_t n);

/* Memory the configuration needs (without allocating). */
void gpt_estimate(const model_config *cfg, int B, int T, int recompute, gpt_mem *mem);
/* Allocates the slabs (after the caller checked the estimate). Returns 0 or CB_EFAIL. */
int gpt_init(gpt_model *m, const model_config *cfg, int B, int T, int recompute);
void gpt_free(gpt_model *m);
/* GPT-NeoX initialisation (normal 0.02 for weights, small_init for the output layers as
 * 0.02 / sqrt(2 L)... deterministic in seed); biases zero, LayerNorm weight 1. */
void gpt_init_weights(gpt_model *m, unsigned long long seed);

/* Forward over inputs/targets (B, T) already copied into m->inputs, m->targets; returns the mean
 * loss. With need_grad = 0 the logits are kept as logits. */
double gpt_forward(gpt_model *m);
/* Backward of the last forward; gradients accumulate (+=) into m->grads scaled by `scale`
 * (1 / accumulation steps). */
void gpt_backward(gpt_model *m, float scale);
void gpt_zero_grad(gpt_model *m);
/* Global L2 norm of the gradients. */
double gpt_grad_norm(const gpt_model *m);
/* ZeRO-1: keep the AdamW moments of params [lo, hi) only (m->m and m->v shrink to hi - lo floats,
 * copied from the full ones) and update only that range. Returns 0 or CB_EFAIL. */
int gpt_shard_moments(gpt_model *m, size_t lo, size_t hi);
/* Clips to max_norm (if > 0), then AdamW at learning rate lr on the params whose moments this
 * model holds (all, or the ZeRO-1 shard): weight decay on matrices and embeddings only. */
void gpt_update(gpt_model *m, const adamw_params *hp, double grad_norm, float max_norm);

#endif
