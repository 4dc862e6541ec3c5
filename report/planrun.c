/* planrun.c: one `costbench plan` run (see planrun.h). */
#include "planrun.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/frameworks.h"
#include "../common/parse.h"
#include "../common/schema.h"
#include "planview.h"
#include "predict/attnpick.h"
#include "plot.h"

const rec_col plan_cols[PC_NCOLS] = {{"rank", "", REC_NUM, 0}, TPUT_INSTANCE_TYPE, {"provider", "", REC_STR, 0},
                                     {"pricing", "", REC_STR, 0},
                                     {"nodes", "", REC_NUM, 0}, {"tp", "", REC_NUM, 0}, {"pp", "", REC_NUM, 0},
                                     {"vp", "", REC_NUM, 0}, {"sp", "", REC_STR, 0}, {"zero", "", REC_NUM, 0},
                                     TPUT_MICRO_BATCH, {"recompute", "", REC_STR, 0}, {"precision", "", REC_STR, 0},
                                     {"days", "d", REC_NUM, 2}, {"cost_usd", "$", REC_NUM, 0},
                                     {"band_pct", "+-%", REC_NUM, 0}, TPUT_TOKENS_PER_USD, TPUT_SEQ_PER_S, TPUT_MFU,
                                     {"mem_per_rank_gib", "GiB", REC_NUM, 1}, {"ckpt_interval_min", "min", REC_NUM, 1},
                                     {"lost_pct", "%", REC_NUM, 1}, TPUT_USD_PER_HOUR, {"extrapolated", "", REC_STR, 0},
                                     {"price_age", "", REC_STR, 0}, {"price_source", "", REC_STR, 0},
                                     {"train_s", "s", REC_NUM, 0}, TPUT_TOKENS_PER_S, {"step_s", "s", REC_NUM, 3},
                                     {"mem_avail_gib", "GiB", REC_NUM, 1}, TPUT_MODEL, TPUT_SEQ_LEN, TPUT_GLOBAL_BATCH,
                                     {"compute_s", "s", REC_NUM, 3}, {"framework", "", REC_STR, 0}, TPUT_ATTENTION,
                                     {"band", "", REC_STR, 0}, {"why", "", REC_STR, 0}};

/* "140B" -> 1.4e11: a decimal count with parse_long's suffixes (K, M, B, T: 1e3 .. 1e12). Returns 0 or CB_EUSAGE. */
static int tokens_parse(const char *s, double *out)
{
    long v;
    if (parse_long(s, 1, (long)PLAN_MAX_TOKENS, 1, "flag '--tokens'", &v) != 0) return CB_EUSAGE;
    *out = (double)v;
    return 0;
}

/* The price of (instance, option) in the table, any region (the first row); NULL when none. */
static const price_row *price_lookup(const price_table *t, const char *instance, const char *option)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].instance, instance) == 0 && strcmp(t->rows[i].option, option) == 0) return &t->rows[i];
    return NULL;
}

/* Adds an instance type with its prices for the options; returns 1 when added, 0 when it has
 * none of them, CB_EUSAGE when the table is full. */
static int instance_add(plan_run *r, const hw_row *hw, char **opts, int nopts)
{
    if (r->in.ninst == PLAN_MAX_INSTANCES)
        return err_usage("flag '--instances': more than %d instance types", PLAN_MAX_INSTANCES);
    plan_instance *pi = &r->in.inst[r->in.ninst];
    memset(pi, 0, sizeof *pi);
    pi->hw = *hw;
    plan_instance_device(pi, devices_find(&r->dt, hw->accelerator));
    char note[512]; /* the framework's attention kernel on the device: its measured curve (attnpick.h) */
    step_attn_apply(&r->dt, r->fw, step_attn_stated(r->o.attention, r->in.attn_flash), &pi->hw, note, sizeof note);
    for (int k = 0; k < nopts; k++) {
        const price_row *pr = price_lookup(&r->pt, hw->instance, opts[k]);
        if (!pr) {
            size_t len = strlen(r->skipped);
            snprintf(r->skipped + len, sizeof r->skipped - len, "%s%s %s", len ? ", " : "", hw->instance, opts[k]);
            continue;
        }
        int j = pi->noffers++;
        snprintf(pi->option[j], sizeof pi->option[j], "%s", opts[k]);
        pi->usd_per_hour[j] = pr->usd_per_hour;
        snprintf(pi->price_source[j], sizeof pi->price_source[j], "%s, %s", pr->as_of, pr->source);
        /* the price's age (a warning when older than a year: notes_inputs) */
        snprintf(pi->price_from[j], sizeof pi->price_from[j], "%s", pr->source);
        snprintf(pi->provider[j], sizeof pi->provider[j], "%s", pr->provider);
        snprintf(pi->as_of[j], sizeof pi->as_of[j], "%s", pr->as_of);
        pi->price_age_days[j] = price_age_days(pr, (long)time(NULL));
    }
    if (pi->noffers == 0) return 0;
    r->in.ninst++;
    return 1;
}

