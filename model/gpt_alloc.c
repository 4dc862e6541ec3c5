/* gpt_alloc.c: the model's shapes and memory: tensor sizes for each architecture, the memory
 * estimate, and the slabs and views gpt_init allocates. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../kernels/attention.h"
#include "../kernels/linear_bf16.h"
#include "gpt_internal.h"

size_t gpt_attention_scratch(const model_config *c, int B, int T, int threads)
{
    attn_shape s = {B, T, c->NH, model_kv_heads(c), c->HS, NULL};
    return attention_scratch_floats_s(&s, threads);
}

static void param_sizes(const model_config *c, size_t *s)
{
    for (int k = 0; k < P_COUNT; k++) s[k] = param_size(c, k);
}

/* Floats of one layer's saved fp32 activations. */
static double layer_act_floats(const model_config *c, int B, int T, train_precision prec)
{
    const gpt_widths w = gpt_widths_of(c);
    double BT = (double)B * T, C = c->C;
    double f = 2 * BT                      /* ln1 mean, rstd */
               + (double)B * c->NH * T     /* attention lse */
               + 2 * BT                    /* ln2 mean, rstd */
               + BT * (double)w.FC;        /* fch */
    if (prec == PRECISION_FP32) f += BT * C /* ln1 */ + BT * (double)w.QKV /* qkv */ + BT * C /* atty */ + BT * C /* ln2 */ +
                                BT * (double)w.I /* fchg */;
    if (!c->parallel_residual) f += BT * C; /* res2 */
    return f;
}

/* bf16 values of one layer's saved activations (bf16 precisions: ln1, qkv, atty, ln2, fchg). */
static double layer_act_halves(const model_config *c, int B, int T, train_precision prec)
{
    const gpt_widths w = gpt_widths_of(c);
    return prec != PRECISION_FP32 ? (double)B * T * (3.0 * c->C + (double)w.QKV + (double)w.I) : 0;
}

/* The largest row width a backward gradient entering a linear layer has (QKV, the fused MLP
 * linear, the MLP output's input). */
static size_t max_grad_width(const model_config *c)
{
    const gpt_widths w = gpt_widths_of(c);
    size_t x = w.QKV > w.FC ? w.QKV : w.FC;
    return x > w.I ? x : w.I;
}

/* bf16 values of the model-wide bf16 buffers: lnf, d(logits), d(residual), one gradient of the
 * widest linear input. */
static double global_halves(const model_config *c, int B, int T, train_precision prec)
{
    double BT = (double)B * T;
    return prec != PRECISION_FP32 ? BT * (c->C + (double)c->V + c->C + (double)max_grad_width(c)) : 0;
}

/* Floats of the backward's fp32 scratch: dres, dln (and a second one for a shared norm), dqkv,
 * datty, dfch (and d(activation) for SwiGLU), attproj. */
static double scratch_floats(const model_config *c, int B, int T)
{
    const gpt_widths w = gpt_widths_of(c);
    double BT = (double)B * T, C = c->C;
    return BT * (C * (c->shared_norm ? 3 : 2) + (double)w.QKV + C + (double)w.FC + (c->mlp == MLP_SWIGLU ? (double)w.I : 0) + C);
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
    const gpt_widths w = gpt_widths_of(cfg);
    double mats = L * ((double)w.QKV * C + C * C + (double)w.FC * C + C * (double)w.I) + V * C;
    mem->weights_bf16 = prec != PRECISION_FP32 ? linear_bf16_weight_bytes(mats) : 0;
    /* the backward's scratch; the attention backward's per-thread scratch; token ids; ALiBi slopes */
    mem->scratch = 4 * (scratch_floats(cfg, B, T) + (double)gpt_attention_scratch(cfg, B, T, omp_get_max_threads()) + cfg->NH) + 8 * BT;
    mem->acts_full_no_recompute = mem->acts_kept + L * mem->acts_layer + mem->logits;
    mem->acts_full_recompute = mem->acts_kept + mem->acts_layer + mem->logits;
    double acts = recompute ? mem->acts_full_recompute : mem->acts_full_no_recompute;
    mem->total = mem->params + mem->grads + mem->moments + mem->weights_bf16 + acts + mem->scratch +
                 4.0 * rope_tables_floats(T, model_rotary_dims(cfg), cfg->HS);
}

static void set_layer_views(gpt_model *m, float **cursor, bf16 **hcursor)
{
    const model_config *c = &m->cfg;
    size_t BT = (size_t)m->B * m->T, C = (size_t)c->C;
    const gpt_widths w = gpt_widths_of(c);
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
        a->fch = p, p += BT * w.FC;
        if (!c->parallel_residual) a->res2 = p, p += BT * C;
        if (m->prec == PRECISION_FP32) {
            a->ln1 = p, p += BT * C;
            a->qkv = p, p += BT * w.QKV;
            a->atty = p, p += BT * C;
            a->ln2 = p, p += BT * C;
            a->fchg = p, p += BT * w.I;
        } else {
            bf16 *h = *hcursor;
            a->ln1h = h, h += BT * C;
            a->qkvh = h, h += BT * w.QKV;
            a->attyh = h, h += BT * C;
            a->ln2h = h, h += BT * C;
            a->fchgh = h, h += BT * w.I;
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
    const gpt_widths w = gpt_widths_of(cfg);
    m->att_threads = omp_get_max_threads();
    size_t att_scratch = gpt_attention_scratch(cfg, B, T, m->att_threads);
    size_t total = (size_t)(cfg->L + 1) * BT * C + layer * nviews + BT * V + (prec == PRECISION_FP32 ? BT * C : 0) + 5 * BT +
                   (size_t)scratch_floats(cfg, B, T) + att_scratch + (size_t)cfg->NH;
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
        m->dh = h, h += BT * max_grad_width(cfg);
    }
    m->lnf_mean = p, p += BT;
    m->lnf_rstd = p, p += BT;
    m->lse = p, p += BT;
    m->losses = p, p += BT;
    m->dlosses = p, p += BT;
    m->logits = p, p += BT * V;
    m->dres = p, p += BT * C;
    m->dln = p, p += BT * C;
    if (cfg->shared_norm) m->dln2 = p, p += BT * C;
    m->dqkv = p, p += BT * w.QKV;
    m->datty = p, p += BT * C;
    m->dfch = p, p += BT * w.FC;
    if (cfg->mlp == MLP_SWIGLU) m->dact = p, p += BT * w.I;
    else m->dact = m->dfch; /* GELU's backward runs in place */
    float *attproj = p;
    p += BT * C;
    m->datt_scratch = p, p += att_scratch;
    m->alibi = p, p += (size_t)cfg->NH;
    if (cfg->pos == POS_ALIBI) attention_alibi_slopes(m->alibi, cfg->NH, MODEL_ALIBI_BIAS_MAX);
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
    m->rotary_dims = model_rotary_dims(cfg);
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