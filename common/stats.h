/* stats.h: summaries of repeated measurements (GSL). */
#ifndef CB_STATS_H
#define CB_STATS_H

typedef struct {
    int n;
    double median, min, max, mean, sd, cv_pct, p10, p90;
} stats_summary;

/* Summarises x[0..n) (n >= 1); x is sorted in place. */
void stats_summarize(double *x, int n, stats_summary *s);
/* Call once at start-up: GSL must never abort the process. */
void stats_init(void);

#endif
