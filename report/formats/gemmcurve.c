/* gemmcurve.c: a GPU matmul CSV read as a device curve, and the curves a run uses (gemmcurve.h). */
#include "gemmcurve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/machine.h"
#include "../../common/schema.h"

const char *const gemm_dtype_names[GEMM_NDTYPES] = {"fp32", "tf32", "fp16", "bf16", "fp8"};

/* The columns the reader uses (-1: absent; provenance columns are optional). */
typedef struct {
    int op, n, k, gf, dtype, device, gpu_name, cublaslt, date;
} gemm_cols;

static int dtype_of(const char *s)
{
    for (int i = 0; i < GEMM_NDTYPES; i++)
        if (strcmp(s, gemm_dtype_names[i]) == 0) return i;
    return -1;
}

/* The data-sheet dense peak of each dtype per worker, GFLOP/s (NaN: none in the table). */
static void curve_peaks(gemm_dev_curve *c, const dev_row *d)
{
    const double tf[GEMM_NDTYPES] = {d->fp32_tflops, d->tf32_tflops, d->fp16_tflops, d->bf16_tflops, d->fp8_tflops};
    int w = d->workers > 0 ? d->workers : 1;
    for (int i = 0; i < GEMM_NDTYPES; i++) c->peak_gflops[i] = tf[i] > 0 ? tf[i] * 1e3 / w : NAN;
}

/* The one device of the file, known to dt; the names the curve applies to (its variants too). */
static int curve_device(gemm_dev_curve *c, const table *t, const gemm_cols *k, const dev_table *dt)
{
    const char *dev = table_cell(t, 0, k->device);
    const dev_row *d = devices_find(dt, dev);
    if (!d || strlen(dev) >= sizeof c->device) {
        err_msg("%s:%d: column 'device': '%s' is not a device of %s: a curve needs the device's data-sheet peaks",
                t->path, t->lines[0], dev, dt->path);
        err_hint("costbench-gpu matmul leaves 'device' empty on a GPU data/devices.csv does not list: add its row "
                 "first");
        return CB_EFAIL;
    }
    for (int r = 1; r < t->nrows; r++)
        if (strcmp(table_cell(t, r, k->device), dev) != 0)
            return err_msg("%s:%d: column 'device': '%s' after '%s': one device a file (a curve is one device's)",
                           t->path, t->lines[r], table_cell(t, r, k->device), dev);
    snprintf(c->device, sizeof c->device, "%s", dev);
    curve_peaks(c, d);
    snprintf(c->names[c->nnames++], sizeof c->names[0], "%s", dev);
    for (int i = 0; i < dt->n && c->nnames < GEMM_CURVE_NAMES; i++)
        if (strcmp(dt->rows[i].family, dev) == 0)
            snprintf(c->names[c->nnames++], sizeof c->names[0], "%s", dt->rows[i].device);
    return 0;
}

/* Row r's dtype (any row) and, for a sweep row, its k, n and e = gflops_median / the peak. Returns
 * 1 for a sweep row, 0 for another, CB_EFAIL. */
static int row_read(const gemm_dev_curve *c, const table *t, const gemm_cols *k, int r, int *d, long *kk, long *nn,
                    double *e)
{
    *d = dtype_of(table_cell(t, r, k->dtype));
    if (*d < 0)
        return err_msg("%s:%d: column 'dtype': expected fp32, tf32, fp16, bf16 or fp8, got '%s'", t->path, t->lines[r],
                       table_cell(t, r, k->dtype));
    if (strcmp(table_cell(t, r, k->op), "linear") != 0) return 0;
    double gf;
    if (table_get_long(t, r, k->k, 1, 1L << 30, kk) != 0 || table_get_long(t, r, k->n, 1, 1L << 30, nn) != 0 ||
        table_get_double(t, r, k->gf, 1e-9, 1e12, &gf) != 0)
        return CB_EFAIL;
    if (!(c->peak_gflops[*d] > 0))
        return err_msg("%s:%d: column 'dtype': %s has no data-sheet %s peak in data/devices.csv to measure e against",
                       t->path, t->lines[r], c->device, gemm_dtype_names[*d]);
    *e = gf / c->peak_gflops[*d];
    if (*e > 1)
        return err_msg("%s:%d: column 'gflops_median': %.9g GFLOP/s is %.4g of %s's data-sheet dense %s peak %.9g GFLOP/s: "
                       "e above 1 says the measurement or the peak is wrong",
                       t->path, t->lines[r], gf, *e, c->device, gemm_dtype_names[*d], c->peak_gflops[*d]);
    return 1;
}

