/* gpt_state.c: the model's parameters, gradients and AdamW state in each precision: their slabs,
 * the initialisation, the optimizer step, ZeRO-1 sharding of the moments and the search for
 * non-finite values. The forward and backward are in gpt.c. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/splitmix.h"
#include "../common/mem.h"
#include "gpt_internal.h"

size_t gpt_state_fp32_floats(const size_t *sizes, elem_type store)
{
    size_t n = 0;
    for (int k = 0; k < P_COUNT; k++)
        if (store == ELEM_F32 || !param_is_weight(k)) n += mem_round_floats(sizes[k]);
    return n;
}

/* bf16 storage: the bf16 slabs (weights, both moments) and the fp32 copies of the small tensors. */
static int alloc_full_bf16(gpt_model *m)
{
    m->params16 = mem_calloc(m->nparams, sizeof(bf16), "parameters (bf16)");
    m->m16 = mem_calloc(m->nparams, sizeof(bf16), "AdamW first moments (bf16)");
    m->v16 = mem_calloc(m->nparams, sizeof(bf16), "AdamW second moments (bf16)");
    if (!m->params16 || !m->m16 || !m->v16) return CB_EFAIL;
    size_t off = 0;
    for (int k = 0; k < P_COUNT; k++) {
        m->ph[k] = m->params16 + m->offsets[k];
        if (param_is_weight(k)) {
            m->p[k] = NULL;
        } else {
            m->p[k] = m->params + off;
            off += mem_round_floats(m->sizes[k]);
        }
    }
    if (m->cfg.tied_embeddings) m->ph[P_UNEMBED] = m->ph[P_WTE];
    return 0;
}

int gpt_state_alloc(gpt_model *m)
{
    const int full = m->ops->store == ELEM_BF16;
    size_t nf = gpt_state_fp32_floats(m->sizes, m->ops->store);
    m->params = mem_calloc(nf ? nf : 1, sizeof(float), full ? "parameters (fp32 copies of the small "
            "tensors)" : "parameters");
    m->grads = mem_calloc(m->nparams, sizeof(float), "gradients");
    if (!m->params || !m->grads) return CB_EFAIL;
    for (int k = 0; k < P_COUNT; k++) {
        m->p[k] = m->params + m->offsets[k];
        m->g[k] = m->grads + m->offsets[k];
    }
    if (full) {
        if (alloc_full_bf16(m) != 0) return CB_EFAIL;
    } else {
        m->m = mem_calloc(m->nparams, sizeof(float), "AdamW first moments");
        m->v = mem_calloc(m->nparams, sizeof(float), "AdamW second moments");
        if (!m->m || !m->v) return CB_EFAIL;
    }
    if (m->cfg.tied_embeddings) {
        m->p[P_UNEMBED] = m->p[P_WTE];
        m->g[P_UNEMBED] = m->g[P_WTE];
    }
    return 0;
}

void gpt_state_free(gpt_model *m)
{
    free(m->params), free(m->grads), free(m->m), free(m->v);
    free(m->params16), free(m->m16), free(m->v16);
}

/* ---------------------------------------------------------------- initialisation */

/* splitmix64 + Box-Muller: deterministic normal numbers. */
static unsigned long long sm64(unsigned long long *s) { return splitmix64(s); }

/* n normal numbers continuing generator state *s (n even, or the last call of a sequence). */
static void normal_fill(float *x, size_t n, double sd, unsigned long long *s)
{
    for (size_t i = 0; i < n; i += 2) {
        double u1 = ((sm64(s) >> 11) + 1.0) / 9007199254740993.0, u2 = (sm64(s) >> 11) / 9007199254740992.0;
        double r = sqrt(-2.0 * log(u1));
        x[i] = (float)(sd * r * cos(2 * M_PI * u2));
        if (i + 1 < n) x[i + 1] = (float)(sd * r * sin(2 * M_PI * u2));
    }
}

