#include "record.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "csvio.h"
#include "err.h"
#include "schema.h"

int record_init(record *r, const rec_col *cols, int ncols)
{
    memset(r, 0, sizeof *r);
    r->cols = cols;
    r->ncols = ncols;
    return 0;
}

void record_free(record *r)
{
    if (!r) return;
    if (r->str)
        for (size_t i = 0; i < (size_t)r->nrows * (size_t)r->ncols; i++) free(r->str[i]);
    for (int i = 0; i < r->nnotes; i++) free(r->notes[i]);
    free(r->num);
    free(r->str);
    memset(r, 0, sizeof *r);
}

int record_add_row(record *r)
{
    if (r->nrows == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        double *num = realloc(r->num, (size_t)cap * (size_t)r->ncols * sizeof *num);
        if (num) r->num = num;
        char **str = realloc(r->str, (size_t)cap * (size_t)r->ncols * sizeof *str);
        if (str) r->str = str;
        if (!num || !str) return err_msg("out of memory for result rows");
        r->cap = cap;
    }
    size_t base = (size_t)r->nrows * (size_t)r->ncols;
    for (int c = 0; c < r->ncols; c++) {
        r->num[base + (size_t)c] = NAN;
        r->str[base + (size_t)c] = NULL;
    }
    return r->nrows++;
}

void record_num(record *r, int row, int col, double v) { r->num[(size_t)row * (size_t)r->ncols + (size_t)col] = v; }

void record_str(record *r, int row, int col, const char *s)
{
    char **slot = &r->str[(size_t)row * (size_t)r->ncols + (size_t)col];
    free(*slot);
    *slot = s ? strdup(s) : NULL;
}

void record_note(record *r, const char *fmt, ...)
{
    if (r->nnotes == REC_MAX_NOTES) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->notes[r->nnotes++] = strdup(buf);
}

static void cell_text(const record *r, int row, int col, char *buf, size_t n)
{
    size_t k = (size_t)row * (size_t)r->ncols + (size_t)col;
    if (r->cols[col].kind == REC_STR) {
        snprintf(buf, n, "%s", r->str[k] ? r->str[k] : "-");
    } else {
        record_num_text(r->num[k], r->cols[col].prec, buf, n);
    }
}

void record_num_text(double v, int prec, char *buf, size_t n)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "-");
        return;
    }
    snprintf(buf, n, "%.*f", prec, v);
    if (v == 0 || strspn(buf, "-0.") != strlen(buf)) return;
    int d = 1 - (int)floor(log10(fabs(v))); /* decimals for two significant digits */
    if (d > 12)
        snprintf(buf, n, "%.2g", v);
    else
        snprintf(buf, n, "%.*f", d, v);
}

void record_csv_only(record *r, int col)
{
    if (col >= 0 && col < 64) r->csv_only[col] = 1;
}

void record_print(const record *r, FILE *f)
{
    for (int i = 0; i < r->nnotes; i++) fprintf(f, "# %s\n", r->notes[i]);
    int w[64] = {0};
    char buf[256];
    int nc = r->ncols < 64 ? r->ncols : 64;
    for (int c = 0; c < nc; c++) {
        int a = (int)strlen(r->cols[c].name), b = (int)strlen(r->cols[c].unit) + 2;
        w[c] = a > b ? a : b;
        for (int i = 0; i < r->nrows; i++) {
            cell_text(r, i, c, buf, sizeof buf);
            int l = (int)strlen(buf);
            if (l > w[c]) w[c] = l;
        }
    }
    int first = 1;
    for (int c = 0; c < nc; c++) {
        if (r->csv_only[c]) continue;
        fprintf(f, "%s%*s", first ? "" : "  ", r->cols[c].kind == REC_STR ? -w[c] : w[c], r->cols[c].name);
        first = 0;
    }
    fputc('\n', f);
    first = 1;
    for (int c = 0; c < nc; c++) {
        if (r->csv_only[c]) continue;
        if (r->cols[c].unit[0]) snprintf(buf, sizeof buf, "[%s]", r->cols[c].unit);
        else buf[0] = '\0';
        fprintf(f, "%s%*s", first ? "" : "  ", r->cols[c].kind == REC_STR ? -w[c] : w[c], buf);
        first = 0;
    }
    fputc('\n', f);
    for (int i = 0; i < r->nrows; i++) {
        first = 1;
        for (int c = 0; c < nc; c++) {
            if (r->csv_only[c]) continue;
            cell_text(r, i, c, buf, sizeof buf);
            fprintf(f, "%s%*s", first ? "" : "  ", r->cols[c].kind == REC_STR ? -w[c] : w[c], buf);
            first = 0;
        }
        fputc('\n', f);
    }
    fflush(f);
}

