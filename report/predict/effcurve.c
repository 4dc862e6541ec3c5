/* effcurve.c: e(K, N) on a measured GEMM curve (formats/matmulcsv.h) or the assumed curve (see effcurve.h). */
#include "effcurve.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Position of v on the ascending axis xs: the cell i and weight w of xs[i + 1] in log space,
 * clamped to the ends. */
static void axis_locate(const double *xs, int n, double v, int *i, double *w, int *clamped)
{
    *i = 0, *w = 0;
    if (n == 1 || v <= xs[0]) {
        if (v < xs[0] || (n == 1 && v != xs[0])) *clamped = 1;
        return;
    }
    if (v >= xs[n - 1]) {
        if (v > xs[n - 1]) *clamped = 1;
        *i = n - 2, *w = 1;
        return;
    }
    while (xs[*i + 1] < v) (*i)++;
    *w = log(v / xs[*i]) / log(xs[*i + 1] / xs[*i]);
}

double scale_eff(const scale_eff_curve *c, double K, double N, int *clamped)
{
    int dummy = 0;
    if (!clamped) clamped = &dummy;
    if (c == NULL || c->nk == 0) {
        if (K < SCALE_EFF_MIN || N < SCALE_EFF_MIN) *clamped = 1;
        K = fmax(K, SCALE_EFF_MIN), N = fmax(N, SCALE_EFF_MIN);
        return 1.0 / (1.0 + SCALE_EFF_K0 / K) / (1.0 + SCALE_EFF_N0 / N);
    }
    int ik, in;
    double wk, wn;
    axis_locate(c->k, c->nk, K, &ik, &wk, clamped);
    axis_locate(c->n, c->nn, N, &in, &wn, clamped);
    int ik1 = c->nk > 1 ? ik + 1 : ik, in1 = c->nn > 1 ? in + 1 : in;
    double lo = (1 - wn) * c->e[ik][in] + wn * c->e[ik][in1], hi = (1 - wn) * c->e[ik1][in] + wn * c->e[ik1][in1];
    return (1 - wk) * lo + wk * hi;
}

void scale_eff_range(const scale_eff_curve *c, char *buf, size_t n)
{
    if (c == NULL || c->nk == 0)
        snprintf(buf, n, "K %g.. and N %g.. (the assumed curve's range)", SCALE_EFF_MIN, SCALE_EFF_MIN);
    else snprintf(buf, n, "K %g..%g and N %g..%g (measured)", c->k[0], c->k[c->nk - 1], c->n[0], c->n[c->nn - 1]);
}
