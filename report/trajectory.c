#include "trajectory.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/files.h"
#include "../common/machine.h"
#include "../common/schema.h"
#include "formats/inputs.h"
#include "markdown.h"
#include "outdir.h"
#include "plot.h"

const rec_col trajectory_cols[TJ_NCOLS] = {
    [TJ_LABEL] = {"label", "", REC_STR, 0},
    [TJ_PRECISION] = TPUT_PRECISION,
    [TJ_STEPS] = {"steps", "", REC_NUM, 0},
    [TJ_TOKS] = TPUT_TOKENS_PER_S,
    [TJ_TOKS_PER_USD] = TPUT_TOKENS_PER_USD,
    [TJ_RSS] = TPUT_PEAK_RSS_GIB,
    [TJ_FINAL_LOSS] = {"final_loss", "nats", REC_NUM, 4},
    [TJ_LOSS_MEAN] = {"loss_mean_abs_diff", "nats", REC_NUM, 4},
    [TJ_LOSS_MAX] = {"loss_max_abs_diff", "nats", REC_NUM, 4},
    [TJ_GN_MEAN] = {"grad_norm_mean_abs_diff", "", REC_NUM, 4},
    [TJ_GN_MAX] = {"grad_norm_max_abs_diff", "", REC_NUM, 4},
    [TJ_FINAL_PCT] = {"final_loss_vs_baseline_pct", "%", REC_NUM, 3},
    [TJ_USD_PER_HOUR] = TPUT_USD_PER_HOUR,
    [TJ_PRICE_SOURCE] = {"price_source", "", REC_STR, 0},
    [TJ_LOG] = {"log", "", REC_STR, 0},
    [TJ_SUMMARY] = {"summary", "", REC_STR, 0},
};

/* One run: its log copied into typed arrays, what its summary says, and the comparison. */
typedef struct {
    const traj_input *in;
    int n;
    long *step;   /* (n) */
    int *line;    /* (n) line of each step in the log */
    double *loss, *gnorm; /* (n) */
    char precision[32], model[48], cpu[128], date[32]; /* "" when unknown */
    double tokens_per_s, peak_rss_gib;                 /* NaN when unknown */
    double tokens_per_usd, final_loss, final_pct, loss_mean, loss_max, gn_mean, gn_max;
} traj_run;

typedef struct {
    const traj_opts *o;
    traj_run runs[TRAJ_MAX_RUNS];
    int n, base, tail;      /* runs, the baseline's index, steps in the tail */
    double usd_per_hour;    /* NaN: no price */
    char price_source[640]; /* where the price came from */
} traj_ctx;

/* ------------------------------------------------------------------ input */

static int label_char_ok(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("._+-", ch);
}

int trajectory_input_parse(const char *spec, traj_input *in)
{
    memset(in, 0, sizeof *in);
    const char *eq = strchr(spec, '=');
    if (!eq) return err_usage("flag '--run': expected LABEL=LOG.csv[,SUMMARY.csv], got '%.200s'", spec);
    size_t ll = (size_t)(eq - spec);
    if (ll == 0 || ll > TRAJ_MAX_LABEL)
        return err_usage("flag '--run': expected a label of 1 to %d characters before '=', got '%.200s'",
                         TRAJ_MAX_LABEL, spec);
    for (size_t i = 0; i < ll; i++)
        if (!label_char_ok(spec[i]))
            return err_usage("flag '--run': label '%.*s': expected letters, digits and . _ + - only", (int)ll, spec);
    memcpy(in->label, spec, ll);
    const char *log = eq + 1, *comma = strchr(log, ',');
    size_t logl = comma ? (size_t)(comma - log) : strlen(log);
    if (logl == 0 || (comma && !comma[1]))
        return err_usage(
            "flag '--run': '%.200s': expected a log file after '=' (and a summary file after ',' when there is one)",
            spec);
    if (logl >= sizeof in->log_path || (comma && strlen(comma + 1) >= sizeof in->summary_path))
        return err_usage("flag '--run': '%.200s...': a path too long", spec);
    memcpy(in->log_path, log, logl);
    if (comma) snprintf(in->summary_path, sizeof in->summary_path, "%s", comma + 1);
    return 0;
}

