#include "plot.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <plplot.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/err.h"
#include "../common/files.h"

/* Okabe-Ito palette (its yellow replaced by black, which reads on white), in cmap0 slots 1..8
 * (0 is the background); each series also gets its own marker. */
static const int palette[8][3] = {{0, 114, 178}, {230, 159, 0}, {0, 158, 115}, {204, 121, 167},
                                  {86, 180, 233}, {213, 94, 0}, {0, 0, 0}, {120, 94, 240}};
static const char *markers[8] = {"●", "▲", "■", "◆", "○", "△", "□", "◇"};
enum { COL_BG = 0, COL_AXIS = 9, COL_GRID = 10, COL_REF = 11 };

/* PLplot's plexit() exits the process after calling the handler: jump out instead. The handler
 * gets no context of its own, so the file being drawn is kept here for its message. */
static struct {
    jmp_buf env;
    const char *path;
} plot_exit;

static int plot_exit_handler(const char *msg)
{
    err_msg("plot '%s': %s", plot_exit.path ? plot_exit.path : "?", msg);
    longjmp(plot_exit.env, 1);
}

/* Log axes are drawn in log2 space with a tick per power of two (or every few), labelled with
 * plain numbers (0.5, 16, 512, 16384) or SI suffixes for large values, so that a curve spanning less
 * than a decade still gets labelled ticks. */
static double axis_tr(double v, int log) { return log ? log2(v) : v; }

/* A point is drawn when finite, and positive on a log axis. */
static int point_shown(const plot_spec *sp, double x, double y)
{
    return isfinite(x) && isfinite(y) && !(sp->logx && x <= 0) && !(sp->logy && y <= 0);
}

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

/* The plotted window in drawing space (log2 of the value on a log axis): the data's range (and
 * the reference line's), with a margin; a linear y axis starts at 0 unless the data are negative
 * or the spec asks for a tight axis. */
typedef struct {
    double x0, x1, y0, y1;
} plot_window;

/* Returns 0, or -1 when no point can be drawn. */
static int plot_window_of(const plot_spec *sp, plot_window *w)
{
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (int s = 0; s < sp->nseries; s++)
        for (int i = 0; i < sp->series[s].n; i++) {
            double x = sp->series[s].x[i], y = sp->series[s].y[i];
            if (sp->series[s].dashed == PLOT_REFERENCE) {
                if (i == 0 && point_shown(sp, 1, y)) ymin = fmin(ymin, y), ymax = fmax(ymax, y);
                continue;
            }
            if (!point_shown(sp, x, y)) continue;
            xmin = fmin(xmin, x), xmax = fmax(xmax, x), ymin = fmin(ymin, y), ymax = fmax(ymax, y);
        }
    if (isfinite(sp->hline)) ymin = fmin(ymin, sp->hline), ymax = fmax(ymax, sp->hline);
    if (!isfinite(xmin) || !isfinite(ymin)) return -1;
    double x0 = axis_tr(xmin, sp->logx), x1 = axis_tr(xmax, sp->logx);
    double y0 = axis_tr(ymin, sp->logy), y1 = axis_tr(ymax, sp->logy);
    double dx = x1 > x0 ? 0.05 * (x1 - x0) : 0.5, dy = y1 > y0 ? 0.08 * (y1 - y0) : 0.5;
    w->x0 = x0 - dx, w->x1 = x1 + dx;
    w->y1 = y1 + dy;
    w->y0 = sp->logy || sp->y_tight ? y0 - dy : (ymin >= 0 ? 0 : y0 - dy);
    return 0;
}

/* Room on the right of the plot area for the legend, from its longest label; long labels get a
 * smaller legend font rather than a clipped legend. */
typedef struct {
    double right;  /* right edge of the plot area (normalised page coordinates) */
    double lscale; /* legend text scale */
} plot_layout;

static plot_layout plot_layout_of(const plot_spec *sp)
{
    int maxlen = sp->hline_label && isfinite(sp->hline) ? utf8_len(sp->hline_label) : 0;
    for (int i = 0; i < sp->nseries; i++)
        if (sp->series[i].label && sp->series[i].dashed != PLOT_REFERENCE && utf8_len(sp->series[i].label) > maxlen)
            maxlen = utf8_len(sp->series[i].label);
    double lscale = maxlen > 30 ? fmax(0.55, 30.0 / maxlen) : 1.0;
    return (plot_layout){fmin(0.80, fmax(0.50, 0.97 - (0.11 + 0.0112 * lscale * maxlen))), lscale};
}

