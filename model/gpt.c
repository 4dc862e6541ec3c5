#include "gpt.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../common/timer.h"
#include "../kernels/attention.h"
#include "../kernels/crossentropy.h"
#include "../kernels/gelu.h"
#include "../kernels/layernorm.h"
#include "../kernels/kernels.h"
#include "../kernels/linear_bf16.h"
#include "../kernels/matmul.h"
#include "../kernels/rmsnorm.h"
#include "../kernels/swiglu.h"
#include "gpt_internal.h"

const char *const gpt_kind_names[GPT_KIND_COUNT] = {"matmul", "attention", "rotary", "layernorm", "gelu", "cross_entropy",
                                       "optimizer", "other"};


/* One weight matrix's bf16 copies, from the fp32 master weight or (full bf16) the bf16 weight. */
static int pack_weight(gpt_model *m, int k, int l, size_t per, int IC, int OC, int out_bf16, int bias)
{
    linear_bf16_weight *w = &m->lw[k][l];
    const int BT = m->B * m->T;
    if (precision_full_bf16(m->prec)) return linear_bf16_pack_bf16(w, m->ph[k] + (size_t)l * per, BT, IC, OC, out_bf16, bias);
    return linear_bf16_pack(w, m->p[k] + (size_t)l * per, BT, IC, OC, out_bf16, bias);
}

/* bf16-mixed and full bf16: remakes the bf16 copies of the weight matrices when the weights
 * changed since they were made (once per optimizer step). */
static int refresh_bf16_weights(gpt_model *m)
{
    if (m->prec == PRECISION_FP32 || m->wh_fresh) return KERNEL_OK;
    const int C = m->cfg.C;
    const gpt_widths w = gpt_widths_of(&m->cfg);
    const struct { int k, kb, ic, oc, out_bf16; } mats[] = {{P_QKVW, P_QKVB, C, (int)w.QKV, 1},
                                                           {P_ATTPROJW, P_ATTPROJB, C, C, 0},
                                                           {P_FCW, P_FCB, C, (int)w.FC, 0},
                                                           {P_FCPROJW, P_FCPROJB, (int)w.I, C, 0}};
    for (int l = 0; l < m->cfg.L; l++)
        for (int i = 0; i < 4; i++) {
            int IC = mats[i].ic, OC = mats[i].oc;
            int rc = pack_weight(m, mats[i].k, l, (size_t)IC * OC, IC, OC, mats[i].out_bf16, m->sizes[mats[i].kb] > 0);
            if (rc != KERNEL_OK) return rc;
        }
    int rc = pack_weight(m, P_UNEMBED, 0, 0, C, m->cfg.V, 0, m->sizes[P_UNEMBEDB] > 0);
    if (rc == KERNEL_OK) m->wh_fresh = 1;
    return rc;
}

/* ---------------------------------------------------------------- forward */

static int kernel_failed(const char *call, int code)
{
    if (code == KERNEL_EBACKEND) return err_msg("%.*s: %s", (int)strcspn(call, "("), call, onednn_last_error());
    return err_msg("internal: %.*s refused its arguments: %s", (int)strcspn(call, "("), call, kernel_strerror(code));
}

/* A kernel that can fail (kernels.h): timed like TIMED; its error code ends the calling function
 * with one message naming the kernel. */
#define CHECKED(m, kind, call)                                              \
    do {                                                                    \
        double t0_ = timer_now_s();                                         \
        int rc_ = (call);                                                   \
        (m)->prof.kind_s[kind] += timer_now_s() - t0_;                      \
        if (rc_ != KERNEL_OK) return kernel_failed(#call, rc_);             \
    } while (0)

/* Element-wise helpers (parallel loops cannot sit inside the TIMED macro). */
static void vec_add(float *out, const float *a, const float *b, size_t n)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)n; i++) out[i] = a[i] + b[i];
}

static void vec_add_into(float *out, const float *a, size_t n)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)n; i++) out[i] += a[i];
}

static void vec_add2_into(float *out, const float *a, const float *b, size_t n)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)n; i++) out[i] += a[i] + b[i];
}

static void embed_forward(float *x0, const float *wte, const float *wpe, const int *in, int BT, int T, int C)
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

