/* logfmt_megatron.c: Megatron-LM logs (logimport.h): the arguments block _print_args prints at start
 * (megatron/training/arguments.py, megatron/arguments.py before 2024) and training_log's iteration lines
 * (megatron/training/training.py, megatron/training.py before 2024). And Megatron-DeepSpeed's, the
 * fork BigScience (BLOOM) and many HPC centres ran: the same block and lines, its training_log
 * (bigscience-workshop/Megatron-DeepSpeed megatron/training.py:788-820 @8387ae17) printing the time in
 * seconds, "consumed tokens", "samples per second" and "TFLOPs" (2022 on; 2021's lines are
 * Megatron-LM's, in ms). */
#include "registry.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../common/err.h"
#include "../../common/parse.h"

/* Its rows of the registry (registry.c). */
log_parse_fn log_parse_megatron, log_parse_megatron_ds;
log_signature_fn log_is_megatron_line, log_is_megatron_ds_line, log_is_megatron_ds_marker;

/* training_log's iteration line: " [date] iteration   10/  100 | consumed samples: ... | elapsed
 * time per iteration (ms): ... |" */
int log_is_megatron_line(const char *line)
{
    return strstr(line, "iteration") && strstr(line, "elapsed time per iteration (ms):") != NULL;
}

/* Megatron-DeepSpeed's iteration line: " iteration 31214/ 115311 | consumed samples: ... | consumed
 * tokens: ... | elapsed time per iteration (s): 106.46 | ...", or Megatron-LM's (its 2021 lines). */
int log_is_megatron_ds_line(const char *line)
{
    return log_is_megatron_line(line) ||
           (strstr(line, "iteration") && strstr(line, "elapsed time per iteration (s):") != NULL);
}

/* A line only a Megatron-DeepSpeed run prints: its arguments block's "  deepspeed ..... True", or
 * DeepSpeed's own start-up ("DeepSpeed is enabled.", "DeepSpeed info: version=..."). With it, a log
 * of Megatron-LM-style lines (2021's ms layout) is Megatron-DeepSpeed's (registry.c's detection). */
int log_is_megatron_ds_marker(const char *line)
{
    if (strncmp(line, "  deepspeed .", 13) == 0) {
        size_t n = strlen(line);
        while (n && line[n - 1] == ' ') n--;
        return n >= 4 && strncmp(line + n - 4, "True", 4) == 0;
    }
    return strstr(line, "DeepSpeed is enabled.") || strstr(line, "DeepSpeed info: version=");
}

/* One "  name ..... value" line of the arguments block: pointers into the log's lines. */
typedef struct {
    const char *name, *value;
    size_t len; /* of name */
    int line;
} mg_arg;

typedef struct {
    const char *path;
    mg_arg *a;
    int n;
    int first, last; /* 1-based lines of the block's opening and closing rules (0: no block) */
    int closed;      /* 1: its closing rule is there; 0: truncated (it states only what it printed) */
} mg_args;

/* "  name ...... value" (_print_args: two blanks, the name, 48 - len(name) dots, the value) into *a. */
static int arg_split(const char *s, int line, mg_arg *a)
{
    if (strncmp(s, "  ", 2) != 0 || s[2] == ' ' || s[2] == '\0') return 0;
    const char *name = s + 2, *p = name + strcspn(name, " ");
    if (*p != ' ') return 0;
    size_t len = (size_t)(p - name);
    p += strspn(p, " ");
    p += strspn(p, ".");
    if (*p == ' ') p++;
    *a = (mg_arg){.name = name, .len = len, .value = p, .line = line};
    return 1;
}

