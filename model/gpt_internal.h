/* gpt_internal.h: what model/gpt.c (forward, backward) and model/gpt_state.c (parameters,
 * gradients, optimizer state) share; not for other modules. */
#ifndef CB_GPT_INTERNAL_H
#define CB_GPT_INTERNAL_H

#include "../common/timer.h"
#include "gpt.h"

/* A void kernel call, timed under `kind` in the model's profile. */
#define TIMED(m, kind, stmt)                           \
    do {                                               \
        double t0_ = timer_now_s();                    \
        stmt;                                          \
        (m)->prof.kind_s[kind] += timer_now_s() - t0_; \
    } while (0)

/* Widths of an architecture's linear layers: QKV projection rows ((NH + 2 KVH) HS), the fused
 * first MLP linear's rows (ffn, or 2 ffn for SwiGLU's gate and up), the MLP width (ffn). */
typedef struct {
    size_t QKV, FC, I;
} gpt_widths;
static inline gpt_widths gpt_widths_of(const model_config *c)
{
    size_t I = (size_t)model_ffn(c);
    gpt_widths w = {(size_t)(c->NH + 2 * model_kv_heads(c)) * (size_t)c->HS, (c->mlp == MLP_SWIGLU ? 2 : 1) * I, I};
    return w;
}
/* 1 when the norms have a bias (LayerNorm unless norm_nobias; RMSNorm never). */
static inline int gpt_norm_has_bias(const model_config *c) { return c->norm == NORM_LAYERNORM && !c->norm_nobias; }
/* Floats of the attention backward's scratch for this architecture at B x T on `threads`. */
size_t gpt_attention_scratch(const model_config *c, int B, int T, int threads);

/* The parameter, gradient and AdamW slabs of m (sizes and offsets set) for its precision, with
 * the pointer tables p, g and ph. Returns 0 or CB_EFAIL. */
int gpt_state_alloc(gpt_model *m);
void gpt_state_free(gpt_model *m);
/* Floats of the fp32 parameter slab: every tensor (fp32, bf16-mixed), or the small ones only
 * (full bf16). */
size_t gpt_state_fp32_floats(const size_t *sizes, train_precision prec);

#endif
