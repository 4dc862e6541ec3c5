/* plot.h: line plots to PNG or SVG files with PLplot (the one place PLplot is called from):
 * white background, colour-blind-safe palette (Okabe-Ito), grid, legend, titles and axis
 * labels with units, optional log axes and a labelled horizontal reference line. */
#ifndef CB_PLOT_H
#define CB_PLOT_H

enum { PLOT_REFERENCE = 2, PLOT_LONG_DASH = 3 };
#define PLOT_GREY 9 /* a colour for guide lines (bands, tolerances), outside the palette's 8 */

typedef struct {
    const char *label;
    int n;
    const double *x, *y;
    int points_only; /* markers without a line (measured points) */
    int dashed;      /* 1: a dashed line without markers (ideal scaling, a model's curve);
                        PLOT_REFERENCE: a horizontal reference level at y[0] (x unused), a dotted
                        grey line across the plot with its label written above it, not in the legend (a peak);
                        PLOT_LONG_DASH: a long-dashed line without markers (a tolerance band's edge) */
    int color;       /* palette slot 1..8, or PLOT_GREY; 0: by position */
} plot_series;

typedef struct {
    const char *title, *subtitle, *xlabel, *ylabel; /* subtitle may be NULL */
    int logx, logy;
    const plot_series *series;
    int nseries;
    double hline;            /* NaN for none */
    const char *hline_label;
    int y_tight;             /* linear y axis from the data's range instead of from 0 */
} plot_spec;

/* Writes `path` (.png or .svg) atomically: into a temporary file next to it (created first, so
 * that an unwritable path is one error with its errno), checked to be whole (a PNG's chunks up
 * to IEND at its end, an SVG's closing </svg>, as many bytes as PLplot wrote) before it replaces
 * `path`; on any failure the earlier file stays and no temporary file is left. Returns 0,
 * CB_EFAIL or CB_EUSAGE (another extension, a path too long), one error line printed. */
int plot_lines(const char *path, const plot_spec *spec);

#endif