/* Every row checked, the sweep rows' axes per dtype; first[d]: the line of dtype d's first sweep row. */
static int curve_axes(gemm_dev_curve *c, const table *t, const gemm_cols *k, int *first)
{
    int sweeps = 0;
    for (int r = 0; r < t->nrows; r++) {
        int d;
        long kk, nn;
        double e;
        int rc = row_read(c, t, k, r, &d, &kk, &nn, &e);
        if (rc < 0) return rc;
        if (rc == 0) continue;
        matmul_curve *g = &c->grid[d];
        if (matmul_axis_add(g->k, &g->nk, (double)kk) < 0 || matmul_axis_add(g->n, &g->nn, (double)nn) < 0)
            return err_msg("%s:%d: more than %d distinct values of k or n for %s", t->path, t->lines[r],
                           MATMUL_CURVE_MAX, gemm_dtype_names[d]);
        if (!first[d]) first[d] = t->lines[r];
        sweeps++;
    }
    if (sweeps == 0) return err_msg("%s: no sweep row (op 'linear'): nothing to interpolate on", t->path);
    return 0;
}

/* Each cell the mean e of its rows; every (k, n) of a dtype's grid measured. */
static int curve_fill(gemm_dev_curve *c, const table *t, const gemm_cols *k, const int *first)
{
    int(*count)[MATMUL_CURVE_MAX][MATMUL_CURVE_MAX] = calloc(GEMM_NDTYPES, sizeof *count), rc = 0;
    if (!count) return err_msg("out of memory for the GEMM curve");
    for (int r = 0; r < t->nrows; r++) {
        int d;
        long kk, nn;
        double e;
        if (row_read(c, t, k, r, &d, &kk, &nn, &e) != 1) continue; /* checked by curve_axes */
        matmul_curve *g = &c->grid[d];
        int i = matmul_axis_add(g->k, &g->nk, (double)kk), j = matmul_axis_add(g->n, &g->nn, (double)nn);
        g->e[i][j] += e, count[d][i][j]++;
    }
    for (int d = 0; d < GEMM_NDTYPES && rc == 0; d++) {
        matmul_curve *g = &c->grid[d];
        snprintf(g->column, sizeof g->column, "%s", mm_cols[MM_GF_MED].name);
        for (int i = 0; i < g->nk && rc == 0; i++)
            for (int j = 0; j < g->nn && rc == 0; j++) {
                if (count[d][i][j] == 0)
                    rc = err_msg("%s:%d: %s sweep: no row for k %g, n %g: the sweep's k and n must span a full grid "
                                 "to interpolate on",
                                 t->path, first[d], gemm_dtype_names[d], g->k[i], g->n[j]);
                else g->e[i][j] /= count[d][i][j];
            }
    }
    free(count);
    return rc;
}

/* The columns, or one error naming the first missing. */
static int curve_cols(const table *t, gemm_cols *k)
{
    k->op = table_col(t, mm_cols[MM_OP].name, 1), k->n = table_col(t, mm_cols[MM_N].name, 1);
    k->k = table_col(t, mm_cols[MM_K].name, 1), k->gf = table_col(t, mm_cols[MM_GF_MED].name, 1);
    k->dtype = table_col(t, mm_cols[MM_DTYPE].name, 1), k->device = table_col(t, "device", 1);
    k->gpu_name = table_col(t, "gpu_name", 0), k->cublaslt = table_col(t, "cublaslt", 0);
    k->date = table_col(t, machine_cols[MC_DATE_UTC], 0);
    if (k->op < 0 || k->n < 0 || k->k < 0 || k->gf < 0 || k->dtype < 0 || k->device < 0) return CB_EFAIL;
    return t->nrows > 0 ? 0 : err_msg("%s: no data rows", t->path);
}

int gemm_dev_curve_load(gemm_dev_curve *c, const char *path, const dev_table *dt)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    gemm_cols k;
    int first[GEMM_NDTYPES] = {0};
    int rc = curve_cols(&t, &k);
    if (rc == 0) rc = curve_device(c, &t, &k, dt);
    if (rc == 0) rc = curve_axes(c, &t, &k, first);
    if (rc == 0) rc = curve_fill(c, &t, &k, first);
    if (rc == 0) {
        snprintf(c->gpu_name, sizeof c->gpu_name, "%s", k.gpu_name >= 0 ? table_cell(&t, 0, k.gpu_name) : "");
        snprintf(c->cublaslt, sizeof c->cublaslt, "%s", k.cublaslt >= 0 ? table_cell(&t, 0, k.cublaslt) : "");
        snprintf(c->date, sizeof c->date, "%.10s", k.date >= 0 ? table_cell(&t, 0, k.date) : "");
    }
    table_free(&t);
    return rc == 0 ? 0 : CB_EFAIL;
}

