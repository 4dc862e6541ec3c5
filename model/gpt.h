/* gpt.h: the decoder of every family costbench trains, as Hugging Face defines it: by default
 * GPTNeoXForCausalLM (token embedding, per layer input and post-attention LayerNorm, fused QKV
 * with bias laid out per head, partial rotary on q and k, causal attention scaled by 1/sqrt(HS),
 * output projection, MLP 4x with exact GELU, parallel residual x + attn(ln1(x)) + mlp(ln2(x)),
 * final LayerNorm, untied output projection without bias, cross-entropy); and what the
 * model_config's architecture fields change (common/presets.h): RMSNorm, SwiGLU, grouped-query
 * attention and full rotary (LlamaForCausalLM); one LayerNorm feeding attention and MLP,
 * interleaved rotary pairs, MLP and output-layer biases (GPTJForCausalLM); ALiBi, LayerNorm
 * without bias, no linear biases, tied embeddings (MPTForCausalLM); learned positions, sequential
 * residual, tied embeddings (the GPT-3 presets).
 *
 * Precision (gpt_init chooses its row of model/gpt_prec.c's table of operations): fp32
 * throughout, or bf16-mixed as PyTorch autocast and Megatron's --bf16 do it: fp32 master weights,
 * gradients and AdamW moments; a bf16 copy of every weight, made once per optimizer step; the
 * inputs of every linear layer (the norm outputs, the attention output, the MLP activation's
 * output, the final norm's output), the QKV projection's output (q, k after rotary and v), the
 * attention probabilities and the gradients fed into the linear layers' backward (d(logits)
 * included) in bf16, every product accumulating in fp32 (oneDNN); the norms' statistics, softmax
 * statistics, the MLP activation's input, the residual stream, the logits, the cross-entropy,
 * the weight and bias gradients and all reductions in fp32.
 *
 * Full bf16 (bf16-sr, bf16-nearest): the weights, gradients and both AdamW moments in bf16 (the
 * gradients accumulate in an fp32 buffer during the step, micro-batches and the all-reduce
 * included, and are rounded to bf16 as they enter the update); the update computed in fp32 and
 * written back stochastically rounded (bf16-sr; its alias bf16) or rounded to nearest even
 * (bf16-nearest), kernels/adamw.h; products and activations as in bf16-mixed, the weight
 * matrices packed straight from bf16.
 *
 * Memory: one slab per kind (parameters, gradients, AdamW moments, activations), 64-byte
 * aligned, allocated up front after the estimate has been checked against this machine.
 *
 * Profile: the model times its own kernels by operation kind (gpt_profile); callers read it and
 * never write it, except gpt_profile_reset. */
#ifndef CB_GPT_H
#define CB_GPT_H

#include <stddef.h>

#include "../kernels/adamw.h"
#include "../kernels/bf16.h"
#include "../kernels/linear_bf16.h"
#include "../kernels/rope.h"
#include "../common/params.h"
#include "../common/presets.h"

/* The parameter tensors P_WTE .. P_UNEMBEDB and what each is: common/params.h. Hugging Face
 * names: model/hfnames.h. */

/* An element type of a buffer: fixed when the buffer is allocated. */
typedef enum { ELEM_F32, ELEM_BF16 } elem_type;
static inline size_t elem_size(elem_type t) { return t == ELEM_BF16 ? sizeof(bf16) : sizeof(float); }

/* An activation whose dtype the precision decides (gpt_prec.h's act): float * or bf16 * in p. */
typedef struct {
    void *p;
    elem_type t;
} act_t;

/* The dtypes a precision gives the products' inputs (act) and the weights and moments (store). */
elem_type gpt_prec_act(train_precision p);
elem_type gpt_prec_store(train_precision p);

/* Per-layer activations saved for backward (with recomputation only layer inputs are kept and
 * one layer's worth of the rest is rebuilt in backward). QKV = (NH + 2 KVH) HS, FC =
 * model_mlp_in_rows (ffn, or 2 ffn for SwiGLU), I = ffn (common/params.h). */
typedef struct {
    act_t ln1;                   /* (BT, C) norm 1's output */
    float *ln1_mean, *ln1_rstd;  /* (BT), (BT); mean: LayerNorm only */
    act_t qkv;                   /* (BT, QKV) after rotary */
    float *lse;                  /* (B, NH, T) each query's log-sum-exp, for the attention backward */
    act_t atty;                  /* (BT, NH HS = C) attention output */
    float *attproj;              /* (BT, C) attention block output (one buffer shared by every layer) */
    float *res2;                 /* (BT, C) x + attn (sequential residual only) */
    act_t ln2;                   /* (BT, C) norm 2's output (not with a shared norm) */
    float *ln2_mean, *ln2_rstd;  /* (BT), (BT) */
    float *fch;                  /* (BT, FC) the MLP's first linear */
    act_t fchg;                  /* (BT, I) after the MLP's activation */
} gpt_layer_acts;

