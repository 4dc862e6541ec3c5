/* importrun.c: costbench import LOG, the run: the log's format (--framework or detected) and that
 * format's parser (report/logs/registry.h), the flags' configuration merged in, the steady state
 * (report/logs/steady.h) and the row (report/logs/logrow.h), `#` lines and the row as CSV on stdout,
 * and --out FILE.csv. */
#include "importrun.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/frameworks.h"
#include "formats/devices.h"
#include "logs/logimport.h"
#include "logs/logrow.h"
#include "logs/registry.h"

/* What a flag is merged against: the run, where its log and config file are, the flags that filled fields. */
typedef struct {
    log_run *r;
    const char *log_path, *config_path;
    char *from;
    size_t fn;
} merge_ctx;

/* "FILE:LINE" of the line that states field f, or the block the configuration came from. */
static void merge_where(const merge_ctx *m, log_field f, char *buf, size_t n)
{
    const log_where *w = &m->r->stated[f];
    if (w->line > 0) snprintf(buf, n, "%s:%d", w->in_config ? m->config_path : m->log_path, w->line);
    else snprintf(buf, n, "the log (%s)", *m->r->config_from ? m->r->config_from : "derived from what it states");
}

static void merge_from(const merge_ctx *m, const char *flag)
{
    size_t len = strlen(m->from);
    snprintf(m->from + len, m->fn - len, "%s%s", len ? ", " : "", flag);
}

/* A text flag into field (n bytes): fills it when the log leaves it empty; a different value is an
 * error naming the flag and the line that states the field. */
static int merge_text(const merge_ctx *m, const char *flag, log_field f, const char *v, char *field, size_t n)
{
    char where[4400];
    if (!v) return 0;
    if (*field && strcmp(field, v) != 0) {
        merge_where(m, f, where, sizeof where);
        return err_usage("flag '--%s': '%s', but %s says '%s'", flag, v, where, field);
    }
    if (!*field) snprintf(field, n, "%s", v), merge_from(m, flag);
    return 0;
}

/* A number flag (0: not given) into field (0: unset), by the same rule. */
static int merge_long(const merge_ctx *m, const char *flag, log_field f, long v, long *field)
{
    char where[4400];
    if (v <= 0) return 0;
    if (*field > 0 && *field != v) {
        merge_where(m, f, where, sizeof where);
        return err_usage("flag '--%s': %ld, but %s says %ld", flag, v, where, *field);
    }
    if (*field <= 0) *field = v, merge_from(m, flag);
    return 0;
}

static int merge_int(const merge_ctx *m, const char *flag, log_field f, long v, int *field)
{
    long x = *field;
    int rc = merge_long(m, flag, f, v, &x);
    *field = (int)x;
    return rc;
}

/* The global batch the last step line that prints one states, when the configuration does not. */
static void merge_step_batch(log_run *r)
{
    for (int k = r->nsteps - 1; k >= 0 && r->global_batch <= 0; k--)
        if (r->steps[k].global_batch > 0) {
            r->global_batch = r->steps[k].global_batch;
            log_run_stated(r, LF_GLOBAL_BATCH, r->steps[k].line, 0);
        }
}

/* --vocab: it wins over the log's vocabulary (the flag is for a log whose tokenizer padding the
 * user knows better); a different one is named in the notes and the `#` configuration line. */
static void merge_vocab(const merge_ctx *m, long v)
{
    log_run *r = m->r;
    if (v <= 0 || r->vocab == v) return;
    char where[4400], flag[700];
    if (r->vocab > 0 && r->vocab != v) {
        merge_where(m, LF_VOCAB, where, sizeof where);
        log_run_note(r, "vocab %ld from --vocab, over %d that %.300s states", v, r->vocab, where);
        snprintf(flag, sizeof flag, "vocab (%ld, over %d that %.400s states)", v, r->vocab, where);
    } else {
        snprintf(flag, sizeof flag, "vocab");
    }
    r->vocab = (int)v;
    merge_from(m, flag);
}

/* The data-parallel degree, when the log states the ranks and every other degree but not it:
 * devices x ranks per device (data/devices.csv's workers; 1 for a device it does not list) over
 * tp x pp x cp. */
static void import_dp(log_run *r)
{
    if (r->dp > 0 || r->devices <= 0 || r->tp <= 0 || r->pp <= 0) return;
    long workers = 1, cp = r->cp > 0 ? r->cp : 1;
    dev_table dt = {0};
    if (*r->device && devices_load(&dt, NULL) == 0) {
        const dev_row *d = devices_find(&dt, r->device);
        if (d) workers = d->workers;
    }
    devices_free(&dt);
    long ranks = r->devices * workers, model = (long)r->tp * r->pp * cp;
    if (ranks % model == 0) r->dp = (int)(ranks / model);
}

