/* scalerun.c: one `costbench scale` run (see scalerun.h). */
#include "scalerun.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/schema.h"
#include "formats/devices.h"
#include "formats/netfit.h"
#include "predict/attnpick.h"
#include "predict/fweff.h"
#include "predict/netapply.h"
#include "plot.h"
#include "predict/stepmodel.h"
#include "../common/files.h"

/* The rows are throughput rows (common/schema.h), so that report and scale --measured read them,
 * with the model's terms beside them. */
const rec_col scale_cols[SC_NCOLS] = {{"nodes", "", REC_NUM, 0}, TPUT_SEQ_PER_S, TPUT_TOKENS_PER_S, TPUT_TOKENS_PER_USD,
                                      {"efficiency", "", REC_NUM, 3}, {"measured_seq_per_s", "seq/s", REC_NUM, 2},
                                      {"error_pct", "%", REC_NUM, 1}, {"step_s", "s", REC_NUM, 3},
                                      {"compute_s", "s", REC_NUM, 3}, {"bubble_s", "s", REC_NUM, 3},
                                      {"tp_comm_s", "s", REC_NUM, 3}, {"dp_comm_s", "s", REC_NUM, 3},
                                      {"exposed_comm_s", "s", REC_NUM, 3}, {"optimizer_s", "s", REC_NUM, 3}, TPUT_MFU,
                                      {"mem_per_rank_gib", "GiB", REC_NUM, 1}, TPUT_USD_PER_HOUR, TPUT_MODEL, TPUT_TP,
                                      TPUT_PP, TPUT_INSTANCES, TPUT_INSTANCE_TYPE, TPUT_SEQ_LEN, TPUT_GLOBAL_BATCH,
                                      TPUT_MICRO_BATCH, TPUT_SOURCE, TPUT_RECOMPUTE, TPUT_SHARDING, TPUT_VP,
                                      TPUT_SEQUENCE_PARALLEL, TPUT_ATTENTION};

/* The global batch at `nodes` nodes: the --global-batch entry of that node count when a list was
 * given (-1 when the node count is not listed), else the one value (0 for weak scaling). */
static long batch_at(const scale_opts *o, long nodes)
{
    if (o->gbs.n <= 1) return o->global_batch;
    for (int i = 0; i < o->nodes.n; i++)
        if (o->nodes.v[i] == nodes) return o->gbs.v[i];
    return -1;
}

/* The target model at `nodes` nodes (its global batch for that node count; o NULL: s as it is). */
static scale_model model_at(const scale_model *s, const scale_opts *o, long nodes)
{
    scale_model m = *s;
    if (o && o->gbs.n > 1 && batch_at(o, nodes) > 0) m.global_batch = batch_at(o, nodes);
    return m;
}

/* --net-from: the network file's all_reduce rows set the network of the instance's row, and of
 * every other row of the hardware table it measured (a calibration row of such an instance reads
 * the same network as the target). */
static int net_from_apply(scale_run *r, hw_row *hw)
{
    const scale_opts *o = &r->o;
    if (net_from_flag_check(o->net_from, o->net_gbps, o->intra_gbps, o->latency_us, o->net_eff) != 0)
        return CB_EUSAGE;
    if (!o->net_from) {
        if (hw->net_source[0] && !(o->net_gbps > 0)) /* the hardware table's measured network (data/hardware.csv) */
            snprintf(r->net_note, sizeof r->net_note,
                     "network: %s's measured %.4g Gbit/s (all-reduce busbw x 8) in place of its %.4g Gbit/s line rate, "
                     "%.4g us a hop (%.1000s: network_source)",
                     hw->instance, hw->net_gbit_per_s, hw->net_line_gbit_per_s, hw->net_latency_us, r->ht.path);
        return 0;
    }
    net_table nt;
    if (net_table_load(&nt, o->net_from) != 0) return CB_EUSAGE;
    net_applied a;
    int rc = netfit_apply(&nt, hw, &a) ? 0 : netfit_no_row(&nt, o->instance);
    if (rc == 0) netfit_describe(&nt, &a, r->net_note, sizeof r->net_note);
    for (int k = 0; rc == 0 && k < r->ht.n; k++) {
        net_applied other;
        if (&r->ht.rows[k] != hw) netfit_apply(&nt, &r->ht.rows[k], &other);
    }
    net_table_free(&nt);
    return rc;
}

/* --instance "this machine": the hardware of the --calibrate row measured here (costbench import
 * of a `costbench train` log, or its --summary-csv), appended to the hardware table. */
