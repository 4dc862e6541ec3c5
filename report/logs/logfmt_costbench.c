/* logfmt_costbench.c: `costbench train`'s own log (logimport.h), as src/cmd_train.c prints it:
 *   "# pythia-70m: L=6 C=512 heads=8 kv_heads=8 ffn=2048 V=50304, ..., untied embeddings; micro-batch 2 x seq 128,
 *    global batch 2 (1 accumulation steps)"                         (train_memory)
 *   "# 2 data-parallel ranks, ZeRO-1: the estimate is per rank"     (under mpirun)
 *   the step table (record_stream_header: right-aligned numbers; a units row), one row per step:
 *   "       3   10.9455     1.8935  0.0004134    3311.5          77.3      0.604      35.5      35.5"
 *   "# summary", then the summary table of common/schema.h's throughput columns (record_print:
 *   numbers right-aligned, names left-aligned, so "this machine" keeps its space) and its one row.
 * A row with as many cells as its header has names maps them in order (the step table's rows can
 * outgrow their column by a character and shift the rest); otherwise cells are found by position:
 * a number ends where its column's name ends, a name starts where its column's name starts, and
 * an empty cell is simply absent.
 * Also the summary alone: the CSV `costbench train --summary-csv` writes (the throughput format of
 * report/formats/inputs.h, loaded and checked by its loader), one row standing for its run's steady state. */
#include "registry.h"
#include "logrow.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/machine.h"
#include "../../common/parse.h"
#include "../../common/schema.h"
#include "../formats/inputs.h"

/* Its row of the registry (registry.c). */
log_parse_fn log_parse_costbench;
log_signature_fn log_is_costbench_line;

enum { CB_MAX_COLS = 64 };

/* A table line's cells: runs of characters separated by two or more spaces. */
typedef struct {
    int n;
    int start[CB_MAX_COLS], end[CB_MAX_COLS];
} cells;

static void cells_split(const char *s, cells *c)
{
    c->n = 0;
    int i = 0, len = (int)strlen(s);
    while (i < len && c->n < CB_MAX_COLS) {
        while (i < len && s[i] == ' ') i++;
        if (i >= len) break;
        int a = i;
        while (i < len && !(s[i] == ' ' && (i + 1 >= len || s[i + 1] == ' '))) i++;
        c->start[c->n] = a, c->end[c->n++] = i;
    }
}

/* The cell of data line `row` (split in rc) under header column `col` of hc, copied into out
 * ("" when the cell is empty). */
static void cell_text(const char *row, const cells *rc, const cells *hc, int col, char *out, size_t n)
{
    out[0] = '\0';
    if (rc->n == hc->n) {
        snprintf(out, n, "%.*s", rc->end[col] - rc->start[col], row + rc->start[col]);
        return;
    }
    for (int k = 0; k < rc->n; k++)
        if (rc->end[k] == hc->end[col] || rc->start[k] == hc->start[col]) {
            snprintf(out, n, "%.*s", rc->end[k] - rc->start[k], row + rc->start[k]);
            return;
        }
}

/* The index of header column `name` (-1 when absent). */
static int col_of(const char *header, const cells *hc, const char *name)
{
    size_t len = strlen(name);
    for (int k = 0; k < hc->n; k++)
        if ((size_t)(hc->end[k] - hc->start[k]) == len && strncmp(header + hc->start[k], name, len) == 0) return k;
    return -1;
}

/* The number under column `name` into *out (NaN when the column or the cell is absent); a cell that
 * is no number is an error naming the log's line. */
static int cell_num(const text_lines *t, int i, const cells *rc, int hline, const cells *hc, const char *name,
                    double lo, double hi, double *out)
{
    *out = NAN;
    int col = col_of(t->line[hline], hc, name);
    char buf[64], what[4200];
    if (col < 0) return 0;
    cell_text(t->line[i], rc, hc, col, buf, sizeof buf);
    if (!*buf) return 0;
    snprintf(what, sizeof what, "%s:%d: column '%s'", t->path, i + 1, name);
    return parse_double(buf, lo, hi, what, out) == 0 ? 0 : CB_EUSAGE;
}

