#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/precision.h"
#include "../common/record.h"
#include "../common/schema.h"
#include "charts.h"
#include "markdown.h"
#include "outdir.h"
#include "plot.h"
#include "../common/files.h"

static int is_here(const char *instance) { return machine_is_this_machine(instance); }

/* Scaling units of a row: instances, times the data-parallel ranks of a run on one machine. */
static double units(const tput_row *t) { return (double)t->instances * (double)t->ranks; }

/* ------------------------------------------------------------------ pricing and figures */

static int instance_priced(const price_table *p, const char *instance)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->rows[i].instance, instance) == 0) return 1;
    return 0;
}

/* Price of one row under one option: per-hour total into r->usd_per_hour (NaN when the option
 * has no price and `required` is 0). */
static int price_row_under(report_row *r, const char *option, int required, const price_table *prices,
                           const report_opts *o)
{
    const tput_row *t = r->in;
    const char *instance = t->instance;
    /* "this machine", or a profile of it ("this machine (per rank)") */
    int here = is_here(t->instance);
    r->usd_per_hour = NAN;
    snprintf(r->instance, sizeof r->instance, "%s", t->instance);
    snprintf(r->pricing, sizeof r->pricing, "%s", option);
    if (here) {
        if (isfinite(o->usd_per_hour)) {
            /* a run of R ranks is charged R shares (sweeps give the price of one rank's share) */
            r->usd_per_hour = o->usd_per_hour * units(t);
            snprintf(r->pricing, sizeof r->pricing, "given");
            snprintf(r->price_note, sizeof r->price_note, "%s at $%g per hour%s (--usd-per-hour)", t->instance,
                     o->usd_per_hour, t->ranks > 1 ? " per rank" : "");
            return 0;
        }
        if (!o->instance)
            return err_usage("%s:%d: measured on '%s': name its instance type with --instance TYPE, or its price with "
                             "--usd-per-hour USD",
                             t->file, t->line, t->instance);
        instance = o->instance;
        snprintf(r->instance, sizeof r->instance, "%s (this machine)", o->instance);
    } else if (strcmp(option, "auto") == 0 && isfinite(t->usd_per_hour)) {
        r->usd_per_hour = t->usd_per_hour;
        snprintf(r->pricing, sizeof r->pricing, "imported");
        snprintf(r->price_note, sizeof r->price_note, "as given in the throughput file (%.200s:%d)", t->file, t->line);
        return 0;
    }
    const char *opt = strcmp(option, "auto") == 0 ? "on_demand" : option;
    snprintf(r->pricing, sizeof r->pricing, "%s", opt);
    if (!instance_priced(prices, instance)) {
        if (here) return err_usage("flag '--instance': unknown instance type '%s' (not in %s)", instance, prices->path);
        return err_msg("%s:%d: column 'instance_type': unknown instance type '%s' (not in %s)", t->file, t->line,
                       instance, prices->path);
    }
    const price_row *p = NULL;
    for (int i = 0; i < prices->n; i++) {
        const price_row *q = &prices->rows[i];
        if (strcmp(q->instance, instance) != 0 || strcmp(q->option, opt) != 0) continue;
        if (o->region && strcmp(q->region, o->region) != 0) continue;
        if (p)
            return err_usage("%s: %s %s is priced in several regions (%s, %s): choose one with --region", prices->path,
                             instance, opt, p->region, q->region);
        p = q;
    }
    if (!p) {
        if (!required) {
            snprintf(r->price_note, sizeof r->price_note, "no %s price for %.63s in %.200s", opt, instance,
                     prices->path);
            return 0;
        }
        return err_msg("%s:%d: no '%s' price for %s%s%s in %s", t->file, t->line, opt, instance,
                       o->region ? " in " : "", o->region ? o->region : "", prices->path);
    }
    r->usd_per_hour = p->usd_per_hour * (double)t->instances;
    char stale[96];
    price_stale_suffix(p, stale, sizeof stale);
    snprintf(r->price_note, sizeof r->price_note,
             "%.63s %.31s %.23s $%g per instance-hour (%.100s:%d, as of %.23s: %.80s)%s", instance, p->region, opt,
             p->usd_per_hour, prices->path, p->line, p->as_of, p->source, stale);
    return 0;
}

/* Same configuration but for the precision: rows measured on this machine and predictions from
 * its profile ("this machine (per rank)") are one configuration. */
static int same_setup(const tput_row *x, const tput_row *y)
{
    int same_inst = strcmp(x->instance, y->instance) == 0 || (is_here(x->instance) && is_here(y->instance));
    return strcmp(x->model, y->model) == 0 && x->tp == y->tp && x->pp == y->pp && x->seq_len == y->seq_len &&
           x->global_batch == y->global_batch && same_inst;
}

/* Same configuration: fp32 and bf16-mixed runs of one setup are two, and so are runs with and
 * without recomputation (or another stated configuration column); a column one row does not
 * state does not split them (plots: an imported series and its prediction). */
static int same_config(const tput_row *x, const tput_row *y)
{
    return same_setup(x, y) && strcmp(x->precision, y->precision) == 0 && tput_config_compatible(x, y);
}

/* Rows whose scaling efficiency is against one base: one kind, one configuration as stated. */
static int same_group(const report_row *a, const report_row *b)
{
    return a->in->kind == b->in->kind && same_config(a->in, b->in) && tput_same_config(a->in, b->in);
}

/* Which peak a precision's MFU is against. Rows measured here without a precision come from
 * summaries written before the column existed, when costbench train ran fp32 only; imported rows
 * without one are taken as BF16, the precision of every system these reports price (their note
 * says it was assumed). data/hardware.csv has no FP16 or FP8 figure. */
typedef enum { PEAK_FP32, PEAK_BF16, PEAK_NONE } peak_kind;