/* --instances (or every priced instance type) with the --pricing options. */
static int instances_fill(plan_run *r)
{
    char pbuf[256], *opts[PLAN_MAX_OFFERS];
    int nopts = parse_word_list(r->o.pricing, "flag '--pricing'", 0, pbuf, sizeof pbuf, opts, PLAN_MAX_OFFERS);
    if (nopts < 0) return nopts;
    for (int k = 0; k < nopts; k++)
        if (!price_option_valid(opts[k]))
            return err_usage("flag '--pricing': expected one of %s, got '%s'", PRICE_OPTIONS, opts[k]);
    if (!r->o.instances) {
        for (int i = 0; i < r->ht.n; i++) {
            int rc = instance_add(r, &r->ht.rows[i], opts, nopts);
            if (rc < 0) return rc;
        }
        if (r->in.ninst == 0)
            return err_usage("flag '--pricing': no instance type of %s has a price in %s", r->ht.path, r->pt.path);
        return 0;
    }
    char ibuf[1024], *names[PLAN_MAX_INSTANCES];
    int nn = parse_word_list(r->o.instances, "flag '--instances'", 0, ibuf, sizeof ibuf, names, PLAN_MAX_INSTANCES);
    if (nn < 0) return nn;
    for (int i = 0; i < nn; i++) {
        const hw_row *hw = hardware_find(&r->ht, names[i]);
        if (!hw) return err_usage("flag '--instances': unknown instance type '%s' (not in %s)", names[i], r->ht.path);
        int rc = instance_add(r, hw, opts, nopts);
        if (rc < 0) return rc;
        if (rc == 0)
            return err_usage("flag '--instances': '%s' has no %s price in %s", names[i], r->o.pricing, r->pt.path);
    }
    return 0;
}

/* Without --calibrate and --mfu: the framework's default efficiency phi (report/predict/fweff.h:
 * --framework's, else every framework's) and its spread, the band of every candidate. */
static int framework_default(plan_run *r)
{
    fweff_table ft;
    if (fweff_load(&ft, NULL) != 0) return CB_EUSAGE;
    const fweff_entry *e = fweff_find(&ft, r->fw->name);
    if (e) {
        r->in.phi = e->phi, r->in.phi_band_pct = e->spread_pct;
        r->fweff = *e;
    }
    fweff_free(&ft);
    return 0;
}

/* --calibrate: the row's configuration with its compute time fitted (report/predict/calibration.h),
 * whose framework efficiency plan_t_mb_s carries to each candidate. The settings a throughput row
 * does not describe are the candidates' (ZeRO 0, 25 MiB buckets, the full line rate, mixed
 * precision when the row does not say, the attention and framework features of the flags); a
 * published row states its own. */
static int calibration_load(plan_run *r)
{
    const plan_opts *o = &r->o;
    int cpu_csv, rc = gemm_curves_from_flags(&r->gemm, o->matmul_csv, o->gemm, o->calibrate != NULL, &cpu_csv);
    if (rc != 0) return rc;
    r->in.gemm = &r->gemm;
    if (!o->calibrate) return 0;
    if (cpu_csv && matmul_curve_load(&r->eff, o->matmul_csv) != 0) return CB_EUSAGE; /* a bad file given by a flag */
    scale_model d;
    memset(&d, 0, sizeof d);
    d.precision = PRECISION_BF16_MIXED, d.interleave = 1, d.cp = 1, d.bucket_bytes = 25.0 * 1048576.0, d.net_eff = 1.0;
    d.attn_flash = r->in.attn_flash;
    d.grad_overlap = r->fw->grad_overlap, d.gather_prefetch = r->fw->gather_prefetch, d.tp_overlap = r->fw->tp_overlap;
    d.tp_bwd_overlap = r->fw->tp_bwd_overlap;
    d.gemm_measured = &r->gemm;
    const calib_env env = {&r->ht, NULL, -1, o->mf.models_path};
    rc = calib_row_load(&r->cal, o->calibrate, &env, &d, &r->eff, 5.0);
    if (rc != 0) return rc;
    r->in.cal = &r->cal.fc, r->in.eff = &r->eff;
    return 0;
}

/* --framework (its features for every candidate) and --attention (flash or full; default the
 * framework's kernel). An unknown name is a usage error naming the flag and the known ones. */
static int framework_pick(plan_run *r)
{
    const plan_opts *o = &r->o;
    r->fw = o->framework ? step_framework_find(o->framework) : step_framework_default();
    char fw_name[64];
    const char *fw_version;
    framework_split(o->framework, fw_name, sizeof fw_name, &fw_version); /* NAME[@VERSION] */
    if (o->framework && strcmp(step_framework_find(fw_name)->name, fw_name) != 0) {
        char names[512];
        step_framework_list(names, sizeof names);
        return framework_unknown(o->framework, names);
    }
    r->in.fw = r->fw;
    return attention_flag_parse(o->attention, r->fw->tiled_attention, &r->in.attn_flash);
}

/* --net-from: the network file's all_reduce rows set the network of the hardware table's rows it
 * measured, before anything reads the table (the candidates and a calibration row of such an
 * instance alike). */
static int net_from_apply(plan_run *r)
{
    if (!r->o.net_from) return 0;
    if (net_table_load(&r->net, r->o.net_from) != 0) return CB_EUSAGE;
    if (!(r->net_used = calloc((size_t)r->ht.n, sizeof *r->net_used))) return err_msg("out of memory");
    for (int k = 0; k < r->ht.n; k++) netfit_apply(&r->net, &r->ht.rows[k], &r->net_used[k]);
    return 0;
}

/* What --net-from set for instance i (NULL when it kept the hardware table's network). */
static const net_applied *net_of(const plan_run *r, int i)
{
    const hw_row *h = r->net_used ? hardware_find(&r->ht, r->in.inst[i].hw.instance) : NULL;
    const net_applied *a = h ? &r->net_used[h - r->ht.rows] : NULL;
    return a && (a->inter || a->intra) ? a : NULL;
}

/* A network file that measured none of the candidates is an error naming its node types. */
static int net_from_check(const plan_run *r)
{
    if (!r->o.net_from) return 0;
    for (int i = 0; i < r->in.ninst; i++)
        if (net_of(r, i)) return 0;
    return netfit_no_row(&r->net, r->in.inst[0].hw.instance);
}

