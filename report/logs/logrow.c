/* logrow.c: the published-runs row a log's steady state (steady.c) makes (logrow.h). */
#include "logrow.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h> /* access */

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/files.h"
#include "../../common/machine.h"
#include "../../common/presets.h"
#include "../../common/stats.h"
#include "../formats/devices.h"
#include "registry.h"


/* ------------------------------------------------------------------ presets */

/* The preset `name` of data/models.csv into *c: 1, or 0 when it is none (or the file cannot be read). */
static int preset_find(const char *name, model_config *c)
{
    char path[CB_PATH_MAX];
    model_config *all;
    int n, found = 0;
    if (!name || !*name || machine_data_file(path, sizeof path, "models.csv") != 0 ||
        model_presets_load(path, &all, &n) != 0)
        return 0;
    for (int i = 0; i < n && !found; i++)
        if (strcmp(all[i].name, name) == 0) *c = all[i], found = 1;
    free(all);
    return found;
}

int log_preset_known(const char *name)
{
    model_config c;
    return preset_find(name, &c);
}

int log_preset_fill(log_run *r, const char *name, int shape)
{
    static const char *const fam[6][2] = {{"pythia", "neox"}, {"neox", "neox"}, {"gpt3", "gpt"},
                                          {"llama2", "llama"}, {"gpt-j", "gptj"}, {"mpt", "mpt"}};
    model_config c;
    if (!preset_find(name, &c)) return 0;
    for (int k = 0; k < 6 && !*r->arch; k++)
        if (strcmp(c.family, fam[k][0]) == 0) snprintf(r->arch, sizeof r->arch, "%s", fam[k][1]);
    if (!shape) return 1;
    if (!r->layers) r->layers = c.L;
    if (!r->d_model) r->d_model = c.C;
    if (!r->heads) r->heads = c.NH;
    if (!r->kv_heads) r->kv_heads = model_kv_heads(&c);
    if (!r->ffn_dim) r->ffn_dim = model_ffn(&c);
    if (!r->vocab) r->vocab = c.V;
    if (r->tied_embeddings < 0) r->tied_embeddings = c.tied_embeddings;
    return 1;
}

/* ------------------------------------------------------------------ the row */

static void cell_long(logrow *row, int c, long v)
{
    if (v > 0) snprintf(row->cell[c], sizeof row->cell[c], "%ld", v);
}

static void cell_num(logrow *row, int c, double v)
{
    if (isfinite(v)) snprintf(row->cell[c], sizeof row->cell[c], "%.9g", v);
}

static void cell_text(logrow *row, int c, const char *s) { snprintf(row->cell[c], sizeof row->cell[c], "%s", s); }

/* seq/s from the steady median where the batch or the sequence length gives it (NaN otherwise). */
static double row_seq_per_s(const log_run *r, const log_steady *st)
{
    switch (st->metric) {
    case PUB_STEP_TIME_S: return r->global_batch > 0 ? (double)r->global_batch / st->median : NAN;
    case PUB_SEQ_PER_S: return st->median;
    case PUB_TOKENS_PER_S: return r->seq_len > 0 ? st->median / (double)r->seq_len : NAN;
    case PUB_TOKENS_PER_S_PER_DEVICE:
        return r->seq_len > 0 && r->devices > 0 ? st->median * (double)r->devices / (double)r->seq_len : NAN;
    default: return NAN;
    }
}

/* The other figures' medians over the kept steps, the spread, the log's own notes. */
static void row_notes(const log_run *r, const log_steady *st, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "steady state: %s median %.6g, min %.6g, max %.6g, IQR %.2f%% of the median",
                                  pub_metric_names[st->metric], st->median, st->min, st->max, st->iqr_pct);
    double *x = malloc((size_t)st->n * sizeof *x);
    for (int m = 0; m < 6 && x; m++) {
        int k = 0;
        while (k < st->n && isfinite(x[k] = log_step_figure(&r->steps[st->keep[k]], (pub_metric)m))) k++;
        if (m == (int)st->metric || k < st->n || len + 64 >= n) continue;
        stats_summary s;
        stats_summarize(x, st->n, &s);
        len += (size_t)snprintf(buf + len, n - len, "; median %s %.6g", pub_metric_names[m], s.median);
    }
    free(x);
    if (*r->notes && len + 3 < n) snprintf(buf + len, n - len, "; %s", r->notes);
}

