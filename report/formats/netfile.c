/* netfile.c: network files: rows checked, loaded, written (see netfile.h). */
#include "netfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "netfit.h"

const char *const netfile_cols[NETFILE_NCOLS] = {
    "collective", "scope", "node_type", "ranks", "nodes", "ranks_per_node", "latency_us", "busbw_gb_per_s",
    "busbw_max_gb_per_s", "sizes", "min_bytes", "max_bytes", "r2", "source", "as_of"};

/* ------------------------------------------------------------------ network files */

void net_table_free(net_table *t)
{
    free(t->rows);
    t->rows = NULL, t->n = 0;
}

static int cell_str(const table *tb, int i, int c, char *out, size_t n)
{
    const char *s;
    if (table_get_str(tb, i, c, &s) != 0) return CB_EUSAGE;
    if (strlen(s) >= n)
        return err_usage("%s:%d: column '%s': longer than %zu characters", tb->path, tb->lines[i], netfile_cols[c],
                         n - 1);
    snprintf(out, n, "%s", s);
    return 0;
}

/* The one range rule of a network file's numbers: the loader reads each cell in its range, and
 * net_row_check holds a row about to be written to the same ranges and cross-column rules. A bus
 * bandwidth or latency outside them is no measured network (1e-9 GB/s made scale print 0 seq/s). */
enum { NC_RANKS = 3, NC_NODES, NC_PER_NODE, NC_LATENCY, NC_BUSBW, NC_BUSBW_MAX, NC_SIZES, NC_MIN, NC_MAX, NC_R2 };
static const struct {
    int col;
    double lo, hi;
} net_ranges[] = {
    {NC_RANKS, 2, 1e8},
    {NC_NODES, 1, 1e8},
    {NC_PER_NODE, 1, 1e8},
    {NC_LATENCY, 0, NETFILE_MAX_LATENCY_US},
    {NC_BUSBW, NETFILE_MIN_BUSBW_GB_PER_S, NETFILE_MAX_BUSBW_GB_PER_S},
    {NC_BUSBW_MAX, 0, 10 * NETFILE_MAX_BUSBW_GB_PER_S},
    {NC_SIZES, 2, 1e8},
    {NC_MIN, 1, 1e18},
    {NC_MAX, 1, 1e18},
    {NC_R2, -1e9, 1},
};
enum { NET_NRANGES = (int)(sizeof net_ranges / sizeof net_ranges[0]) };

/* The range of column col (one of net_ranges'). */
static void range_of(int col, double *lo, double *hi)
{
    for (int k = 0; k < NET_NRANGES; k++)
        if (net_ranges[k].col == col) *lo = net_ranges[k].lo, *hi = net_ranges[k].hi;
}

/* The row's number in column col (one of net_ranges'), integers as doubles. */
static double row_value(const net_row *r, int col)
{
    switch (col) {
    case NC_RANKS: return r->ranks;
    case NC_NODES: return r->nodes;
    case NC_PER_NODE: return r->ranks_per_node;
    case NC_LATENCY: return r->latency_us;
    case NC_BUSBW: return r->busbw_gb_per_s;
    case NC_BUSBW_MAX: return r->busbw_max_gb_per_s;
    case NC_SIZES: return r->sizes;
    case NC_MIN: return r->min_bytes;
    case NC_MAX: return r->max_bytes;
    default: return r->r2;
    }
}

/* The rules across a row's columns: as_of a date, ranks = nodes x ranks_per_node, across nodes on
 * 2 nodes at least, the smallest size at most the largest. Returns 0, or -1 with why. */
static int row_rules(const net_row *r, char *why, size_t n)
{
    if (strlen(r->as_of) != 10 || price_as_of_check(r->as_of) != 0)
        return snprintf(why, n, "column 'as_of': expected a date YYYY-MM-DD, got '%s'", r->as_of), -1;
    if ((long)r->nodes * r->ranks_per_node != r->ranks)
        return snprintf(why, n, "column 'ranks': %d, but nodes x ranks_per_node is %d x %d = %ld", r->ranks, r->nodes,
                        r->ranks_per_node, (long)r->nodes * r->ranks_per_node),
               -1;
    if (strcmp(r->scope, "inter") == 0 && r->nodes < 2)
        return snprintf(why, n, "column 'scope': inter (across nodes), but column 'nodes' is %d", r->nodes), -1;
    if (r->min_bytes > r->max_bytes)
        return snprintf(why, n, "column 'min_bytes': %.9g, more than max_bytes %.9g", r->min_bytes, r->max_bytes), -1;
    return 0;
}