static int run_alloc(traj_run *r, int n)
{
    r->step = calloc((size_t)n, sizeof *r->step);
    r->line = calloc((size_t)n, sizeof *r->line);
    r->loss = calloc((size_t)n, sizeof *r->loss);
    r->gnorm = calloc((size_t)n, sizeof *r->gnorm);
    if (!r->step || !r->line || !r->loss || !r->gnorm) return err_msg("out of memory");
    return 0;
}

static void run_free(traj_run *r)
{
    free(r->step), free(r->line), free(r->loss), free(r->gnorm);
}

/* Row i of a log: a step number after the previous one, a loss and a gradient norm. */
static int log_row(const table *t, int i, const int *col, traj_run *r)
{
    r->line[i] = t->lines[i];
    if (table_get_long(t, i, col[0], 0, 1000000000000L, &r->step[i]) != 0) return CB_EFAIL;
    if (i > 0 && r->step[i] <= r->step[i - 1])
        return err_msg("%s:%d: column '%s': expected a step after %ld, got %ld", t->path, t->lines[i],
                       t->header[col[0]], r->step[i - 1], r->step[i]);
    if (table_get_double(t, i, col[1], 0, 1e6, &r->loss[i]) != 0) return CB_EFAIL;
    if (table_get_double(t, i, col[2], 0, 1e30, &r->gnorm[i]) != 0) return CB_EFAIL;
    r->n = i + 1;
    return 0;
}

static int log_load(traj_run *r, const char *path)
{
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    const int ids[3] = {SL_STEP, SL_LOSS, SL_GNORM};
    int col[3], rc = 0;
    for (int k = 0; k < 3 && rc == 0; k++)
        if ((col[k] = table_col(&t, step_log_cols[ids[k]].name, 1)) < 0) rc = CB_EFAIL;
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no steps (a header and no rows)", path);
    if (rc == 0) rc = run_alloc(r, t.nrows);
    for (int i = 0; rc == 0 && i < t.nrows; i++) rc = log_row(&t, i, col, r);
    table_free(&t);
    return rc;
}

/* An optional string cell of the summary's row into dst ("" when the column is absent). */
static int summary_str(const table *t, const char *name, char *dst, size_t n)
{
    int c = table_col(t, name, 0);
    const char *s = c >= 0 ? table_cell(t, 0, c) : "";
    if (strlen(s) >= n)
        return err_msg("%s:%d: column '%s': longer than %zu characters", t->path, t->lines[0], name, n - 1);
    snprintf(dst, n, "%s", s);
    return 0;
}

/* The summary's one row: tokens_per_s (required), peak_rss_gib (empty: not measured), precision
 * (a free string: the file names its own precision) and where it was measured. Numbers in the
 * ranges of their schema: zero is no measurement. */
static int summary_load(traj_run *r, const char *path)
{
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    const schema_col *tk = &tput_schema[TP_TOKENS_PER_S];
    int ct = table_col(&t, tk->col.name, 1), rc = ct < 0 ? CB_EFAIL : 0;
    if (rc == 0 && t.nrows != 1)
        rc = err_msg("%s: expected one summary row (costbench train --summary-csv), got %d", path, t.nrows);
    if (rc == 0) rc = table_get_double(&t, 0, ct, tk->lo, tk->hi, &r->tokens_per_s);
    int crss = rc == 0 ? table_col(&t, tput_peak_rss.col.name, 0) : -1;
    if (rc == 0 && crss >= 0 && *table_cell(&t, 0, crss))
        rc = table_get_double(&t, 0, crss, tput_peak_rss.lo, tput_peak_rss.hi, &r->peak_rss_gib);
    if (rc == 0) rc = summary_str(&t, tput_schema[TP_PRECISION].col.name, r->precision, sizeof r->precision);
    if (rc == 0) rc = summary_str(&t, tput_schema[TP_MODEL].col.name, r->model, sizeof r->model);
    if (rc == 0) rc = summary_str(&t, machine_cols[MC_CPU_MODEL], r->cpu, sizeof r->cpu);
    if (rc == 0) rc = summary_str(&t, machine_cols[MC_DATE_UTC], r->date, sizeof r->date);
    table_free(&t);
    return rc;
}