/* The same numbers as normal_fill, rounded to bf16 (nearest), a chunk at a time. */
static void normal_fill_bf16(bf16 *x, size_t n, double sd, unsigned long long *s)
{
    float buf[4096];
    for (size_t a = 0; a < n; a += 4096) {
        size_t k = n - a < 4096 ? n - a : 4096;
        normal_fill(buf, k, sd, s);
        for (size_t i = 0; i < k; i++) x[a + i] = bf16_from_float(buf[i]);
    }
}

/* Hugging Face GPTNeoXPreTrainedModel._init_weights (gpt.h), by each tensor's role
 * (common/params.h); bf16 storage: the same values rounded to bf16. */
void gpt_init_weights(gpt_model *m, unsigned long long seed)
{
    const int full = m->ops->store == ELEM_BF16;
    memset(m->params, 0, gpt_state_fp32_floats(m->sizes, m->ops->store) * sizeof(float));
    if (full) memset(m->params16, 0, m->nparams * sizeof(bf16));
    for (int k = 0; k < P_COUNT; k++) { /* biases stay 0 */
        unsigned long long s = seed * 1000003ULL + (unsigned long long)k;
        if (m->sizes[k] == 0) continue;
        if (param_is_weight(k) && full) normal_fill_bf16(m->ph[k], m->sizes[k], 0.02, &s);
        else if (param_is_weight(k)) normal_fill(m->p[k], m->sizes[k], 0.02, &s);
        else if (param_table[k].role == PARAM_NORM)
            for (size_t j = 0; j < m->sizes[k]; j++) {
                if (full) m->ph[k][j] = 0x3f80; /* 1.0 */
                else m->p[k][j] = 1.0f;
            }
    }
    size_t held = m->mom_hi - m->mom_lo;
    if (full) {
        memset(m->m16, 0, held * sizeof(bf16));
        memset(m->v16, 0, held * sizeof(bf16));
    } else {
        memset(m->m, 0, held * sizeof(float));
        memset(m->v, 0, held * sizeof(float));
    }
    m->adam_t = 0;
    m->sr_seed = seed;
    gpt_params_changed(m);
}

void gpt_params_changed(gpt_model *m)
{
    m->wh_fresh = 0;
    if (m->ops->store == ELEM_F32) return;
    for (int k = 0; k < P_COUNT; k++) /* the fp32 copies of the small tensors */
        if (!param_is_weight(k) && m->sizes[k]) bf16_to_floats(m->p[k], m->ph[k], m->sizes[k]);
}

/* ---------------------------------------------------------------- gradients */

void gpt_zero_grad(gpt_model *m)
{
    TIMED(m, K_OTHER, memset(m->grads, 0, m->nparams * sizeof(float)));
}

double gpt_grad_sumsq(gpt_model *m, size_t lo, size_t hi)
{
    double s = 0;
    TIMED(m, K_OPTIMIZER, s = grad_sumsq(m->grads + lo, hi > lo ? hi - lo : 0));
    return s;
}

double gpt_grad_norm(gpt_model *m) { return sqrt(gpt_grad_sumsq(m, 0, m->nparams)); }

void gpt_profile_reset(gpt_model *m) { memset(&m->prof, 0, sizeof m->prof); }

/* ---------------------------------------------------------------- optimizer */

/* A moment slab's [lo, hi) part copied into a new one of hi - lo elements of `elem` bytes. */
static void *shard_of(const void *full, size_t from, size_t lo, size_t hi, size_t elem, const char *what)
{
    size_t n = hi > lo ? hi - lo : 0;
    void *p = mem_alloc(n ? n : 1, elem, what);
    if (p && n) memcpy(p, (const char *)full + (lo - from) * elem, n * elem);
    return p;
}

int gpt_shard_moments(gpt_model *m, size_t lo, size_t hi)
{
    const int full = m->ops->store == ELEM_BF16;
    const size_t elem = elem_size(m->ops->store);
    void **pm = full ? (void **)&m->m16 : (void **)&m->m, **pv = full ? (void **)&m->v16 : (void **)&m->v;
    void *mm = shard_of(*pm, m->mom_lo, lo, hi, elem, "AdamW first moments (shard)");
    void *vv = shard_of(*pv, m->mom_lo, lo, hi, elem, "AdamW second moments (shard)");
    if (!mm || !vv) {
        free(mm), free(vv);
        return CB_EFAIL;
    }
    free(*pm), free(*pv);
    *pm = mm, *pv = vv;
    m->mom_lo = lo, m->mom_hi = hi;
    return 0;
}

