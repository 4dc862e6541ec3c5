/* registry.h: the one list of training-log formats `costbench import` reads. One row per format:
 * its name, the published-runs schema's framework it writes, its title in messages, its step-line
 * signature and its parser. The command (src/cmd_import.c: --framework and its help;
 * report/importrun.c: its errors), the detection of a log's format, the parsers' "not this format"
 * errors and the fuzzers
 * (tests/fuzz/fuzz_logs.c, fuzz_import_out.c) all read it.
 *
 * Adding a format: a parser file logfmt_NAME.c (its parser and signature, log_parse_fn and
 * log_signature_fn), its row in registry.c, and a fixture in tests/logs/ with a test. */
#ifndef CB_LOG_REGISTRY_H
#define CB_LOG_REGISTRY_H

#include <stddef.h>

#include "logimport.h"

typedef struct {
    const char *name;           /* the format's own name: import's "# ..., megatron format" line */
    const char *framework;      /* the schema's `framework` value, --framework's name (common/frameworks.h) */
    const char *title;          /* in messages: "Megatron-LM" */
    log_signature_fn *is_line;  /* 1 when a line is one of its step lines */
    log_parse_fn *parse;
    /* NULL, or 1 for a line only this format's runs print (Megatron-DeepSpeed's "deepspeed ... True"):
     * a log with such a line whose first step line this format reads is this format (log_detect_line) */
    log_signature_fn *is_marker;
} log_format_def;

extern const log_format_def log_formats[]; /* indexed by log_format */
extern const int log_nformats;

/* The format whose framework is `name` or an alias of it (framework_canonical): its index, or -1. */
log_format log_format_find(const char *name);
/* The formats' frameworks (titles when `titles`) as "a, b, c or d" into buf. */
void log_format_list(char *buf, size_t n, int titles);

/* The first line (index into t->line, or -1) that is a step line of any format, and its format: the
 * first row whose signature it matches, unless a later row that reads it too has a marker line in
 * the log (then that row; *marker gets the marker's index, else -1; marker may be NULL). */
int log_detect_line(const text_lines *t, log_format *f, int *marker);
/* The error a parser gives when t has no step line of `want` (the run's format, log_run.format):
 * names the first line of another format and its --framework when there is one, else the first
 * non-blank line, and `expect` (what a step line of `want` looks like). Returns CB_EUSAGE. */
int log_not_format(const text_lines *t, log_format want, const char *expect);

#endif