static void embed_forward_bf16(float *x0, const bf16 *wte, const bf16 *wpe, const int *in, int BT, int T, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < BT; i++) {
        const bf16 *e = wte + (size_t)in[i] * C;
        float *o = x0 + (size_t)i * C;
        const bf16 *pe = wpe ? wpe + (size_t)(i % T) * C : NULL;
        for (int k = 0; k < C; k++) o[k] = bf16_to_float(e[k]) + (pe ? bf16_to_float(pe[k]) : 0.0f);
    }
}

/* Scatter-add by column blocks: deterministic, no races (parameter gradients accumulate). */
static void embed_backward(float *dwte, float *dwpe, const float *dres, const int *in, int BT, int T, int C)
{
    enum { CB = 64 };
    int nblk = (C + CB - 1) / CB;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * CB, c1 = c0 + CB < C ? c0 + CB : C;
        for (int i = 0; i < BT; i++) {
            const float *d = dres + (size_t)i * C;
            float *w = dwte + (size_t)in[i] * C;
            for (int k = c0; k < c1; k++) w[k] += d[k];
            if (dwpe) {
                float *pe = dwpe + (size_t)(i % T) * C;
                for (int k = c0; k < c1; k++) pe[k] += d[k];
            }
        }
    }
}

/* ---------------------------------------------------------------- linear layers */

/* Parameter k's slice for layer l (NULL when the architecture has no such tensor). */
static const float *param(const gpt_model *m, int k, int l, size_t per) { return m->sizes[k] ? m->p[k] + (size_t)l * per : NULL; }
static float *grad(const gpt_model *m, int k, int l, size_t per) { return m->sizes[k] ? m->g[k] + (size_t)l * per : NULL; }

/* out = inp W^T + b for weight tensor k of layer l (IC inputs, OC outputs): fp32 from a->..., or
 * bf16 from the bf16 input and weight copy into an fp32 (out) or bf16 (outh) result. */
static int linear_forward(gpt_model *m, float *out, bf16 *outh, const float *inp, const bf16 *inph, int kw, int kb,
                          int l, int IC, int OC)
{
    const int BT = m->B * m->T;
    const float *bias = param(m, kb, l, (size_t)OC);
    if (m->prec == PRECISION_FP32)
        CHECKED(m, K_MATMUL, matmul_forward(out, inp, m->p[kw] + (size_t)l * IC * OC, bias, BT, IC, OC));
    else CHECKED(m, K_MATMUL, linear_bf16_forward(outh ? NULL : out, outh, inph, &m->lw[kw][l], bias));
    return 0;
}

/* ---------------------------------------------------------------- norms */

/* LayerNorm or RMSNorm of x with layer l's norm (kw, kb), into fp32 out or bf16 outh. */
static void norm_forward(gpt_model *m, float *out, bf16 *outh, float *mean, float *rstd, const float *x, int kw, int kb, int l)
{
    const int BT = m->B * m->T, C = m->cfg.C;
    const float *w = param(m, kw, l, (size_t)C), *b = param(m, kb, l, (size_t)C);
    const float eps = (float)model_norm_eps(&m->cfg);
    if (m->cfg.norm == NORM_RMSNORM) {
        if (outh) TIMED(m, K_LAYERNORM, rmsnorm_forward_bf16(outh, rstd, x, w, BT, C, eps));
        else TIMED(m, K_LAYERNORM, rmsnorm_forward(out, rstd, x, w, BT, C, eps));
    } else if (outh) {
        TIMED(m, K_LAYERNORM, layernorm_forward_bf16(outh, mean, rstd, x, w, b, BT, C));
    } else {
        TIMED(m, K_LAYERNORM, layernorm_forward(out, mean, rstd, x, w, b, BT, C));
    }
}

/* dinp = dres + the norm's input gradient from dout; its weight (and bias) gradients accumulate. */
static void norm_backward(gpt_model *m, float *dinp, const float *dres, const float *dout, const float *x, int kw, int kb,
                          int l, const float *mean, const float *rstd)
{
    const int BT = m->B * m->T, C = m->cfg.C;
    const float *w = param(m, kw, l, (size_t)C);
    float *dw = grad(m, kw, l, (size_t)C), *db = grad(m, kb, l, (size_t)C);
    if (m->cfg.norm == NORM_RMSNORM) TIMED(m, K_LAYERNORM, rmsnorm_backward(dinp, dres, dw, dout, x, w, rstd, BT, C));
    else TIMED(m, K_LAYERNORM, layernorm_backward(dinp, dres, dw, db, dout, x, w, mean, rstd, BT, C));
}