/* The attention cell: Transformer Engine's DotProductAttention picks cuDNN fused attention on sm90
 * and later (H100, H200, Blackwell) and flash-attn 2 before (NVIDIA/TransformerEngine
 * transformer_engine/pytorch/attention.py:2894-2899 @v1.5; dot_product_attention/utils.py:1554-1560
 * @v2.18): by the device, empty while the device is unknown. */
static const char *row_attention(const log_run *r)
{
    if (strcmp(r->attention, LOG_ATTN_TE) != 0) return r->attention;
    static const char *const sm90[] = {"h100", "h200", "gh200", "b200", "gb200", "b300", "gb300"};
    if (!*r->device) return "";
    for (size_t i = 0; i < sizeof sm90 / sizeof sm90[0]; i++)
        if (strncmp(r->device, sm90[i], strlen(sm90[i])) == 0) return "cudnn";
    return "flash";
}

/* The configuration cells: hardware, model, batch and layout. */
static void row_config(const log_run *r, logrow *row)
{
    cell_text(row, PUB_COL_FRAMEWORK, log_formats[r->format].framework);
    cell_text(row, PUB_COL_DEVICE, r->device), cell_text(row, PUB_COL_INSTANCE, r->instance);
    cell_long(row, PUB_COL_DEVICES, r->devices), cell_long(row, PUB_COL_PER_NODE, r->devices_per_node);
    cell_text(row, PUB_COL_MODEL, r->model), cell_text(row, PUB_COL_ARCH, r->arch);
    cell_long(row, PUB_COL_LAYERS, r->layers), cell_long(row, PUB_COL_D_MODEL, r->d_model);
    cell_long(row, PUB_COL_HEADS, r->heads), cell_long(row, PUB_COL_KV_HEADS, r->kv_heads);
    cell_long(row, PUB_COL_FFN, r->ffn_dim), cell_long(row, PUB_COL_VOCAB, r->vocab);
    cell_num(row, PUB_COL_PARAMS, r->params);
    if (r->tied_embeddings >= 0) cell_text(row, PUB_COL_TIED, r->tied_embeddings ? "true" : "false");
    cell_long(row, PUB_COL_SEQ_LEN, r->seq_len), cell_long(row, PUB_COL_GLOBAL_BATCH, r->global_batch);
    cell_long(row, PUB_COL_MICRO_BATCH, r->micro_batch);
    cell_long(row, PUB_COL_TP, r->tp), cell_long(row, PUB_COL_PP, r->pp), cell_long(row, PUB_COL_DP, r->dp);
    cell_long(row, PUB_COL_CP, r->cp), cell_long(row, PUB_COL_VP, r->vp);
    if (r->sequence_parallel >= 0) cell_text(row, PUB_COL_SEQ_PAR, r->sequence_parallel ? "true" : "false");
    cell_text(row, PUB_COL_SHARDING, r->sharding), cell_text(row, PUB_COL_RECOMPUTE, r->recompute);
    cell_text(row, PUB_COL_PRECISION, r->precision), cell_text(row, PUB_COL_FP8_RECIPE, r->fp8_recipe);
    cell_text(row, PUB_COL_OVERLAP, r->overlap), cell_text(row, PUB_COL_ATTENTION, row_attention(r));
}

void logrow_build(const log_run *r, const log_steady *st, const char *id, const char *source, logrow *row)
{
    memset(row, 0, sizeof *row);
    cell_text(row, PUB_COL_ID, id), cell_text(row, PUB_COL_SOURCE, source);
    row_config(r, row);
    cell_text(row, PUB_COL_METRIC, pub_metric_names[st->metric]);
    cell_num(row, PUB_COL_VALUE, st->median);
    int flop = st->metric == PUB_TFLOPS_PER_DEVICE || st->metric == PUB_MFU_PCT;
    if (flop || r->peak_tflops > 0) cell_text(row, PUB_COL_CONVENTION, r->flop_convention);
    cell_num(row, PUB_COL_PEAK, r->peak_tflops);
    cell_num(row, PUB_COL_SEQ_PER_S, row_seq_per_s(r, st));
    row_notes(r, st, row->cell[PUB_COL_NOTES], sizeof row->cell[PUB_COL_NOTES]);
}