static int stream_width(const rec_col *c)
{
    int a = (int)strlen(c->name), b = (int)strlen(c->unit) + 2;
    int w = a > b ? a : b;
    return w > REC_STREAM_MIN_WIDTH ? w : REC_STREAM_MIN_WIDTH;
}

void record_stream_header(const record *r, FILE *f)
{
    for (int i = 0; i < r->nnotes; i++) fprintf(f, "# %s\n", r->notes[i]);
    char buf[256];
    for (int pass = 0; pass < 2; pass++) {
        int first = 1;
        for (int c = 0; c < r->ncols && c < 64; c++) {
            if (r->csv_only[c]) continue;
            const rec_col *col = &r->cols[c];
            if (pass == 1 && col->unit[0]) snprintf(buf, sizeof buf, "[%s]", col->unit);
            else snprintf(buf, sizeof buf, "%s", pass == 0 ? col->name : "");
            int w = stream_width(col);
            fprintf(f, "%s%*s", first ? "" : "  ", col->kind == REC_STR ? -w : w, buf);
            first = 0;
        }
        fputc('\n', f);
    }
    fflush(f);
}

void record_stream_row(const record *r, int row, FILE *f)
{
    char buf[256];
    int first = 1;
    for (int c = 0; c < r->ncols && c < 64; c++) {
        if (r->csv_only[c]) continue;
        cell_text(r, row, c, buf, sizeof buf);
        int w = stream_width(&r->cols[c]);
        fprintf(f, "%s%*s", first ? "" : "  ", r->cols[c].kind == REC_STR ? -w : w, buf);
        first = 0;
    }
    fputc('\n', f);
    fflush(f);
}

int record_write_csv(const record *r, const char *path, const machine_info *m)
{
    csv_writer w;
    if (csvw_open(&w, path) != 0) return CB_EFAIL;
    for (int c = 0; c < r->ncols; c++) csvw_str(&w, r->cols[c].name);
    for (int i = 0; m && i < MC_NCOLS; i++) csvw_str(&w, machine_cols[i]);
    csvw_endrow(&w);
    for (int i = 0; i < r->nrows; i++) {
        for (int c = 0; c < r->ncols; c++) {
            size_t k = (size_t)i * (size_t)r->ncols + (size_t)c;
            if (r->cols[c].kind == REC_STR) csvw_str(&w, r->str[k]);
            else csvw_num(&w, r->num[k]);
        }
        if (!m) {
            csvw_endrow(&w);
            continue;
        }
        csvw_str(&w, m->cpu_model);
        csvw_num(&w, m->cores);
        csvw_num(&w, m->threads);
        csvw_num(&w, m->blas_threads);
        csvw_str(&w, m->blas_core);
        csvw_str(&w, m->blas_core_env);
        csvw_str(&w, m->blas_core_choice);
        csvw_str(&w, m->omp_wait_policy);
        csvw_str(&w, m->cflags);
        csvw_str(&w, m->git_rev);
        csvw_str(&w, m->date_utc);
        csvw_endrow(&w);
    }
    return csvw_commit(&w);
}
