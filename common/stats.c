#include "stats.h"

#include "err.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
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
    s->p25 = gsl_stats_quantile_from_sorted_data(x, 1, (size_t)n, 0.25);
    s->p75 = gsl_stats_quantile_from_sorted_data(x, 1, (size_t)n, 0.75);
    s->p90 = gsl_stats_quantile_from_sorted_data(x, 1, (size_t)n, 0.90);
    s->mean = gsl_stats_mean(x, 1, (size_t)n);
    s->sd = n > 1 ? gsl_stats_sd_m(x, 1, (size_t)n, s->mean) : 0.0;
    s->cv_pct = s->mean != 0 ? 100.0 * s->sd / s->mean : 0.0;
}

typedef struct {
    stats_residual_fn fn;
    void *ctx;
    int p, n;
} fit_ctx;

static int fit_f(const gsl_vector *x, void *data, gsl_vector *f)
{
    const fit_ctx *c = data;
    double xv[8], fv[256];
    for (int i = 0; i < c->p; i++) xv[i] = gsl_vector_get(x, (size_t)i);
    if (c->fn(xv, fv, c->ctx) != 0) return GSL_EDOM;
    for (int i = 0; i < c->n; i++) {
        if (!isfinite(fv[i])) return GSL_EDOM;
        gsl_vector_set(f, (size_t)i, fv[i]);
    }
    return GSL_SUCCESS;
}

int stats_fit_nls(stats_residual_fn fn, void *ctx, int p, int n, double *x, stats_fit_result *res)
{
    memset(res, 0, sizeof *res);
    if (p < 1 || p > 8 || n < p || n > 256)
        return err_msg("fit: %d parameters from %d points is not a fit this code does", p, n);
    fit_ctx c = {fn, ctx, p, n};
    gsl_multifit_nlinear_fdf fdf = {0};
    fdf.f = fit_f;
    fdf.df = NULL; /* finite differences */
    fdf.n = (size_t)n;
    fdf.p = (size_t)p;
    fdf.params = &c;
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, (size_t)n, (size_t)p);
    gsl_vector *x0 = gsl_vector_alloc((size_t)p);
    gsl_matrix *cov = gsl_matrix_alloc((size_t)p, (size_t)p);
    if (!w || !x0 || !cov) {
        if (w) gsl_multifit_nlinear_free(w);
        gsl_vector_free(x0);
        gsl_matrix_free(cov);
        return err_msg("fit: out of memory");
    }
    for (int i = 0; i < p; i++) gsl_vector_set(x0, (size_t)i, x[i]);
    int rc = 0, info = 0;
    int st = gsl_multifit_nlinear_init(x0, &fdf, w);
    if (st == GSL_SUCCESS) st = gsl_multifit_nlinear_driver(200, 1e-10, 1e-10, 1e-12, NULL, NULL, &info, w);
    /* GSL_EMAXITER with a finite solution still is the best point found; anything else failed */
    if (st != GSL_SUCCESS && st != GSL_EMAXITER) {
        rc = err_msg("fit: least squares failed (%s)", gsl_strerror(st));
    } else {
        gsl_vector *sol = gsl_multifit_nlinear_position(w), *f = gsl_multifit_nlinear_residual(w);
        double chisq;
        gsl_blas_ddot(f, f, &chisq);
        gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov);
        double scale = n > p ? sqrt(chisq / (n - p)) : 0.0;
        for (int i = 0; i < p; i++) {
            x[i] = gsl_vector_get(sol, (size_t)i);
            res->se[i] = scale * sqrt(fabs(gsl_matrix_get(cov, (size_t)i, (size_t)i)));
        }
        res->chisq = chisq;
        res->iterations = (int)gsl_multifit_nlinear_niter(w);
        res->converged = st == GSL_SUCCESS;
    }
    gsl_multifit_nlinear_free(w);
    gsl_vector_free(x0);
    gsl_matrix_free(cov);
    return rc;
}
