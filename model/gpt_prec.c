/* gpt_prec.c: the training precisions as rows of one table of operations (gpt_prec.h). fp32
 * multiplies fp32 activations by the fp32 weights (OpenBLAS); bf16-mixed keeps fp32 weights and
 * moments and multiplies bf16 activations by bf16 copies of the weights (oneDNN); bf16-sr and
 * bf16-nearest store the weights and moments in bf16 too, and differ only in the update's
 * rounding. */
#include "gpt_prec.h"

#include <stdio.h>
#include <string.h>

#include "../common/err.h"
#include "../kernels/attention.h"
#include "../kernels/crossentropy.h"
#include "../kernels/gelu.h"
#include "../kernels/kernels.h"
#include "../kernels/layernorm.h"
#include "../kernels/matmul.h"
#include "../kernels/onednn.h"
#include "../kernels/rmsnorm.h"
#include "../kernels/swiglu.h"
#include "gpt_internal.h"

int gpt_kernel_failed(const char *call, int code)
{
    if (code == KERNEL_EBACKEND) return err_msg("%.*s: %s", (int)strcspn(call, "("), call, onednn_last_error());
    return err_msg("internal: %.*s refused its arguments: %s", (int)strcspn(call, "("), call, kernel_strerror(code));
}

static int bt_of(const gpt_model *m) { return m->B * m->T; }

/* ---------------------------------------------------------------- the weight cache */

static int pack_none(gpt_model *m, int k, int l, int IC, int OC, int out_bf16, int bias)
{
    (void)m, (void)k, (void)l, (void)IC, (void)OC, (void)out_bf16, (void)bias;
    return KERNEL_OK;
}

static int pack_from_f32(gpt_model *m, int k, int l, int IC, int OC, int out_bf16, int bias)
{
    const float *w = m->w.p[k] + (size_t)l * IC * OC;
    return linear_bf16_pack(&m->cache.lw[k][l], w, bt_of(m), IC, OC, out_bf16, bias);
}

static int pack_from_bf16(gpt_model *m, int k, int l, int IC, int OC, int out_bf16, int bias)
{
    const bf16 *w = m->w.p_bf16[k] + (size_t)l * IC * OC;
    return linear_bf16_pack_bf16(&m->cache.lw[k][l], w, bt_of(m), IC, OC, out_bf16, bias);
}

/* ---------------------------------------------------------------- embeddings */

static void embed_rows_f32(float *x0, const float *wte, const float *wpe, const int *in, int BT, int T, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < BT; i++) {
        const float *e = wte + (size_t)in[i] * C;
        float *o = x0 + (size_t)i * C;
        if (wpe) {
            const float *pe = wpe + (size_t)(i % T) * C;
            for (int k = 0; k < C; k++) o[k] = e[k] + pe[k];
        } else {
            memcpy(o, e, (size_t)C * sizeof(float));
        }
    }
}

static void embed_rows_bf16(float *x0, const bf16 *wte, const bf16 *wpe, const int *in, int BT, int T, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < BT; i++) {
        const bf16 *e = wte + (size_t)in[i] * C;
        float *o = x0 + (size_t)i * C;
        const bf16 *pe = wpe ? wpe + (size_t)(i % T) * C : NULL;
        for (int k = 0; k < C; k++) o[k] = bf16_to_float(e[k]) + (pe ? bf16_to_float(pe[k]) : 0.0f);
    }
}

static void embed_f32(gpt_model *m)
{
    const float *wpe = m->cfg.pos == POS_LEARNED ? m->w.p[P_WPE] : NULL;
    TIMED(m, K_OTHER, embed_rows_f32(m->a.x, m->w.p[P_WTE], wpe, m->inputs, bt_of(m), m->T, m->cfg.C));
}

static void embed_bf16(gpt_model *m)
{
    const bf16 *wpe = m->cfg.pos == POS_LEARNED ? m->w.p_bf16[P_WPE] : NULL;
    TIMED(m, K_OTHER, embed_rows_bf16(m->a.x, m->w.p_bf16[P_WTE], wpe, m->inputs, bt_of(m), m->T, m->cfg.C));
}

/* ---------------------------------------------------------------- norms, activations */

