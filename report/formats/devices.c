#include "devices.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/machine.h"
#include "../../common/schema.h"

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

static int dev_int(const table *t, int row, const int *col, int i, int *out)
{
    long v;
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

/* Row i into d, every cell checked. */
static int dev_row_read(const table *t, int i, const int *col, dev_row *d)
{
    int rc = 0;
    d->line = t->lines[i];
    if (rc == 0) rc = dev_str(t, i, col[DV_DEVICE], d->device, sizeof d->device);
    if (rc == 0) rc = dev_key_check(t, i, col[DV_DEVICE], d->device);
    if (rc == 0) rc = dev_str(t, i, col[DV_VENDOR], d->vendor, sizeof d->vendor);
    if (rc == 0) rc = dev_int(t, i, col, DV_WORKERS, &d->workers);
    if (rc == 0) rc = dev_num(t, i, col, DV_FP32_TFLOPS, 1, &d->fp32_tflops);
    if (rc == 0) rc = dev_num(t, i, col, DV_TF32_TFLOPS, 1, &d->tf32_tflops);
    if (rc == 0) rc = dev_num(t, i, col, DV_BF16_TFLOPS, 1, &d->bf16_tflops);
    if (rc == 0) rc = dev_num(t, i, col, DV_FP16_TFLOPS, 1, &d->fp16_tflops);
    if (rc == 0) rc = dev_num(t, i, col, DV_FP8_TFLOPS, 1, &d->fp8_tflops);
    if (rc == 0) rc = dev_num(t, i, col, DV_HBM_GIB, 0, &d->hbm_gib);
    if (rc == 0) rc = dev_num(t, i, col, DV_HBM_GB_PER_S, 1, &d->hbm_gb_per_s);
    if (rc == 0) rc = dev_num(t, i, col, DV_LINK_GB_PER_S, 1, &d->link_gb_per_s);
    if (rc == 0) rc = dev_int(t, i, col, DV_SCALEUP_DOMAIN, &d->scaleup_domain);
    double *model[] = {&d->gemm_eff, &d->attn_eff, &d->mem_eff, &d->launch_us, &d->node_net_gbps};
    for (int k = 0; k < 5; k++) {
        *model[k] = NAN;
        if (rc == 0 && col[DV_GEMM_EFF + k] >= 0) rc = dev_num(t, i, col, DV_GEMM_EFF + k, 1, model[k]);
    }
    d->model_source[0] = '\0';
    if (rc == 0 && col[DV_MODEL_SOURCE] >= 0 && *table_cell(t, i, col[DV_MODEL_SOURCE]))
        rc = dev_str(t, i, col[DV_MODEL_SOURCE], d->model_source, sizeof d->model_source);
    if (rc == 0) rc = dev_str(t, i, col[DV_SOURCE], d->source, sizeof d->source);
    double *fig[] = {&d->fp8_gemm_eff, &d->attn_eff_max, &d->attn_s_half, &d->link_eff, &d->link_latency_us};
    for (int k = 0; k < 5; k++) {
        *fig[k] = NAN;
        if (rc == 0 && col[DV_FP8_GEMM_EFF + k] >= 0) rc = dev_num(t, i, col, DV_FP8_GEMM_EFF + k, 1, fig[k]);
    }
    if (rc == 0 && isnan(d->attn_eff_max) != isnan(d->attn_s_half))
        rc = err_msg("%s:%d: columns 'attn_eff_max' and 'attn_s_half': a curve needs both (or neither)", t->path,
                     d->line);
    d->eff_source[0] = '\0';
    if (rc == 0 && col[DV_EFF_SOURCE] >= 0 && *table_cell(t, i, col[DV_EFF_SOURCE]))
        rc = dev_str(t, i, col[DV_EFF_SOURCE], d->eff_source, sizeof d->eff_source);
    return rc;
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
        if ((col[i] = table_col(&t, dev_schema[i].col.name, !DV_COL_OPTIONAL(i))) < 0 && !DV_COL_OPTIONAL(i))
            rc = CB_EFAIL;
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no devices", path);
    if (rc == 0 && !(dt->rows = calloc((size_t)t.nrows, sizeof *dt->rows))) rc = err_msg("out of memory");
    for (int i = 0; rc == 0 && i < t.nrows; i++) {
        dev_row *d = &dt->rows[i];
        if ((rc = dev_row_read(&t, i, col, d)) != 0) break;
        for (int j = 0; j < i && rc == 0; j++)
            if (strcmp(dt->rows[j].device, d->device) == 0)
                rc = err_msg("%s:%d: column 'device': '%s' appears twice (first at line %d)", path, d->line, d->device,
                             dt->rows[j].line);
        dt->n = i + 1;
    }
    table_free(&t);
    if (rc) devices_free(dt);
    return rc ? CB_EFAIL : 0;
}

void devices_free(dev_table *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
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
    out->link_eff = d->link_eff, out->link_latency_us = d->link_latency_us;
    out->net_gbit_per_s = net_gbit_per_s, out->net_latency_us = net_latency_us;
    snprintf(out->source, sizeof out->source, "%s", d->source);
}

void hw_apply_overrides(hw_row *hw, const hw_overrides *o)
{
    if (!o) return;
    if (!isnan(o->net_gbit_per_s)) hw->net_gbit_per_s = o->net_gbit_per_s;
    if (!isnan(o->intra_gb_per_s)) hw->intra_gb_per_s = o->intra_gb_per_s;
    if (!isnan(o->net_latency_us)) hw->net_latency_us = o->net_latency_us;
}
