/* logimport.h: a training run's log (and its config file) read into what it states: the
 * configuration and one record per step line. `costbench import` (report/importrun.c) turns that
 * into one row of the published-runs schema (data/reference/published/SCHEMA.md): the steady
 * state's median and spread, the configuration from the log, the config file or flags.
 *
 * One parser per format (logfmt_NAME.c; registry.c lists them, with what each reads), each learned
 * from the function of the framework that prints the lines. A parser reads what is there and
 * leaves every field the log does not state unset; it does not decide warm-up or compute
 * statistics (steady.c does, for every format alike). */
#ifndef CB_LOGIMPORT_H
#define CB_LOGIMPORT_H

#include "../formats/kvconf.h"

/* A log format: its row in the registry of formats (registry.h's log_formats). */
typedef int log_format;

/* The longest step a parser accepts, in seconds (a day: a longer one is a misread figure). */
#define LOG_STEP_MAX_S 86400.0

/* One step line. Every figure NaN (or 0 for counts) when the line does not print it. */
typedef struct {
    long iter;                 /* the step / iteration number the line gives (0: none) */
    long iters;                /* iterations its figures average over (Megatron's --log-interval; else 1) */
    double step_s;             /* wall-clock seconds per iteration */
    double tflops_per_device;  /* as the framework counts FLOPs (log_run.flop_convention) */
    double tokens_per_s;       /* whole run */
    double tokens_per_s_per_device;
    double samples_per_s;      /* sequences per second, whole run */
    double mfu_pct;            /* as the framework computes it (log_run.peak_tflops when it says) */
    double loss;
    double mem_gib;            /* peak device memory the line reports */
    long global_batch;         /* sequences in this step (0: not printed) */
    double consumed_samples;   /* sequences consumed up to and including this step (NeMo 1.x; NaN: not printed) */
    int line;                  /* 1-based line in the log */
} log_step;

/* The configuration fields a flag of `costbench import` also gives, for log_run.stated. */
typedef enum {
    LF_MODEL, LF_DEVICE, LF_INSTANCE, LF_PRECISION, LF_DEVICES, LF_PER_NODE, LF_TP, LF_PP, LF_DP,
    LF_MICRO_BATCH, LF_GLOBAL_BATCH, LF_SEQ, LF_VOCAB, LF_NFIELDS
} log_field;

/* Where a log states a field: its 1-based line (0: not stated on one line: derived, or unset), in
 * the --config file rather than the log when in_config. */
typedef struct {
    int line, in_config;
} log_where;

/* What a log and its config state. Unset: 0 for counts and sizes, -1 for true/false, NaN for
 * figures, "" for names. Names use the schema's spellings (SCHEMA.md): precision bf16-mixed,
 * fp16-mixed, fp8, fp32, bf16; sharding none, zero1, zero2, zero3, hybrid; recompute none,
 * selective, full; arch gpt, neox, llama, mpt, gptj. */
typedef struct {
    log_format format;
    char model[64], arch[16], precision[16], sharding[16], recompute[16];
    int layers, d_model, heads, kv_heads, ffn_dim, vocab;
    double params;
    int tied_embeddings, sequence_parallel;
    long seq_len, global_batch, micro_batch;
    int tp, pp, dp, cp, vp;
    long devices, devices_per_node; /* world size (accelerators, all nodes); per node */
    double peak_tflops;             /* the per-device peak the log's MFU divides by */
    int stated_warmup;              /* step lines the log's own summary left out as warm-up (-1: not stated) */
    char flop_convention[24];       /* whose FLOP count tflops_per_device / mfu_pct are in (SCHEMA.md) */
    char device[48], instance[64];
    char config_from[256];          /* "the arguments block (lines 3-190)", "--config run.yaml", "" */
    char notes[512];                /* what else the log says that matters ("; "-separated) */
    char overlap[48], attention[24]; /* the schema's overlap list and attention kernel, when the log states them;
                                      * attention LOG_ATTN_TE: Transformer Engine's choice (logrow.c maps it) */
    char fp8_recipe[12];            /* the schema's fp8_recipe (delayed, current, mxfp8) when an fp8 log states it */
    log_where stated[LF_NFIELDS];   /* the line that states each field (log_run_stated) */
    log_step *steps;
    int nsteps, cap;
} log_run;

#define LOG_ATTN_TE "transformer_engine"
void log_run_init(log_run *r, log_format f); /* every field unset */
void log_run_free(log_run *r);
/* Appends a copy of *s. Returns 0 or CB_EFAIL (out of memory, error printed). */
int log_run_add_step(log_run *r, const log_step *s);
/* A step with every figure unset, at `line`. */
log_step log_step_unset(int line);
/* Records that line `line` (1-based) of the log, or of the --config file when in_config, states field f. */
void log_run_stated(log_run *r, log_field f, int line, int in_config);
/* The same for the line of the first of `names` (kvconf_find) that c gives a value (not "", null,
 * None, auto or -1, which state nothing). */
void log_run_stated_kv(log_run *r, log_field f, const kv_conf *c, const char *const *names, int in_config);
/* No step time is 0, and the steps' iteration numbers never go back (those that print one; a step
 * repeated at once, printed by several ranks, is allowed: the steady state counts it once): 0, or
 * CB_EUSAGE after one error naming path:line of the first 0 s step, or of the first step that goes
 * back (a restarted run, the file twice). */
int log_steps_check(const log_run *r, const char *path);
/* Appends "; "-separated text to r->notes (cut at the buffer's end). */
void log_run_note(log_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A parser: reads the log t (and config_path, the --config file, when not NULL) into r (which
 * log_run_init has set to the parser's own format). Returns 0, or CB_EUSAGE after one error naming
 * t->path:line (or the config's path:line): a malformed field of a line it recognises
 * ("megatron.log:12: 'elapsed time per iteration (ms)': expected a number, got 'x'"), or a log
 * with none of its step lines ("megatron.log:1: not a Megatron-LM log: no 'iteration N/ M |'
 * line; the first line reads '...'"; when another format's line is found, that line and format
 * are named instead: registry.h's log_not_format). */
typedef int log_parse_fn(const text_lines *t, const char *config_path, log_run *r);
typedef log_parse_fn *log_parser;
/* A format's signature: 1 when `line` is one of its step lines (checked cheaply: for detection and
 * for naming the format a mismatched log is in), else 0. */
typedef int log_signature_fn(const char *line);

/* Bounds of what a log states, as the published-runs schema bounds them (published.c): the
 * accelerators of a run (a world size, a product of parallel degrees) and one parallel degree. */
enum { LOG_MAX_DEVICES = 10000000, LOG_MAX_DEGREE = 65536 };
/* The product of deg[0..n) into *out: 0, or -1 (*out untouched) when a degree is below 1 or the
 * product passes max (never overflowing on the way). */
int log_degrees_product(const long *deg, int n, long max, long *out);

#endif
