#include "presets.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvio.h"
#include "err.h"
#include "machine.h"
#include "schema.h"

static int get_int(const table *t, int row, const int *col, int i, int *out)
{
    long v;
    if (table_get_long(t, row, col[i], (long)model_schema[i].lo, (long)model_schema[i].hi, &v) != 0) return CB_EFAIL;
    *out = (int)v;
    return 0;
}

/* Row i of data/models.csv into c, every cell checked. */
static int preset_row(const table *t, int i, const int *col, model_config *c)
{
    const char *s, *path = t->path;
    int line = t->lines[i], rc = 0;
    if ((rc = table_get_str(t, i, col[MD_NAME], &s)) != 0) return rc;
    if (strlen(s) >= sizeof c->name) return err_msg("%s:%d: column 'name': too long", path, line);
    snprintf(c->name, sizeof c->name, "%s", s);
    if ((rc = table_get_str(t, i, col[MD_FAMILY], &s)) != 0) return rc;
    snprintf(c->family, sizeof c->family, "%.15s", s);
    if (get_int(t, i, col, MD_LAYERS, &c->L) || get_int(t, i, col, MD_D_MODEL, &c->C) || get_int(t, i, col, MD_HEADS, &c->NH))
        return CB_EFAIL;
    if (c->C % c->NH != 0) return err_msg("%s:%d: column 'heads': d_model %d is not a multiple of %d heads", path, line, c->C, c->NH);
    c->HS = c->C / c->NH;
    if (get_int(t, i, col, MD_VOCAB, &c->V) || get_int(t, i, col, MD_MAX_SEQ_LEN, &c->max_T)) return CB_EFAIL;
    const schema_col *sc = model_schema;
    if (table_get_double(t, i, col[MD_ROTARY_PCT], sc[MD_ROTARY_PCT].lo, sc[MD_ROTARY_PCT].hi, &c->rotary_pct) ||
        table_get_double(t, i, col[MD_ROTARY_BASE], sc[MD_ROTARY_BASE].lo, sc[MD_ROTARY_BASE].hi, &c->rotary_base) ||
        table_get_bool(t, i, col[MD_PARALLEL_RESIDUAL], &c->parallel_residual) ||
        table_get_bool(t, i, col[MD_TIED_EMBEDDINGS], &c->tied_embeddings) || table_get_str(t, i, col[MD_POS_EMB], &s))
        return CB_EFAIL;
    if (strcmp(s, "rotary") == 0) c->learned_pos = 0;
    else if (strcmp(s, "learned") == 0) c->learned_pos = 1;
    else return err_msg("%s:%d: column 'pos_emb': expected rotary or learned, got '%s'", path, line, s);
    if (!c->learned_pos && c->rotary_pct <= 0)
        return err_msg("%s:%d: column 'rotary_pct': rotary positions need rotary_pct > 0", path, line);
    if ((rc = table_get_str(t, i, col[MD_SOURCE], &s)) != 0) return rc;
    snprintf(c->source, sizeof c->source, "%.255s", s);
    return 0;
}

int model_presets_load(const char *path, model_config **out, int *n)
{
    table t;
    *out = NULL;
    *n = 0;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int col[MD_NCOLS], rc = 0;
    for (int i = 0; i < MD_NCOLS && rc == 0; i++)
        if ((col[i] = table_col(&t, model_schema[i].col.name, 1)) < 0) rc = CB_EFAIL;
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no presets", path);
    model_config *m = rc == 0 ? calloc((size_t)t.nrows, sizeof *m) : NULL;
    if (rc == 0 && !m) rc = err_msg("out of memory");
    for (int i = 0; i < t.nrows && rc == 0; i++) {
        if ((rc = preset_row(&t, i, col, &m[i])) != 0) break;
        for (int j = 0; j < i && rc == 0; j++)
            if (strcmp(m[j].name, m[i].name) == 0)
                rc = err_msg("%s:%d: column 'name': '%s' appears twice (first at line %d)", path, t.lines[i], m[i].name, t.lines[j]);
    }
    int nrows = t.nrows;
    table_free(&t);
    if (rc) {
        free(m);
        return CB_EFAIL;
    }
    *out = m;
    *n = nrows;
    return 0;
}

