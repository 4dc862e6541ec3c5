/* runner.h: the shared benchmark runner. Each benchmark describes a case (what to run, how
 * to check it); the runner checks once, warms up, calibrates repetitions so that a sample
 * lasts at least min_sample_s, and samples until it has min_samples and min_time_s, or until
 * max_time_s has been spent sampling (with at least one sample: a slow case gets fewer samples,
 * and says so in runner_result.capped), then summarises seconds per call (median, min, max, cv%). */
#ifndef CB_RUNNER_H
#define CB_RUNNER_H

#include <stddef.h>

#include "../common/stats.h"

typedef struct {
    int min_samples;     /* default 5 */
    int max_samples;     /* default 200 */
    double min_time_s;   /* total timed per case, default 0.2 */
    double max_time_s;   /* stop sampling past this, even short of min_samples, default 20 */
    double min_sample_s; /* a sample is at least this long (clock resolution), default 1e-3 */
    int warmup;          /* untimed calls before sampling, default 1 */
} runner_opts;

typedef struct {
    const char *name;
    void (*run)(void *ctx);
    /* Called once before timing; returns 0 or fills msg and returns non-zero. May be NULL. */
    int (*check)(void *ctx, char *msg, size_t msgsz);
    /* Called before every sample, untimed (e.g. flushing the caches); a sample is then one call.
     * May be NULL. */
    void (*before)(void *ctx);
} bench_case;

typedef struct {
    stats_summary s; /* seconds per call */
    int reps;        /* calls per sample */
    double total_s;  /* time spent sampling */
    int capped;      /* max_time_s ended the sampling before min_samples */
} runner_result;

void runner_defaults(runner_opts *o);
/* Returns 0, or CB_EFAIL when the check fails (its message printed). */
int runner_run(const runner_opts *o, const bench_case *c, void *ctx, runner_result *res);
/* Deterministic values in [-1, 1) from a hash of the index, filled by the threads that will use
 * the pages (first touch). */
void runner_fill(float *x, size_t n, unsigned seed);
/* Sweep progress on stderr, only when stderr is a terminal; i == n clears the line. */
void runner_progress(int i, int n, const char *label);

#endif
