#include "ckpt_meta.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/files.h"
#include "../common/parse.h"
#include "../common/schema.h"
#include "../kernels/bf16.h"

/* The model's configuration in the metadata: X(key, flag that sets it, format, value of config c).
 * The one definition the writer and the reader use. */
#define CKPT_MODEL_KEYS(X)                                                    \
    X(family, "--model", "%s", c->family)                                     \
    X(layers, "--layers", "%d", c->L)                                         \
    X(d_model, "--d-model", "%d", c->C)                                       \
    X(heads, "--heads", "%d", c->NH)                                          \
    X(kv_heads, "--kv-heads", "%d", model_kv_heads(c))                        \
    X(ffn_dim, "--ffn", "%d", model_ffn(c))                                   \
    X(vocab, "--vocab", "%d", c->V)                                           \
    X(max_seq_len, "--max-seq-len", "%d", c->max_T)                           \
    X(pos_emb, "--model", "%s", model_pos_embs[c->pos])                       \
    X(rotary_pct, "--model", "%.9g", c->rotary_pct)                           \
    X(rotary_base, "--model", "%.9g", c->rotary_base)                         \
    X(rotary_style, "--model", "%s", model_rotary_styles[c->rope])            \
    X(norm, "--model", "%s", model_norms[c->norm])                            \
    X(norm_eps, "--model", "%.9g", model_norm_eps(c))                         \
    X(norm_bias, "--model", "%d", !c->norm_nobias)                            \
    X(mlp, "--model", "%s", model_mlps[c->mlp])                               \
    X(attn_bias, "--model", "%d", !c->attn_nobias)                            \
    X(mlp_bias, "--model", "%d", !c->mlp_nobias)                              \
    X(lm_head_bias, "--model", "%d", c->lm_head_bias)                         \
    X(parallel_residual, "--model", "%d", c->parallel_residual)               \
    X(shared_norm, "--model", "%d", c->shared_norm)                           \
    X(tied_embeddings, "--model", "%d", c->tied_embeddings)

#define KEY_ENTRY(key, flag, fmt, value) {#key, flag},
static const struct {
    const char *key, *flag;
} model_keys[] = {CKPT_MODEL_KEYS(KEY_ENTRY)};
enum { NKEYS = sizeof model_keys / sizeof model_keys[0] };

/* Key i of model_keys: c's value as the metadata holds it. */
static void model_value(const model_config *c, int i, char *buf, size_t n)
{
    int k = 0;
#define KEY_VALUE(key, flag, fmt, value) \
    if (k++ == i) snprintf(buf, n, fmt, value);
    CKPT_MODEL_KEYS(KEY_VALUE)
#undef KEY_VALUE
}

static void meta_add(ckpt_meta *ml, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void meta_add(ckpt_meta *ml, const char *key, const char *fmt, ...)
{
    if (ml->n == CKPT_META_MAX) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ml->buf[ml->n], sizeof ml->buf[0], fmt, ap);
    va_end(ap);
    ml->kv[2 * ml->n] = key;
    ml->kv[2 * ml->n + 1] = ml->buf[ml->n];
    ml->n++;
}

void ckpt_meta_write(ckpt_meta *ml, const model_config *c, const char *precision, const ckpt_state *st, int optimizer,
                     int adam_t)
{
    ml->n = 0;
    meta_add(ml, "format", "%s", "pt");
    meta_add(ml, "costbench_model", "%s", c->name);
    for (int i = 0; i < NKEYS; i++) {
        char v[64];
        model_value(c, i, v, sizeof v);
        meta_add(ml, model_keys[i].key, "%s", v);
    }
    meta_add(ml, "precision", "%s", precision);
    meta_add(ml, "step", "%ld", st->step);
    meta_add(ml, "run_id", "%016llx", (unsigned long long)st->run_id);
    if (!optimizer) return;
    meta_add(ml, "adam_t", "%d", adam_t);
    meta_add(ml, "seed", "%llu", st->seed);
    meta_add(ml, "micro_batch", "%d", st->B);
    meta_add(ml, "seq", "%d", st->T);
    meta_add(ml, "accum", "%d", st->accum);
}