static peak_kind peak_kind_of(const tput_row *t)
{
    train_precision p;
    if (!t->precision[0]) return t->kind == SRC_MEASURED ? PEAK_FP32 : PEAK_BF16;
    if (precision_parse(t->precision, &p) != 0) return PEAK_NONE; /* fp16-mixed, fp8 */
    return precision_info_of(p)->fp32_peak ? PEAK_FP32 : PEAK_BF16;
}

/* The measured peak a row names (peak_gflops: the fp32 FMA peak of an fp32 run, the bf16 matrix
 * peak of a bf16 run, AMX where the CPU has it, else AVX512_BF16), described. */
static void measured_peak_name(const tput_row *t, char *b, size_t n)
{
    peak_kind k = peak_kind_of(t);
    snprintf(b, n, "the measured %s peak, %.0f GFLOP/s",
             k == PEAK_FP32   ? "fp32 FMA"
             : k == PEAK_BF16 ? "bf16 matrix"
                              : t->precision,
             t->peak_gflops);
}

/* MFU of a row: as measured (against the measured peak of its precision the row names), else
 * against the data sheet's dense peak of its precision (BF16 or FP32) of its hardware, else as the
 * file gives it; the row's figures must be possible against that peak (common/presets.h's rules,
 * as train and scale apply them). */
static int row_mfu(report_row *r, const hw_row *h)
{
    const tput_row *t = r->in;
    peak_kind k = peak_kind_of(t);
    double peak = NAN, sheet = !h ? NAN : k == PEAK_FP32 ? h->fp32_tflops : k == PEAK_BF16 ? h->bf16_tflops : NAN;
    const char *sheet_name = k == PEAK_FP32 ? "FP32" : "BF16";
    char pname[160] = "", where[CB_WHERE_MAX];
    if (t->kind == SRC_MEASURED && isfinite(t->peak_gflops)) {
        peak = t->peak_gflops * 1e9;
        measured_peak_name(t, pname, sizeof pname);
    } else if (isfinite(sheet)) {
        peak = sheet * 1e12 * h->accelerators * (double)t->instances;
        snprintf(pname, sizeof pname, "the data-sheet dense %s peak of %ld x %.63s", sheet_name, t->instances,
                 t->instance);
    }
    snprintf(where, sizeof where, "%.4000s:%d", t->file, t->line);
    if (throughput_check(&r->cfg, t->seq_len, t->seq_per_s, peak, pname, where) != 0) return CB_EFAIL;
    r->mfu_pct = NAN;
    if (t->kind == SRC_MEASURED && isfinite(t->mfu)) {
        r->mfu_pct = t->mfu;
        if (isfinite(t->peak_gflops)) snprintf(r->mfu_peak, sizeof r->mfu_peak, "against %s", pname);
        else snprintf(r->mfu_peak, sizeof r->mfu_peak, "as given in the throughput file");
    } else if (isfinite(sheet)) {
        r->mfu_pct = mfu_pct(model_flops_per_token(&r->cfg, (int)t->seq_len), r->tokens_per_s, peak);
        snprintf(r->mfu_peak, sizeof r->mfu_peak, "against the data-sheet dense %s peak, %g TFLOP/s x %d %.30s%s",
                 sheet_name, sheet, h->accelerators, h->accelerator,
                 t->precision[0] ? "" : " (the file gives no precision: BF16 assumed)");
    } else if (isfinite(t->mfu)) {
        r->mfu_pct = t->mfu;
        snprintf(r->mfu_peak, sizeof r->mfu_peak, "as given in the throughput file");
    } else if (h && k == PEAK_NONE) {
        snprintf(r->mfu_peak, sizeof r->mfu_peak,
                 "none: %.20s has no data-sheet peak in data/hardware.csv (BF16 and FP32 only)", t->precision);
    } else if (t->kind == SRC_MEASURED) {
        snprintf(r->mfu_peak, sizeof r->mfu_peak,
                 "none: the row gives neither an MFU nor the peak it was measured against");
    }
    return 0;
}

/* One row's figures under pricing option k. */
static int row_figures(report_row *r, const model_config *models, int nmodels, int k, const price_table *prices,
                       const hw_table *hw, const report_opts *o)
{
    const tput_row *t = r->in;
    int found = 0;
    for (int j = 0; j < nmodels; j++)
        if (strcmp(models[j].name, t->model) == 0) r->cfg = models[j], found = 1;
    if (!found)
        return err_msg("%s:%d: column 'model': unknown model '%s' (not in %s)", t->file, t->line, t->model,
                       o->models_path);
    int rc = price_row_under(r, o->pricing[k], k == 0, prices, o);
    if (rc != 0) return rc;
    r->tokens_per_s = t->seq_per_s * (double)t->seq_len;
    /* Table 1: tokens/$ = seq/s x seq_len x 3600 / ($ per hour of all instances used) */
    r->tokens_per_usd = r->tokens_per_s * 3600.0 / r->usd_per_hour;
    r->usd_per_1b_tokens = 1e9 / r->tokens_per_usd;
    if (row_mfu(r, hardware_find(hw, t->instance)) != 0) return CB_EFAIL;
    r->train_tokens = isfinite(o->tokens_budget) ? o->tokens_budget : 20.0 * model_params_total(&r->cfg);
    r->train_days = r->train_tokens / r->tokens_per_s / 86400.0;
    r->train_usd = r->train_days * 24.0 * r->usd_per_hour;
    return 0;
}