static int here_hardware(scale_run *r)
{
    const scale_opts *o = &r->o;
    if (!o->calibrate)
        return err_usage("flag '--instance': '%s' runs on the hardware of a --calibrate row measured here (costbench "
                         "import of a `costbench train` log); give one",
                         CB_THIS_MACHINE);
    const calib_env env = {&r->ht, NULL, o->latency_us, o->mf.models_path};
    hw_row hw;
    int rc = calib_row_hardware(o->calibrate, &env, &r->s, &hw);
    if (rc != 0) return rc;
    if (!machine_is_this_machine(hw.instance))
        return err_usage("flag '--instance': '%s' needs a --calibrate row measured on this machine; %s ran on '%s'",
                         CB_THIS_MACHINE, o->calibrate, hw.instance);
    hw_row *rows = realloc(r->ht.rows, (size_t)(r->ht.n + 1) * sizeof *rows);
    if (!rows) return err_msg("out of memory");
    snprintf(hw.instance, sizeof hw.instance, "%s", CB_THIS_MACHINE);
    r->ht.rows = rows, r->ht.rows[r->ht.n++] = hw;
    r->hw = &r->ht.rows[r->ht.n - 1];
    return 0;
}

/* The preset, the price and hardware tables, the instance's row and its price. */
static int run_load(scale_run *r)
{
    const scale_opts *o = &r->o;
    int rc = model_flags_config(&o->mf, o->model, &r->s.cfg);
    if (rc == 0) rc = model_flags_seq_check(&o->mf, &r->s.cfg, o->seq);
    if (rc != 0) return rc;
    if (data_tables_load(o->prices_path, o->hw_path, &r->pt, &r->ht) != 0) return CB_EFAIL;
    if (!(r->hw = hardware_find(&r->ht, o->instance)) && strcmp(o->instance, CB_THIS_MACHINE) == 0 &&
        (rc = here_hardware(r)) != 0)
        return rc;
    if (!r->hw)
        return err_usage("flag '--instance': unknown instance type '%s' (not in %s)", o->instance, r->ht.path);
    /* --net-gbps, --intra-gbps, --latency-us override the table's row (0 / -1: not given) */
    const hw_overrides ov = {o->net_gbps > 0 ? o->net_gbps : NAN, o->intra_gbps > 0 ? o->intra_gbps : NAN,
                             o->latency_us >= 0 ? o->latency_us : NAN};
    hw_apply_overrides(&r->ht.rows[r->hw - r->ht.rows], &ov);
    if ((rc = net_from_apply(r, &r->ht.rows[r->hw - r->ht.rows])) != 0) return rc;
    int cpu_csv;
    if ((rc = gemm_curves_from_flags(&r->gemm, o->matmul_csv, o->gemm, o->calibrate != NULL, &cpu_csv)) != 0) return rc;
    if (cpu_csv && matmul_curve_load(&r->eff, o->matmul_csv) != 0) return CB_EUSAGE; /* a bad file given by a flag */
    r->usd_per_hour = o->usd_per_hour;
    if (r->usd_per_hour <= 0 && strcmp(o->instance, CB_THIS_MACHINE) == 0) r->usd_per_hour = NAN; /* no price */
    else if (r->usd_per_hour <= 0) {
        if (!(r->pr = prices_find(&r->pt, o->instance, o->pricing, o->region))) return CB_EUSAGE;
        r->usd_per_hour = r->pr->usd_per_hour;
    }
    return 0;
}

static void run_free(scale_run *r)
{
    prices_free(&r->pt);
    hardware_free(&r->ht);
    gemm_curves_free(&r->gemm);
}

/* The step model of the flags on the instance's hardware (compute time still unknown); every
 * --nodes layout checked. */
static int model_build(scale_run *r)
{
    const scale_opts *o = &r->o;
    scale_model *s = &r->s;
    s->hw = *r->hw;
    s->gemm_curve = &r->eff; /* the step on the device's measured curve, when --matmul-csv gives one */
    s->gemm_measured = &r->gemm; /* a GPU's measured curve (data/gemm/, a GPU --matmul-csv) */
    s->tp = (int)o->tp, s->pp = (int)o->pp, s->interleave = (int)o->interleave;
    s->seq = o->seq, s->micro_batch = o->micro_batch, s->global_batch = o->global_batch,
    s->batch_per_replica = o->batch_per_device;
    s->zero = (int)o->zero, s->precision = o->prec, s->recompute = o->recompute;
    const step_framework *fw = step_framework_find(o->framework);
    if (attention_flag_parse(o->attention, fw->tiled_attention, &s->attn_flash) != 0) return CB_EUSAGE;
    dev_table dt; /* the kernel's measured curve on the device (report/predict/attnpick.h) */
    if (devices_load(&dt, NULL) != 0) return CB_EFAIL;
    char note[512];
    step_attn_apply(&dt, fw, step_attn_stated(o->attention, s->attn_flash), &s->hw, note, sizeof note);
    step_attn_describe(&s->hw, note, r->attn_note, sizeof r->attn_note);
    devices_free(&dt);
    s->selective = o->selective;
    s->grad_overlap = fw->grad_overlap, s->gather_prefetch = fw->gather_prefetch, s->tp_overlap = fw->tp_overlap;
    s->tp_bwd_overlap = fw->tp_bwd_overlap;
    s->bucket_bytes = o->bucket_mib * 1048576.0;
    s->net_eff = o->net_eff;
    s->latency_s = o->latency_us >= 0                ? o->latency_us * 1e-6
                   : isfinite(r->hw->net_latency_us) ? r->hw->net_latency_us * 1e-6
                                                     : STEP_NET_LATENCY_US * 1e-6;
    s->overlap = o->overlap;
    if (o->pp > s->cfg.L) return err_usage("flag '--pp': %ld stages for %d layers", o->pp, s->cfg.L);
    if (s->cfg.NH % o->tp != 0)
        return err_usage("flag '--tp': %s has %d heads, not a multiple of %ld", o->model, s->cfg.NH, o->tp);
    if (!op_tp_splits(&s->cfg, (int)o->tp))
        return err_usage("flag '--tp': %ld does not split %s's %d key/value heads or its MLP width %d", o->tp, o->model,
                         model_kv_heads(&s->cfg), model_ffn(&s->cfg));
    for (int i = 0; i < o->nodes.n; i++) {
        scale_model at = model_at(s, o, o->nodes.v[i]);
        int rc = scale_check(&at, o->nodes.v[i], "--nodes");
        if (rc != 0) return rc;
    }
    step_profile_fill(s); /* the target's step, once: every node count and the fit read it */
    return 0;
}

