#include "charts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "plot.h"

enum { MAX_SERIES = 32 };

int chart_matmul(const char *path, const chart_mm_point *pts, int n, int transformer, double peak_gflops, const char *subtitle)
{
    double *xs = malloc((size_t)(n ? n : 1) * sizeof *xs), *ys = malloc((size_t)(n ? n : 1) * sizeof *ys);
    plot_series series[MAX_SERIES];
    char labels[MAX_SERIES][48];
    int ns = 0, used = 0, rc;
    if (!xs || !ys) {
        free(xs), free(ys);
        return err_msg("out of memory");
    }
    for (int i = 0; i < n && ns < MAX_SERIES; i++) {
        char key[48];
        if (transformer) snprintf(key, sizeof key, "%s", pts[i].phase ? pts[i].phase : "");
        else snprintf(key, sizeof key, "K = %.0f", pts[i].k);
        int seen = 0;
        for (int j = 0; j < ns; j++)
            if (strcmp(labels[j], key) == 0) seen = 1;
        if (seen) continue;
        int s = ns++;
        snprintf(labels[s], sizeof labels[s], "%s", key);
        series[s] = (plot_series){labels[s], 0, xs + used, ys + used, transformer, 0, 0};
        for (int k = i; k < n; k++) {
            char key2[48];
            if (transformer) snprintf(key2, sizeof key2, "%s", pts[k].phase ? pts[k].phase : "");
            else snprintf(key2, sizeof key2, "K = %.0f", pts[k].k);
            if (strcmp(key, key2) != 0) continue;
            xs[used] = transformer ? 2.0 * pts[k].n * pts[k].k * pts[k].m : pts[k].n;
            ys[used] = pts[k].gflops;
            used++;
            series[s].n++;
        }
    }
    char peak_label[64];
    snprintf(peak_label, sizeof peak_label, "FMA peak %.0f GFLOP/s", peak_gflops);
    plot_spec sp = {transformer ? "fp32 sgemm throughput of one training step's matmuls" : "fp32 sgemm throughput, (N x K) @ (K x K)",
                    subtitle, transformer ? "FLOPs per call" : "N = tokens per device (rows of X)", "GFLOP/s (median)", 1, 0,
                    series, ns, isfinite(peak_gflops) && peak_gflops > 0 ? peak_gflops : NAN, peak_label, 0};
    rc = plot_lines(path, &sp);
    free(xs), free(ys);
    return rc;
}

int chart_runs(const char *path, const char *title, const char *ylabel, const chart_run *runs, int nruns, const char *subtitle)
{
    plot_series series[MAX_SERIES];
    int ns = 0;
    for (int i = 0; i < nruns && ns < MAX_SERIES; i++)
        series[ns++] = (plot_series){runs[i].label, runs[i].n, runs[i].step, runs[i].y, 0, 0, 0};
    plot_spec sp = {title, subtitle, "optimizer step", ylabel, 0, 0, series, ns, NAN, NULL, 1};
    return plot_lines(path, &sp);
}
