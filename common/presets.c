#include "presets.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvio.h"
#include "err.h"
#include "machine.h"
#include "schema.h"
#include "files.h"

static int get_int(const table *t, int row, const int *col, int i, int *out)
{
    long v;
    if (table_get_long(t, row, col[i], (long)model_schema[i].lo, (long)model_schema[i].hi, &v) != 0) return CB_EFAIL;
    *out = (int)v;
    return 0;
}

/* 1 when an optional column is missing (c < 0) or its cell in this row is empty: the default applies. */
static int cell_empty(const table *t, int row, int c) { return c < 0 || *table_cell(t, row, c) == '\0'; }

/* Column i holds one of names[0..n): its index, or `dflt` when the column is optional and the
 * cell empty; anything else is an error listing the accepted values. */
static int get_choice(const table *t, int row, const int *col, int i, const char *const *names, int n, int dflt,
                      int *out)
{
    if (dflt >= 0 && cell_empty(t, row, col[i])) {
        *out = dflt;
        return 0;
    }
    return table_get_word(t, row, col[i], names, n, out);
}

static int get_opt_bool(const table *t, int row, const int *col, int i, int dflt, int *out)
{
    *out = dflt;
    return cell_empty(t, row, col[i]) ? 0 : table_get_bool(t, row, col[i], out);
}

static int get_opt_int(const table *t, int row, const int *col, int i, int *out)
{
    *out = 0;
    return cell_empty(t, row, col[i]) ? 0 : get_int(t, row, col, i, out);
}

/* The required columns of row i (the GPT-NeoX / GPT-3 description every preset has). */
static int preset_row_base(const table *t, int i, const int *col, model_config *c)
{
    const char *s, *path = t->path;
    int line = t->lines[i], rc = 0, fam = 0, pos = 0;
    if ((rc = table_get_str(t, i, col[MD_NAME], &s)) != 0) return rc;
    if (strlen(s) >= sizeof c->name) return err_msg("%s:%d: column 'name': too long", path, line);
    snprintf(c->name, sizeof c->name, "%s", s);
    if (get_choice(t, i, col, MD_FAMILY, model_families, MD_NFAMILIES, -1, &fam) != 0) return CB_EFAIL;
    snprintf(c->family, sizeof c->family, "%s", model_families[fam]);
    if (get_int(t, i, col, MD_LAYERS, &c->L) || get_int(t, i, col, MD_D_MODEL, &c->C) ||
        get_int(t, i, col, MD_HEADS, &c->NH))
        return CB_EFAIL;
    if (c->C % c->NH != 0)
        return err_msg("%s:%d: column 'heads': d_model %d is not a multiple of %d heads", path, line, c->C, c->NH);
    c->HS = c->C / c->NH;
    if (get_int(t, i, col, MD_VOCAB, &c->V) || get_int(t, i, col, MD_MAX_SEQ_LEN, &c->max_T)) return CB_EFAIL;
    const schema_col *sc = model_schema;
    if (table_get_double(t, i, col[MD_ROTARY_PCT], sc[MD_ROTARY_PCT].lo, sc[MD_ROTARY_PCT].hi, &c->rotary_pct) ||
        table_get_double(t, i, col[MD_ROTARY_BASE], sc[MD_ROTARY_BASE].lo, sc[MD_ROTARY_BASE].hi, &c->rotary_base) ||
        table_get_bool(t, i, col[MD_PARALLEL_RESIDUAL], &c->parallel_residual) ||
        table_get_bool(t, i, col[MD_TIED_EMBEDDINGS], &c->tied_embeddings) ||
        get_choice(t, i, col, MD_POS_EMB, model_pos_embs, 3, -1, &pos))
        return CB_EFAIL;
    c->pos = (pos_kind)pos;
    if (c->pos == POS_ROTARY && c->rotary_pct <= 0)
        return err_msg("%s:%d: column 'rotary_pct': rotary positions need rotary_pct > 0", path, line);
    if ((rc = table_get_str(t, i, col[MD_SOURCE], &s)) != 0) return rc;
    snprintf(c->source, sizeof c->source, "%.255s", s);
    return 0;
}

