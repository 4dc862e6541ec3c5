/* steady.c: the steady state of a log's step lines (steady.h): the batch ramp-up, the metric a
 * row publishes, the warm-up dropped, the rest summarised. */
#include "steady.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/stats.h"

double log_step_figure(const log_step *s, pub_metric m)
{
    switch (m) {
    case PUB_STEP_TIME_S: return s->step_s;
    case PUB_SEQ_PER_S: return s->samples_per_s;
    case PUB_TOKENS_PER_S: return s->tokens_per_s;
    case PUB_TOKENS_PER_S_PER_DEVICE: return s->tokens_per_s_per_device;
    case PUB_TFLOPS_PER_DEVICE: return s->tflops_per_device;
    case PUB_MFU_PCT: return s->mfu_pct;
    }
    return NAN;
}

/* 1 when the last kept step prints metric m and the run states what m needs (need_batch: the
 * global batch, so that a step time becomes seq/s). */
static int metric_usable(const log_run *r, const log_steady *st, pub_metric m, int need_batch)
{
    if (need_batch && r->global_batch <= 0) return 0;
    if ((m == PUB_TFLOPS_PER_DEVICE || m == PUB_MFU_PCT) && !*r->flop_convention) return 0;
    if (m == PUB_MFU_PCT && !(r->peak_tflops > 0)) return 0;
    return st->n > 0 && log_step_figure(&r->steps[st->keep[st->n - 1]], m) > 0;
}

int log_metric_pick(const log_run *r, const log_steady *st, const char *path, pub_metric *m)
{
    static const pub_metric order[7] = {PUB_STEP_TIME_S,       PUB_SEQ_PER_S, PUB_TOKENS_PER_S,
                                        PUB_TOKENS_PER_S_PER_DEVICE, PUB_TFLOPS_PER_DEVICE, PUB_MFU_PCT,
                                        PUB_STEP_TIME_S};
    for (int k = 0; k < 7; k++)
        if (metric_usable(r, st, order[k], k == 0)) return *m = order[k], 0;
    return err_usage("%s:%d: the last step line prints none of step time, samples/s, tokens/s, tokens/s per device, "
                     "TFLOP/s per device (with a FLOP convention) or MFU (with its peak)",
                     path, st->n ? r->steps[st->keep[st->n - 1]].line : 1);
}

/* Drops the kept steps that do not print the metric (lines logged before a throughput window
 * filled, Composer's first batches), counted in st->unprinted. */
static void steady_printed(const log_run *r, log_steady *st)
{
    int n = 0;
    for (int k = 0; k < st->n; k++)
        if (log_step_figure(&r->steps[st->keep[k]], st->metric) > 0) st->keep[n++] = st->keep[k];
    st->unprinted = st->n - n;
    st->n = n;
}

/* The warm-up at the start of the figures v[0..n): how many leading values to drop.
 * Start-up: with 3 or more steps the first is dropped (allocation, first-touch, caches) when the
 * log starts with the run (`startup`: the log's first step line numbered within its own log
 * interval, or unnumbered); a log whose first line is past its log interval is a mid-run excerpt,
 * and its first line a steady one.
 * Then, with 6 or more lines left, the reference is the last half of the rest (a run settles; its
 * end is its steady state): its median m and its median absolute deviation. Leading values outside
 * m +- band are warm-up, band = max(5%, 3 x 1.4826 MAD / m): 1.4826 MAD estimates the standard
 * deviation of normal noise without being moved by outliers, so the band is 3 sigma of the run's
 * own noise, never tighter than 5% (a quiet run would otherwise call its ordinary jitter warm-up).
 * The drop stops at the first value inside the band and never reaches into the reference half.
 * With 2 to 5 lines left there is no band (a median of one or two lines is no reference): all are
 * kept. */
static int warmup_detect(const double *v, int n, int startup, char *why, size_t wn)
{
    if (n < 3) return snprintf(why, wn, "none: fewer than 3 steps, the median of all %d kept", n), 0;
    int first = startup ? 1 : 0;
    const char *head = startup ? "the first step (start-up)" : "none as start-up (the first line is past its log interval)";
    if (n - first < 6)
        return snprintf(why, wn, "%s; %d lines left: too few for a band, the median of all of them", head, n - first),
               first;
    int half = (n - first) / 2, ref0 = n - ((n - first) - half);
    int nr = n - ref0;
    double *x = malloc(2 * (size_t)nr * sizeof *x);
    if (!x) return snprintf(why, wn, "%s", head), first;
    memcpy(x, v + ref0, (size_t)nr * sizeof *x);
    stats_summary s;
    stats_summarize(x, nr, &s);
    for (int k = 0; k < nr; k++) x[nr + k] = fabs(v[ref0 + k] - s.median);
    stats_summary d;
    stats_summarize(x + nr, nr, &d);
    free(x);
    double band = fmax(0.05, 3.0 * 1.4826 * d.median / s.median);
    int w = first;
    while (w < ref0 && fabs(v[w] - s.median) > band * s.median) w++;
    snprintf(why, wn,
             "%s%s: %d more outside +-%.1f%% of the median %.6g of the last %d (max(5%%, 3 x "
             "1.4826 MAD/median))",
             head, w > first ? " and" : ", none other", w - first, 100 * band, s.median, nr);
    return w;
}

