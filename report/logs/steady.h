/* steady.h: the steady state of a training log's step lines (a log_run, logimport.h): the steps
 * of the last global batch, the metric the row publishes, the warm-up dropped (stated by the log,
 * given by --skip-steps, or detected: warmup_detect in steady.c), and the median and spread of
 * the rest. logrow.h makes the published-runs row of it. */
#ifndef CB_STEADY_H
#define CB_STEADY_H

#include "logimport.h"
#include "../formats/published.h"

/* The steady state of a run's step lines. */
typedef struct {
    int *keep;         /* indices into log_run.steps of the steps kept, in order */
    int n;             /* how many */
    int nlines;        /* step lines in the log */
    int dup;           /* dropped: a step number an earlier line gave (the same step printed by several ranks) */
    int ramp;          /* dropped: a global batch other than the last step's (batch ramp-up) */
    int unprinted;     /* dropped: lines that do not print the metric (before a throughput window filled) */
    int warm;          /* dropped: warm-up (the first `warm` of the others) */
    int auto_warm;     /* 1: the warm-up was detected; 0: --skip-steps, or the log's own summary stated it */
    long iters;        /* optimizer steps the kept lines cover (each line's `iters`) */
    pub_metric metric; /* the figure the row publishes (log_metric_pick) */
    double median, min, max, iqr_pct; /* of the metric over the kept steps; iqr_pct: Q3 - Q1 in % of the median */
    char why[256];     /* the warm-up rule as applied */
} log_steady;

/* The step's figure in metric m (step_time_s: step_s; seq_per_s: samples_per_s; ...), NaN when the
 * line does not print it. */
double log_step_figure(const log_step *s, pub_metric m);
/* The metric a row of r publishes: the first of step_time_s (when the global batch is known),
 * seq_per_s, tokens_per_s, tokens_per_s_per_device, tflops_per_device (with a FLOP convention),
 * mfu_pct (with a convention and a peak), step_time_s (the batch unknown: seq_per_s is then left
 * empty) that the last kept step of `st` prints (the steady state's end; earlier lines without it
 * are dropped). Returns 0, or CB_EUSAGE after an error naming the log's line when it prints none. */
int log_metric_pick(const log_run *r, const log_steady *st, const char *path, pub_metric *m);
/* The steady state of r's steps: the batch ramp-up dropped, the metric picked, the lines without
 * it dropped, then `skip` leading steps
 * (skip < 0: the warm-up the log's own summary states, log_run.stated_warmup, else the one
 * detected, see steady.c), the rest summarised. Returns 0, or
 * CB_EUSAGE after an error naming path (no step left: how many there were). */
int log_steady_compute(const log_run *r, long skip, const char *path, log_steady *st);
void log_steady_free(log_steady *st);

#endif