/* The optional architecture columns of row i (empty: GPT-NeoX's choice). */
static int preset_row_arch(const table *t, int i, const int *col, model_config *c)
{
    int norm = 0, mlp = 0, rope = 0, norm_bias = 1, attn_bias = 1, mlp_bias = 1;
    if (get_choice(t, i, col, MD_NORM, model_norms, 2, NORM_LAYERNORM, &norm) ||
        get_choice(t, i, col, MD_MLP, model_mlps, 2, MLP_GELU, &mlp) ||
        get_choice(t, i, col, MD_ROTARY_STYLE, model_rotary_styles, 2, ROPE_NEOX, &rope) ||
        get_opt_bool(t, i, col, MD_NORM_BIAS, norm == NORM_LAYERNORM, &norm_bias) ||
        get_opt_bool(t, i, col, MD_ATTN_BIAS, 1, &attn_bias) || get_opt_bool(t, i, col, MD_MLP_BIAS, 1, &mlp_bias) ||
        get_opt_bool(t, i, col, MD_LM_HEAD_BIAS, 0, &c->lm_head_bias) ||
        get_opt_bool(t, i, col, MD_SHARED_NORM, 0, &c->shared_norm) || get_opt_int(t, i, col, MD_FFN_DIM, &c->ffn) ||
        get_opt_int(t, i, col, MD_KV_HEADS, &c->KVH))
        return CB_EFAIL;
    c->norm_eps = 0;
    const schema_col *e = &model_schema[MD_NORM_EPS];
    if (!cell_empty(t, i, col[MD_NORM_EPS]) &&
        table_get_double(t, i, col[MD_NORM_EPS], e->lo, e->hi, &c->norm_eps) != 0)
        return CB_EFAIL;
    if (norm == NORM_RMSNORM && norm_bias)
        return err_msg("%s:%d: column 'norm_bias': rmsnorm has no bias; expected false or an empty cell", t->path,
                       t->lines[i]);
    c->norm = (norm_kind)norm, c->mlp = (mlp_kind)mlp, c->rope = (rope_style)rope;
    c->norm_nobias = !norm_bias, c->attn_nobias = !attn_bias, c->mlp_nobias = !mlp_bias;
    return 0;
}

/* Row i of data/models.csv into c, every cell checked, then the rules between the cells. */
static int preset_row(const table *t, int i, const int *col, model_config *c)
{
    if (preset_row_base(t, i, col, c) != 0 || preset_row_arch(t, i, col, c) != 0) return CB_EFAIL;
    const char *column;
    char why[256];
    if (model_config_check(c, &column, why, sizeof why) != 0)
        return err_msg("%s:%d: column '%s': %s", t->path, t->lines[i], column, why);
    return 0;
}

/* model_config_check's failure: the column and the reason. */
__attribute__((format(printf, 5, 6))) static int check_fail(const char **column, const char *name, char *why, size_t n,
                                                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    *column = name;
    return -1;
}