int report_compute(const tput_set *in, const price_table *prices, const hw_table *hw, const report_opts *o,
                   report_row **out, int *nout)
{
    *out = NULL;
    *nout = 0;
    model_config *models;
    int nmodels;
    if (model_presets_load(o->models_path, &models, &nmodels) != 0) return CB_EFAIL;
    int n = in->n, total = n * o->npricing, rc = 0;
    report_row *rows = calloc((size_t)(total ? total : 1), sizeof *rows);
    if (!rows) {
        free(models);
        return err_msg("out of memory");
    }
    for (int k = 0; k < o->npricing && rc == 0; k++)
        for (int i = 0; i < n && rc == 0; i++) {
            rows[k * n + i].in = &in->rows[i];
            rc = row_figures(&rows[k * n + i], models, nmodels, k, prices, hw, o);
        }
    /* scaling efficiency against the smallest node count of the same configuration and kind */
    for (int i = 0; rc == 0 && i < total; i++) {
        const report_row *base = &rows[i];
        for (int j = (i / n) * n; j < (i / n + 1) * n; j++)
            if (same_group(&rows[j], &rows[i]) && units(rows[j].in) < units(base->in)) base = &rows[j];
        rows[i].efficiency = (rows[i].in->seq_per_s / units(rows[i].in)) / (base->in->seq_per_s / units(base->in));
    }
    free(models);
    if (rc) {
        free(rows);
        return rc;
    }
    *out = rows;
    *nout = total;
    return 0;
}

/* ------------------------------------------------------------------ formatting */

static void fmt_money(char *b, size_t n, double usd)
{
    if (!isfinite(usd)) snprintf(b, n, "-");
    else if (usd >= 1e9) snprintf(b, n, "$%.3gB", usd / 1e9);
    else if (usd >= 1e6) snprintf(b, n, "$%.3gM", usd / 1e6);
    else if (usd >= 1e4) snprintf(b, n, "$%.3gk", usd / 1e3);
    else if (n > 1) {
        b[0] = '$';
        record_num_text(usd, 2, b + 1, n - 1); /* never $0.00 for a cost that is not zero */
    }
}

static void fmt_count(char *b, size_t n, double v)
{
    if (v >= 1e12) snprintf(b, n, "%.3gT", v / 1e12);
    else if (v >= 1e9) snprintf(b, n, "%.3gB", v / 1e9);
    else if (v >= 1e6) snprintf(b, n, "%.3gM", v / 1e6);
    else snprintf(b, n, "%.0f", v);
}

static void fmt_days(char *b, size_t n, double days)
{
    if (!isfinite(days)) snprintf(b, n, "-");
    else if (days >= 730) snprintf(b, n, "%.1f years", days / 365.25);
    else if (days >= 2) snprintf(b, n, "%.1f days", days);
    else snprintf(b, n, "%.1f hours", days * 24);
}

static void fmt_sps(char *b, size_t n, double v) { snprintf(b, n, v < 10 ? "%.3f" : "%.2f", v); }

/* A row's precision in the markdown tables ("-" when its file does not say). */
static const char *prec_label(const tput_row *t) { return t->precision[0] ? t->precision : "-"; }

static const char *kind_label(src_kind k)
{
    return k == SRC_MEASURED ? "measured here" : k == SRC_IMPORTED ? "imported" : "predicted";
}

/* ------------------------------------------------------------------ CSV and stdout table */

enum { RC_MODEL, RC_TP, RC_PP, RC_INST, RC_USD, RC_SEQ, RC_GB, RC_SEQS, RC_TPU, RC_TOKS, RC_USD1B, RC_EFF, RC_MFU,
       RC_TTOK, RC_TDAYS, RC_TUSD, RC_ITYPE, RC_PRICING, RC_KIND, RC_SOURCE, RC_PRICE_SRC, RC_MFU_PEAK, RC_RANKS,
       RC_PRECISION, RC_MB, RC_RECOMP, RC_SHARD, RC_VP, RC_SEQ_PAR, RC_ATTN, RC_DEVICE, RC_NCOLS };
/* report.csv: the throughput format's columns (common/schema.h), readable again with --throughput,
 * and the report's own. Scripts read these columns by name: new ones are only ever appended. */
static const rec_col report_cols[RC_NCOLS] = {TPUT_MODEL, TPUT_TP, TPUT_PP, TPUT_INSTANCES, TPUT_USD_PER_HOUR,
                                              TPUT_SEQ_LEN, TPUT_GLOBAL_BATCH, TPUT_SEQ_PER_S, TPUT_TOKENS_PER_USD,
                                              TPUT_TOKENS_PER_S, {"usd_per_1b_tokens", "$", REC_NUM, 2},
                                              {"scaling_efficiency", "", REC_NUM, 3}, TPUT_MFU,
                                              {"train_tokens", "tok", REC_NUM, 0}, {"train_days", "days", REC_NUM, 1},
                                              {"train_usd", "$", REC_NUM, 0}, TPUT_INSTANCE_TYPE,
                                              {"pricing_option", "", REC_STR, 0}, {"source_kind", "", REC_STR, 0},
                                              TPUT_SOURCE, {"price_source", "", REC_STR, 0},
                                              {"mfu_peak", "", REC_STR, 0}, TPUT_RANKS, TPUT_PRECISION,
                                              TPUT_MICRO_BATCH, TPUT_RECOMPUTE, TPUT_SHARDING, TPUT_VP,
                                              TPUT_SEQUENCE_PARALLEL, TPUT_ATTENTION, TPUT_DEVICE};

/* A row's configuration columns as it stated them (empty: not stated), so that report.csv read
 * again keeps its rows apart. */
static void fill_config(record *rec, int row, const tput_row *t)
{
    record_num(rec, row, RC_MB, t->micro_batch > 0 ? (double)t->micro_batch : NAN);
    record_str(rec, row, RC_RECOMP, t->recompute != TPUT_NOT_STATED ? tput_recomputes[t->recompute] : "");
    record_str(rec, row, RC_SHARD, t->sharding != TPUT_NOT_STATED ? tput_shardings[t->sharding] : "");
    record_num(rec, row, RC_VP, t->vp);
    record_str(rec, row, RC_SEQ_PAR,
               t->sequence_parallel == TPUT_NOT_STATED ? ""
               : t->sequence_parallel                  ? "true"
                                                       : "false");
    record_str(rec, row, RC_ATTN, t->attention != TPUT_NOT_STATED ? tput_attentions[t->attention] : "");
    record_str(rec, row, RC_DEVICE, t->device);
}

