#include "step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../common/stats.h"
#include "../common/timer.h"

/* The summary: the throughput format's columns (common/schema.h) and the run's own. */
enum { SS_MODEL, SS_TP, SS_PP, SS_INSTANCES, SS_INSTANCE, SS_SEQ, SS_GBATCH, SS_MBATCH, SS_STEPS, SS_SEQS, SS_SEQS_MIN,
       SS_SEQS_MAX, SS_TOKS, SS_STEP_MS, SS_MFU, SS_HFU, SS_PEAK, SS_RECOMPUTE, SS_RSS, SS_EST, SS_SOURCE, SS_RANKS,
       SS_COMPUTE_MS, SS_COMM_MS, SS_EXPOSED_MS, SS_PRECISION, SS_SHARDING, SS_VP, SS_SEQ_PARALLEL, SS_ATTENTION,
               SS_DEVICE,
       SS_NCOLS };
static const rec_col step_summary_cols[SS_NCOLS] = {
    TPUT_MODEL, TPUT_TP, TPUT_PP, TPUT_INSTANCES, TPUT_INSTANCE_TYPE, TPUT_SEQ_LEN, TPUT_GLOBAL_BATCH, TPUT_MICRO_BATCH,
    {"steps_timed", "", REC_NUM, 0}, TPUT_SEQ_PER_S, TPUT_SEQ_PER_S_MIN, TPUT_SEQ_PER_S_MAX, TPUT_TOKENS_PER_S,
    {"step_ms", "ms", REC_NUM, 1}, TPUT_MFU, {"hfu", "%", REC_NUM, 1}, TPUT_PEAK_GFLOPS, TPUT_RECOMPUTE,
    TPUT_PEAK_RSS_GIB, {"estimate_gib", "GiB", REC_NUM, 3}, TPUT_SOURCE, TPUT_RANKS,
    {"compute_ms", "ms", REC_NUM, 1}, {"comm_ms", "ms", REC_NUM, 1}, {"exposed_comm_ms", "ms", REC_NUM, 1},
            TPUT_PRECISION,
    TPUT_SHARDING, TPUT_VP, TPUT_SEQUENCE_PARALLEL, TPUT_ATTENTION, TPUT_DEVICE,
};

const rec_col step_breakdown_cols[SB_NCOLS] = {
    {"kind", "", REC_STR, 0},        {"ms_per_step", "ms", REC_NUM, 1}, {"pct_of_step", "%", REC_NUM, 1},
    {"predicted_ms", "ms", REC_NUM, 1}, {"gap_pct", "%", REC_NUM, 1},   {"prediction", "", REC_STR, 0},
};

int step_records_init(step_records *r)
{
    record_init(&r->log, step_log_cols, SL_NCOLS);
    record_init(&r->summary, step_summary_cols, SS_NCOLS);
    for (int c = SS_VP; c <= SS_DEVICE; c++) record_csv_only(&r->summary, c); /* the same in every run here */
    record_init(&r->breakdown, step_breakdown_cols, SB_NCOLS);
    return 0;
}

void step_records_free(step_records *r)
{
    record_free(&r->log);
    record_free(&r->summary);
    record_free(&r->breakdown);
}

/* ---------------------------------------------------------------- the observer */

/* What the observer measured of each step (index: step - first step run). */
typedef struct {
    const step_opts *o;
    const calib *cal;
    gpt_model *m;
    dp_sync *dp;
    record *log;
    record_log csv; /* --csv FILE, rank 0: the rows written as they come */
    int print;
    char dp_note[512];    /* how the gradients were synchronised */
    long start, n;
    double t0, tokens_per_step, mflops, hflops;
    double *step_ms, *comm_ms, *exposed_ms, (*kind_ms)[GPT_KIND_COUNT];
} step_obs;

static void obs_begin(void *ctx, long step)
{
    (void)step;
    step_obs *s = ctx;
    gpt_profile_reset(s->m);
    s->t0 = timer_now_s();
}

