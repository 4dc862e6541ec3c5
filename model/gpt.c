/* gpt.c: the forward and backward of every architecture (gpt.h), in the precision of the model's
 * row of operations (gpt_prec.h): nothing here depends on the precision. */
#include "gpt.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../kernels/gelu.h"
#include "../kernels/layernorm.h"
#include "../kernels/rmsnorm.h"
#include "../kernels/swiglu.h"
#include "gpt_internal.h"

const char *const gpt_kind_names[GPT_KIND_COUNT] = {"matmul", "attention", "rotary", "norm", "mlp_act",
                                                    "cross_entropy", "optimizer", "other"};

static act_t act_f32(float *p) { return (act_t){p, ELEM_F32}; }

/* The weight cache (the bf16 copies of the weight matrices, where the products read bf16),
 * remade when the weights changed since it was made: once per optimizer step. */
static int refresh_weight_cache(gpt_model *m)
{
    if (m->cache.fresh) return KERNEL_OK;
    const int C = m->cfg.C;
    const gpt_widths w = gpt_widths_of(&m->cfg);
    const struct { int k, kb, ic, oc, out_bf16; } mats[] = {{P_QKVW, P_QKVB, C, (int)w.QKV, 1},
                                                           {P_ATTPROJW, P_ATTPROJB, C, C, 0},
                                                           {P_FCW, P_FCB, C, (int)w.FC, 0},
                                                           {P_FCPROJW, P_FCPROJB, (int)w.I, C, 0}};
    for (int l = 0; l < m->cfg.L; l++)
        for (int i = 0; i < 4; i++) {
            int rc = m->ops->pack_weight(m, mats[i].k, l, mats[i].ic, mats[i].oc, mats[i].out_bf16,
                                         m->w.sizes[mats[i].kb] > 0);
            if (rc != KERNEL_OK) return rc;
        }
    int rc = m->ops->pack_weight(m, P_UNEMBED, 0, C, m->cfg.V, 0, m->w.sizes[P_UNEMBEDB] > 0);
    if (rc == KERNEL_OK) m->cache.fresh = 1;
    return rc;
}

/* ---------------------------------------------------------------- forward */

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

/* dinp = dres + the norm's input gradient from dout; its weight (and bias) gradients accumulate. */
static void norm_backward(gpt_model *m, float *dinp, const float *dres, const float *dout, const float *x, int kw,
                          int kb, int l, const float *mean, const float *rstd)
{
    const int BT = m->B * m->T, C = m->cfg.C;
    const float *w = gpt_param(m, kw, l, (size_t)C);
    float *dw = gpt_grad(m, kw, l, (size_t)C), *db = gpt_grad(m, kb, l, (size_t)C);
    if (m->cfg.norm == NORM_RMSNORM) TIMED(m, K_NORM, rmsnorm_backward(dinp, dres, dw, dout, x, w, rstd, BT, C));
    else TIMED(m, K_NORM, layernorm_backward(dinp, dres, dw, db, dout, x, w, mean, rstd, BT, C));
}

/* Layer l's attention half: norm 1, QKV, rotary, attention, output projection (into a->attproj). */
static int attention_block_forward(gpt_model *m, int l)
{
    const gpt_prec_ops *ops = m->ops;
    const int BT = m->B * m->T, C = m->cfg.C, QKV = (int)gpt_widths_of(&m->cfg).QKV;
    gpt_layer_acts *a = &m->a.layer[l];
    const float *x = m->a.x + (size_t)l * BT * C;
    ops->norm_forward(m, a->ln1, a->ln1_mean, a->ln1_rstd, x, P_LN1W, P_LN1B, l);
    if (ops->linear_forward(m, a->qkv, a->ln1, P_QKVW, P_QKVB, l, C, QKV) != 0) return CB_EFAIL;
    if (m->rotary_dims > 0) ops->rope_forward(m, a->qkv);
    ops->attention_forward(m, a);
    return ops->linear_forward(m, act_f32(a->attproj), a->atty, P_ATTPROJW, P_ATTPROJB, l, C, C);
}