int model_preset_find(const char *name, model_config *out)
{
    char path[4200];
    if (machine_data_file(path, sizeof path, "models.csv") != 0) return CB_EUSAGE;
    model_config *all;
    int n;
    if (model_presets_load(path, &all, &n) != 0) return CB_EFAIL;
    for (int i = 0; i < n; i++)
        if (strcmp(all[i].name, name) == 0) {
            *out = all[i];
            free(all);
            return 0;
        }
    char list[2048] = "";
    for (int i = 0; i < n; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", all[i].name);
    }
    free(all);
    err_usage("unknown model preset '%s' (not in %s)", name, path);
    err_hint("known presets: %s", list);
    return CB_EUSAGE;
}

double model_params_non_embedding(const model_config *c)
{
    double C = c->C;
    return c->L * (12.0 * C * C + 13.0 * C);
}

double model_params_total(const model_config *c)
{
    double C = c->C;
    double emb = (double)c->V * C + (c->learned_pos ? (double)c->max_T * C : 0);
    return emb + model_params_non_embedding(c) + 2 * C + (c->tied_embeddings ? 0 : (double)c->V * C);
}

double model_flops_per_token(const model_config *c, int T)
{
    double N = 12.0 * c->L * (double)c->C * c->C + (double)c->V * c->C; /* matmul weights + output projection */
    return 6.0 * N + 12.0 * c->L * (double)c->C * T;
}

double mfu_pct(double flops_per_token, double tokens_per_s, double peak_flops)
{
    if (!(peak_flops > 0) || !isfinite(peak_flops)) return NAN;
    return 100.0 * flops_per_token * tokens_per_s / peak_flops;
}

int throughput_check(const model_config *cfg, long seq_len, double seq_per_s, double peak_flops, const char *peak_name,
                     const char *what)
{
    if (seq_len > cfg->max_T)
        return err_usage("%s: seq_len %ld exceeds %s's max_seq_len %d", what, seq_len, cfg->name, cfg->max_T);
    double mfu = mfu_pct(model_flops_per_token(cfg, (int)seq_len), seq_per_s * (double)seq_len, peak_flops);
    if (isfinite(mfu) && mfu > 100.0)
        return err_usage("%s: %.4g seq/s of %s at seq_len %ld needs %.3g%% of %s: impossible", what, seq_per_s, cfg->name,
                         seq_len, mfu, peak_name);
    return 0;
}

double model_hardware_flops_per_token(const model_config *c, int T, int recompute)
{
    double f = model_flops_per_token(c, T);
    if (recompute) f += 2.0 * 12.0 * c->L * (double)c->C * c->C + 4.0 * c->L * (double)c->C * T; /* one more layer forward */
    return f;
}

const char *precision_name(train_precision p)
{
    switch (p) {
    case PRECISION_BF16_MIXED: return "bf16-mixed";
    case PRECISION_BF16_SR: return "bf16-sr";
    case PRECISION_BF16_NEAREST: return "bf16";
    default: return "fp32";
    }
}

int precision_parse(const char *s, train_precision *out)
{
    if (strcmp(s, "fp32") == 0) *out = PRECISION_FP32;
    else if (strcmp(s, "bf16-mixed") == 0) *out = PRECISION_BF16_MIXED;
    else if (strcmp(s, "bf16") == 0 || strcmp(s, "bf16-sr") == 0) *out = PRECISION_BF16_SR;
    else if (strcmp(s, "bf16-nearest") == 0) *out = PRECISION_BF16_NEAREST;
    else return -1;
    return 0;
}
