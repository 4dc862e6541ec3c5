/* gpt_internal.h: what model/gpt.c (forward, backward), model/gpt_prec.c (the precisions'
 * operations), model/gpt_alloc.c (sizes, slabs) and model/gpt_state.c (parameters, gradients,
 * optimizer state) share; not for other modules. */
#ifndef CB_GPT_INTERNAL_H
#define CB_GPT_INTERNAL_H

#include "../common/timer.h"
#include "../kernels/attention.h"
#include "../kernels/kernels.h"
#include "gpt.h"
#include "gpt_prec.h"

/* A void kernel call, timed under `kind` in the model's profile. */
#define TIMED(m, kind, stmt)                           \
    do {                                               \
        double t0_ = timer_now_s();                    \
        stmt;                                          \
        (m)->prof.kind_s[kind] += timer_now_s() - t0_; \
    } while (0)

/* A kernel that can fail (kernels/kernels.h): timed like TIMED; its error code ends the calling
 * function with one message naming the kernel. */
#define CHECKED(m, kind, call)                                                  \
    do {                                                                        \
        double t0_ = timer_now_s();                                             \
        int rc_ = (call);                                                       \
        (m)->prof.kind_s[kind] += timer_now_s() - t0_;                          \
        if (rc_ != KERNEL_OK) return gpt_kernel_failed(#call, rc_);             \
    } while (0)

/* Parameter k's fp32 slice (or gradient slice) for layer l of `per` values; NULL when the
 * architecture has no such tensor. */
static inline const float *gpt_param(const gpt_model *m, int k, int l, size_t per)
{
    return m->w.sizes[k] ? m->w.p[k] + (size_t)l * per : NULL;
}
static inline float *gpt_grad(const gpt_model *m, int k, int l, size_t per)
{
    return m->w.sizes[k] ? m->w.g[k] + (size_t)l * per : NULL;
}

/* The rotary and attention kernels' shapes for this model. */
static inline rope_shape gpt_rope_of(const gpt_model *m)
{
    const model_config *c = &m->cfg;
    rope_shape rs = {.B = m->B, .T = m->T, .NH = c->NH, .HS = c->HS, .r = m->rotary_dims, .kvh = model_kv_heads(c),
                     .gptj = c->rope == ROPE_GPTJ};
    return rs;
}
static inline attn_shape gpt_attn_of(const gpt_model *m)
{
    const model_config *c = &m->cfg;
    attn_shape s = {m->B, m->T, c->NH, model_kv_heads(c), c->HS, c->pos == POS_ALIBI ? m->alibi : NULL};
    return s;
}

/* Widths of an architecture's linear layers: QKV projection rows ((NH + 2 KVH) HS), the fused
 * first MLP linear's rows (ffn, or 2 ffn for SwiGLU's gate and up), the MLP width (ffn). */
typedef struct {
    size_t QKV, FC, I;
} gpt_widths;
static inline gpt_widths gpt_widths_of(const model_config *c)
{
    size_t I = (size_t)model_ffn(c);
    gpt_widths w = {(size_t)(c->NH + 2 * model_kv_heads(c)) * (size_t)c->HS, (size_t)model_mlp_in_rows(c), I};
    return w;
}
/* 1 when the norms have a bias (LayerNorm unless norm_nobias; RMSNorm never). */
static inline int gpt_norm_has_bias(const model_config *c) { return c->norm == NORM_LAYERNORM && !c->norm_nobias; }
/* Floats of the attention backward's scratch for this architecture at B x T on `threads`. */
size_t gpt_attention_scratch(const model_config *c, int B, int T, int threads);

/* The parameter, gradient and AdamW slabs of m (sizes and offsets set) for its precision, with
 * the pointer tables p, g and p_bf16. Returns 0 or CB_EFAIL. */
int gpt_state_alloc(gpt_model *m);
void gpt_state_free(gpt_model *m);
/* Floats of the fp32 parameter slab: every tensor (fp32 storage), or the fp32 copies of the
 * small ones (bf16 storage). */
size_t gpt_state_fp32_floats(const size_t *sizes, elem_type store);

#endif