/* The first arguments block of t into *A (A->first == 0 when there is none). */
static int args_collect(const text_lines *t, mg_args *A)
{
    memset(A, 0, sizeof *A);
    A->path = t->path;
    int i = 0;
    while (i < t->n && !strstr(t->line[i], "-- arguments --")) i++;
    if (i >= t->n) return 0;
    A->first = A->last = i + 1;
    unsigned rows = (unsigned)(t->n - i); /* at least 1: line i is the block's opening rule */
    if (!(A->a = malloc((size_t)rows * sizeof *A->a))) return err_msg("out of memory");
    for (i++; i < t->n && !strstr(t->line[i], "-- end of arguments --"); i++) {
        if (!arg_split(t->line[i], i + 1, &A->a[A->n])) break; /* no closing rule: the block ends here */
        A->n++;
    }
    A->closed = i < t->n && strstr(t->line[i], "-- end of arguments --") != NULL;
    A->last = A->closed ? i + 1 : i;
    return 0;
}

/* The line of argument `name`, NULL when the block does not print it. */
static const mg_arg *arg_find(const mg_args *A, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < A->n; i++)
        if (A->a[i].len == n && strncmp(A->a[i].name, name, n) == 0) return &A->a[i];
    return NULL;
}

/* The printed value of argument `name`, NULL when it is not printed or None. */
static const char *arg_get(const mg_args *A, const char *name, int *line)
{
    const mg_arg *a = arg_find(A, name);
    if (!a || strcmp(a->value, "None") == 0) return NULL;
    if (line) *line = a->line;
    return a->value;
}

/* Argument `name` as an integer in [lo, hi]: 1 found, 0 absent or None, CB_EUSAGE (error printed). */
static int arg_long(const mg_args *A, const char *name, long lo, long hi, long *out)
{
    int line = 0;
    const char *v = arg_get(A, name, &line);
    if (!v) return 0;
    char what[4200];
    snprintf(what, sizeof what, "%s:%d: argument '%s'", A->path, line, name);
    return parse_long(v, lo, hi, 0, what, out) == 0 ? 1 : CB_EUSAGE;
}

/* 1 when argument `name` reads True, 0 when False, -1 when it is absent or says something else. */
static int arg_bool(const mg_args *A, const char *name)
{
    const char *v = arg_get(A, name, NULL);
    return !v ? -1 : strcmp(v, "True") == 0 ? 1 : strcmp(v, "False") == 0 ? 0 : -1;
}

/* Records the line of argument `name` as stating field f, when the block prints a value for it. */
static void arg_stated(const mg_args *A, const char *name, log_field f, log_run *r)
{
    int line = 0;
    if (arg_get(A, name, &line)) log_run_stated(r, f, line, 0);
}

/* The sizes and degrees: integers of the block. */
static int args_sizes(const mg_args *A, log_run *r, long *log_interval)
{
    long world = 0, v = 0;
    struct { const char *name; int *dst; long hi; } ints[] = {
        {"num_layers", &r->layers, INT_MAX}, {"hidden_size", &r->d_model, INT_MAX},
        {"num_attention_heads", &r->heads, INT_MAX}, {"ffn_hidden_size", &r->ffn_dim, INT_MAX},
        {"vocab_size", &r->vocab, INT_MAX}, {"padded_vocab_size", &r->vocab, INT_MAX},
        {"tensor_model_parallel_size", &r->tp, LOG_MAX_DEGREE},
        {"pipeline_model_parallel_size", &r->pp, LOG_MAX_DEGREE}, {"context_parallel_size", &r->cp, LOG_MAX_DEGREE},
        {"virtual_pipeline_model_parallel_size", &r->vp, LOG_MAX_DEGREE},
        {"data_parallel_size", &r->dp, LOG_MAX_DEVICES},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) { /* padded_vocab_size after vocab_size: it wins */
        int rc = arg_long(A, ints[i].name, 1, ints[i].hi, &v);
        if (rc < 0) return rc;
        if (rc) *ints[i].dst = (int)v;
    }
    if (arg_bool(A, "group_query_attention") == 1) {
        int rc = arg_long(A, "num_query_groups", 1, INT_MAX, &v);
        if (rc < 0) return rc;
        if (rc) r->kv_heads = (int)v;
    }
    if (arg_long(A, "seq_length", 1, LONG_MAX, &r->seq_len) < 0 ||
        arg_long(A, "micro_batch_size", 1, LONG_MAX, &r->micro_batch) < 0 ||
        arg_long(A, "global_batch_size", 1, LONG_MAX, &r->global_batch) < 0 ||
        arg_long(A, "world_size", 1, LOG_MAX_DEVICES, &world) < 0 ||
        arg_long(A, "log_interval", 1, LONG_MAX, log_interval) < 0)
        return CB_EUSAGE;
    r->devices = world;
    static const struct { const char *name; log_field f; } where[] = {
        {"tensor_model_parallel_size", LF_TP}, {"pipeline_model_parallel_size", LF_PP},
        {"data_parallel_size", LF_DP},         {"seq_length", LF_SEQ},
        {"micro_batch_size", LF_MICRO_BATCH},  {"global_batch_size", LF_GLOBAL_BATCH},
        {"world_size", LF_DEVICES}};
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) arg_stated(A, where[i].name, where[i].f, r);
    long model = (long)r->tp * r->pp * (r->cp ? r->cp : 1);
    if (!r->dp && world && model && world % model == 0) r->dp = (int)(world / model);
    return 0;
}