static int obs_end(void *ctx, const train_step_result *r)
{
    step_obs *s = ctx;
    double dt = timer_now_s() - s->t0, comm_s = 0, exposed_s = 0;
    dp_sync_take_times(s->dp, &comm_s, &exposed_s);
    long i = s->n++;
    s->step_ms[i] = dt * 1e3, s->comm_ms[i] = comm_s * 1e3, s->exposed_ms[i] = exposed_s * 1e3;
    for (int k = 0; k < GPT_KIND_COUNT; k++) s->kind_ms[i][k] = s->m->prof.kind_s[k] * 1e3;
    int row = record_add_row(s->log);
    if (row < 0) return CB_EFAIL;
    double tps = s->tokens_per_step / dt, peak = s->cal->peak_gflops * 1e9;
    const double v[SL_NCOLS] = {(double)r->step, r->loss, r->grad_norm, r->lr, dt * 1e3, tps, tps / s->o->train.T,
                                mfu_pct(s->mflops, tps, peak), mfu_pct(s->hflops, tps, peak), comm_s * 1e3,
                                        exposed_s * 1e3};
    for (int c = 0; c < SL_NCOLS; c++) record_num(s->log, row, c, v[c]);
    if (s->print) record_stream_row(s->log, row, stdout);
    return record_log_add(&s->csv, s->log);
}

static int obs_init(step_obs *s, const step_opts *o, const calib *cal, gpt_model *m, dp_sync *dp, record *log,
        long start)
{
    memset(s, 0, sizeof *s);
    s->o = o, s->cal = cal, s->m = m, s->dp = dp, s->log = log, s->start = start;
    s->print = !o->quiet && o->train.rank == 0;
    if (o->train.ranks == 1) { /* nothing to communicate: the columns stay in the CSV only */
        record_csv_only(log, SL_COMM);
        record_csv_only(log, SL_EXPOSED);
    }
    s->tokens_per_step = (double)o->train.B * o->train.T * o->train.accum;
    s->mflops = model_flops_per_token(&o->cfg, o->train.T);
    s->hflops = model_hardware_flops_per_token(&o->cfg, o->train.T, o->recompute);
    size_t n = (size_t)(o->train.steps - start);
    s->step_ms = calloc(n, sizeof *s->step_ms);
    s->comm_ms = calloc(n, sizeof *s->comm_ms);
    s->exposed_ms = calloc(n, sizeof *s->exposed_ms);
    s->kind_ms = calloc(n, sizeof *s->kind_ms);
    if (!s->step_ms || !s->comm_ms || !s->exposed_ms || !s->kind_ms) return err_msg("out of memory");
    return 0;
}

static void obs_free(step_obs *s)
{
    free(s->step_ms), free(s->comm_ms), free(s->exposed_ms), free(s->kind_ms);
}

/* ---------------------------------------------------------------- summary and breakdown */

/* Median of x[0..n) (x is left as it was). */
static double median_of(const double *x, long n)
{
    if (n <= 0) return NAN;
    double *y = malloc((size_t)n * sizeof *y);
    if (!y) return NAN;
    memcpy(y, x, (size_t)n * sizeof *y);
    stats_summary s;
    stats_summarize(y, (int)n, &s);
    free(y);
    return s.median;
}

/* The steps the summary and breakdown cover: all but the first `discard` (all when too few ran). */
static long first_timed(const step_obs *s) { return s->o->discard < s->n ? s->o->discard : 0; }

/* The configuration columns of the summary: --recompute keeps each layer's input and recomputes
 * the rest (full); --zero 1 under mpirun shards the AdamW moments over the ranks (ZeRO-1); one
 * stage, no tensor parallelism (so no sequence parallelism); the attention kernel is tiled (flash,
 * kernels/attention.h); no device of data/devices.csv (the instance is this machine). */
static void summary_config(const step_opts *o, record *sum, int row)
{
    int zero1 = o->dp == DP_ZERO1 && o->train.ranks > 1;
    record_str(sum, row, SS_RECOMPUTE, tput_recomputes[o->recompute ? TPUT_RECOMPUTE_FULL : TPUT_RECOMPUTE_NONE]);
    record_str(sum, row, SS_SHARDING, tput_shardings[zero1 ? TPUT_SHARD_ZERO1 : TPUT_SHARD_NONE]);
    record_num(sum, row, SS_VP, 1);
    record_str(sum, row, SS_SEQ_PARALLEL, "false");
    record_str(sum, row, SS_ATTENTION, tput_attentions[TPUT_ATTN_FLASH]);
    record_str(sum, row, SS_DEVICE, "");
}