/* pllegend's per-entry arrays (one entry per series, and one for the reference line) and the
 * points of one series in drawing space. */
typedef struct {
    int n;
    PLINT *opt, *tcol, *lcol, *lsty, *scol, *snum;
    PLFLT *lw, *ssc;
    const char **text, **sym;
    double *px, *py; /* (longest series) */
} plot_scratch;

static void plot_scratch_free(plot_scratch *sc)
{
    free(sc->opt), free(sc->tcol), free(sc->lcol), free(sc->lsty), free(sc->scol), free(sc->snum);
    free(sc->lw), free(sc->ssc), free(sc->text), free(sc->sym), free(sc->px), free(sc->py);
    memset(sc, 0, sizeof *sc);
}

/* Returns 0 or CB_EFAIL (error printed). */
static int plot_scratch_init(plot_scratch *sc, const plot_spec *sp)
{
    size_t nl = (size_t)sp->nseries + (isfinite(sp->hline) ? 1 : 0), nmax = 1;
    for (int s = 0; s < sp->nseries; s++)
        if ((size_t)sp->series[s].n > nmax) nmax = (size_t)sp->series[s].n;
    sc->n = (int)nl;
    sc->opt = calloc(nl, sizeof *sc->opt), sc->tcol = calloc(nl, sizeof *sc->tcol),
    sc->lcol = calloc(nl, sizeof *sc->lcol);
    sc->lsty = calloc(nl, sizeof *sc->lsty), sc->scol = calloc(nl, sizeof *sc->scol),
    sc->snum = calloc(nl, sizeof *sc->snum);
    sc->lw = calloc(nl, sizeof *sc->lw), sc->ssc = calloc(nl, sizeof *sc->ssc);
    sc->text = calloc(nl, sizeof *sc->text), sc->sym = calloc(nl, sizeof *sc->sym);
    sc->px = malloc(nmax * sizeof *sc->px), sc->py = malloc(nmax * sizeof *sc->py);
    if (sc->opt && sc->tcol && sc->lcol && sc->lsty && sc->scol && sc->snum && sc->lw && sc->ssc && sc->text &&
        sc->sym && sc->px && sc->py)
        return 0;
    plot_scratch_free(sc);
    return err_msg("out of memory");
}

/* PLplot set-up: the device writing into `out`, the page size, a white background and the
 * palette (before plinit, or PLplot's black background stays); then the page. */
static void plot_begin(const char *dev, FILE *out)
{
    plsdev(dev);
    plsfile(out);
    plsetopt("geometry", "1200x800");
    plscolbg(255, 255, 255);
    for (int i = 0; i < 8; i++) plscol0(i + 1, palette[i][0], palette[i][1], palette[i][2]);
    plscol0(COL_AXIS, 0, 0, 0);
    plscol0(COL_GRID, 200, 200, 200);
    plscol0(COL_REF, 120, 120, 120);
    plinit();
    pladv(0);
}

/* The grid, then the axes over it with plain-number tick labels, the axis labels, and the title
 * and subtitle centred on the page (not on the narrower plot area). Leaves the plot area set. */
static void plot_frame(const plot_spec *sp, const plot_window *w, const plot_layout *lay)
{
    plvpor(0.13, lay->right, 0.11, 0.86);
    plwind(w->x0, w->x1, w->y0, w->y1);
    plschr(0, 1.1);
    plcol0(COL_GRID);
    pllsty(2);
    /* about 10 labelled powers of two across a full-width plot, fewer when a wide legend narrows it */
    double xlabels = fmax(4.0, 10.0 * (lay->right - 0.13) / 0.84);
    double xtick = sp->logx ? fmax(1.0, ceil((w->x1 - w->x0) / xlabels)) : 0;
    double ytick = sp->logy ? fmax(1.0, ceil((w->y1 - w->y0) / 8.0)) : 0;
    axes_kind ak = {sp->logx, sp->logy};
    plslabelfunc(label_log2, &ak); /* every axis: plain numbers and SI suffixes, never "(x10^7)" */
    plbox("g", xtick, 0, "g", ytick, 0);
    pllsty(1);
    plcol0(COL_AXIS);
    plbox("bcnsto", xtick, sp->logx ? 1 : 0, "bcnstvo", ytick, sp->logy ? 1 : 0);
    plslabelfunc(NULL, NULL);
    plmtex("b", 3.2, 0.5, 0.5, sp->xlabel);
    plmtex("l", 5.0, 0.5, 0.5, sp->ylabel); /* clear of tick labels like 10.96 */
    plvpor(0.04, 0.96, 0.11, 0.86);
    plwind(0, 1, 0, 1);
    plschr(0, 1.3);
    plmtex("t", 2.6, 0.5, 0.5, sp->title);
    plschr(0, 0.75);
    if (sp->subtitle) plmtex("t", 1.3, 0.5, 0.5, sp->subtitle);
    plvpor(0.13, lay->right, 0.11, 0.86);
    plwind(w->x0, w->x1, w->y0, w->y1);
    plschr(0, 1.1);
}

