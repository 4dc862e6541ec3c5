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
    return attention_scratch_floats_gqa(&s, threads);
}

static void param_sizes(const model_config *c, size_t *s)
{
    for (int k = 0; k < P_COUNT; k++) s[k] = param_size(c, k);
}

/* The largest row width a backward gradient entering a linear layer has (QKV, the fused MLP
 * linear, the MLP output's input). */
static size_t max_grad_width(const model_config *c)
{
    const gpt_widths w = gpt_widths_of(c);
    size_t x = w.QKV > w.FC ? w.QKV : w.FC;
    return x > w.I ? x : w.I;
}

/* ---------------------------------------------------------------- the activations' size table
 *
 * Every activation buffer once: where its pointer lives, its element count and what it is part
 * of. The estimate sums it, gpt_init carves the slabs (one per element type) by it. */

typedef enum { ACT_KEPT, ACT_LAYER, ACT_HEAD, ACT_SCRATCH, ACT_GROUPS } act_group;

typedef struct {
    float **f; /* an fp32 buffer, */
    act_t *a;  /* or a handle of the precision's activation dtype (f NULL) */
    size_t n;
    act_group g;
} act_size;

enum { ACT_SIZES_MAX = 40 };

typedef struct {
    act_size e[ACT_SIZES_MAX];
    int n;
    elem_type at; /* the precision's activation dtype */
} act_table;

static void add_f(act_table *t, float **f, size_t n, act_group g) { t->e[t->n++] = (act_size){f, NULL, n, g}; }
static void add_a(act_table *t, act_t *a, size_t n, act_group g)
{
    a->t = t->at;
    t->e[t->n++] = (act_size){NULL, a, n, g};
}

static size_t entry_bytes(const act_size *e) { return e->n * (e->f ? sizeof(float) : elem_size(e->a->t)); }

/* One layer's saved activations (layer l's views). */
static void layer_sizes(act_table *t, const model_config *c, int B, int T, gpt_layer_acts *a)
{
    const gpt_widths w = gpt_widths_of(c);
    const size_t BT = (size_t)B * T, C = (size_t)c->C;
    add_f(t, &a->ln1_mean, BT, ACT_LAYER);
    add_f(t, &a->ln1_rstd, BT, ACT_LAYER);
    add_f(t, &a->lse, (size_t)B * c->NH * T, ACT_LAYER);
    add_f(t, &a->ln2_mean, BT, ACT_LAYER);
    add_f(t, &a->ln2_rstd, BT, ACT_LAYER);
    add_f(t, &a->fch, BT * w.FC, ACT_LAYER);
    add_f(t, &a->res2, c->parallel_residual ? 0 : BT * C, ACT_LAYER);
    add_a(t, &a->ln1, BT * C, ACT_LAYER);
    add_a(t, &a->qkv, BT * w.QKV, ACT_LAYER);
    add_a(t, &a->atty, BT * C, ACT_LAYER);
    add_a(t, &a->ln2, BT * C, ACT_LAYER);
    add_a(t, &a->fchg, BT * w.I, ACT_LAYER);
}

/* The model-wide activations of m: the layer inputs, the output layer's, the backward's scratch
 * (attproj: the attention block output every layer shares). */
static void model_sizes(act_table *t, const model_config *c, int B, int T, int att_threads, gpt_model *m,
                        float **attproj)
{
    const gpt_widths w = gpt_widths_of(c);
    const size_t BT = (size_t)B * T, C = (size_t)c->C, V = (size_t)c->V;
    const size_t narrowed = t->at == ELEM_F32 ? 0 : 1; /* the backward's bf16 gradients */
    add_f(t, &m->a.x, (size_t)(c->L + 1) * BT * C, ACT_KEPT);
    add_a(t, &m->a.lnf, BT * C, ACT_HEAD);
    add_a(t, &m->a.dn.dlogits, narrowed * BT * V, ACT_HEAD);
    add_a(t, &m->a.dn.dres, narrowed * BT * C, ACT_HEAD);
    add_a(t, &m->a.dn.dlin, narrowed * BT * max_grad_width(c), ACT_HEAD);
    float **head[] = {&m->a.lnf_mean, &m->a.lnf_rstd, &m->a.lse, &m->a.losses, &m->a.dlosses};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++) add_f(t, head[i], BT, ACT_HEAD);
    add_f(t, &m->a.logits, BT * V, ACT_HEAD);
    add_f(t, &m->a.dres, BT * C, ACT_SCRATCH);
    add_f(t, &m->a.dln, BT * C, ACT_SCRATCH);
    add_f(t, &m->a.dln2, c->shared_norm ? BT * C : 0, ACT_SCRATCH);
    add_f(t, &m->a.dqkv, BT * w.QKV, ACT_SCRATCH);
    add_f(t, &m->a.datty, BT * C, ACT_SCRATCH);
    add_f(t, &m->a.dfch, BT * w.FC, ACT_SCRATCH);
    add_f(t, &m->a.dact, c->mlp == MLP_SWIGLU ? BT * w.I : 0, ACT_SCRATCH); /* GELU's backward runs in place in dfch */
    add_f(t, attproj, BT * C, ACT_SCRATCH);
    add_f(t, &m->a.datt_scratch, gpt_attention_scratch(c, B, T, att_threads), ACT_SCRATCH);
    add_f(t, &m->alibi, (size_t)c->NH, ACT_SCRATCH);
}