static int run_load(traj_run *r, const traj_input *in)
{
    memset(r, 0, sizeof *r);
    r->in = in;
    r->tokens_per_s = r->peak_rss_gib = r->tokens_per_usd = NAN;
    if (log_load(r, in->log_path) != 0) return CB_EFAIL;
    return in->summary_path[0] ? summary_load(r, in->summary_path) : 0;
}

/* Labels are unique and one of them is the baseline's. */
static int labels_check(traj_ctx *c)
{
    const traj_opts *o = c->o;
    const char *base = o->baseline ? o->baseline : TRAJ_DEFAULT_BASELINE;
    c->base = -1;
    for (int i = 0; i < o->nruns; i++) {
        for (int j = 0; j < i; j++)
            if (strcmp(o->runs[i].label, o->runs[j].label) == 0)
                return err_msg("flag '--run': label '%s' given twice (%s and %s)", o->runs[i].label,
                               o->runs[j].log_path, o->runs[i].log_path);
        if (strcmp(o->runs[i].label, base) == 0) c->base = i;
    }
    if (c->base < 0)
        return err_msg("no run labelled '%s' to compare against%s", base,
                       o->baseline ? " (flag '--baseline')"
                                   : ": label one run fp32, or name the baseline with --baseline LABEL");
    return 0;
}

/* The price per hour: --usd-per-hour, or the instance's row of the price table. */
static int price_resolve(traj_ctx *c)
{
    const traj_opts *o = c->o;
    c->usd_per_hour = NAN;
    if (isfinite(o->usd_per_hour)) {
        c->usd_per_hour = o->usd_per_hour;
        snprintf(c->price_source, sizeof c->price_source, "$%g per hour, as given (--usd-per-hour)", o->usd_per_hour);
        return 0;
    }
    if (!o->instance) {
        snprintf(c->price_source, sizeof c->price_source, "no price given (--instance TYPE or --usd-per-hour USD)");
        return 0;
    }
    char def[CB_PATH_MAX];
    price_table pt;
    if (!o->prices_path && machine_data_file(def, sizeof def, "prices.csv") != 0) return CB_EUSAGE;
    if (prices_load(&pt, o->prices_path ? o->prices_path : def) != 0) return CB_EFAIL;
    const char *opt = o->pricing ? o->pricing : "on_demand";
    const price_row *p = prices_find(&pt, o->instance, opt, o->region);
    if (p) {
        char stale[96];
        price_stale_suffix(p, stale, sizeof stale);
        c->usd_per_hour = p->usd_per_hour;
        snprintf(c->price_source, sizeof c->price_source,
                 "%.63s %.31s %.23s, $%g per hour (%.200s:%d, as of %.23s: %.150s)%.80s", p->instance, p->region,
                 p->option, p->usd_per_hour, pt.path, p->line, p->as_of, p->source, stale);
    }
    prices_free(&pt);
    return p ? 0 : CB_EUSAGE;
}

/* ------------------------------------------------------------------ comparison */

int trajectory_tail_steps(int n, double pct)
{
    double k = ceil((double)n * pct / 100.0 - 1e-9);
    if (k < 1) k = 1;
    return k > n ? n : (int)k;
}

