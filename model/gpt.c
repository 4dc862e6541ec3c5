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
#include "gpt_internal.h"

const char *const gpt_kind_names[GPT_KIND_COUNT] = {"matmul", "attention", "rotary", "layernorm", "gelu", "cross_entropy",
                                       "optimizer", "other"};

static void param_sizes(const model_config *c, size_t *s)
{
    size_t L = (size_t)c->L, C = (size_t)c->C, V = (size_t)c->V;
    s[P_WTE] = V * C;
    s[P_WPE] = c->learned_pos ? (size_t)c->max_T * C : 0;
    s[P_LN1W] = s[P_LN1B] = s[P_LN2W] = s[P_LN2B] = L * C;
    s[P_QKVW] = L * 3 * C * C;
    s[P_QKVB] = L * 3 * C;
    s[P_ATTPROJW] = L * C * C;
    s[P_ATTPROJB] = L * C;
    s[P_FCW] = L * 4 * C * C;
    s[P_FCB] = L * 4 * C;
    s[P_FCPROJW] = L * C * 4 * C;
    s[P_FCPROJB] = L * C;
    s[P_LNFW] = s[P_LNFB] = C;
    s[P_UNEMBED] = c->tied_embeddings ? 0 : V * C;
}

/* Floats of one layer's saved fp32 activations. */
static double layer_act_floats(const model_config *c, int B, int T, train_precision prec)
{
    double BT = (double)B * T, C = c->C;
    double f = 2 * BT                      /* ln1 mean, rstd */
               + (double)B * c->NH * T     /* attention lse */
               + 2 * BT                    /* ln2 mean, rstd */
               + 4 * BT * C;               /* fch */
    if (prec == PRECISION_FP32) f += BT * C /* ln1 */ + 3 * BT * C /* qkv */ + BT * C /* atty */ + BT * C /* ln2 */ +
                                4 * BT * C /* fchg */;
    if (!c->parallel_residual) f += BT * C; /* res2 */
    return f;
}

/* bf16 values of one layer's saved activations (bf16-mixed: ln1, qkv, atty, ln2, fchg). */
static double layer_act_halves(const model_config *c, int B, int T, train_precision prec)
{
    return prec != PRECISION_FP32 ? 10.0 * B * T * c->C : 0;
}

/* bf16 values of the model-wide bf16 buffers: lnf, d(logits), d(residual), one (BT, 4C) gradient. */
static double global_halves(const model_config *c, int B, int T, train_precision prec)
{
    double BT = (double)B * T;
    return prec != PRECISION_FP32 ? BT * (c->C + (double)c->V + c->C + 4.0 * c->C) : 0;
}

void gpt_estimate(const model_config *cfg, int B, int T, int recompute, train_precision prec, gpt_mem *mem)
{
    size_t s[P_COUNT];
    param_sizes(cfg, s);
    double n = 0;
    for (int k = 0; k < P_COUNT; k++) n += (double)s[k];
    double BT = (double)B * T, C = cfg->C, V = cfg->V, L = cfg->L;
    const int full = precision_full_bf16(prec);
    mem->params = full ? 2 * n + 4.0 * (double)gpt_state_fp32_floats(s, prec) : 4 * n;
    mem->grads = 4 * n; /* fp32 accumulation in every precision (full bf16 rounds as the update reads them) */
    mem->moments = full ? 4 * n : 8 * n;
    mem->acts_kept = 4 * ((L + 1) * BT * C);
    mem->acts_layer = 4 * layer_act_floats(cfg, B, T, prec) + 2 * layer_act_halves(cfg, B, T, prec);
    mem->logits = 4 * (BT * V + (prec == PRECISION_FP32 ? BT * C : 0) + 5 * BT) + 2 * global_halves(cfg, B, T, prec);
    double mats = L * (3 * C * C + C * C + 4 * C * C + 4 * C * C) + V * C;
    mem->weights_bf16 = prec != PRECISION_FP32 ? linear_bf16_weight_bytes(mats) : 0;
    /* dres, dln, dqkv, datty, dfch, attproj; the attention backward's per-thread scratch; token ids */
    mem->scratch = 4 * (BT * C * (1 + 1 + 3 + 1 + 4 + 1) + (double)attention_scratch_floats(T, cfg->HS, omp_get_max_threads())) + 8 * BT;
    mem->acts_full_no_recompute = mem->acts_kept + L * mem->acts_layer + mem->logits;
    mem->acts_full_recompute = mem->acts_kept + mem->acts_layer + mem->logits;
    double acts = recompute ? mem->acts_full_recompute : mem->acts_full_no_recompute;
    mem->total = mem->params + mem->grads + mem->moments + mem->weights_bf16 + acts + mem->scratch +
                 4.0 * rope_tables_floats(T, rope_rotary_dims(cfg->HS, cfg->rotary_pct), cfg->HS);
}

