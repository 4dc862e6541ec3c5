/* effcurve.c: a `costbench matmul` CSV as an efficiency curve, and the assumed curve (see effcurve.h). */
#include "effcurve.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../common/csvio.h"
#include "../../common/err.h"

/* Index of v in the ascending list xs[0..*n), added in order when new; -1 when full. */
static int grid_index(double *xs, int *n, double v)
{
    int i = 0;
    while (i < *n && xs[i] < v) i++;
    if (i < *n && xs[i] == v) return i;
    if (*n == SCALE_EFF_MAX) return -1;
    memmove(xs + i + 1, xs + i, (size_t)(*n - i) * sizeof *xs);
    (*n)++;
    xs[i] = v;
    return i;
}

/* The grid's axes: every distinct k and n of the file (m, when the file has it, at least 1 too). */
static int eff_axes(scale_eff_curve *c, const table *t, int ck, int cn, int cm)
{
    for (int r = 0; r < t->nrows; r++) {
        long k, n, m;
        if (table_get_long(t, r, ck, 1, 1L << 30, &k) != 0 || table_get_long(t, r, cn, 1, 1L << 30, &n) != 0 ||
            (cm >= 0 && table_get_long(t, r, cm, 1, 1L << 30, &m) != 0))
            return CB_EFAIL;
        if (grid_index(c->k, &c->nk, (double)k) < 0 || grid_index(c->n, &c->nn, (double)n) < 0)
            return err_msg("%s:%d: more than %d distinct values of k or n", t->path, t->lines[r], SCALE_EFF_MAX);
    }
    return 0;
}

/* One efficiency cell: pct_of_peak in (0, 100] (a measurement above the peak it was measured
 * against says that peak is wrong), gflops_median positive; both finite. */
static int eff_value(const scale_eff_curve *c, const table *t, int r, int ce, double *v)
{
    int pct = strcmp(c->column, "pct_of_peak") == 0;
    if (table_get_double(t, r, ce, 0, 1e12, v) != 0) return CB_EFAIL;
    if (*v > 0 && (!pct || *v <= 100)) return 0;
    return err_msg(
        "%s:%d: column '%s': expected %s, got '%s'", t->path, t->lines[r], c->column,
        pct ? "a share of the peak in (0, 100] (more than 100 means the peak it was measured against is wrong)"
            : "a positive GFLOP/s",
        table_cell(t, r, ce));
}

/* Sums the efficiency column into the grid, then the mean of each cell; every cell measured. */
static int eff_fill(scale_eff_curve *c, const table *t, int ck, int cn, int ce)
{
    int count[SCALE_EFF_MAX][SCALE_EFF_MAX] = {{0}};
    memset(c->e, 0, sizeof c->e);
    for (int r = 0; r < t->nrows; r++) {
        long k, n;
        double v;
        table_get_long(t, r, ck, 1, 1L << 30, &k), table_get_long(t, r, cn, 1, 1L << 30, &n);
        if (eff_value(c, t, r, ce, &v) != 0) return CB_EFAIL;
        int ik = grid_index(c->k, &c->nk, (double)k), in = grid_index(c->n, &c->nn, (double)n);
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

int scale_eff_load(scale_eff_curve *c, const char *path)
{
    memset(c, 0, sizeof *c);
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int ck = table_col(&t, "k", 0), cn = table_col(&t, "n", 0), cm = table_col(&t, "m", 0),
        ce = table_col(&t, "pct_of_peak", 0);
    snprintf(c->column, sizeof c->column, "pct_of_peak");
    if (ce < 0) ce = table_col(&t, "gflops_median", 0), snprintf(c->column, sizeof c->column, "gflops_median");
    int rc = eff_columns(&t, ck, cn, ce);
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no data rows", path);
    if (rc == 0) rc = eff_axes(c, &t, ck, cn, cm);
    if (rc == 0) rc = eff_fill(c, &t, ck, cn, ce);
    table_free(&t);
    if (rc != 0) c->nk = c->nn = 0;
    return rc;
}

/* Position of v on the ascending axis xs: the cell i and weight w of xs[i + 1] in log space,
 * clamped to the ends. */
static void axis_locate(const double *xs, int n, double v, int *i, double *w, int *clamped)
{
    *i = 0, *w = 0;
    if (n == 1 || v <= xs[0]) {
        if (v < xs[0] || (n == 1 && v != xs[0])) *clamped = 1;
        return;
    }
    if (v >= xs[n - 1]) {
        if (v > xs[n - 1]) *clamped = 1;
        *i = n - 2, *w = 1;
        return;
    }
    while (xs[*i + 1] < v) (*i)++;
    *w = log(v / xs[*i]) / log(xs[*i + 1] / xs[*i]);
}

double scale_eff(const scale_eff_curve *c, double K, double N, int *clamped)
{
    int dummy = 0;
    if (!clamped) clamped = &dummy;
    if (c == NULL || c->nk == 0) {
        if (K < SCALE_EFF_MIN || N < SCALE_EFF_MIN) *clamped = 1;
        K = fmax(K, SCALE_EFF_MIN), N = fmax(N, SCALE_EFF_MIN);
        return 1.0 / (1.0 + SCALE_EFF_K0 / K) / (1.0 + SCALE_EFF_N0 / N);
    }
    int ik, in;
    double wk, wn;
    axis_locate(c->k, c->nk, K, &ik, &wk, clamped);
    axis_locate(c->n, c->nn, N, &in, &wn, clamped);
    int ik1 = c->nk > 1 ? ik + 1 : ik, in1 = c->nn > 1 ? in + 1 : in;
    double lo = (1 - wn) * c->e[ik][in] + wn * c->e[ik][in1], hi = (1 - wn) * c->e[ik1][in] + wn * c->e[ik1][in1];
    return (1 - wk) * lo + wk * hi;
}

void scale_eff_range(const scale_eff_curve *c, char *buf, size_t n)
{
    if (c == NULL || c->nk == 0)
        snprintf(buf, n, "K %g.. and N %g.. (the assumed curve's range)", SCALE_EFF_MIN, SCALE_EFF_MIN);
    else snprintf(buf, n, "K %g..%g and N %g..%g (measured)", c->k[0], c->k[c->nk - 1], c->n[0], c->n[c->nn - 1]);
}