void trajectory_tail_diff(const double *a, const double *b, int n, int k, double *mean, double *max)
{
    double sum = 0, mx = 0;
    for (int i = n - k; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        sum += d;
        if (d > mx) mx = d;
    }
    *mean = k > 0 ? sum / k : NAN;
    *max = k > 0 ? mx : NAN;
}

/* The same steps as the baseline, in the same order. */
static int runs_match(const traj_run *r, const traj_run *b)
{
    const char *rl = r->in->log_path, *bl = b->in->log_path;
    if (r->n != b->n)
        return err_msg("%s: %d steps, but the baseline '%s' (%s) has %d: the runs must cover the same steps", rl, r->n,
                       b->in->label, bl, b->n);
    for (int i = 0; i < r->n; i++)
        if (r->step[i] != b->step[i])
            return err_msg("%s:%d: column '%s': step %ld where the baseline '%s' has step %ld (%s:%d): the runs must "
                           "cover the same steps",
                           rl, r->line[i], step_log_cols[SL_STEP].name, r->step[i], b->in->label, b->step[i], bl,
                           b->line[i]);
    return 0;
}

static void run_compare(traj_run *r, const traj_run *b, int k, double usd_per_hour)
{
    double base_final = b->loss[b->n - 1];
    r->final_loss = r->loss[r->n - 1];
    r->final_pct = base_final > 0 ? 100.0 * (r->final_loss - base_final) / base_final : NAN;
    trajectory_tail_diff(r->loss, b->loss, r->n, k, &r->loss_mean, &r->loss_max);
    trajectory_tail_diff(r->gnorm, b->gnorm, r->n, k, &r->gn_mean, &r->gn_max);
    /* tokens/$ = tokens/s x 3600 / ($ per hour); unknown (NaN) without a throughput or a price */
    r->tokens_per_usd = r->tokens_per_s * 3600.0 / usd_per_hour;
}

static int ctx_load(traj_ctx *c)
{
    int rc = labels_check(c);
    if (rc == 0) rc = price_resolve(c);
    for (int i = 0; rc == 0 && i < c->o->nruns; i++) {
        rc = run_load(&c->runs[i], &c->o->runs[i]);
        c->n = i + 1;
    }
    if (rc != 0) return rc;
    const traj_run *b = &c->runs[c->base];
    for (int i = 0; i < c->n; i++) {
        if ((rc = runs_match(&c->runs[i], b)) != 0) return rc;
        const traj_run *r = &c->runs[i];
        if (r->model[0] && b->model[0] && strcmp(r->model, b->model) != 0)
            err_warn("run '%s' trained %s, the baseline '%s' %s: the trajectories are of different models",
                     r->in->label, r->model, b->in->label, b->model);
        if (r->cpu[0] && b->cpu[0] && strcmp(r->cpu, b->cpu) != 0)
            err_warn("run '%s' ran on %s, the baseline '%s' on %s: their tokens/s are of different machines",
                     r->in->label, r->cpu, b->in->label, b->cpu);
    }
    c->tail = trajectory_tail_steps(b->n, c->o->tail_pct);
    for (int i = 0; i < c->n; i++) run_compare(&c->runs[i], b, c->tail, c->usd_per_hour);
    return 0;
}

/* ------------------------------------------------------------------ output */

