#include "devices.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/machine.h"
#include "../../common/schema.h"
#include "attncurves.h"

/* A required string cell into a fixed buffer. */
static int dev_str(const table *t, int row, int col, char *dst, size_t n)
{
    const char *s;
    if (table_get_str(t, row, col, &s) != 0) return CB_EFAIL;
    if (strlen(s) >= n)
        return err_msg("%s:%d: column '%s': longer than %zu characters", t->path, t->lines[row], t->header[col], n - 1);
    snprintf(dst, n, "%s", s);
    return 0;
}

/* Column i of dev_schema as a number: NaN for an empty cell when `optional`, else in range. */
static int dev_num(const table *t, int row, const int *col, int i, int optional, double *out)
{
    *out = NAN;
    if (optional && *table_cell(t, row, col[i]) == '\0') return 0;
    return table_get_double(t, row, col[i], dev_schema[i].lo, dev_schema[i].hi, out);
}

/* An integer column; `dflt` for an empty cell when `optional`. */
static int dev_int(const table *t, int row, const int *col, int i, int optional, int dflt, int *out)
{
    long v;
    *out = dflt;
    if (optional && *table_cell(t, row, col[i]) == '\0') return 0;
    if (table_get_long(t, row, col[i], (long)dev_schema[i].lo, (long)dev_schema[i].hi, &v) != 0) return CB_EFAIL;
    *out = (int)v;
    return 0;
}

/* A key as the published-runs files spell it: lowercase letters, digits and '-'. */
static int dev_key_check(const table *t, int row, int col, const char *key)
{
    for (const char *p = key; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-'))
            return err_msg("%s:%d: column '%s': expected a lowercase key (a-z, 0-9, '-'), got '%s'", t->path,
                           t->lines[row], t->header[col], key);
    return 0;
}

/* The columns a file may leave out: the step model's (its kernel figures too), and family. */
static int dev_col_optional(int i)
{
    return (i >= DV_FIRST_OPTIONAL && i <= DV_LAST_OPTIONAL) || i == DV_FAMILY || i >= DV_FIRST_FIGURE;
}

/* Where each number column of dev_schema lands in a dev_row (0: not a double; the ints apart). */
static const size_t dev_num_off[DV_NCOLS] = {
    [DV_FP32_TFLOPS] = offsetof(dev_row, fp32_tflops), [DV_TF32_TFLOPS] = offsetof(dev_row, tf32_tflops),
    [DV_BF16_TFLOPS] = offsetof(dev_row, bf16_tflops), [DV_FP16_TFLOPS] = offsetof(dev_row, fp16_tflops),
    [DV_FP8_TFLOPS] = offsetof(dev_row, fp8_tflops),   [DV_HBM_GIB] = offsetof(dev_row, hbm_gib),
    [DV_HBM_GB_PER_S] = offsetof(dev_row, hbm_gb_per_s), [DV_LINK_GB_PER_S] = offsetof(dev_row, link_gb_per_s),
    [DV_GEMM_EFF] = offsetof(dev_row, gemm_eff),       [DV_ATTN_EFF] = offsetof(dev_row, attn_eff),
    [DV_MEM_EFF] = offsetof(dev_row, mem_eff),         [DV_LAUNCH_US] = offsetof(dev_row, launch_us),
    [DV_NODE_NET_GBPS] = offsetof(dev_row, node_net_gbps), [DV_FP8_GEMM_EFF] = offsetof(dev_row, fp8_gemm_eff),
    [DV_ATTN_EFF_MAX] = offsetof(dev_row, attn_eff_max), [DV_ATTN_S_HALF] = offsetof(dev_row, attn_s_half),
    [DV_LINK_EFF] = offsetof(dev_row, link_eff),       [DV_LINK_LATENCY_US] = offsetof(dev_row, link_latency_us),
    [DV_GEMM_HALF_DIM] = offsetof(dev_row, gemm_half_dim)};

/* The number cells of row i into d: a variant row (fam) takes the family's figure for every empty
 * cell and lists the columns it states in d->own; a device row needs its required cells. */
static int dev_nums_read(const table *t, int i, const int *col, const dev_row *fam, dev_row *d)
{
    int rc = 0;
    size_t used = 0;
    for (int c = 0; c < DV_NCOLS && rc == 0; c++) {
        if (!dev_num_off[c]) continue;
        double *x = (double *)((char *)d + dev_num_off[c]);
        *x = NAN;
        if (col[c] < 0) continue; /* an optional column the file leaves out: the model's default */
        rc = dev_num(t, i, col, c, fam || c != DV_HBM_GIB, x); /* a device's memory is the one required figure */
        if (rc == 0 && fam && isnan(*x)) *x = *(const double *)((const char *)fam + dev_num_off[c]);
        else if (rc == 0 && fam && used + 1 < sizeof d->own)
            used += (size_t)snprintf(d->own + used, sizeof d->own - used, "%s%s %g", used ? ", " : "",
                                     dev_schema[c].col.name, *x);
    }
    int *ints[2] = {&d->workers, &d->scaleup_domain};
    const int ic[2] = {DV_WORKERS, DV_SCALEUP_DOMAIN};
    const int inherit[2] = {fam ? fam->workers : 0, fam ? fam->scaleup_domain : 0};
    for (int k = 0; k < 2 && rc == 0; k++) {
        rc = dev_int(t, i, col, ic[k], fam != NULL, inherit[k], ints[k]);
        if (rc == 0 && fam && *table_cell(t, i, col[ic[k]]) && used + 1 < sizeof d->own)
            used += (size_t)snprintf(d->own + used, sizeof d->own - used, "%s%s %d", used ? ", " : "",
                                     dev_schema[ic[k]].col.name, *ints[k]);
    }
    return rc;
}

/* The optional column `stochastic_rounding` of row i (column sr_col, < 0: absent): true, false, or
 * empty (-1: not known). */
static int dev_sr_read(const table *t, int i, int sr_col, int *out)
{
    *out = -1;
    const char *s = sr_col >= 0 ? table_cell(t, i, sr_col) : "";
    if (!*s) return 0;
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0) return *out = s[0] == 't', 0;
    return err_msg("%s:%d: column 'stochastic_rounding': expected true, false or empty, got '%.40s'", t->path,
                   t->lines[i], s);
}

