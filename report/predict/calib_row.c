/* calib_row.c: `--calibrate FILE[:LINE]` and `--calibrate FILE:ID` of costbench scale and costbench
 * plan: one measured or imported throughput row, or one row of a published-runs file, the scale
 * model of its own configuration with the compute time fitted to its point (report/predict/calibration.h),
 * its compute efficiency and matmul efficiency, and the efficiency it carries to another
 * configuration (report/predict/scale.h's rule). */
#include "calib_row.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "../../common/err.h"
#include "../../common/files.h"
#include "../../common/machine.h"
#include "../../common/schema.h"
#include "../formats/published.h"
#include "measrun.h"
#include "pubmodel.h"
#include "stepmodel.h"

/* Appends one point after checking it: its layout (when `layout_flag` is given: calibration
 * points are evaluated) and the throughput rules of common/presets.h against the data-sheet peak
 * of the nodes it ran on. src and line say where it came from (line 0: a flag). */
int calib_point_plausible(const scale_model *s, long nodes, double seq_per_s, char *why, size_t n)
{
    char peak_name[192];
    snprintf(peak_name, sizeof peak_name, "the %s dense %s peak of %ld x %.120s",
             machine_is_this_machine(s->hw.instance) ? "measured" : "data-sheet",
             precision_info_of(s->precision)->peak_name, nodes, s->hw.instance);
    return throughput_why(&s->cfg, s->seq, seq_per_s, scale_peak_per_instance(s) * (double)nodes, peak_name, why, n);
}

int calib_point_add(scale_points *pl, const scale_model *s, long nodes, double seq_per_s, const char *src, int line,
                    const char *layout_flag)
{
    if (pl->n == SCALE_MAX_POINTS) return err_usage("%s: more than %d points", src, SCALE_MAX_POINTS);
    int i = pl->n;
    pl->nodes[i] = nodes, pl->seq_per_s[i] = seq_per_s, pl->src[i] = src, pl->line[i] = line;
    char where[CB_WHERE_MAX], why[512];
    scale_points_where(pl, i, where, sizeof where);
    int rc = layout_flag ? scale_check(s, nodes, layout_flag) : 0;
    if (rc == 0 && calib_point_plausible(s, nodes, seq_per_s, why, sizeof why) != 0)
        rc = err_usage("%s: %s", where, why);
    if (rc == 0) pl->n++;
    return rc;
}

/* FILE, FILE:LINE or FILE:ID into the path and the line (0 when not given) or the id ("" when not
 * given). A spec that names an existing file is that file, colons and all. */
static int calib_spec_split(const char *spec, char *path, size_t n, int *line, char *id, size_t idn)
{
    const char *colon = strrchr(spec, ':');
    *line = 0, id[0] = '\0';
    size_t len = strlen(spec);
    if (colon && colon[1] && access(spec, F_OK) != 0) {
        if (strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
            long v = strtol(colon + 1, NULL, 10);
            if (v < 1 || v > 100000000) return err_usage("flag '--calibrate': line %s out of range", colon + 1);
            *line = (int)v;
        } else if (strlen(colon + 1) < idn) {
            snprintf(id, idn, "%s", colon + 1);
        } else {
            return err_usage("flag '--calibrate': id '%s' is longer than any id can be", colon + 1);
        }
        len = (size_t)(colon - spec);
    }
    if (len == 0 || len >= n) return err_usage("flag '--calibrate': expected FILE[:LINE] or FILE:ID, got '%s'", spec);
    memcpy(path, spec, len), path[len] = '\0';
    return 0;
}

/* "6, 7, 8" (the data rows' line numbers, as many as fit). */
static void row_lines(const tput_set *set, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < set->n && len + 16 < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? ", " : "", set->rows[i].line);
}

/* The throughput row LINE names, or the file's only data row. A file that does not load is bad
 * input given by the flag (CB_EUSAGE, the loader's file:line message). */