/* Operation kinds of a step's time (the breakdown's rows): norm times LayerNorm and RMSNorm,
 * mlp_act GELU and SwiGLU. */
typedef enum {
    K_MATMUL,
    K_ATTENTION,
    K_ROTARY,
    K_NORM,
    K_MLP_ACT,
    K_XENT,
    K_OPTIMIZER,
    K_OTHER,
    GPT_KIND_COUNT
} gpt_kind;
extern const char *const gpt_kind_names[GPT_KIND_COUNT];

typedef struct {
    double kind_s[GPT_KIND_COUNT]; /* seconds in each kind's kernels since the last reset */
} gpt_profile;

typedef struct {
    double params, grads, moments, acts_kept, acts_layer, logits, scratch, total;
    double weights_bf16; /* bf16-mixed and full bf16: the packed bf16 copies of the weight matrices (0 in fp32) */
    double acts_full_no_recompute, acts_full_recompute; /* for the printed comparison */
} gpt_mem;

/* The weights and their optimizer state. sizes, offsets and nparams place every parameter tensor
 * in the slabs (each tensor 64-byte aligned; nparams counts the padded elements). store is the
 * element type of the weights' master copy and of both AdamW moments (the precision row's store):
 * fp32 storage keeps every tensor in params and the moments as float; bf16 storage (bf16-sr,
 * bf16-nearest) keeps every tensor in params_bf16 and the moments as bf16, and params then holds fp32
 * copies of the small tensors only (norm weights and biases, linear biases: what the fp32 kernels
 * read, remade by gpt_params_changed and by the update), so both slabs and both views (p[k] fp32,
 * NULL for the embeddings and matrices; p_bf16[k] bf16) are needed there. The gradients accumulate
 * in fp32 in every precision. m and v are one handle each, of type store, holding the moments of params
 * [mom_lo, mom_hi) only (the whole range, or a ZeRO-1 shard). */
typedef struct {
    size_t sizes[P_COUNT], offsets[P_COUNT], nparams;
    elem_type store;               /* the weights' master copy and the AdamW moments */
    float *params;                 /* (nparams) fp32 storage; bf16 storage: the small tensors' fp32 copies */
    bf16 *params_bf16;             /* (nparams) bf16 storage only (else NULL) */
    float *grads;                  /* (nparams) */
    void *m, *v;                   /* (mom_hi - mom_lo) AdamW moments, float * or bf16 * as store says */
    float *p[P_COUNT], *g[P_COUNT]; /* views into params (NULL where bf16 storage has no copy), grads */
    bf16 *p_bf16[P_COUNT];         /* views into params_bf16 (bf16 storage only) */
    size_t mom_lo, mom_hi;         /* AdamW moments held for params [mom_lo, mom_hi) (ZeRO-1 shard) */
    int adam_t;                    /* AdamW steps taken */
    unsigned long long sr_seed;    /* stochastic rounding's seed: gpt_init_weights' seed */
} gpt_weights;

/* The weight cache: the bf16 copies of the weight matrices (forward and input-gradient layouts)
 * per layer, packed by the precision's row (pack_weight) before a forward when they are stale;
 * empty where the products read fp32 weights. Anything that changes the weights marks it stale
 * (fresh = 0). */
typedef struct {
    linear_bf16_weight *lw[P_COUNT]; /* QKVW, ATTPROJW, FCW, FCPROJW: (L) each; UNEMBED: (1); else NULL */
    linear_bf16_weight *store;       /* (4 L + 1) what lw points into */
    int fresh;                       /* the cache matches the weights */
} gpt_wcache;

/* The activations: one slab per element type (acts fp32, acts_bf16 bf16, empty in fp32), carved by
 * gpt_alloc.c's size table into the views below; and the backward's scratch, carved from the same
 * slabs. QKV, FC, I as in gpt_layer_acts. */
typedef struct {
    float *acts;                   /* the fp32 activations */
    bf16 *acts_bf16;               /* the bf16 activations (empty in fp32) */
    float *x;                      /* (L+1, BT, C) layer inputs; x[L] is the last layer's output */
    gpt_layer_acts *layer;         /* (L) views, all the same one with recompute */
    act_t lnf;                     /* (BT, C) final norm's output */
    float *lnf_mean, *lnf_rstd, *logits, *lse, *losses; /* (BT) (BT) (BT,V) (BT) (BT) */
    /* backward scratch: (BT,C) (BT,C) (BT,QKV) (BT,C) (BT,FC) (BT) */
    float *dres, *dln, *dqkv, *datty, *dfch, *dlosses;
    float *dln2;                   /* shared norm: the MLP branch's d(norm output) (else NULL) */
    float *dact;                   /* d(MLP activation output) (BT, I): SwiGLU's own buffer, GELU's is dfch */
    /* the gradients as the bf16 products read them (empty where the products read fp32): d(layer
     * output) (BT, C), d(a linear layer's output) (BT, max(QKV, FC, I)), d(logits) (BT, V) */
    struct {
        act_t dres, dlin, dlogits;
    } dn;
    float *datt_scratch;           /* attention_scratch_floats(T, HS, att_threads) */
    int att_threads;
    /* any bf16 precision: the scale of the d(logits) the last forward computed (its
     * backward_scale); a backward given another scale makes a second pass */
    float dlogits_scale;
} gpt_acts;

