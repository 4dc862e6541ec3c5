/* stats.h: summaries of repeated measurements and least-squares fits (GSL: the one place it is
 * called from). */
#ifndef CB_STATS_H
#define CB_STATS_H

typedef struct {
    int n;
    double median, min, max, mean, sd, cv_pct, p10, p25, p75, p90;
} stats_summary;

/* Summarises x[0..n) (n >= 1); x is sorted in place. */
void stats_summarize(double *x, int n, stats_summary *s);
/* Call once at start-up: GSL must never abort the process. */
void stats_init(void);

/* Residuals of a model at parameters x[0..p): f[0..n). Returns 0, or non-zero when x is outside
 * the model's domain. */
typedef int (*stats_residual_fn)(const double *x, double *f, void *ctx);

typedef struct {
    int iterations, converged;
    double chisq;    /* sum of squared residuals at the solution */
    double se[8];    /* standard error of each parameter (covariance scaled by chisq/(n-p) when n > p) */
} stats_fit_result;

/* Non-linear least squares (GSL trust region, Levenberg-Marquardt, finite-difference Jacobian):
 * minimises sum f_i(x)^2 over p <= 8 parameters from x (updated in place) with n >= p residuals.
 * Returns 0 or CB_EFAIL (an error printed: the fit did not converge). */
int stats_fit_nls(stats_residual_fn fn, void *ctx, int p, int n, double *x, stats_fit_result *res);

#endif