/* The precision the block states: fp8, bf16 or fp16 when it says so; fp32 when a closed block
 * (or one that prints all three switches) says none (older Megatron had no fp8 switch); "" when a
 * truncated block does not print them. */
static void args_precision(const mg_args *A, log_run *r)
{
    const mg_arg *fp8 = arg_find(A, "fp8"), *bf16 = arg_find(A, "bf16"), *fp16 = arg_find(A, "fp16");
    const char *v8 = arg_get(A, "fp8", NULL), *prec = "";
    int line = 0;
    if (v8 && strcmp(v8, "False") != 0) prec = "fp8", line = fp8->line;
    else if (arg_bool(A, "bf16") == 1) prec = "bf16-mixed", line = bf16->line;
    else if (arg_bool(A, "fp16") == 1) prec = "fp16-mixed", line = fp16->line;
    else if (A->closed || (fp8 && bf16 && fp16)) prec = "fp32", line = bf16 ? bf16->line : 0;
    snprintf(r->precision, sizeof r->precision, "%s", prec);
    if (line) log_run_stated(r, LF_PRECISION, line, 0);
    /* --fp8-recipe (megatron/training/arguments.py:1057 @core_v0.12.0, default delayed): tensorwise is
     * TE's per-tensor current scaling; blockwise and custom have no term (noted) */
    static const char *const mg[3] = {"delayed", "tensorwise", "mxfp8"};
    static const char *const schema[3] = {"delayed", "current", "mxfp8"};
    const char *recipe = strcmp(prec, "fp8") == 0 ? arg_get(A, "fp8_recipe", NULL) : NULL;
    for (int i = 0; recipe && i < 3; i++)
        if (strcmp(recipe, mg[i]) == 0) snprintf(r->fp8_recipe, sizeof r->fp8_recipe, "%s", schema[i]);
    if (recipe && !r->fp8_recipe[0])
        log_run_note(r, "fp8_recipe '%.24s' (no fp8_recipe term: delayed assumed)", recipe);
}

/* The published-runs columns overlap and attention (SCHEMA.md) as the block states them. overlap:
 * the three flags of Megatron-Core (core_v0.4.0 on) when a closed block prints them or a truncated
 * one prints all three; before them a closed block's DDP_impl (torch all-reduces buckets under the
 * backward, local after it: Megatron-LM README.md:175 @23.04). attention: attention_backend flash /
 * fused (cuDNN) / unfused; else, in a closed block, the local implementation's kernel
 * (use_flash_attn: flash, else materialised); with transformer_impl transformer_engine and no
 * backend named, LOG_ATTN_TE: Transformer Engine's own choice, which depends on the GPU (logrow.c). */