/* The flags' configuration merged into r; `from` lists the fields they filled. */
static int import_merge(const import_opts *o, const char *log_path, log_run *r, char *from, size_t fn)
{
    int ok = !o->precision;
    for (int k = 0; k < PUB_NPRECISIONS && !ok; k++) ok = strcmp(o->precision, pub_precision_names[k]) == 0;
    if (!ok)
        return err_usage("flag '--precision': expected bf16-mixed, fp16-mixed, fp8, fp32 or bf16, got '%s'",
                         o->precision);
    from[0] = '\0';
    const merge_ctx m = {r, log_path, o->config, from, fn};
    merge_step_batch(r);
    if (merge_text(&m, "model", LF_MODEL, o->model, r->model, sizeof r->model) ||
        merge_text(&m, "device", LF_DEVICE, o->device, r->device, sizeof r->device) ||
        merge_text(&m, "instance", LF_INSTANCE, o->instance, r->instance, sizeof r->instance) ||
        merge_text(&m, "precision", LF_PRECISION, o->precision, r->precision, sizeof r->precision) ||
        merge_long(&m, "devices", LF_DEVICES, o->devices, &r->devices) ||
        merge_long(&m, "devices-per-node", LF_PER_NODE, o->per_node, &r->devices_per_node) ||
        merge_int(&m, "tp", LF_TP, o->tp, &r->tp) || merge_int(&m, "pp", LF_PP, o->pp, &r->pp) ||
        merge_int(&m, "dp", LF_DP, o->dp, &r->dp) ||
        merge_long(&m, "micro-batch", LF_MICRO_BATCH, o->micro_batch, &r->micro_batch) ||
        merge_long(&m, "global-batch", LF_GLOBAL_BATCH, o->global_batch, &r->global_batch) ||
        merge_long(&m, "seq", LF_SEQ, o->seq, &r->seq_len))
        return CB_EUSAGE;
    if (o->model) log_preset_fill(r, o->model, 1);
    merge_vocab(&m, o->vocab);
    import_dp(r);
    for (int k = 0; k < r->nsteps; k++)
        if (r->steps[k].global_batch <= 0) r->steps[k].global_batch = r->global_batch;
    return 0;
}

/* The first flag given that only a training log takes (NULL: none). */
const char *import_log_flag(const import_opts *o)
{
    const struct {
        const char *name;
        int given;
    } flags[] = {{"framework", o->framework != NULL},  {"config", o->config != NULL},
                 {"skip-steps", o->skip >= 0},          {"id", o->id != NULL},
                 {"model", o->model != NULL},           {"device", o->device != NULL},
                 {"devices", o->devices > 0},           {"devices-per-node", o->per_node > 0},
                 {"tp", o->tp > 0},                     {"pp", o->pp > 0},
                 {"dp", o->dp > 0},                     {"micro-batch", o->micro_batch > 0},
                 {"global-batch", o->global_batch > 0}, {"seq", o->seq > 0},
                 {"precision", o->precision != NULL},   {"vocab", o->vocab > 0}};
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        if (flags[k].given) return flags[k].name;
    return NULL;
}

/* The format: --framework (a framework of the registry, or an alias), else the first step line of any format. */
static int import_format(const import_opts *o, const text_lines *t, log_format *f, char *how, size_t n)
{
    char names[256];
    if (o->framework) {
        *f = log_format_find(o->framework);
        if (*f < 0) return log_format_list(names, sizeof names, 0), framework_unknown(o->framework, names);
        snprintf(how, n, "--framework %s", log_formats[*f].framework);
        return 0;
    }
    int marker = -1, i = log_detect_line(t, f, &marker);
    if (i < 0) {
        int first = 0;
        while (first < t->n && !t->line[first][strspn(t->line[first], " \t")]) first++;
        log_format_list(names, sizeof names, 1);
        return err_usage("%s:%d: no step line of %s, and no nccl-tests or `costbench allreduce` table; give "
                         "--framework to name the format (the first line reads '%.80s')",
                         t->path, first < t->n ? first + 1 : 1, names, first < t->n ? t->line[first] : "");
    }
    int w = snprintf(how, n, "detected from line %d: '%.80s'", i + 1, t->line[i] + strspn(t->line[i], " "));
    if (marker >= 0 && w >= 0 && (size_t)w < n)
        snprintf(how + w, n - (size_t)w, " and line %d: '%.60s'", marker + 1,
                 t->line[marker] + strspn(t->line[marker], " "));
    return 0;
}

/* The row's id: --id, else the log's file name without its extension, every character outside
 * [A-Za-z0-9._-] made '-'. */
