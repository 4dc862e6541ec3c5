#include "runner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../common/err.h"
#include "../common/timer.h"

void runner_defaults(runner_opts *o)
{
    o->min_samples = 5;
    o->max_samples = 200;
    o->min_time_s = 0.2;
    o->max_time_s = 20.0;
    o->min_sample_s = 1e-3;
    o->warmup = 1;
}

int runner_run(const runner_opts *o, const bench_case *c, void *ctx, runner_result *res)
{
    if (c->check) {
        char msg[512] = "";
        if (c->check(ctx, msg, sizeof msg) != 0) return err_msg("%s: check failed: %s", c->name, msg);
    }
    double t0 = timer_now_s();
    for (int i = 0; i < o->warmup; i++) c->run(ctx);
    double once = o->warmup > 0 ? (timer_now_s() - t0) / o->warmup : 0;
    if (once <= 0) {
        t0 = timer_now_s();
        c->run(ctx);
        once = timer_now_s() - t0;
    }
    int reps = 1;
    if (!c->before && once < o->min_sample_s) reps = (int)ceil(o->min_sample_s / (once > 1e-9 ? once : 1e-9));
    if (reps > 1000000) reps = 1000000;
    int cap = o->max_samples > o->min_samples ? o->max_samples : o->min_samples;
    double *x = malloc((size_t)cap * sizeof *x);
    if (!x) return err_msg("out of memory");
    int n = 0;
    double total = 0;
    while (n < cap) {
        if (c->before) c->before(ctx);
        double a = timer_now_s();
        for (int r = 0; r < reps; r++) c->run(ctx);
        double dt = timer_now_s() - a;
        x[n++] = dt / reps;
        total += dt;
        if (n >= o->min_samples && total >= o->min_time_s) break;
        if (total >= o->max_time_s) break;
    }
    res->capped = n < o->min_samples;
    stats_summarize(x, n, &res->s);
    res->reps = reps;
    res->total_s = total;
    free(x);
    return 0;
}

void runner_progress(int i, int n, const char *label)
{
    if (!isatty(STDERR_FILENO)) return;
    if (i >= n) fprintf(stderr, "\r\033[K");
    else fprintf(stderr, "\r\033[K[%d/%d] %s", i + 1, n, label);
    fflush(stderr);
}

void runner_fill(float *x, size_t n, unsigned seed)
{
    long len = (long)n;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < len; i++) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        x[i] = (float)((h & 0xffff) / 32768.0 - 1.0);
    }
}