static int summary_row(const step_obs *s, const machine_info *mi, record *sum)
{
    const step_opts *o = s->o;
    long first = first_timed(s), nt = s->n - first;
    double *sps = malloc((size_t)nt * sizeof *sps);
    if (!sps) return err_msg("out of memory");
    for (long i = 0; i < nt; i++) sps[i] = s->tokens_per_step / o->train.T / (s->step_ms[first + i] / 1e3);
    stats_summary ss;
    stats_summarize(sps, (int)nt, &ss);
    free(sps);
    double med_ms = median_of(s->step_ms + first, nt), med_comm = median_of(s->comm_ms + first, nt);
    double rss = mem_peak_rss_bytes(), peak = s->cal->peak_gflops * 1e9, tps = ss.median * o->train.T;
    double mfu = mfu_pct(s->mflops, tps, peak), hfu = mfu_pct(s->hflops, tps, peak), peak_g = s->cal->peak_gflops;
    if (hfu > 100.0) { /* more than the peak: the peak is wrong, and a throughput row must not say otherwise */
        err_warn("MFU and HFU not reported: this run achieved %.0f%% of %s, so that peak is wrong (a disturbed "
                "probe?); rerun it, or give --peak-gflops",
                 hfu, s->cal->peak_note);
        mfu = hfu = peak_g = NAN;
    }
    int row = record_add_row(sum);
    if (row < 0) return CB_EFAIL;
    char src[256];
    snprintf(src, sizeof src, "measured here %s", mi->date_utc);
    record_str(sum, row, SS_MODEL, o->cfg.name);
    record_str(sum, row, SS_INSTANCE, CB_THIS_MACHINE);
    record_str(sum, row, SS_SOURCE, src);
    record_str(sum, row, SS_PRECISION, precision_name(o->prec));
    summary_config(o, sum, row);
    const double v[][2] = {
        {SS_TP, 1}, {SS_PP, 1}, {SS_INSTANCES, 1}, {SS_SEQ, o->train.T}, {SS_GBATCH,
                (double)o->train.B * o->train.accum},
        {SS_MBATCH, o->train.B}, {SS_STEPS, (double)nt}, {SS_SEQS, ss.median}, {SS_SEQS_MIN, ss.min}, {SS_SEQS_MAX,
                ss.max},
        {SS_TOKS, tps}, {SS_STEP_MS, med_ms}, {SS_MFU, mfu}, {SS_HFU, hfu},
        {SS_PEAK, peak_g}, {SS_RSS, rss > 0 ? rss / 1073741824.0 : NAN},
        {SS_EST, o->estimate_bytes / 1073741824.0}, {SS_RANKS, o->train.ranks}, {SS_COMPUTE_MS, med_ms - med_comm},
        {SS_COMM_MS, med_comm}, {SS_EXPOSED_MS, median_of(s->exposed_ms + first, nt)}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) record_num(sum, row, (int)v[i][0], v[i][1]);
    if (o->train.ranks > 1)
        record_note(sum, "%s (median %.1f ms a step, exposed %.1f ms)", s->dp_note, med_comm,
                median_of(s->exposed_ms + first, nt));
    record_note(sum, "median of %ld steps after discarding %ld; MFU = %.0f model FLOPs/token (6N + 12 L C T, PaLM "
            "appendix B) x tokens/s / %s",
                nt, first, s->mflops, s->cal->peak_note);
    if (rss > 0) /* /proc unreadable: the cell stays empty (unknown), never a measured 0 */
        record_note(sum, "peak RSS %.3f GiB = %.2fx the printed estimate of %.3f GiB", rss / 1073741824.0,
                rss / o->estimate_bytes,
                    o->estimate_bytes / 1073741824.0);
    return 0;
}

static void breakdown_row(record *brk, const char *kind, double ms, double step_ms, double pred, const char *how)
{
    int r = record_add_row(brk);
    if (r < 0) return;
    record_str(brk, r, SB_KIND, kind);
    record_num(brk, r, SB_MS, ms);
    record_num(brk, r, SB_PCT, 100.0 * ms / step_ms);
    record_num(brk, r, SB_PRED, pred);
    record_num(brk, r, SB_GAP, isfinite(pred) && pred > 0 ? 100.0 * (ms - pred) / pred : NAN);
    record_str(brk, r, SB_HOW, how);
}

/* Each kind's median time next to its prediction. "other" is what the model's own "other"
 * kernels and everything the kinds do not cover (data, the loop) took: the step's time less the
 * other kinds and the communication. */
