/* fweff.c: data/framework_eff.csv, a framework's default efficiency (see fweff.h). */
#include "fweff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/frameworks.h"
#include "../../common/machine.h"

static const char *const cols[6] = {"framework", "phi", "spread_pct", "rows", "files", "derived"};

fweff_entry *fweff_add(fweff_table *t)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 8;
        fweff_entry *e = realloc(t->e, (size_t)cap * sizeof *e);
        if (!e) return NULL;
        t->e = e, t->cap = cap;
    }
    fweff_entry *e = &t->e[t->n++];
    memset(e, 0, sizeof *e);
    return e;
}

void fweff_free(fweff_table *t)
{
    if (!t) return;
    free(t->e);
    memset(t, 0, sizeof *t);
}

const fweff_entry *fweff_find(const fweff_table *t, const char *framework)
{
    const char *c = framework ? framework_canonical(framework) : NULL;
    const fweff_entry *any = NULL;
    for (int i = 0; t && i < t->n; i++) {
        if (c && strcmp(t->e[i].framework, c) == 0) return &t->e[i];
        if (strcmp(t->e[i].framework, FWEFF_ANY) == 0) any = &t->e[i];
    }
    return any;
}

/* Row r of the loaded table into e. */
static int fweff_row(const table *t, int r, const int *col, fweff_entry *e)
{
    long rows, files;
    if (table_get_double(t, r, col[1], 1e-3, 10, &e->phi) != 0 ||
        table_get_double(t, r, col[2], 0, 1000, &e->spread_pct) != 0 ||
        table_get_long(t, r, col[3], 1, 100000, &rows) != 0 || table_get_long(t, r, col[4], 1, 10000, &files) != 0)
        return CB_EUSAGE;
    const char *name = table_cell(t, r, col[0]), *c = framework_canonical(name);
    if (!name[0]) return err_usage("%s:%d: column 'framework': expected a name, got ''", t->path, t->lines[r]);
    snprintf(e->framework, sizeof e->framework, "%s", c ? c : name);
    snprintf(e->derived, sizeof e->derived, "%s", table_cell(t, r, col[5]));
    e->rows = (int)rows, e->files = (int)files;
    return 0;
}

int fweff_load(fweff_table *ft, const char *path)
{
    memset(ft, 0, sizeof *ft);
    char buf[4096];
    if (!path) {
        if (machine_data_file(buf, sizeof buf, "framework_eff.csv") != 0) return CB_EUSAGE;
        path = buf;
    }
    table t;
    if (table_load(&t, path) != 0) return CB_EUSAGE;
    int col[6], rc = 0;
    for (int c = 0; c < 6 && rc == 0; c++)
        if ((col[c] = table_col(&t, cols[c], 1)) < 0) rc = CB_EUSAGE;
    for (int r = 0; r < t.nrows && rc == 0; r++) {
        fweff_entry *e = fweff_add(ft);
        rc = e ? fweff_row(&t, r, col, e) : err_msg("out of memory for the framework efficiencies");
    }
    table_free(&t);
    if (rc != 0) fweff_free(ft);
    return rc;
}

int fweff_write(const fweff_table *t, const char *path)
{
    csv_writer w;
    if (csvw_open(&w, path) != 0) return CB_EFAIL;
    fprintf(w.f, "# A framework's default efficiency (report/predict/fweff.h): phi, its efficiency against the step\n"
                 "# model's device time, fitted (least squares on the relative seq/s errors, no per-step overhead) on\n"
                 "# every row of that framework in data/reference/published/*.csv; 'any': every row. spread_pct: the\n"
                 "# 90th percentile of |error| of `validate --calibrate none` on its rows, each file predicted with the\n"
                 "# phi fitted without it (out of sample). What scale and plan use with no --calibrate and no --mfu.\n"
                 "# Derived, never edited: costbench validate --framework-eff-csv data/framework_eff.csv "
                 "data/reference/published/*.csv\n");
    for (int c = 0; c < 6; c++) csvw_str(&w, cols[c]);
    csvw_endrow(&w);
    for (int i = 0; i < t->n; i++) {
        const fweff_entry *e = &t->e[i];
        csvw_str(&w, e->framework), csvw_num(&w, e->phi), csvw_num(&w, e->spread_pct), csvw_num(&w, e->rows),
            csvw_num(&w, e->files), csvw_str(&w, e->derived);
        csvw_endrow(&w);
    }
    return csvw_commit(&w);
}
