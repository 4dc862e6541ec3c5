/* band.c: the band's constants from out-of-sample errors, and data/band.csv (see band.h). */
#include "band.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/machine.h"

const char *const band_mode_names[BAND_NMODES] = {"first_row", "lofo", "none"};
static const char *const case_names[BAND_NCASES] = {"near", "layout", "device"};

const char *band_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double band_p90(double *x, int n)
{
    if (n <= 0) return NAN;
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return x[(int)ceil(0.9 * n) - 1];
}

static band_entry *band_add(band_table *t)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 32;
        band_entry *e = realloc(t->e, (size_t)cap * sizeof *e);
        if (!e) return NULL;
        t->e = e, t->cap = cap;
    }
    band_entry *e = &t->e[t->n++];
    memset(e, 0, sizeof *e);
    return e;
}

void band_free(band_table *t)
{
    if (!t) return;
    free(t->e);
    memset(t, 0, sizeof *t);
}

const band_entry *band_find(const band_table *t, band_mode m, int k, const char *file)
{
    const char *base = file ? band_base(file) : "";
    const band_entry *all = NULL;
    for (int i = 0; t && i < t->n; i++) {
        const band_entry *e = &t->e[i];
        if ((int)e->mode != (int)m || e->kase != k) continue;
        if (e->left_out[0] == '\0') all = e;
        else if (strcmp(e->left_out, base) == 0) return e;
    }
    return all;
}

double band_lookup(const band_table *t, band_mode m, int k, const char *file)
{
    const band_entry *e = band_find(t, m, k, file);
    return e ? e->band_pct : NAN;
}

/* The |errors| of mode m, case k (k < 0: every case), from files other than left_out, into x. */
static int band_collect(const band_sample *s, int n, band_mode m, int k, const char *left_out, double *x)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        if (s[i].mode == m && (k < 0 || s[i].kase == k) && strcmp(s[i].file, left_out) != 0 && isfinite(s[i].abs_err_pct))
            x[c++] = s[i].abs_err_pct;
    return c;
}

/* The entries of mode m with left_out (every case). */
static int band_derive_one(band_table *out, const band_sample *s, int n, band_mode m, const char *left_out, double *x)
{
    for (int k = 0; k < BAND_NCASES; k++) {
        int c = band_collect(s, n, m, k, left_out, x), pooled = c < BAND_MIN_PREDICTIONS;
        if (pooled) c = band_collect(s, n, m, -1, left_out, x);
        if (c == 0) continue;
        band_entry *e = band_add(out);
        if (!e) return err_msg("out of memory for the band");
        e->mode = m, e->kase = k, e->predictions = c, e->pooled = pooled;
        snprintf(e->left_out, sizeof e->left_out, "%s", left_out);
        e->p90_pct = ceil(10.0 * band_p90(x, c) - 1e-9) / 10.0;
        e->band_pct = e->p90_pct;
        if (k > 0 && out->n >= 2 && out->e[out->n - 2].mode == m && out->e[out->n - 2].kase == k - 1 &&
            strcmp(out->e[out->n - 2].left_out, left_out) == 0)
            e->band_pct = fmax(e->band_pct, out->e[out->n - 2].band_pct);
    }
    return 0;
}

int band_derive(band_table *out, const band_sample *s, int n)
{
    memset(out, 0, sizeof *out);
    double *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    if (!x) return err_msg("out of memory for the band");
    int rc = 0;
    for (int m = 0; m < BAND_NMODES && rc == 0; m++) {
        rc = band_derive_one(out, s, n, (band_mode)m, "", x);
        for (int i = 0; i < n && rc == 0; i++) {
            int seen = 0; /* each file once, in the order first met */
            for (int j = 0; j < i && !seen; j++) seen = strcmp(s[j].file, s[i].file) == 0;
            if (!seen) rc = band_derive_one(out, s, n, (band_mode)m, s[i].file, x);
        }
    }
    free(x);
    if (rc != 0) band_free(out);
    return rc;
}

static int word_index(const char *w, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(w, names[i]) == 0) return i;
    return -1;
}

