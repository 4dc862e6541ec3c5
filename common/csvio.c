#include "csvio.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "err.h"
#include "parse.h"
/* libcsv; the GPU build (bench/gpu/, CUDA toolkit alone) has its subset in csvmini.h instead */
#ifdef CB_NO_LIBCSV
#include "csvmini.h"
#else
#include <csv.h>
#endif

#define ROW_NOT_BEGUN 0 /* libcsv's pstate at a record boundary */

typedef struct {
    table *t;
    int line;      /* physical line being fed */
    int rec_line;  /* line where the current record began */
    int nfield;    /* fields so far in the current record */
    char **row;    /* fields of the current record */
    int rowcap;
    int header_done;
    int nalloc;    /* capacity of t->cells in rows */
    int failed;
    int skip;      /* records still to skip before the header (table_load_skip) */
} load_ctx;

static char *dup_field(const void *s, size_t len)
{
    char *p = malloc(len + 1);
    if (!p) return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    /* trim surrounding blanks of unquoted-looking values */
    size_t a = 0, b = len;
    while (a < b && (p[a] == ' ' || p[a] == '\t')) a++;
    while (b > a && (p[b - 1] == ' ' || p[b - 1] == '\t' || p[b - 1] == '\r')) b--;
    memmove(p, p + a, b - a);
    p[b - a] = '\0';
    return p;
}

static void on_field(void *s, size_t len, void *data)
{
    load_ctx *c = data;
    if (c->failed) return;
    if (c->nfield == 0) c->rec_line = c->line;
    if (c->nfield == c->rowcap) {
        int cap = c->rowcap ? 2 * c->rowcap : 16;
        char **r = realloc(c->row, (size_t)cap * sizeof *r);
        if (!r) { c->failed = err_msg("%s:%d: out of memory", c->t->path, c->line); return; }
        c->row = r;
        c->rowcap = cap;
    }
    char *f = dup_field(s ? s : "", s ? len : 0);
    if (!f) { c->failed = err_msg("%s:%d: out of memory", c->t->path, c->line); return; }
    c->row[c->nfield++] = f;
}

static void drop_row(load_ctx *c)
{
    for (int i = 0; i < c->nfield; i++) free(c->row[i]);
    c->nfield = 0;
}

static void on_row(int term, void *data)
{
    (void)term;
    load_ctx *c = data;
    table *t = c->t;
    if (c->failed) { drop_row(c); return; }
    if (c->nfield == 0) return;
    /* a row of one empty field is a blank line */
    if (c->nfield == 1 && c->row[0][0] == '\0') { drop_row(c); return; }
    if (c->skip > 0) { c->skip--; drop_row(c); return; }
    if (!c->header_done) {
        t->ncols = c->nfield;
        t->header = malloc((size_t)c->nfield * sizeof *t->header);
        if (!t->header) { c->failed = err_msg("%s: out of memory", t->path); drop_row(c); return; }
        for (int i = 0; i < c->nfield; i++) {
            t->header[i] = c->row[i];
            if (t->header[i][0] == '\0') {
                c->failed = err_msg("%s:%d: header: column %d has no name", t->path, c->rec_line, i + 1);
            }
            for (int j = 0; j < i && !c->failed; j++)
                if (strcmp(t->header[j], t->header[i]) == 0)
                    c->failed = err_msg("%s:%d: header: column '%s' appears twice", t->path, c->rec_line, t->header[i]);
        }
        c->nfield = 0;
        c->header_done = 1;
        t->header_line = c->rec_line;
        return;
    }
    if (c->nfield != t->ncols) {
        c->failed = err_msg("%s:%d: expected %d fields (as the header), got %d", t->path, c->rec_line, t->ncols,
                            c->nfield);
        drop_row(c);
        return;
    }
    if (t->nrows == c->nalloc) {
        int cap = c->nalloc ? 2 * c->nalloc : 32;
        char **cells = realloc(t->cells, (size_t)cap * (size_t)t->ncols * sizeof *cells);
        int *lines = realloc(t->lines, (size_t)cap * sizeof *lines);
        if (cells) t->cells = cells;
        if (lines) t->lines = lines;
        if (!cells || !lines) { c->failed = err_msg("%s: out of memory", t->path); drop_row(c); return; }
        c->nalloc = cap;
    }
    memcpy(t->cells + (size_t)t->nrows * (size_t)t->ncols, c->row, (size_t)t->ncols * sizeof(char *));
    t->lines[t->nrows] = c->rec_line;
    t->nrows++;
    c->nfield = 0;
}