static void args_framework(const mg_args *A, log_run *r)
{
    static const char *const flags[3] = {"overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap"};
    static const char *const names[3] = {"grad_reduce", "param_gather", "tp_comm"};
    int printed = 0;
    size_t len = 0;
    for (int i = 0; i < 3; i++) {
        int b = arg_bool(A, flags[i]);
        printed += b >= 0;
        if (b == 1) len += (size_t)snprintf(r->overlap + len, sizeof r->overlap - len, "%s%s", len ? "+" : "", names[i]);
    }
    const char *ddp = arg_get(A, "DDP_impl", NULL);
    if (!(printed == 3 || (printed && A->closed))) r->overlap[0] = '\0';
    else if (!len) snprintf(r->overlap, sizeof r->overlap, "none");
    if (!printed && A->closed && ddp) snprintf(r->overlap, sizeof r->overlap, "%s", strcmp(ddp, "torch") == 0 ? "grad_reduce" : "none");
    const char *backend = arg_get(A, "attention_backend", NULL), *impl = arg_get(A, "transformer_impl", NULL);
    const char *attn = "";
    if (backend && strstr(backend, "unfused")) attn = "materialised";
    else if (backend && strstr(backend, "fused")) attn = "cudnn";
    else if (backend && strstr(backend, "flash")) attn = "flash";
    else if (impl && strcmp(impl, "transformer_engine") == 0) attn = LOG_ATTN_TE;
    else if (A->closed && (!impl || strcmp(impl, "local") == 0))
        attn = arg_bool(A, "use_flash_attn") == 1 ? "flash" : "materialised";
    snprintf(r->attention, sizeof r->attention, "%s", attn);
}

/* The names: precision, sharding, recompute, arch, and what else matters (notes). A switch a closed
 * block does not print is off (older Megatron had no distributed optimizer, fp8 or
 * recompute_granularity); a truncated block leaves what it does not print unset. */
static void args_names(const mg_args *A, log_run *r)
{
    const char *rg = arg_get(A, "recompute_granularity", NULL);
    args_precision(A, r);
    if (A->closed || arg_find(A, "use_distributed_optimizer"))
        snprintf(r->sharding, sizeof r->sharding, "%s",
                 arg_bool(A, "use_distributed_optimizer") == 1 ? "zero1" : "none");
    /* before recompute_granularity (2022), activations_checkpoint_method uniform/block recomputed whole layers,
     * and before it (2020-2021, and Megatron-DeepSpeed) checkpoint_activations True */
    if (!rg && (arg_get(A, "activations_checkpoint_method", NULL) || arg_bool(A, "checkpoint_activations") == 1))
        rg = "full";
    if (A->closed || rg || arg_find(A, "recompute_granularity"))
        snprintf(r->recompute, sizeof r->recompute, "%s", rg ? rg : "none");
    r->sequence_parallel = arg_bool(A, "sequence_parallel");
    int untie = arg_bool(A, "untie_embeddings_and_output_weights");
    r->tied_embeddings = untie < 0 ? -1 : !untie;
    const char *pos = arg_get(A, "position_embedding_type", NULL);
    int swiglu = arg_bool(A, "swiglu");
    const char *arch = !pos                                ? ""
                       : strcmp(pos, "rope") == 0 && swiglu == 1 ? "llama"
                       : strcmp(pos, "rope") == 0 && swiglu == 0 ? "neox"
                       : strcmp(pos, "learned_absolute") == 0   ? "gpt"
                                                                : "";
    snprintf(r->arch, sizeof r->arch, "%s", arch);
    args_framework(A, r);
    static const char *const notes[] = {"overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap"};
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++)
        if (arg_bool(A, notes[i]) == 1) log_run_note(r, "%s", notes[i]);
}

/* What the iteration lines say besides the steps: iterations Megatron skipped (inf/NaN gradients
 * under fp16's loss scaling) and those whose loss was NaN; Megatron-DeepSpeed's consumed tokens per
 * consumed sample (the sequence length, when every line gives the same whole number). */
typedef struct {
    long skipped, nan;
    int skipped_line, nan_line; /* the first line that counts one */
    double samples, tokens;     /* this line's consumed samples and tokens (NaN: not printed) */
    long seq;                   /* tokens / samples of the lines so far (0: none; -1: not one whole number) */
    int seq_line;               /* the line that gave it, or the first that did not agree */
} mg_tally;