/* One row of the loaded table into e. */
static int band_row(const table *t, int r, const int *col, band_entry *e)
{
    const char *mode = table_cell(t, r, col[0]), *kase = table_cell(t, r, col[1]);
    int m = word_index(mode, band_mode_names, BAND_NMODES), k = word_index(kase, case_names, BAND_NCASES);
    if (m < 0 || k < 0)
        return err_usage("%s:%d: column '%s': expected %s, got '%s'", t->path, t->lines[r], m < 0 ? "mode" : "case",
                         m < 0 ? "first_row, lofo or none" : "near, layout or device", m < 0 ? mode : kase);
    long np, pooled;
    double p90, band;
    if (table_get_long(t, r, col[3], 1, 1000000, &np) != 0 || table_get_long(t, r, col[4], 0, 1, &pooled) != 0 ||
        table_get_double(t, r, col[5], 0, 1000, &p90) != 0 || table_get_double(t, r, col[6], 0, 1000, &band) != 0)
        return CB_EUSAGE;
    e->mode = (band_mode)m, e->kase = k, e->predictions = (int)np, e->pooled = (int)pooled, e->p90_pct = p90,
    e->band_pct = band;
    snprintf(e->left_out, sizeof e->left_out, "%s", table_cell(t, r, col[2]));
    return 0;
}

int band_load(band_table *bt, const char *path)
{
    memset(bt, 0, sizeof *bt);
    char buf[4096];
    if (!path) {
        if (machine_data_file(buf, sizeof buf, "band.csv") != 0) return CB_EUSAGE;
        path = buf;
    }
    table t;
    if (table_load(&t, path) != 0) return CB_EUSAGE;
    static const char *const cols[7] = {"mode",   "case",           "left_out", "predictions",
                                        "pooled", "p90_abs_error_pct", "band_pct"};
    int col[7], rc = 0;
    for (int c = 0; c < 7 && rc == 0; c++)
        if ((col[c] = table_col(&t, cols[c], 1)) < 0) rc = CB_EUSAGE;
    for (int r = 0; r < t.nrows && rc == 0; r++) {
        band_entry *e = band_add(bt);
        rc = e ? band_row(&t, r, col, e) : err_msg("out of memory for the band");
    }
    table_free(&t);
    if (rc != 0) band_free(bt);
    return rc;
}

int band_write(const band_table *t, const char *path)
{
    csv_writer w;
    if (csvw_open(&w, path) != 0) return CB_EFAIL;
    fprintf(w.f,
            "# The band of a prediction (report/predict/band.h): the 90th percentile (nearest rank, rounded up to 0.1)\n"
            "# of |error| that `costbench validate` measures on data/reference/published/*.csv, per mode (first_row:\n"
            "# each file calibrated on its first row; lofo: each file from a joint fit on the other files; none: the\n"
            "# framework's default efficiency fitted without the file) and case (calibration.h's calib_case; lofo and\n"
            "# none: near = the fit saw the row's framework and device, layout = its framework only, device = neither).\n"
            "# left_out: the file whose errors are left out (the band that file is scored with); empty: every file.\n"
            "# pooled 1: the case had fewer than 8 errors, the mode's errors over every case were taken.\n"
            "# band_pct: the largest p90 of the case and the nearer ones (near <= layout <= device): what is printed.\n"
            "# Derived, never edited: costbench validate --band-csv data/band.csv data/reference/published/*.csv\n");
    static const char *const hdr[7] = {"mode",   "case",           "left_out", "predictions",
                                       "pooled", "p90_abs_error_pct", "band_pct"};
    for (int c = 0; c < 7; c++) csvw_str(&w, hdr[c]);
    csvw_endrow(&w);
    for (int i = 0; i < t->n; i++) {
        const band_entry *e = &t->e[i];
        csvw_str(&w, band_mode_names[e->mode]), csvw_str(&w, case_names[e->kase]), csvw_str(&w, e->left_out);
        csvw_num(&w, e->predictions), csvw_num(&w, e->pooled), csvw_num(&w, e->p90_pct), csvw_num(&w, e->band_pct);
        csvw_endrow(&w);
    }
    return csvw_commit(&w);
}