static int fill_record(record *rec, const report_row *rows, int n)
{
    if (record_init(rec, report_cols, RC_NCOLS) != 0) return CB_EFAIL;
    for (int c = RC_TTOK; c < RC_NCOLS; c++)
        if (c != RC_TDAYS && c != RC_ITYPE && c != RC_PRICING && c != RC_KIND && c != RC_RANKS && c != RC_PRECISION)
            record_csv_only(rec, c);
    for (int i = 0; i < n; i++) {
        const report_row *r = &rows[i];
        const tput_row *t = r->in;
        int row = record_add_row(rec);
        if (row < 0) return CB_EFAIL;
        record_str(rec, row, RC_MODEL, t->model);
        record_num(rec, row, RC_TP, t->tp);
        record_num(rec, row, RC_PP, t->pp);
        record_num(rec, row, RC_INST, (double)t->instances);
        record_num(rec, row, RC_USD, r->usd_per_hour);
        record_num(rec, row, RC_SEQ, (double)t->seq_len);
        record_num(rec, row, RC_GB, (double)t->global_batch);
        record_num(rec, row, RC_SEQS, t->seq_per_s);
        /* rounded to whole tokens, as Table 1 prints it */
        record_num(rec, row, RC_TPU, round(r->tokens_per_usd));
        record_num(rec, row, RC_TOKS, r->tokens_per_s);
        record_num(rec, row, RC_USD1B, r->usd_per_1b_tokens);
        record_num(rec, row, RC_EFF, r->efficiency);
        record_num(rec, row, RC_MFU, r->mfu_pct);
        record_num(rec, row, RC_TTOK, r->train_tokens);
        record_num(rec, row, RC_TDAYS, r->train_days);
        record_num(rec, row, RC_TUSD, r->train_usd);
        record_str(rec, row, RC_ITYPE, r->instance);
        record_str(rec, row, RC_PRICING, r->pricing);
        record_str(rec, row, RC_KIND, src_kind_names[t->kind]);
        record_str(rec, row, RC_SOURCE, t->source);
        record_str(rec, row, RC_PRICE_SRC, r->price_note);
        record_str(rec, row, RC_MFU_PEAK, r->mfu_peak);
        record_num(rec, row, RC_RANKS, (double)t->ranks);
        record_str(rec, row, RC_PRECISION, t->precision);
        fill_config(rec, row, t);
    }
    return 0;
}

/* ------------------------------------------------------------------ plots */

/* Configuration groups for the scaling plots (pricing option 0 only). */
static int group_of(const report_row *rows, int n, int i)
{
    for (int j = 0; j < i && j < n; j++)
        if (same_config(rows[j].in, rows[i].in)) return group_of(rows, n, j);
    return i;
}

/* A scaling series' label: the setup, where (when the rows are on several instance types), the
 * kind, and the precision or configuration when another series of the same setup differs by it. */
static void series_label(const report_row *rows, int n, const tput_row *t, int k, char *buf, size_t size)
{
    int one_instance = 1, twin = 0, twin_cfg = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(rows[i].in->instance, t->instance) != 0 && !(is_here(rows[i].in->instance) && is_here(t->instance)))
            one_instance = 0;
        twin |= same_setup(rows[i].in, t) && strcmp(rows[i].in->precision, t->precision) != 0;
        twin_cfg |= same_setup(rows[i].in, t) && !tput_config_compatible(rows[i].in, t);
    }
    char cfg[160] = "";
    if (twin_cfg) tput_config_describe(t, cfg, sizeof cfg);
    snprintf(buf, size, "%.30s TP%d PP%d GB%ld%s%.20s, %s%s%.20s%s%.60s", t->model, t->tp, t->pp, t->global_batch,
             one_instance ? "" : " ",
             one_instance           ? ""
             : is_here(t->instance) ? "here"
                                    : t->instance,
             src_kind_names[k], twin ? ", " : "",
             !twin             ? ""
             : t->precision[0] ? t->precision
                               : "precision not given",
             cfg[0] ? ", " : "", cfg);
}

/* throughput.png and tokens_per_usd.png from the series plot_scaling built. */
static int scaling_plots_write(const char *dir, const char *pricing, const plot_series *s_tput, int ns,
                               const plot_series *s_tpu, int nt, int *wrote_tput, int *wrote_tpu)
{
    char path[CB_PATH_MAX], sub[160];
    const char *xlabel = "nodes (instances), or ranks on this machine";
    int rc = path_fmt(path, sizeof path, "%s/throughput.png", dir);
    if (rc != 0) return rc;
    snprintf(sub, sizeof sub,
             "points: measured or imported; lines: predicted by costbench scale; dashed: linear scaling");
    plot_spec sp = {"Training throughput vs node count", sub, xlabel, "throughput (seq/s)", 1, 1, s_tput, ns, NAN,
                    NULL, 0};
    if ((rc = plot_lines(path, &sp)) != 0) return rc;
    *wrote_tput = 1;
    if ((rc = path_fmt(path, sizeof path, "%s/tokens_per_usd.png", dir)) != 0) return rc;
    snprintf(sub, sizeof sub, "tokens/$ = seq/s x seq_len x 3600 / ($ per hour of all instances); pricing: %.23s",
             pricing);
    plot_spec sp2 = {"Cost-throughput ratio vs node count", sub, xlabel, "tokens per dollar", 1, 0, s_tpu, nt, NAN,
                     NULL, 0};
    if ((rc = plot_lines(path, &sp2)) != 0) return rc;
    *wrote_tpu = 1;
    return 0;
}

