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
    snprintf(peak_name, sizeof peak_name, "the %s dense %s peak of %ld x %.120s", machine_is_this_machine(s->hw.instance) ? "measured" : "data-sheet",
             s->precision == PREC_FP32 ? "FP32" : "BF16", nodes, s->hw.instance);
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

/* The row --calibrate names: LINE's, or the file's only data row. A file that does not load is
 * bad input given by the flag (CB_EUSAGE, the loader's file:line message). */
static int calib_row_find(calib_row *c, const char *spec)
{
    int line, rc = calib_spec_split(spec, c->path, sizeof c->path, &line);
    tput_set set = {0};
    if (rc == 0 && throughput_load(&set, c->path) != 0) rc = CB_EUSAGE;
    int found = -1;
    for (int i = 0; i < set.n && rc == 0; i++)
        if (line ? set.rows[i].line == line : set.n == 1) found = i;
    char lines[512];
    row_lines(&set, lines, sizeof lines);
    if (rc == 0 && found < 0 && line)
        rc = err_usage("%s:%d: not a data row (data rows: lines %s)", c->path, line, lines[0] ? lines : "none");
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
    err_usage("%s: column 'model': unknown model preset '%s' (not in %s)", where, row->model, path);
    err_hint("`costbench models` lists the presets");
    return CB_EUSAGE;
}

/* The row's precision as the model's (the target's when the row does not say). */
static int calib_precision(const tput_row *row, const char *where, scale_precision *p)
{
    for (int k = 0; k < 3; k++)
        if (*row->precision && scale_precision_matches((scale_precision)k, row->precision)) *p = (scale_precision)k;
    if (*row->precision && !scale_precision_matches(*p, row->precision))
        return err_usage("%s: column 'precision': '%s' is none of fp32, mixed or bf16 that the model knows", where, row->precision);
    return 0;
}

/* The hardware of a row measured here (`costbench train --csv`: instance "this machine"): one rank
 * is one node of the model (as the profile `costbench allreduce --profile` writes), its dense
 * peak the one the row's MFU was measured against (peak_gflops, all ranks together, in the
 * row's precision). The interconnect comes from that profile in the hardware table; a run of one
 * rank needs none. */
static int calib_hardware_here(const tput_row *row, const hw_table *ht, const char *where, hw_row *hw)
{
    if (!(row->peak_gflops > 0)) {
        err_usage("%s: column 'peak_gflops': a row measured on this machine is carried from the peak its MFU was measured against, "
                  "and this row records none",
                  where);
        err_hint("rerun `costbench train --csv FILE` (it records the peak it measures, or the one --peak-gflops G gives)");
        return CB_EUSAGE;
    }
    const hw_row *profile = NULL;
    for (int i = 0; i < ht->n && !profile; i++)
        if (machine_is_this_machine(ht->rows[i].instance)) profile = &ht->rows[i];
    if (!profile && row->ranks > 1) {
        err_usage("%s: column 'ranks': a row measured here on %ld ranks needs this machine's interconnect, and %s has no '%s' row",
                  where, row->ranks, ht->path, CB_THIS_MACHINE " (per rank)");
        err_hint("add the row `costbench allreduce --profile FILE` writes to a copy of the table and give it as --hardware");
        return CB_EUSAGE;
    }
    *hw = profile ? *profile
                  : (hw_row){.accelerator = "CPU cores of one rank", .mem_gib = NAN, .mem_gb_per_s = NAN, .intra_gb_per_s = NAN,
                             .net_gbit_per_s = NAN, .net_latency_us = NAN, .source = "the row's own peak_gflops"};
    snprintf(hw->instance, sizeof hw->instance, "%s", row->instance);
    hw->accelerators = hw->workers = 1;
    hw->bf16_tflops = hw->fp32_tflops = row->peak_gflops / (double)row->ranks / 1e3;
    return 0;
}

/* The row's instance type: a row of the hardware table, or this machine. */
static int calib_hardware(const tput_row *row, const hw_table *ht, const char *where, hw_row *hw)
{
    if (machine_is_this_machine(row->instance)) return calib_hardware_here(row, ht, where, hw);
    const hw_row *h = hardware_find(ht, row->instance);
    if (!h) return err_usage("%s: column 'instance_type': unknown instance type '%s' (not in %s)", where, row->instance, ht->path);
    *hw = *h;
    return 0;
}

/* The row's parallelism and batch against its model and instance: TP inside one instance and
 * dividing the heads, PP at most the layers, the ranks and the batch splitting (scale_layout). */
static int calib_layout_check(const scale_model *c, long nodes, const char *where)
{
    long D = (long)c->hw.accelerators * c->hw.workers;
    if (c->cfg.NH % c->tp != 0)
        return err_usage("%s: column 'tensor_parallel': tp %d does not divide %s's %d heads", where, c->tp, c->cfg.name, c->cfg.NH);
    if (c->tp > D)
        return err_usage("%s: column 'tensor_parallel': tp %d exceeds the %ld ranks of one %s (tensor parallelism stays inside an instance)",
                         where, c->tp, D, c->hw.instance);
    if (c->pp > c->cfg.L)
        return err_usage("%s: column 'pipeline_parallel': pp %d exceeds %s's %d layers", where, c->pp, c->cfg.name, c->cfg.L);
    char why[512];
    scale_layout_issue li = scale_layout_describe(c, nodes, why, sizeof why);
    if (li == SCALE_LAYOUT_OK) return 0;
    return err_usage("%s: column '%s': %s", where, li == SCALE_LAYOUT_BATCH ? "global_batch" : li == SCALE_LAYOUT_RANKS ? "tensor_parallel" : "instances",
                     why);
}