void gpt_param_name(const gpt_model *m, int k, int layer, char *buf, size_t n)
{
    static const char *layer_names[P_COUNT] = {
        [P_LN1W] = "input_layernorm.weight", [P_LN1B] = "input_layernorm.bias",
        [P_QKVW] = "attention.query_key_value.weight", [P_QKVB] = "attention.query_key_value.bias",
        [P_ATTPROJW] = "attention.dense.weight", [P_ATTPROJB] = "attention.dense.bias",
        [P_LN2W] = "post_attention_layernorm.weight", [P_LN2B] = "post_attention_layernorm.bias",
        [P_FCW] = "mlp.dense_h_to_4h.weight", [P_FCB] = "mlp.dense_h_to_4h.bias",
        [P_FCPROJW] = "mlp.dense_4h_to_h.weight", [P_FCPROJB] = "mlp.dense_4h_to_h.bias"};
    (void)m;
    switch (k) {
    case P_WTE: snprintf(buf, n, "gpt_neox.embed_in.weight"); break;
    case P_WPE: snprintf(buf, n, "gpt_neox.embed_pos.weight"); break;
    case P_LNFW: snprintf(buf, n, "gpt_neox.final_layer_norm.weight"); break;
    case P_LNFB: snprintf(buf, n, "gpt_neox.final_layer_norm.bias"); break;
    case P_UNEMBED: snprintf(buf, n, "embed_out.weight"); break;
    default: snprintf(buf, n, "gpt_neox.layers.%d.%s", layer, layer_names[k]); break;
    }
}

static void set_layer_views(gpt_model *m, float **cursor, bf16 **hcursor)
{
    const model_config *c = &m->cfg;
    size_t BT = (size_t)m->B * m->T, C = (size_t)c->C;
    int nviews = m->recompute ? 1 : c->L;
    for (int l = 0; l < c->L; l++) {
        gpt_layer_acts *a = &m->layer[l];
        if (l >= nviews) {
            *a = m->layer[0];
            continue;
        }
        float *p = *cursor;
        memset(a, 0, sizeof *a);
        a->ln1_mean = p, p += BT;
        a->ln1_rstd = p, p += BT;
        a->lse = p, p += (size_t)m->B * c->NH * m->T;
        a->ln2_mean = p, p += BT;
        a->ln2_rstd = p, p += BT;
        a->fch = p, p += 4 * BT * C;
        if (!c->parallel_residual) a->res2 = p, p += BT * C;
        if (m->prec == PRECISION_FP32) {
            a->ln1 = p, p += BT * C;
            a->qkv = p, p += 3 * BT * C;
            a->atty = p, p += BT * C;
            a->ln2 = p, p += BT * C;
            a->fchg = p, p += 4 * BT * C;
        } else {
            bf16 *h = *hcursor;
            a->ln1h = h, h += BT * C;
            a->qkvh = h, h += 3 * BT * C;
            a->attyh = h, h += BT * C;
            a->ln2h = h, h += BT * C;
            a->fchgh = h, h += 4 * BT * C;
            *hcursor = h;
        }
        a->attproj = NULL; /* set below: one shared buffer */
        *cursor = p;
    }
}

