/* attncurves.c: data/attention.csv (see attncurves.h for every column). */
#include "attncurves.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/csvio.h"
#include "../../common/err.h"

const char *const attn_kernel_names[] = {"triton", "flash1", "flash2", "flash3", "cudnn", NULL};
static const char *const basis_names[] = {"measured", "estimated", "assumption", NULL};

static int name_in(const char *const *names, const char *s)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], s) == 0) return 1;
    return 0;
}

int attn_kernel_known(const char *kernel) { return name_in(attn_kernel_names, kernel); }

enum { AC_DEVICE, AC_KERNEL, AC_SM, AC_E_MAX, AC_S_HALF, AC_FIT, AC_PEAK, AC_POINTS, AC_BASIS, AC_SOURCE, AC_NCOLS };
static const char *const ac_names[AC_NCOLS] = {"device",     "kernel",      "sm",     "attn_eff_max", "attn_s_half",
                                               "fit_err_pct", "peak_tflops", "points", "basis",        "source"};

/* A string cell into a fixed buffer. */
static int ac_str(const table *t, int row, int col, char *dst, size_t n)
{
    const char *s = table_cell(t, row, col);
    if (!*s || strlen(s) >= n)
        return err_msg("%s:%d: column '%s': expected 1 to %zu characters, got %zu", t->path, t->lines[row],
                       t->header[col], n - 1, strlen(s));
    snprintf(dst, n, "%s", s);
    return 0;
}

/* "512:99 1024:133 ..." into c->s and c->tflops: at least two points, sequence lengths rising. */
static int ac_points(const table *t, int row, int col, attn_curve *c)
{
    const char *p = table_cell(t, row, col);
    c->npoints = 0;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        double s = strtod(p, &end), v = NAN;
        if (end != p && *end == ':') v = strtod(end + 1, &end);
        int ok = errno == 0 && isfinite(s) && isfinite(v) && s >= 1 && s <= 1e7 && v > 0 && v <= 1e6 &&
                 (*end == ' ' || *end == '\0') && c->npoints < ATTN_POINTS_MAX &&
                 (c->npoints == 0 || s > c->s[c->npoints - 1]);
        if (!ok)
            return err_msg("%s:%d: column 'points': expected up to %d 's:tflops' pairs (s rising), got '%.60s'",
                           t->path, t->lines[row], ATTN_POINTS_MAX, table_cell(t, row, col));
        c->s[c->npoints] = s, c->tflops[c->npoints] = v, c->npoints++;
        p = end;
    }
    if (c->npoints < 2)
        return err_msg("%s:%d: column 'points': expected at least two 's:tflops' pairs", t->path, t->lines[row]);
    return 0;
}

/* Row i into c, every cell checked against dt. */
static int ac_row(const table *t, int i, const int *col, const dev_table *dt, attn_curve *c)
{
    c->line = t->lines[i];
    int rc = ac_str(t, i, col[AC_DEVICE], c->device, sizeof c->device);
    const dev_row *d = rc == 0 ? devices_find(dt, c->device) : NULL;
    if (rc == 0 && (!d || d->family[0]))
        rc = err_msg("%s:%d: column 'device': expected a device row of %s (not a variant), got '%s'", t->path, c->line,
                     dt->path, c->device);
    if (rc == 0) rc = ac_str(t, i, col[AC_KERNEL], c->kernel, sizeof c->kernel);
    if (rc == 0 && !attn_kernel_known(c->kernel))
        rc = err_msg("%s:%d: column 'kernel': expected one of triton, flash1, flash2, flash3, cudnn, got '%s'", t->path,
                     c->line, c->kernel);
    if (rc == 0) rc = table_get_double(t, i, col[AC_SM], 0, 100, &c->sm);
    if (rc == 0) rc = table_get_double(t, i, col[AC_E_MAX], 0.01, 1, &c->e_max);
    if (rc == 0) rc = table_get_double(t, i, col[AC_S_HALF], 0, 1e7, &c->s_half);
    if (rc == 0) rc = table_get_double(t, i, col[AC_FIT], 0, 100, &c->fit_err_pct);
    if (rc == 0) rc = table_get_double(t, i, col[AC_PEAK], 1e-3, 1e6, &c->peak_tflops);
    if (rc == 0) rc = ac_points(t, i, col[AC_POINTS], c);
    if (rc == 0) rc = ac_str(t, i, col[AC_BASIS], c->basis, sizeof c->basis);
    if (rc == 0 && !name_in(basis_names, c->basis))
        rc = err_msg("%s:%d: column 'basis': expected measured, estimated or assumption, got '%s'", t->path, c->line,
                     c->basis);
    if (rc == 0) rc = ac_str(t, i, col[AC_SOURCE], c->source, sizeof c->source);
    return rc;
}

/* Row c against the rows before it: one row per (device, kernel), one compute capability per device. */
static int ac_consistent(const attn_table *t, const attn_curve *c)
{
    for (int j = 0; j < t->n; j++) {
        const attn_curve *o = &t->rows[j];
        if (strcmp(o->device, c->device) != 0) continue;
        if (strcmp(o->kernel, c->kernel) == 0)
            return err_msg("%s:%d: columns 'device', 'kernel': %s %s appears twice (first at line %d)", t->path,
                           c->line, c->device, c->kernel, o->line);
        if (o->sm != c->sm)
            return err_msg("%s:%d: column 'sm': %g, but line %d gives %s %g", t->path, c->line, c->sm, o->line,
                           c->device, o->sm);
    }
    return 0;
}

int attn_table_load(attn_table *t, const char *path, const dev_table *dt)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    table tb;
    if (table_load(&tb, path) != 0) return CB_EFAIL;
    int col[AC_NCOLS], rc = 0;
    for (int i = 0; i < AC_NCOLS && rc == 0; i++)
        if ((col[i] = table_col(&tb, ac_names[i], 1)) < 0) rc = CB_EFAIL;
    if (rc == 0 && tb.nrows > 0 && !(t->rows = calloc((size_t)tb.nrows, sizeof *t->rows)))
        rc = err_msg("out of memory");
    for (int i = 0; rc == 0 && i < tb.nrows; i++) {
        rc = ac_row(&tb, i, col, dt, &t->rows[i]);
        if (rc == 0) rc = ac_consistent(t, &t->rows[i]);
        if (rc == 0) t->n = i + 1;
    }
    table_free(&tb);
    if (rc) attn_table_free(t);
    return rc ? CB_EFAIL : 0;
}

void attn_table_free(attn_table *t)
{
    if (!t) return;
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}

const attn_curve *attn_table_find(const attn_table *t, const dev_row *d, const char *kernel)
{
    const char *key = d->family[0] ? d->family : d->device;
    for (int i = 0; t && i < t->n; i++)
        if (strcmp(t->rows[i].device, key) == 0 && strcmp(t->rows[i].kernel, kernel) == 0) return &t->rows[i];
    return NULL;
}

double attn_table_sm(const attn_table *t, const dev_row *d)
{
    const char *key = d->family[0] ? d->family : d->device;
    for (int i = 0; t && i < t->n; i++)
        if (strcmp(t->rows[i].device, key) == 0) return t->rows[i].sm;
    return 0;
}