/* ---------------------------------------------------------------- attention */

static rope_shape rope_of(const gpt_model *m)
{
    const model_config *c = &m->cfg;
    rope_shape rs = {.B = m->B, .T = m->T, .NH = c->NH, .HS = c->HS, .r = m->rotary_dims, .kvh = model_kv_heads(c), .gptj = c->rope == ROPE_GPTJ};
    return rs;
}

static attn_shape attn_of(const gpt_model *m)
{
    const model_config *c = &m->cfg;
    attn_shape s = {m->B, m->T, c->NH, model_kv_heads(c), c->HS, c->pos == POS_ALIBI ? m->alibi : NULL};
    return s;
}

/* Layer l's attention half: norm 1, QKV, rotary, attention, output projection (into a->attproj). */
static int attention_block_forward(gpt_model *m, int l)
{
    const model_config *c = &m->cfg;
    const int BT = m->B * m->T, C = c->C, QKV = (int)gpt_widths_of(c).QKV;
    gpt_layer_acts *a = &m->layer[l];
    const float *x = m->x + (size_t)l * BT * C;
    const rope_shape rs = rope_of(m);
    const attn_shape as = attn_of(m);
    norm_forward(m, a->ln1, a->ln1h, a->ln1_mean, a->ln1_rstd, x, P_LN1W, P_LN1B, l);
    if (m->prec == PRECISION_FP32) {
        if (linear_forward(m, a->qkv, NULL, a->ln1, NULL, P_QKVW, P_QKVB, l, C, QKV) != 0) return CB_EFAIL;
        if (m->rotary_dims > 0) TIMED(m, K_ROTARY, rope_forward_fused(a->qkv, &rs, &m->rope));
        TIMED(m, K_ATTENTION, attention_forward_s(a->atty, a->lse, a->qkv, &as));
        return linear_forward(m, a->attproj, NULL, a->atty, NULL, P_ATTPROJW, P_ATTPROJB, l, C, C);
    }
    if (linear_forward(m, NULL, a->qkvh, NULL, a->ln1h, P_QKVW, P_QKVB, l, C, QKV) != 0) return CB_EFAIL;
    if (m->rotary_dims > 0) TIMED(m, K_ROTARY, rope_forward_fused_bf16(a->qkvh, &rs, &m->rope));
    TIMED(m, K_ATTENTION, attention_forward_bf16_s(a->attyh, a->lse, a->qkvh, &as));
    return linear_forward(m, a->attproj, NULL, NULL, a->attyh, P_ATTPROJW, P_ATTPROJB, l, C, C);
}

/* The MLP's activation: GELU of fch, or SwiGLU of its gate and up halves, into fchg / fchgh. */
static void mlp_act_forward(gpt_model *m, gpt_layer_acts *a)
{
    const gpt_widths w = gpt_widths_of(&m->cfg);
    const size_t BT = (size_t)m->B * m->T;
    const int bf = m->prec != PRECISION_FP32;
    if (m->cfg.mlp == MLP_SWIGLU) {
        if (bf) TIMED(m, K_GELU, swiglu_forward_bf16(a->fchgh, a->fch, (int)BT, (int)w.I));
        else TIMED(m, K_GELU, swiglu_forward(a->fchg, a->fch, (int)BT, (int)w.I));
    } else if (bf) {
        TIMED(m, K_GELU, gelu_forward_bf16(a->fchgh, a->fch, BT * w.I));
    } else {
        TIMED(m, K_GELU, gelu_forward(a->fchg, a->fch, BT * w.I));
    }
}