int net_row_check(const net_row *r, char *why, size_t n)
{
    for (int k = 0; k < NET_NRANGES; k++) {
        double v = row_value(r, net_ranges[k].col);
        if (!(v >= net_ranges[k].lo && v <= net_ranges[k].hi))
            return snprintf(why, n, "column '%s': expected a number from %g to %g, got %.9g",
                            netfile_cols[net_ranges[k].col], net_ranges[k].lo, net_ranges[k].hi, v),
                   -1;
    }
    if (!r->node_type[0] || !r->source[0])
        return snprintf(why, n, "column '%s': expected a value, got an empty cell",
                        r->node_type[0] ? "source" : "node_type"),
               -1;
    return row_rules(r, why, n);
}

static int cell_int(const table *tb, int i, int c, int *out)
{
    long v;
    double lo = 1, hi = 1e8;
    range_of(c, &lo, &hi);
    if (table_get_long(tb, i, c, (long)lo, (long)hi, &v) != 0) return CB_EUSAGE;
    *out = (int)v;
    return 0;
}

static int cell_num(const table *tb, int i, int c, double *out)
{
    double lo = 0, hi = 0;
    range_of(c, &lo, &hi);
    return table_get_double(tb, i, c, lo, hi, out);
}

/* One row; the columns are netfile_cols' in their order (the header was checked). */
static int row_read(const table *tb, int i, net_row *r)
{
    static const char *const scopes[2] = {"intra", "inter"};
    int coll, scope;
    memset(r, 0, sizeof *r);
    r->line = tb->lines[i];
    if (table_get_word(tb, i, 0, net_coll_names, NET_NCOLL, &coll) != 0 ||
        table_get_word(tb, i, 1, scopes, 2, &scope) != 0 || cell_str(tb, i, 2, r->node_type, sizeof r->node_type) ||
        cell_int(tb, i, NC_RANKS, &r->ranks) || cell_int(tb, i, NC_NODES, &r->nodes) ||
        cell_int(tb, i, NC_PER_NODE, &r->ranks_per_node) || cell_num(tb, i, NC_LATENCY, &r->latency_us) ||
        cell_num(tb, i, NC_BUSBW, &r->busbw_gb_per_s) || cell_num(tb, i, NC_BUSBW_MAX, &r->busbw_max_gb_per_s) ||
        cell_int(tb, i, NC_SIZES, &r->sizes) || cell_num(tb, i, NC_MIN, &r->min_bytes) ||
        cell_num(tb, i, NC_MAX, &r->max_bytes) || cell_num(tb, i, NC_R2, &r->r2) ||
        cell_str(tb, i, 13, r->source, sizeof r->source) || cell_str(tb, i, 14, r->as_of, sizeof r->as_of))
        return CB_EUSAGE;
    snprintf(r->collective, sizeof r->collective, "%s", net_coll_names[coll]);
    snprintf(r->scope, sizeof r->scope, "%s", scopes[scope]);
    char why[256];
    if (row_rules(r, why, sizeof why) != 0) return err_usage("%s:%d: %s", tb->path, r->line, why);
    return 0;
}

static int same_key(const net_row *a, const net_row *b)
{
    return strcmp(a->collective, b->collective) == 0 && strcmp(a->scope, b->scope) == 0 &&
           strcmp(a->node_type, b->node_type) == 0 && a->ranks == b->ranks;
}

/* Rows by key (collective, scope, node type, ranks), then by line. */
static int key_cmp(const void *pa, const void *pb)
{
    const net_row *a = *(const net_row *const *)pa, *b = *(const net_row *const *)pb;
    int c = strcmp(a->collective, b->collective);
    if (c == 0) c = strcmp(a->scope, b->scope);
    if (c == 0) c = strcmp(a->node_type, b->node_type);
    if (c == 0) c = (a->ranks > b->ranks) - (a->ranks < b->ranks);
    return c ? c : (a->line > b->line) - (a->line < b->line);
}

/* Two rows of the same key are an error naming the earliest repeat and the line it repeats
 * (sorted: n log n, not every pair). */
static int dup_check(const net_table *t)
{
    if (t->n < 2) return 0;
    const net_row **by = malloc((size_t)t->n * sizeof *by);
    if (!by) return err_msg("out of memory for %s", t->path);
    for (int i = 0; i < t->n; i++) by[i] = &t->rows[i];
    qsort(by, (size_t)t->n, sizeof *by, key_cmp);
    const net_row *dup = NULL, *first = NULL;
    for (int i = 0; i + 1 < t->n; i++)
        if (same_key(by[i], by[i + 1]) && (!dup || by[i + 1]->line < dup->line)) dup = by[i + 1], first = by[i];
    free(by);
    if (!dup) return 0;
    return err_usage("%s:%d: the same collective, scope, node type and ranks as line %d (%s %s %s at %d ranks): one "
                     "measurement of each",
                     t->path, dup->line, first->line, dup->collective, dup->scope, dup->node_type, dup->ranks);
}