/* 1 when step s covers the run's first iterations (a log that starts with the run): its number
 * unknown, or within its own log interval (Megatron's iteration 10 of interval 10 averages
 * iterations 1-10; iteration 71 of interval 1 is mid-run). */
static int step_is_startup(const log_step *s)
{
    return s->iter <= 0 || s->iter <= (s->iters > 0 ? s->iters : 1);
}

/* The kept steps' figures summarised into st. */
static int steady_stats(const log_run *r, const char *path, log_steady *st)
{
    double *x = malloc((size_t)st->n * sizeof *x);
    if (!x) return err_msg("out of memory");
    st->iters = 0;
    for (int k = 0; k < st->n; k++) {
        const log_step *s = &r->steps[st->keep[k]];
        x[k] = log_step_figure(s, st->metric);
        if (__builtin_add_overflow(st->iters, s->iters > 0 ? s->iters : 1, &st->iters)) {
            free(x);
            return err_usage("%s:%d: the step lines kept up to here average over more than %ld iterations", path,
                             s->line, LONG_MAX);
        }
    }
    stats_summary s;
    stats_summarize(x, st->n, &s);
    st->median = s.median, st->min = s.min, st->max = s.max;
    st->iqr_pct = 100.0 * (s.p75 - s.p25) / s.median;
    free(x);
    return 0;
}

/* A step line's number and index, ordered by number, then by index (qsort). */
typedef struct {
    long iter;
    int k;
} step_key;

static int key_cmp(const void *a, const void *b)
{
    const step_key *x = a, *y = b;
    return x->iter != y->iter ? (x->iter > y->iter) - (x->iter < y->iter) : (x->k > y->k) - (x->k < y->k);
}

/* dup[k] = 1 for a step line whose step number an earlier line already gave (the same step printed
 * by several ranks): counted once. Returns how many. */
static int steady_dups(const log_run *r, char *dup)
{
    step_key *ix = malloc((size_t)r->nsteps * sizeof *ix);
    int n = 0;
    memset(dup, 0, (size_t)r->nsteps);
    if (!ix) return 0;
    for (int k = 0; k < r->nsteps; k++) ix[k] = (step_key){r->steps[k].iter, k};
    qsort(ix, (size_t)r->nsteps, sizeof *ix, key_cmp);
    for (int k = 1; k < r->nsteps; k++)
        if (ix[k].iter > 0 && ix[k].iter == ix[k - 1].iter) dup[ix[k].k] = 1, n++;
    free(ix);
    return n;
}

/* The steps whose global batch is the last step's (those before it: ramp-up) into st->keep, each
 * step number once (st->dup: the repeats dropped). */
static int steady_ramp(const log_run *r, log_steady *st)
{
    char *dup = malloc((size_t)r->nsteps);
    if (!dup) return err_msg("out of memory");
    st->dup = steady_dups(r, dup);
    long last = r->steps[r->nsteps - 1].global_batch;
    st->n = 0;
    for (int k = 0; k < r->nsteps; k++)
        if (!dup[k] && r->steps[k].global_batch == last) st->keep[st->n++] = k;
    st->ramp = r->nsteps - st->dup - st->n;
    free(dup);
    return 0;
}

int log_steady_compute(const log_run *r, long skip, const char *path, log_steady *st)
{
    memset(st, 0, sizeof *st);
    st->nlines = r->nsteps;
    if (r->nsteps == 0) return err_usage("%s:1: no step lines", path);
    if (!(st->keep = malloc((size_t)r->nsteps * sizeof *st->keep))) return err_msg("out of memory");
    int rc = steady_ramp(r, st);
    if (rc == 0) rc = log_metric_pick(r, st, path, &st->metric);
    if (rc != 0) return rc;
    steady_printed(r, st);
    st->auto_warm = skip < 0 && r->stated_warmup < 0;
    if (skip >= 0) {
        st->warm = skip < st->n ? (int)skip : st->n;
        snprintf(st->why, sizeof st->why, "--skip-steps %ld", skip);
    } else if (r->stated_warmup >= 0) { /* the framework's own choice, where its log states one */
        st->warm = r->stated_warmup < st->n ? r->stated_warmup : st->n;
        snprintf(st->why, sizeof st->why, "the %d the log's own summary leaves out", r->stated_warmup);
    } else {
        double *v = malloc((size_t)st->n * sizeof *v);
        if (!v) return err_msg("out of memory");
        for (int k = 0; k < st->n; k++) v[k] = log_step_figure(&r->steps[st->keep[k]], st->metric);
        st->warm = warmup_detect(v, st->n, step_is_startup(&r->steps[0]), st->why, sizeof st->why);
        free(v);
    }
    if (st->warm >= st->n)
        return err_usage("%s:%d: no step line left after the warm-up: %d step lines, %d repeated step numbers, %d of "
                         "another global batch, %d without %s, %d dropped by %s",
                         path, r->steps[r->nsteps - 1].line, st->nlines, st->dup, st->ramp, st->unprinted,
                         pub_metric_names[st->metric], st->warm, st->why);
    memmove(st->keep, st->keep + st->warm, (size_t)(st->n - st->warm) * sizeof *st->keep);
    st->n -= st->warm;
    return steady_stats(r, path, st);
}

void log_steady_free(log_steady *st)
{
    free(st->keep);
    st->keep = NULL;
}