/* The activation slabs (fp32, and bf16 for bf16-mixed) and their views. */
static int alloc_activations(gpt_model *m)
{
    const model_config *cfg = &m->cfg;
    const int B = m->B, T = m->T, recompute = m->recompute;
    const train_precision prec = m->prec;
    size_t BT = (size_t)B * T, C = (size_t)cfg->C, V = (size_t)cfg->V;
    size_t nviews = recompute ? 1 : (size_t)cfg->L;
    size_t layer = (size_t)layer_act_floats(cfg, B, T, prec), layerh = (size_t)layer_act_halves(cfg, B, T, prec);
    m->att_threads = omp_get_max_threads();
    size_t total = (size_t)(cfg->L + 1) * BT * C + layer * nviews + BT * V + (prec == PRECISION_FP32 ? BT * C : 0) + 5 * BT +
                   BT * C * 11 + attention_scratch_floats(T, cfg->HS, m->att_threads);
    size_t totalh = layerh * nviews + (size_t)global_halves(cfg, B, T, prec);
    m->acts = mem_alloc(total, sizeof(float), "activations");
    if (totalh && !(m->acts16 = mem_alloc(totalh, sizeof(bf16), "bf16 activations"))) return CB_EFAIL;
    m->layer = calloc((size_t)cfg->L, sizeof *m->layer);
    m->inputs = calloc(BT, sizeof(int));
    m->targets = calloc(BT, sizeof(int));
    if (!m->acts || !m->layer || !m->inputs || !m->targets) return CB_EFAIL;
    float *p = m->acts;
    m->x = p, p += (size_t)(cfg->L + 1) * BT * C;
    bf16 *h = m->acts16;
    set_layer_views(m, &p, &h);
    if (prec == PRECISION_FP32) {
        m->lnf = p, p += BT * C;
    } else {
        m->lnfh = h, h += BT * C;
        m->dlogitsh = h, h += BT * V;
        m->dresh = h, h += BT * C;
        m->dh = h, h += 4 * BT * C;
    }
    m->lnf_mean = p, p += BT;
    m->lnf_rstd = p, p += BT;
    m->lse = p, p += BT;
    m->losses = p, p += BT;
    m->dlosses = p, p += BT;
    m->logits = p, p += BT * V;
    m->dres = p, p += BT * C;
    m->dln = p, p += BT * C;
    m->dqkv = p, p += 3 * BT * C;
    m->datty = p, p += BT * C;
    m->dfch = p, p += 4 * BT * C;
    float *attproj = p;
    p += BT * C;
    m->datt_scratch = p, p += attention_scratch_floats(T, cfg->HS, m->att_threads);
    for (int l = 0; l < cfg->L; l++) m->layer[l].attproj = attproj;
    if ((size_t)(p - m->acts) > total || (size_t)(h - m->acts16) > totalh) {
        return err_msg("internal: activation layout overflows its slab");
    }
    return 0;
}

int gpt_init(gpt_model *m, const model_config *cfg, int B, int T, int recompute, train_precision prec)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->B = B, m->T = T, m->recompute = recompute, m->prec = prec;
    m->backward_scale = 1.0f;
    param_sizes(cfg, m->sizes);
    size_t off = 0;
    for (int k = 0; k < P_COUNT; k++) {
        m->offsets[k] = off;
        off += mem_round_floats(m->sizes[k]); /* every tensor starts 64-byte aligned in its slab */
    }
    m->nparams = off;
    m->mom_lo = 0, m->mom_hi = off;
    if (gpt_state_alloc(m) != 0) goto fail;
    if (prec != PRECISION_FP32) {
        m->lw_store = calloc((size_t)4 * cfg->L + 1, sizeof *m->lw_store);
        if (!m->lw_store) goto fail;
        m->lw[P_QKVW] = m->lw_store, m->lw[P_ATTPROJW] = m->lw_store + cfg->L;
        m->lw[P_FCW] = m->lw_store + 2 * cfg->L, m->lw[P_FCPROJW] = m->lw_store + 3 * cfg->L;
        m->lw[P_UNEMBED] = m->lw_store + 4 * cfg->L;
    }
    m->rotary_dims = cfg->learned_pos ? 0 : rope_rotary_dims(cfg->HS, cfg->rotary_pct);
    m->rope_store = mem_alloc(rope_tables_floats(T, m->rotary_dims, cfg->HS), sizeof(float), "rotary tables");
    if (!m->rope_store) goto fail;
    rope_tables_init(&m->rope, m->rope_store, T, m->rotary_dims, cfg->HS, cfg->rotary_base);

    if (alloc_activations(m) != 0) goto fail;
    return 0;