/* training_log's fields this parser reads; every other "name: value |" field is passed over.
 * Megatron-DeepSpeed's: the time in s, samples per second, TFLOPs, consumed tokens (and 2021's
 * "lm-loss"). */
enum {
    MG_MS, MG_S, MG_TFLOPS, MG_DS_TFLOPS, MG_SPS, MG_BATCH, MG_LOSS, MG_LOSS_DASH, MG_SKIPPED, MG_NAN, MG_SAMPLES,
    MG_TOKENS, MG_NFIELDS
};
static const char *const mg_fields[MG_NFIELDS] = {
    "elapsed time per iteration (ms)", "elapsed time per iteration (s)", "throughput per GPU (TFLOP/s/GPU)", "TFLOPs",
    "samples per second", "global batch size", "lm loss", "lm-loss", "number of skipped iterations",
    "number of nan iterations", "consumed samples", "consumed tokens"};

/* A field's figure into the step and the tally. */
static void mg_store(int f, double d, long n, log_step *s, mg_tally *k)
{
    if (f == MG_MS) s->step_s = d / 1000;
    if (f == MG_S) s->step_s = d;
    if (f == MG_TFLOPS || f == MG_DS_TFLOPS) s->tflops_per_device = d;
    if (f == MG_SPS) s->samples_per_s = d;
    if (f == MG_LOSS || f == MG_LOSS_DASH) s->loss = d;
    if (f == MG_BATCH) s->global_batch = n;
    if (f == MG_SAMPLES) k->samples = (double)n;
    if (f == MG_TOKENS) k->tokens = (double)n;
}

/* One " name: value " field of the line at `line` into *s and *k. */
static int mg_field(const char *path, int line, char *seg, log_step *s, mg_tally *k)
{
    char *colon = strrchr(seg, ':');
    if (!colon) return 0;
    *colon = '\0';
    const char *key = text_trim(seg), *v = text_trim(colon + 1);
    int f = 0;
    while (f < MG_NFIELDS && strcmp(key, mg_fields[f]) != 0) f++;
    if (f == MG_NFIELDS || ((f == MG_LOSS || f == MG_LOSS_DASH) && strcasecmp(v, "inf") == 0))
        return 0; /* an infinite loss: unset */
    char what[4300];
    snprintf(what, sizeof what, "%s:%d: '%s'", path, line, key);
    double d = 0;
    long n = 0;
    int whole = f == MG_BATCH || f == MG_SKIPPED || f == MG_NAN || f == MG_SAMPLES || f == MG_TOKENS;
    double hi = f == MG_MS ? LOG_STEP_MAX_S * 1e3 : f == MG_S ? LOG_STEP_MAX_S : 1e300;
    if (whole) {
        if (parse_long(v, f == MG_BATCH, LONG_MAX, 0, what, &n) != 0) return CB_EUSAGE;
    } else if (parse_double(v, 0, hi, what, &d) != 0) {
        return CB_EUSAGE;
    }
    mg_store(f, d, n, s, k);
    if (f == MG_SKIPPED && n > 0 && !k->skipped_line) k->skipped_line = line;
    if (f == MG_NAN && n > 0 && !k->nan_line) k->nan_line = line;
    if ((f == MG_SKIPPED && __builtin_add_overflow(k->skipped, n, &k->skipped)) ||
        (f == MG_NAN && __builtin_add_overflow(k->nan, n, &k->nan)))
        return err_usage("%s:%d: '%s': %ld brings the log's total past %ld", path, line, key, n, LONG_MAX);
    return 0;
}

/* Megatron-DeepSpeed's consumed tokens / consumed samples of line `line` into the tally's sequence
 * length: kept while every line gives the same whole number. */
static void mg_seq_tally(mg_tally *k, int line)
{
    if (k->seq < 0 || !(k->samples > 0) || !(k->tokens > 0)) return;
    double x = k->tokens / k->samples;
    long v = (long)round(x);
    if (x > 1e9 || fabs(x - (double)v) > 1e-9 * x || (k->seq && v != k->seq)) k->seq = -1, k->seq_line = line;
    else if (!k->seq) k->seq = v, k->seq_line = line;
}

