#include "plot.h"

#include <math.h>
#include <plplot.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"

/* Okabe-Ito palette (its yellow replaced by black, which reads on white), in cmap0 slots 1..8
 * (0 is the background); each series also gets its own marker. */
static const int palette[8][3] = {{0, 114, 178}, {230, 159, 0}, {0, 158, 115}, {204, 121, 167},
                                  {86, 180, 233}, {213, 94, 0}, {0, 0, 0}, {120, 94, 240}};
static const char *markers[8] = {"●", "▲", "■", "◆", "○", "△", "□", "◇"};
enum { COL_BG = 0, COL_AXIS = 9, COL_GRID = 10, COL_REF = 11 };

/* PLplot's plexit() exits the process after calling the handler: jump out instead. */
static jmp_buf plot_jmp;
static int plot_exit_handler(const char *msg)
{
    err_msg("plot: %s", msg);
    longjmp(plot_jmp, 1);
}

/* Log axes are drawn in log2 space with a tick per power of two (or every few), labelled with
 * plain numbers (0.5, 16, 512, 16384) or SI suffixes for large values, so that a curve spanning less
 * than a decade still gets labelled ticks. */
static double trx(double v, int log) { return log ? log2(v) : v; }
static double tr(double v, int log) { return log ? log2(v) : v; }

typedef struct {
    int logx, logy;
} axes_kind;

static void label_log2(PLINT axis, PLFLT value, char *label, PLINT length, PLPointer data)
{
    const axes_kind *k = data;
    int log = axis == PL_X_AXIS ? k->logx : axis == PL_Y_AXIS ? k->logy : 0;
    double v = log ? exp2(value) : value;
    if (!log && fabs(v) < 1e5) {
        snprintf(label, (size_t)length, "%g", fabs(v) < 1e-12 ? 0.0 : v);
        return;
    }
    if (fabs(v) < 1) snprintf(label, (size_t)length, "%g", v);
    else if (fabs(v) < 1e5) snprintf(label, (size_t)length, "%.0f", v);
    else if (fabs(v) < 1e9) snprintf(label, (size_t)length, "%.3gM", v / 1e6);
    else if (v < 1e12) snprintf(label, (size_t)length, "%.3gG", v / 1e9);
    else snprintf(label, (size_t)length, "%.3gT", v / 1e12);
}