static int layer_forward(gpt_model *m, int l, int write_output)
{
    const model_config *c = &m->cfg;
    const gpt_prec_ops *ops = m->ops;
    const gpt_widths w = gpt_widths_of(c);
    const int BT = m->B * m->T, C = c->C;
    gpt_layer_acts *a = &m->a.layer[l];
    float *x = m->a.x + (size_t)l * BT * C, *out = m->a.x + (size_t)(l + 1) * BT * C;
    if (attention_block_forward(m, l) != 0) return CB_EFAIL;
    const float *ln2_in = x;
    if (!c->parallel_residual) {
        TIMED(m, K_OTHER, vec_add(a->res2, x, a->attproj, (size_t)BT * C));
        ln2_in = a->res2;
    }
    /* a shared norm (GPT-J): the MLP reads norm 1's output */
    const act_t mlp_in = c->shared_norm ? a->ln1 : a->ln2;
    if (!c->shared_norm) ops->norm_forward(m, a->ln2, a->ln2_mean, a->ln2_rstd, ln2_in, P_LN2W, P_LN2B, l);
    if (ops->linear_forward(m, act_f32(a->fch), mlp_in, P_FCW, P_FCB, l, C, (int)w.FC) != 0) return CB_EFAIL;
    ops->mlp_act_forward(m, a);
    if (!write_output) return 0;
    if (ops->linear_forward(m, act_f32(out), a->fchg, P_FCPROJW, P_FCPROJB, l, (int)w.I, C) != 0) return CB_EFAIL;
    if (c->parallel_residual) TIMED(m, K_OTHER, vec_add2_into(out, x, a->attproj, (size_t)BT * C));
    else TIMED(m, K_OTHER, vec_add_into(out, a->res2, (size_t)BT * C));
    return 0;
}

int gpt_forward(gpt_model *m, float backward_scale, double *loss)
{
    const model_config *c = &m->cfg;
    const int BT = m->B * m->T;
    CHECKED(m, K_OPTIMIZER, refresh_weight_cache(m));
    m->ops->embed_forward(m);
    for (int l = 0; l < c->L; l++)
        if (layer_forward(m, l, 1) != 0) return CB_EFAIL;
    const float *xl = m->a.x + (size_t)c->L * BT * c->C;
    m->ops->norm_forward(m, m->a.lnf, m->a.lnf_mean, m->a.lnf_rstd, xl, P_LNFW, P_LNFB, 0);
    if (m->ops->head_forward(m, backward_scale) != 0) return CB_EFAIL;
    double sum = 0;
    for (int i = 0; i < BT; i++) sum += m->a.losses[i];
    *loss = sum / BT;
    return 0;
}

/* ---------------------------------------------------------------- backward */

/* From d(attention output) in m->a.datty back to d(norm 1 output) in m->a.dln. */
static int attention_block_backward(gpt_model *m, int l)
{
    const gpt_prec_ops *ops = m->ops;
    const int BT = m->B * m->T, C = m->cfg.C, QKV = (int)gpt_widths_of(&m->cfg).QKV;
    const gpt_layer_acts *a = &m->a.layer[l];
    ops->attention_backward(m, a);
    if (m->rotary_dims > 0) {
        const rope_shape rs = gpt_rope_of(m);
        TIMED(m, K_ROTARY, rope_backward_fused(m->a.dqkv, &rs, &m->rope));
    }
    const act_t dqkv_n = ops->narrow_grad(m, m->a.dn.dlin, m->a.dqkv, (size_t)BT * QKV);
    return ops->linear_backward(m, m->a.dln, m->a.dqkv, dqkv_n, a->ln1, P_QKVW, P_QKVB, l, C, QKV);
}

/* The MLP from d(layer output) in m->a.dres (dres_n as the products read it) to d(its input) in
 * dmlp_in (overwritten). */
static int mlp_backward(gpt_model *m, int l, act_t dres_n, float *dmlp_in)
{
    const model_config *c = &m->cfg;
    const gpt_prec_ops *ops = m->ops;
    const gpt_widths w = gpt_widths_of(c);
    const int BT = m->B * m->T, C = c->C;
    const gpt_layer_acts *a = &m->a.layer[l];
    if (ops->linear_backward(m, m->a.dact, m->a.dres, dres_n, a->fchg, P_FCPROJW, P_FCPROJB, l, (int)w.I, C) != 0)
        return CB_EFAIL;
    if (c->mlp == MLP_SWIGLU) TIMED(m, K_MLP_ACT, swiglu_backward(m->a.dfch, a->fch, m->a.dact, BT, (int)w.I));
    else TIMED(m, K_MLP_ACT, gelu_backward(m->a.dfch, a->fch, m->a.dact, (size_t)BT * w.I));
    const act_t dfch_n = ops->narrow_grad(m, m->a.dn.dlin, m->a.dfch, (size_t)BT * w.FC);
    const act_t in = c->shared_norm ? a->ln1 : a->ln2;
    return ops->linear_backward(m, dmlp_in, m->a.dfch, dfch_n, in, P_FCW, P_FCB, l, C, (int)w.FC);
}

