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

/* bf16 storage: the bf16 weight slab and the fp32 copies of the small tensors. */
static int alloc_full_bf16(gpt_model *m)
{
    m->w.params_bf16 = mem_calloc(m->w.nparams, sizeof(bf16), "parameters (bf16)");
    if (!m->w.params_bf16) return CB_EFAIL;
    size_t off = 0;
    for (int k = 0; k < P_COUNT; k++) {
        m->w.p_bf16[k] = m->w.params_bf16 + m->w.offsets[k];
        if (param_is_weight(k)) {
            m->w.p[k] = NULL;
        } else {
            m->w.p[k] = m->w.params + off;
            off += mem_round_floats(m->w.sizes[k]);
        }
    }
    if (m->cfg.tied_embeddings) m->w.p_bf16[P_UNEMBED] = m->w.p_bf16[P_WTE];
    return 0;
}

int gpt_state_alloc(gpt_model *m)
{
    const int full = m->w.store == ELEM_BF16;
    size_t nf = gpt_state_fp32_floats(m->w.sizes, m->w.store);
    m->w.params = mem_calloc(nf ? nf : 1, sizeof(float), full ? "parameters (fp32 copies of the small "
            "tensors)" : "parameters");
    m->w.grads = mem_calloc(m->w.nparams, sizeof(float), "gradients");
    if (!m->w.params || !m->w.grads) return CB_EFAIL;
    for (int k = 0; k < P_COUNT; k++) {
        m->w.p[k] = m->w.params + m->w.offsets[k];
        m->w.g[k] = m->w.grads + m->w.offsets[k];
    }
    if (full && alloc_full_bf16(m) != 0) return CB_EFAIL;
    m->w.m = mem_calloc(m->w.nparams, elem_size(m->w.store), "AdamW first moments");
    m->w.v = mem_calloc(m->w.nparams, elem_size(m->w.store), "AdamW second moments");
    if (!m->w.m || !m->w.v) return CB_EFAIL;
    if (m->cfg.tied_embeddings) {
        m->w.p[P_UNEMBED] = m->w.p[P_WTE];
        m->w.g[P_UNEMBED] = m->w.g[P_WTE];
    }
    return 0;
}

void gpt_state_free(gpt_model *m)
{
    free(m->w.params), free(m->w.grads), free(m->w.m), free(m->w.v);
    free(m->w.params_bf16);
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
    const int full = m->w.store == ELEM_BF16;
    memset(m->w.params, 0, gpt_state_fp32_floats(m->w.sizes, m->w.store) * sizeof(float));
    if (full) memset(m->w.params_bf16, 0, m->w.nparams * sizeof(bf16));
    for (int k = 0; k < P_COUNT; k++) { /* biases stay 0 */
        unsigned long long s = seed * 1000003ULL + (unsigned long long)k;
        if (m->w.sizes[k] == 0) continue;
        if (param_is_weight(k) && full) normal_fill_bf16(m->w.p_bf16[k], m->w.sizes[k], 0.02, &s);
        else if (param_is_weight(k)) normal_fill(m->w.p[k], m->w.sizes[k], 0.02, &s);
        else if (param_table[k].role == PARAM_NORM)
            for (size_t j = 0; j < m->w.sizes[k]; j++) {
                if (full) m->w.p_bf16[k][j] = 0x3f80; /* 1.0 */
                else m->w.p[k][j] = 1.0f;
            }
    }
    size_t held = m->w.mom_hi - m->w.mom_lo;
    memset(m->w.m, 0, held * elem_size(m->w.store));
    memset(m->w.v, 0, held * elem_size(m->w.store));
    m->w.adam_t = 0;
    m->w.sr_seed = seed;
    gpt_params_changed(m);
}

void gpt_params_changed(gpt_model *m)
{
    m->cache.fresh = 0;
    if (m->w.store == ELEM_F32) return;
    for (int k = 0; k < P_COUNT; k++) /* the fp32 copies of the small tensors */
        if (!param_is_weight(k) && m->w.sizes[k]) bf16_to_floats(m->w.p[k], m->w.p_bf16[k], m->w.sizes[k]);
}

/* ---------------------------------------------------------------- gradients */

void gpt_zero_grad(gpt_model *m)
{
    TIMED(m, K_OTHER, memset(m->w.grads, 0, m->w.nparams * sizeof(float)));
}

double gpt_grad_sumsq(gpt_model *m, size_t lo, size_t hi)
{
    double s = 0;
    TIMED(m, K_OPTIMIZER, s = grad_sumsq(m->w.grads + lo, hi > lo ? hi - lo : 0));
    return s;
}

double gpt_grad_norm(gpt_model *m) { return sqrt(gpt_grad_sumsq(m, 0, m->w.nparams)); }

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
    const size_t elem = elem_size(m->w.store);
    void *mm = shard_of(m->w.m, m->w.mom_lo, lo, hi, elem, "AdamW first moments (shard)");
    void *vv = shard_of(m->w.v, m->w.mom_lo, lo, hi, elem, "AdamW second moments (shard)");
    if (!mm || !vv) {
        free(mm), free(vv);
        return CB_EFAIL;
    }
    free(m->w.m), free(m->w.v);
    m->w.m = mm, m->w.v = vv;
    m->w.mom_lo = lo, m->w.mom_hi = hi;
    return 0;
}

size_t gpt_update(gpt_model *m, const adamw_params *hp, double grad_norm, float max_norm)
{
    double t0 = timer_now_s();
    /* clipping as a factor folded into the update: the gradients are scaled as they are read */
    float scale = max_norm > 0 && grad_norm > max_norm ? (float)(max_norm / (grad_norm + 1e-6)) : 1.0f;
    m->w.adam_t++;
    size_t bad = 0;
    for (int k = 0; k < P_COUNT; k++) {
        if (m->w.sizes[k] == 0) continue;
        adamw_params h = *hp;
        h.grad_scale = scale;
        if (!param_is_weight(k)) h.weight_decay = 0.0f; /* decay on matrices and embeddings only */
        /* the part of tensor k inside the held range */
        size_t a = m->w.offsets[k] > m->w.mom_lo ? m->w.offsets[k] : m->w.mom_lo;
        size_t b = m->w.offsets[k] + m->w.sizes[k] < m->w.mom_hi ? m->w.offsets[k] + m->w.sizes[k] : m->w.mom_hi;
        if (a < b) bad += m->ops->update_range(m, k, a, b, &h);
    }
    m->cache.fresh = 0; /* the weight cache is remade before the next forward */
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
    const int full = params && m->w.store == ELEM_BF16;
    for (int k = 0; k < P_COUNT; k++) {
        int layers = param_per_layer(k) ? m->cfg.L : 1;
        size_t per = m->w.sizes[k] / (size_t)layers;
        for (int l = 0; l < layers && per > 0; l++) {
            size_t at = (size_t)l * per;
            size_t bad = full ? count_nonfinite_bf16(m->w.p_bf16[k] + at,
                    per) : count_nonfinite((params ? m->w.p[k] : m->w.g[k]) + at, per);
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
        size_t bad = count_nonfinite(m->a.x + (size_t)l * BTC, BTC);
        if (!bad) continue;
        if (l == 0) snprintf(buf, n, "the embeddings' output: %zu of %zu values non-finite", bad, BTC);
        else snprintf(buf, n, "layer %d's output (its input finite): %zu of %zu values non-finite", l - 1, bad, BTC);
        return 1;
    }
    size_t bad = count_nonfinite(m->a.losses, (size_t)m->B * m->T);
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