/* Row i into d, every cell checked; fam: the device it is a variant of (NULL: none). */
static int dev_row_read(const table *t, int i, const int *col, const dev_row *fam, dev_row *d)
{
    int rc = 0;
    d->line = t->lines[i];
    if (rc == 0) rc = dev_str(t, i, col[DV_DEVICE], d->device, sizeof d->device);
    if (rc == 0) rc = dev_key_check(t, i, col[DV_DEVICE], d->device);
    if (rc == 0 && fam && *table_cell(t, i, col[DV_VENDOR]) == '\0')
        snprintf(d->vendor, sizeof d->vendor, "%s", fam->vendor);
    else if (rc == 0)
        rc = dev_str(t, i, col[DV_VENDOR], d->vendor, sizeof d->vendor);
    if (rc == 0) rc = dev_nums_read(t, i, col, fam, d);
    snprintf(d->model_source, sizeof d->model_source, "%s", fam ? fam->model_source : "");
    if (rc == 0 && col[DV_MODEL_SOURCE] >= 0 && *table_cell(t, i, col[DV_MODEL_SOURCE]))
        rc = dev_str(t, i, col[DV_MODEL_SOURCE], d->model_source, sizeof d->model_source);
    if (rc == 0) rc = dev_str(t, i, col[DV_SOURCE], d->source, sizeof d->source);
    if (rc == 0 && isnan(d->attn_eff_max) != isnan(d->attn_s_half))
        rc = err_msg("%s:%d: columns 'attn_eff_max' and 'attn_s_half': a curve needs both (or neither)", t->path,
                     d->line);
    snprintf(d->eff_source, sizeof d->eff_source, "%s", fam ? fam->eff_source : "");
    if (rc == 0 && col[DV_EFF_SOURCE] >= 0 && *table_cell(t, i, col[DV_EFF_SOURCE]))
        rc = dev_str(t, i, col[DV_EFF_SOURCE], d->eff_source, sizeof d->eff_source);
    if (rc == 0 && fam) snprintf(d->family, sizeof d->family, "%s", fam->device);
    return rc;
}

/* The family row i names (its `family` cell): a device listed above it with no family of its own;
 * *fam NULL when the cell is empty or the column absent. */
static int dev_family(const table *t, int i, const int *col, const dev_table *dt, const dev_row **fam)
{
    *fam = NULL;
    if (col[DV_FAMILY] < 0) return 0;
    const char *name = table_cell(t, i, col[DV_FAMILY]);
    if (!*name) return 0;
    *fam = devices_find(dt, name);
    if (!*fam || (*fam)->family[0])
        return err_msg("%s:%d: column 'family': expected a device listed above that is not itself a variant, got '%s'",
                       t->path, t->lines[i], name);
    return 0;
}

/* The kernel curves beside dt's file (see devices.h): data/attention.csv for the default table,
 * required; attention.csv in the directory of another, when there is one. */
static int devices_kernels_load(dev_table *dt, int is_default)
{
    char path[sizeof dt->path];
    if (is_default) {
        if (machine_data_file(path, sizeof path, "attention.csv") != 0) return CB_EFAIL;
    } else {
        const char *slash = strrchr(dt->path, '/');
        int dir = slash ? (int)(slash - dt->path) + 1 : 0;
        if (snprintf(path, sizeof path, "%.*sattention.csv", dir, dt->path) >= (int)sizeof path) return 0;
        FILE *f = fopen(path, "r");
        if (!f) return 0; /* a table of its own without kernel curves: each device its own curve */
        fclose(f);
    }
    if (!(dt->kernels = calloc(1, sizeof *dt->kernels))) return err_msg("out of memory");
    return attn_table_load(dt->kernels, path, dt);
}