static int layer_forward(gpt_model *m, int l, int write_output)
{
    const model_config *c = &m->cfg;
    const gpt_widths w = gpt_widths_of(c);
    const int BT = m->B * m->T, C = c->C;
    gpt_layer_acts *a = &m->layer[l];
    float *x = m->x + (size_t)l * BT * C, *out = m->x + (size_t)(l + 1) * BT * C;
    if (attention_block_forward(m, l) != 0) return CB_EFAIL;
    const float *ln2_in = x;
    if (!c->parallel_residual) {
        TIMED(m, K_OTHER, vec_add(a->res2, x, a->attproj, (size_t)BT * C));
        ln2_in = a->res2;
    }
    /* a shared norm (GPT-J): the MLP reads norm 1's output */
    const float *mlp_in = c->shared_norm ? a->ln1 : a->ln2;
    const bf16 *mlp_inh = c->shared_norm ? a->ln1h : a->ln2h;
    if (!c->shared_norm) norm_forward(m, a->ln2, a->ln2h, a->ln2_mean, a->ln2_rstd, ln2_in, P_LN2W, P_LN2B, l);
    if (linear_forward(m, a->fch, NULL, mlp_in, mlp_inh, P_FCW, P_FCB, l, C, (int)w.FC) != 0) return CB_EFAIL;
    mlp_act_forward(m, a);
    if (!write_output) return 0;
    if (linear_forward(m, out, NULL, a->fchg, a->fchgh, P_FCPROJW, P_FCPROJB, l, (int)w.I, C) != 0) return CB_EFAIL;
    if (c->parallel_residual) TIMED(m, K_OTHER, vec_add2_into(out, x, a->attproj, (size_t)BT * C));
    else TIMED(m, K_OTHER, vec_add_into(out, a->res2, (size_t)BT * C));
    return 0;
}

/* Final norm, output layer (logits in fp32), cross-entropy. */
static int head_forward(gpt_model *m)
{
    const model_config *c = &m->cfg;
    const int BT = m->B * m->T, C = c->C, V = c->V;
    const float *xl = m->x + (size_t)c->L * BT * C;
    norm_forward(m, m->lnf, m->lnfh, m->lnf_mean, m->lnf_rstd, xl, P_LNFW, P_LNFB, 0);
    const float *bias = param(m, P_UNEMBEDB, 0, 0);
    if (m->prec == PRECISION_FP32) {
        CHECKED(m, K_MATMUL, matmul_forward(m->logits, m->lnf, m->p[P_UNEMBED], bias, BT, C, V));
        CHECKED(m, K_XENT, crossentropy_forward(m->losses, m->lse, m->logits, m->targets, BT, V));
        return 0;
    }
    CHECKED(m, K_MATMUL, linear_bf16_forward(m->logits, NULL, m->lnfh, m->lw[P_UNEMBED], bias));
    /* loss and the bf16 d(logits) of the coming backward in one pass over the logits */
    for (int i = 0; i < BT; i++) m->dlosses[i] = m->backward_scale / (float)BT;
    CHECKED(m, K_XENT, crossentropy_fused_bf16(m->losses, m->lse, m->dlogitsh, m->logits, m->dlosses, m->targets, BT, V));
    m->dlogits_scale = m->backward_scale;
    return 0;
}

int gpt_forward(gpt_model *m, double *loss)
{
    const model_config *c = &m->cfg;
    const int B = m->B, T = m->T, BT = B * T, C = c->C;
    CHECKED(m, K_OPTIMIZER, refresh_bf16_weights(m)); /* the bf16 copies: once per optimizer step */
    if (precision_full_bf16(m->prec))
        TIMED(m, K_OTHER, embed_forward_bf16(m->x, m->ph[P_WTE], c->pos == POS_LEARNED ? m->ph[P_WPE] : NULL, m->inputs, BT, T, C));
    else TIMED(m, K_OTHER, embed_forward(m->x, m->p[P_WTE], c->pos == POS_LEARNED ? m->p[P_WPE] : NULL, m->inputs, BT, T, C));
    for (int l = 0; l < c->L; l++)
        if (layer_forward(m, l, 1) != 0) return CB_EFAIL;
    if (head_forward(m) != 0) return CB_EFAIL;
    double sum = 0;
    for (int i = 0; i < BT; i++) sum += m->losses[i];
    *loss = sum / BT;
    return 0;
}

/* ---------------------------------------------------------------- backward */

/* Gradient of linear layer (kw, kb) of layer l: dinp = dout W (overwritten), dW and db accumulate.
 * fp32: from dout and inp; bf16: from douth (dout in bf16; dout itself for the bias) and inph. */