size_t gpt_update(gpt_model *m, const adamw_params *hp, double grad_norm, float max_norm)
{
    double t0 = timer_now_s();
    /* clipping as a factor folded into the update: the gradients are scaled as they are read */
    float scale = max_norm > 0 && grad_norm > max_norm ? (float)(max_norm / (grad_norm + 1e-6)) : 1.0f;
    m->adam_t++;
    size_t bad = 0;
    for (int k = 0; k < P_COUNT; k++) {
        if (m->sizes[k] == 0) continue;
        adamw_params h = *hp;
        h.grad_scale = scale;
        if (!param_is_weight(k)) h.weight_decay = 0.0f; /* decay on matrices and embeddings only */
        /* the part of tensor k inside the held range */
        size_t a = m->offsets[k] > m->mom_lo ? m->offsets[k] : m->mom_lo;
        size_t b = m->offsets[k] + m->sizes[k] < m->mom_hi ? m->offsets[k] + m->sizes[k] : m->mom_hi;
        if (a < b) bad += m->ops->update_range(m, k, a, b, &h);
    }
    m->wh_fresh = 0; /* the weight cache is remade before the next forward */
    m->prof.kind_s[K_OPTIMIZER] += timer_now_s() - t0;
    return bad;
}

/* ---------------------------------------------------------------- diagnosis */

static size_t count_nonfinite(const float *x, size_t n)
{
    size_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
    for (size_t i = 0; i < n; i++) bad += !isfinite(x[i]);
    return bad;
}

static size_t count_nonfinite_bf16(const bf16 *x, size_t n)
{
    size_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
    for (size_t i = 0; i < n; i++) bad += (x[i] & 0x7f80u) == 0x7f80u;
    return bad;
}

/* The first tensor of the parameters (params: 1) or the gradients holding a non-finite value. */
static int nonfinite_tensor(const gpt_model *m, int params, const char *what, char *buf, size_t n)
{
    const int full = params && m->ops->store == ELEM_BF16;
    for (int k = 0; k < P_COUNT; k++) {
        int layers = param_per_layer(k) ? m->cfg.L : 1;
        size_t per = m->sizes[k] / (size_t)layers;
        for (int l = 0; l < layers && per > 0; l++) {
            size_t at = (size_t)l * per;
            size_t bad = full ? count_nonfinite_bf16(m->ph[k] + at,
                    per) : count_nonfinite((params ? m->p[k] : m->g[k]) + at, per);
            if (!bad) continue;
            char name[96];
            gpt_param_name(m, k, l, name, sizeof name);
            snprintf(buf, n, "%s '%s': %zu of %zu values non-finite", what, name, bad, per);
            return 1;
        }
    }
    return 0;
}

int gpt_find_nonfinite(const gpt_model *m, char *buf, size_t n)
{
    if (nonfinite_tensor(m, 1, "parameter", buf, n)) return 1;
    const size_t BTC = (size_t)m->B * m->T * m->cfg.C;
    for (int l = 0; l <= m->cfg.L; l++) {
        size_t bad = count_nonfinite(m->x + (size_t)l * BTC, BTC);
        if (!bad) continue;
        if (l == 0) snprintf(buf, n, "the embeddings' output: %zu of %zu values non-finite", bad, BTC);
        else snprintf(buf, n, "layer %d's output (its input finite): %zu of %zu values non-finite", l - 1, bad, BTC);
        return 1;
    }
    size_t bad = count_nonfinite(m->losses, (size_t)m->B * m->T);
    if (bad) {
        snprintf(buf, n, "the loss of %zu of %d tokens (every layer's output finite: the output projection or the "
                "cross-entropy overflowed)",
                 bad, m->B * m->T);
        return 1;
    }
    if (nonfinite_tensor(m, 0, "the gradient of", buf, n)) return 1;
    buf[0] = '\0';
    return 0;
}