/* What the GEMMs run on, one line per device searched (a 16-bit step: the precision of the curves). */
static void notes_gemm(record *rec, const plan_run *r)
{
    for (int i = 0; i < r->in.ninst; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= strcmp(r->in.inst[j].hw.accelerator, r->in.inst[i].hw.accelerator) == 0;
        if (seen) continue;
        scale_model s;
        memset(&s, 0, sizeof s);
        s.hw = r->in.inst[i].hw, s.precision = PRECISION_BF16_MIXED, s.gemm_measured = &r->gemm;
        s.gemm_curve = r->eff.nk > 0 ? &r->eff : NULL;
        char line[1024];
        step_gemm_source(&s, line, sizeof line);
        record_note(rec, "%s", line);
    }
}

/* What --net-from set for each candidate, and which kept the hardware table's network. */
static void notes_net(record *rec, const plan_run *r)
{
    if (!r->o.net_from) return;
    char buf[2048], kept[512] = "";
    size_t len = 0;
    for (int i = 0; i < r->in.ninst; i++) {
        const net_applied *a = net_of(r, i);
        if (a) {
            netfit_describe(&r->net, a, buf, sizeof buf);
            record_note(rec, "%s: %s", r->in.inst[i].hw.instance, buf);
        } else if (len < sizeof kept)
            len += (size_t)snprintf(kept + len, sizeof kept - len, "%s%s", len ? ", " : "", r->in.inst[i].hw.instance);
    }
    if (kept[0]) record_note(rec, "no measured network in %s for: %s (the hardware table's)", r->net.path, kept);
}

/* What the flags say, the model, the tables: the search's inputs. Returns 0 or CB_E*. */
static int inputs_build(plan_run *r)
{
    const plan_opts *o = &r->o;
    plan_inputs *in = &r->in;
    if (!o->model) return err_usage("flag '--model' is required (a preset of data/models.csv)");
    if (!o->tokens) return err_usage("flag '--tokens' is required (tokens to train on, e.g. 140B)");
    if (!(o->deadline_days > 0)) return err_usage("flag '--deadline-days' is required (days, more than 0)");
    if (o->plot && !strstr(o->plot, ".png") && !strstr(o->plot, ".svg"))
        return err_usage("flag '--plot': expected a file name ending in .png or .svg, got '%s'", o->plot);
    int rc = tokens_parse(o->tokens, &in->tokens);
    if (rc == 0) rc = model_flags_config(&o->mf, o->model, &in->cfg);
    in->seq = o->seq ? o->seq : in->cfg.max_T;
    if (rc == 0) rc = model_flags_seq_check(&o->mf, &in->cfg, in->seq);
    if (rc != 0) return rc;
    in->global_batch = o->global_batch ? o->global_batch : (PLAN_DEFAULT_BATCH_TOKENS + in->seq - 1) / in->seq;
    double step_tokens = (double)in->global_batch * (double)in->seq;
    if (in->tokens < step_tokens)
        return err_usage(
            "flag '--tokens': %s is less than one step: a global batch of %ld sequences x %ld tokens is %.0f tokens "
            "(train on at least that, or give a smaller --global-batch or --seq)",
            o->tokens, in->global_batch, in->seq, step_tokens);
    in->max_nodes = o->max_nodes;
    if ((rc = framework_pick(r)) != 0) return rc;
    if (o->calibrate && o->mfu_pct > 0) return err_usage("flag '--calibrate': give it alone, not with '--mfu'");
    int mfu_assumed = !(o->mfu_pct > 0);
    if (mfu_assumed) r->o.mfu_pct = SCALE_ASSUMED_MFU_PCT;
    in->mfu = o->mfu_pct / 100.0;
    if (!o->calibrate && mfu_assumed && (rc = framework_default(r)) != 0) return rc;
    in->deadline_s = o->deadline_days * 86400.0;
    in->budget_usd = o->budget_usd;
    in->mtbf_s = o->mtbf_hours * 3600.0;
    in->ckpt_s = o->ckpt_s, in->restart_s = o->restart_s;
    if (o->all && (o->per_instance || o->runners_up > 0))
        return err_usage("flag '--all': ranks every layout; give it without '%s' (the best of each instance type)",
                         o->per_instance ? "--per-instance" : "--runners-up");
    if (o->price_warnings && strcmp(o->price_warnings, "one") != 0 && strcmp(o->price_warnings, "all") != 0)
        return err_usage("flag '--price-warnings': expected one or all, got '%s'", o->price_warnings);
    if (data_tables_load(o->prices_path, o->hw_path, &r->pt, &r->ht) != 0) return CB_EFAIL;
    if (devices_load(&r->dt, NULL) != 0) return CB_EFAIL;
    if ((rc = net_from_apply(r)) != 0) return rc;
    if ((rc = calibration_load(r)) != 0) return rc;
    if ((rc = instances_fill(r)) != 0) return rc;
    return net_from_check(r);
}

/* ------------------------------------------------------------------ outputs */

