/* registry.c: the log formats (registry.h): one row each, and what reads the rows. */
#include "registry.h"

#include <stdio.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/frameworks.h"

/* Each format's parser and signature, defined in its logfmt_*.c. */
log_parse_fn log_parse_megatron, log_parse_megatron_ds, log_parse_nemo, log_parse_torchtitan, log_parse_composer,
    log_parse_costbench;
log_signature_fn log_is_megatron_line, log_is_megatron_ds_line, log_is_megatron_ds_marker, log_is_nemo_line,
    log_is_torchtitan_line, log_is_composer_line, log_is_costbench_line;

/* Detection tries the rows in this order on each line. */
const log_format_def log_formats[] = {
    /* the arguments block and training_log's iteration lines */
    {"megatron", "megatron-lm", "Megatron-LM", log_is_megatron_line, log_parse_megatron, NULL},
    /* the same block; iteration lines in s with samples per second and TFLOPs (2021: Megatron-LM's
     * lines, told apart by DeepSpeed's lines at start) */
    {"megatron-deepspeed", "megatron-deepspeed", "Megatron-DeepSpeed", log_is_megatron_ds_line, log_parse_megatron_ds,
     log_is_megatron_ds_marker},
    /* Megatron core under PyTorch Lightning: its printed config and its progress lines */
    {"nemo", "nemo", "NeMo", log_is_nemo_line, log_parse_nemo, NULL},
    /* the metrics logger's step lines, and the TOML job config */
    {"torchtitan", "torchtitan", "torchtitan", log_is_torchtitan_line, log_parse_torchtitan, NULL},
    /* the console logger's metrics, and the YAML run file */
    {"composer", "llm-foundry", "Composer / llm-foundry", log_is_composer_line, log_parse_composer, NULL},
    /* `costbench train`'s own log: the header, the step table, the summary row */
    {"costbench", "costbench", "costbench train", log_is_costbench_line, log_parse_costbench, NULL},
};
const int log_nformats = (int)(sizeof log_formats / sizeof log_formats[0]);

log_format log_format_find(const char *name)
{
    const char *fw = framework_canonical(name);
    for (int k = 0; fw && k < log_nformats; k++)
        if (strcmp(fw, log_formats[k].framework) == 0) return k;
    return -1;
}

void log_format_list(char *buf, size_t n, int titles)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < log_nformats && used < n; k++) {
        const char *sep = k == 0 ? "" : k == log_nformats - 1 ? " or " : ", ";
        int w = snprintf(buf + used, n - used, "%s%s", sep, titles ? log_formats[k].title : log_formats[k].framework);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* The first line of t that is a marker of format k (-1: none). */
static int marker_line(const text_lines *t, int k)
{
    for (int i = 0; log_formats[k].is_marker && i < t->n; i++)
        if (log_formats[k].is_marker(t->line[i])) return i;
    return -1;
}

int log_detect_line(const text_lines *t, log_format *f, int *marker)
{
    if (marker) *marker = -1;
    for (int i = 0; i < t->n; i++)
        for (int k = 0; k < log_nformats; k++) {
            if (!log_formats[k].is_line(t->line[i])) continue;
            *f = k;
            for (int j = k + 1; j < log_nformats; j++) {
                int m = log_formats[j].is_line(t->line[i]) ? marker_line(t, j) : -1;
                if (m < 0) continue;
                *f = j;
                if (marker) *marker = m;
                break;
            }
            return i;
        }
    return -1;
}

int log_not_format(const text_lines *t, log_format want, const char *expect)
{
    const char *title = log_formats[want].title;
    for (int i = 0; i < t->n; i++)
        for (int k = 0; k < log_nformats; k++)
            if (k != want && log_formats[k].is_line(t->line[i]))
                return err_usage("%s:%d: a %s line, not %s: give --framework %s (the line reads '%.80s')", t->path,
                                 i + 1, log_formats[k].title, title, log_formats[k].framework, t->line[i]);
    int first = 0;
    while (first < t->n && t->line[first][strspn(t->line[first], " \t")] == '\0') first++;
    if (first == t->n) return err_usage("%s:1: empty: no %s step line (%s)", t->path, title, expect);
    return err_usage("%s:%d: not a %s log: no step line such as %s (the first line reads '%.80s')", t->path, first + 1,
                     title, expect, t->line[first]);
}
