/* charts.h: the project's standard charts, drawn with plot.h: sgemm GFLOP/s curves, training
 * curves (loss and gradient norm against step, several runs overlaid). Callers pass plain arrays,
 * so benchmarks (from their records) and the report (from CSV files) draw the same charts. */
#ifndef CB_CHARTS_H
#define CB_CHARTS_H

typedef struct {
    const char *phase; /* transformer shapes: the matmul's phase ("forward", ...) */
    double n, k, m, gflops;
} chart_mm_point;

/* sweep: one line per K, GFLOP/s against N; transformer: one point set per phase against FLOPs
 * per call. peak_gflops (NaN: none) is drawn as a reference line. */
int chart_matmul(const char *path, const chart_mm_point *pts, int n, int transformer, double peak_gflops,
                 const char *subtitle);

typedef struct {
    const char *label;
    int n;
    const double *step, *y;
} chart_run;

/* One chart of a per-step quantity (loss, gradient norm) for several runs. */
int chart_runs(const char *path, const char *title, const char *ylabel, const chart_run *runs, int nruns,
               const char *subtitle);

#endif