fail:
    gpt_free(m);
    return CB_EFAIL;
}

void gpt_free(gpt_model *m)
{
    if (!m) return;
    gpt_state_free(m);
    free(m->rope_store), free(m->acts), free(m->layer);
    if (m->lw_store)
        for (int i = 0; i < 4 * m->cfg.L + 1; i++) linear_bf16_weight_free(&m->lw_store[i]);
    free(m->lw_store), free(m->acts16);
    free(m->inputs), free(m->targets);
    memset(m, 0, sizeof *m);
}

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
    static const struct { int k, ic, oc, out_bf16; } mats[] = {
        {P_QKVW, 1, 3, 1}, {P_ATTPROJW, 1, 1, 0}, {P_FCW, 1, 4, 0}, {P_FCPROJW, 4, 1, 0}};
    for (int l = 0; l < m->cfg.L; l++)
        for (int i = 0; i < 4; i++) {
            int IC = mats[i].ic * C, OC = mats[i].oc * C;
            int rc = pack_weight(m, mats[i].k, l, (size_t)IC * OC, IC, OC, mats[i].out_bf16, 1);
            if (rc != KERNEL_OK) return rc;
        }
    int rc = pack_weight(m, P_UNEMBED, 0, 0, C, m->cfg.V, 0, 0);
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

/* out = inp W^T + b for weight tensor k of layer l (IC inputs, OC outputs): fp32 from a->..., or
 * bf16-mixed from the bf16 input and weight copy into an fp32 (out) or bf16 (outh) result. */
static int linear_forward(gpt_model *m, float *out, bf16 *outh, const float *inp, const bf16 *inph, int kw, int kb,
                          int l, int IC, int OC)
{
    const int BT = m->B * m->T;
    size_t wo = (size_t)l * IC * OC, bo = (size_t)l * OC;
    const float *bias = kb >= 0 ? m->p[kb] + bo : NULL;
    if (m->prec == PRECISION_FP32) CHECKED(m, K_MATMUL, matmul_forward(out, inp, m->p[kw] + wo, bias, BT, IC, OC));
    else CHECKED(m, K_MATMUL, linear_bf16_forward(outh ? NULL : out, outh, inph, &m->lw[kw][l], bias));
    return 0;
}

/* Layer l's attention half: ln1, QKV, rotary, attention, output projection (into a->attproj). */
static int attention_block_forward(gpt_model *m, int l)
{
    const model_config *c = &m->cfg;
    const int B = m->B, T = m->T, BT = B * T, C = c->C;
    gpt_layer_acts *a = &m->layer[l];
    const float *x = m->x + (size_t)l * BT * C;
    const size_t L1 = (size_t)l;
    const float *lnw = m->p[P_LN1W] + L1 * C, *lnb = m->p[P_LN1B] + L1 * C;
    rope_shape rs = {B, T, c->NH, c->HS, m->rotary_dims};
    if (m->prec == PRECISION_FP32) {
        TIMED(m, K_LAYERNORM, layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, x, lnw, lnb, BT, C));
        if (linear_forward(m, a->qkv, NULL, a->ln1, NULL, P_QKVW, P_QKVB, l, C, 3 * C) != 0) return CB_EFAIL;
        if (m->rotary_dims > 0) TIMED(m, K_ROTARY, rope_forward_fused(a->qkv, &rs, &m->rope));
        TIMED(m, K_ATTENTION, attention_forward(a->atty, a->lse, a->qkv, B, T, c->NH, c->HS));
        return linear_forward(m, a->attproj, NULL, a->atty, NULL, P_ATTPROJW, P_ATTPROJB, l, C, C);
    }
    TIMED(m, K_LAYERNORM, layernorm_forward_bf16(a->ln1h, a->ln1_mean, a->ln1_rstd, x, lnw, lnb, BT, C));
    if (linear_forward(m, NULL, a->qkvh, NULL, a->ln1h, P_QKVW, P_QKVB, l, C, 3 * C) != 0) return CB_EFAIL;
    if (m->rotary_dims > 0) TIMED(m, K_ROTARY, rope_forward_fused_bf16(a->qkvh, &rs, &m->rope));
    TIMED(m, K_ATTENTION, attention_forward_bf16(a->attyh, a->lse, a->qkvh, B, T, c->NH, c->HS));
    return linear_forward(m, a->attproj, NULL, NULL, a->attyh, P_ATTPROJW, P_ATTPROJB, l, C, C);
}