/* Row rec->nrows - 1 from candidate c at `rank`, with why it ranks there (NULL: empty). */
static void row_fill(record *rec, const plan_run *r, const plan_cand *c, int rank, const char *why)
{
    int row = rec->nrows - 1;
    const plan_instance *pi = &r->in.inst[c->inst];
    double usd_h = c->usd_per_hour * (double)c->nodes;
    record_num(rec, row, PC_RANK, rank);
    record_str(rec, row, PC_ITYPE, pi->hw.instance);
    record_str(rec, row, PC_PROVIDER, pi->provider[c->offer]);
    record_str(rec, row, PC_PRICING, pi->option[c->offer]);
    char age[32]; /* the price's age and source */
    price_age_text(pi->price_age_days[c->offer], age, sizeof age);
    record_str(rec, row, PC_PRICE_AGE, age);
    record_str(rec, row, PC_PRICE_SOURCE, pi->price_from[c->offer]);
    record_num(rec, row, PC_NODES, (double)c->nodes);
    record_num(rec, row, PC_TP, c->tp);
    record_num(rec, row, PC_PP, c->pp);
    record_num(rec, row, PC_VP, c->vp);
    record_str(rec, row, PC_SP, c->sp ? "on" : "off");
    record_num(rec, row, PC_ZERO, c->zero);
    record_num(rec, row, PC_MB, c->micro_batch);
    record_str(rec, row, PC_RECOMP, c->recompute ? "full" : "off");
    record_str(rec, row, PC_PREC, plan_prec_name(c->prec, c->fp8));
    record_num(rec, row, PC_DAYS, c->train_s / 86400.0);
    record_num(rec, row, PC_COST, c->cost_usd);
    record_num(rec, row, PC_TPU, r->in.tokens / c->cost_usd);
    record_num(rec, row, PC_SEQS, c->pt.seq_per_s);
    record_num(rec, row, PC_MFU, c->pt.mfu_pct);
    record_num(rec, row, PC_MEM, c->pt.mem_gib);
    record_num(rec, row, PC_TAU, c->tau_s / 60.0);
    if (isfinite(c->tau_s)) record_num(rec, row, PC_LOST, c->lost_pct);
    record_num(rec, row, PC_USD, usd_h);
    record_num(rec, row, PC_TRAIN_S, c->train_s);
    record_num(rec, row, PC_TOKS, c->pt.tokens_per_s);
    record_num(rec, row, PC_STEP, c->pt.step_s);
    record_num(rec, row, PC_MEM_AVAIL, c->pt.mem_avail_gib);
    record_str(rec, row, PC_MODEL, r->in.cfg.name);
    record_num(rec, row, PC_SEQ, (double)r->in.seq);
    record_num(rec, row, PC_GB, (double)c->pt.global_batch);
    record_num(rec, row, PC_COMPUTE, c->pt.compute_s);
    record_str(rec, row, PC_FRAMEWORK, r->fw->name);
    record_str(rec, row, PC_ATTN, tput_attentions[r->in.attn_flash ? TPUT_ATTN_FLASH : TPUT_ATTN_FULL]);
    double band;
    char far[256], band_text[64];
    calib_case k = plan_cand_case(&r->in, c, &band, far, sizeof far); /* uncalibrated: the default phi's spread */
    plan_view_band(band, band_text, sizeof band_text);
    record_str(rec, row, PC_BAND_TEXT, band_text);
    char gemm[128], why_gemm[1024];
    scale_model s; /* the candidate's device and precision: what its GEMMs ran on, when a measured curve */
    memset(&s, 0, sizeof s);
    s.hw = pi->hw, s.precision = c->prec;
    s.gemm_measured = &r->gemm;
    step_gemm_brief(&s, gemm, sizeof gemm);
    if (why && gemm[0]) snprintf(why_gemm, sizeof why_gemm, "%.800s%s%s", why, why[0] ? "; " : "", gemm);
    if (why) record_str(rec, row, PC_WHY, gemm[0] ? why_gemm : why);
    if (!r->in.cal && !(r->in.phi > 0)) return; /* an assumed MFU: no band, not a prediction from a measurement */
    record_num(rec, row, PC_BAND, band);
    if (r->in.cal) record_str(rec, row, PC_EXTRAP, k == CALIB_NEAR ? "no" : far);
}

/* The table (human: the columns before PC_TRAIN_S, the band's text and why; sure 2 calibrated, 1
 * the framework's default phi (a band, no extrapolation), 0 an assumed MFU (neither): what it lacks
 * the CSV keeps empty). */
static int record_make(record *rec, int human, int sure)
{
    if (record_init(rec, plan_cols, PC_NCOLS) != 0) return CB_EFAIL;
    if (!human) return 0;
    for (int c = PC_TRAIN_S; c < PC_BAND_TEXT; c++) record_csv_only(rec, c);
    if (sure < 1) record_csv_only(rec, PC_BAND);
    if (sure < 2) record_csv_only(rec, PC_EXTRAP);
    if (sure >= 1) record_csv_only(rec, PC_BAND_TEXT); /* band_pct shows it */
    return 0;
}

/* "p5.48xlarge on_demand x 16 nodes, TP 8 (sequence parallel) PP 2 x 2 virtual ZeRO 1 micro-batch 1,
 * recompute off, bf16-mixed: 12.3 days, $456789 (+-15%, extrapolated: another device (...))" */
static void cand_describe(const plan_run *r, const plan_cand *c, char *buf, size_t n)
{
    const plan_instance *pi = &r->in.inst[c->inst];
    char vp[32] = "", sure[320] = "", why[256];
    if (c->vp > 1) snprintf(vp, sizeof vp, " x %d virtual", c->vp);
    double band;
    calib_case k = plan_cand_case(&r->in, c, &band, why, sizeof why);
    if (r->in.cal || r->in.phi > 0)
        snprintf(sure, sizeof sure, " (+-%.0f%%%s%s)", band,
                 k == CALIB_NEAR ? "" : ", extrapolated: ", k == CALIB_NEAR ? "" : why);
    char usd[32];
    record_num_text(c->cost_usd, 0, usd, sizeof usd);
    snprintf(buf, n, "%s %s x %ld node%s, TP %d%s PP %d%s ZeRO %d micro-batch %d, recompute %s, %s: %.2f days, $%s%s",
             pi->hw.instance, pi->option[c->offer], c->nodes, c->nodes == 1 ? "" : "s", c->tp,
             c->sp ? " (sequence parallel)" : "", c->pp, vp, c->zero, c->micro_batch, c->recompute ? "full" : "off",
             plan_prec_name(c->prec, c->fp8), c->train_s / 86400.0, usd, sure);
}