/* A reference level (series s, PLOT_REFERENCE): a dotted grey line across the window at y[0]
 * with its label above the line's left end (no legend entry). */
static void plot_reference_draw(const plot_spec *sp, const plot_window *w, int s, plot_scratch *sc)
{
    const plot_series *se = &sp->series[s];
    sc->text[s] = NULL;
    if (se->n < 1 || !point_shown(sp, 1, se->y[0])) return;
    double y = axis_tr(se->y[0], sp->logy), hx[2] = {w->x0, w->x1}, hy[2] = {y, y};
    plcol0(COL_REF);
    plwidth(2.0);
    pllsty(3);
    plline(2, hx, hy);
    pllsty(1);
    plcol0(COL_AXIS);
    plschr(0, 0.8);
    plptex(w->x0 + 0.01 * (w->x1 - w->x0), y + 0.015 * (w->y1 - w->y0), 1, 0, 0, se->label ? se->label : "reference");
    plschr(0, 1.1);
}

/* Series s: its line (solid or dashed) and its markers (a marker every few points on a long
 * series, so that the line stays visible), and its legend entry. */
static void plot_series_draw(const plot_spec *sp, const plot_window *w, int s, plot_scratch *sc)
{
    const plot_series *se = &sp->series[s];
    if (se->dashed == PLOT_REFERENCE) {
        plot_reference_draw(sp, w, s, sc);
        return;
    }
    double *px = sc->px, *py = sc->py;
    int col = se->color == PLOT_GREY ? COL_REF : se->color > 0 ? 1 + (se->color - 1) % 8 : 1 + s % 8;
    int lsty = se->dashed == PLOT_LONG_DASH ? 3 : se->dashed ? 2 : 1;
    int m = 0;
    for (int i = 0; i < se->n; i++)
        if (point_shown(sp, se->x[i], se->y[i]))
            px[m] = axis_tr(se->x[i], sp->logx), py[m] = axis_tr(se->y[i], sp->logy), m++;
    plcol0(col);
    plwidth(2.5);
    pllsty(lsty);
    if (!se->points_only && m > 1) plline(m, px, py);
    pllsty(1);
    plschr(0, 1.0);
    if (!se->dashed) {
        int every = se->points_only || m <= 40 ? 1 : (m + 19) / 20, k = 0;
        for (int i = 0; i < m; i += every) px[k] = px[i], py[k] = py[i], k++;
        plstring(k, px, py, markers[s % 8]);
    }
    plschr(0, 1.1);
    sc->opt[s] = se->points_only ? PL_LEGEND_SYMBOL : se->dashed ? PL_LEGEND_LINE : (PL_LEGEND_LINE | PL_LEGEND_SYMBOL);
    sc->tcol[s] = COL_AXIS, sc->lcol[s] = col, sc->lsty[s] = lsty, sc->lw[s] = 2.5;
    sc->scol[s] = col, sc->ssc[s] = 1.0, sc->snum[s] = 1;
    sc->text[s] = se->label, sc->sym[s] = se->dashed ? "" : markers[s % 8];
}

/* The horizontal reference line (a peak, a target) across the window, and its legend entry
 * after the series'. */
static void plot_hline_draw(const plot_spec *sp, const plot_window *w, plot_scratch *sc)
{
    double hx[2] = {w->x0, w->x1}, hy[2] = {axis_tr(sp->hline, sp->logy), axis_tr(sp->hline, sp->logy)};
    plcol0(COL_REF);
    plwidth(2.0);
    pllsty(3);
    plline(2, hx, hy);
    pllsty(1);
    int s = sp->nseries;
    sc->opt[s] = PL_LEGEND_LINE;
    sc->tcol[s] = COL_AXIS, sc->lcol[s] = COL_REF, sc->lsty[s] = 3, sc->lw[s] = 2.0;
    sc->text[s] = sp->hline_label ? sp->hline_label : "reference", sc->sym[s] = "";
}