/* m->a.dres holds d(layer output) on entry and d(layer input) on return. */
static int layer_backward(gpt_model *m, int l)
{
    const model_config *c = &m->cfg;
    const gpt_prec_ops *ops = m->ops;
    const int BT = m->B * m->T, C = c->C;
    if (m->recompute && layer_forward(m, l, 0) != 0) return CB_EFAIL;
    const gpt_layer_acts *a = &m->a.layer[l];
    const float *x = m->a.x + (size_t)l * BT * C;
    float *dres = m->a.dres;
    /* the MLP, and (parallel residual) the attention projection, both from d(out) */
    act_t dres_n = ops->narrow_grad(m, m->a.dn.dres, dres, (size_t)BT * C);
    if (mlp_backward(m, l, dres_n, c->shared_norm ? m->a.dln2 : m->a.dln) != 0) return CB_EFAIL;
    if (c->parallel_residual &&
        ops->linear_backward(m, m->a.datty, dres, dres_n, a->atty, P_ATTPROJW, P_ATTPROJB, l, C, C) != 0)
        return CB_EFAIL;
    if (!c->shared_norm) {
        const float *ln2_in = c->parallel_residual ? x : a->res2;
        norm_backward(m, dres, dres, m->a.dln, ln2_in, P_LN2W, P_LN2B, l, a->ln2_mean, a->ln2_rstd);
    }
    /* sequential residual: dres is now d(res2) = d(attention output) as well */
    if (!c->parallel_residual) {
        dres_n = ops->narrow_grad(m, m->a.dn.dres, dres, (size_t)BT * C);
        if (ops->linear_backward(m, m->a.datty, dres, dres_n, a->atty, P_ATTPROJW, P_ATTPROJB, l, C, C) != 0)
            return CB_EFAIL;
    }
    if (attention_block_backward(m, l) != 0) return CB_EFAIL;
    /* a shared norm: both branches' d(norm output) */
    if (c->shared_norm) TIMED(m, K_OTHER, vec_add_into(m->a.dln, m->a.dln2, (size_t)BT * C));
    norm_backward(m, dres, dres, m->a.dln, x, P_LN1W, P_LN1B, l, a->ln1_mean, a->ln1_rstd);
    return 0;
}

/* d(logits) through the output layer and the final norm into m->a.dres. */
static int head_backward(gpt_model *m, float scale)
{
    const model_config *c = &m->cfg;
    const int BT = m->B * m->T, C = c->C;
    for (int i = 0; i < BT; i++) m->a.dlosses[i] = scale / (float)BT;
    if (m->ops->head_backward(m, scale) != 0) return CB_EFAIL;
    const float *xl = m->a.x + (size_t)c->L * BT * C;
    norm_backward(m, m->a.dres, NULL, m->a.dln, xl, P_LNFW, P_LNFB, 0, m->a.lnf_mean, m->a.lnf_rstd);
    return 0;
}

int gpt_backward(gpt_model *m, float scale, const gpt_grads_hook *hook)
{
    const model_config *c = &m->cfg;
    const int B = m->B, T = m->T, BT = B * T, C = c->C;
    if (head_backward(m, scale) != 0) return CB_EFAIL;
    if (hook) hook->ready(hook->ctx, m, c->L);
    for (int l = c->L - 1; l >= 0; l--) {
        if (layer_backward(m, l) != 0) return CB_EFAIL;
        if (hook) hook->ready(hook->ctx, m, l);
    }
    float *dwpe = c->pos == POS_LEARNED ? m->w.g[P_WPE] : NULL;
    TIMED(m, K_OTHER, embed_backward(m->w.g[P_WTE], dwpe, m->a.dres, m->inputs, BT, T, C));
    if (hook) hook->ready(hook->ctx, m, -1);
    return 0;
}