/* ------------------------------------------------------------------ calibration points */

/* calib_point_add at the model of `nodes` nodes (its --global-batch entry). */
static int point_add(scale_points *pl, const scale_model *s0, const scale_opts *o, long nodes, double seq_per_s,
                     const char *src, int line, const char *layout_flag)
{
    const scale_model at = model_at(s0, o, nodes);
    return calib_point_add(pl, &at, nodes, seq_per_s, src, line, layout_flag);
}

/* The recomputation the flags ask for, as the throughput format spells it. */
static tput_recompute recompute_of(const scale_opts *o)
{
    return o->recompute ? TPUT_RECOMPUTE_FULL : o->selective ? TPUT_RECOMPUTE_SELECTIVE : TPUT_RECOMPUTE_NONE;
}

/* Whether a throughput row describes the modelled configuration (its precision too: --precision). */
static int row_matches(const tput_row *r, const scale_model *s, const scale_opts *o)
{
    /* rows measured on this machine match its profile ("this machine (per rank)", from
     * costbench allreduce --profile): one rank is one node of the model */
    int here = machine_is_this_machine(s->hw.instance) && machine_is_this_machine(r->instance);
    if (strcmp(r->model, s->cfg.name) != 0 || r->tp != s->tp || r->pp != s->pp || r->seq_len != s->seq ||
        (strcmp(r->instance, s->hw.instance) != 0 && !here) || !scale_precision_matches(s->precision, r->precision))
        return 0;
    /* a configuration the row states (recomputation, sharding, interleaving) must be the flags' */
    if ((r->recompute != TPUT_NOT_STATED && r->recompute != (int)recompute_of(o)) ||
        (r->sharding != TPUT_NOT_STATED && r->sharding != (int)o->zero) || r->vp != s->interleave)
        return 0;
    long gb = batch_at(o, r->instances * r->ranks);
    if (o->gbs.n > 1) return gb > 0 && r->global_batch == gb;
    return !(s->global_batch > 0 && r->global_batch != s->global_batch);
}

/* The matching rows of a throughput file, appended to pl (`calibration`: their layouts are
 * checked too). At least one must match. */
static int points_from_file(const char *path, const scale_model *s, const scale_opts *o, scale_points *pl,
                            int calibration)
{
    tput_set set = {0};
    if (throughput_load(&set, path) != 0) return CB_EFAIL;
    char where[CB_WHERE_MAX];
    int rc = 0, found = 0;
    for (int i = 0; i < set.n && rc == 0; i++) {
        const tput_row *r = &set.rows[i];
        if (!row_matches(r, s, o)) continue;
        snprintf(where, sizeof where, "%s:%d", path, r->line);
        rc = point_add(pl, s, o, r->instances * r->ranks, r->seq_per_s, path, r->line, calibration ? where : NULL);
        found++;
    }
    throughput_free(&set);
    if (rc == 0 && found == 0)
        rc = err_usage(
            "%s: no row matches %s, tp %d, pp %d, seq_len %ld, %s%s in %s precision, recompute %s, ZeRO %ld, vp %d",
            path, s->cfg.name, s->tp, s->pp, s->seq, s->hw.instance, s->global_batch > 0 ? " and the global batch" : "",
            precision_name(s->precision), tput_recomputes[recompute_of(o)], o->zero, s->interleave);
    return rc;
}

/* ------------------------------------------------------------------ --calibrate FILE[:LINE] */

/* Carries the calibration's framework efficiency to the target (report/predict/calibration.h): its compute
 * time is the step model's device time of the target over phi. */