static int ctx_record(const traj_ctx *c, record *rec)
{
    const traj_run *b = &c->runs[c->base];
    record_init(rec, trajectory_cols, TJ_NCOLS);
    for (int col = TJ_USD_PER_HOUR; col < TJ_NCOLS; col++) record_csv_only(rec, col);
    record_note(rec,
                "baseline '%s' (%s): %d steps (%ld to %ld), matched by step number in every run; differences over the "
                "last %d steps (%ld to %ld: %g%% of them)",
                b->in->label, b->in->log_path, b->n, b->step[0], b->step[b->n - 1], c->tail, b->step[b->n - c->tail],
                b->step[b->n - 1], c->o->tail_pct);
    record_note(rec, "measured (costbench train): loss and grad_norm of every step (the logs); tokens_per_s (median "
                     "over the timed steps) and peak_rss_gib (the summaries); '-': unknown (no summary)");
    record_note(rec, "derived: tokens_per_usd = tokens_per_s x 3600 / usd_per_hour, priced at %s", c->price_source);
    record_note(rec, "derived: final_loss_vs_baseline_pct = 100 x (final_loss - the baseline's) / the baseline's; "
                     "*_abs_diff: mean and max of |x - the baseline's x| over the tail");
    for (int i = 0; i < c->n; i++) {
        const traj_run *r = &c->runs[i];
        int row = record_add_row(rec);
        if (row < 0) return CB_EFAIL;
        record_str(rec, row, TJ_LABEL, r->in->label);
        record_str(rec, row, TJ_PRECISION, r->precision[0] ? r->precision : NULL);
        const double v[][2] = {{TJ_STEPS, r->n}, {TJ_TOKS, r->tokens_per_s}, {TJ_TOKS_PER_USD, r->tokens_per_usd},
                               {TJ_RSS, r->peak_rss_gib}, {TJ_FINAL_LOSS, r->final_loss}, {TJ_LOSS_MEAN, r->loss_mean},
                               {TJ_LOSS_MAX, r->loss_max}, {TJ_GN_MEAN, r->gn_mean}, {TJ_GN_MAX, r->gn_max},
                               {TJ_FINAL_PCT, r->final_pct},
                               {TJ_USD_PER_HOUR, isfinite(r->tokens_per_usd) ? c->usd_per_hour : NAN}};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) record_num(rec, row, (int)v[k][0], v[k][1]);
        record_str(rec, row, TJ_PRICE_SOURCE, isfinite(r->tokens_per_usd) ? c->price_source : NULL);
        record_str(rec, row, TJ_LOG, r->in->log_path);
        record_str(rec, row, TJ_SUMMARY, r->in->summary_path[0] ? r->in->summary_path : NULL);
    }
    return 0;
}

/* The plots' subtitle: what the baseline's summary says of the runs, and the baseline. */
static void plot_subtitle(const traj_ctx *c, char *buf, size_t n)
{
    const traj_run *b = &c->runs[c->base];
    if (b->model[0] && b->date[0])
        snprintf(buf, n, "%.40s, measured %.10s on %.60s; one line per run, baseline %s", b->model, b->date,
                 b->cpu[0] ? b->cpu : "?", b->in->label);
    else snprintf(buf, n, "one line per run (costbench train --csv), baseline %s", b->in->label);
}

/* One panel, as chart_runs draws training curves (a line with markers per run, a linear x axis of
 * steps), but the baseline is a dashed black line drawn last, on top: runs that coincide with it
 * (fp32 and bf16-mixed often do, to the width of a line) would hide it otherwise. */
static int traj_chart(const traj_ctx *c, const char *path, const char *title, const char *ylabel, int logy, int gnorm,
                      const double *const *xs, const char *sub)
{
    plot_series series[TRAJ_MAX_RUNS];
    char base_label[TRAJ_MAX_LABEL + 16];
    int ns = 0, slot = 1;
    for (int i = 0; i < c->n; i++) {
        const traj_run *r = &c->runs[i];
        if (i == c->base) continue;
        if (slot == 7) slot++; /* the palette's black is the baseline's */
        series[ns++] = (plot_series){r->in->label, r->n, xs[i], gnorm ? r->gnorm : r->loss, 0, 0, 1 + (slot++ - 1) % 8};
    }
    const traj_run *b = &c->runs[c->base];
    snprintf(base_label, sizeof base_label, "%s (baseline)", b->in->label);
    series[ns++] = (plot_series){base_label, b->n, xs[c->base], gnorm ? b->gnorm : b->loss, 0, 1, 7};
    plot_spec sp = {title, sub, "optimizer step", ylabel, 0, logy, series, ns, NAN, NULL, 1};
    return plot_lines(path, &sp);
}