/* Into out's dtype: the norm kernels write fp32 or bf16. */
static void norm_out(gpt_model *m, act_t out, float *mean, float *rstd, const float *x, int kw, int kb, int l)
{
    const int BT = bt_of(m), C = m->cfg.C, bf = out.t == ELEM_BF16;
    const float *w = gpt_param(m, kw, l, (size_t)C), *b = gpt_param(m, kb, l, (size_t)C);
    const float eps = (float)model_norm_eps(&m->cfg);
    if (m->cfg.norm == NORM_RMSNORM && bf) TIMED(m, K_NORM, rmsnorm_forward_bf16(out.p, rstd, x, w, BT, C, eps));
    else if (m->cfg.norm == NORM_RMSNORM) TIMED(m, K_NORM, rmsnorm_forward(out.p, rstd, x, w, BT, C, eps));
    else if (bf) TIMED(m, K_NORM, layernorm_forward_bf16(out.p, mean, rstd, x, w, b, BT, C));
    else TIMED(m, K_NORM, layernorm_forward(out.p, mean, rstd, x, w, b, BT, C));
}

static void mlp_act_f32(gpt_model *m, gpt_layer_acts *a)
{
    const size_t BT = (size_t)bt_of(m), I = (size_t)model_ffn(&m->cfg);
    if (m->cfg.mlp == MLP_SWIGLU) TIMED(m, K_MLP_ACT, swiglu_forward(a->fchg.p, a->fch, (int)BT, (int)I));
    else TIMED(m, K_MLP_ACT, gelu_forward(a->fchg.p, a->fch, BT * I));
}

static void mlp_act_bf16(gpt_model *m, gpt_layer_acts *a)
{
    const size_t BT = (size_t)bt_of(m), I = (size_t)model_ffn(&m->cfg);
    if (m->cfg.mlp == MLP_SWIGLU) TIMED(m, K_MLP_ACT, swiglu_forward_bf16(a->fchg.p, a->fch, (int)BT, (int)I));
    else TIMED(m, K_MLP_ACT, gelu_forward_bf16(a->fchg.p, a->fch, BT * I));
}

/* ---------------------------------------------------------------- linear layers */

static int linear_forward_f32(gpt_model *m, act_t out, act_t in, int kw, int kb, int l, int IC, int OC)
{
    const float *bias = gpt_param(m, kb, l, (size_t)OC), *w = m->w.p[kw] + (size_t)l * IC * OC;
    CHECKED(m, K_MATMUL, matmul_forward(out.p, in.p, w, bias, bt_of(m), IC, OC));
    return 0;
}

/* bf16 input and weight copy into an fp32 or a bf16 result (out's dtype). */
static int linear_forward_bf16(gpt_model *m, act_t out, act_t in, int kw, int kb, int l, int IC, int OC)
{
    (void)IC;
    const float *bias = gpt_param(m, kb, l, (size_t)OC);
    float *out32 = out.t == ELEM_F32 ? out.p : NULL;
    bf16 *out16 = out.t == ELEM_BF16 ? out.p : NULL;
    CHECKED(m, K_MATMUL, linear_bf16_forward(out32, out16, in.p, &m->cache.lw[kw][l], bias));
    return 0;
}

static int linear_backward_f32(gpt_model *m, float *dinp, const float *dout, act_t dout_n, act_t in, int kw, int kb,
                               int l, int IC, int OC)
{
    (void)dout_n;
    const size_t wo = (size_t)l * IC * OC;
    float *dw = m->w.g[kw] + wo, *db = gpt_grad(m, kb, l, (size_t)OC);
    CHECKED(m, K_MATMUL, matmul_backward_input(dinp, dout, m->w.p[kw] + wo, bt_of(m), IC, OC));
    CHECKED(m, K_MATMUL, matmul_backward_weight(dw, db, dout, in.p, bt_of(m), IC, OC));
    return 0;
}

/* From the bf16 gradient (the fp32 one for the bias) and the bf16 input. */
static int linear_backward_bf16(gpt_model *m, float *dinp, const float *dout, act_t dout_n, act_t in, int kw, int kb,
                                int l, int IC, int OC)
{
    float *dw = m->w.g[kw] + (size_t)l * IC * OC, *db = gpt_grad(m, kb, l, (size_t)OC);
    CHECKED(m, K_MATMUL, linear_bf16_backward_input(dinp, dout_n.p, &m->cache.lw[kw][l]));
    CHECKED(m, K_MATMUL, linear_bf16_backward_weight(dw, db, dout_n.p, dout, in.p, bt_of(m), IC, OC));
    return 0;
}

static act_t narrow_none(gpt_model *m, act_t dst, const float *src, size_t n)
{
    (void)m, (void)dst, (void)n;
    return (act_t){(void *)src, ELEM_F32};
}

static act_t narrow_bf16(gpt_model *m, act_t dst, const float *src, size_t n)
{
    TIMED(m, K_OTHER, bf16_from_floats(dst.p, src, n));
    return dst;
}

/* ---------------------------------------------------------------- attention */