int gemm_csv_is_device(const char *path)
{
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int yes = table_col(&t, "device", 0) >= 0 && table_col(&t, mm_cols[MM_K].name, 0) >= 0 &&
              table_col(&t, mm_cols[MM_GF_MED].name, 0) >= 0;
    table_free(&t);
    return yes;
}

/* Appends an empty curve to s (NULL: out of memory, error printed). */
static gemm_dev_curve *curves_add(gemm_curves *s)
{
    gemm_dev_curve *grown = realloc(s->c, (size_t)(s->n + 1) * sizeof *grown);
    if (!grown) return err_msg("out of memory for the GEMM curves"), NULL;
    s->c = grown;
    return &s->c[s->n++];
}

/* data/gemm/DEVICE.csv of device row d when it exists: loaded, its `device` d's. */
static int curves_shipped(gemm_curves *s, const dev_table *dt, const dev_row *d)
{
    char name[96], path[CB_PATH_MAX];
    struct stat st;
    snprintf(name, sizeof name, "gemm/%s.csv", d->device);
    if (machine_data_file(path, sizeof path, name) != 0 || stat(path, &st) != 0) return 0;
    gemm_dev_curve *c = curves_add(s);
    if (!c) return CB_EFAIL;
    if (gemm_dev_curve_load(c, path, dt) != 0) return s->n--, CB_EFAIL;
    snprintf(c->path, sizeof c->path, "data/%s", name);
    if (strcmp(c->device, d->device) == 0) return 0;
    s->n--;
    return err_msg("%s: its rows are on '%s', its name says '%s': data/gemm/DEVICE.csv holds DEVICE's curve", path,
                   c->device, d->device);
}

int gemm_curves_load(gemm_curves *s, const dev_table *dt, const char *matmul_csv)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < dt->n; i++)
        if (!dt->rows[i].family[0] && curves_shipped(s, dt, &dt->rows[i]) != 0) return gemm_curves_free(s), CB_EFAIL;
    if (!matmul_csv) return 0;
    gemm_dev_curve *c = curves_add(s);
    if (!c) return gemm_curves_free(s), CB_EFAIL;
    if (gemm_dev_curve_load(c, matmul_csv, dt) != 0) return gemm_curves_free(s), CB_EUSAGE; /* a flag's file */
    for (int i = 0; i < s->n - 1; i++) /* the flag's file in place of the shipped one of its device */
        if (strcmp(s->c[i].device, c->device) == 0) {
            s->c[i] = *c;
            s->n--;
            break;
        }
    return 0;
}

void gemm_curves_free(gemm_curves *s)
{
    if (!s) return;
    free(s->c);
    s->c = NULL, s->n = 0;
}

const gemm_dev_curve *gemm_curves_find(const gemm_curves *s, const char *device)
{
    for (int i = 0; s && i < s->n; i++)
        for (int j = 0; j < s->c[i].nnames; j++)
            if (strcmp(s->c[i].names[j], device) == 0) return &s->c[i];
    return NULL;
}

void gemm_curves_list(const gemm_curves *s, char *buf, size_t n)
{
    if (n == 0) return;
    buf[0] = '\0';
    for (int i = 0; s && i < s->n; i++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? ", " : "", s->c[i].device);
}

void gemm_grid_range(const matmul_curve *g, double *lo, double *hi)
{
    *lo = INFINITY, *hi = -INFINITY;
    for (int i = 0; i < g->nk; i++)
        for (int j = 0; j < g->nn; j++) *lo = fmin(*lo, g->e[i][j]), *hi = fmax(*hi, g->e[i][j]);
}

int gemm_curves_from_flags(gemm_curves *s, const char *matmul_csv, const char *gemm, int calibrated, int *cpu_csv)
{
    memset(s, 0, sizeof *s);
    *cpu_csv = 0;
    int cited = gemm && strcmp(gemm, "cited") == 0;
    if (gemm && !cited && strcmp(gemm, "measured") != 0)
        return err_usage("flag '--gemm': expected measured or cited, got '%s'", gemm);
    int gpu = matmul_csv ? gemm_csv_is_device(matmul_csv) : 0;
    if (gpu < 0) return CB_EUSAGE;
    *cpu_csv = matmul_csv && !gpu;
    if (*cpu_csv && !calibrated)
        return err_usage("flag '--matmul-csv' needs '--calibrate' for a CPU matmul CSV (it carries a calibration; a "
                         "GPU one, with a 'device' column, is that device's curve and needs none)");
    if (gpu && cited)
        return err_usage("flag '--gemm': 'cited' leaves out the measured curve '--matmul-csv' gives: give one of them");
    if (cited) return 0;
    dev_table dt = {0};
    if (devices_load(&dt, NULL) != 0) return CB_EFAIL;
    int rc = gemm_curves_load(s, &dt, gpu ? matmul_csv : NULL);
    devices_free(&dt);
    return rc;
}