/* Bytes of each group, one layer's for ACT_LAYER. */
static void group_bytes(const act_table *t, double bytes[ACT_GROUPS])
{
    for (int g = 0; g < ACT_GROUPS; g++) bytes[g] = 0;
    for (int i = 0; i < t->n; i++) bytes[t->e[i].g] += (double)entry_bytes(&t->e[i]);
}

/* Points the table's entries into the slabs at the cursors (empty entries: NULL). */
static void carve(const act_table *t, float **fc, bf16 **hc)
{
    for (int i = 0; i < t->n; i++) {
        const act_size *e = &t->e[i];
        if (e->f) *e->f = e->n ? *fc : NULL, *fc += e->n;
        else if (e->a->t == ELEM_F32) e->a->p = e->n ? (void *)*fc : NULL, *fc += e->n;
        else e->a->p = e->n ? (void *)*hc : NULL, *hc += e->n;
    }
}

/* Elements of each slab the table needs, the layer entries `views` times. */
static void slab_counts(const act_table *t, size_t views, size_t *nf, size_t *nh)
{
    *nf = *nh = 0;
    for (int i = 0; i < t->n; i++) {
        const act_size *e = &t->e[i];
        size_t n = e->n * (e->g == ACT_LAYER ? views : 1);
        if (e->f || e->a->t == ELEM_F32) *nf += n;
        else *nh += n;
    }
}

void gpt_estimate(const model_config *cfg, int B, int T, int recompute, train_precision prec, gpt_mem *mem)
{
    const gpt_prec_ops *ops = gpt_prec_ops_of(prec);
    size_t s[P_COUNT];
    param_sizes(cfg, s);
    double n = 0;
    for (int k = 0; k < P_COUNT; k++) n += (double)s[k];
    const double BT = (double)B * T, C = cfg->C, V = cfg->V, L = cfg->L;
    /* bf16 storage: the bf16 slab and the fp32 copies of the small tensors */
    const double fp32_copies = ops->store == ELEM_BF16 ? 4.0 * (double)gpt_state_fp32_floats(s, ops->store) : 0;
    mem->params = (double)elem_size(ops->store) * n + fp32_copies;
    mem->grads = 4 * n; /* fp32 accumulation in every precision (bf16 storage rounds as the update reads them) */
    mem->moments = 2.0 * (double)elem_size(ops->store) * n;
    act_table t = {.at = ops->act};
    gpt_model views;
    gpt_layer_acts layer;
    float *attproj;
    memset(&views, 0, sizeof views);
    model_sizes(&t, cfg, B, T, omp_get_max_threads(), &views, &attproj);
    layer_sizes(&t, cfg, B, T, &layer);
    double bytes[ACT_GROUPS];
    group_bytes(&t, bytes);
    mem->acts_kept = bytes[ACT_KEPT];
    mem->acts_layer = bytes[ACT_LAYER];
    mem->logits = bytes[ACT_HEAD];
    const gpt_widths w = gpt_widths_of(cfg);
    double mats = L * ((double)w.QKV * C + C * C + (double)w.FC * C + C * (double)w.I) + V * C;
    mem->weights_bf16 = ops->act == ELEM_BF16 ? linear_bf16_weight_bytes(mats) : 0; /* the weight cache */
    mem->scratch = bytes[ACT_SCRATCH] + 8 * BT; /* and the token ids */
    mem->acts_full_no_recompute = mem->acts_kept + L * mem->acts_layer + mem->logits;
    mem->acts_full_recompute = mem->acts_kept + mem->acts_layer + mem->logits;
    double acts = recompute ? mem->acts_full_recompute : mem->acts_full_no_recompute;
    mem->total = mem->params + mem->grads + mem->moments + mem->weights_bf16 + acts + mem->scratch +
                 4.0 * rope_tables_floats(T, model_rotary_dims(cfg), cfg->HS);
}

