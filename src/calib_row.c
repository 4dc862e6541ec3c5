/* calib_row.c: `--calibrate FILE[:LINE]` of costbench scale and costbench plan: one measured or
 * imported throughput row, the scale model of its own configuration with the compute time fitted
 * to its point, its compute MFU and matmul efficiency, and the MFU it carries to another
 * configuration (report/scale.h's rule). */
#include "calib_row.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/machine.h"

/* Appends one point after checking it: its layout (when `layout_flag` is given: calibration
 * points are evaluated) and the throughput rules of common/presets.h against the data-sheet peak
 * of the nodes it ran on. src and line say where it came from (line 0: a flag). */
int calib_point_add(scale_points *pl, const scale_model *s, long nodes, double seq_per_s, const char *src, int line,
                    const char *layout_flag)
{
    if (pl->n == SCALE_MAX_POINTS) return err_usage("%s: more than %d points", src, SCALE_MAX_POINTS);
    int i = pl->n;
    pl->nodes[i] = nodes, pl->seq_per_s[i] = seq_per_s, pl->src[i] = src, pl->line[i] = line;
    char where[4200], peak_name[192];
    scale_points_where(pl, i, where, sizeof where);
    int rc = layout_flag ? scale_check(s, nodes, layout_flag) : 0;
    snprintf(peak_name, sizeof peak_name, "the data-sheet dense %s peak of %ld x %.120s", s->precision == PREC_FP32 ? "FP32" : "BF16",
             nodes, s->hw.instance);
    if (rc == 0) rc = throughput_check(&s->cfg, s->seq, seq_per_s, scale_peak_per_instance(s) * (double)nodes, peak_name, where);
    if (rc == 0) pl->n++;
    return rc;
}


/* FILE[:LINE] into the path and the line (0 when not given). */
static int calib_spec_split(const char *spec, char *path, size_t n, int *line)
{
    const char *colon = strrchr(spec, ':');
    *line = 0;
    size_t len = strlen(spec);
    if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
        long v = strtol(colon + 1, NULL, 10);
        if (v < 1 || v > 100000000) return err_usage("flag '--calibrate': line %s out of range", colon + 1);
        *line = (int)v, len = (size_t)(colon - spec);
    }
    if (len == 0 || len >= n) return err_usage("flag '--calibrate': expected FILE[:LINE], got '%s'", spec);
    memcpy(path, spec, len), path[len] = '\0';
    return 0;
}

/* "6, 7, 8" (the data rows' line numbers, as many as fit). */
static void row_lines(const tput_set *set, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < set->n && len + 16 < n; i++) len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? ", " : "", set->rows[i].line);
}

/* The row --calibrate names: LINE's, or the file's only data row. */
static int calib_row_find(calib_row *c, const char *spec)
{
    int line, rc = calib_spec_split(spec, c->path, sizeof c->path, &line);
    tput_set set = {0};
    if (rc == 0 && throughput_load(&set, c->path) != 0) rc = CB_EFAIL;
    int found = -1;
    for (int i = 0; i < set.n && rc == 0; i++)
        if (line ? set.rows[i].line == line : set.n == 1) found = i;
    char lines[512];
    row_lines(&set, lines, sizeof lines);
    if (rc == 0 && found < 0 && line)
        rc = err_usage("flag '--calibrate': %s:%d is not a data row (data rows: lines %s)", c->path, line, lines);
    else if (rc == 0 && found < 0)
        rc = err_usage("flag '--calibrate': %s has %d data rows (lines %s); name one as %s:LINE", c->path, set.n, lines[0] ? lines : "none",
                       c->path);
    if (rc == 0) c->row = set.rows[found];
    throughput_free(&set);
    return rc;
}

/* The preset the row names (a file:line error when unknown, with the command that lists them). */
static int calib_preset(const tput_row *row, const char *where, model_config *cfg)
{
    char path[4200];
    model_config *all;
    int n, found = 0;
    if (machine_data_file(path, sizeof path, "models.csv") != 0) return CB_EUSAGE;
    if (model_presets_load(path, &all, &n) != 0) return CB_EFAIL;
    for (int i = 0; i < n && !found; i++)
        if (strcmp(all[i].name, row->model) == 0) *cfg = all[i], found = 1;
    free(all);
    if (found) return 0;
    err_msg("%s: column 'model': unknown model preset '%s' (not in %s)", where, row->model, path);
    err_hint("`costbench models` lists the presets");
    return CB_EFAIL;
}