/* ---------------------------------------------------------------- reading */

int ckpt_meta_precision(const st_file *f, train_precision *out)
{
    const char *p = st_meta(f, "precision");
    if (!p) return *out = PRECISION_FP32, 0;
    if (strcmp(p, "bf16") == 0) return *out = PRECISION_BF16_NEAREST, 0; /* written before bf16-nearest had its name */
    return precision_parse(p, out);
}

/* Every recorded field of the model equal to c's; the unrecorded ones named in one warning when
 * `warn` is set. */
static int check_model(const st_file *f, const model_config *c, const char *dir, int warn)
{
    char missing[512] = "";
    for (int i = 0; i < NKEYS; i++) {
        const char *had = st_meta(f, model_keys[i].key);
        size_t l = strlen(missing);
        if (!had) {
            snprintf(missing + l, sizeof missing - l, "%s%s", l ? ", " : "", model_keys[i].key);
            continue;
        }
        char v[64];
        model_value(c, i, v, sizeof v);
        if (strcmp(had, v) != 0)
            return err_usage("--resume %s: the checkpoint's model has %s %.64s; this run has %s (flag '%s')", dir,
                             model_keys[i].key, had, v, model_keys[i].flag);
    }
    if (warn && missing[0])
        err_warn("%s: written by an older costbench: the model's %s are not recorded, and not checked", f->path,
                 missing);
    return 0;
}

static int meta_long(const st_file *f, const char *key, long lo, long hi, long *out)
{
    const char *v = st_meta(f, key);
    if (!v) return err_msg("%s: metadata '%s' is missing", f->path, key);
    char what[CB_WHERE_MAX];
    if (path_fmt(what, sizeof what, "%s: metadata '%s'", f->path, key) != 0) return CB_EFAIL;
    return parse_long(v, lo, hi, 0, what, out) == 0 ? 0 : CB_EFAIL;
}

static int meta_u64(const st_file *f, const char *key, int base, uint64_t *out)
{
    const char *v = st_meta(f, key);
    char *end = NULL;
    errno = 0;
    unsigned long long x = v ? strtoull(v, &end, base) : 0;
    if (!v || !*v || *end || errno || v[0] == '-')
        return err_msg("%s: metadata '%s' is %s", f->path, key, v ? "not a number" : "missing");
    *out = (uint64_t)x;
    return 0;
}

/* Step and run id of one file's metadata; the optimizer file's batch shape, seed and adam_t. */
static int read_position(const st_file *f, int optimizer, ckpt_state *st, long *adam_t)
{
    long step, B, T, accum;
    int rc = meta_long(f, "step", 0, 1L << 50, &step);
    if (rc == 0) rc = meta_u64(f, "run_id", 16, &st->run_id);
    if (rc == 0) st->step = step;
    if (rc != 0 || !optimizer) return rc;
    uint64_t seed = 0;
    if (rc == 0) rc = meta_long(f, "adam_t", 0, INT_MAX, adam_t);
    if (rc == 0) rc = meta_long(f, "micro_batch", 1, 1 << 20, &B);
    if (rc == 0) rc = meta_long(f, "seq", 1, 1 << 24, &T);
    if (rc == 0) rc = meta_long(f, "accum", 1, 1 << 20, &accum);
    if (rc == 0) rc = meta_u64(f, "seed", 10, &seed);
    if (rc == 0) st->B = (int)B, st->T = (int)T, st->accum = (int)accum, st->seed = seed;
    return rc;
}

int ckpt_meta_check_weights(const st_file *f, const model_config *c, const char *dir, long latest, ckpt_state *w)
{
    int rc = check_model(f, c, dir, 1);
    if (rc == 0) rc = read_position(f, 0, w, NULL);
    if (rc == 0 && w->step != latest)
        rc = err_msg("%s: the parts disagree: 'latest' names step %ld, model.safetensors says step %ld", f->path,
                     latest, w->step);
    return rc;
}

