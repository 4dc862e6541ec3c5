#include "charts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "plot.h"

enum { MAX_SERIES = 32 };

enum { MAX_VARIANTS = 4 };

/* The distinct variants of the points, bf16 first (drawn solid, as MosaicML's bf16 profile). */
static int mm_variants(const chart_mm_point *pts, int n, const char **v)
{
    int nv = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            const char *x = pts[i].variant && *pts[i].variant ? pts[i].variant : "";
            if ((strncmp(x, "bf16", 4) == 0) != (pass == 0)) continue;
            int seen = 0;
            for (int j = 0; j < nv; j++) seen |= strcmp(v[j], x) == 0;
            if (!seen && nv < MAX_VARIANTS) v[nv++] = x;
        }
    return nv;
}

static void mm_key(const chart_mm_point *p, int transformer, char *key, size_t n)
{
    if (transformer) snprintf(key, n, "%s", p->phase ? p->phase : "");
    else snprintf(key, n, "K = %.0f", p->k);
}

/* The chart's title: the variants that ran, or fp32 sgemm for files that do not say. */
static void mm_title(char *t, size_t n, const char **v, int nv, int transformer)
{
    const char *what = transformer ? "throughput of one training step's matmuls" : "throughput, (N x K) @ (K x K)";
    if (nv == 1 && !*v[0]) {
        snprintf(t, n, "fp32 sgemm %s", what);
        return;
    }
    int l = snprintf(t, n, "matmul %s: ", what);
    for (int i = 0; i < nv && l > 0 && (size_t)l < n; i++)
        l += snprintf(t + l, n - (size_t)l, "%s%s", i ? ", " : "", *v[i] ? v[i] : "?");
}

int chart_matmul(const char *path, const chart_mm_point *pts, int n, int transformer, const chart_ref *refs, int nrefs,
                 const char *subtitle)
{
    double *xs = malloc((size_t)(n ? n : 1) * sizeof *xs), *ys = malloc((size_t)(n ? n : 1) * sizeof *ys);
    double ry[MAX_SERIES];
    plot_series series[MAX_SERIES];
    char labels[MAX_SERIES][80], keys[MAX_SERIES][48];
    const char *variants[MAX_VARIANTS];
    int ns = 0, nkeys = 0, used = 0, rc, nv = mm_variants(pts, n, variants);
    if (!xs || !ys) {
        free(xs), free(ys);
        return err_msg("out of memory");
    }
    /* keys (K or phase) in order of appearance: one colour each */
    for (int i = 0; i < n && nkeys < MAX_SERIES; i++) {
        char key[48];
        mm_key(&pts[i], transformer, key, sizeof key);
        int seen = 0;
        for (int j = 0; j < nkeys; j++) seen |= strcmp(keys[j], key) == 0;
        if (!seen) snprintf(keys[nkeys++], sizeof keys[0], "%s", key);
    }
    for (int kk = 0; kk < nkeys; kk++)
        for (int vi = 0; vi < nv && ns < MAX_SERIES - nrefs; vi++) {
            int s = ns, cnt = 0;
            for (int i = 0; i < n; i++) {
                char key[48];
                mm_key(&pts[i], transformer, key, sizeof key);
                const char *v = pts[i].variant && *pts[i].variant ? pts[i].variant : "";
                if (strcmp(key, keys[kk]) != 0 || strcmp(v, variants[vi]) != 0) continue;
                xs[used + cnt] = transformer ? 2.0 * pts[i].n * pts[i].k * pts[i].m : pts[i].n;
                ys[used + cnt] = pts[i].gflops;
                cnt++;
            }
            if (!cnt) continue;
            /* a legend label (keys are under 48 bytes; a long variant name is cut) */
            if (nv > 1) snprintf(labels[s], sizeof labels[s], "%.47s, %.28s", keys[kk], variants[vi]);
            else snprintf(labels[s], sizeof labels[s], "%.47s", keys[kk]);
            series[ns++] = (plot_series){
                labels[s], cnt, xs + used, ys + used, transformer, nv > 1 && vi > 0 && !transformer, 1 + kk % 8};
            used += cnt;
        }
    for (int r = 0; r < nrefs && ns < MAX_SERIES; r++) {
        if (!(isfinite(refs[r].gflops) && refs[r].gflops > 0)) continue;
        ry[ns] = refs[r].gflops;
        series[ns] = (plot_series){refs[r].label, 1, ry + ns, ry + ns, 0, PLOT_REFERENCE, 0};
        ns++;
    }
    char title[160];
    mm_title(title, sizeof title, variants, nv, transformer);
    plot_spec sp = {title,
                    subtitle,
                    transformer ? "FLOPs per call" : "N = tokens per device (rows of X)",
                    "GFLOP/s (median)",
                    1,
                    0,
                    series,
                    ns,
                    NAN,
                    NULL,
                    0};
    rc = plot_lines(path, &sp);
    free(xs), free(ys);
    return rc;
}