static int calib_carry(scale_run *r)
{
    scale_model *s = &r->s;
    r->mfu_cal = r->cr.mfu_cal, r->e_cal = r->cr.e_cal;
    if (!isfinite(scale_stage_peak(s)))
        return err_usage("flag '--instance': %s has no %s peak in %s to carry an MFU to", r->o.instance,
                         precision_info_of(r->o.prec)->peak_name, r->ht.path);
    int rc = calib_row_carry(&r->cr, s, &r->hfu_tgt, &r->eff_clamped, &r->e_tgt);
    if (rc != 0) return rc;
    s->t_mb_s = scale_t_mb_from_peak(s, r->hfu_tgt);
    r->mfu_tgt = r->hfu_tgt * scale_stage_flops(s, 0) / scale_stage_flops(s, 1);
    snprintf(r->calib, sizeof r->calib,
             "carried from %.200s:%d (%s, tp %d, pp %d, %ld x %s, %.4g seq/s) by the step model's framework efficiency",
             r->cr.path, r->cr.row.line, r->cr.row.model, r->cr.row.tp, r->cr.row.pp, r->cr.row.instances,
             r->cr.row.instance, r->cr.row.seq_per_s);
    return 0;
}

/* --base-nodes/--base-seq-per-s and --measured (fitted), --compare (shown). */
static int points_gather(scale_run *r)
{
    const scale_opts *o = &r->o;
    int rc = 0;
    if (o->base_nodes > 0)
        rc = point_add(&r->meas, &r->s, o, o->base_nodes, o->base_seq_per_s, "--base-seq-per-s", 0, "--base-nodes");
    if (rc == 0 && o->calibrate) {
        const hw_overrides ov = {o->net_gbps > 0 ? o->net_gbps : NAN, o->intra_gbps > 0 ? o->intra_gbps : NAN, NAN};
        const calib_env env = {&r->ht, &ov, o->latency_us, o->mf.models_path};
        rc = calib_row_load(&r->cr, o->calibrate, &env, &r->s, &r->eff, o->fit_tol_pct);
        if (rc == 0) r->meas = r->cr.meas, r->fit = r->cr.fit;
    }
    if (rc == 0 && o->measured) rc = points_from_file(o->measured, &r->s, o, &r->meas, 1);
    if (rc == 0 && o->compare) rc = points_from_file(o->compare, &r->s, o, &r->cmp, 0);
    return rc;
}

/* Uncalibrated, no --mfu: t_mb = t_device / phi, phi the framework's default efficiency
 * (report/predict/fweff.h: --framework's, else every framework's), its spread the band. Returns 0,
 * 1 when the device model has no time for the run (the assumed MFU then), or CB_EUSAGE when the
 * table does not load. */
static int framework_default(scale_run *r)
{
    scale_model *s = &r->s;
    fweff_table ft;
    if (fweff_load(&ft, NULL) != 0) return CB_EUSAGE;
    const step_framework *fw = step_framework_find(r->o.framework);
    const fweff_entry *e = fweff_find(&ft, fw->name);
    step_profile_fill(s);
    double t_dev = step_t_mb_device(s, NULL);
    int rc = e && isfinite(t_dev) ? 0 : 1;
    if (rc == 0) {
        s->t_mb_s = t_dev / e->phi, r->band_pct = e->spread_pct;
        snprintf(r->calib, sizeof r->calib,
                 "from the device model x %s%s default efficiency phi %.3g (data/framework_eff.csv: %d published "
                 "rows of %d files%s), band +-%.3g%% (its out-of-sample spread); --mfu overrides",
                 strcmp(e->framework, FWEFF_ANY) == 0 ? "every framework" : e->framework,
                 "'s", e->phi, e->rows, e->files,
                 strcmp(e->framework, fw->name) != 0 ? ", every framework: the shipped files lack this one" : "",
                 e->spread_pct);
    }
    fweff_free(&ft);
    return rc;
}

/* The compute time: fitted to the calibration points and verified against every one of them
 * (--fit-tolerance), or without points the data-sheet peak at the assumed --mfu. */
static int calibrate(scale_run *r)
{
    const scale_opts *o = &r->o;
    scale_model *s = &r->s;
    if (o->calibrate) return calib_carry(r);
    if (r->meas.n == 0 && o->mfu_assumed) {
        int rc = framework_default(r);
        if (rc <= 0) return rc;
    }
    s->t_mb_s = scale_t_mb_from_peak(s, o->mfu_pct / 100.0);
    if (r->meas.n == 0) {
        if (!isfinite(s->t_mb_s))
            return err_usage(
                "%s: %s has no %s peak; give a measured point (--base-nodes/--base-seq-per-s or --measured)",
                r->ht.path, o->instance, precision_info_of(o->prec)->peak_name);
        snprintf(r->calib, sizeof r->calib, "from the data-sheet peak at an assumed MFU of %.0f%%", o->mfu_pct);
        return 0;
    }
    int rc = scale_fit_points(s, o->want, &r->meas, &r->fit);
    if (rc == 0) rc = scale_fit_verify(s, &r->fit, &r->meas, o->fit_tol_pct);
    if (rc != 0) return rc;
    if (r->meas.n == 1)
        snprintf(r->calib, sizeof r->calib, "calibrated on 1 point (%ld nodes, %.4g seq/s)", r->meas.nodes[0],
                 r->meas.seq_per_s[0]);
    else
        snprintf(r->calib, sizeof r->calib, "fitted to %d points (rms error %.1f%%)", r->meas.n, r->fit.rms_err_pct);
    return 0;
}