/* " [date time] iteration   10/  100" (the line's first field): the iteration number into *iter. */
static int mg_iteration(const char *path, int line, const char *seg, long *iter)
{
    const char *p = strstr(seg, "iteration");
    char num[24] = "", what[4200];
    if (p) {
        p += strlen("iteration");
        p += strspn(p, " ");
        size_t n = strspn(p, "0123456789");
        if (n && n < sizeof num && p[n] == '/') memcpy(num, p, n);
    }
    if (!num[0]) return err_usage("%s:%d: expected 'iteration N/ M |', got '%.60s'", path, line, seg);
    snprintf(what, sizeof what, "%s:%d: 'iteration'", path, line);
    return parse_long(num, 0, LONG_MAX, 0, what, iter);
}

/* The iteration line t->line[i]: one step. */
static int mg_step(const text_lines *t, int i, log_run *r, mg_tally *k)
{
    char *buf = strdup(t->line[i]);
    if (!buf) return err_msg("out of memory");
    log_step s = log_step_unset(i + 1);
    k->samples = k->tokens = NAN;
    char *save = NULL, *seg = strtok_r(buf, "|", &save);
    int rc = mg_iteration(t->path, i + 1, seg, &s.iter);
    while (rc == 0 && (seg = strtok_r(NULL, "|", &save))) rc = mg_field(t->path, i + 1, seg, &s, k);
    free(buf);
    if (rc == 0 && isnan(s.step_s))
        rc = err_usage("%s:%d: '%s': expected a number, got nothing", t->path, i + 1,
                       strstr(t->line[i], mg_fields[MG_S]) ? mg_fields[MG_S] : mg_fields[MG_MS]);
    if (rc == 0) mg_seq_tally(k, i + 1);
    return rc ? rc : log_run_add_step(r, &s);
}

/* Iterations each line's figures average over. training_log logs when iteration % log_interval == 0,
 * averaging over the interval, and once after the first iteration of a run (one iteration). Without
 * the arguments' log_interval, the difference between the last two step numbers stands in for it. */
static void mg_intervals(log_run *r, long log_interval)
{
    long every = log_interval;
    int k = r->nsteps - 2; /* the last line before the last step (a step repeated by several ranks: once) */
    while (k >= 0 && r->steps[k].iter == r->steps[r->nsteps - 1].iter) k--;
    if (!every && k >= 0) every = r->steps[r->nsteps - 1].iter - r->steps[k].iter;
    if (every < 1) every = 1;
    for (int i = 0; i < r->nsteps; i++) r->steps[i].iters = r->steps[i].iter % every == 0 ? every : 1;
}

/* The integer at `at` on line i of t, in 1 .. hi; else CB_EUSAGE after one error naming the line
 * and what the log calls the figure. */
static int mg_line_long(const text_lines *t, int i, const char *at, const char *label, long hi, long *out)
{
    char num[24] = "", what[4200];
    size_t n = strspn(at, "0123456789");
    if (n < sizeof num) memcpy(num, at, n);
    snprintf(what, sizeof what, "%s:%d: '%s'", t->path, i + 1, label);
    return parse_long(num, 1, hi, 0, what, out);
}

/* The lines before the arguments block: "using world size: 32, data-parallel size: 8, ..." (the
 * ranks; checked against the block's world_size) and "using torch.bfloat16 for parameters ..."
 * (the precision, when the block does not state it). */