int devices_load(dev_table *dt, const char *path)
{
    char dflt[sizeof dt->path];
    memset(dt, 0, sizeof *dt);
    if (!path) {
        if (machine_data_file(dflt, sizeof dflt, "devices.csv") != 0) return CB_EFAIL;
        path = dflt;
    }
    snprintf(dt->path, sizeof dt->path, "%s", path);
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int col[DV_NCOLS], rc = 0;
    for (int i = 0; i < DV_NCOLS && rc == 0; i++)
        if ((col[i] = table_col(&t, dev_schema[i].col.name, !dev_col_optional(i))) < 0 && !dev_col_optional(i))
            rc = CB_EFAIL;
    int sr_col = rc == 0 ? table_col(&t, "stochastic_rounding", 0) : -1; /* optional: read by name */
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no devices", path);
    if (rc == 0 && !(dt->rows = calloc((size_t)t.nrows, sizeof *dt->rows))) rc = err_msg("out of memory");
    for (int i = 0; rc == 0 && i < t.nrows; i++) {
        dev_row *d = &dt->rows[i];
        const dev_row *fam;
        if ((rc = dev_family(&t, i, col, dt, &fam)) != 0 || (rc = dev_row_read(&t, i, col, fam, d)) != 0 ||
            (rc = dev_sr_read(&t, i, sr_col, &d->stochastic_rounding)) != 0)
            break;
        if (fam && d->stochastic_rounding < 0) d->stochastic_rounding = fam->stochastic_rounding; /* the family's */
        for (int j = 0; j < i && rc == 0; j++)
            if (strcmp(dt->rows[j].device, d->device) == 0)
                rc = err_msg("%s:%d: column 'device': '%s' appears twice (first at line %d)", path, d->line, d->device,
                             dt->rows[j].line);
        dt->n = i + 1;
    }
    table_free(&t);
    if (rc == 0) rc = devices_kernels_load(dt, path == dflt);
    if (rc) devices_free(dt);
    return rc ? CB_EFAIL : 0;
}

void devices_free(dev_table *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
    attn_table_free(t->kernels);
    free(t->kernels);
    t->kernels = NULL;
}

const dev_row *devices_find(const dev_table *t, const char *device)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].device, device) == 0) return &t->rows[i];
    return NULL;
}

void devices_list(const dev_table *t, char *buf, size_t n)
{
    if (n == 0) return;
    buf[0] = '\0';
    for (int i = 0; i < t->n; i++) {
        size_t l = strlen(buf);
        if (l + 1 >= n) break;
        snprintf(buf + l, n - l, "%s%s", i ? ", " : "", t->rows[i].device);
    }
}

void hw_from_device(const dev_row *d, int per_node, double net_gbit_per_s, double net_latency_us, hw_row *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->instance, sizeof out->instance, "%d x %s", per_node, d->device);
    snprintf(out->accelerator, sizeof out->accelerator, "%s", d->device);
    out->accelerators = per_node;
    out->workers = d->workers;
    out->bf16_tflops = d->bf16_tflops, out->fp32_tflops = d->fp32_tflops;
    out->fp16_tflops = d->fp16_tflops, out->fp8_tflops = d->fp8_tflops, out->tf32_tflops = d->tf32_tflops;
    out->mem_gib = d->hbm_gib, out->mem_gb_per_s = d->hbm_gb_per_s;
    out->intra_gb_per_s = d->link_gb_per_s;
    out->scaleup_domain = d->scaleup_domain;
    out->gemm_eff = d->gemm_eff, out->attn_eff = d->attn_eff, out->mem_eff = d->mem_eff, out->launch_us = d->launch_us;
    out->fp8_gemm_eff = d->fp8_gemm_eff, out->attn_eff_max = d->attn_eff_max, out->attn_s_half = d->attn_s_half;
    out->link_eff = d->link_eff, out->link_latency_us = d->link_latency_us, out->gemm_half_dim = d->gemm_half_dim;
    out->net_gbit_per_s = out->net_line_gbit_per_s = net_gbit_per_s, out->net_latency_us = net_latency_us;
    snprintf(out->source, sizeof out->source, "%s", d->source);
}

void hw_apply_overrides(hw_row *hw, const hw_overrides *o)
{
    if (!o) return;
    if (!isnan(o->net_gbit_per_s)) /* the user's network, in place of the table's (and its measurement) */
        hw->net_gbit_per_s = hw->net_line_gbit_per_s = o->net_gbit_per_s, hw->net_source[0] = '\0';
    if (!isnan(o->intra_gb_per_s)) hw->intra_gb_per_s = o->intra_gb_per_s;
    if (!isnan(o->net_latency_us)) hw->net_latency_us = o->net_latency_us;
}

void devices_family_note(const dev_row *d, char *buf, size_t n)
{
    if (n == 0) return;
    buf[0] = '\0';
    if (!d->family[0]) return;
    snprintf(buf, n, "device '%s' resolved through family %s (%s%s)", d->device, d->family,
             d->own[0] ? "its own: " : "every figure the family's", d->own);
}