/* One step row of the table whose header is line hline. */
static int step_row(const text_lines *t, int i, int hline, const cells *hc, log_run *r)
{
    cells rc;
    cells_split(t->line[i], &rc);
    log_step s = log_step_unset(i + 1);
    double step, ms;
    int e = cell_num(t, i, &rc, hline, hc, "step", 1, 1e12, &step) ||
            cell_num(t, i, &rc, hline, hc, "ms", 0, LOG_STEP_MAX_S * 1e3, &ms) ||
            cell_num(t, i, &rc, hline, hc, "tokens_per_s", 0, 1e15, &s.tokens_per_s) ||
            cell_num(t, i, &rc, hline, hc, "seq_per_s", 0, 1e15, &s.samples_per_s) ||
            cell_num(t, i, &rc, hline, hc, "mfu", 0, 1e4, &s.mfu_pct) ||
            cell_num(t, i, &rc, hline, hc, "loss", -1e30, 1e30, &s.loss);
    if (e) return CB_EUSAGE;
    if (!(step >= 1) || !(ms > 0))
        return err_usage("%s:%d: a step row with no step number or no time (columns 'step', 'ms')", t->path, i + 1);
    s.iter = (long)step, s.step_s = ms / 1000.0, s.global_batch = r->global_batch;
    return log_run_add_step(r, &s);
}

/* The step table from its header at line h: rows up to the first blank or '#' line. Returns the
 * line after it. */
static int step_table(const text_lines *t, int h, log_run *r, int *rc)
{
    cells hc;
    cells_split(t->line[h], &hc);
    int i = h + 1;
    if (i < t->n && strchr(t->line[i], '[')) i++; /* the units row */
    for (; i < t->n && *rc == 0; i++) {
        const char *s = t->line[i] + strspn(t->line[i], " ");
        if (!*s || *s == '#') break;
        *rc = step_row(t, i, h, &hc, r);
    }
    return i;
}

/* "# NAME: L=6 C=512 heads=8 kv_heads=8 ffn=2048 V=50304, ...; micro-batch 2 x seq 128, global batch 2 (...)" */
static int header_line(const text_lines *t, int i, log_run *r)
{
    const char *s = t->line[i] + 2, *colon = strstr(s, ": L=");
    int n = colon ? (int)(colon - s) : 0;
    if (!colon || n <= 0 || n >= (int)sizeof r->model) return 0;
    snprintf(r->model, sizeof r->model, "%.*s", n, s);
    const char *b = strstr(colon, "; micro-batch ");
    if (sscanf(colon, ": L=%d C=%d heads=%d kv_heads=%d ffn=%d V=%d", &r->layers, &r->d_model, &r->heads,
               &r->kv_heads, &r->ffn_dim, &r->vocab) != 6 ||
        !b || sscanf(b, "; micro-batch %ld x seq %ld, global batch %ld", &r->micro_batch, &r->seq_len,
                     &r->global_batch) != 3)
        return err_usage("%s:%d: expected 'L=.. C=.. heads=.. kv_heads=.. ffn=.. V=..' and '; micro-batch B x seq T, "
                         "global batch G', got '%.100s'",
                         t->path, i + 1, t->line[i]);
    r->tied_embeddings = strstr(colon, "untied embeddings") ? 0 : strstr(colon, "tied embeddings") ? 1 : -1;
    static const log_field said[] = {LF_MODEL, LF_MICRO_BATCH, LF_SEQ, LF_GLOBAL_BATCH};
    for (size_t k = 0; k < sizeof said / sizeof said[0]; k++) log_run_stated(r, said[k], i + 1, 0);
    log_preset_fill(r, r->model, 0);
    size_t len = strlen(r->model);
    if (!*r->arch && len > 7 && strcmp(r->model + len - 7, "-custom") == 0) { /* a preset with overrides */
        char preset[64];
        snprintf(preset, sizeof preset, "%.*s", (int)(len - 7), r->model);
        log_preset_fill(r, preset, 0);
    }
    return 0;
}

/* The summary row at `line` states the model, the layout, the batch and the precision (where set). */
static void summary_stated(log_run *r, int line)
{
    static const log_field said[] = {LF_MODEL, LF_DEVICES, LF_PER_NODE,    LF_TP,  LF_PP,
                                     LF_DP,    LF_SEQ,     LF_MICRO_BATCH, LF_GLOBAL_BATCH};
    for (size_t k = 0; k < sizeof said / sizeof said[0]; k++) log_run_stated(r, said[k], line, 0);
    if (*r->precision) log_run_stated(r, LF_PRECISION, line, 0);
}

/* costbench's precision names (common/precision.h) as the schema's: full bf16 of either rounding
 * is `bf16` (the rounding goes in the notes). */
static void precision_set(log_run *r, const char *p)
{
    if (strcmp(p, "bf16-sr") == 0 || strcmp(p, "bf16-nearest") == 0) {
        snprintf(r->precision, sizeof r->precision, "bf16");
        log_run_note(r, "full bf16, updates %s", strcmp(p, "bf16-sr") == 0 ? "stochastically rounded" : "rounded to "
                                                                                                        "nearest");
    } else {
        snprintf(r->precision, sizeof r->precision, "%.15s", p);
    }
}