/* Where the compute time comes from (a calibration, or an assumed MFU) and how sure it is. */
static void notes_compute(record *rec, const plan_run *r)
{
    const calib_row *c = &r->cal;
    if (!r->in.cal && r->in.phi > 0) {
        const fweff_entry *e = &r->fweff;
        int any = strcmp(e->framework, FWEFF_ANY) == 0;
        record_note(rec,
                    "compute: the device model's time of each candidate / %s%s default efficiency phi %.3g "
                    "(data/framework_eff.csv: fitted on %d published rows of %d files%s); band +-%.3g%%, its "
                    "out-of-sample spread (--calibrate FILE:ROW predicts from a run of yours; --mfu assumes an MFU)",
                    any ? "every framework" : e->framework, "'s", e->phi, e->rows, e->files,
                    any ? ": the shipped files lack this framework" : "", e->spread_pct);
        return;
    }
    if (!r->in.cal) {
        record_note(rec,
                    "assumption: compute at %g%% MFU of the data-sheet dense peak (--mfu; not measured): no band, the "
                    "times and costs "
                    "are as good as that assumption (--calibrate FILE:ROW predicts from a measured or published run, "
                    "with a band)",
                    r->o.mfu_pct);
        return;
    }
    record_note(rec,
                "compute: calibrated on %.300s:%d (%s on %ld x %s, TP %d, PP %d, %.4g seq/s: compute MFU %.4g%%, HFU "
                "%.4g%%; the model "
                "reproduces it within %.1f%%), its framework efficiency %.4g carried to each candidate by the step "
                "model: t_mb = the "
                "operation list's device time on the candidate's device and layout / %.4g (report/predict/calibration.h, as "
                "costbench scale "
                "--calibrate)%s",
                c->path, c->row.line, c->row.model, c->row.instances, c->row.instance, c->row.tp, c->row.pp,
                c->row.seq_per_s, 100 * c->mfu_cal, 100 * c->eff_cal, fabs(c->fc.fit.resid_pct[0]), c->fc.phi_cal,
                c->fc.phi_cal, r->o.matmul_csv ? "; GEMMs at --matmul-csv's measured efficiency" : "");
    record_note(rec,
                "how sure: band_pct = +-(|the calibration's residual| + the 90th percentile of |error| costbench "
                "validate measures out of sample on the published runs in the candidate's case, data/band.csv: %g%% "
                "near it, %g%% at another TP/PP/CP, recomputation, attention share or 4x the tokens per device, %g%% "
                "on another device, precision or framework), on time and cost alike; a candidate outside the first "
                "case is extrapolated, and says what changed",
                CALIB_BAND_NEAR_PCT, CALIB_BAND_LAYOUT_PCT, CALIB_BAND_DEVICE_PCT);
}

/* The attention kernel each device of the candidates runs (attnpick.h), each device once. */
static void notes_kernels(record *rec, const plan_run *r)
{
    char line[1024];
    size_t used = 0;
    for (int i = 0; i < r->in.ninst && used + 1 < sizeof line; i++) {
        const hw_row *h = &r->in.inst[i].hw;
        int seen = !h->attn_kernel[0];
        for (int j = 0; j < i && !seen; j++) seen = strcmp(r->in.inst[j].hw.accelerator, h->accelerator) == 0;
        if (!seen)
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%s %s", used ? ", " : "", h->accelerator,
                                     h->attn_kernel);
    }
    if (used)
        record_note(rec, "attention kernel per device (data/attention.csv's measured curve): %s; the device's own "
                         "curve elsewhere", line);
}

/* The framework features every candidate was given. */
static void notes_framework(record *rec, const plan_run *r)
{
    const step_framework *fw = r->fw;
    char vnote[512];
    step_framework_find_spec(r->o.framework, vnote, sizeof vnote);
    if (r->o.framework && vnote[0]) record_note(rec, "%s", vnote); /* an unknown version, named */
    record_note(rec,
                "framework features (--framework %s: %s): %s attention (%s), gradient reduction under the backward %s, "
                "ZeRO-3 gathers prefetched under compute %s, TP collectives under the GEMMs %s (backward ones under "
                "their wgrad GEMMs %s); network at its full line rate (report/predict/stepmodel.h)",
                fw->name, fw->source, r->in.attn_flash ? "tiled (flash)" : "materialised (full)",
                r->o.attention ? "--attention" : "the framework's", fw->grad_overlap ? "on" : "off",
                fw->gather_prefetch ? "on" : "off", fw->tp_overlap ? "on" : "off",
                fw->tp_overlap || fw->tp_bwd_overlap ? "on" : "off");
    notes_kernels(rec, r);
}

