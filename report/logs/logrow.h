/* logrow.h: a training log read by its parser (logimport.h) as one row of the published-runs
 * schema (data/reference/published/SCHEMA.md): which steps are the steady state, their figures,
 * the metric the row publishes, and the row itself, written and checked the way published_load
 * (published.h) reads it. */
#ifndef CB_LOGROW_H
#define CB_LOGROW_H

#include <stddef.h>
#include <stdio.h>

#include "logimport.h"
#include "../formats/published.h"

/* The steady state of a run's step lines. */
typedef struct {
    int *keep;         /* indices into log_run.steps of the steps kept, in order */
    int n;             /* how many */
    int nlines;        /* step lines in the log */
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
 * detected, see logrow.c), the rest summarised. Returns 0, or
 * CB_EUSAGE after an error naming path (no step left: how many there were). */
int log_steady_compute(const log_run *r, long skip, const char *path, log_steady *st);
void log_steady_free(log_steady *st);

/* When `name` is a preset of data/models.csv: r's arch from the preset's family and, when `shape`,
 * the shape fields r leaves unset (layers, d_model, heads, kv_heads, ffn_dim, vocab, params). */
void log_preset_fill(log_run *r, const char *name, int shape);

/* One published-runs row as text, its columns in the schema's order (pub_cols of published.h). */
typedef struct {
    char cell[PUB_NCOLS][600];
} logrow;

/* The row of run r at steady state st: id, source (already worded by the caller), the run's
 * configuration, metric and value, seq_per_s where it follows from the batch or the sequence
 * length, notes (the other figures' medians, the spread, what the log notes). */
void logrow_build(const log_run *r, const log_steady *st, const char *id, const char *source, logrow *row);
/* The columns published_load needs that the row leaves empty, as "device, devices" into buf ("":
 * none). */
void logrow_missing(const logrow *row, char *buf, size_t n);
/* The row checked by published_row_check (published.h), the loader's own rules, as line 2 of the
 * file `shown` (its line under the header): 0, or CB_EUSAGE after its error (naming `shown` and the
 * column) and a hint that it is the imported row (CB_EFAIL: the devices cannot be read). */
int logrow_check(const logrow *row, const char *shown);
/* `comments` (each written as "# ..."), the header and the row to f (CSV, quoted where needed). */
void logrow_print(const logrow *row, const char *const *comments, int ncomments, FILE *f);
/* --out: a new file gets the comments, the header and the row; an existing published-runs file
 * gets the row appended in its own column order, after checking that the id is new and that the row
 * is complete (an incomplete row may only start a new file: its comments say what it lacks). The
 * whole text is loaded back from memory through published_load_text (as `path`) before it is written
 * to a temporary file and renamed into place: a file it goes into stays readable, never
 * half-written. Returns 0, CB_EUSAGE (an incomplete row for an existing file, a row the loader
 * refuses, a duplicate id, a file of another schema: one error naming path:line; the file is
 * unchanged) or CB_EFAIL (cannot write). */
int logrow_save(const logrow *row, const char *const *comments, int ncomments, const char *path);

#endif