static int plot_scaling(const char *dir, const report_row *rows, int n, int *wrote_tput, int *wrote_tpu)
{
    *wrote_tput = *wrote_tpu = 0;
    enum { MAXS = 24 };
    double *buf = malloc(((size_t)n * 8 + 8) * sizeof *buf); /* 3 per point, 4 per ideal line */
    if (!buf) return err_msg("out of memory");
    plot_series s_tput[MAXS], s_tpu[MAXS];
    char labels[MAXS][200], ideal_labels[MAXS][96];
    int ns = 0, nt = 0, used = 0, ngroups = 0, multi = 0;
    for (int g = 0; g < n; g++) {
        if (group_of(rows, n, g) != g) continue;
        int color = 1 + ngroups++ % 8;
        for (int k = 0; k < 3 && ns < MAXS - 1; k++) {
            int cnt = 0;
            for (int i = 0; i < n; i++)
                if (group_of(rows, n, i) == g && (int)rows[i].in->kind == k) cnt++;
            if (!cnt) continue;
            double *x = buf + used, *y = x + cnt, *yt = y + cnt;
            int m = 0;
            /* sorted by node count */
            for (int i = 0; i < n; i++) {
                if (group_of(rows, n, i) != g || (int)rows[i].in->kind != k) continue;
                int at = m++;
                while (at > 0 && x[at - 1] > units(rows[i].in)) {
                    x[at] = x[at - 1], y[at] = y[at - 1], yt[at] = yt[at - 1];
                    at--;
                }
                x[at] = units(rows[i].in), y[at] = rows[i].in->seq_per_s, yt[at] = rows[i].tokens_per_usd;
            }
            used += 3 * cnt;
            if (m > 1 && x[m - 1] > x[0]) multi = 1;
            const tput_row *t = rows[g].in;
            series_label(rows, n, t, k, labels[ns], sizeof labels[ns]);
            int pts = k != SRC_PREDICTED;
            s_tput[ns] = (plot_series){labels[ns], m, x, y, pts, 0, color};
            s_tpu[nt++] = (plot_series){labels[ns], m, x, yt, pts, 0, color};
            ns++;
            /* the ideal line from the smallest measured or imported point of the group */
            if (k != SRC_PREDICTED && m > 1 && ns < MAXS) {
                double *ix = buf + used, *iy = ix + 2;
                used += 4;
                ix[0] = x[0], ix[1] = x[m - 1], iy[0] = y[0], iy[1] = y[0] * x[m - 1] / x[0];
                int id = ns++;
                snprintf(ideal_labels[id], sizeof ideal_labels[id], "linear from %.0f", x[0]);
                s_tput[id] = (plot_series){ideal_labels[id], 2, ix, iy, 0, 1, color};
            }
        }
    }
    int rc = multi && ns ? scaling_plots_write(dir, rows[0].pricing, s_tput, ns, s_tpu, nt, wrote_tput, wrote_tpu) : 0;
    free(buf);
    return rc;
}

/* A matmul bench CSV: the chart, and the number of points drawn. Files with dtype and backend
 * columns get a curve per variant and a peak line per precision (from pct_of_peak); older files,
 * fp32 sgemm only, one of each. */
static int plot_matmul_csv(const char *dir, const table *t, int *drew)
{
    *drew = 0;
    int cn = table_col(t, mm_cols[MM_N].name, 0), ck = table_col(t, mm_cols[MM_K].name, 0),
        cm = table_col(t, mm_cols[MM_M].name, 0);
    int cg = table_col(t, mm_cols[MM_GF_MED].name, 0), cp = table_col(t, mm_cols[MM_PHASE].name, 0);
    int cc = table_col(t, mm_cols[MM_COUNT].name, 0), cpk = table_col(t, mm_cols[MM_PCT].name, 0);
    int cdt = table_col(t, mm_cols[MM_DTYPE].name, 0), cbk = table_col(t, mm_cols[MM_BACKEND].name, 0);
    int ccpu = table_col(t, machine_cols[MC_CPU_MODEL], 0), cdate = table_col(t, machine_cols[MC_DATE_UTC], 0);
    int cblas = table_col(t, machine_cols[MC_BLAS_CORE], 0);
    if (cn < 0 || ck < 0 || cm < 0 || cg < 0 || cp < 0 || t->nrows == 0) return 0;
    chart_mm_point *pts = calloc((size_t)t->nrows, sizeof *pts);
    char (*variant)[48] = calloc((size_t)t->nrows, sizeof *variant);
    if (!pts || !variant) {
        free(pts), free(variant);
        return err_msg("out of memory");
    }
    int transformer = 0, rc = 0;
    double peak[2] = {NAN, NAN}; /* fp32, bf16 */
    for (int i = 0; i < t->nrows && rc == 0; i++) {
        if ((rc = table_get_double(t, i, cn, 1, 1e12, &pts[i].n)) != 0) break;
        if ((rc = table_get_double(t, i, ck, 1, 1e12, &pts[i].k)) != 0) break;
        if ((rc = table_get_double(t, i, cm, 1, 1e12, &pts[i].m)) != 0) break;
        if ((rc = table_get_double(t, i, cg, 0, 1e9, &pts[i].gflops)) != 0) break;
        pts[i].phase = table_cell(t, i, cp);
        const char *dt = cdt >= 0 ? table_cell(t, i, cdt) : "";
        if (cdt >= 0 && cbk >= 0) snprintf(variant[i], sizeof variant[i], "%.20s %.20s", dt, table_cell(t, i, cbk));
        pts[i].variant = variant[i];
        if (cc >= 0 && *table_cell(t, i, cc)) transformer = 1;
        double pct;
        if (cpk >= 0 && *table_cell(t, i, cpk) && table_get_double(t, i, cpk, 1e-9, 1e6, &pct) == 0)
            peak[strcmp(dt, "bf16") == 0] = pts[i].gflops / (pct / 100);
    }
    if (rc == 0) {
        char path[CB_PATH_MAX], sub[300], labels[2][64];
        chart_ref refs[2];
        int nrefs = 0;
        for (int d = 0; d < 2; d++)
            if (isfinite(peak[d])) {
                snprintf(labels[d], sizeof labels[d], "%s peak %.0f GFLOP/s",
                         d          ? "bf16 matrix"
                         : cdt >= 0 ? "fp32 FMA"
                                    : "FMA",
                         peak[d]);
                refs[nrefs++] = (chart_ref){labels[d], peak[d]};
            }
        rc = path_fmt(path, sizeof path, "%s/matmul.png", dir);
        snprintf(sub, sizeof sub, "measured %.10s on %.60s, OpenBLAS %.30s (%.150s)",
                 cdate >= 0 ? table_cell(t, 0, cdate) : "?", ccpu >= 0 ? table_cell(t, 0, ccpu) : "?",
                 cblas >= 0 ? table_cell(t, 0, cblas) : "?", t->path);
        if (rc == 0) rc = chart_matmul(path, pts, t->nrows, transformer, refs, nrefs, sub);
        if (rc == 0) *drew = 1;
    }
    free(pts), free(variant);
    return rc;
}