/* ------------------------------------------------------------------ the record */

/* The measured point at this node count (calibration, then --compare) and the model's error. */
static void row_measured(record *rec, int row, const scale_run *r, long nodes, double model_seq_per_s)
{
    const scale_points *lists[2] = {&r->meas, &r->cmp};
    for (int l = r->o.calibrate ? 1 : 0; l < 2; l++) /* a --calibrate point is another configuration */
        for (int j = 0; j < lists[l]->n; j++) {
            if (lists[l]->nodes[j] != nodes) continue;
            record_num(rec, row, SC_MEAS, lists[l]->seq_per_s[j]);
            record_num(rec, row, SC_ERR, 100.0 * (model_seq_per_s / lists[l]->seq_per_s[j] - 1.0));
        }
}

/* The row's configuration columns: the flags' recomputation, --zero (stage k is zerok),
 * --interleave, the attention kernel (--attention, else the framework's); sequence parallelism
 * false: the model keeps the 10 s b h per layer outside the TP split (report/predict/scale.c), as Megatron
 * without it does. */
static void row_config(record *rec, int row, const scale_run *r)
{
    const scale_opts *o = &r->o;
    record_str(rec, row, SC_RECOMP, tput_recomputes[recompute_of(o)]);
    record_str(rec, row, SC_SHARD, tput_shardings[TPUT_SHARD_NONE + o->zero]);
    record_num(rec, row, SC_VP, (double)o->interleave);
    record_str(rec, row, SC_SEQ_PAR, "false");
    record_str(rec, row, SC_ATTN, tput_attentions[r->s.attn_flash ? TPUT_ATTN_FLASH : TPUT_ATTN_FULL]);
}

/* One row: the model at `nodes`. eff0: seq/s per node at the first node count. Returns the row
 * or CB_EFAIL; *over_mem set when the memory estimate exceeds a rank's memory. */
static int row_add(record *rec, const scale_run *r, long nodes, double eff0, const char *source, int *over_mem)
{
    scale_point p;
    const scale_model at = model_at(&r->s, &r->o, nodes);
    scale_eval(&at, nodes, &p);
    int row = record_add_row(rec);
    if (row < 0) return CB_EFAIL;
    double usd_h = r->usd_per_hour * (double)nodes;
    record_num(rec, row, SC_NODES, (double)nodes);
    record_num(rec, row, SC_SEQS, p.seq_per_s);
    record_num(rec, row, SC_TOKS, p.tokens_per_s);
    record_num(rec, row, SC_TPU, round(p.tokens_per_s * 3600.0 / usd_h)); /* whole tokens, as Table 1 */
    record_num(rec, row, SC_EFF, p.seq_per_s / (double)nodes / eff0);
    row_measured(rec, row, r, nodes, p.seq_per_s);
    record_num(rec, row, SC_STEP, p.step_s);
    record_num(rec, row, SC_COMP, p.compute_s);
    record_num(rec, row, SC_BUBBLE, p.bubble_s);
    record_num(rec, row, SC_TPC, p.tp_s);
    record_num(rec, row, SC_DPC, p.dp_s);
    record_num(rec, row, SC_EXP, p.exposed_s);
    record_num(rec, row, SC_OPT, p.optimizer_s);
    record_num(rec, row, SC_MFU, p.mfu_pct);
    record_num(rec, row, SC_MEM, p.mem_gib);
    if (p.mem_gib > p.mem_avail_gib) *over_mem = 1;
    record_num(rec, row, SC_USD, usd_h);
    record_str(rec, row, SC_MODEL, r->s.cfg.name);
    record_num(rec, row, SC_TP, (double)r->o.tp);
    record_num(rec, row, SC_PP, (double)r->o.pp);
    record_num(rec, row, SC_INST, (double)nodes);
    record_str(rec, row, SC_ITYPE, r->o.instance);
    record_num(rec, row, SC_SEQ, (double)r->o.seq);
    record_num(rec, row, SC_GB, (double)p.global_batch);
    record_num(rec, row, SC_MB, (double)r->o.micro_batch);
    record_str(rec, row, SC_SOURCE, source);
    row_config(rec, row, r);
    return row;
}

static int rows_fill(record *rec, const scale_run *r, int *over_mem)
{
    char source[640];
    snprintf(source, sizeof source,
             "predicted: costbench scale, %s; %s %g Gbit/s x %.2f, latency %.3g us, %s precision, ZeRO %d", r->calib,
             r->o.instance, r->hw->net_gbit_per_s, r->s.net_eff, r->s.latency_s * 1e6, precision_name(r->o.prec),
             (int)r->o.zero);
    scale_point p0;
    const scale_model at0 = model_at(&r->s, &r->o, r->o.nodes.v[0]);
    scale_eval(&at0, r->o.nodes.v[0], &p0);
    double eff0 = p0.seq_per_s / (double)r->o.nodes.v[0];
    for (int i = 0; i < r->o.nodes.n; i++)
        if (row_add(rec, r, r->o.nodes.v[i], eff0, source, over_mem) < 0) return CB_EFAIL;
    return 0;
}

