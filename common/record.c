#include "record.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The header: the record's columns, then the machine's (none when m is NULL). */
static void write_header(csv_writer *w, const record *r, const machine_info *m)
{
    for (int c = 0; c < r->ncols; c++) csvw_str(w, r->cols[c].name);
    for (int i = 0; m && i < MC_NCOLS; i++) csvw_str(w, machine_cols[i]);
    csvw_endrow(w);
}

static void write_row(csv_writer *w, const record *r, int i, const machine_info *m)
{
    for (int c = 0; c < r->ncols; c++) {
        size_t k = (size_t)i * (size_t)r->ncols + (size_t)c;
        if (r->cols[c].kind == REC_STR) csvw_str(w, r->str[k]);
        else csvw_num(w, r->num[k]);
    }
    if (m) {
        csvw_str(w, m->cpu_model);
        csvw_num(w, m->cores);
        csvw_num(w, m->threads);
        csvw_num(w, m->blas_threads);
        csvw_str(w, m->blas_core);
        csvw_str(w, m->blas_core_env);
        csvw_str(w, m->blas_core_choice);
        csvw_str(w, m->omp_wait_policy);
        csvw_str(w, m->cflags);
        csvw_str(w, m->git_rev);
        csvw_str(w, m->date_utc);
    }
    csvw_endrow(w);
}

int record_write_csv(const record *r, const char *path, const machine_info *m)
{
    csv_writer w;
    if (csvw_open(&w, path) != 0) return CB_EFAIL;
    write_header(&w, r, m);
    for (int i = 0; i < r->nrows; i++) write_row(&w, r, i, m);
    return csvw_commit(&w);
}

/* ---------------------------------------------------------------- a CSV log written as it grows */

/* 0 when t's header is the log's (the record's columns, then the machine's), else an error. */
static int check_header(const table *t, const record *r, const machine_info *m)
{
    const int want = r->ncols + (m ? MC_NCOLS : 0);
    for (int c = 0; c < want || c < t->ncols; c++) {
        const char *w = c >= want ? NULL : c < r->ncols ? r->cols[c].name : machine_cols[c - r->ncols];
        const char *got = c < t->ncols ? t->header[c] : NULL;
        if (w && got && strcmp(w, got) == 0) continue;
        return err_usage("flag '--csv': %s:%d: expected column %d to be %s%s%s, got %s%s%s: not a log of this run to "
                         "append to; give --csv another file",
                         t->path, t->header_line, c + 1, w ? "'" : "", w ? w : "none", w ? "'" : "", got ? "'" : "",
                         got ? got : "none", got ? "'" : "");
    }
    return 0;
}

/* Byte offset of the start of line `line` (1-based) of path, or -1. */
static long line_offset(const char *path, int line)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    int at = 1, ch;
    long off = 0;
    while (at < line && (ch = getc(f)) != EOF) {
        off++;
        if (ch == '\n') at++;
    }
    fclose(f);
    return at == line ? off : -1;
}

/* The existing log `path` of a run resumed after step `keep`: its header checked, its rows up to
 * step `keep` (the first column) kept and the rows after it dropped (the resumed run repeats
 * them); it must end at step `keep`. Returns 0, CB_EUSAGE or CB_EFAIL. */
static int keep_through(const char *path, const record *r, const machine_info *m, long keep)
{
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int rc = check_header(&t, r, m), k = 0;
    long last = -1;
    for (; rc == 0 && k < t.nrows; k++) {
        long s;
        if ((rc = table_get_long(&t, k, 0, 0, 1000000000000L, &s)) != 0 || s > keep) break;
        last = s;
    }
    if (rc == 0 && last < 0)
        rc = err_usage("flag '--csv': %s has no row up to step %ld, where --resume continues: its rows would not "
                       "make one curve; give --csv another file",
                       path, keep);
    else if (rc == 0 && last != keep)
        rc = err_usage("flag '--csv': %s:%d: step %ld, but --resume continues after step %ld, which the log does not "
                       "reach: its rows would not make one curve; give --csv another file",
                       path, t.lines[k - 1], last, keep);
    if (rc == 0 && k < t.nrows) {
        long off = line_offset(path, t.lines[k]);
        if (off < 0 || truncate(path, off) != 0)
            rc = err_msg("cannot write '%s': %s", path, off < 0 ? "it changed while read" : strerror(errno));
        else
            fprintf(stderr, "note: %s: %d row%s after step %ld dropped: this run repeats those steps\n", path,
                    t.nrows - k, t.nrows - k == 1 ? "" : "s", keep);
    }
    table_free(&t);
    return rc;
}

int record_log_open(record_log *s, const record *r, const char *path, const machine_info *m, long keep)
{
    memset(s, 0, sizeof *s);
    s->m = m;
    s->next = r->nrows;
    int rc = file_out_target(path, s->path, sizeof s->path);
    if (rc != 0) return rc;
    struct stat st;
    s->append = keep >= 0 && stat(s->path, &st) == 0;
    if (s->append && (rc = keep_through(s->path, r, m, keep)) != 0) return rc;
    s->wanted = 1;
    return 0;
}

int record_log_add(record_log *s, const record *r)
{
    if (!s->wanted || s->next >= r->nrows) return 0;
    if (!s->f) { /* the first row: a run that fails before it leaves no new file */
        if (!(s->f = fopen(s->path, s->append ? "a" : "w")))
            return err_msg("cannot write '%s': %s", s->path, strerror(errno));
        csv_writer w = {.f = s->f};
        if (!s->append) write_header(&w, r, s->m);
    }
    csv_writer w = {.f = s->f};
    for (; s->next < r->nrows; s->next++) write_row(&w, r, s->next, s->m);
    if (fflush(s->f) != 0 || ferror(s->f)) return err_msg("cannot write '%s': %s", s->path, strerror(errno));
    return 0;
}

int record_log_close(record_log *s)
{
    s->wanted = 0;
    if (!s->f) return 0;
    int bad = fflush(s->f) != 0 || ferror(s->f) || fsync(fileno(s->f)) != 0;
    int e = errno;
    bad |= fclose(s->f) != 0;
    s->f = NULL;
    return bad ? err_msg("cannot write '%s': %s", s->path, strerror(e ? e : EIO)) : 0;
}
