/* trajectory.h: loss and gradient-norm trajectories of training runs compared across precisions
 * (`costbench trajectory`): the quality half of "tokens/$ without losing model quality".
 * Reads per-step logs (`train --csv`, the step log format of common/schema.h) and, optionally,
 * each run's summary (`train --summary-csv`: tokens_per_s, peak_rss_gib, precision); matches the
 * runs' steps by step number against a baseline run and writes, into a directory that appears
 * complete or not at all and replaces only one costbench wrote (report/outdir.h, as report --out):
 *   loss.png, grad_norm.png  every run overlaid, one line per label
 *   trajectory.md            the comparison as a Markdown table, each figure labelled measured or derived
 *   trajectory.csv           the same rows (trajectory_cols below), or the file given as csv_path
 * and prints the aligned table with '#' context lines on stdout. */
#ifndef CB_TRAJECTORY_H
#define CB_TRAJECTORY_H

#include "../common/record.h"

#define TRAJ_MAX_RUNS 16
#define TRAJ_MAX_LABEL 32
/* The baseline when none is named: the run labelled so. */
#define TRAJ_DEFAULT_BASELINE "fp32"

/* One --run: LABEL=LOG[,SUMMARY]. */
typedef struct {
    char label[TRAJ_MAX_LABEL + 1]; /* letters, digits and . _ + - */
    char log_path[4096];
    char summary_path[4096];        /* "": none (throughput, RSS and tokens/$ unknown) */
} traj_input;

typedef struct {
    const traj_input *runs;
    int nruns;
    const char *baseline;    /* label of the run compared against; NULL: TRAJ_DEFAULT_BASELINE */
    double tail_pct;         /* differences over the last tail_pct % of the steps, in (0, 100] */
    const char *instance;    /* price the runs as this instance type (data/prices.csv), or NULL */
    const char *pricing;     /* its pricing option (on_demand when NULL) */
    const char *region;      /* NULL: the only region the price is listed in */
    const char *prices_path; /* NULL: data/prices.csv */
    double usd_per_hour;     /* or this price per hour of the machine (NaN: none) */
    const char *out_dir;     /* absent, empty or written by costbench trajectory (report/outdir.h) */
    const char *csv_path;    /* NULL: out_dir/trajectory.csv */
} traj_opts;

/* The columns of trajectory.csv (and of the table on stdout), one row per run. */
enum { TJ_LABEL, TJ_PRECISION, TJ_STEPS, TJ_TOKS, TJ_TOKS_PER_USD, TJ_RSS, TJ_FINAL_LOSS, TJ_LOSS_MEAN, TJ_LOSS_MAX,
       TJ_GN_MEAN, TJ_GN_MAX, TJ_FINAL_PCT, TJ_USD_PER_HOUR, TJ_PRICE_SOURCE, TJ_LOG, TJ_SUMMARY, TJ_NCOLS };
extern const rec_col trajectory_cols[TJ_NCOLS];

/* Parses "LABEL=LOG[,SUMMARY]" (split at the first '=' and the first ',' after it) into in.
 * Returns 0 or CB_EUSAGE (one error naming the flag). */
int trajectory_input_parse(const char *spec, traj_input *in);

/* The number of tail steps of n steps: ceil(n * pct / 100), at least 1 and at most n. */
int trajectory_tail_steps(int n, double pct);
/* The mean and the maximum of |a[i] - b[i]| over the last k of n elements. */
void trajectory_tail_diff(const double *a, const double *b, int n, int k, double *mean, double *max);

/* Loads every run, compares it with the baseline, writes the files and prints the table.
 * Returns 0, CB_EFAIL (bad input: one error naming file:line and column) or CB_EUSAGE. */
int trajectory_run(const traj_opts *o);

#endif
