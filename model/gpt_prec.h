/* gpt_prec.h: a training precision as one row of a table of operations (model/gpt_prec.c),
 * chosen once by gpt_init from the precision: the forward and backward (gpt.c) and the optimizer
 * step (gpt_state.c) call through the row and never test the precision. A row says which dtype
 * the activations the products read have (act) and how the weights and the AdamW moments are
 * stored (store: common/precision.h's weights_bf16 as an element type; the updates' rounding is
 * read from that table), and gives the kernels of each precision-dependent step. Adding a
 * precision is adding a row. Not for modules outside model/. */
#ifndef CB_GPT_PREC_H
#define CB_GPT_PREC_H

#include "gpt.h"

typedef struct gpt_prec_ops_s {
    train_precision prec;
    elem_type act;   /* the products' inputs (norm outputs, q k v, attention and MLP activation outputs) */
    elem_type store; /* the embeddings and matrices (every tensor's master copy) and both AdamW moments */
    /* The bf16 copies of weight matrix k's layer l (IC inputs, OC outputs) in the weight cache
     * (m->cache.lw); nothing where the products read fp32 weights. */
    int (*pack_weight)(gpt_model *m, int k, int l, int IC, int OC, int out_bf16, int bias);
    /* m->a.x's first slice: token (and learned position) embeddings of m->inputs. */
    void (*embed_forward)(gpt_model *m);
    /* Norm (kw, kb) of layer l of x into out (its dtype), with the statistics for the backward. */
    void (*norm_forward)(gpt_model *m, act_t out, float *mean, float *rstd, const float *x, int kw, int kb, int l);
    /* out = in W^T + b for weight tensor kw of layer l (IC inputs, OC outputs); out in its dtype. */
    int (*linear_forward)(gpt_model *m, act_t out, act_t in, int kw, int kb, int l, int IC, int OC);
    /* dinp = dout W (overwritten); dW and db accumulate. dout is fp32, dout_n the same gradient as
     * narrow_grad made it (what the products read), in the forward's input `in`. */
    int (*linear_backward)(gpt_model *m, float *dinp, const float *dout, act_t dout_n, act_t in, int kw, int kb, int l,
                           int IC, int OC);
    /* The gradient src (n values) as the linear layers' backward reads it: src itself, or its
     * copy into dst (the dtype of dst). */
    act_t (*narrow_grad)(gpt_model *m, act_t dst, const float *src, size_t n);
    /* Rotary embedding of q and k in place in qkv. */
    void (*rope_forward)(gpt_model *m, act_t qkv);
    /* a->atty and a->lse from a->qkv; and m->a.dqkv from m->a.datty (and what the forward saved). */
    void (*attention_forward)(gpt_model *m, gpt_layer_acts *a);
    void (*attention_backward)(gpt_model *m, const gpt_layer_acts *a);
    /* The MLP's activation (GELU, or SwiGLU of the gate and up halves) of a->fch into a->fchg. */
    void (*mlp_act_forward)(gpt_model *m, gpt_layer_acts *a);
    /* The output layer on m->a.lnf into m->a.logits, the cross-entropy into m->a.losses (and, where the
     * row fuses it, d(logits) for backward_scale); and the output layer's backward from the
     * logits into m->a.dln, with its weight and bias gradients (m->a.dlosses set). */
    int (*head_forward)(gpt_model *m, float backward_scale);
    int (*head_backward)(gpt_model *m, float scale);
    /* AdamW on params [a, b) of tensor k (inside the held moment range): the count of weights it
     * left non-finite. */
    size_t (*update_range)(gpt_model *m, int k, size_t a, size_t b, const adamw_params *h);
} gpt_prec_ops;

/* The row of precision p. */
const gpt_prec_ops *gpt_prec_ops_of(train_precision p);

/* One line about a kernel that refused its arguments (or whose backend failed); CB_EFAIL. */
int gpt_kernel_failed(const char *call, int code);

#endif