/* How the compute time was obtained, how well it reproduces its points, each free parameter. */
static void notes_calibration(record *rec, const scale_run *r)
{
    const scale_fit *f = &r->fit;
    record_note(rec, "prediction %s", r->calib);
    if (r->meas.n > 0) {
        char where[CB_WHERE_MAX], list[768];
        scale_points_where(&r->meas, f->worst, where, sizeof where);
        record_note(rec,
                    "the calibration reproduces its %d point%s within %g%% (--fit-tolerance): worst residual %+.1f%% "
                    "at %ld nodes (%s)",
                    r->meas.n, r->meas.n == 1 ? "" : "s", r->o.fit_tol_pct, f->resid_pct[f->worst],
                    r->meas.nodes[f->worst], where);
        scale_fit_residual_list(f, &r->meas, list, sizeof list);
        if (r->meas.n > 1) record_note(rec, "residuals (model / measured - 1): %s", list);
    }
    static const char *const units[SP_COUNT] = {"", " of the line rate", " us per hop", " of the last backward"};
    for (int k = 1; k < SP_COUNT; k++) {
        const char *name = k == SP_BANDWIDTH ? "network efficiency" : scale_param_names[k];
        double shown = k == SP_LATENCY ? f->value[k] * 1e6 : f->value[k];
        if (f->fitted[k] && !f->at_bound[k]) record_note(rec, "fitted %s: %.4g%s", name, shown, units[k]);
        else if (f->fitted[k])
            record_note(rec, "%s held at the edge of its range: %.4g%s (the points pull it beyond; not a fit)", name,
                        shown, units[k]);
        else if (f->undetermined[k])
            record_note(rec, "%s not fitted: the points cannot determine it (kept at %.4g)", scale_param_names[k],
                        k == SP_LATENCY ? r->s.latency_s * 1e6 : k == SP_BANDWIDTH ? r->s.net_eff : r->s.overlap);
    }
    record_note(rec, "compute %.4g s per micro-batch per stage (%s)", r->s.t_mb_s,
                r->o.calibrate              ? "carried from the calibration"
                : r->meas.n == 0 && r->band_pct > 0 ? "the device model's time / the framework's default phi"
                : r->meas.n == 0            ? "data-sheet peak x assumed MFU"
                : f->at_bound[SP_COMPUTE] ? "held at the data-sheet peak, the edge of its range: not a fit"
                                          : "fitted");
}

/* --calibrate: the rule, the device model, both compute MFUs at full precision, the band. */
static void notes_carry(record *rec, const scale_run *r)
{
    const scale_model *c = &r->cr.cal, *s = &r->s;
    record_note(rec, "rule: phi = t_device(calibration) / t_mb(calibration), the framework's efficiency against the "
                     "step model's device "
                     "time of the shared operation list (report/predict/stepmodel.h); t_mb(target) = t_device(target) / phi, "
                     "on the target's own "
                     "peaks, bandwidths and links");
    if (r->eff.nk > 0)
        record_note(rec, "GEMMs at %s's %s, log-linear in K and N, clamped to K %g..%g, N %g..%g", r->o.matmul_csv,
                    r->eff.column, r->eff.k[0], r->eff.k[r->eff.nk - 1], r->eff.n[0], r->eff.n[r->eff.nn - 1]);
    else
        record_note(
            rec,
            "GEMMs %sat the device's gemm_eff x f(n) f(k) f(m), f(x) = x / (x + %g); tiled attention at attn_eff, "
            "memory-bound "
            "ops at mem_eff of the bandwidth, + %g us per kernel (data/devices.csv; defaults %g, %g, %g when empty)",
            step_device_grid(s, 0, NULL) || step_device_grid(c, 0, NULL)
                ? "on the measured device curve where a 'GEMMs on' line says so, else "
                : "",
            STEP_GEMM_HALF_DIM, STEP_LAUNCH_US, STEP_GEMM_EFF, STEP_ATTN_EFF, STEP_MEM_EFF);
    double t_dc = step_t_mb_device(c, NULL), t_dt = step_t_mb_device(s, NULL);
    record_note(rec, "calibration %s: t_device %.9g s, t_mb %.9g s, phi %.17g, e %.17g, compute MFU %.17g, HFU %.17g",
                c->cfg.name, t_dc, c->t_mb_s, r->cr.fc.phi_cal, r->e_cal, r->mfu_cal, r->cr.eff_cal);
    record_note(rec, "target %s: t_device %.9g s, t_mb %.9g s, phi %.17g, e %.17g, compute MFU %.17g, HFU %.17g%s",
                s->cfg.name, t_dt, s->t_mb_s, r->cr.fc.phi_cal, r->e_tgt, r->mfu_tgt, r->hfu_tgt,
                s->recompute ? " (t_mb counts the recomputed forward)" : "");
    char why[256];
    long nodes = r->o.nodes.n > 0 ? r->o.nodes.v[0] : 1;
    calib_case k = calib_case_of(c, r->cr.fc.nodes, s, nodes, why, sizeof why);
    record_note(rec,
                "band: +-%.3g%% (the calibration's residual %.2g%% + %s's %.3g%%: the 90th percentile of |error| "
                "`costbench validate` measures out of sample on the shipped published runs in that case, "
                "data/band.csv)%s%s",
                calib_band_pct(&r->cr.fc, s, nodes), fabs(r->cr.fc.fit.resid_pct[0]),
                k == CALIB_NEAR     ? "a near target"
                : k == CALIB_LAYOUT ? "another layout"
                                    : "another device",
                k == CALIB_NEAR     ? CALIB_BAND_NEAR_PCT
                : k == CALIB_LAYOUT ? CALIB_BAND_LAYOUT_PCT
                                    : CALIB_BAND_DEVICE_PCT,
                k == CALIB_NEAR ? "" : "; extrapolated: ", why);
}