int model_config_check(const model_config *c, const char **column, char *why, size_t n)
{
    int kvh = model_kv_heads(c);
    *column = "";
    if (kvh > c->NH || c->NH % kvh != 0)
        return check_fail(column, "kv_heads", why, n, "%d heads are not a multiple of %d kv_heads", c->NH, kvh);
    if (c->mlp == MLP_SWIGLU && c->ffn <= 0)
        return check_fail(column, "ffn_dim", why, n, "swiglu needs ffn_dim (its intermediate width has no default)");
    /* Llama's width is multiple_of * ceil(int(2 * 4C / 3 * ffn_dim_multiplier) / multiple_of) with
     * multiple_of 256 (Llama-2 70B: 28672); tiny test models use small multiples of 8, so 8 is the rule. */
    if (c->mlp == MLP_SWIGLU && c->ffn % 8 != 0)
        return check_fail(column, "ffn_dim", why, n,
                          "SwiGLU ffn_dim must be a positive multiple of 8 (Llama rounds 8C/3 up to a multiple of "
                          "256), got %d",
                          c->ffn);
    if (c->norm == NORM_LAYERNORM && c->norm_eps != 0 && c->norm_eps != 1e-5)
        return check_fail(column, "norm_eps", why, n,
                          "a layernorm preset needs 1e-5, the epsilon of costbench's LayerNorm kernel, got %g",
                          c->norm_eps);
    if (c->pos == POS_ALIBI && c->rotary_pct != 0)
        return check_fail(column, "rotary_pct", why, n, "alibi positions need rotary_pct 0, got %g", c->rotary_pct);
    if (c->shared_norm && !c->parallel_residual)
        return check_fail(column, "shared_norm", why, n, "a shared norm needs parallel_residual true");
    /* rotary positions on fewer than 2 of a head's dimensions are none at all */
    int hs = c->NH > 0 ? c->C / c->NH : 0;
    if (c->pos == POS_ROTARY && c->rotary_pct > 0 && hs > 0 && rotary_dims_of(hs, c->rotary_pct) < 2)
        return check_fail(column, "rotary_pct", why, n,
                          "rotary_pct %g of a head of %d dimensions rotates none of them (at least 2)", c->rotary_pct,
                          hs);
    return 0;
}

int rotary_dims_of(int HS, double rotary_pct)
{
    int r = (int)(HS * rotary_pct);
    r -= r % 2;
    if (r < 0) r = 0;
    if (r > HS) r = HS - HS % 2;
    return r;
}

int model_rotary_dims(const model_config *c) { return c->pos == POS_ROTARY ? rotary_dims_of(c->HS, c->rotary_pct) : 0; }