/* The summary row (line i) under its header (line h): model, layout, batch, precision, peak. */
static int summary_row(const text_lines *t, int h, int i, log_run *r)
{
    cells hc, rc;
    cells_split(t->line[h], &hc), cells_split(t->line[i], &rc);
    double tp, pp, ranks, inst, peak, seq, gb, mb;
    if (cell_num(t, i, &rc, h, &hc, "tensor_parallel", 1, 65536, &tp) ||
        cell_num(t, i, &rc, h, &hc, "pipeline_parallel", 1, 65536, &pp) ||
        cell_num(t, i, &rc, h, &hc, "ranks", 1, 1e7, &ranks) ||
        cell_num(t, i, &rc, h, &hc, "instances", 1, 1e7, &inst) ||
        cell_num(t, i, &rc, h, &hc, "peak_gflops", 0, 1e12, &peak) ||
        cell_num(t, i, &rc, h, &hc, "seq_len", 1, 1e9, &seq) ||
        cell_num(t, i, &rc, h, &hc, "global_batch", 1, 1e9, &gb) ||
        cell_num(t, i, &rc, h, &hc, "micro_batch", 1, 1e9, &mb))
        return CB_EUSAGE;
    long nranks = isnan(ranks) ? 1 : (long)ranks, ninst = isnan(inst) ? 1 : (long)inst;
    if (nranks < 1 || ninst < 1) return err_usage("%s:%d: column 'ranks': expected at least 1", t->path, i + 1);
    if (log_degrees_product((const long[]){nranks, ninst}, 2, LOG_MAX_DEVICES, &r->devices) != 0)
        return err_usage("%s:%d: columns 'ranks' x 'instances': %ld x %ld: more than %d devices", t->path, i + 1,
                         nranks, ninst, LOG_MAX_DEVICES);
    r->devices_per_node = nranks;
    r->tp = isnan(tp) ? 1 : (int)tp, r->pp = isnan(pp) ? 1 : (int)pp;
    r->dp = (int)(r->devices / ((long)r->tp * r->pp));
    if (!isnan(seq)) r->seq_len = (long)seq;
    if (!isnan(gb)) r->global_batch = (long)gb;
    if (!isnan(mb)) r->micro_batch = (long)mb;
    if (peak > 0) r->peak_tflops = peak / (double)r->devices / 1e3, snprintf(r->flop_convention, 24, "palm");
    char buf[64];
    int k;
    if ((k = col_of(t->line[h], &hc, "precision")) >= 0) cell_text(t->line[i], &rc, &hc, k, buf, sizeof buf);
    if (k >= 0 && *buf) precision_set(r, buf);
    summary_stated(r, i + 1);
    if ((k = col_of(t->line[h], &hc, "recompute")) >= 0) cell_text(t->line[i], &rc, &hc, k, r->recompute, 16);
    if ((k = col_of(t->line[h], &hc, "sharding")) >= 0) cell_text(t->line[i], &rc, &hc, k, r->sharding, 16);
    double sps, steps;
    if (cell_num(t, i, &rc, h, &hc, "seq_per_s", 0, 1e15, &sps) ||
        cell_num(t, i, &rc, h, &hc, "steps_timed", 0, 1e12, &steps))
        return CB_EUSAGE;
    log_run_note(r, "costbench train's own summary: %g seq/s, the median of %g steps", sps, steps);
    return 0;
}

/* "# ...; measured here DATE (git REV)": the CPU the run measured, into the notes. */
static void machine_line(const char *line, log_run *r)
{
    const char *semi = strstr(line, "; measured here ");
    const char *comma = strchr(line, ',');
    if (semi && comma && comma < semi) log_run_note(r, "CPU %.*s", (int)(comma - line - 2), line + 2);
}

/* The header line of a summary CSV: "model,tensor_parallel,...,seq_per_s,...,steps_timed,..." */
static int is_summary_csv_header(const char *line)
{
    return strncmp(line, "model,", 6) == 0 && strstr(line, ",seq_per_s,") && strstr(line, ",steps_timed,");
}

/* The one row of a summary CSV as the run: its configuration, and one step of its median seq/s
 * that stands for the steps the summary took it over (already its steady state). */