static int mg_preamble(const text_lines *t, log_run *r)
{
    static const char *const dtypes[] = {"bfloat16", "bf16-mixed", "float16", "fp16-mixed", "float32", "fp32"};
    for (int i = 0; i < t->n && !log_is_megatron_ds_line(t->line[i]); i++) {
        const char *ws = strstr(t->line[i], "using world size: "), *dt = strstr(t->line[i], "using torch.");
        for (int k = 0; dt && !*r->precision && k < 6; k += 2)
            if (strncmp(dt + 12, dtypes[k], strlen(dtypes[k])) == 0 && dt[12 + strlen(dtypes[k])] == ' ') {
                snprintf(r->precision, sizeof r->precision, "%s", dtypes[k + 1]);
                log_run_stated(r, LF_PRECISION, i + 1, 0);
            }
        if (!ws) continue;
        long world = 0;
        if (mg_line_long(t, i, ws + 18, "using world size", LONG_MAX, &world) != 0) return CB_EUSAGE;
        if (r->devices > 0 && r->devices != world)
            return err_usage("%s:%d: 'using world size: %ld', but %s:%d says world_size %ld: the lines of two runs in "
                             "one log?",
                             t->path, i + 1, world, t->path, r->stated[LF_DEVICES].line, r->devices);
        if (r->devices <= 0) r->devices = world, log_run_stated(r, LF_DEVICES, i + 1, 0);
    }
    return 0;
}

/* " > padded vocab (size: 50257) with 943 dummy tokens (new size: 51200)" (the tokenizer's build, before
 * the first step): the model's vocabulary, the embedding's rows. A block's padded_vocab_size that
 * differs is noted (the line is what the model was built with). */
static int mg_padded_vocab(const text_lines *t, log_run *r, int block_line)
{
    for (int i = 0; i < t->n && !log_is_megatron_ds_line(t->line[i]); i++) {
        const char *p = strstr(t->line[i], "> padded vocab (size: "), *q = p ? strstr(p, "(new size: ") : NULL;
        if (!q) continue;
        long v = 0;
        if (mg_line_long(t, i, q + 11, "padded vocab ... new size", INT_MAX, &v) != 0) return CB_EUSAGE;
        if (block_line && r->vocab != v)
            log_run_note(r, "padded vocab %ld at line %d, but the arguments block's padded_vocab_size is %d (line %d): "
                            "the line's is used",
                         v, i + 1, r->vocab, block_line);
        r->vocab = (int)v;
        log_run_stated(r, LF_VOCAB, i + 1, 0);
        return 0;
    }
    return 0;
}

/* What the arguments block says that the step lines need: the log interval, and whether
 * Megatron-DeepSpeed's TFLOPs are SCHEMA.md's megatron-2021 count (checkpoint_activations True, no
 * glu_activation: 24 x 4 B s l h^2 (1 + s/6h + V/16lh), megatron/training.py:759-764 @8387ae17). */
typedef struct {
    long log_interval;
    int ds_flops_2021;
} mg_block;

/* The run's configuration from its arguments block (none: left unset) and the lines before it. */
static int mg_config(const text_lines *t, log_run *r, mg_block *B)
{
    mg_args A;
    int rc = args_collect(t, &A), vocab_line = 0, padded_line = 0;
    if (rc == 0 && A.first) {
        rc = args_sizes(&A, r, &B->log_interval);
        if (rc == 0) args_names(&A, r);
        snprintf(r->config_from, sizeof r->config_from, "the arguments block (lines %d-%d%s)", A.first, A.last,
                 A.closed ? "" : ", truncated: no '-- end of arguments --' line");
        if (!A.closed)
            log_run_note(r, "the arguments block is truncated after line %d: only what it printed is stated", A.last);
        B->ds_flops_2021 = arg_bool(&A, "checkpoint_activations") == 1 && !arg_get(&A, "glu_activation", NULL);
        if (arg_get(&A, "padded_vocab_size", &padded_line)) log_run_stated(r, LF_VOCAB, padded_line, 0);
        else if (arg_get(&A, "vocab_size", &vocab_line)) log_run_stated(r, LF_VOCAB, vocab_line, 0);
    }
    free(A.a);
    if (rc == 0) rc = mg_preamble(t, r);
    return rc == 0 ? mg_padded_vocab(t, r, padded_line) : rc;
}

/* 1 when line s opens like an iteration line ("iteration  74/  100 | consumed samples: ...") but
 * lacks its time: a line cut short (a pasted excerpt's last line), not a step. */
static int mg_cut_line(const char *s)
{
    const char *p = strstr(s, "iteration");
    if (!p || log_is_megatron_ds_line(s)) return 0;
    p += strlen("iteration");
    p += strspn(p, " ");
    size_t n = strspn(p, "0123456789");
    return n && p[n] == '/' && strstr(p, "| consumed samples:") != NULL;
}

