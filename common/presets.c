#include "presets.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvio.h"
#include "err.h"
#include "machine.h"

int model_presets_load(const char *path, model_config **out, int *n)
{
    table t;
    *out = NULL;
    *n = 0;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    static const char *names[] = {"name", "family", "layers", "d_model", "heads", "vocab", "rotary_pct",
                                  "rotary_base", "parallel_residual", "tied_embeddings", "pos_emb", "max_seq_len",
                                  "source"};
    enum { NAME, FAMILY, LAYERS, DMODEL, HEADS, VOCAB, RPCT, RBASE, PAR, TIED, POS, MAXT, SOURCE, NCOL };
    int col[NCOL];
    for (int i = 0; i < NCOL; i++)
        if ((col[i] = table_col(&t, names[i], 1)) < 0) {
            table_free(&t);
            return CB_EFAIL;
        }
    model_config *m = calloc((size_t)(t.nrows ? t.nrows : 1), sizeof *m);
    if (!m) {
        table_free(&t);
        return err_msg("out of memory");
    }
    int rc = 0;
    for (int i = 0; i < t.nrows && rc == 0; i++) {
        model_config *c = &m[i];
        const char *s;
        long v;
        if ((rc = table_get_str(&t, i, col[NAME], &s)) != 0) break;
        if (strlen(s) >= sizeof c->name) { rc = err_msg("%s:%d: column 'name': too long", path, t.lines[i]); break; }
        snprintf(c->name, sizeof c->name, "%s", s);
        for (int j = 0; j < i; j++)
            if (strcmp(m[j].name, c->name) == 0) rc = err_msg("%s:%d: column 'name': '%s' appears twice (first at line %d)", path, t.lines[i], c->name, t.lines[j]);
        if (rc) break;
        if ((rc = table_get_str(&t, i, col[FAMILY], &s)) != 0) break;
        snprintf(c->family, sizeof c->family, "%s", s);
        if ((rc = table_get_long(&t, i, col[LAYERS], 1, 1000, &v)) != 0) break;
        c->L = (int)v;
        if ((rc = table_get_long(&t, i, col[DMODEL], 1, 131072, &v)) != 0) break;
        c->C = (int)v;
        if ((rc = table_get_long(&t, i, col[HEADS], 1, 4096, &v)) != 0) break;
        c->NH = (int)v;
        if (c->C % c->NH != 0) {
            rc = err_msg("%s:%d: column 'heads': d_model %d is not a multiple of %d heads", path, t.lines[i], c->C, c->NH);
            break;
        }
        c->HS = c->C / c->NH;
        if ((rc = table_get_long(&t, i, col[VOCAB], 1, 10000000, &v)) != 0) break;
        c->V = (int)v;
        if ((rc = table_get_double(&t, i, col[RPCT], 0.0, 1.0, &c->rotary_pct)) != 0) break;
        if ((rc = table_get_double(&t, i, col[RBASE], 1.0, 1e12, &c->rotary_base)) != 0) break;
        if ((rc = table_get_bool(&t, i, col[PAR], &c->parallel_residual)) != 0) break;
        if ((rc = table_get_bool(&t, i, col[TIED], &c->tied_embeddings)) != 0) break;
        if ((rc = table_get_str(&t, i, col[POS], &s)) != 0) break;
        if (strcmp(s, "rotary") == 0) c->learned_pos = 0;
        else if (strcmp(s, "learned") == 0) c->learned_pos = 1;
        else { rc = err_msg("%s:%d: column 'pos_emb': expected rotary or learned, got '%s'", path, t.lines[i], s); break; }
        if (!c->learned_pos && c->rotary_pct <= 0) {
            rc = err_msg("%s:%d: column 'rotary_pct': rotary positions need rotary_pct > 0", path, t.lines[i]);
            break;
        }
        if ((rc = table_get_long(&t, i, col[MAXT], 1, 1 << 20, &v)) != 0) break;
        c->max_T = (int)v;
        if ((rc = table_get_str(&t, i, col[SOURCE], &s)) != 0) break;
        snprintf(c->source, sizeof c->source, "%s", s);
    }
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no presets", path);
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