static void notes_inputs(record *rec, const plan_run *r)
{
    const plan_inputs *in = &r->in;
    const plan_opts *o = &r->o;
    record_note(
        rec, "plan: %s (%.3g B parameters), %.4g tokens, seq %ld, global batch %ld sequences (%s), deadline %g days%s",
        in->cfg.name, model_params_total(&in->cfg) / 1e9, in->tokens, in->seq, in->global_batch,
        o->global_batch ? "--global-batch" : "default: about 4M tokens a step", o->deadline_days,
        o->budget_usd > 0 ? "" : ", no budget");
    if (o->budget_usd > 0) record_note(rec, "budget $%.6g (--budget-usd)", o->budget_usd);
    notes_compute(rec, r);
    notes_framework(rec, r);
    record_note(rec,
                "memory per rank: weights, gradients and AdamW state as the ZeRO stage shards them, activations "
                "(Korthikanti et al. "
                "2022) %s; with sequence parallelism the norms' and dropouts' activations split over the TP ranks",
                in->attn_flash ? "with tiled (flash) attention: no s x s scores kept"
                               : "with the s x s attention scores kept (full attention)");
    record_note(rec, "hardware: %s; prices: %s (any region, first row)", r->ht.path, r->pt.path);
    for (int i = 0; i < in->ninst; i++)
        for (int k = 0; k < in->inst[i].noffers; k++)
            record_note(rec, "  %s %s $%.4g per instance-hour (%s)", in->inst[i].hw.instance, in->inst[i].option[k],
                        in->inst[i].usd_per_hour[k], in->inst[i].price_source[k]);
    plan_view_stale_prices(r);
    for (int i = 0; i < in->ninst; i++)
        if (!isfinite(in->inst[i].hw.intra_gb_per_s))
            record_note(rec,
                        "%s: device-link bandwidth unknown: TP and intra-node gradient traffic not modelled (TP looks "
                        "free there)",
                        in->inst[i].hw.instance);
    if (r->skipped[0]) record_note(rec, "no price, not searched: %s", r->skipped);
    notes_net(rec, r);
    notes_gemm(rec, r);
    if (in->mtbf_s > 0)
        record_note(rec,
                    "failures: MTBF %g h per instance (job: / nodes), checkpoint %g s, restart %g s; "
                    "Young/Daly interval sqrt(2 x checkpoint x MTBF)",
                    o->mtbf_hours, in->ckpt_s, in->restart_s);
    else
        record_note(rec,
                    "failures not modelled (give --mtbf-hours; --checkpoint-s default 60, --restart-s default 300)");
}

static void notes_counts(record *rec, const plan_run *r)
{
    const plan_result *s = &r->res;
    long bad = 0;
    char why[512] = "";
    for (int k = 0; k < PLAN_NBAD; k++) {
        bad += s->bad[k];
        size_t len = strlen(why);
        if (s->bad[k]) snprintf(why + len, sizeof why - len, "%s%ld %s", len ? ", " : "", s->bad[k], plan_bad_names[k]);
    }
    char tps[256] = "";
    for (int i = 0; i < r->in.ninst; i++) {
        size_t len = strlen(tps);
        snprintf(tps + len, sizeof tps - len, "%s%s %d", i ? ", " : "", r->in.inst[i].hw.instance,
                 plan_tp_max(&r->in.inst[i].hw));
    }
    record_note(
        rec,
        "searched %ld layouts (instance x nodes 1..16, then 4 per octave and the powers of two up to %ld x TP every "
        "divisor "
        "of the heads up to the scale-up domain (%s) x sequence parallel off,on x PP 1,2,4,8 x virtual stages 1,2,4 x "
        "precision x recompute off,full x micro-batch 1,2,4,8 x ZeRO 0,1,3): %ld invalid (%s), %ld out of memory per "
        "rank",
        s->layouts, r->in.max_nodes, tps, bad, why, s->oom);
    if (s->endless) record_note(rec, "%ld layouts never finish: failures outpace checkpoints", s->endless);
    record_note(rec, "priced %d candidates: %ld too slow for the deadline, %ld over budget, %ld meet both", s->n,
                s->too_slow, s->over_budget, s->ok);
    char d[512];
    int f = plan_fastest(s, r->in.budget_usd > 0);
    if (f >= 0 && s->ok > 0) { /* otherwise the verdict names the fastest */
        cand_describe(r, &s->c[f], d, sizeof d);
        record_note(rec, "fastest %s: %s", r->in.budget_usd > 0 ? "within the budget" : "found", d);
    }
}

/* The rows planview.h chooses (the best of each instance type and offer, or every layout), each
 * with why it ranks there; a layout the model cannot tell from one shown (same offer, nodes, time
 * and cost) is counted in *hidden, not shown. */
static int rows_top(record *rec, const plan_run *r, const plan_keys *k, long *hidden)
{
    int *idx = NULL, n = 0;
    if (plan_view_select(r, k, &idx, &n, hidden) != 0) return CB_EFAIL;
    char why[640];
    for (int i = 0; i < n; i++) {
        if (record_add_row(rec) < 0) {
            free(idx);
            return CB_EFAIL;
        }
        plan_view_why(r, k, idx[i], why, sizeof why);
        row_fill(rec, r, &r->res.c[idx[i]], i + 1, why);
    }
    free(idx);
    return 0;
}

/* Beside a ranking that may show one instance type only: the best configuration of each instance
 * type and offer that meets the deadline and the budget, cheapest first, with its cloud. */
static int note_per_instance(record *rec, const plan_run *r)
{
    if (!plan_view_all(&r->o)) return 0;
    unsigned char *seen = calloc((size_t)r->in.ninst * PLAN_MAX_OFFERS, 1);
    if (!seen) return err_msg("out of memory");
    char buf[4096];
    size_t len = 0;
    int n = 0;
    for (int i = 0; i < r->res.n && len + 160 < sizeof buf; i++) {
        const plan_cand *c = &r->res.c[i];
        if (!c->meets_deadline || !c->within_budget || seen[c->inst * PLAN_MAX_OFFERS + c->offer]) continue;
        seen[c->inst * PLAN_MAX_OFFERS + c->offer] = 1;
        const plan_instance *pi = &r->in.inst[c->inst];
        char usd[32];
        record_num_text(c->cost_usd, 0, usd, sizeof usd);
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s %s (%s) $%s in %.1f d", n++ ? "; " : "",
                                pi->hw.instance, pi->option[c->offer], pi->provider[c->offer], usd,
                                c->train_s / 86400.0);
    }
    free(seen);
    if (n > 1) record_note(rec, "the best of each instance type (the view without --all or --top): %s", buf);
    return 0;
}