/* The legend, outside the plot area on the right, boxed on a white background. */
static void plot_legend_draw(plot_scratch *sc, const plot_layout *lay)
{
    PLFLT lw_out, lh_out;
    int n = 0; /* entries without text (reference levels, labelled on the plot) are left out */
    for (int s = 0; s < sc->n; s++) {
        if (!sc->text[s]) continue;
        sc->opt[n] = sc->opt[s], sc->tcol[n] = sc->tcol[s], sc->lcol[n] = sc->lcol[s], sc->lsty[n] = sc->lsty[s];
        sc->scol[n] = sc->scol[s], sc->snum[n] = sc->snum[s], sc->lw[n] = sc->lw[s], sc->ssc[n] = sc->ssc[s];
        sc->text[n] = sc->text[s], sc->sym[n] = sc->sym[s];
        n++;
    }
    sc->n = n;
    if (n == 0) return;
    plwidth(1.0);
    plschr(0, 0.9);
    pllegend(&lw_out, &lh_out, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX, PL_POSITION_RIGHT | PL_POSITION_OUTSIDE,
             0.02, 0.0, 0.08, 0, COL_AXIS, 1, 0, 0, sc->n, sc->opt, 1.0, lay->lscale, 2.0, 0.0, sc->tcol, sc->text,
             NULL, NULL, NULL, NULL, sc->lcol, sc->lsty, sc->lw, sc->scol, sc->ssc, sc->snum, sc->sym);
}

/* The whole page, from plinit to plend, written into `out`. Returns 0, or CB_EFAIL when PLplot
 * gave up (its message printed by the exit handler, naming `path`). */
static int plot_render(const char *path, const char *dev, FILE *out, const plot_spec *sp, const plot_window *w,
                       plot_scratch *sc)
{
    plot_exit.path = path;
    if (setjmp(plot_exit.env) != 0) {
        plend();
        plot_exit.path = NULL;
        return CB_EFAIL;
    }
    plsexit(plot_exit_handler);
    plot_begin(dev, out);
    plot_layout lay = plot_layout_of(sp);
    plot_frame(sp, w, &lay);
    for (int s = 0; s < sp->nseries; s++) plot_series_draw(sp, w, s, sc);
    if (isfinite(sp->hline)) plot_hline_draw(sp, w, sc);
    plot_legend_draw(sc, &lay);
    plend();
    plot_exit.path = NULL;
    return 0;
}

/* The temporary file PLplot writes into, through a stdio stream that counts what it is given:
 * cairo ignores its write errors and PLplot never checks fclose, so before the file is committed
 * that count (and the first write error) is compared with what is on disk. */
typedef struct {
    int fd;
    long long given; /* bytes PLplot wrote into the stream */
    int err;         /* first write error (errno), 0 for none */
    int closed;      /* the stream was closed (by PLplot's plend, or by us) */
} plot_sink;

/* Takes all n bytes, so that the stream goes on counting after a write error. */
static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    plot_sink *k = cookie;
    k->given += (long long)n;
    for (size_t done = 0; k->err == 0 && done < n;) {
        ssize_t w = write(k->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            k->err = w < 0 ? errno : EIO;
            break;
        }
        done += (size_t)w;
    }
    return (ssize_t)n;
}

static int sink_close(void *cookie)
{
    ((plot_sink *)cookie)->closed = 1;
    return 0;
}

/* Creates the temporary file next to `path` (writable, read back by the check, and a name no one
 * else uses) and the stream into it. Returns 0, or CB_EFAIL / CB_EUSAGE (error printed: the path and errno). */
static int plot_tmp_open(const char *path, const char *ext, char *tmp, size_t tmpsz, plot_sink *k, FILE **out)
{
    *k = (plot_sink){.fd = -1};
    for (int i = 0; k->fd < 0; i++) {
        if (path_fmt(tmp, tmpsz, "%s.tmp.%ld.%d%s", path, (long)getpid(), i, ext) != 0) return CB_EUSAGE;
        k->fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (k->fd < 0 && (errno != EEXIST || i == 99)) return err_msg("cannot write '%s': %s", path, strerror(errno));
    }
    *out = fopencookie(k, "w", (cookie_io_functions_t){NULL, sink_write, NULL, sink_close});
    if (*out) return 0;
    int e = errno;
    close(k->fd);
    unlink(tmp);
    return err_msg("cannot write '%s': %s", path, strerror(e));
}