/* Training logs: loss and gradient norm against step, one line per log. */
static int plot_logs(const char *dir, const report_extras *x, int *drew)
{
    *drew = 0;
    if (x->nlogs == 0) return 0;
    table t[16];
    double *arr[16][3];
    chart_run loss[16], gn[16];
    char labels[16][96];
    int nl = 0, rc = 0;
    memset(arr, 0, sizeof arr);
    for (int i = 0; i < x->nlogs && rc == 0; i++) {
        if (table_load(&t[i], x->logs[i]) != 0) {
            rc = CB_EFAIL;
            break;
        }
        nl = i + 1;
        int cs = table_col(&t[i], step_log_cols[SL_STEP].name, 1),
            cl = table_col(&t[i], step_log_cols[SL_LOSS].name, 1);
        int cg = table_col(&t[i], step_log_cols[SL_GNORM].name, 1);
        if (cs < 0 || cl < 0 || cg < 0) {
            rc = CB_EFAIL;
            break;
        }
        int n = t[i].nrows;
        for (int a = 0; a < 3; a++)
            if (!(arr[i][a] = malloc((size_t)(n ? n : 1) * sizeof(double)))) rc = err_msg("out of memory");
        for (int r = 0; r < n && rc == 0; r++) {
            if ((rc = table_get_double(&t[i], r, cs, 0, 1e15, &arr[i][0][r])) != 0) break;
            if ((rc = table_get_double(&t[i], r, cl, 0, 1e6, &arr[i][1][r])) != 0) break;
            rc = table_get_double(&t[i], r, cg, 0, 1e30, &arr[i][2][r]);
        }
        const char *base = strrchr(x->logs[i], '/');
        snprintf(labels[i], sizeof labels[i], "%s", base ? base + 1 : x->logs[i]);
        char *dot = strrchr(labels[i], '.');
        if (dot && strcmp(dot, ".csv") == 0) *dot = '\0';
        loss[i] = (chart_run){labels[i], n, arr[i][0], arr[i][1]};
        gn[i] = (chart_run){labels[i], n, arr[i][0], arr[i][2]};
    }
    if (rc == 0) {
        char path[CB_PATH_MAX];
        rc = path_fmt(path, sizeof path, "%s/loss.png", dir);
        if (rc == 0)
            rc = chart_runs(path, "Training loss", "loss (nats per token)", loss, nl, "one line per training log");
        if (rc == 0) {
            rc = path_fmt(path, sizeof path, "%s/grad_norm.png", dir);
            if (rc == 0)
                rc = chart_runs(path, "Gradient norm (before clipping)", "global L2 norm", gn, nl,
                                "one line per training log");
        }
        if (rc == 0) *drew = 1;
    }
    for (int i = 0; i < nl; i++) {
        table_free(&t[i]);
        for (int a = 0; a < 3; a++) free(arr[i][a]);
    }
    return rc;
}

/* ------------------------------------------------------------------ markdown */