static int breakdown_rows(const step_obs *s, record *brk)
{
    long first = first_timed(s), nt = s->n - first;
    double *col = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *col);
    if (!col) return err_msg("out of memory");
    for (long i = first; i < s->n; i++) {
        double attributed = 0;
        for (int k = 0; k < K_OTHER; k++) attributed += s->kind_ms[i][k];
        s->kind_ms[i][K_OTHER] = s->step_ms[i] - s->comm_ms[i] - attributed;
    }
    double med_ms = median_of(s->step_ms + first, nt), tot_pred = 0;
    int complete = s->o->train.ranks == 1;
    for (int k = 0; k < GPT_KIND_COUNT; k++) {
        for (long i = 0; i < nt; i++) col[i] = s->kind_ms[first + i][k];
        breakdown_row(brk, gpt_kind_names[k], median_of(col, nt), med_ms, s->cal->pred_ms[k], s->cal->how[k]);
        tot_pred += s->cal->pred_ms[k];
        complete = complete && isfinite(s->cal->pred_ms[k]);
    }
    free(col);
    if (s->o->train.ranks > 1)
        breakdown_row(brk, "comm_exposed", median_of(s->exposed_ms + first, nt), med_ms, NAN,
                      "gradient all-reduce the step waits for (measured)");
    breakdown_row(brk, "step", med_ms, med_ms, complete ? tot_pred : NAN,
            complete ? "sum of the predictions above" : NULL);
    record_note(brk, "ms_per_step: median over the timed steps of each kind's time; predicted_ms: what the "
            "microbenchmarks measured in this run predict for the same shapes");
    return 0;
}

/* ---------------------------------------------------------------- the run */

static int run_loop(const step_opts *o, const calib *cal, const machine_info *mi, gpt_model *m, train_opts *to,
                    step_records *rec, step_obs *obs)
{
    long start;
    uint64_t run_id;
    int rc = train_start(m, to, &start, &run_id);
    if (rc != 0) return rc;
    if (to->rank == 0 && to->resume_dir) fprintf(stderr, "costbench train: resumed from %s at step %ld\n",
            to->resume_dir, start);
    if (to->rank == 0 && to->init_path) fprintf(stderr, "costbench train: weights from %s\n", to->init_path);
    train_sync hooks;
    dp_sync *dp = dp_sync_new(o->dp, o->bucket_bytes, m, &hooks);
    if (!dp) return CB_EFAIL;
    rc = obs_init(obs, o, cal, m, dp, &rec->log, start);
    if (rc == 0 && o->log_csv && to->rank == 0) /* a resumed run's log continues after its checkpoint's step */
        rc = record_log_open(&obs->csv, &rec->log, o->log_csv, mi, to->resume_dir ? start : -1);
    if (rc == 0) {
        dp_sync_describe(dp, obs->dp_note, sizeof obs->dp_note);
        if (obs->print) record_stream_header(&rec->log, stdout);
        train_observer ob = {obs, obs_begin, obs_end};
        rc = train_run(m, to, hooks.ctx ? &hooks : NULL, &ob, start, run_id);
    }
    int crc = record_log_close(&obs->csv);
    if (rc == 0) rc = crc;
    obs->dp = NULL;
    dp_sync_free(dp);
    return rc;
}

/* --data opened into ds and its sampler built into sp for the run's steps x global batch
 * samples (to->data and to->sampler point at them), or synthetic tokens; a note on the log and
 * the summary says which. */
static int open_data(const step_opts *o, train_opts *to, dataset *ds, sampler *sp, step_records *rec)
{
    char note[1600];
    to->data = NULL;
    to->sampler = NULL;
    if (!o->data_path) {
        snprintf(note, sizeof note, "tokens: synthetic, uniform in [0, V) (--sampler has no effect without --data)");
    } else {
        if (dataset_open(ds, o->data_path) != 0) return CB_EFAIL;
        uint64_t num_samples = (uint64_t)to->steps * (uint64_t)to->B * (uint64_t)to->accum;
        if (sampler_init(sp, to->sampling, ds, to->T, num_samples, to->seed) != 0) {
            dataset_close(ds);
            return CB_EFAIL;
        }
        to->data = ds;
        to->sampler = sp;
        sampler_describe(sp, note, sizeof note);
    }
    record_note(&rec->log, "%s", note);
    record_note(&rec->summary, "%s", note);
    return 0;
}

int step_run(const step_opts *o, const calib *cal, const machine_info *mi, step_records *rec)
{
    gpt_model m;
    dataset ds;
    sampler sp;
    train_opts to = o->train;
    if (gpt_init(&m, &o->cfg, to.B, to.T, o->recompute, o->prec) != 0) return CB_EFAIL;
    if (open_data(o, &to, &ds, &sp, rec) != 0) {
        gpt_free(&m);
        return CB_EFAIL;
    }
    step_obs obs = {0};
    int rc = run_loop(o, cal, mi, &m, &to, rec, &obs);
    if (rc == 0) rc = summary_row(&obs, mi, &rec->summary);
    if (rc == 0) rc = breakdown_rows(&obs, &rec->breakdown);
    obs_free(&obs);
    if (to.data) {
        sampler_free(&sp);
        dataset_close(&ds);
    }
    gpt_free(&m);
    return rc;
}