static int linear_backward(gpt_model *m, float *dinp, const float *dout, const bf16 *douth, const float *inp,
                           const bf16 *inph, int kw, int kb, int l, int IC, int OC)
{
    const int BT = m->B * m->T;
    size_t wo = (size_t)l * IC * OC;
    float *dw = m->g[kw] + wo, *db = grad(m, kb, l, (size_t)OC);
    if (m->prec == PRECISION_FP32) {
        CHECKED(m, K_MATMUL, matmul_backward_input(dinp, dout, m->p[kw] + wo, BT, IC, OC));
        CHECKED(m, K_MATMUL, matmul_backward_weight(dw, db, dout, inp, BT, IC, OC));
    } else {
        CHECKED(m, K_MATMUL, linear_bf16_backward_input(dinp, douth, &m->lw[kw][l]));
        CHECKED(m, K_MATMUL, linear_bf16_backward_weight(dw, db, douth, dout, inph, BT, IC, OC));
    }
    return 0;
}

/* bf16 precisions: the bf16 copy of an fp32 gradient about to enter linear layers' backward. */
static const bf16 *to_h(gpt_model *m, bf16 *dst, const float *src, size_t n)
{
    if (m->prec == PRECISION_FP32) return NULL;
    TIMED(m, K_OTHER, bf16_from_floats(dst, src, n));
    return dst;
}

/* From d(attention output) in m->datty back to d(norm 1 output) in m->dln. */
static int attention_block_backward(gpt_model *m, int l)
{
    const model_config *c = &m->cfg;
    const int BT = m->B * m->T, C = c->C, QKV = (int)gpt_widths_of(c).QKV;
    gpt_layer_acts *a = &m->layer[l];
    const attn_shape as = attn_of(m);
    if (m->prec == PRECISION_FP32)
        TIMED(m, K_ATTENTION, attention_backward_s(m->dqkv, m->datt_scratch, m->att_threads, m->datty, a->qkv, a->atty, a->lse, &as));
    else
        TIMED(m, K_ATTENTION, attention_backward_bf16_s(m->dqkv, m->datt_scratch, m->att_threads, m->datty, a->qkvh, a->attyh,
                                                        a->lse, &as));
    if (m->rotary_dims > 0) {
        const rope_shape rs = rope_of(m);
        TIMED(m, K_ROTARY, rope_backward_fused(m->dqkv, &rs, &m->rope));
    }
    const bf16 *dqkvh = to_h(m, m->dh, m->dqkv, (size_t)BT * QKV);
    return linear_backward(m, m->dln, m->dqkv, dqkvh, a->ln1, a->ln1h, P_QKVW, P_QKVB, l, C, QKV);
}

/* The MLP from d(layer output) in m->dres to d(its input) in dmlp_in (overwritten). */
static int mlp_backward(gpt_model *m, int l, const bf16 *dresh, float *dmlp_in)
{
    const model_config *c = &m->cfg;
    const gpt_widths w = gpt_widths_of(c);
    const int BT = m->B * m->T, C = c->C;
    gpt_layer_acts *a = &m->layer[l];
    if (linear_backward(m, m->dact, m->dres, dresh, a->fchg, a->fchgh, P_FCPROJW, P_FCPROJB, l, (int)w.I, C) != 0)
        return CB_EFAIL;
    if (c->mlp == MLP_SWIGLU) TIMED(m, K_GELU, swiglu_backward(m->dfch, a->fch, m->dact, BT, (int)w.I));
    else TIMED(m, K_GELU, gelu_backward(m->dfch, a->fch, m->dact, (size_t)BT * w.I));
    const bf16 *dfchh = to_h(m, m->dh, m->dfch, (size_t)BT * w.FC);
    const float *in = c->shared_norm ? a->ln1 : a->ln2;
    const bf16 *inh = c->shared_norm ? a->ln1h : a->ln2h;
    return linear_backward(m, dmlp_in, m->dfch, dfchh, in, inh, P_FCW, P_FCB, l, C, (int)w.FC);
}