int table_load(table *t, const char *path)
{
    return table_load_skip(t, path, 0);
}

/* 1 when a line read holds a CR followed by more text: lines ending in CR alone (old Mac files),
 * which getline reads as one line and libcsv as records all numbered line 1. */
static int cr_only(const char *text, size_t len)
{
    const char *cr = memchr(text, '\r', len);
    return cr && (size_t)(cr - text) + 1 < len && cr[1] != '\n';
}

/* Feeds every line of f to the parser: t->path names the text in messages. */
static int table_read(table *t, FILE *f, int nskip)
{
    const char *path = t->path;
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_APPEND_NULL | CSV_STRICT_FINI) != 0)
        return err_msg("%s: cannot initialise the CSV parser", path);
    load_ctx c = {.t = t, .skip = nskip};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (!c.failed && (len = getline(&line, &cap, f)) >= 0) {
        c.line++;
        char *text = line;
        if (c.line == 1 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) text += 3, len -= 3; /* UTF-8 BOM */
        if (memchr(text, '\0', (size_t)len)) {
            c.failed = err_msg("%s:%d: binary data (a NUL byte) in a CSV file", path, c.line);
            break;
        }
        if (c.line == 1 && cr_only(text, (size_t)len)) {
            c.failed = err_msg("%s:1: lines end in CR alone (old Mac line endings): convert them to LF", path);
            break;
        }
        if (p.pstate == ROW_NOT_BEGUN && c.nfield == 0 && text[0] == '#') continue;
        if (csv_parse(&p, text, (size_t)len, on_field, on_row, &c) != (size_t)len) {
            c.failed = err_msg("%s:%d: malformed CSV: %s", path, c.line, csv_strerror(csv_error(&p)));
            break;
        }
    }
    if (!c.failed && ferror(f)) c.failed = err_msg("%s: read error: %s", path, strerror(errno));
    if (!c.failed && csv_fini(&p, on_field, on_row, &c) != 0)
        c.failed = err_msg("%s:%d: malformed CSV: %s", path, c.line, csv_strerror(csv_error(&p)));
    if (!c.failed && !c.header_done) c.failed = err_msg("%s: empty file: expected a header row", path);
    drop_row(&c);
    free(c.row);
    free(line);
    csv_free(&p);
    return c.failed ? CB_EFAIL : 0;
}

int table_load_skip(table *t, const char *path, int nskip)
{
    memset(t, 0, sizeof *t);
    t->path = strdup(path);
    FILE *f = t->path ? file_open_read(path) : NULL;
    if (!f) {
        if (!t->path) err_msg("out of memory");
        table_free(t);
        return CB_EFAIL;
    }
    int rc = table_read(t, f, nskip);
    fclose(f);
    if (rc) table_free(t);
    return rc;
}

int table_load_text(table *t, const char *name, const char *text, size_t len)
{
    memset(t, 0, sizeof *t);
    t->path = strdup(name);
    FILE *f = t->path && len ? fmemopen((void *)text, len, "r") : NULL;
    if (!t->path) {
        table_free(t);
        return err_msg("out of memory");
    }
    if (!f) {
        table_free(t);
        return len ? err_msg("%s: cannot read text: %s", name, strerror(errno))
                   : err_msg("%s: empty file: expected a header row", name);
    }
    int rc = table_read(t, f, 0);
    fclose(f);
    if (rc) table_free(t);
    return rc;
}

void table_free(table *t)
{
    if (!t) return;
    if (t->header)
        for (int i = 0; i < t->ncols; i++) free(t->header[i]);
    if (t->cells)
        for (size_t i = 0; i < (size_t)t->nrows * (size_t)t->ncols; i++) free(t->cells[i]);
    free(t->header);
    free(t->cells);
    free(t->lines);
    free(t->path);
    memset(t, 0, sizeof *t);
}

int table_col(const table *t, const char *name, int required)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->header[i], name) == 0) return i;
    if (required) err_msg("%s:%d: missing column '%s'", t->path, t->header_line > 0 ? t->header_line : 1, name);
    return -1;
}

const char *table_cell(const table *t, int row, int col)
{
    return t->cells[(size_t)row * (size_t)t->ncols + (size_t)col];
}

static void where(const table *t, int row, int col, char *buf, size_t n)
{
    snprintf(buf, n, "%s:%d: column '%s'", t->path, t->lines[row], t->header[col]);
}