/* The FLOP count the lines' TFLOP/s are in. Megatron-LM's num_floating_point_operations: 3 passes
 * (forward, weight and data gradients) x 2 FLOPs per multiply-add over the GEMMs, attention and
 * logits, no recomputed forward: for a GPT block (ffn 4h, no GQA) 72Bslh^2(1 + s/6h + V/12lh),
 * SCHEMA.md's megatron-core (versions since 2026 halve the s^2 attention term for the causal mask).
 * Megatron-DeepSpeed's TFLOPs: megatron-2021 with checkpoint_activations and no GLU; otherwise (3 for
 * 4 without recompute, 32 for 24 with GLU, or a block that does not say) no schema convention: the
 * figure is dropped and noted. */
static void mg_flops(log_run *r, int ds, const mg_block *B)
{
    int any = 0;
    for (int i = 0; i < r->nsteps; i++) any |= !isnan(r->steps[i].tflops_per_device);
    if (!any) return;
    if (!ds || B->ds_flops_2021) {
        snprintf(r->flop_convention, sizeof r->flop_convention, "%s", ds ? "megatron-2021" : "megatron-core");
        return;
    }
    for (int i = 0; i < r->nsteps; i++) r->steps[i].tflops_per_device = NAN;
    log_run_note(r, "TFLOPs dropped: Megatron-DeepSpeed counts 24 (32 with GLU) x 3 (4 with checkpoint_activations) "
                    "B s l h^2 (1 + s/6h + V/16lh), SCHEMA.md's megatron-2021 only with checkpoint_activations and "
                    "no GLU, which %s",
                 *r->config_from ? "the arguments block does not say" : "no arguments block here states");
}

/* Megatron-LM's (ds 0) or Megatron-DeepSpeed's (ds 1) log. */
static int mg_parse(const text_lines *t, const char *config_path, log_run *r, int ds)
{
    if (config_path)
        return err_usage("flag '--config': %s logs carry their arguments; no config file is read",
                         ds ? "Megatron-DeepSpeed" : "Megatron-LM");
    mg_block B = {0, 0};
    int rc = mg_config(t, r, &B), cut = 0, cut_line = 0;
    mg_tally k = {0};
    for (int i = 0; rc == 0 && i < t->n; i++) {
        if (ds ? log_is_megatron_ds_line(t->line[i]) : log_is_megatron_line(t->line[i])) rc = mg_step(t, i, r, &k);
        else if (mg_cut_line(t->line[i]) && !cut++) cut_line = i + 1;
    }
    if (rc) return rc;
    if (cut)
        log_run_note(r, "%d iteration line%s without 'elapsed time per iteration (%s)' (cut short) dropped, the first "
                        "at line %d",
                     cut, cut > 1 ? "s" : "", ds ? "s" : "ms", cut_line);
    if (!r->nsteps)
        return log_not_format(t, r->format,
                              ds ? "' iteration 10/ 100 | ... | elapsed time per iteration (s): 10.2 |'"
                                 : "' iteration 10/ 100 | ... | elapsed time per iteration (ms): 812.3 |'");
    mg_intervals(r, B.log_interval);
    mg_flops(r, ds, &B);
    if (k.seq > 0 && !r->seq_len) {
        r->seq_len = k.seq;
        log_run_note(r, "sequence length %ld: consumed tokens / consumed samples on every line (line %d)", k.seq,
                     k.seq_line);
    }
    if (k.skipped) log_run_note(r, "%ld skipped iterations (the first at line %d)", k.skipped, k.skipped_line);
    if (k.nan) log_run_note(r, "%ld iterations with a NaN loss (the first at line %d)", k.nan, k.nan_line);
    return 0;
}

int log_parse_megatron(const text_lines *t, const char *config_path, log_run *r)
{
    return mg_parse(t, config_path, r, 0);
}

int log_parse_megatron_ds(const text_lines *t, const char *config_path, log_run *r)
{
    return mg_parse(t, config_path, r, 1);
}