/* Beside the ranking: how many of the rows shown are extrapolated from the calibration. */
static void note_extrapolated(record *rec, const plan_run *r)
{
    if (!r->in.cal || rec->nrows == 0) return;
    int far = 0, device = 0;
    for (int i = 0; i < rec->nrows; i++) {
        const char *x = rec->str[(size_t)i * rec->ncols + PC_EXTRAP];
        far += x && strcmp(x, "no") != 0;
        device += x && strncmp(x, "another device", 14) == 0;
    }
    if (far == 0)
        record_note(
            rec, "none of the %d rows shown is extrapolated: each is near its calibration (same device and TP degree)",
            rec->nrows);
    else
        record_note(
            rec,
            "extrapolated: %d of the %d rows shown (%d on another device than the calibration's, %d at another TP "
            "degree or 4x "
            "the tokens per device); their band is the validation's spread in that case, no measurement of them",
            far, rec->nrows, device, far - device);
}

/* The verdict when nothing qualifies: printed after the notes, a result rather than an error. */
static void verdict_none(const plan_run *r)
{
    char d[512];
    int f = plan_fastest(&r->res, 0), fb = r->o.budget_usd > 0 ? plan_fastest(&r->res, 1) : -1, cheapest = -1;
    for (int i = 0; i < r->res.n && cheapest < 0; i++)
        if (r->res.c[i].meets_deadline) cheapest = i; /* by cost: the first */
    printf("no configuration meets the deadline of %g days%s\n", r->o.deadline_days,
           r->o.budget_usd > 0 ? " within the budget" : "");
    if (f < 0) printf("no feasible configuration at all (every layout invalid or out of memory)\n");
    else {
        cand_describe(r, &r->res.c[f], d, sizeof d);
        printf("fastest found: %s\n", d);
    }
    if (fb >= 0 && fb != f) {
        cand_describe(r, &r->res.c[fb], d, sizeof d);
        printf("fastest within the budget: %s\n", d);
    }
    if (r->o.budget_usd > 0 && fb < 0 && r->res.n > 0) { /* res.c is by cost: the first is the cheapest */
        char usd[32];
        cand_describe(r, &r->res.c[0], d, sizeof d);
        record_num_text(r->res.c[0].cost_usd, 2, usd, sizeof usd);
        printf("nothing fits the budget of $%.6g: the cheapest configuration costs $%s: %s\n", r->o.budget_usd, usd,
               d);
    }
    if (cheapest >= 0 && r->o.budget_usd > 0) {
        cand_describe(r, &r->res.c[cheapest], d, sizeof d);
        printf("cheapest meeting the deadline: %s\n", d);
    }
}

static int pareto_csv(const plan_run *r, const int *idx, int n, const machine_info *mi)
{
    record rec;
    plan_keys k;
    if (plan_keys_build(r, &k) != 0) return CB_EFAIL;
    if (record_make(&rec, 0, r->in.cal ? 2 : r->in.phi > 0) != 0) {
        plan_keys_free(&k);
        return CB_EFAIL;
    }
    int rc = 0;
    char why[640];
    for (int i = 0; i < n && rc == 0; i++) {
        if (record_add_row(&rec) < 0) rc = CB_EFAIL;
        else {
            plan_view_why(r, &k, idx[i], why, sizeof why);
            row_fill(&rec, r, &r->res.c[idx[i]], i + 1, why);
        }
    }
    plan_keys_free(&k);
    record_note(&rec, "cost/time Pareto frontier over all %d feasible candidates (rank: by time)", r->res.n);
    if (rc == 0) rc = record_write_csv(&rec, r->o.pareto_csv, mi);
    record_free(&rec);
    return rc;
}

/* The frontier idx[0..n) as x = days, y = thousand USD into xy (2n values); its ranges widen lo/hi. */
static void frontier_xy(const plan_run *r, const int *idx, int n, double *xy, double *lo, double *hi)
{
    for (int i = 0; i < n; i++) {
        xy[i] = r->res.c[idx[i]].train_s / 86400.0, xy[n + i] = r->res.c[idx[i]].cost_usd / 1e3;
        lo[0] = fmin(lo[0], xy[i]), hi[0] = fmax(hi[0], xy[i]), lo[1] = fmin(lo[1], xy[n + i]),
        hi[1] = fmax(hi[1], xy[n + i]);
    }
}

/* Cost vs time to train: the frontier over every candidate as a line, each offer's own frontier
 * as points, the deadline as a vertical line. */