/* Whether the gradient norms span a decade or more: then the panel's y axis is logarithmic (a
 * spike would flatten every other line on a linear one). */
static int gnorm_logy(const traj_ctx *c)
{
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < c->n; i++)
        for (int k = 0; k < c->runs[i].n; k++)
            if (c->runs[i].gnorm[k] > 0) lo = fmin(lo, c->runs[i].gnorm[k]), hi = fmax(hi, c->runs[i].gnorm[k]);
    return hi >= 10 * lo;
}

static int plots_write(const traj_ctx *c, const char *dir)
{
    double *xs[TRAJ_MAX_RUNS] = {0};
    int rc = 0, logy = gnorm_logy(c);
    for (int i = 0; i < c->n && rc == 0; i++) {
        const traj_run *r = &c->runs[i];
        if (!(xs[i] = malloc((size_t)r->n * sizeof *xs[i]))) rc = err_msg("out of memory");
        for (int k = 0; rc == 0 && k < r->n; k++) xs[i][k] = (double)r->step[k];
    }
    char path[CB_PATH_MAX], sub[256];
    plot_subtitle(c, sub, sizeof sub);
    if (rc == 0) rc = path_fmt(path, sizeof path, "%s/%s", dir, outdir_trajectory.names[OUT_TRAJ_LOSS]);
    if (rc == 0)
        rc = traj_chart(c, path, "Training loss across precisions", "loss (nats per token)", 0, 0,
                        (const double *const *)xs, sub);
    if (rc == 0) rc = path_fmt(path, sizeof path, "%s/%s", dir, outdir_trajectory.names[OUT_TRAJ_GN]);
    if (rc == 0)
        rc = traj_chart(c, path, "Gradient norm across precisions (before clipping)",
                        logy ? "global L2 norm of the gradient (log scale)" : "global L2 norm of the gradient", logy, 1,
                        (const double *const *)xs, sub);
    for (int i = 0; i < c->n; i++) free(xs[i]);
    return rc;
}

/* trajectory.md's table: its columns and the size of a cell (an escaped precision doubles). */
#define TRAJ_MD_NCELLS 12
#define TRAJ_MD_CELL 96

/* A number with `prec` decimals, or "-" when unknown. */
static const char *md_num(char *buf, size_t n, double v, int prec)
{
    if (isfinite(v)) snprintf(buf, n, "%.*f", prec, v);
    else snprintf(buf, n, "-");
    return buf;
}

/* Tokens per dollar in millions ("376.3 M"), or "-" when unknown. */
static const char *md_millions(char *buf, size_t n, double v)
{
    if (isfinite(v)) snprintf(buf, n, "%.1f M", v / 1e6);
    else snprintf(buf, n, "-");
    return buf;
}

/* One row of a Markdown table: "| c0 | c1 | ... |". */
static void md_row(FILE *f, char (*cells)[TRAJ_MD_CELL], int n)
{
    for (int i = 0; i < n; i++) fprintf(f, "| %s ", cells[i]);
    fprintf(f, "|\n");
}

/* The cells of run i's row, every string from the command line or a file through markdown_escape. */
static void md_cells(const traj_ctx *c, int i, char (*cell)[TRAJ_MD_CELL])
{
    const traj_run *r = &c->runs[i];
    char label[2 * TRAJ_MAX_LABEL + 1];
    markdown_escape(label, sizeof label, r->in->label);
    if (i == c->base) snprintf(cell[0], TRAJ_MD_CELL, "**%s** (baseline)", label);
    else snprintf(cell[0], TRAJ_MD_CELL, "%s", label);
    markdown_escape(cell[1], TRAJ_MD_CELL, r->precision[0] ? r->precision : "-");
    snprintf(cell[2], TRAJ_MD_CELL, "%d", r->n);
    md_num(cell[3], TRAJ_MD_CELL, r->tokens_per_s, 0);
    md_millions(cell[4], TRAJ_MD_CELL, r->tokens_per_usd);
    md_num(cell[5], TRAJ_MD_CELL, r->peak_rss_gib, 3);
    md_num(cell[6], TRAJ_MD_CELL, r->final_loss, 4);
    if (isfinite(r->final_pct)) snprintf(cell[7], TRAJ_MD_CELL, "%+.3f%%", r->final_pct);
    else snprintf(cell[7], TRAJ_MD_CELL, "-");
    md_num(cell[8], TRAJ_MD_CELL, r->loss_mean, 4);
    md_num(cell[9], TRAJ_MD_CELL, r->loss_max, 4);
    md_num(cell[10], TRAJ_MD_CELL, r->gn_mean, 4);
    md_num(cell[11], TRAJ_MD_CELL, r->gn_max, 4);
}

