/* costbench devices: the device table (data/devices.csv), one row per accelerator. */
#include <stdio.h>
#include <string.h>

#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/opts.h"
#include "../common/record.h"
#include "../common/schema.h"
#include "../report/formats/attncurves.h"
#include "../report/formats/devices.h"
#include "../report/formats/gemmcurve.h"
#include "commands.h"

/* The attention kernels' curves of device d (data/attention.csv) as one note line, none when it has none. */
static void devices_kernels_note(record *rec, const dev_table *dt, const dev_row *d)
{
    char line[512];
    size_t used = 0;
    for (int i = 0; dt->kernels && i < dt->kernels->n && used + 1 < sizeof line; i++) {
        const attn_curve *c = &dt->kernels->rows[i];
        if (strcmp(c->device, d->device) != 0) continue;
        used += (size_t)snprintf(line + used, sizeof line - used, "%s%s %.3g s / (s + %g) (%s)", used ? ", " : "",
                                 c->kernel, c->e_max, c->s_half, c->basis);
    }
    if (used) record_note(rec, "%s: attention kernels (%s): %s", d->device, dt->kernels->path, line);
}

/* The devices with a measured GEMM curve (data/gemm/DEVICE.csv, report/formats/gemmcurve.h), one
 * note each; nothing when none ships. Returns 0 or CB_EFAIL (a bad curve file). */
static int devices_gemm_notes(record *rec, const dev_table *dt)
{
    gemm_curves s;
    if (gemm_curves_load(&s, dt, NULL) != 0) return CB_EFAIL;
    for (int i = 0; i < s.n; i++) {
        const gemm_dev_curve *c = &s.c[i];
        char grids[128] = "";
        for (int d = 0; d < GEMM_NDTYPES; d++)
            if (c->grid[d].nk > 0)
                snprintf(grids + strlen(grids), sizeof grids - strlen(grids), "%s%s", grids[0] ? ", " : "",
                         gemm_dtype_names[d]);
        record_note(rec, "%s: measured GEMM curve %s (%s, %s): scale, plan and validate time its GEMMs on it "
                         "(--gemm cited: its gemm_eff)",
                    c->device, c->path, c->gpu_name[0] ? c->gpu_name : "GPU not named", grids);
    }
    gemm_curves_free(&s);
    return 0;
}

/* One row of the listing: the columns of data/devices.csv, as common/schema.h defines them. */
static void devices_row(record *rec, int row, const dev_row *d)
{
    const double num[DV_NCOLS] = {[DV_WORKERS] = d->workers,           [DV_FP32_TFLOPS] = d->fp32_tflops,
                                  [DV_TF32_TFLOPS] = d->tf32_tflops,   [DV_BF16_TFLOPS] = d->bf16_tflops,
                                  [DV_FP16_TFLOPS] = d->fp16_tflops,   [DV_FP8_TFLOPS] = d->fp8_tflops,
                                  [DV_HBM_GIB] = d->hbm_gib,           [DV_HBM_GB_PER_S] = d->hbm_gb_per_s,
                                  [DV_LINK_GB_PER_S] = d->link_gb_per_s, [DV_SCALEUP_DOMAIN] = d->scaleup_domain,
                                  [DV_GEMM_EFF] = d->gemm_eff,         [DV_ATTN_EFF] = d->attn_eff,
                                  [DV_MEM_EFF] = d->mem_eff,           [DV_LAUNCH_US] = d->launch_us,
                                  [DV_NODE_NET_GBPS] = d->node_net_gbps, [DV_FP8_GEMM_EFF] = d->fp8_gemm_eff,
                                  [DV_ATTN_EFF_MAX] = d->attn_eff_max, [DV_ATTN_S_HALF] = d->attn_s_half,
                                  [DV_LINK_EFF] = d->link_eff,         [DV_LINK_LATENCY_US] = d->link_latency_us,
                                  [DV_GEMM_HALF_DIM] = d->gemm_half_dim};
    const char *str[DV_NCOLS] = {
        [DV_DEVICE] = d->device, [DV_VENDOR] = d->vendor, [DV_MODEL_SOURCE] = d->model_source, [DV_SOURCE] = d->source,
        [DV_EFF_SOURCE] = d->eff_source, [DV_FAMILY] = d->family};
    for (int c = 0; c < DV_NCOLS; c++) {
        if (dev_schema[c].col.kind == REC_STR) record_str(rec, row, c, str[c]);
        else record_num(rec, row, c, num[c]);
    }
}

int cmd_devices(int argc, char **argv)
{
    const char *csv = NULL, *path = NULL;
    const opt_spec specs[] = {
        {"devices", OPT_STR, &path, 0, 0, 0, 0, "FILE", "device table (default data/devices.csv)"},
        CSV_FLAG_SPEC(&csv, "also write the list as CSV (the columns of data/devices.csv)"),
        {0},
    };
    int rc = opts_parse("devices", "[options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    dev_table dt;
    if (devices_load(&dt, path) != 0) return CB_EUSAGE; /* a bad table is bad input */
    rec_col cols[DV_NCOLS];
    for (int c = 0; c < DV_NCOLS; c++) cols[c] = dev_schema[c].col;
    record rec;
    if (record_init(&rec, cols, DV_NCOLS) != 0) {
        devices_free(&dt);
        return CB_EFAIL;
    }
    record_note(&rec, "from %s: dense peaks per device (never the sparsity figures); link_gb_per_s: scale-up link, one "
                      "direction; scaleup_domain: devices sharing it; '-': none or not published", dt.path);
    rc = devices_gemm_notes(&rec, &dt);
    for (int i = 0; i < dt.n && rc == 0; i++) {
        char note[400];
        devices_family_note(&dt.rows[i], note, sizeof note);
        if (note[0]) record_note(&rec, "%s", note); /* a variant: its figures, resolved through its family */
        devices_kernels_note(&rec, &dt, &dt.rows[i]);
        int row = record_add_row(&rec);
        if (row < 0) {
            rc = CB_EFAIL;
            break;
        }
        devices_row(&rec, row, &dt.rows[i]);
    }
    if (rc == 0) record_print(&rec, stdout);
    if (rc == 0 && csv) {
        machine_info m;
        machine_probe(&m);
        rc = record_write_csv(&rec, csv, &m);
    }
    record_free(&rec);
    devices_free(&dt);
    return rc;
}