/* A PNG is whole when it has the signature and chunks (length, type, data, CRC) that stay inside
 * the file, the last an IEND ending at the file's end. Returns NULL, or what is wrong. */
static const char *png_whole(int fd, long long size)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char b[8];
    if (size < 8 || pread(fd, b, 8, 0) != 8 || memcmp(b, sig, 8) != 0) return "no PNG signature";
    for (long long off = 8; off + 12 <= size;) {
        if (pread(fd, b, 8, off) != 8) break;
        uint32_t len = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
        long long end = off + 12 + (long long)len;
        if (end > size) break;
        if (memcmp(b + 4, "IEND", 4) == 0) return end == size ? NULL : "bytes after the IEND chunk";
        off = end;
    }
    return "no IEND chunk";
}

/* An SVG is whole when it ends with </svg> (and whitespace). Returns NULL, or what is wrong. */
static const char *svg_whole(int fd, long long size)
{
    char b[256];
    size_t n = size < (long long)sizeof b ? (size_t)size : sizeof b;
    if (pread(fd, b, n, size - (long long)n) != (ssize_t)n) return "unreadable";
    while (n > 0 && isspace((unsigned char)b[n - 1])) n--;
    return n >= 6 && memcmp(b + n - 6, "</svg>", 6) == 0 ? NULL : "no </svg> at the end";
}

/* The file PLplot wrote must be whole, as long as what it was given, and written without error
 * before it replaces `path`. Returns 0 or CB_EFAIL (one error line naming `path`). */
static int plot_check_whole(const char *path, const char *ext, const char *dev, const plot_sink *k)
{
    struct stat st;
    if (fstat(k->fd, &st) != 0) return err_msg("cannot write '%s': %s", path, strerror(errno));
    if (k->given == 0) return err_msg("plot '%s': PLplot wrote nothing (driver %s missing?)", path, dev);
    long long size = st.st_size;
    const char *why = strcmp(ext, ".svg") == 0 ? svg_whole(k->fd, size) : png_whole(k->fd, size);
    if (!why && size == k->given && k->err == 0) return 0;
    char of[48] = "", err[96] = "";
    if (size != k->given) snprintf(of, sizeof of, " of %lld", k->given);
    if (k->err) snprintf(err, sizeof err, ", write failed: %s", strerror(k->err));
    return err_msg("plot '%s': the file PLplot wrote is incomplete (%lld%s bytes%s%s%s): is the disk full?", path, size,
                   of, why ? ", " : "", why ? why : "", err);
}

int plot_lines(const char *path_given, const plot_spec *sp)
{
    char path[CB_PATH_MAX]; /* a symbolic link written through; a read-only or hard-linked file refused */
    int trc = file_out_target(path_given, path, sizeof path);
    if (trc != 0) return trc;
    const char *ext = strrchr(path, '.');
    if (!ext || (strcmp(ext, ".png") != 0 && strcmp(ext, ".svg") != 0))
        return err_usage("plot '%s': expected a file name ending in .png or .svg", path);
    const char *dev = strcmp(ext, ".svg") == 0 ? "svgcairo" : "pngcairo";
    plot_window w;
    if (plot_window_of(sp, &w) != 0) return err_msg("plot '%s': no data to plot", path);
    plot_scratch sc;
    if (plot_scratch_init(&sc, sp) != 0) return CB_EFAIL;
    char tmp[CB_PATH_MAX];
    plot_sink k;
    FILE *out = NULL;
    int rc = plot_tmp_open(path, ext, tmp, sizeof tmp, &k, &out);
    if (rc == 0) {
        rc = plot_render(path, dev, out, sp, &w, &sc);
        if (!k.closed) fclose(out); /* PLplot closes it in plend once its driver has started */
        if (rc == 0) rc = plot_check_whole(path, ext, dev, &k);
        close(k.fd);
        if (rc != 0) unlink(tmp);
        else rc = file_commit(tmp, path);
    }
    plot_scratch_free(&sc);
    return rc;
}
