#include "stats.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

void stats_init(void) { gsl_set_error_handler_off(); }

void stats_summarize(double *x, int n, stats_summary *s)
{
    gsl_sort(x, 1, (size_t)n);
    s->n = n;
    s->min = x[0];
    s->max = x[n - 1];
    s->median = gsl_stats_median_from_sorted_data(x, 1, (size_t)n);
    s->p10 = gsl_stats_quantile_from_sorted_data(x, 1, (size_t)n, 0.10);
    s->p90 = gsl_stats_quantile_from_sorted_data(x, 1, (size_t)n, 0.90);
    s->mean = gsl_stats_mean(x, 1, (size_t)n);
    s->sd = n > 1 ? gsl_stats_sd_m(x, 1, (size_t)n, s->mean) : 0.0;
    s->cv_pct = s->mean != 0 ? 100.0 * s->sd / s->mean : 0.0;
}