void logrow_missing(const logrow *row, char *buf, size_t n)
{
    static const int need[] = {PUB_COL_DEVICE, PUB_COL_DEVICES, PUB_COL_PER_NODE, PUB_COL_MODEL,   PUB_COL_ARCH,   PUB_COL_LAYERS,
                               PUB_COL_D_MODEL, PUB_COL_HEADS, PUB_COL_VOCAB,    PUB_COL_SEQ_LEN, PUB_COL_GLOBAL_BATCH,     PUB_COL_TP,
                               PUB_COL_PP,     PUB_COL_DP};
    size_t len = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < sizeof need / sizeof need[0]; k++)
        if (!row->cell[need[k]][0] && len + 24 < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", pub_cols[need[k]].name);
}

/* The header and the row into w. */
static void row_write(csv_writer *w, const logrow *row)
{
    for (int c = 0; c < PUB_NCOLS; c++) csvw_str(w, pub_cols[c].name);
    csvw_endrow(w);
    for (int c = 0; c < PUB_NCOLS; c++) csvw_str(w, row->cell[c]);
    csvw_endrow(w);
}

/* `text` (n bytes) loaded as a whole from memory as the published-runs file `shown`: 0, or
 * CB_EUSAGE after the loader's error, which names `shown` and the row's line there (CB_EFAIL: the
 * devices cannot be read). */
static int text_check(const char *text, size_t n, const char *shown)
{
    dev_table dt = {0};
    pub_table t;
    int rc = devices_load(&dt, NULL) != 0                       ? CB_EFAIL
             : published_load_text(&t, shown, text, n, &dt) != 0 ? CB_EUSAGE
                                                                  : 0;
    if (rc == 0) published_free(&t);
    devices_free(&dt);
    return rc;
}

/* A csv_writer onto an open stream (a memory stream: the text is checked before it is written). */
static csv_writer writer_on(FILE *f) { return (csv_writer){.f = f}; }

/* The comments, the header and the row as text (malloc'd into *text, *n). */
static int text_new(const logrow *row, const char *const *comments, int ncomments, char **text, size_t *n)
{
    FILE *f = open_memstream(text, n);
    if (!f) return err_msg("out of memory");
    for (int i = 0; i < ncomments; i++) fprintf(f, "# %s\n", comments[i]);
    csv_writer w = writer_on(f);
    row_write(&w, row);
    return fclose(f) == 0 ? 0 : err_msg("out of memory");
}

int logrow_check(const logrow *row, const char *shown)
{
    const char *cells[PUB_NCOLS];
    for (int c = 0; c < PUB_NCOLS; c++) cells[c] = row->cell[c];
    dev_table dt = {0};
    pub_row r;
    /* line 2: the row's line under the header, as logrow_print writes it without comments */
    int rc = devices_load(&dt, NULL) != 0 ? CB_EFAIL : published_row_check(cells, shown, 2, &dt, &r);
    devices_free(&dt);
    if (rc == CB_EUSAGE) err_hint("that is the imported row: fix the flag or the log it came from");
    return rc;
}

void logrow_print(const logrow *row, const char *const *comments, int ncomments, FILE *f)
{
    for (int i = 0; i < ncomments; i++) fprintf(f, "# %s\n", comments[i]);
    fflush(f);
    csv_writer w;
    if (csvw_open(&w, "-") != 0) return;
    row_write(&w, row);
    csvw_commit(&w);
}