/* Characters (not bytes) of a UTF-8 label. */
static int utf8_len(const char *s)
{
    int n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

int plot_lines(const char *path, const plot_spec *sp)
{
    const char *ext = strrchr(path, '.');
    const char *dev = ext && strcmp(ext, ".svg") == 0 ? "svgcairo" : "pngcairo";
    if (!ext || (strcmp(ext, ".png") != 0 && strcmp(ext, ".svg") != 0))
        return err_usage("plot '%s': expected a file name ending in .png or .svg", path);
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (int s = 0; s < sp->nseries; s++)
        for (int i = 0; i < sp->series[s].n; i++) {
            double x = sp->series[s].x[i], y = sp->series[s].y[i];
            if (!isfinite(x) || !isfinite(y) || (sp->logx && x <= 0) || (sp->logy && y <= 0)) continue;
            xmin = fmin(xmin, x), xmax = fmax(xmax, x), ymin = fmin(ymin, y), ymax = fmax(ymax, y);
        }
    if (isfinite(sp->hline)) ymin = fmin(ymin, sp->hline), ymax = fmax(ymax, sp->hline);
    if (!isfinite(xmin) || !isfinite(ymin)) return err_msg("plot '%s': no data to plot", path);
    double x0 = trx(xmin, sp->logx), x1 = trx(xmax, sp->logx), y0 = tr(ymin, sp->logy), y1 = tr(ymax, sp->logy);
    double dx = x1 > x0 ? 0.05 * (x1 - x0) : 0.5, dy = y1 > y0 ? 0.08 * (y1 - y0) : 0.5;
    x0 -= dx, x1 += dx;
    y1 += dy;
    y0 = sp->logy || sp->y_tight ? y0 - dy : (ymin >= 0 ? 0 : y0 - dy);

    char tmp[4200];
    if (path_fmt(tmp, sizeof tmp, "%s.tmp.%ld%s", path, (long)getpid(), ext) != 0) return CB_EUSAGE;
    int nl = sp->nseries + (isfinite(sp->hline) ? 1 : 0), nmax = 1;
    for (int s = 0; s < sp->nseries; s++)
        if (sp->series[s].n > nmax) nmax = sp->series[s].n;
    PLINT *opt = calloc((size_t)nl, sizeof *opt), *tcol = calloc((size_t)nl, sizeof *tcol),
          *lcol = calloc((size_t)nl, sizeof *lcol), *lsty = calloc((size_t)nl, sizeof *lsty),
          *scol = calloc((size_t)nl, sizeof *scol), *snum = calloc((size_t)nl, sizeof *snum);
    PLFLT *lw = calloc((size_t)nl, sizeof *lw), *ssc = calloc((size_t)nl, sizeof *ssc);
    const char **text = calloc((size_t)nl, sizeof *text), **sym = calloc((size_t)nl, sizeof *sym);
    double *px = malloc((size_t)nmax * sizeof *px), *py = malloc((size_t)nmax * sizeof *py);
    volatile int rc = 0;
    if (!opt || !tcol || !lcol || !lsty || !scol || !snum || !lw || !ssc || !text || !sym || !px || !py) {
        rc = err_msg("out of memory");
        goto done_nopl;
    }
    if (setjmp(plot_jmp) != 0) {
        rc = CB_EFAIL;
        goto done;
    }
    plsexit(plot_exit_handler);
    plsdev(dev);
    plsfnam(tmp);
    plsetopt("geometry", "1200x800");
    plscolbg(255, 255, 255);
    for (int i = 0; i < 8; i++) plscol0(i + 1, palette[i][0], palette[i][1], palette[i][2]);
    plscol0(COL_AXIS, 0, 0, 0);
    plscol0(COL_GRID, 200, 200, 200);
    plscol0(COL_REF, 120, 120, 120);
    plinit();
    pladv(0);
    /* room on the right for the legend, from its longest label */
    int maxlen = sp->hline_label && isfinite(sp->hline) ? utf8_len(sp->hline_label) : 0;
    for (int i = 0; i < sp->nseries; i++)
        if (sp->series[i].label && utf8_len(sp->series[i].label) > maxlen) maxlen = utf8_len(sp->series[i].label);
    /* long labels get a smaller legend font rather than a clipped legend */
    double lscale = maxlen > 30 ? fmax(0.55, 30.0 / maxlen) : 1.0;
    double right = fmin(0.80, fmax(0.50, 0.97 - (0.11 + 0.0112 * lscale * maxlen)));
    plvpor(0.13, right, 0.11, 0.86);
    plwind(x0, x1, y0, y1);
    plschr(0, 1.1);
    /* grid first, then the axes over it */
    plcol0(COL_GRID);
    pllsty(2);
    double xtick = sp->logx ? fmax(1.0, ceil((x1 - x0) / 10.0)) : 0;
    double ytick = sp->logy ? fmax(1.0, ceil((y1 - y0) / 8.0)) : 0;
    axes_kind ak = {sp->logx, sp->logy};
    plslabelfunc(label_log2, &ak); /* every axis: plain numbers and SI suffixes, never "(x10^7)" */
    plbox("g", xtick, 0, "g", ytick, 0);
    pllsty(1);
    plcol0(COL_AXIS);
    plbox("bcnsto", xtick, sp->logx ? 1 : 0, "bcnstvo", ytick, sp->logy ? 1 : 0);
    plslabelfunc(NULL, NULL);
    plmtex("b", 3.2, 0.5, 0.5, sp->xlabel);
    plmtex("l", 5.0, 0.5, 0.5, sp->ylabel); /* clear of tick labels like 10.96 */
    /* title and subtitle centred on the page, not on the (narrower) plot area */
    plvpor(0.04, 0.96, 0.11, 0.86);
    plwind(0, 1, 0, 1);
    plschr(0, 1.3);
    plmtex("t", 2.6, 0.5, 0.5, sp->title);
    plschr(0, 0.75);
    if (sp->subtitle) plmtex("t", 1.3, 0.5, 0.5, sp->subtitle);
    plvpor(0.13, right, 0.11, 0.86);
    plwind(x0, x1, y0, y1);
    plschr(0, 1.1);

    for (int s = 0; s < sp->nseries; s++) {
        const plot_series *se = &sp->series[s];
        int col = se->color > 0 ? 1 + (se->color - 1) % 8 : 1 + s % 8;
        int m = 0;
        for (int i = 0; i < se->n; i++) {
            double x = se->x[i], y = se->y[i];
            if (!isfinite(x) || !isfinite(y) || (sp->logx && x <= 0) || (sp->logy && y <= 0)) continue;
            px[m] = trx(x, sp->logx), py[m] = tr(y, sp->logy), m++;
        }
        plcol0(col);
        plwidth(2.5);
        if (se->dashed) pllsty(2);
        if (!se->points_only && m > 1) plline(m, px, py);
        pllsty(1);
        plschr(0, 1.0);
        if (!se->dashed) {
            /* long series: a marker every few points, so that the line stays visible */
            int every = se->points_only || m <= 40 ? 1 : (m + 19) / 20, k = 0;
            for (int i = 0; i < m; i += every) px[k] = px[i], py[k] = py[i], k++;
            plstring(k, px, py, markers[s % 8]);
        }
        plschr(0, 1.1);
        opt[s] = se->points_only ? PL_LEGEND_SYMBOL : se->dashed ? PL_LEGEND_LINE : (PL_LEGEND_LINE | PL_LEGEND_SYMBOL);
        tcol[s] = COL_AXIS, lcol[s] = col, lsty[s] = se->dashed ? 2 : 1, lw[s] = 2.5, scol[s] = col, ssc[s] = 1.0, snum[s] = 1;
        text[s] = se->label, sym[s] = se->dashed ? "" : markers[s % 8];
    }
    if (isfinite(sp->hline)) {
        double hx[2] = {x0, x1}, hy[2] = {tr(sp->hline, sp->logy), tr(sp->hline, sp->logy)};
        plcol0(COL_REF);
        plwidth(2.0);
        pllsty(3);
        plline(2, hx, hy);
        pllsty(1);
        int s = sp->nseries;
        opt[s] = PL_LEGEND_LINE;
        tcol[s] = COL_AXIS, lcol[s] = COL_REF, lsty[s] = 3, lw[s] = 2.0, text[s] = sp->hline_label ? sp->hline_label : "reference";
        sym[s] = "";
    }
    PLFLT lw_out, lh_out;
    plwidth(1.0);
    plschr(0, 0.9);
    pllegend(&lw_out, &lh_out, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX, PL_POSITION_RIGHT | PL_POSITION_OUTSIDE, 0.02,
             0.0, 0.08, 0, COL_AXIS, 1, 0, 0, nl, opt, 1.0, lscale, 2.0, 0.0, tcol, text, NULL, NULL,
             NULL, NULL, lcol, lsty, lw, scol, ssc, snum, sym);
done:
    plend();
done_nopl:
    free(px), free(py), free(opt), free(tcol), free(lcol), free(lsty), free(scol), free(snum), free(lw), free(ssc);
    free(text), free(sym);
    if (rc != 0) {
        unlink(tmp);
        return rc;
    }
    if (access(tmp, F_OK) != 0) return err_msg("plot '%s': PLplot wrote nothing (driver %s missing?)", path, dev);
    return file_commit(tmp, path);
}
