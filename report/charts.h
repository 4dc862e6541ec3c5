/* charts.h: the project's standard charts, drawn with plot.h: sgemm GFLOP/s curves, training
 * curves (loss and gradient norm against step, several runs overlaid). Callers pass plain arrays,
 * so benchmarks (from their records) and the report (from CSV files) draw the same charts. */
#ifndef CB_CHARTS_H
#define CB_CHARTS_H

typedef struct {
    const char *phase;   /* transformer shapes: the matmul's phase ("forward", ...) */
    const char *variant; /* dtype and backend ("bf16 onednn"); NULL or "" when a file does not say */
    double n, k, m, gflops;
} chart_mm_point;

/* A reference level drawn across the chart (a peak). */
typedef struct {
    const char *label;
    double gflops;
} chart_ref;

/* sweep: one line per K (and variant), GFLOP/s against N; transformer: one point set per phase
 * (and variant) against FLOPs per call. Where several variants ran, a K keeps its colour, bf16
 * is drawn solid with markers and fp32 dashed, and the legend names dtype and backend. Each
 * reference (a peak of one precision; nrefs may be 0) is a labelled dotted line. */
int chart_matmul(const char *path, const chart_mm_point *pts, int n, int transformer, const chart_ref *refs, int nrefs,
                 const char *subtitle);

typedef struct {
    const char *label;
    int n;
    const double *step, *y;
} chart_run;

/* One chart of a per-step quantity (loss, gradient norm) for several runs. */
int chart_runs(const char *path, const char *title, const char *ylabel, const chart_run *runs, int nruns,
               const char *subtitle);

/* One file's points of a validation: published and predicted seq/s of its rows. */
typedef struct {
    const char *label;
    int n;
    const double *published, *predicted;
} chart_val_set;

/* Predicted against published seq/s, log-log, one marker shape (and colour) per set, with the
 * line predicted = published and the +-10% and +-25% bands' edges. */
int chart_validate(const char *path, const chart_val_set *sets, int nsets, const char *subtitle);

#endif
