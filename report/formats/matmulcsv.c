/* matmulcsv.c: a `costbench matmul --csv` file read as a GEMM efficiency grid (matmulcsv.h). */
#include "matmulcsv.h"

#include <stdio.h>
#include <string.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/schema.h"

int matmul_axis_add(double *xs, int *n, double v)
{
    int i = 0;
    while (i < *n && xs[i] < v) i++;
    if (i < *n && xs[i] == v) return i;
    if (*n == MATMUL_CURVE_MAX) return -1;
    memmove(xs + i + 1, xs + i, (size_t)(*n - i) * sizeof *xs);
    (*n)++;
    xs[i] = v;
    return i;
}

/* The grid's axes: every distinct k and n of the file (m, when the file has it, at least 1 too). */
static int eff_axes(matmul_curve *c, const table *t, int ck, int cn, int cm)
{
    for (int r = 0; r < t->nrows; r++) {
        long k, n, m;
        if (table_get_long(t, r, ck, 1, 1L << 30, &k) != 0 || table_get_long(t, r, cn, 1, 1L << 30, &n) != 0 ||
            (cm >= 0 && table_get_long(t, r, cm, 1, 1L << 30, &m) != 0))
            return CB_EFAIL;
        if (matmul_axis_add(c->k, &c->nk, (double)k) < 0 || matmul_axis_add(c->n, &c->nn, (double)n) < 0)
            return err_msg("%s:%d: more than %d distinct values of k or n", t->path, t->lines[r], MATMUL_CURVE_MAX);
    }
    return 0;
}

/* One efficiency cell: pct_of_peak in (0, 100] (a measurement above the peak it was measured
 * against says that peak is wrong), gflops_median positive; both finite. */
static int eff_value(const matmul_curve *c, const table *t, int r, int ce, double *v)
{
    int pct = strcmp(c->column, mm_cols[MM_PCT].name) == 0;
    if (table_get_double(t, r, ce, 0, 1e12, v) != 0) return CB_EFAIL;
    if (*v > 0 && (!pct || *v <= 100)) return 0;
    return err_msg(
        "%s:%d: column '%s': expected %s, got '%s'", t->path, t->lines[r], c->column,
        pct ? "a share of the peak in (0, 100] (more than 100 means the peak it was measured against is wrong)"
            : "a positive GFLOP/s",
        table_cell(t, r, ce));
}

/* Sums the efficiency column into the grid, then the mean of each cell; every cell measured. */
static int eff_fill(matmul_curve *c, const table *t, int ck, int cn, int ce)
{
    int count[MATMUL_CURVE_MAX][MATMUL_CURVE_MAX] = {{0}};
    memset(c->e, 0, sizeof c->e);
    for (int r = 0; r < t->nrows; r++) {
        long k, n;
        double v;
        table_get_long(t, r, ck, 1, 1L << 30, &k), table_get_long(t, r, cn, 1, 1L << 30, &n);
        if (eff_value(c, t, r, ce, &v) != 0) return CB_EFAIL;
        int ik = matmul_axis_add(c->k, &c->nk, (double)k), in = matmul_axis_add(c->n, &c->nn, (double)n);
        c->e[ik][in] += v, count[ik][in]++;
    }
    for (int i = 0; i < c->nk; i++)
        for (int j = 0; j < c->nn; j++) {
            if (count[i][j] == 0)
                return err_msg("%s: no row for k %g, n %g: the file's k and n must span a full grid to interpolate on",
                               t->path, c->k[i], c->n[j]);
            c->e[i][j] /= count[i][j];
        }
    return 0;
}

/* The columns a matmul CSV must have, or one error naming those it lacks (the wrong kind of CSV). */
static int eff_columns(const table *t, int ck, int cn, int ce)
{
    if (ck >= 0 && cn >= 0 && ce >= 0) return 0;
    const char *names[3] = {cn < 0 ? "'n'" : NULL, ck < 0 ? "'k'" : NULL,
                            ce < 0 ? "'pct_of_peak' or 'gflops_median'" : NULL};
    char list[96] = "";
    int count = 0;
    for (int i = 0; i < 3; i++)
        if (names[i]) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", count++ ? ", " : "", names[i]);
    err_msg("%s:%d: no column %s: this is not a costbench matmul CSV", t->path, t->header_line > 0 ? t->header_line : 1,
            list);
    err_hint("--matmul-csv takes the CSV `costbench matmul --csv FILE` writes (columns n, k, m, pct_of_peak, "
             "gflops_median)");
    return CB_EFAIL;
}

int matmul_curve_load(matmul_curve *c, const char *path)
{
    memset(c, 0, sizeof *c);
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int ck = table_col(&t, mm_cols[MM_K].name, 0), cn = table_col(&t, mm_cols[MM_N].name, 0),
        cm = table_col(&t, mm_cols[MM_M].name, 0), ce = table_col(&t, mm_cols[MM_PCT].name, 0);
    snprintf(c->column, sizeof c->column, "%s", mm_cols[MM_PCT].name);
    if (ce < 0)
        ce = table_col(&t, mm_cols[MM_GF_MED].name, 0),
        snprintf(c->column, sizeof c->column, "%s", mm_cols[MM_GF_MED].name);
    int rc = eff_columns(&t, ck, cn, ce);
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no data rows", path);
    if (rc == 0) rc = eff_axes(c, &t, ck, cn, cm);
    if (rc == 0) rc = eff_fill(c, &t, ck, cn, ce);
    table_free(&t);
    if (rc != 0) c->nk = c->nn = 0;
    return rc;
}