int model_presets_load(const char *path, model_config **out, int *n)
{
    table t;
    *out = NULL;
    *n = 0;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int col[MD_NCOLS], rc = 0;
    for (int i = 0; i < MD_NCOLS && rc == 0; i++)
        if ((col[i] = table_col(&t, model_schema[i].col.name, model_schema[i].required)) < 0 &&
            model_schema[i].required)
            rc = CB_EFAIL;
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no presets", path);
    model_config *m = rc == 0 ? calloc((size_t)t.nrows, sizeof *m) : NULL;
    if (rc == 0 && !m) rc = err_msg("out of memory");
    for (int i = 0; i < t.nrows && rc == 0; i++) {
        if ((rc = preset_row(&t, i, col, &m[i])) != 0) break;
        for (int j = 0; j < i && rc == 0; j++)
            if (strcmp(m[j].name, m[i].name) == 0)
                rc = err_msg("%s:%d: column 'name': '%s' appears twice (first at line %d)", path, t.lines[i], m[i].name,
                             t.lines[j]);
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

int model_preset_find(const char *name, model_config *out) { return model_preset_find_in(NULL, name, out); }

int model_preset_find_in(const char *models_path, const char *name, model_config *out)
{
    char def[CB_PATH_MAX];
    const char *path = models_path;
    if (!path && machine_data_file(def, sizeof def, "models.csv") != 0) return CB_EUSAGE;
    if (!path) path = def;
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

/* The names model_describe gives each architecture choice (data/models.csv's spellings are
 * common/schema.h's model_norms, model_mlps, model_pos_embs). */
static const char *const norm_titles[] = {[NORM_LAYERNORM] = "LayerNorm", [NORM_RMSNORM] = "RMSNorm"};
static const char *const mlp_titles[] = {[MLP_GELU] = "GELU", [MLP_SWIGLU] = "SwiGLU"};
static const char *const pos_titles[] = {
    [POS_ROTARY] = "rotary", [POS_LEARNED] = "learned positions", [POS_ALIBI] = "ALiBi"};

void model_describe(const model_config *c, char *buf, size_t n)
{
    const int rot = model_rotary_dims(c);
    snprintf(buf, n,
             "L=%d C=%d heads=%d kv_heads=%d ffn=%d V=%d, %s%s, %s MLP, %s%s rotary_dims=%d, %s residual%s, "
             "%s embeddings",
             c->L, c->C, c->NH, model_kv_heads(c), model_ffn(c), c->V, norm_titles[c->norm],
             c->norm == NORM_LAYERNORM && c->norm_nobias ? " without bias" : "", mlp_titles[c->mlp], pos_titles[c->pos],
             rot && c->rope == ROPE_GPTJ ? " (GPT-J pairs)" : "", rot, c->parallel_residual ? "parallel" : "sequential",
             c->shared_norm ? " (one norm)" : "", c->tied_embeddings ? "tied" : "untied");
}

/* The preset's MLP width at width C: its own ratio ffn / d_model kept (GPT-J's 4, Llama-2 7B's
 * 11008 / 4096), SwiGLU's rounded up to a multiple of 8 as model_config_check wants it. A preset
 * without ffn_dim is 4 C at any width already. */
static int ffn_at_width(const model_config *preset, int C)
{
    double f = (double)preset->ffn * C / preset->C;
    if (preset->mlp == MLP_SWIGLU) return (int)(8 * ceil(f / 8));
    return f < 1 ? 1 : (int)lround(f);
}

int model_config_override(model_config *cfg, const model_overrides *ov)
{
    const model_config preset = *cfg;
    /* a new sequence limit changes the architecture only through learned positions (their rows) */
    int shape = ov->layers || ov->dmodel || ov->heads || ov->kv_heads || ov->ffn || ov->vocab ||
                (ov->max_seq_len && preset.pos == POS_LEARNED && ov->max_seq_len != preset.max_T);
    if (ov->max_seq_len) cfg->max_T = (int)ov->max_seq_len;
    if (!shape) return 0;
    if (ov->layers) cfg->L = (int)ov->layers;
    if (ov->dmodel) cfg->C = (int)ov->dmodel;
    if (ov->dmodel && !ov->ffn && preset.ffn > 0) cfg->ffn = ffn_at_width(&preset, cfg->C);
    int mha = model_kv_heads(cfg) == cfg->NH; /* a multi-head preset stays multi-head under --heads */
    if (ov->heads) cfg->NH = (int)ov->heads;
    if (ov->heads && mha) cfg->KVH = 0;
    if (ov->kv_heads) cfg->KVH = (int)ov->kv_heads;
    if (ov->ffn) cfg->ffn = (int)ov->ffn;
    if (ov->vocab) cfg->V = (int)ov->vocab;
    if (cfg->C % cfg->NH != 0) { /* the flag given, or both */
        if (!ov->heads)
            return err_usage("flag '--d-model': %d is not a multiple of %s's %d heads (give '--heads')", cfg->C,
                             preset.name, cfg->NH);
        if (!ov->dmodel)
            return err_usage("flag '--heads': %s's d_model %d is not a multiple of %d heads", preset.name, cfg->C,
                             cfg->NH);
        return err_usage("flags '--d-model' / '--heads': %d is not a multiple of %d heads", cfg->C, cfg->NH);
    }
    cfg->HS = cfg->C / cfg->NH;
    const char *column;
    char why[256], nm[48];
    if (model_config_check(cfg, &column, why, sizeof why) != 0) {
        const char *flag = strcmp(column, "kv_heads") == 0 ? "flags '--heads' / '--kv-heads'"
                           : strcmp(column, "ffn_dim") == 0 ? "flag '--ffn'"
                           : strcmp(column, "rotary_pct") == 0 ? "flags '--d-model' / '--heads'" : "flag '--model'";
        return err_usage("%s: %s: %s", flag, cfg->name, why);
    }
    snprintf(nm, sizeof nm, "%.20s-custom", cfg->name);
    snprintf(cfg->name, sizeof cfg->name, "%s", nm);
    return 0;
}