/* The activation slabs and their views, by the size table. */
static int alloc_activations(gpt_model *m)
{
    const model_config *cfg = &m->cfg;
    const size_t BT = (size_t)m->B * m->T, nviews = m->recompute ? 1 : (size_t)cfg->L;
    m->a.att_threads = omp_get_max_threads();
    act_table t = {.at = m->ops->act};
    float *attproj;
    model_sizes(&t, cfg, m->B, m->T, m->a.att_threads, m, &attproj);
    m->a.layer = calloc((size_t)cfg->L, sizeof *m->a.layer);
    if (!m->a.layer) return CB_EFAIL;
    layer_sizes(&t, cfg, m->B, m->T, &m->a.layer[0]);
    size_t nf, nh;
    slab_counts(&t, nviews, &nf, &nh);
    m->a.acts = mem_alloc(nf, sizeof(float), "activations");
    if (nh && !(m->a.acts_bf16 = mem_alloc(nh, sizeof(bf16), "bf16 activations"))) return CB_EFAIL;
    m->inputs = calloc(BT, sizeof(int));
    m->targets = calloc(BT, sizeof(int));
    if (!m->a.acts || !m->inputs || !m->targets) return CB_EFAIL;
    float *fc = m->a.acts;
    bf16 *hc = m->a.acts_bf16;
    carve(&t, &fc, &hc);
    for (size_t l = 1; l < nviews; l++) {
        act_table tl = {.at = m->ops->act};
        layer_sizes(&tl, cfg, m->B, m->T, &m->a.layer[l]);
        carve(&tl, &fc, &hc);
    }
    for (int l = 0; l < cfg->L; l++) {
        if ((size_t)l >= nviews) m->a.layer[l] = m->a.layer[0];
        m->a.layer[l].attproj = attproj;
    }
    if (cfg->mlp != MLP_SWIGLU) m->a.dact = m->a.dfch; /* GELU's backward runs in place */
    if (cfg->pos == POS_ALIBI) attention_alibi_slopes(m->alibi, cfg->NH, MODEL_ALIBI_BIAS_MAX);
    return 0;
}

int gpt_init(gpt_model *m, const model_config *cfg, int B, int T, int recompute, train_precision prec)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->B = B, m->T = T, m->recompute = recompute, m->prec = prec;
    m->ops = gpt_prec_ops_of(prec);
    param_sizes(cfg, m->w.sizes);
    size_t off = 0;
    for (int k = 0; k < P_COUNT; k++) {
        m->w.offsets[k] = off;
        off += mem_round_floats(m->w.sizes[k]); /* every tensor starts 64-byte aligned in its slab */
    }
    m->w.nparams = off;
    m->w.mom_lo = 0, m->w.mom_hi = off;
    m->w.store = m->ops->store;
    if (gpt_state_alloc(m) != 0) goto fail;
    /* the weight cache: empty where the products read fp32 weights */
    m->cache.store = calloc((size_t)4 * cfg->L + 1, sizeof *m->cache.store);
    if (!m->cache.store) goto fail;
    m->cache.lw[P_QKVW] = m->cache.store, m->cache.lw[P_ATTPROJW] = m->cache.store + cfg->L;
    m->cache.lw[P_FCW] = m->cache.store + 2 * cfg->L, m->cache.lw[P_FCPROJW] = m->cache.store + 3 * cfg->L;
    m->cache.lw[P_UNEMBED] = m->cache.store + 4 * cfg->L;
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
    free(m->rope_store), free(m->a.acts), free(m->a.layer);
    if (m->cache.store)
        for (int i = 0; i < 4 * m->cfg.L + 1; i++) linear_bf16_weight_free(&m->cache.store[i]);
    free(m->cache.store), free(m->a.acts_bf16);
    free(m->inputs), free(m->targets);
    memset(m, 0, sizeof *m);
}