/* The row's precision as the model's (the target's when the row does not say). */
static int calib_precision(const tput_row *row, const char *where, scale_precision *p)
{
    for (int k = 0; k < 3; k++)
        if (*row->precision && scale_precision_matches((scale_precision)k, row->precision)) *p = (scale_precision)k;
    if (*row->precision && !scale_precision_matches(*p, row->precision))
        return err_msg("%s: column 'precision': '%s' is none of fp32, mixed or bf16 that the model knows", where, row->precision);
    return 0;
}

/* The scale model of the calibration row's own configuration (compute time still unknown); the
 * flags that do not describe a configuration (ZeRO, buckets, network efficiency) as given. */
static int calib_model_build(calib_row *cr, const hw_table *ht, const scale_model *defaults, double latency_us, const char *where)
{
    const tput_row *row = &cr->row;
    scale_model *c = &cr->cal;
    *c = *defaults;
    int rc = calib_preset(row, where, &c->cfg);
    if (rc != 0) return rc;
    const hw_row *hw = hardware_find(ht, row->instance);
    if (!hw) return err_msg("%s: column 'instance_type': unknown instance type '%s' (not in %s)", where, row->instance, ht->path);
    if (!(row->seq_per_s > 0)) return err_msg("%s: column 'seq_per_s': expected a positive number, got %g", where, row->seq_per_s);
    c->hw = *hw;
    c->tp = row->tp, c->pp = row->pp, c->interleave = 1, c->recompute = 0;
    c->seq = row->seq_len, c->micro_batch = row->micro_batch > 0 ? row->micro_batch : 1;
    c->global_batch = row->global_batch, c->batch_per_replica = 0;
    c->latency_s = latency_us >= 0 ? latency_us * 1e-6 : isfinite(hw->net_latency_us) ? hw->net_latency_us * 1e-6 : 0;
    if ((rc = calib_precision(row, where, &c->precision)) != 0) return rc;
    if (c->cfg.NH % c->tp != 0 || c->pp > c->cfg.L)
        return err_msg("%s: tp %d x pp %d does not split %s (%d heads, %d layers)", where, c->tp, c->pp, c->cfg.name, c->cfg.NH, c->cfg.L);
    return calib_point_add(&cr->meas, c, row->instances * row->ranks, row->seq_per_s, cr->path, row->line, where);
}


int calib_row_load(calib_row *c, const char *spec, const hw_table *ht, const scale_model *defaults, double latency_us,
                   const scale_eff_curve *eff, double tol_pct)
{
    memset(c, 0, sizeof *c);
    int rc = calib_row_find(c, spec);
    if (rc != 0) return rc;
    char where[4200];
    snprintf(where, sizeof where, "%.4000s:%d", c->path, c->row.line);
    if ((rc = calib_model_build(c, ht, defaults, latency_us, where)) != 0) return rc;
    const int want[SP_COUNT] = {[SP_COMPUTE] = 1};
    rc = scale_fit_points(&c->cal, want, &c->meas, &c->fit);
    if (rc == 0) rc = scale_fit_verify(&c->cal, &c->fit, &c->meas, tol_pct);
    if (rc != 0) return rc;
    int clamped = 0;
    c->mfu_cal = scale_compute_mfu(&c->cal);
    c->e_cal = scale_eff(eff, scale_eff_k(&c->cal), scale_eff_n(&c->cal), &clamped);
    return 0;
}

double calib_row_carry(const calib_row *c, const scale_model *target, const scale_eff_curve *eff, int *clamped, double *e_target)
{
    double e = scale_eff(eff, scale_eff_k(target), scale_eff_n(target), clamped);
    if (e_target) *e_target = e;
    return c->mfu_cal * e / c->e_cal;
}