static int calib_tput_find(calib_row *c, int line, const char *id)
{
    if (*id)
        return err_usage("flag '--calibrate': %s is a throughput file, its rows are named by LINE, not by id ('%s')",
                         c->path, id);
    tput_set set = {0};
    int rc = throughput_load(&set, c->path) != 0 ? CB_EUSAGE : 0, found = -1;
    for (int i = 0; i < set.n && rc == 0; i++)
        if (line ? set.rows[i].line == line : set.n == 1) found = i;
    char lines[512];
    row_lines(&set, lines, sizeof lines);
    if (rc == 0 && found < 0 && line)
        rc = err_usage("%s:%d: not a data row (data rows: lines %s)", c->path, line, lines[0] ? lines : "none");
    else if (rc == 0 && found < 0)
        rc = err_usage("flag '--calibrate': %s has %d data rows (lines %s); name one as %s:LINE", c->path, set.n,
                       lines[0] ? lines : "none", c->path);
    if (rc == 0) c->row = set.rows[found];
    throughput_free(&set);
    return rc;
}

/* The preset the row names (a file:line error when unknown, with the command that lists them). */
static int calib_preset(const tput_row *row, const char *where, const char *models_path, model_config *cfg)
{
    char path[CB_PATH_MAX];
    model_config *all;
    int n, found = 0;
    if (models_path ? path_fmt(path, sizeof path, "%s", models_path) != 0
                    : machine_data_file(path, sizeof path, "models.csv") != 0)
        return CB_EUSAGE;
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
static int calib_precision(const tput_row *row, const char *where, train_precision *p)
{
    if (!*row->precision || scale_precision_matches(*p, row->precision)) return 0;
    for (int k = 0; k < PRECISION_COUNT; k++)
        if (scale_precision_matches((train_precision)k, row->precision)) return *p = (train_precision)k, 0;
    return err_usage("%s: column 'precision': '%s' is none of the precisions the model knows (%s, %s)", where,
                     row->precision, precision_names_text(), PRECISION_NAME_FP16_MIXED);
}

/* The hardware of a row measured here (`costbench train --csv`: instance "this machine"): one rank
 * is one node of the model (as the profile `costbench allreduce --profile` writes), its dense
 * peak the one the row's MFU was measured against (peak_gflops, all ranks together, in the
 * row's precision). The interconnect comes from that profile in the hardware table; a run of one
 * rank needs none. */
static int calib_hardware_here(const tput_row *row, const hw_table *ht, const char *where, hw_row *hw)
{
    if (!(row->peak_gflops > 0)) {
        err_usage("%s: column 'peak_gflops': a row measured on this machine is carried from the peak its MFU was "
                  "measured against, "
                  "and this row records none",
                  where);
        err_hint(
            "rerun `costbench train --csv FILE` (it records the peak it measures, or the one --peak-gflops G gives)");
        return CB_EUSAGE;
    }
    char why[512];
    if (hw_this_machine(ht, row->instance, row->peak_gflops / (double)row->ranks / 1e3, row->ranks, hw, why,
                        sizeof why) != 0) {
        err_usage("%s: column 'ranks': %s", where, why);
        err_hint(
            "add the row `costbench allreduce --profile FILE` writes to a copy of the table and give it as --hardware");
        return CB_EUSAGE;
    }
    return 0;
}

/* The row's instance type: a row of the hardware table, or this machine. */
static int calib_hardware(const tput_row *row, const hw_table *ht, const char *where, hw_row *hw)
{
    if (machine_is_this_machine(row->instance)) return calib_hardware_here(row, ht, where, hw);
    const hw_row *h = hardware_find(ht, row->instance);
    if (!h)
        return err_usage("%s: column 'instance_type': unknown instance type '%s' (not in %s)", where, row->instance,
                         ht->path);
    *hw = *h;
    return 0;
}

/* The configuration columns a throughput row states, by the rules a published row's follow
 * (report/predict/measrun.h: meas_run_sharding, meas_run_recompute); those it does not state: no
 * recomputation (as a published row's empty column), plain 1F1B, `defaults`' ZeRO stage, attention
 * and sequence parallelism. The attention column alone sets the kernel. */
static void calib_config_tput(const tput_row *row, meas_run *run)
{
    static const pub_sharding shard_of[TPUT_NSHARDINGS] = {
        [TPUT_SHARD_NONE] = SHARD_NONE,   [TPUT_SHARD_ZERO1] = SHARD_ZERO1,  [TPUT_SHARD_ZERO2] = SHARD_ZERO2,
        [TPUT_SHARD_ZERO3] = SHARD_ZERO3, [TPUT_SHARD_HYBRID] = SHARD_HYBRID};
    static const pub_recompute recompute_of[TPUT_NRECOMPUTES] = {[TPUT_RECOMPUTE_NONE] = RECOMPUTE_NONE,
                                                                 [TPUT_RECOMPUTE_SELECTIVE] = RECOMPUTE_SELECTIVE,
                                                                 [TPUT_RECOMPUTE_FULL] = RECOMPUTE_FULL};
    if (row->recompute != TPUT_NOT_STATED) meas_run_recompute(run, recompute_of[row->recompute]);
    else meas_run_recompute(run, RECOMPUTE_NONE);
    if (row->sequence_parallel != TPUT_NOT_STATED) run->sp = row->sequence_parallel == 1 && row->tp > 1;
    if (row->attention == TPUT_ATTN_FLASH) run->attn_flash = 1;
    else if (row->attention == TPUT_ATTN_FULL) run->attn_flash = 0;
    if (row->sharding != TPUT_NOT_STATED) meas_run_sharding(run, shard_of[row->sharding]);
    run->tp = row->tp, run->pp = row->pp, run->vp = row->vp;
    run->seq = row->seq_len, run->micro_batch = row->micro_batch, run->global_batch = row->global_batch;
}

/* A throughput row that names its device runs at that device's dense peaks (data/devices.csv):
 * fp16-mixed against its FP16 peak, the other 16-bit precisions its BF16, fp32 its FP32. */
static int calib_device_peaks(const tput_row *row, const char *where, hw_row *hw)
{
    dev_table dt = {0};
    if (devices_load(&dt, NULL) != 0) return CB_EFAIL;
    const dev_row *d = devices_find(&dt, row->device);
    int rc = 0;
    if (!d) {
        char known[1024];
        devices_list(&dt, known, sizeof known);
        rc = err_usage("%s: column 'device': unknown device '%s' (known: %s)", where, row->device, known);
    } else {
        hw->bf16_tflops = d->bf16_tflops, hw->fp16_tflops = d->fp16_tflops, hw->fp32_tflops = d->fp32_tflops;
        scale_hw_for_precision(hw, row->precision);
    }
    devices_free(&dt);
    return rc;
}

/* The run a throughput row states (report/predict/measrun.h): its model preset, its instance
 * (peaks in its precision, of its device when it names one), its layout and batch; the settings
 * it does not describe (precision, ZeRO, attention, overlaps) as `defaults` gives them; the
 * flags' link overrides applied to its hardware. */
static int calib_run_tput(const calib_row *cr, const calib_env *env, const scale_model *defaults, meas_run *run)
{
    const tput_row *row = &cr->row;
    meas_run_init(run, defaults);
    run->cfg = defaults->cfg;
    int rc = calib_preset(row, cr->where, env->models_path, &run->cfg);
    if (rc == 0) rc = calib_hardware(row, env->ht, cr->where, &run->hw);
    if (rc == 0) rc = calib_precision(row, cr->where, &run->precision);
    if (rc == 0) scale_hw_for_precision(&run->hw, row->precision);
    if (rc == 0 && row->device[0]) rc = calib_device_peaks(row, cr->where, &run->hw);
    if (rc != 0) return rc;
    if (env->ov) hw_apply_overrides(&run->hw, env->ov);
    calib_config_tput(row, run);
    run->nodes = row->instances * row->ranks, run->seq_per_s = row->seq_per_s;
    return 0;
}

/* The scale model of a throughput row's own configuration (compute time still unknown) and its
 * point, checked as a published row's is (measrun.h's meas_run_check: its layout, and a dense peak
 * to measure its MFU against), in the throughput schema's column names. */
static int calib_model_tput(calib_row *cr, const calib_env *env, const scale_model *defaults)
{
    meas_run run;
    int rc = calib_run_tput(cr, env, defaults, &run);
    if (rc != 0) return rc;
    meas_run_point(&run, defaults, env->latency_us, &cr->fc);
    const meas_run_columns cols = {.tp = "tensor_parallel", .pp = "pipeline_parallel", .micro_batch = "micro_batch",
                                   .global_batch = "global_batch", .ranks = "tensor_parallel", .nodes = "instances",
                                   .peak = cr->row.device[0] ? "device" : "instance_type"};
    char why[1024];
    if (meas_run_check(&run, &cr->fc.cal, &cols, cr->row.precision, why, sizeof why) != 0)
        return err_usage("%s: %s", cr->where, why);
    return 0;
}

/* The published row LINE or ID names, or the file's only row. */
static const pub_row *calib_pub_pick(const pub_table *t, int line, const char *id)
{
    for (int i = 0; i < t->n; i++)
        if (line ? t->rows[i].line == line : *id ? strcmp(t->rows[i].id, id) == 0 : t->n == 1) return &t->rows[i];
    return NULL;
}

/* "a, b, c" of the file's ids (as many as fit). */
static void pub_ids(const pub_table *t, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->n && len + 80 < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", t->rows[i].id);
    if (t->n > 0 && len + 80 >= n) snprintf(buf + len, n - len, ", ...");
}

/* The throughput-row summary of a published run (what scale and plan print about a calibration). */
static void pub_summary(const pub_row *p, const scale_model *s, long nodes, const char *path, tput_row *row)
{
    memset(row, 0, sizeof *row);
    snprintf(row->model, sizeof row->model, "%.47s", p->model);
    snprintf(row->instance, sizeof row->instance, "%s", s->hw.instance);
    snprintf(row->precision, sizeof row->precision, "%s", p->precision);
    snprintf(row->file, sizeof row->file, "%s", path);
    snprintf(row->source, sizeof row->source, "%.255s", p->source);
    row->tp = p->tp, row->pp = p->pp, row->instances = nodes, row->ranks = 1;
    row->seq_len = p->seq_len, row->global_batch = p->global_batch, row->micro_batch = p->micro_batch;
    row->seq_per_s = p->seq_per_s, row->line = p->line, row->kind = SRC_IMPORTED;
    row->seq_per_s_min = row->seq_per_s_max = row->usd_per_hour = row->tokens_per_usd = row->mfu = row->peak_gflops =
        NAN;
}

/* A row of a published-runs file (report/formats/published.h): found by LINE or ID, its configuration by
 * the mapping of report/predict/pubmodel.h. */
static int calib_model_published(calib_row *cr, int line, const char *id, const calib_env *env,
                                 const scale_model *defaults)
{
    dev_table dt = {0};
    pub_table t = {0};
    int rc = devices_load(&dt, NULL) != 0 ? CB_EFAIL : published_load(&t, cr->path, &dt) != 0 ? CB_EUSAGE : 0;
    const pub_row *p = rc == 0 ? calib_pub_pick(&t, line, id) : NULL;
    char ids[512], why[1024];
    if (rc == 0 && !p) {
        pub_ids(&t, ids, sizeof ids);
        if (line) rc = err_usage("%s:%d: not a data row (ids: %s)", cr->path, line, ids);
        else if (*id) rc = err_usage("flag '--calibrate': %s has no row '%s' (ids: %s)", cr->path, id, ids);
        else
            rc = err_usage("flag '--calibrate': %s has %d rows; name one as %s:ID (ids: %s)", cr->path, t.n, cr->path,
                           ids);
    }
    if (rc == 0) {
        snprintf(cr->where, sizeof cr->where, "%.4000s:%d", cr->path, p->line);
        const pub_model_env pe = {env->ht, &dt, env->ov, env->latency_us};
        if (pub_scale_model(p, cr->path, &pe, defaults, &cr->fc.cal, &cr->fc.nodes, why, sizeof why) != 0)
            rc = err_usage("%s: row '%s': %s", cr->where, p->id, why);
        else if (why[0]) /* the row maps; its framework note (pubmodel.h) */
            fprintf(stderr, "note: %s: row '%s': %s\n", cr->where, p->id, why);
    }
    if (rc == 0) {
        cr->fc.seq_per_s = p->seq_per_s;
        pub_summary(p, &cr->fc.cal, cr->fc.nodes, cr->path, &cr->row);
    }
    published_free(&t);
    devices_free(&dt);
    return rc;
}

/* The row the spec names and the scale model of its configuration, by the file's format. */
static int calib_model_build(calib_row *c, const char *spec, const calib_env *env, const scale_model *defaults)
{
    int line;
    char id[64];
    int rc = calib_spec_split(spec, c->path, sizeof c->path, &line, id, sizeof id);
    int schema = rc == 0 ? published_is_schema(c->path) : 0;
    if (rc != 0 || schema < 0) return CB_EUSAGE;
    if (schema) return calib_model_published(c, line, id, env, defaults);
    if ((rc = calib_tput_find(c, line, id)) != 0) return rc;
    snprintf(c->where, sizeof c->where, "%.4000s:%d", c->path, c->row.line);
    return calib_model_tput(c, env, defaults);
}

int calib_row_hardware(const char *spec, const calib_env *env, const scale_model *defaults, hw_row *hw)
{
    calib_row *c = calloc(1, sizeof *c);
    if (!c) return err_msg("out of memory");
    int rc = calib_model_build(c, spec, env, defaults);
    if (rc == 0) *hw = c->fc.cal.hw;
    free(c);
    return rc;
}

int calib_row_load(calib_row *c, const char *spec, const calib_env *env, const scale_model *defaults,
                   const scale_eff_curve *eff, double tol_pct)
{
    memset(c, 0, sizeof *c);
    int rc = calib_model_build(c, spec, env, defaults);
    if (rc == 0) step_profile_fill(&c->fc.cal); /* the row's step, once: the fit evaluates it many times */
    scale_points pl = {.n = 0};
    if (rc == 0)
        rc = calib_point_add(&pl, &c->fc.cal, c->fc.nodes, c->fc.seq_per_s, c->path, c->row.line, NULL) == 0
                 ? 0
                 : CB_EUSAGE;
    char why[1024];
    if (rc == 0 && calib_fit_point(&c->fc, c->path, c->row.line, eff, tol_pct, why, sizeof why) != 0)
        rc = err_usage("%s: %s", c->where, why);
    if (rc != 0) return rc;
    c->cal = c->fc.cal, c->meas = c->fc.meas, c->fit = c->fc.fit;
    c->mfu_cal = c->fc.mfu_cal, c->eff_cal = c->fc.eff_cal, c->e_cal = c->fc.e_cal, c->clamped = c->fc.clamped;
    return 0;
}

int calib_row_carry(const calib_row *c, const scale_model *target, double *eff_t, int *clamped, double *e_target)
{
    char why[1024];
    double e;
    if (calib_fit_carry(&c->fc, target, eff_t, clamped, &e, why, sizeof why) != 0)
        return err_usage("%s: %s; calibrate on a row nearer the target", c->where, why);
    if (e_target) *e_target = e;
    return 0;
}