/* The framework whose features the prediction assumes, by its canonical name, when --framework
 * names one (an alias included: megatron is megatron-lm). */
static void notes_framework(record *rec, const scale_run *r)
{
    if (!r->o.framework) return;
    char vnote[512];
    const step_framework *fw = step_framework_find_spec(r->o.framework, vnote, sizeof vnote);
    if (vnote[0]) record_note(rec, "%s", vnote); /* an unknown version, named */
    record_note(rec,
                "framework features (--framework %s: %s): %s attention (%s), gradient reduction under the backward "
                "%s, ZeRO-3 gathers prefetched under compute %s, TP collectives under the GEMMs %s (backward ones "
                "under their wgrad GEMMs %s)",
                fw->name, fw->source, r->s.attn_flash ? "tiled (flash)" : "materialised (full)",
                r->o.attention ? "--attention" : "the framework's", r->s.grad_overlap ? "on" : "off",
                r->s.gather_prefetch ? "on" : "off", r->s.tp_overlap ? "on" : "off",
                r->s.tp_overlap || r->s.tp_bwd_overlap ? "on" : "off");
    if (r->attn_note[0]) record_note(rec, "%s", r->attn_note);
}

/* What the GEMMs run on, per device: the target's, and the calibration row's when on another device. */
static void notes_gemm(record *rec, const scale_run *r)
{
    char line[1024];
    step_gemm_source(&r->s, line, sizeof line);
    record_note(rec, "%s", line);
    if (step_device_grid(&r->s, 0, NULL) && r->s.prof.valid && r->s.prof.parts.gemm_clamped)
        record_note(rec, "some GEMMs' k or n lie outside the measured curve's grid: e(k, n) taken at its nearest edge "
                         "there, not extrapolated");
    if (r->o.calibrate && strcmp(r->cr.fc.cal.hw.accelerator, r->s.hw.accelerator) != 0) {
        step_gemm_source(&r->cr.fc.cal, line, sizeof line);
        record_note(rec, "%s (the calibration row's)", line);
    }
}

static void notes_write(record *rec, const scale_run *r, int over_mem)
{
    const scale_opts *o = &r->o;
    const hw_row *hw = r->hw;
    record_note(rec, "%s, %s: TP %ld x PP %ld per replica, %d ranks per instance (%d %s x %d), %s", r->s.cfg.name,
                o->instance, o->tp, o->pp, hw->accelerators * hw->workers, hw->accelerators, hw->accelerator,
                hw->workers,
                o->global_batch > 0 ? "strong scaling (fixed global batch)" : "weak scaling (fixed batch per replica)");
    notes_framework(rec, r);
    notes_gemm(rec, r);
    notes_calibration(rec, r);
    if (o->calibrate) notes_carry(rec, r);
    if (!isfinite(hw->intra_gb_per_s) && (o->tp > 1 || hw->accelerators * hw->workers > o->tp * o->pp))
        record_note(rec, "%s: device-link bandwidth unknown: TP and intra-node gradient traffic not modelled%s",
                    o->instance, r->meas.n ? " (the fitted compute time includes the TP traffic)" : "");
    if (r->net_note[0]) record_note(rec, "%s", r->net_note);
    if (r->o.latency_us < 0 && !isfinite(r->hw->net_latency_us))
        record_note(rec, "network latency: %g us a hop, assumed (the hardware states none; give --latency-us)",
                    STEP_NET_LATENCY_US);
    char stale[96];
    if (r->pr) price_stale_suffix(r->pr, stale, sizeof stale);
    if (r->pr)
        record_note(rec, "price %s %s $%.4g per instance-hour (%s, %s)%s", o->instance, o->pricing, r->usd_per_hour,
                    r->pr->as_of, r->pr->source, stale);
    else if (isnan(r->usd_per_hour))
        record_note(rec, "price: none for %s (give --usd-per-hour for tokens/$)", o->instance);
    else record_note(rec, "price $%.4g per instance-hour (--usd-per-hour)", r->usd_per_hour);
    if (strcmp(o->instance, CB_THIS_MACHINE) == 0)
        record_note(rec, "%s: the hardware of the calibration row %s (one rank a node, its measured peak %.4g TFLOP/s)",
                    o->instance, r->cr.where, hw->fp32_tflops);
    record_note(rec,
                "memory per rank: weights, gradients and AdamW state (ZeRO %ld) plus L layers of activations "
                "(Korthikanti et al. 2022)%s",
                o->zero,
                o->recompute      ? ", fully recomputed"
                : r->s.attn_flash ? (o->selective ? ", the attention scores recomputed (selective)"
                                                  : ", no s x s scores kept (tiled attention)")
                                  : ", the s x s attention scores kept (--attention flash drops them)");
    if (over_mem)
        record_note(rec,
                    "warning: the memory estimate exceeds %.1f GiB per rank at some node counts; real runs need "
                    "--recompute, --zero or more TP/PP",
                    hw->mem_gib / hw->workers);
    record_note(rec, "efficiency: seq/s per node against the first node count listed; every figure here is predicted");
}