int ckpt_meta_check_optimizer(const st_file *f, const model_config *c, const char *dir, const ckpt_state *w,
                              const ckpt_state *expect, ckpt_state *got, int *adam_t)
{
    long t = 0;
    int rc = check_model(f, c, dir, 0);
    if (rc == 0) rc = read_position(f, 1, got, &t);
    if (rc != 0) return rc;
    /* the parts must describe one step of one run */
    if (got->step != w->step)
        return err_msg(
            "%s: the parts disagree: 'latest' and model.safetensors name step %ld, optimizer.safetensors step %ld",
            f->path, w->step, got->step);
    if (got->run_id != w->run_id)
        return err_msg(
            "%s: model.safetensors (run %016llx) and optimizer.safetensors (run %016llx) come from different runs",
            f->path, (unsigned long long)w->run_id, (unsigned long long)got->run_id);
    if (expect->B != got->B || expect->T != got->T || expect->accum != got->accum || expect->seed != got->seed)
        return err_usage("--resume %s: the checkpoint was written with --micro-batch %d --seq %d --global-batch %d "
                         "--seed %llu; this run has %d, %d, %d, %llu",
                         dir, got->B, got->T, got->B * got->accum, got->seed, expect->B, expect->T,
                         expect->B * expect->accum, expect->seed);
    if (t != got->step)
        return err_msg("%s: metadata 'adam_t': expected %ld, the step (one AdamW update a step), got %ld", f->path,
                       got->step, t);
    *adam_t = (int)t;
    return 0;
}

int ckpt_meta_read_tensor(const st_file *f, const char *name, void *dst, const int64_t *shape, int ndim, int as_bf16)
{
    int rc = as_bf16 ? st_read_bf16(f, name, dst, shape, ndim) : st_read_f32(f, name, dst, shape, ndim);
    if (rc != 0 || strncmp(name, CKPT_EXP_AVG_SQ, strlen(CKPT_EXP_AVG_SQ)) != 0) return rc;
    size_t count = 1, bad = 0, first = 0;
    for (int i = 0; i < ndim; i++) count *= (size_t)shape[i];
    const float *x = dst;
    const uint16_t *h = dst;
    for (size_t i = count; i-- > 0;) /* st_read_* refused NaN: negative means below zero (-0 is zero) */
        if (as_bf16 ? (h[i] & 0x8000u) && (h[i] & 0x7fffu) : x[i] < 0) bad++, first = i;
    if (!bad) return 0;
    double v = as_bf16 ? bf16_to_float(h[first]) : x[first];
    return err_msg("%s: tensor '%s': expected second moments >= 0, got %g at element %zu (%zu of %zu negative)",
                   f->path, name, v, first, bad, count);
}

double ckpt_moment_bound(double b1, double b2)
{
    if (!(b1 >= 0 && b1 < 1 && b2 > 0 && b2 < 1 && b1 * b1 < b2)) return INFINITY;
    return (1 - b1) / sqrt((1 - b2) * (1 - b1 * b1 / b2));
}

size_t ckpt_moments_over(const void *m, const void *v, size_t n, int as_bf16, double k, size_t *first)
{
    if (!isfinite(k)) return 0;
    const double rel = k * (as_bf16 ? 1.25 : 1.001), abs_slack = 1e-15;
    const float *mf = m, *vf = v;
    const uint16_t *mh = m, *vh = v;
    size_t over = 0;
    for (size_t i = n; i-- > 0;) {
        double a = as_bf16 ? bf16_to_float(mh[i]) : mf[i], b = as_bf16 ? bf16_to_float(vh[i]) : vf[i];
        if (fabs(a) > rel * sqrt(b > 0 ? b : 0) + abs_slack) over++, *first = i;
    }
    return over;
}