/* m->dres holds d(layer output) on entry and d(layer input) on return. */
static int layer_backward(gpt_model *m, int l)
{
    const model_config *c = &m->cfg;
    const int BT = m->B * m->T, C = c->C;
    if (m->recompute && layer_forward(m, l, 0) != 0) return CB_EFAIL;
    gpt_layer_acts *a = &m->layer[l];
    const float *x = m->x + (size_t)l * BT * C;
    float *dres = m->dres;
    /* the MLP, and (parallel residual) the attention projection, both from d(out) */
    const bf16 *dresh = to_h(m, m->dresh, dres, (size_t)BT * C);
    if (mlp_backward(m, l, dresh, c->shared_norm ? m->dln2 : m->dln) != 0) return CB_EFAIL;
    if (c->parallel_residual &&
        linear_backward(m, m->datty, dres, dresh, a->atty, a->attyh, P_ATTPROJW, P_ATTPROJB, l, C, C) != 0)
        return CB_EFAIL;
    if (!c->shared_norm) {
        const float *ln2_in = c->parallel_residual ? x : a->res2;
        norm_backward(m, dres, dres, m->dln, ln2_in, P_LN2W, P_LN2B, l, a->ln2_mean, a->ln2_rstd);
    }
    /* sequential residual: dres is now d(res2) = d(attention output) as well */
    if (!c->parallel_residual) {
        dresh = to_h(m, m->dresh, dres, (size_t)BT * C);
        if (linear_backward(m, m->datty, dres, dresh, a->atty, a->attyh, P_ATTPROJW, P_ATTPROJB, l, C, C) != 0)
            return CB_EFAIL;
    }
    if (attention_block_backward(m, l) != 0) return CB_EFAIL;
    if (c->shared_norm) TIMED(m, K_OTHER, vec_add_into(m->dln, m->dln2, (size_t)BT * C)); /* both branches' d(norm output) */
    norm_backward(m, dres, dres, m->dln, x, P_LN1W, P_LN1B, l, a->ln1_mean, a->ln1_rstd);
    return 0;
}

/* Column sums of the bf16 d(logits) into the output layer's bias gradient (bf16 precisions). */
static void colsum_bf16_into(float *db, const bf16 *d, int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int v0 = 0; v0 < V; v0 += 256) {
        int v1 = v0 + 256 < V ? v0 + 256 : V;
        for (int i = 0; i < N; i++)
            for (int v = v0; v < v1; v++) db[v] += bf16_to_float(d[(size_t)i * V + v]);
    }
}

/* d(logits) through the output layer and the final norm into m->dres. */
static int head_backward(gpt_model *m, float scale)
{
    const model_config *c = &m->cfg;
    const int BT = m->B * m->T, C = c->C, V = c->V;
    float *db = grad(m, P_UNEMBEDB, 0, 0);
    for (int i = 0; i < BT; i++) m->dlosses[i] = scale / (float)BT;
    if (m->prec == PRECISION_FP32) {
        CHECKED(m, K_XENT, crossentropy_backward_inplace(m->logits, m->dlosses, m->lse, m->targets, BT, V));
        float *dlogits = m->logits;
        CHECKED(m, K_MATMUL, matmul_backward_input(m->dln, dlogits, m->p[P_UNEMBED], BT, C, V));
        CHECKED(m, K_MATMUL, matmul_backward_weight(m->g[P_UNEMBED], db, dlogits, m->lnf, BT, C, V));
    } else {
        /* the forward wrote d(logits) for backward_scale; another scale needs a second pass */
        if (scale != m->dlogits_scale)
            CHECKED(m, K_XENT, crossentropy_backward_bf16(m->dlogitsh, m->dlosses, m->logits, m->lse, m->targets, BT, V));
        CHECKED(m, K_MATMUL, linear_bf16_backward_input(m->dln, m->dlogitsh, m->lw[P_UNEMBED]));
        CHECKED(m, K_MATMUL, linear_bf16_backward_weight(m->g[P_UNEMBED], NULL, m->dlogitsh, NULL, m->lnfh, BT, C, V));
        if (db) TIMED(m, K_MATMUL, colsum_bf16_into(db, m->dlogitsh, BT, V));
    }
    const float *xl = m->x + (size_t)c->L * BT * C;
    norm_backward(m, m->dres, NULL, m->dln, xl, P_LNFW, P_LNFB, 0, m->lnf_mean, m->lnf_rstd);
    return 0;
}

int gpt_backward(gpt_model *m, float scale)
{
    const model_config *c = &m->cfg;
    const int B = m->B, T = m->T, BT = B * T, C = c->C;
    if (head_backward(m, scale) != 0) return CB_EFAIL;
    if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, m, c->L);
    for (int l = c->L - 1; l >= 0; l--) {
        if (layer_backward(m, l) != 0) return CB_EFAIL;
        if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, m, l);
    }
    TIMED(m, K_OTHER, embed_backward(m->g[P_WTE], c->pos == POS_LEARNED ? m->g[P_WPE] : NULL, m->dres, m->inputs, BT, T, C));
    if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, m, -1);
    return 0;
}