/* The file's columns against the row: the id new, every non-empty cell with a column. */
static int append_check(const table *t, const logrow *row, int *col_of)
{
    int id = table_col(t, "id", 1);
    if (id < 0) return CB_EUSAGE;
    for (int i = 0; i < t->nrows; i++)
        if (strcmp(table_cell(t, i, id), row->cell[PUB_COL_ID]) == 0) {
            err_usage("%s:%d: column 'id': '%s' is already in the file", t->path, t->lines[i], row->cell[PUB_COL_ID]);
            err_hint("give the imported row another name with --id");
            return CB_EUSAGE;
        }
    for (int c = 0; c < PUB_NCOLS; c++) col_of[c] = -1;
    for (int j = 0; j < t->ncols; j++)
        for (int c = 0; c < PUB_NCOLS; c++)
            if (strcmp(t->header[j], pub_cols[c].name) == 0) col_of[c] = j;
    for (int c = 0; c < PUB_NCOLS; c++)
        if (col_of[c] < 0 && row->cell[c][0])
            return err_usage("%s:%d: no column '%s' for the imported row's '%.60s'", t->path, t->header_line,
                             pub_cols[c].name, row->cell[c]);
    return 0;
}

/* The published-runs file at path with the row appended in its column order, as text (malloc'd into
 * *text, *n). */
static int text_append(const logrow *row, const char *path, char **text, size_t *n)
{
    table t;
    int col_of[PUB_NCOLS];
    if (table_load(&t, path) != 0) return CB_EUSAGE;
    int rc = append_check(&t, row, col_of);
    const char *cells[256];
    for (int j = 0; j < t.ncols && j < 256; j++) cells[j] = "";
    for (int c = 0; c < PUB_NCOLS && rc == 0; c++)
        if (col_of[c] >= 0 && col_of[c] < 256) cells[col_of[c]] = row->cell[c];
    int ncols = t.ncols < 256 ? t.ncols : 256;
    table_free(&t);
    size_t nold = 0;
    char *old = rc == 0 ? file_read_all(path, (size_t)TEXT_LINES_MAX_MIB << 20, &nold) : NULL;
    if (rc != 0 || !old) return rc ? rc : CB_EFAIL;
    FILE *f = open_memstream(text, n);
    if (!f) return free(old), err_msg("out of memory");
    fwrite(old, 1, nold, f);
    if (nold && old[nold - 1] != '\n') fputc('\n', f);
    free(old);
    csv_writer w = writer_on(f);
    for (int j = 0; j < ncols; j++) csvw_str(&w, cells[j]);
    csvw_endrow(&w);
    return fclose(f) == 0 ? 0 : err_msg("out of memory");
}

/* An existing --out file: a published-runs file that takes only a complete row. */
static int save_target(const logrow *row, const char *path)
{
    int schema = published_is_schema(path);
    if (schema < 0) return CB_EUSAGE;
    if (!schema)
        return err_usage("flag '--out': %s is not a published-runs file (no 'id', 'metric' and 'value' columns)", path);
    char missing[256];
    logrow_missing(row, missing, sizeof missing);
    if (*missing) {
        err_usage("flag '--out': %s is a published-runs file, and the imported row leaves %s empty (its loader "
                  "refuses such a row); %s is unchanged",
                  path, missing, path);
        err_hint("give them (--device, --devices, --devices-per-node, --tp, --pp, --dp, --model, --seq, "
                 "--global-batch), or write the row to a new file");
        return CB_EUSAGE;
    }
    return 0;
}

int logrow_save(const logrow *row, const char *const *comments, int ncomments, const char *path)
{
    int exists = access(path, F_OK) == 0, rc = exists ? save_target(row, path) : 0;
    char *text = NULL, missing[256];
    size_t n = 0;
    if (rc == 0) rc = exists ? text_append(row, path, &text, &n) : text_new(row, comments, ncomments, &text, &n);
    logrow_missing(row, missing, sizeof missing);
    /* a complete row is loaded back with the file it goes into; an incomplete one only starts a new
     * file, whose # lines name what it lacks */
    if (rc == 0 && !*missing && (rc = text_check(text, n, path)) == CB_EUSAGE)
        err_hint("that is %s with the imported row, loaded back before writing: %s is unchanged", path, path);
    csv_writer w;
    if (rc == 0 && (rc = csvw_open(&w, path)) == 0) {
        fwrite(text, 1, n, w.f);
        rc = csvw_commit(&w);
    }
    free(text);
    return rc;
}