int table_get_long(const table *t, int row, int col, long lo, long hi, long *out)
{
    char w[512];
    where(t, row, col, w, sizeof w);
    return parse_long(table_cell(t, row, col), lo, hi, 0, w, out) == 0 ? 0 : CB_EFAIL;
}

int table_get_double(const table *t, int row, int col, double lo, double hi, double *out)
{
    char w[512];
    where(t, row, col, w, sizeof w);
    return parse_double(table_cell(t, row, col), lo, hi, w, out) == 0 ? 0 : CB_EFAIL;
}

int table_get_bool(const table *t, int row, int col, int *out)
{
    const char *s = table_cell(t, row, col);
    static const char *yes[] = {"true", "1", "yes"}, *no[] = {"false", "0", "no"};
    for (int i = 0; i < 3; i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = 1; return 0; }
        if (strcasecmp(s, no[i]) == 0) { *out = 0; return 0; }
    }
    return err_msg("%s:%d: column '%s': expected true or false, got '%s'", t->path, t->lines[row], t->header[col], s);
}

int table_get_str(const table *t, int row, int col, const char **out)
{
    const char *s = table_cell(t, row, col);
    if (*s == '\0')
        return err_msg("%s:%d: column '%s': expected a value, got an empty cell", t->path, t->lines[row],
                       t->header[col]);
    *out = s;
    return 0;
}

int table_get_word(const table *t, int row, int col, const char *const *names, int n, int *out)
{
    const char *s = table_cell(t, row, col);
    for (int k = 0; k < n; k++)
        if (strcmp(s, names[k]) == 0) {
            *out = k;
            return 0;
        }
    char list[256] = "";
    for (int k = 0; k < n; k++) {
        size_t l = strlen(list);
        if (snprintf(list + l, sizeof list - l, "%s%s",
                     k == 0       ? ""
                     : k == n - 1 ? " or "
                                  : ", ",
                     names[k]) >= (int)(sizeof list - l))
            break; /* the list is cut, not overrun */
    }
    if (*s == '\0')
        return err_msg("%s:%d: column '%s': expected %s, got an empty cell", t->path, t->lines[row], t->header[col],
                       list);
    return err_msg("%s:%d: column '%s': expected %s, got '%s'", t->path, t->lines[row], t->header[col], list, s);
}

/* ---- writer ---- */

int csvw_open(csv_writer *w, const char *path)
{
    memset(w, 0, sizeof *w);
    if (strcmp(path, "-") == 0) {
        w->f = stdout;
        w->to_stdout = 1;
        return 0;
    }
    if (!(w->out = malloc(sizeof *w->out))) return err_msg("out of memory");
    int rc = file_out_begin(w->out, path);
    if (rc != 0) {
        free(w->out);
        w->out = NULL;
        return rc;
    }
    w->path = w->out->path, w->tmp = w->out->tmp;
    w->f = fopen(w->tmp, "w");
    if (!w->f) {
        int e = errno;
        err_msg("cannot write '%s': %s", w->out->path, strerror(e));
        csvw_abort(w);
        return CB_EFAIL;
    }
    return 0;
}

static void sep(csv_writer *w)
{
    if (w->nfield++ > 0) fputc(',', w->f);
}

void csvw_str(csv_writer *w, const char *s)
{
    sep(w);
    if (!s || !*s) return;
    if (strpbrk(s, ",\"\n\r") || s[0] == ' ' || s[0] == '#')
        csv_fwrite(w->f, s, strlen(s));
    else
        fputs(s, w->f);
}

void csvw_num(csv_writer *w, double v)
{
    sep(w);
    if (isfinite(v)) fprintf(w->f, "%.9g", v);
}

void csvw_endrow(csv_writer *w)
{
    fputc('\n', w->f);
    w->nfield = 0;
}

int csvw_commit(csv_writer *w)
{
    int rc = 0;
    if (w->to_stdout) {
        fflush(stdout);
    } else if (w->f) {
        int bad = ferror(w->f);
        if (fclose(w->f) != 0 || bad) {
            w->f = NULL;
            err_msg("cannot write '%s': %s", w->out->path, strerror(errno ? errno : EIO));
            csvw_abort(w);
            return CB_EFAIL;
        }
        w->f = NULL;
        rc = file_out_commit(w->out);
    }
    free(w->out);
    memset(w, 0, sizeof *w);
    return rc;
}

void csvw_abort(csv_writer *w)
{
    if (!w) return;
    if (w->f && !w->to_stdout) fclose(w->f);
    if (w->out) file_out_abort(w->out);
    free(w->out);
    memset(w, 0, sizeof *w);
}