/* ------------------------------------------------------------------ outputs */

static int scale_plot(const char *path, const scale_model *s, const record *rec, const scale_points *meas,
                      const scale_points *cmp)
{
    double xs[OPT_LIST_CAP] = {0}, ys[OPT_LIST_CAP] = {0}, ix[OPT_LIST_CAP], iy[OPT_LIST_CAP];
    double mx[SCALE_MAX_POINTS], my[SCALE_MAX_POINTS], cx[SCALE_MAX_POINTS], cy[SCALE_MAX_POINTS];
    int n = rec->nrows < OPT_LIST_CAP ? rec->nrows : OPT_LIST_CAP;
    for (int i = 0; i < n; i++) {
        xs[i] = rec->num[(size_t)i * rec->ncols + SC_NODES];
        ys[i] = rec->num[(size_t)i * rec->ncols + SC_SEQS];
        ix[i] = xs[i], iy[i] = ys[0] * xs[i] / xs[0];
    }
    for (int i = 0; i < meas->n; i++) mx[i] = (double)meas->nodes[i], my[i] = meas->seq_per_s[i];
    for (int i = 0; i < cmp->n; i++) cx[i] = (double)cmp->nodes[i], cy[i] = cmp->seq_per_s[i];
    plot_series se[4];
    int ns = 0;
    char l_ideal[64];
    snprintf(l_ideal, sizeof l_ideal, "ideal (linear from %.0f)", xs[0]);
    se[ns++] = (plot_series){"predicted (model)", n, xs, ys, 0, 0, 1};
    se[ns++] = (plot_series){l_ideal, n, ix, iy, 0, 1, 7};
    if (meas->n) se[ns++] = (plot_series){"measured: fitted", meas->n, mx, my, 1, 0, 2};
    if (cmp->n) se[ns++] = (plot_series){"measured: not fitted", cmp->n, cx, cy, 1, 0, 3};
    char title[160], sub[256];
    snprintf(title, sizeof title, "%s on %s: throughput vs node count", s->cfg.name, s->hw.instance);
    snprintf(sub, sizeof sub, "TP %d, PP %d, seq %ld, %s %ld, %s precision, ZeRO %d", s->tp, s->pp, s->seq,
             s->global_batch > 0 ? "global batch" : "batch per replica",
             s->global_batch > 0 ? s->global_batch : s->batch_per_replica, precision_name(s->precision), s->zero);
    plot_spec sp = {title, sub, "nodes (instances)", "throughput (seq/s)", 1, 1, se, ns, NAN, NULL, 0};
    return plot_lines(path, &sp);
}

int scale_run_prepare(scale_run *r)
{
    int rc = run_load(r);
    if (rc == 0) rc = model_build(r);
    if (rc == 0) rc = points_gather(r);
    if (rc == 0) rc = calibrate(r);
    return rc;
}

int scale_run_record(const scale_run *r, record *rec)
{
    if (record_init(rec, scale_cols, SC_NCOLS) != 0) return CB_EFAIL;
    for (int c = SC_OPT; c < SC_NCOLS; c++)
        if (c != SC_MFU && c != SC_MEM && c != SC_USD) record_csv_only(rec, c);
    int over_mem = 0, rc = rows_fill(rec, r, &over_mem);
    if (rc == 0) notes_write(rec, r, over_mem);
    return rc;
}

int scale_run_plot(const scale_run *r, const record *rec)
{
    const scale_points none = {.n = 0};
    return scale_plot(r->o.plot, &r->s, rec, r->o.calibrate ? &none : &r->meas, &r->cmp);
}

void scale_run_free(scale_run *r) { run_free(r); }