int net_table_load(net_table *t, const char *path)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    table tb;
    if (table_load(&tb, path) != 0) return CB_EUSAGE;
    int ok = tb.ncols == NETFILE_NCOLS;
    for (int c = 0; ok && c < NETFILE_NCOLS; c++) ok = strcmp(tb.header[c], netfile_cols[c]) == 0;
    int rc = 0;
    if (!ok)
        rc = err_usage("%s:%d: not a network file: expected the columns %s,%s,%s,... (costbench import of an "
                       "nccl-tests or costbench allreduce output writes one), got '%s,...'",
                       path, tb.header_line, netfile_cols[0], netfile_cols[1], netfile_cols[2],
                       tb.ncols > 0 ? tb.header[0] : "");
    if (rc == 0 && tb.nrows > 0 && !(t->rows = calloc((size_t)tb.nrows, sizeof *t->rows)))
        rc = err_msg("out of memory for %s", path);
    for (int i = 0; rc == 0 && i < tb.nrows; i++) rc = row_read(&tb, i, &t->rows[t->n++]);
    if (rc == 0) rc = dup_check(t);
    table_free(&tb);
    if (rc != 0) net_table_free(t);
    return rc;
}

static void row_write(csv_writer *w, const net_row *r)
{
    csvw_str(w, r->collective), csvw_str(w, r->scope), csvw_str(w, r->node_type);
    csvw_num(w, r->ranks), csvw_num(w, r->nodes), csvw_num(w, r->ranks_per_node);
    csvw_num(w, r->latency_us), csvw_num(w, r->busbw_gb_per_s), csvw_num(w, r->busbw_max_gb_per_s);
    csvw_num(w, r->sizes), csvw_num(w, r->min_bytes), csvw_num(w, r->max_bytes), csvw_num(w, r->r2);
    csvw_str(w, r->source), csvw_str(w, r->as_of);
    csvw_endrow(w);
}

/* An existing file's rows against the new ones: a conflict is one error naming both. */
static int conflicts_check(const net_table *old, const net_row *rows, int nrows)
{
    for (int i = 0; i < nrows; i++)
        for (int k = 0; k < old->n; k++)
            if (same_key(&rows[i], &old->rows[k]))
                return err_usage("%s:%d: already has %s %s %s at %d ranks (%s); the new row from %s conflicts with "
                                 "it: nothing written",
                                 old->path, old->rows[k].line, rows[i].collective, rows[i].scope, rows[i].node_type,
                                 rows[i].ranks, old->rows[k].source, rows[i].source);
    return 0;
}

/* Each new row against the loader's rules (net_row_check): a row the loader would refuse is an
 * error naming where it came from; nothing is written. */
static int rows_check(const char *path, const net_row *rows, int nrows)
{
    char why[512];
    for (int i = 0; i < nrows; i++)
        if (net_row_check(&rows[i], why, sizeof why) != 0)
            return err_usage("%s: the row from %s: %s: nothing written", strcmp(path, "-") ? path : "the output",
                             rows[i].source, why);
    return 0;
}

int net_table_write(const char *path, char *const *comments, int ncomments, const net_row *rows, int nrows)
{
    if (rows_check(path, rows, nrows) != 0) return CB_EUSAGE;
    int append = strcmp(path, "-") != 0 && access(path, F_OK) == 0;
    net_table old = {.n = 0};
    text_lines prev = {.n = 0};
    if (append && net_table_load(&old, path) != 0) return CB_EUSAGE;
    int rc = append ? conflicts_check(&old, rows, nrows) : 0;
    if (rc == 0 && append) rc = text_lines_load(&prev, path);
    net_table_free(&old);
    csv_writer w = {.f = NULL};
    if (rc == 0 && csvw_open(&w, path) != 0) rc = CB_EFAIL;
    if (rc != 0) {
        if (append) text_lines_free(&prev);
        return rc;
    }
    for (int i = 0; i < prev.n; i++) fprintf(w.f, "%s\n", prev.line[i]); /* its rows as they are */
    for (int i = 0; i < ncomments; i++) fprintf(w.f, "# %s\n", comments[i]);
    if (!append) {
        for (int c = 0; c < NETFILE_NCOLS; c++) csvw_str(&w, netfile_cols[c]);
        csvw_endrow(&w);
    }
    for (int i = 0; i < nrows; i++) row_write(&w, &rows[i]);
    if (append) text_lines_free(&prev);
    return csvw_commit(&w) != 0 ? CB_EFAIL : 0;
}