/* The scale model of the calibration row's own configuration (compute time still unknown); the
 * flags that do not describe a configuration (ZeRO, buckets, network efficiency) as given. */
static int calib_model_build(calib_row *cr, const hw_table *ht, const scale_model *defaults, double latency_us, const char *where)
{
    const tput_row *row = &cr->row;
    scale_model *c = &cr->cal;
    *c = *defaults;
    int rc = calib_preset(row, where, &c->cfg);
    if (rc == 0) rc = calib_hardware(row, ht, where, &c->hw);
    if (rc == 0) rc = calib_precision(row, where, &c->precision);
    if (rc != 0) return rc;
    const hw_row *hw = &c->hw;
    c->tp = row->tp, c->pp = row->pp, c->interleave = 1, c->recompute = 0;
    c->seq = row->seq_len, c->micro_batch = row->micro_batch > 0 ? row->micro_batch : 1;
    c->global_batch = row->global_batch, c->batch_per_replica = 0;
    c->latency_s = latency_us >= 0 ? latency_us * 1e-6 : isfinite(hw->net_latency_us) ? hw->net_latency_us * 1e-6 : 0;
    long nodes = row->instances * row->ranks;
    if ((rc = calib_layout_check(c, nodes, where)) != 0) return rc;
    if (!isfinite(scale_stage_peak(c)))
        return err_usage("%s: column 'instance_type': %s has no dense %s peak in %s to measure the row's MFU against", where, hw->instance,
                         c->precision == PREC_FP32 ? "FP32" : "BF16", ht->path);
    return calib_point_add(&cr->meas, c, nodes, row->seq_per_s, cr->path, row->line, NULL) == 0 ? 0 : CB_EUSAGE;
}

/* "K 2048, N 0.125 (micro-batch 1 x seq 1 / tp 8)" of a model. */
static void kn_describe(const scale_model *s, char *buf, size_t n)
{
    snprintf(buf, n, "K %g, N %g (micro-batch %ld x seq %ld / tp %d)", scale_eff_k(s), scale_eff_n(s), s->micro_batch, s->seq, s->tp);
}

int calib_row_load(calib_row *c, const char *spec, const hw_table *ht, const scale_model *defaults, double latency_us,
                   const scale_eff_curve *eff, double tol_pct)
{
    memset(c, 0, sizeof *c);
    int rc = calib_row_find(c, spec);
    if (rc != 0) return rc;
    snprintf(c->where, sizeof c->where, "%.4000s:%d", c->path, c->row.line);
    if ((rc = calib_model_build(c, ht, defaults, latency_us, c->where)) != 0) return rc;
    const int want[SP_COUNT] = {[SP_COMPUTE] = 1};
    rc = scale_fit_points(&c->cal, want, &c->meas, &c->fit);
    if (rc == 0) rc = scale_fit_verify(&c->cal, &c->fit, &c->meas, tol_pct);
    if (rc != 0) return CB_EUSAGE; /* the row, not the run: its file:line leads the message */
    c->mfu_cal = scale_compute_mfu(&c->cal);
    if (!(c->mfu_cal > 0 && c->mfu_cal <= 1))
        return err_usage("%s: column 'seq_per_s': the row's compute MFU comes out %.4g%%, outside (0, 100%%]", c->where, 100 * c->mfu_cal);
    c->e_cal = scale_eff(eff, scale_eff_k(&c->cal), scale_eff_n(&c->cal), &c->clamped);
    if (c->clamped) {
        char kn[256], range[160];
        kn_describe(&c->cal, kn, sizeof kn);
        scale_eff_range(eff, range, sizeof range);
        err_warn("%s: the row's %s lies outside %s: its e(K, N) is taken at the nearest edge, %.4g, not extrapolated", c->where, kn, range,
                 c->e_cal);
    }
    return 0;
}

int calib_row_carry(const calib_row *c, const scale_model *target, const scale_eff_curve *eff, double *mfu, int *clamped, double *e_target)
{
    double e = scale_eff(eff, scale_eff_k(target), scale_eff_n(target), clamped);
    if (e_target) *e_target = e;
    *mfu = c->mfu_cal * e / c->e_cal;
    char kn[256], range[160];
    kn_describe(target, kn, sizeof kn);
    if (*mfu > 1)
        return err_usage("%s: the efficiency rule carries the row's compute MFU of %.4g%% to %.4g%% at the target's %s (e %.4g against the "
                         "row's %.4g), above 100%% of the peak: the rule misses a term between the two shapes; calibrate on a row "
                         "nearer the target",
                         c->where, 100 * c->mfu_cal, 100 * *mfu, kn, e, c->e_cal);
    scale_eff_range(eff, range, sizeof range);
    if (*clamped) err_warn("the target's %s lies outside %s: its e(K, N) is taken at the nearest edge, %.4g, not extrapolated", kn, range, e);
    return 0;
}