static void md_main_table(FILE *f, const report_row *rows, int n)
{
    fprintf(f,
            "| Model | Tensor Parallel | Pipeline Parallel | Number of instances | Cost ($/hour) | Sequence length | "
            "Global batch size | Throughput (seq/sec) | Cost-throughput ratio (tokens/$) | Precision | Tokens/s | Cost "
            "per 1B tokens | "
            "Scaling efficiency | MFU | Tokens to train | Time to train | Cost to train | Source |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < n; i++) {
        const report_row *r = &rows[i];
        const tput_row *t = r->in;
        char sps[32], c1b[32], ttok[32], tdays[32], tusd[32], mfu[32], eff[32];
        fmt_sps(sps, sizeof sps, t->seq_per_s);
        fmt_money(c1b, sizeof c1b, r->usd_per_1b_tokens);
        fmt_count(ttok, sizeof ttok, r->train_tokens);
        fmt_days(tdays, sizeof tdays, r->train_days);
        fmt_money(tusd, sizeof tusd, r->train_usd);
        if (isfinite(r->mfu_pct)) snprintf(mfu, sizeof mfu, "%.1f%%", r->mfu_pct);
        else snprintf(mfu, sizeof mfu, "-");
        snprintf(eff, sizeof eff, "%.1f%%", 100 * r->efficiency);
        char cost[32];
        snprintf(cost, sizeof cost, r->usd_per_hour < 10 ? "%.4g" : "%.2f", r->usd_per_hour);
        char inst[48], model[2 * sizeof t->model], prec[2 * sizeof t->precision];
        if (t->ranks > 1) snprintf(inst, sizeof inst, "%ld (%ld ranks)", t->instances, t->ranks);
        else snprintf(inst, sizeof inst, "%ld", t->instances);
        markdown_escape(model, sizeof model, t->model);
        markdown_escape(prec, sizeof prec, prec_label(t));
        fprintf(
            f,
            "| %s | %d | %d | %s | %s | %ld | %ld | %s | %.0f | %s | %.0f | %s | %s | %s | %s | %s | %s | %s [%d] |\n",
            model, t->tp, t->pp, inst, cost, t->seq_len, t->global_batch, sps, round(r->tokens_per_usd), prec,
            r->tokens_per_s, c1b, eff, mfu, ttok, tdays, tusd, kind_label(t->kind), i + 1);
    }
    fprintf(f, "\n");
    for (int i = 0; i < n; i++) {
        const report_row *r = &rows[i];
        const tput_row *t = r->in;
        fprintf(f, "%d. %s, %s: %s", i + 1, t->model, r->instance, t->source);
        if (t->kind == SRC_MEASURED && t->cpu_model[0]) fprintf(f, " on %s", t->cpu_model);
        fprintf(f, " (%s:%d). Price: %s.", t->file, t->line, r->price_note);
        if (r->mfu_peak[0]) fprintf(f, " MFU %s.", r->mfu_peak);
        char cfg[256], esc[512];
        tput_config_describe(t, cfg, sizeof cfg);
        if (cfg[0]) fprintf(f, " Configuration: %s.", markdown_escape(esc, sizeof esc, cfg));
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

static void md_side_by_side(FILE *f, const report_row *rows, int n_in, const report_opts *o)
{
    fprintf(f, "## Pricing options side by side\n\n| Model | Number of instances | Instance | Precision | Throughput "
               "(seq/sec) |");
    for (int k = 0; k < o->npricing; k++)
        fprintf(f, " Cost ($/hour), %s | tokens/$, %s |", o->pricing[k], o->pricing[k]);
    fprintf(f, "\n|---|---:|---|---|---:|");
    for (int k = 0; k < o->npricing; k++) fprintf(f, "---:|---:|");
    fprintf(f, "\n");
    for (int i = 0; i < n_in; i++) {
        char sps[32], model[2 * sizeof rows[i].in->model], inst[2 * sizeof rows[i].instance],
            prec[2 * sizeof rows[i].in->precision];
        fmt_sps(sps, sizeof sps, rows[i].in->seq_per_s);
        markdown_escape(model, sizeof model, rows[i].in->model);
        markdown_escape(inst, sizeof inst, rows[i].instance);
        markdown_escape(prec, sizeof prec, prec_label(rows[i].in));
        fprintf(f, "| %s | %ld | %s | %s | %s |", model, rows[i].in->instances, inst, prec, sps);
        for (int k = 0; k < o->npricing; k++) {
            const report_row *r = &rows[k * n_in + i];
            if (isfinite(r->usd_per_hour))
                fprintf(f, r->usd_per_hour < 10 ? " %.4g | %.0f |" : " %.2f | %.0f |", r->usd_per_hour,
                        round(r->tokens_per_usd));
            else fprintf(f, " - | - |");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\nAn empty cell: no price for that instance type under that option in the price table.\n\n");
}

static void md_bench(FILE *f, const table *t)
{
    /* a compact table of the columns a reader needs; all of them are in the CSV */
    static const char *const wanted[] = {"model", "op", "phase", "variant", "direction", "dtype", "backend", "n", "k",
                                         "m", "count", "tokens", "gflops_median", "gflops_min", "gflops_max",
                                         "pct_of_peak", "pack_ms", "ns_per_token_median", "gbps_median",
                                         "pct_of_copy_bw", "speedup_vs_reference"};
    int cols[32], nc = 0;
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        int c = table_col(t, wanted[i], 0);
        if (c >= 0) cols[nc++] = c;
    }
    int ccpu = table_col(t, machine_cols[MC_CPU_MODEL], 0), cdate = table_col(t, machine_cols[MC_DATE_UTC], 0);
    fprintf(f, "Measured here: %s, %s (`%s`).\n\n|",
            ccpu >= 0 && t->nrows ? table_cell(t, 0, ccpu) : "machine not recorded",
            cdate >= 0 && t->nrows ? table_cell(t, 0, cdate) : "date not recorded", t->path);
    char cell[512];
    for (int c = 0; c < nc; c++) fprintf(f, " %s |", markdown_escape(cell, sizeof cell, t->header[cols[c]]));
    fprintf(f, "\n|");
    for (int c = 0; c < nc; c++) fprintf(f, "---|");
    fprintf(f, "\n");
    for (int r = 0; r < t->nrows && r < 200; r++) {
        fprintf(f, "|");
        for (int c = 0; c < nc; c++) fprintf(f, " %s |", markdown_escape(cell, sizeof cell, table_cell(t, r, cols[c])));
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

/* ------------------------------------------------------------------ the report's files */

/* report.md: the main table, the side-by-side pricing, the plots `wrote` lists, the benchmark
 * tables and the training logs. */
static int report_md_write(const char *path, const report_row *rows, int n_in, const report_opts *o,
                           const report_extras *x, const table *bench, int nb, unsigned wrote)
{
    FILE *f = fopen(path, "w");
    if (!f) return err_msg("cannot write '%s': %s", path, strerror(errno));
    machine_info mi;
    machine_probe(&mi);
    fprintf(f,
            OUT_MD_TITLE "\n\nWritten %s by costbench %s. Every row says where its throughput comes from: "
                         "**measured here** (this machine, with its date), **imported** (with its source) or "
                         "**predicted** (by `costbench scale`, "
                         "with its inputs).\n\n",
            mi.date_utc, mi.git_rev);
    fprintf(f, "## Cost and throughput, pricing: %s\n\n", o->pricing[0]);
    md_main_table(f, rows, n_in);
    fprintf(f,
            "Formulas: tokens/$ = seq/s x seq_len x 3600 / (cost per hour of all instances), rounded as in Table 1; "
            "cost per 1B tokens = 1e9 / (tokens/$); "
            "scaling efficiency = (seq/s per instance) / (seq/s per instance at the smallest instance count of the "
            "same model, parallelism, "
            "sequence length, global batch, instance type, precision and source kind); MFU = (6N + 12 L d T) FLOPs per "
            "token (PaLM appendix B) x tokens/s / peak, "
            "the peak of the row's precision as its note says (measured here: the fp32 FMA peak of an fp32 run, the "
            "bf16 matrix peak of a bf16 run; "
            "otherwise the data sheet's dense FP32 or BF16 peak); precision as the throughput file gives it, '-' where "
            "it does not say; "
            "time to train = T / (tokens/s) and cost to train = time x cost per hour, with T = %s.\n\n",
            isfinite(o->tokens_budget) ? "the budget given with --tokens" : "20 tokens per parameter (Chinchilla)");
    if (o->npricing > 1) md_side_by_side(f, rows, n_in, o);
    if (wrote & (1u << OUT_TPUT | 1u << OUT_TPU)) {
        fprintf(f, "## Scaling across node counts\n\n");
        if (wrote & 1u << OUT_TPUT)
            fprintf(f, "![throughput against node count, log-log, with ideal linear scaling](throughput.png)\n\n");
        if (wrote & 1u << OUT_TPU) fprintf(f, "![tokens per dollar against node count](tokens_per_usd.png)\n\n");
    }
    if (nb) {
        fprintf(f, "## Kernel benchmarks\n\n");
        for (int i = 0; i < nb; i++) md_bench(f, &bench[i]);
        if (wrote & 1u << OUT_MM) fprintf(f, "![matmul GFLOP/s against N, one line per K (and dtype)](matmul.png)\n\n");
    }
    if (wrote & 1u << OUT_LOSS) {
        fprintf(f, "## Training curves\n\n");
        for (int i = 0; i < x->nlogs; i++) fprintf(f, "- `%s`\n", x->logs[i]);
        fprintf(f, "\n![loss against step](loss.png)\n\n![gradient norm against step](grad_norm.png)\n\n");
    }
    fprintf(f, "## Files\n\n`report.csv`: the rows above, one per pricing option (columns of Table 1 in snake_case, "
               "then the rest).\n");
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return err_msg("cannot write '%s': %s", path, strerror(errno ? errno : EIO));
    return 0;
}

/* The plots and report.md (after report.csv): `wrote` gets their bits. */
static int report_figures_write(const char *dir, const report_row *rows, int n_in, const report_opts *o,
                                const report_extras *x, unsigned *wrote)
{
    int tput = 0, tpu = 0, mm = 0, logs = 0, rc, nb = 0;
    char path[CB_PATH_MAX];
    if ((rc = plot_scaling(dir, rows, n_in, &tput, &tpu)) != 0) return rc;
    *wrote |= (tput ? 1u << OUT_TPUT : 0) | (tpu ? 1u << OUT_TPU : 0);
    table bench[16];
    for (int i = 0; i < x->nbench && rc == 0; i++) {
        if (table_load(&bench[i], x->bench[i]) != 0) {
            rc = CB_EFAIL;
            break;
        }
        nb = i + 1;
        int drew = 0;
        if (!mm && (rc = plot_matmul_csv(dir, &bench[i], &drew)) != 0) break;
        if (drew) {
            mm = 1;
            *wrote |= 1u << OUT_MM;
        }
    }
    if (rc == 0) rc = plot_logs(dir, x, &logs);
    if (rc == 0 && logs) *wrote |= 1u << OUT_LOSS | 1u << OUT_GN;
    if (rc == 0) rc = path_fmt(path, sizeof path, "%s/%s", dir, out_names[OUT_MD]);
    if (rc == 0) rc = report_md_write(path, rows, n_in, o, x, bench, nb, *wrote);
    if (rc == 0) *wrote |= 1u << OUT_MD;
    for (int i = 0; i < nb; i++) table_free(&bench[i]);
    return rc;
}

/* All of a report's files in `dir` (report.csv, the plots the inputs allow, report.md); `wrote`
 * gets the bits of the files written. Prints the main table to stdout. */
static int report_files_write(const char *dir, const report_row *rows, int n, const report_opts *o,
                              const report_extras *x, unsigned *wrote)
{
    int n_in = o->npricing ? n / o->npricing : n, rc;
    char path[CB_PATH_MAX];
    record rec;
    *wrote = 0;
    rc = fill_record(&rec, rows, n);
    if (rc == 0) rc = path_fmt(path, sizeof path, "%s/%s", dir, out_names[OUT_CSV]);
    if (rc == 0) rc = record_write_csv(&rec, path, NULL);
    if (rc == 0) *wrote |= 1u << OUT_CSV;
    if (rc == 0) rc = report_figures_write(dir, rows, n_in, o, x, wrote);
    if (rc == 0) record_print(&rec, stdout);
    record_free(&rec);
    return rc;
}

int report_write(const char *out_dir, const report_row *rows, int n, const report_opts *o, const report_extras *x)
{
    char dir[CB_PATH_MAX], tmp[CB_PATH_MAX];
    unsigned wrote = 0;
    int rc = outdir_open(&outdir_report, out_dir, dir, sizeof dir, tmp, sizeof tmp); /* refused before any work */
    if (rc) return rc;
    rc = report_files_write(tmp, rows, n, o, x, &wrote);
    return outdir_close(&outdir_report, tmp, dir, wrote, rc);
}