int chart_runs(const char *path, const char *title, const char *ylabel, const chart_run *runs, int nruns,
               const char *subtitle)
{
    plot_series series[MAX_SERIES];
    int ns = 0;
    for (int i = 0; i < nruns && ns < MAX_SERIES; i++)
        series[ns++] = (plot_series){runs[i].label, runs[i].n, runs[i].step, runs[i].y, 0, 0, 0};
    plot_spec sp = {title, subtitle, "optimizer step", ylabel, 0, 0, series, ns, NAN, NULL, 1};
    return plot_lines(path, &sp);
}

/* The guide lines of a validation chart over [lo, hi]: y = x, and y = (1 +- 10%) x, (1 +- 25%) x. */
static int val_guides(plot_series *se, double lo, double hi, double (*gx)[2], double (*gy)[5][2])
{
    static const double f[5] = {1.0, 1.10, 0.90, 1.25, 0.75};
    (*gx)[0] = lo, (*gx)[1] = hi;
    for (int k = 0; k < 5; k++) (*gy)[k][0] = f[k] * lo, (*gy)[k][1] = f[k] * hi;
    se[0] = (plot_series){"predicted = published", 2, *gx, (*gy)[0], 0, 1, 7};
    se[1] = (plot_series){"±10%", 2, *gx, (*gy)[1], 0, 1, PLOT_GREY};
    se[2] = (plot_series){NULL, 2, *gx, (*gy)[2], 0, 1, PLOT_GREY};
    se[3] = (plot_series){"±25%", 2, *gx, (*gy)[3], 0, PLOT_LONG_DASH, PLOT_GREY};
    se[4] = (plot_series){NULL, 2, *gx, (*gy)[4], 0, PLOT_LONG_DASH, PLOT_GREY};
    return 5;
}

int chart_validate(const char *path, const chart_val_set *sets, int nsets, const char *subtitle)
{
    plot_series se[MAX_SERIES];
    double lo = INFINITY, hi = 0, gx[2], gy[5][2];
    int ns = 0;
    for (int i = 0; i < nsets && ns < MAX_SERIES - 5; i++) {
        for (int k = 0; k < sets[i].n; k++) {
            double a = sets[i].published[k], b = sets[i].predicted[k];
            if (!(a > 0 && b > 0 && isfinite(a) && isfinite(b))) continue;
            lo = fmin(lo, fmin(a, b)), hi = fmax(hi, fmax(a, b));
        }
        se[ns++] = (plot_series){sets[i].label, sets[i].n, sets[i].published, sets[i].predicted, 1, 0, 0};
    }
    if (!(hi > 0)) return err_msg("plot '%s': no row has a prediction to plot", path);
    ns += val_guides(se + ns, lo / 1.3, hi * 1.3, &gx, &gy);
    plot_spec sp = {"predicted against published training throughput", subtitle, "published throughput (seq/s)",
                    "predicted throughput (seq/s)", 1, 1, se, ns, NAN, NULL, 0};
    return plot_lines(path, &sp);
}