static void rope_f32(gpt_model *m, act_t qkv)
{
    const rope_shape rs = gpt_rope_of(m);
    TIMED(m, K_ROTARY, rope_forward_fused(qkv.p, &rs, &m->rope));
}

static void rope_bf16(gpt_model *m, act_t qkv)
{
    const rope_shape rs = gpt_rope_of(m);
    TIMED(m, K_ROTARY, rope_forward_fused_bf16(qkv.p, &rs, &m->rope));
}

static void attn_forward_f32(gpt_model *m, gpt_layer_acts *a)
{
    const attn_shape as = gpt_attn_of(m);
    TIMED(m, K_ATTENTION, attention_forward_gqa(a->atty.p, a->lse, a->qkv.p, &as));
}

static void attn_forward_bf16(gpt_model *m, gpt_layer_acts *a)
{
    const attn_shape as = gpt_attn_of(m);
    TIMED(m, K_ATTENTION, attention_forward_gqa_bf16(a->atty.p, a->lse, a->qkv.p, &as));
}

static void attn_backward_f32(gpt_model *m, const gpt_layer_acts *a)
{
    const attn_shape as = gpt_attn_of(m);
    TIMED(m, K_ATTENTION,
          attention_backward_gqa(m->a.dqkv, m->a.datt_scratch, m->a.att_threads, m->a.datty, a->qkv.p, a->atty.p,
                                 a->lse, &as));
}

static void attn_backward_bf16(gpt_model *m, const gpt_layer_acts *a)
{
    const attn_shape as = gpt_attn_of(m);
    TIMED(m, K_ATTENTION,
          attention_backward_gqa_bf16(m->a.dqkv, m->a.datt_scratch, m->a.att_threads, m->a.datty, a->qkv.p, a->atty.p,
                                      a->lse, &as));
}

/* ---------------------------------------------------------------- the output layer */

static int head_forward_f32(gpt_model *m, float backward_scale)
{
    (void)backward_scale;
    const int BT = bt_of(m), C = m->cfg.C, V = m->cfg.V;
    const float *bias = gpt_param(m, P_UNEMBEDB, 0, 0);
    CHECKED(m, K_MATMUL, matmul_forward(m->a.logits, m->a.lnf.p, m->w.p[P_UNEMBED], bias, BT, C, V));
    CHECKED(m, K_XENT, crossentropy_forward(m->a.losses, m->a.lse, m->a.logits, m->targets, BT, V));
    return 0;
}

/* The loss and the bf16 d(logits) of the coming backward in one pass over the logits. */
static int head_forward_bf16(gpt_model *m, float backward_scale)
{
    const int BT = bt_of(m), V = m->cfg.V;
    const float *bias = gpt_param(m, P_UNEMBEDB, 0, 0);
    CHECKED(m, K_MATMUL, linear_bf16_forward(m->a.logits, NULL, m->a.lnf.p, m->cache.lw[P_UNEMBED], bias));
    for (int i = 0; i < BT; i++) m->a.dlosses[i] = backward_scale / (float)BT;
    CHECKED(m, K_XENT, crossentropy_fused_bf16(m->a.losses, m->a.lse, m->a.dn.dlogits.p, m->a.logits, m->a.dlosses,
                                               m->targets, BT, V));
    m->a.dlogits_scale = backward_scale;
    return 0;
}

/* d(logits) in place of the logits, then through the output layer. */
static int head_backward_f32(gpt_model *m, float scale)
{
    (void)scale;
    const int BT = bt_of(m), C = m->cfg.C, V = m->cfg.V;
    float *db = gpt_grad(m, P_UNEMBEDB, 0, 0), *dlogits = m->a.logits;
    CHECKED(m, K_XENT, crossentropy_backward_inplace(m->a.logits, m->a.dlosses, m->a.lse, m->targets, BT, V));
    CHECKED(m, K_MATMUL, matmul_backward_input(m->a.dln, dlogits, m->w.p[P_UNEMBED], BT, C, V));
    CHECKED(m, K_MATMUL, matmul_backward_weight(m->w.g[P_UNEMBED], db, dlogits, m->a.lnf.p, BT, C, V));
    return 0;
}

/* Column sums of the bf16 d(logits) into the output layer's bias gradient. */
static void colsum_bf16_into(float *db, const bf16 *d, int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int v0 = 0; v0 < V; v0 += 256) {
        int v1 = v0 + 256 < V ? v0 + 256 : V;
        for (int i = 0; i < N; i++)
            for (int v = v0; v < v1; v++) db[v] += bf16_to_float(d[(size_t)i * V + v]);
    }
}