static int layer_forward(gpt_model *m, int l, int write_output)
{
    const model_config *c = &m->cfg;
    const int BT = m->B * m->T, C = c->C;
    gpt_layer_acts *a = &m->layer[l];
    float *x = m->x + (size_t)l * BT * C, *out = m->x + (size_t)(l + 1) * BT * C;
    const size_t L1 = (size_t)l;
    const int bf = m->prec != PRECISION_FP32;
    if (attention_block_forward(m, l) != 0) return CB_EFAIL;
    const float *ln2_in = x;
    if (!c->parallel_residual) {
        TIMED(m, K_OTHER, vec_add(a->res2, x, a->attproj, (size_t)BT * C));
        ln2_in = a->res2;
    }
    const float *lnw = m->p[P_LN2W] + L1 * C, *lnb = m->p[P_LN2B] + L1 * C;
    if (bf) TIMED(m, K_LAYERNORM, layernorm_forward_bf16(a->ln2h, a->ln2_mean, a->ln2_rstd, ln2_in, lnw, lnb, BT, C));
    else TIMED(m, K_LAYERNORM, layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, ln2_in, lnw, lnb, BT, C));
    if (linear_forward(m, a->fch, NULL, a->ln2, a->ln2h, P_FCW, P_FCB, l, C, 4 * C) != 0) return CB_EFAIL;
    if (bf) TIMED(m, K_GELU, gelu_forward_bf16(a->fchgh, a->fch, (size_t)BT * 4 * C));
    else TIMED(m, K_GELU, gelu_forward(a->fchg, a->fch, (size_t)BT * 4 * C));
    if (!write_output) return 0;
    if (linear_forward(m, out, NULL, a->fchg, a->fchgh, P_FCPROJW, P_FCPROJB, l, 4 * C, C) != 0) return CB_EFAIL;
    if (c->parallel_residual) TIMED(m, K_OTHER, vec_add2_into(out, x, a->attproj, (size_t)BT * C));
    else TIMED(m, K_OTHER, vec_add_into(out, a->res2, (size_t)BT * C));
    return 0;
}

int gpt_forward(gpt_model *m, double *loss)
{
    const model_config *c = &m->cfg;
    const int B = m->B, T = m->T, BT = B * T, C = c->C, V = c->V;
    CHECKED(m, K_OPTIMIZER, refresh_bf16_weights(m)); /* the bf16 copies: once per optimizer step */
    if (precision_full_bf16(m->prec))
        TIMED(m, K_OTHER, embed_forward_bf16(m->x, m->ph[P_WTE], c->learned_pos ? m->ph[P_WPE] : NULL, m->inputs, BT, T, C));
    else TIMED(m, K_OTHER, embed_forward(m->x, m->p[P_WTE], c->learned_pos ? m->p[P_WPE] : NULL, m->inputs, BT, T, C));
    for (int l = 0; l < c->L; l++)
        if (layer_forward(m, l, 1) != 0) return CB_EFAIL;
    const float *xl = m->x + (size_t)c->L * BT * C;
    if (m->prec == PRECISION_FP32) {
        TIMED(m, K_LAYERNORM, layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, xl, m->p[P_LNFW], m->p[P_LNFB], BT, C));
        CHECKED(m, K_MATMUL, matmul_forward(m->logits, m->lnf, m->p[P_UNEMBED], NULL, BT, C, V));
    } else {
        TIMED(m, K_LAYERNORM, layernorm_forward_bf16(m->lnfh, m->lnf_mean, m->lnf_rstd, xl, m->p[P_LNFW], m->p[P_LNFB],
                                                     BT, C));
        CHECKED(m, K_MATMUL, linear_bf16_forward(m->logits, NULL, m->lnfh, m->lw[P_UNEMBED], NULL));
    }
    if (m->prec != PRECISION_FP32) {
        /* loss and the bf16 d(logits) of the coming backward in one pass over the logits */
        for (int i = 0; i < BT; i++) m->dlosses[i] = m->backward_scale / (float)BT;
        CHECKED(m, K_XENT, crossentropy_fused_bf16(m->losses, m->lse, m->dlogitsh, m->logits, m->dlosses, m->targets, BT, V));
        m->dlogits_scale = m->backward_scale;
    } else {
        CHECKED(m, K_XENT, crossentropy_forward(m->losses, m->lse, m->logits, m->targets, BT, V));
    }
    double sum = 0;
    for (int i = 0; i < BT; i++) sum += m->losses[i];
    m->last_loss = sum / BT;
    *loss = m->last_loss;
    return 0;
}