static void md_table(FILE *f, const traj_ctx *c)
{
    fprintf(f, "| Run | Precision | Steps | Tokens/s (measured) | Tokens/$ (derived) | Peak RSS, GiB (measured) | "
               "Final loss (measured) | "
               "Final loss vs baseline (derived) | Loss, mean abs diff (derived) | Loss, max abs diff (derived) | "
               "Grad norm, mean abs diff (derived) | Grad norm, max abs diff (derived) |\n");
    fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < c->n; i++) {
        char cells[TRAJ_MD_NCELLS][TRAJ_MD_CELL];
        md_cells(c, i, cells);
        md_row(f, cells, TRAJ_MD_NCELLS);
    }
    fprintf(f, "\n");
}

static void md_body(FILE *f, const traj_ctx *c)
{
    const traj_run *b = &c->runs[c->base];
    char label[2 * TRAJ_MAX_LABEL + 1], cpu[2 * sizeof b->cpu], date[2 * sizeof b->date],
        price[2 * sizeof c->price_source];
    markdown_escape(label, sizeof label, b->in->label);
    markdown_escape(cpu, sizeof cpu, b->cpu[0] ? b->cpu : "the machine its summary names");
    markdown_escape(date, sizeof date, b->date);
    markdown_escape(price, sizeof price, c->price_source);
    fprintf(f, OUT_TRAJ_MD_TITLE "\n\n");
    fprintf(
        f,
        "%d runs of %d optimizer steps each, compared step by step (matched by step number) with the baseline **%s**; "
        "the differences are over the last %d steps (steps %ld to %ld: %g%% of the steps).\n\n",
        c->n, b->n, label, c->tail, b->step[b->n - c->tail], b->step[b->n - 1], c->o->tail_pct);
    md_table(f, c);
    fprintf(f,
            "**Measured** by `costbench train` (on %s%s%s): the training loss (nats per token) and the gradient norm "
            "(global L2 norm, "
            "before clipping) of every step, from each run's log; tokens/s (median over the timed steps) and peak RSS, "
            "from each run's summary. "
            "**Derived** here: tokens/$ = tokens/s x 3600 / $ per hour, priced at %s; final loss vs baseline = 100 x "
            "(final loss - the baseline's) / "
            "the baseline's; the mean and the maximum of |x - the baseline's x| over the tail's steps, for the loss "
            "and for the gradient norm. "
            "A `-`: unknown (the run has no summary file, or no price was given).\n\n",
            cpu, date[0] ? ", " : "", date, price);
    fprintf(f, "Files:\n\n");
    for (int i = 0; i < c->n; i++) {
        const traj_input *in = c->runs[i].in;
        if (in->summary_path[0])
            fprintf(f, "- `%s`: log `%s`, summary `%s`\n", in->label, in->log_path, in->summary_path);
        else fprintf(f, "- `%s`: log `%s`, no summary\n", in->label, in->log_path);
    }
    fprintf(f, "\n![Training loss against step, one line per run](loss.png)\n\n");
    fprintf(f, "![Gradient norm against step, one line per run](grad_norm.png)\n");
}