static int summary_csv(const text_lines *t, log_run *r)
{
    tput_set set = {0};
    if (throughput_load(&set, t->path) != 0) return throughput_free(&set), CB_EUSAGE; /* the set owns what it read */
    int rc = set.n == 1 ? 0
                        : err_usage("%s: %d rows: a summary of one run has one (import each run's own summary)",
                                    t->path, set.n);
    if (rc == 0 && log_degrees_product((const long[]){set.rows[0].instances, set.rows[0].ranks}, 2, LOG_MAX_DEVICES,
                                       &r->devices) != 0)
        rc = err_usage("%s:%d: columns 'instances' x 'ranks': %ld x %ld: more than %d devices", t->path,
                       set.rows[0].line, set.rows[0].instances, set.rows[0].ranks, LOG_MAX_DEVICES);
    if (rc == 0) {
        const tput_row *w = &set.rows[0];
        snprintf(r->model, sizeof r->model, "%.63s", w->model);
        r->tp = w->tp, r->pp = w->pp, r->seq_len = w->seq_len, r->global_batch = w->global_batch;
        r->devices_per_node = w->ranks; /* r->devices: above */
        r->micro_batch = w->micro_batch;
        r->dp = (int)(r->devices / ((long)r->tp * r->pp));
        if (w->precision[0]) precision_set(r, w->precision);
        summary_stated(r, w->line);
        if (w->recompute != TPUT_NOT_STATED) snprintf(r->recompute, 16, "%s", tput_recomputes[w->recompute]);
        if (w->sharding != TPUT_NOT_STATED) snprintf(r->sharding, 16, "%s", tput_shardings[w->sharding]);
        if (w->peak_gflops > 0)
            r->peak_tflops = w->peak_gflops / (double)r->devices / 1e3, snprintf(r->flop_convention, 24, "palm");
        snprintf(r->instance, sizeof r->instance, "%.63s", w->instance);
        if (machine_is_this_machine(w->instance)) snprintf(r->device, sizeof r->device, CB_THIS_MACHINE);
        log_preset_fill(r, r->model, 1);
        log_step s = log_step_unset(w->line);
        s.samples_per_s = w->seq_per_s, s.global_batch = w->global_batch;
        r->stated_warmup = 0;
        snprintf(r->config_from, sizeof r->config_from, "the summary row (line %d)", w->line);
        log_run_note(r, "costbench train's own summary: %g seq/s (min %g, max %g)", w->seq_per_s, w->seq_per_s_min,
                     w->seq_per_s_max);
        rc = log_run_add_step(r, &s);
    }
    throughput_free(&set);
    return rc;
}

int log_parse_costbench(const text_lines *t, const char *config_path, log_run *r)
{
    if (config_path)
        return err_usage("flag '--config': a costbench train log states its configuration; it reads no config "
                         "file (got '%s')",
                         config_path);
    for (int i = 0; i < t->n; i++)
        if (is_summary_csv_header(t->line[i])) return summary_csv(t, r);
    int rc = 0, header = 0, table = 0, summary = 0;
    for (int i = 0; i < t->n && rc == 0; i++) {
        const char *s = t->line[i];
        if (strncmp(s, "# ", 2) == 0 && !header && strstr(s, ": L=")) {
            header = i + 1;
            rc = header_line(t, i, r);
        } else if (strncmp(s, "# median of ", 12) == 0 && strstr(s, " steps after discarding ")) {
            int kept, discarded; /* the summary's own warm-up: "# median of 4 steps after discarding 2; ..." */
            if (sscanf(s, "# median of %d steps after discarding %d", &kept, &discarded) == 2 && discarded >= 0)
                r->stated_warmup = discarded;
        } else if (strncmp(s, "# ", 2) == 0 && strstr(s, " data-parallel ranks, ZeRO-1")) {
            snprintf(r->sharding, sizeof r->sharding, "zero1");
        } else if (strncmp(s, "# ", 2) == 0) {
            machine_line(s, r);
        } else if (log_is_costbench_line(s)) {
            table = i + 1;
            i = step_table(t, i, r, &rc) - 1;
        } else if (strncmp(s, "model ", 6) == 0 && strstr(s, "seq_per_s") && i + 2 < t->n) {
            summary = i + 3;
            rc = summary_row(t, i, i + 2, r);
            i += 2;
        }
    }
    if (rc != 0) return rc;
    if (!table) return log_not_format(t, r->format, "'    step      loss  grad_norm  ...  tokens_per_s'");
    if (!header) return err_usage("%s:1: no '# MODEL: L=.. C=..' line: the log's start is missing", t->path);
    for (int k = 0; k < r->nsteps; k++) r->steps[k].global_batch = r->global_batch;
    snprintf(r->device, sizeof r->device, CB_THIS_MACHINE);
    snprintf(r->instance, sizeof r->instance, CB_THIS_MACHINE);
    if (summary)
        snprintf(r->config_from, sizeof r->config_from, "the header (line %d) and the summary row (line %d)", header,
                 summary);
    else
        snprintf(r->config_from, sizeof r->config_from, "the header (line %d); no summary row", header);
    return 0;
}

/* The step table's header: "    step      loss  grad_norm        lr        ms  tokens_per_s ...", or
 * a summary CSV's header. */
int log_is_costbench_line(const char *line)
{
    const char *s = line + strspn(line, " ");
    return (strncmp(s, "step ", 5) == 0 && strstr(s, "grad_norm") && strstr(s, "tokens_per_s") != NULL) ||
           is_summary_csv_header(line);
}