typedef struct gpt_model_s {
    model_config cfg;
    int B, T, recompute;
    train_precision prec;
    const struct gpt_prec_ops_s *ops; /* the precision's row of operations (model/gpt_prec.h) */
    gpt_weights w;
    gpt_wcache cache;
    gpt_acts a;
    float *rope_store;
    rope_tables rope;
    int rotary_dims;
    float *alibi;                  /* (NH) ALiBi slopes (pos == POS_ALIBI), carved with the activations */
    int *inputs, *targets;         /* (B, T) */
    gpt_profile prof;
} gpt_model;

/* Told by gpt_backward as gradients become final: layer == L after the output layer and the
 * final norm, layer l after layer l, -1 after the embeddings. */
typedef struct {
    void (*ready)(void *ctx, const gpt_model *m, int layer);
    void *ctx;
} gpt_grads_hook;

/* Hugging Face tensor name of parameter k (layer i for per-layer ones) into buf. */
void gpt_param_name(const gpt_model *m, int k, int layer, char *buf, size_t n);

/* Memory the configuration needs (without allocating): the same activation size table gpt_init
 * carves. */
void gpt_estimate(const model_config *cfg, int B, int T, int recompute, train_precision prec, gpt_mem *mem);
/* Allocates the slabs (after the caller checked the estimate). Returns 0 or CB_EFAIL. */
int gpt_init(gpt_model *m, const model_config *cfg, int B, int T, int recompute, train_precision prec);
/* To be called after anything but gpt_update writes m->w.params (a load, a broadcast): the bf16
 * copy is remade before the next forward. */
void gpt_params_changed(gpt_model *m);
void gpt_free(gpt_model *m);
/* Hugging Face's GPTNeoXPreTrainedModel._init_weights, as the PyTorch peer in ../shared/peers
 * does: every Linear and Embedding weight N(0, 0.02) (the output layers too: GPT-NeoX's own
 * small_init / wang_init schemes are not used), biases 0, LayerNorm weight 1 and bias 0;
 * deterministic in seed. The AdamW moments and step count start at 0. */
void gpt_init_weights(gpt_model *m, unsigned long long seed);

/* Forward over inputs/targets (B, T) already copied into m->inputs, m->targets: the mean loss
 * into *loss. The logits stay in m->a.logits until the backward turns them into their gradient;
 * backward_scale is the scale the coming gpt_backward will be given (the bf16 precisions compute
 * d(logits) for it in the forward's pass over the logits). Returns 0, or CB_EFAIL after one error
 * line when a kernel refuses its arguments. */
int gpt_forward(gpt_model *m, float backward_scale, double *loss);
/* Backward of the last forward; gradients accumulate (+=) into m->w.grads scaled by `scale`
 * (1 / accumulation steps); hook (NULL: none) is told as they become final. Returns 0 or
 * CB_EFAIL, as gpt_forward. */
int gpt_backward(gpt_model *m, float scale, const gpt_grads_hook *hook);
void gpt_zero_grad(gpt_model *m);
/* Sum of squares of the gradients of params [lo, hi) (the global L2 norm's square over all of
 * them), timed as optimizer work. */
double gpt_grad_sumsq(gpt_model *m, size_t lo, size_t hi);
/* Global L2 norm of all the gradients. */
double gpt_grad_norm(gpt_model *m);
void gpt_profile_reset(gpt_model *m);
/* Where a non-finite value is, for a message after a non-finite loss or gradient norm: the first
 * parameter tensor holding one, else the first non-finite activation (layer inputs, logits), else
 * the first gradient tensor. Writes a phrase such as "parameter 'gpt_neox.layers.0.mlp...': 3 of
 * 4096 values non-finite" into buf; returns 0 when everything is finite. */
int gpt_find_nonfinite(const gpt_model *m, char *buf, size_t n);
/* ZeRO-1: keep the AdamW moments of params [lo, hi) only (m->w.m and m->w.v,
 * shrink to hi - lo elements copied from the full ones) and update only that range. Returns 0 or
 * CB_EFAIL. */
int gpt_shard_moments(gpt_model *m, size_t lo, size_t hi);
/* Clips to max_norm (if > 0), then AdamW at learning rate lr on the params whose moments this
 * model holds (all, or the ZeRO-1 shard): weight decay on matrices and embeddings only. Returns
 * the count of weights it left non-finite (0: all finite; gpt_find_nonfinite says where). */
size_t gpt_update(gpt_model *m, const adamw_params *hp, double grad_norm, float max_norm);

#endif