static int plan_plot(const plan_run *r, const int *idx, int n)
{
    enum { MAXS = 9 };
    double *xy = malloc((size_t)r->res.n * 2 * MAXS * sizeof *xy), dx[2], dy[2], lo[2] = {INFINITY, INFINITY},
           hi[2] = {0, 0};
    int *sub = malloc((size_t)r->res.n * sizeof *sub);
    if (!xy || !sub) {
        free(xy), free(sub);
        return err_msg("plan: out of memory for the plot");
    }
    plot_series se[MAXS + 1];
    char labels[MAXS][96];
    int ns = 0;
    frontier_xy(r, idx, n, xy, lo, hi);
    se[ns++] = (plot_series){"Pareto frontier, all candidates", n, xy, xy + n, 0, 0, 1};
    for (int i = 0; i < r->in.ninst; i++)
        for (int k = 0; k < r->in.inst[i].noffers && ns < MAXS; k++) {
            int m = plan_pareto(&r->res, i, k, sub);
            if (m == 0) continue;
            double *p = xy + (size_t)ns * 2 * r->res.n;
            frontier_xy(r, sub, m, p, lo, hi);
            snprintf(labels[ns], sizeof labels[ns], "%s %s", r->in.inst[i].hw.instance, r->in.inst[i].option[k]);
            se[ns] = (plot_series){labels[ns], m, p, p + m, 1, 0, ns + 1};
            ns++;
        }
    dx[0] = dx[1] = r->o.deadline_days, dy[0] = lo[1], dy[1] = hi[1];
    lo[0] = fmin(lo[0], r->o.deadline_days), hi[0] = fmax(hi[0], r->o.deadline_days);
    char dl[64], title[160], subt[256];
    snprintf(dl, sizeof dl, "deadline (%g days)", r->o.deadline_days);
    se[ns++] = (plot_series){dl, 2, dx, dy, 0, 1, 8};
    snprintf(title, sizeof title, "%s, %.3g tokens: cost vs time to train", r->in.cfg.name, r->in.tokens);
    if (r->in.cal)
        snprintf(subt, sizeof subt, "%d feasible candidates; compute calibrated on %.120s:%d (%s)", r->res.n,
                 r->cal.path, r->cal.row.line, r->cal.row.model);
    else if (r->in.phi > 0)
        snprintf(subt, sizeof subt, "%d feasible candidates; compute from the device model at phi %.3g (+-%.3g%%)",
                 r->res.n, r->in.phi, r->in.phi_band_pct);
    else
        snprintf(subt, sizeof subt, "%d feasible candidates; compute at %g%% MFU of the data-sheet peak", r->res.n,
                 r->o.mfu_pct);
    plot_spec sp = {
        title, subt, "time to train (days)", "cost (thousand USD)", hi[0] > 10 * lo[0], hi[1] > 10 * lo[1], se, ns, NAN,
        NULL,  1};
    int rc = plot_lines(r->o.plot, &sp);
    free(xy), free(sub);
    return rc;
}

/* What the search could not do, before any output: every feasible layout lost to failures is a
 * usage error naming --mtbf-hours; a calibration carried outside its curve or above the peak at
 * some layouts is a warning naming its row. */
int plan_run_check(const plan_run *r)
{
    const plan_result *s = &r->res;
    const plan_inputs *in = &r->in;
    if (s->n == 0 && s->endless > 0)
        return err_usage("flag '--mtbf-hours': failures come faster than a checkpoint can be written: an instance "
                         "fails every %.4g s on "
                         "average (%g h; a job of N nodes every %.4g / N s), a checkpoint takes %.4g s "
                         "(--checkpoint-s) and a restart "
                         "%.4g s (--restart-s), so none of the %ld feasible layouts ever finishes",
                         in->mtbf_s, r->o.mtbf_hours, in->mtbf_s, in->ckpt_s, in->restart_s, s->endless);
    char range[160];
    scale_eff_range(in->eff, range, sizeof range);
    if (s->eff_clamped && r->gemm.n > 0 && r->eff.nk == 0)
        err_warn("at %ld layouts a GEMM's k or n lies outside its device's measured curve (the note 'GEMMs on' gives "
                 "its grid): e(k, n) is taken at the nearest edge there, not extrapolated",
                 s->eff_clamped);
    else if (in->cal && s->eff_clamped)
        err_warn(
            "%s: at %ld layouts K or N lies outside %s: e(K, N) is taken at the nearest edge there, not extrapolated",
            r->cal.where, s->eff_clamped, range);
    if (in->cal && s->over_peak)
        err_warn("%s: carried to %ld layouts, the calibration comes out above 100%% of the dense peak (up to %.4g%%); "
                 "they are not "
                 "searched (counted as no compute time). The furthest: %s",
                 r->cal.where, s->over_peak, 100 * s->over_peak_eff, s->over_peak_why);
    return 0;
}

int plan_run_build(plan_run *r) { return inputs_build(r); }

int plan_run_record(const plan_run *r, record *rec, int human, long *hidden)
{
    plan_keys k;
    if (plan_keys_build(r, &k) != 0) return CB_EFAIL;
    if (record_make(rec, human, r->in.cal ? 2 : r->in.phi > 0) != 0) {
        plan_keys_free(&k);
        return CB_EFAIL;
    }
    notes_inputs(rec, r);
    plan_view_notes(rec, r);
    notes_counts(rec, r);
    *hidden = 0;
    int rc = rows_top(rec, r, &k, hidden);
    if (rc == 0 && !plan_view_all(&r->o)) plan_view_unmet(rec, r, &k);
    plan_keys_free(&k);
    if (rc == 0 && *hidden > 0)
        record_note(rec,
                    "%ld more layouts tie with a row shown (same instance, nodes, time and cost: the model cannot tell "
                    "them apart)",
                    *hidden);
    if (rc == 0) note_extrapolated(rec, r);
    if (rc == 0) rc = note_per_instance(rec, r);
    return rc;
}

void plan_run_verdict(const plan_run *r) { verdict_none(r); }
int plan_run_pareto_csv(const plan_run *r, const int *idx, int n, const machine_info *mi)
{
    return pareto_csv(r, idx, n, mi);
}
int plan_run_plot(const plan_run *r, const int *idx, int n) { return plan_plot(r, idx, n); }

void plan_run_free(plan_run *r)
{
    plan_result_free(&r->res);
    prices_free(&r->pt);
    hardware_free(&r->ht);
    devices_free(&r->dt);
    net_table_free(&r->net);
    free(r->net_used);
    gemm_curves_free(&r->gemm);
}