static int md_write(const traj_ctx *c, const char *dir)
{
    char path[CB_PATH_MAX];
    file_out o;
    if (path_fmt(path, sizeof path, "%s/%s", dir, outdir_trajectory.names[OUT_TRAJ_MD]) != 0) return CB_EUSAGE;
    int rc = file_out_begin(&o, path);
    if (rc != 0) return rc;
    FILE *f = fopen(o.tmp, "w");
    if (!f) {
        rc = err_msg("cannot write '%s': %s", o.path, strerror(errno));
        file_out_abort(&o);
        return rc;
    }
    md_body(f, c);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        rc = err_msg("cannot write '%s': %s", o.path, strerror(errno ? errno : EIO));
        file_out_abort(&o);
        return rc;
    }
    return file_out_commit(&o);
}

/* trajectory.csv (unless --csv names another file), the plots and trajectory.md into `dir`, the
 * temporary directory; `wrote` gets the bits of outdir_trajectory.names written. */
static int files_write(const traj_ctx *c, const record *rec, const char *dir, unsigned *wrote)
{
    char csv[CB_PATH_MAX];
    int rc = 0;
    if (!c->o->csv_path) {
        rc = path_fmt(csv, sizeof csv, "%s/%s", dir, outdir_trajectory.names[OUT_TRAJ_CSV]);
        if (rc == 0) rc = record_write_csv(rec, csv, NULL);
        if (rc == 0) *wrote |= 1u << OUT_TRAJ_CSV;
    }
    if (rc == 0) rc = plots_write(c, dir);
    if (rc == 0) *wrote |= 1u << OUT_TRAJ_LOSS | 1u << OUT_TRAJ_GN;
    if (rc == 0) rc = md_write(c, dir);
    if (rc == 0) *wrote |= 1u << OUT_TRAJ_MD;
    return rc;
}

/* The files, built in a temporary directory next to --out and renamed to it when complete, as
 * `report --out` does (report/outdir.h): only a directory costbench wrote is replaced. A --csv
 * FILE is written after, replaced as every --csv is (a temporary file renamed over it). */
static int ctx_write(const traj_ctx *c)
{
    char dir[CB_PATH_MAX], tmp[CB_PATH_MAX], csv[CB_PATH_MAX];
    unsigned wrote = 0;
    record rec;
    int rc = outdir_open(&outdir_trajectory, c->o->out_dir, dir, sizeof dir, tmp, sizeof tmp);
    if (rc) return rc;
    rc = ctx_record(c, &rec);
    if (rc == 0) rc = files_write(c, &rec, tmp, &wrote);
    rc = outdir_close(&outdir_trajectory, tmp, dir, wrote, rc);
    if (rc == 0 && c->o->csv_path) rc = record_write_csv(&rec, c->o->csv_path, NULL);
    if (rc == 0)
        rc = c->o->csv_path ? path_fmt(csv, sizeof csv, "%s", c->o->csv_path)
                            : path_fmt(csv, sizeof csv, "%s/%s", dir, outdir_trajectory.names[OUT_TRAJ_CSV]);
    if (rc == 0) {
        record_print(&rec, stdout);
        fprintf(stderr, "wrote %s/trajectory.md, %s, %s/loss.png, %s/grad_norm.png\n", dir, csv, dir, dir);
    }
    record_free(&rec);
    return rc;
}

int trajectory_run(const traj_opts *o)
{
    traj_ctx *c = calloc(1, sizeof *c);
    if (!c) return err_msg("out of memory");
    c->o = o;
    if (o->nruns < 1 || o->nruns > TRAJ_MAX_RUNS) {
        free(c);
        return err_usage("flag '--run': expected 1 to %d runs, got %d", TRAJ_MAX_RUNS, o->nruns);
    }
    int rc = ctx_load(c);
    if (rc == 0) rc = ctx_write(c);
    for (int i = 0; i < c->n; i++) run_free(&c->runs[i]);
    free(c);
    return rc;
}