static void import_id(const import_opts *o, char *id, size_t n)
{
    const char *base = strrchr(o->files[0], '/');
    base = base ? base + 1 : o->files[0];
    snprintf(id, n, "%s", o->id ? o->id : base);
    char *dot = o->id ? NULL : strrchr(id, '.');
    if (dot && dot != id) *dot = '\0';
    for (char *p = id; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p)) *p = '-';
}

/* The `#` lines above the row. */
static int import_comments(const log_run *r, const log_steady *st, const logrow *row, const char *how,
                           const char *from, char lines[][1200])
{
    int n = 0;
    snprintf(lines[n++], 1200, "%.600s, %s format (%.160s)", row->cell[PUB_COL_SOURCE], log_formats[r->format].name,
             how);
    snprintf(lines[n++], 1200, "configuration from %.255s%s%.880s%s", *r->config_from ? r->config_from : "no stated block",
             *from ? "; from flags: " : "", from, *from ? "" : "; none from flags");
    const char *model = row->cell[PUB_COL_MODEL];
    if (*model && !log_preset_known(model))
        snprintf(lines[n++], 1200, "model '%.64s': not a preset of data/models.csv (kept as named; the shape is what "
                                  "the log or the flags state)", model);
    char missing[256];
    logrow_missing(row, missing, sizeof missing);
    if (*missing)
        snprintf(lines[n++], 1200, "%s: empty; give them (--device, --devices, --devices-per-node, --tp, --pp, --dp, "
                                  "--model, --seq, --global-batch) to use this row with --calibrate or validate",
                 missing);
    snprintf(lines[n++], 1200,
             "steps: %d step lines; %d dropped for a global batch other than the last (ramp-up); %d without %s "
             "(before the framework's throughput window filled); %d dropped as warm-up (%s); %d kept, %ld steps; "
             "%d dropped as repeats of a step number (several ranks' copies: each step counted once)",
             st->nlines, st->ramp, st->unprinted, pub_metric_names[st->metric], st->warm, st->why, st->n, st->iters,
             st->dup);
    snprintf(lines[n++], 1200, "steady state: %s median %.6g, min %.6g, max %.6g, spread (IQR) %.2f%% of the median",
             pub_metric_names[st->metric], st->median, st->min, st->max, st->iqr_pct);
    snprintf(lines[n++], 1200, "metric %s: of step_time_s (with the global batch), seq_per_s, tokens_per_s, "
                              "tokens_per_s_per_device, tflops_per_device, mfu_pct, step_time_s, the first the last "
                              "step line prints; seq_per_s %s",
             pub_metric_names[st->metric],
             *row->cell[PUB_COL_SEQ_PER_S] ? "derived from it" : "left empty (not derivable here)");
    return n;
}

/* The row of the parsed run r, printed and saved. */
static int import_emit(const import_opts *o, const text_lines *t, log_run *r, const char *how)
{
    char from[1024];
    int rc = log_steps_check(r, t->path);
    if (rc == 0) rc = import_merge(o, t->path, r, from, sizeof from);
    log_steady st = {0};
    if (rc == 0) rc = log_steady_compute(r, o->skip, t->path, &st);
    if (rc != 0) return log_steady_free(&st), rc;
    char id[64], source[600], lines[8][1200];
    import_id(o, id, sizeof id);
    snprintf(source, sizeof source, "costbench import of %.400s (lines %d-%d, %ld steps after %d warm-up)", t->path,
             r->steps[st.keep[0]].line, r->steps[st.keep[st.n - 1]].line, st.iters, st.warm);
    logrow *row = malloc(sizeof *row);
    if (!row) return log_steady_free(&st), err_msg("out of memory");
    logrow_build(r, &st, id, source, row);
    int n = import_comments(r, &st, row, how, from, lines);
    const char *c[8];
    for (int k = 0; k < n; k++) c[k] = lines[k];
    char missing[256], shown[4200];
    logrow_missing(row, missing, sizeof missing);
    snprintf(shown, sizeof shown, "the row imported from %s", t->path);
    /* --out loads the file it writes back (a complete row) or refuses to append an incomplete one */
    if (o->out) rc = logrow_save(row, c, n, o->out);
    else if (!*missing) rc = logrow_check(row, shown);
    if (rc == 0) logrow_print(row, c, n, stdout);
    free(row);
    log_steady_free(&st);
    return rc;
}

int import_run(const import_opts *o, const text_lines *t)
{
    log_format f = 0;
    char how[320];
    int rc = import_format(o, t, &f, how, sizeof how);
    log_run r;
    log_run_init(&r, f);
    if (rc == 0) rc = log_formats[f].parse(t, o->config, &r);
    if (rc == 0) rc = import_emit(o, t, &r, how);
    log_run_free(&r);
    return rc;
}