/* ---------------------------------------------------------------- backward */

/* Gradient of linear layer (kw, kb) of layer l: dinp = dout W (overwritten), dW and db accumulate.
 * fp32: from dout and inp; bf16-mixed: from douth (dout in bf16; dout itself for the bias) and
 * inph. */
static int linear_backward(gpt_model *m, float *dinp, const float *dout, const bf16 *douth, const float *inp,
                           const bf16 *inph, int kw, int kb, int l, int IC, int OC)
{
    const int BT = m->B * m->T;
    size_t wo = (size_t)l * IC * OC, bo = (size_t)l * OC;
    float *dw = m->g[kw] + wo, *db = kb >= 0 ? m->g[kb] + bo : NULL;
    if (m->prec == PRECISION_FP32) {
        CHECKED(m, K_MATMUL, matmul_backward_input(dinp, dout, m->p[kw] + wo, BT, IC, OC));
        CHECKED(m, K_MATMUL, matmul_backward_weight(dw, db, dout, inp, BT, IC, OC));
    } else {
        CHECKED(m, K_MATMUL, linear_bf16_backward_input(dinp, douth, &m->lw[kw][l]));
        CHECKED(m, K_MATMUL, linear_bf16_backward_weight(dw, db, douth, dout, inph, BT, IC, OC));
    }
    return 0;
}

/* bf16-mixed: the bf16 copy of an fp32 gradient about to enter linear layers' backward. */
static const bf16 *to_h(gpt_model *m, bf16 *dst, const float *src, size_t n)
{
    if (m->prec == PRECISION_FP32) return NULL;
    TIMED(m, K_OTHER, bf16_from_floats(dst, src, n));
    return dst;
}

/* From d(attention output) in m->datty back to d(ln1 output) in m->dln. */
static int attention_block_backward(gpt_model *m, int l)
{
    const model_config *c = &m->cfg;
    const int B = m->B, T = m->T, BT = B * T, C = c->C;
    gpt_layer_acts *a = &m->layer[l];
    if (m->prec == PRECISION_FP32)
        TIMED(m, K_ATTENTION, attention_backward(m->dqkv, m->datt_scratch, m->att_threads, m->datty, a->qkv, a->atty,
                                                 a->lse, B, T, c->NH, c->HS));
    else
        TIMED(m, K_ATTENTION, attention_backward_bf16(m->dqkv, m->datt_scratch, m->att_threads, m->datty, a->qkvh,
                                                      a->attyh, a->lse, B, T, c->NH, c->HS));
    if (m->rotary_dims > 0) {
        rope_shape rs = {B, T, c->NH, c->HS, m->rotary_dims};
        TIMED(m, K_ROTARY, rope_backward_fused(m->dqkv, &rs, &m->rope));
    }
    const bf16 *dqkvh = to_h(m, m->dh, m->dqkv, (size_t)BT * 3 * C);
    return linear_backward(m, m->dln, m->dqkv, dqkvh, a->ln1, a->ln1h, P_QKVW, P_QKVB, l, C, 3 * C);
}