static int head_backward_bf16(gpt_model *m, float scale)
{
    const int BT = bt_of(m), C = m->cfg.C, V = m->cfg.V;
    float *db = gpt_grad(m, P_UNEMBEDB, 0, 0);
    bf16 *dlogits = m->a.dn.dlogits.p;
    /* the forward wrote d(logits) for its backward_scale; another scale needs a second pass */
    if (scale != m->a.dlogits_scale)
        CHECKED(m, K_XENT, crossentropy_backward_bf16(dlogits, m->a.dlosses, m->a.logits, m->a.lse, m->targets, BT, V));
    CHECKED(m, K_MATMUL, linear_bf16_backward_input(m->a.dln, dlogits, m->cache.lw[P_UNEMBED]));
    CHECKED(m, K_MATMUL, linear_bf16_backward_weight(m->w.g[P_UNEMBED], NULL, dlogits, NULL, m->a.lnf.p, BT, C, V));
    if (db) TIMED(m, K_MATMUL, colsum_bf16_into(db, dlogits, BT, V));
    return 0;
}

/* ---------------------------------------------------------------- the update */

static size_t update_f32(gpt_model *m, int k, size_t a, size_t b, const adamw_params *h)
{
    (void)k;
    const size_t mo = a - m->w.mom_lo;
    float *m1 = (float *)m->w.m + mo, *v1 = (float *)m->w.v + mo;
    return adamw_update(m->w.params + a, m->w.grads + a, m1, v1, b - a, h, m->w.adam_t);
}

/* The slab index a is the rounding's counter, whatever the split; the fp32 copy of a small
 * tensor is rewritten with it. */
static size_t update_bf16(gpt_model *m, int k, size_t a, size_t b, const adamw_params *h)
{
    const size_t mo = a - m->w.mom_lo;
    adamw_rounding r = {precision_info_of(m->prec)->rounding == ROUNDING_STOCHASTIC, m->w.sr_seed, a};
    float *p32 = param_is_weight(k) ? NULL : m->w.p[k] + (a - m->w.offsets[k]);
    bf16 *m1 = (bf16 *)m->w.m + mo, *v1 = (bf16 *)m->w.v + mo;
    return adamw_update_full_bf16(m->w.params_bf16 + a, p32, m->w.grads + a, m1, v1, b - a, h, m->w.adam_t, &r);
}

/* ---------------------------------------------------------------- the rows */

#define ACT_F32_OPS                                                                                                   \
    .act = ELEM_F32, .norm_forward = norm_out, .linear_forward = linear_forward_f32,                                 \
    .linear_backward = linear_backward_f32, .narrow_grad = narrow_none, .rope_forward = rope_f32,                    \
    .attention_forward = attn_forward_f32, .attention_backward = attn_backward_f32,                        \
    .mlp_act_forward = mlp_act_f32, .head_forward = head_forward_f32, .head_backward = head_backward_f32
#define ACT_BF16_OPS                                                                                                  \
    .act = ELEM_BF16, .norm_forward = norm_out, .linear_forward = linear_forward_bf16,                              \
    .linear_backward = linear_backward_bf16, .narrow_grad = narrow_bf16, .rope_forward = rope_bf16,                  \
    .attention_forward = attn_forward_bf16, .attention_backward = attn_backward_bf16,                      \
    .mlp_act_forward = mlp_act_bf16, .head_forward = head_forward_bf16, .head_backward = head_backward_bf16
#define STORE_F32_OPS .store = ELEM_F32, .embed_forward = embed_f32, .update_range = update_f32
#define STORE_BF16_OPS                                                                                                \
    .store = ELEM_BF16, .embed_forward = embed_bf16, .update_range = update_bf16, .pack_weight = pack_from_bf16

static const gpt_prec_ops ROWS[] = {
    {.prec = PRECISION_FP32, ACT_F32_OPS, STORE_F32_OPS, .pack_weight = pack_none},
    {.prec = PRECISION_BF16_MIXED, ACT_BF16_OPS, STORE_F32_OPS, .pack_weight = pack_from_f32},
    {.prec = PRECISION_BF16_SR, ACT_BF16_OPS, STORE_BF16_OPS},
    {.prec = PRECISION_BF16_NEAREST, ACT_BF16_OPS, STORE_BF16_OPS},
};

const gpt_prec_ops *gpt_prec_ops_of(train_precision p)
{
    for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++)
        if (ROWS[i].prec == p) return &ROWS[i];
    return &ROWS[0];
}

elem_type gpt_prec_act(train_precision p) { return gpt_prec_ops_of(p)->act; }
elem_type gpt_prec_store(train_precision p) { return gpt_prec_ops_of(p)->store; }