/* m->dres holds d(layer output) on entry and d(layer input) on return. */
static int layer_backward(gpt_model *m, int l)
{
    const model_config *c = &m->cfg;
    const int BT = m->B * m->T, C = c->C;
    const size_t L1 = (size_t)l;
    if (m->recompute && layer_forward(m, l, 0) != 0) return CB_EFAIL;
    gpt_layer_acts *a = &m->layer[l];
    const float *x = m->x + (size_t)l * BT * C;
    float *dres = m->dres;
    /* MLP output projection, and (parallel residual) the attention projection, both from d(out) */
    const bf16 *dresh = to_h(m, m->dresh, dres, (size_t)BT * C);
    if (linear_backward(m, m->dfch, dres, dresh, a->fchg, a->fchgh, P_FCPROJW, P_FCPROJB, l, 4 * C, C) != 0)
        return CB_EFAIL;
    if (c->parallel_residual &&
        linear_backward(m, m->datty, dres, dresh, a->atty, a->attyh, P_ATTPROJW, P_ATTPROJB, l, C, C) != 0)
        return CB_EFAIL;
    TIMED(m, K_GELU, gelu_backward(m->dfch, a->fch, m->dfch, (size_t)BT * 4 * C));
    const bf16 *dfchh = to_h(m, m->dh, m->dfch, (size_t)BT * 4 * C);
    if (linear_backward(m, m->dln, m->dfch, dfchh, a->ln2, a->ln2h, P_FCW, P_FCB, l, C, 4 * C) != 0) return CB_EFAIL;
    const float *ln2_in = c->parallel_residual ? x : a->res2;
    TIMED(m, K_LAYERNORM, layernorm_backward(dres, dres, m->g[P_LN2W] + L1 * C, m->g[P_LN2B] + L1 * C, m->dln, ln2_in,
                                             m->p[P_LN2W] + L1 * C, a->ln2_mean, a->ln2_rstd, BT, C));
    /* sequential residual: dres is now d(res2) = d(attention output) as well */
    if (!c->parallel_residual) {
        dresh = to_h(m, m->dresh, dres, (size_t)BT * C);
        if (linear_backward(m, m->datty, dres, dresh, a->atty, a->attyh, P_ATTPROJW, P_ATTPROJB, l, C, C) != 0)
            return CB_EFAIL;
    }
    if (attention_block_backward(m, l) != 0) return CB_EFAIL;
    TIMED(m, K_LAYERNORM, layernorm_backward(dres, dres, m->g[P_LN1W] + L1 * C, m->g[P_LN1B] + L1 * C, m->dln, x,
                                             m->p[P_LN1W] + L1 * C, a->ln1_mean, a->ln1_rstd, BT, C));
    return 0;
}

int gpt_backward(gpt_model *m, float scale)
{
    const model_config *c = &m->cfg;
    const int B = m->B, T = m->T, BT = B * T, C = c->C, V = c->V;
    for (int i = 0; i < BT; i++) m->dlosses[i] = scale / (float)BT;
    if (m->prec == PRECISION_FP32) {
        CHECKED(m, K_XENT, crossentropy_backward_inplace(m->logits, m->dlosses, m->lse, m->targets, BT, V));
        float *dlogits = m->logits;
        CHECKED(m, K_MATMUL, matmul_backward_input(m->dln, dlogits, m->p[P_UNEMBED], BT, C, V));
        CHECKED(m, K_MATMUL, matmul_backward_weight(m->g[P_UNEMBED], NULL, dlogits, m->lnf, BT, C, V));
    } else {
        /* the forward wrote d(logits) for backward_scale; another scale needs a second pass */
        if (scale != m->dlogits_scale)
            CHECKED(m, K_XENT, crossentropy_backward_bf16(m->dlogitsh, m->dlosses, m->logits, m->lse, m->targets, BT, V));
        CHECKED(m, K_MATMUL, linear_bf16_backward_input(m->dln, m->dlogitsh, m->lw[P_UNEMBED]));
        CHECKED(m, K_MATMUL, linear_bf16_backward_weight(m->g[P_UNEMBED], NULL, m->dlogitsh, NULL, m->lnfh, BT, C, V));
    }
    const float *xl = m->x + (size_t)c->L * BT * C;
    TIMED(m, K_LAYERNORM, layernorm_backward(m->dres, NULL, m->g[P_LNFW], m->g[P_LNFB], m->dln, xl, m->p[P_LNFW],
                                             m->lnf_mean, m->lnf_rstd, BT, C));
    if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, m, c->L);
    for (int l = c->L - 1; l >= 0; l--) {
        if (layer_backward(m, l) != 0) return CB_EFAIL;
        if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, m, l);
    }
    TIMED(m, K_OTHER, embed_backward(m->g[P_WTE], c->learned_pos ? m->g[P_WPE] : NULL, m->dres, m->inputs, BT, T, C));
    if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, m, -1);
    return 0;
}
