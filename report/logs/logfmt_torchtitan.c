/* logfmt_torchtitan.c: torchtitan logs (logimport.h).
 *
 * The step line is MetricsProcessor.log's (torchtitan/components/metrics.py; train.py's training
 * loop in 2024 versions), every field behind an ANSI colour code unless color printing is off:
 *   step: 10  loss:  7.12345  grad_norm:  1.2345  memory: 40.50GiB(51.27%)  tps: 3,456  tflops: 180.12  mfu: 57.73%
 * Older versions print "wps:" for tps and no grad_norm or tflops; "mfu: N/A" when a quantized
 * (float8/MX) run skips MFU. tps is tokens per second per device: the rank's tokens divided by the
 * time and by the non-data-parallel degree (TP x PP x CP). tflops = num_flops_per_token x tps:
 * 6 x (parameters without the embedding) + 12 x layers x heads x head_dim x seq_len per token,
 * PaLM's count (SCHEMA.md's "palm"); mfu divides it by the device's dense BF16 peak
 * (utils.get_peak_flops), which some versions print ("Peak FLOPS used for computing MFU: 9.890e+14").
 * memory is the peak reserved device memory since the last step line, in GiB.
 *
 * Lines read besides: "Building 2-D device mesh with ['dp_shard', 'tp'], [4, 2]" (older) and
 * "Building device mesh with parallelism: pp=1, dp_replicate=1, dp_shard=8, cp=1, tp=1, ep=1,
 * etp=1" (the world size and degrees); "Building llama3 8B with ModelArgs(dim=4096, ...)" (older,
 * one line) or "Building llama3 8Bwith {" and one '"key": value,' line per field (newer): the
 * model's shape; "Model llama3 8B size: 8,030,261,248 total parameters"; "Training starts at step 1, with
 * local batch size 4, global batch size 16, sequence length 4096, ..." (2024 versions).
 * The TOML job config (--config) gives what the log does not (tt_config below). */
#include "registry.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/files.h"
#include "../../common/parse.h"
#include "logrow.h"

/* Its row of the registry (registry.c). */
log_parse_fn log_parse_torchtitan;
log_signature_fn log_is_torchtitan_line;

enum { TT_LINE_MAX = 1024 };

/* The metrics logger's step line (not validate's "validate step:" line). */
int log_is_torchtitan_line(const char *line)
{
    const char *step = strstr(line, "step:");
    return step && !strstr(line, "validate step:") && strstr(step, "loss:") &&
           (strstr(step, "tps:") || strstr(step, "wps:"));
}

/* src without its ANSI escape sequences (ESC '[' parameters final-byte) into dst. */
static void strip_ansi(char *dst, size_t n, const char *src)
{
    size_t k = 0;
    while (*src && k + 1 < n) {
        if (src[0] == '\033' && src[1] == '[') {
            src += 2;
            while (*src && !(*src >= '@' && *src <= '~')) src++;
            if (*src) src++;
            continue;
        }
        dst[k++] = *src++;
    }
    dst[k] = '\0';
}

/* The word "key:" in s (at the start or after a blank), or NULL. */
static const char *find_key(const char *s, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = strstr(s, key); p; p = strstr(p + 1, key))
        if ((p == s || p[-1] == ' ' || p[-1] == '\t') && p[n] == ':') return p + n + 1;
    return NULL;
}

/* The value of "key: V" in s as a number: V up to a blank or '(', its thousands separators and
 * `unit` suffix removed. 1 read, 0 absent, CB_EUSAGE after an error naming path:line and the key.
 * "N/A" (mfu of a quantized run) reads as absent. */
static int tt_field(const char *s, const char *key, const char *unit, const char *path, int line, double *out)
{
    const char *p = find_key(s, key);
    if (!p) return 0;
    p += strspn(p, " ");
    char tok[64], what[CB_PATH_MAX + 64];
    size_t k = 0, len = strcspn(p, " \t(");
    snprintf(what, sizeof what, "%s:%d: '%s'", path, line, key);
    for (const char *c = p; (c = memchr(c, ',', (size_t)(p + len - c))); c++) /* thousands separators only */
        if (c == p || strspn(c + 1, "0123456789") != 3 || (c[4] >= '0' && c[4] <= '9'))
            return err_usage("%s: expected a decimal number (',' between groups of 3 digits), got '%.*s'", what,
                             (int)len, p);
    for (; *p && *p != ' ' && *p != '\t' && *p != '(' && k + 1 < sizeof tok; p++)
        if (*p != ',') tok[k++] = *p;
    tok[k] = '\0';
    size_t ul = strlen(unit);
    if (k >= ul && ul && strcmp(tok + k - ul, unit) == 0) tok[k - ul] = '\0';
    if (strcmp(tok, "N/A") == 0) return 0;
    return parse_double(tok, 0, 1e15, what, out) == 0 ? 1 : CB_EUSAGE;
}

static int tt_step(log_run *r, const char *s, const char *path, int line)
{
    log_step st = log_step_unset(line);
    double step = NAN, wps = NAN;
    int rc = tt_field(s, "step", "", path, line, &step);
    if (rc >= 0 && !(step >= 0 && step <= 1e15 && step == floor(step)))
        rc = err_usage("%s:%d: 'step': expected a whole number, got '%g'", path, line, step);
    if (rc >= 0) rc = tt_field(s, "loss", "", path, line, &st.loss);
    if (rc >= 0) rc = tt_field(s, "memory", "GiB", path, line, &st.mem_gib);
    if (rc >= 0) rc = tt_field(s, "tps", "", path, line, &st.tokens_per_s_per_device);
    if (rc >= 0) rc = tt_field(s, "wps", "", path, line, &wps);
    if (rc >= 0) rc = tt_field(s, "tflops", "", path, line, &st.tflops_per_device);
    if (rc >= 0) rc = tt_field(s, "mfu", "%", path, line, &st.mfu_pct);
    if (rc < 0) return CB_EUSAGE;
    if (isnan(st.tokens_per_s_per_device)) st.tokens_per_s_per_device = wps;
    st.iter = (long)step;
    if (!isnan(st.tflops_per_device) || !isnan(st.mfu_pct))
        snprintf(r->flop_convention, sizeof r->flop_convention, "palm");
    return log_run_add_step(r, &st);
}

/* The number after `key=` or `"key": ` in s (a model args field), or NaN. */
static double model_arg(const char *s, const char *key)
{
    char pat[2][48];
    snprintf(pat[0], sizeof pat[0], "%s=", key);
    snprintf(pat[1], sizeof pat[1], "\"%s\":", key);
    for (int k = 0; k < 2; k++)
        for (const char *p = strstr(s, pat[k]); p; p = strstr(p + 1, pat[k]))
            if (p == s || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z'))) {
                char *end;
                double v = strtod(p + strlen(pat[k]), &end);
                return end == p + strlen(pat[k]) ? NAN : v;
            }
    return NAN;
}

/* FeedForward's hidden width (torchtitan/models/llama3/model/model.py): 2/3 of 4 x dim, times
 * ffn_dim_multiplier when set, rounded up to a multiple of multiple_of. */
static long llama_ffn(int dim, double multiplier, int multiple_of)
{
    long h = (long)(2 * (4.0 * dim) / 3);
    if (multiplier > 0) h = (long)(multiplier * (double)h);
    return multiple_of * ((h + multiple_of - 1) / multiple_of);
}

/* A model-args block (one line, or a JSON object over the lines that follow): the model's shape. */
static int tt_model_args(log_run *r, const text_lines *t, int i)
{
    double a[7] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    static const char *const keys[7] = {"dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "multiple_of",
                                        "ffn_dim_multiplier"};
    int last = strstr(t->line[i], "ModelArgs(") ? i : i + 200 < t->n ? i + 200 : t->n - 1;
    for (int j = i; j <= last; j++) {
        for (int k = 0; k < 7; k++)
            if (isnan(a[k])) a[k] = model_arg(t->line[j], keys[k]);
        if (j > i && t->line[j][0] == '}') break;
    }
    if (!(a[0] > 0 && a[0] < 1e7 && a[1] > 0 && a[1] < 1e5 && a[2] > 0 && a[2] < 1e5)) return 0;
    int multiple_of = a[5] >= 1 && a[5] < 1e7 ? (int)a[5] : 256;
    long ffn = llama_ffn((int)a[0], a[6] > 0 && a[6] < 100 ? a[6] : 0, multiple_of);
    if (ffn > INT_MAX) return 0; /* a shape past every bound, as an out-of-range dim */
    r->d_model = (int)a[0], r->layers = (int)a[1], r->heads = (int)a[2];
    r->kv_heads = a[3] > 0 && a[3] < 1e5 ? (int)a[3] : r->heads;
    if (a[4] > 0 && a[4] < 1e9) r->vocab = (int)a[4];
    r->ffn_dim = (int)ffn;
    return 1;
}

/* "Building 2-D device mesh with ['dp_shard', 'tp'], [4, 2]" or "Building device mesh with
 * parallelism: pp=1, dp_replicate=1, dp_shard=8, cp=1, tp=1, ...": the world size and degrees. */
static int tt_mesh(log_run *r, const char *s, const char *path, int line)
{
    long deg[5] = {1, 1, 1, 1, 1}; /* pp, dp_replicate, dp_shard, cp, tp */
    static const char *const names[5] = {"pp", "dp_replicate", "dp_shard", "cp", "tp"};
    const char *list = strstr(s, "'], [");
    if (strstr(s, "parallelism:")) {
        for (int k = 0; k < 5; k++) {
            char pat[24];
            snprintf(pat, sizeof pat, " %s=", names[k]);
            const char *p = strstr(s, pat);
            if (!p || (deg[k] = strtol(p + strlen(pat), NULL, 10)) < 1 || deg[k] > 1000000) return 0;
        }
    } else if (list) { /* names in brackets, then their sizes; "dp" is whichever DP dimension is on */
        const char *nm = strchr(s, '[');
        char *end;
        for (const char *p = list + 4; *p == '[' || *p == ',' || *p == ' ';) {
            long v = strtol(p + 1, &end, 10);
            if (end == p + 1 || v < 1 || v > 1000000 || !(nm = strchr(nm, '\''))) return 0;
            size_t len = strcspn(nm + 1, "'");
            for (int k = 0; k < 5; k++)
                if (len == strlen(names[k]) && strncmp(nm + 1, names[k], len) == 0) deg[k] = v;
            if (len == 2 && strncmp(nm + 1, "dp", 2) == 0) deg[2] = v;
            nm += len + 2, p = end;
        }
    } else {
        return 0;
    }
    long devices;
    if (log_degrees_product(deg, 5, LOG_MAX_DEVICES, &devices) != 0)
        return err_usage("%s:%d: a device mesh of pp %ld x dp_replicate %ld x dp_shard %ld x cp %ld x tp %ld: more "
                         "than %d devices",
                         path, line, deg[0], deg[1], deg[2], deg[3], deg[4], LOG_MAX_DEVICES);
    r->pp = (int)deg[0], r->cp = (int)deg[3], r->tp = (int)deg[4];
    r->dp = (int)(deg[1] * deg[2]); /* at most `devices` */
    r->devices = devices;
    if (deg[2] > 1) snprintf(r->sharding, sizeof r->sharding, "%s", deg[1] > 1 ? "hybrid" : "zero3");
    return 0;
}

/* "with local batch size 8, global batch size 64, gradient accumulation steps 1, sequence length 2048,
 * ..." (2025's "Trainer is initialized ..."; 2024's "Training starts at step 1, with ..." has no
 * accumulation steps): the three sizes, 1 when all are there. */
static int tt_batch_line(const char *p, long *local, long *global, long *seq)
{
    static const char *const keys[3] = {"local batch size ", "global batch size ", "sequence length "};
    long *out[3] = {local, global, seq};
    for (int k = 0; k < 3; k++) {
        const char *q = strstr(p, keys[k]);
        char *end;
        if (!q) return 0;
        *out[k] = strtol(q + strlen(keys[k]), &end, 10);
        if (end == q + strlen(keys[k]) || *out[k] < 1 || *out[k] > 100000000) return 0;
    }
    return 1;
}

/* "Applied selective activation checkpointing to the model" (apply_ac: "Applied {mode} activation
 * checkpointing"): the recompute column, selective or full. */
static void tt_recompute(log_run *r, const char *mode)
{
    if (strncmp(mode, "selective ", 10) == 0) snprintf(r->recompute, sizeof r->recompute, "selective");
    else if (strncmp(mode, "full ", 5) == 0) snprintf(r->recompute, sizeof r->recompute, "full");
}

/* "llama3 8B with ...", "llama3 8Bwith {" or "llama3 8B size: ..." (after "Building " or "Model "):
 * the model, a preset of data/models.csv when NAME-FLAVOR in lower case is one ("llama2 7B":
 * llama2-7b, its arch with it), else NAME-FLAVOR as printed (the # lines say it is not a preset). */
static void tt_model_name(log_run *r, const char *p)
{
    char name[32], flavor[32], lower[64];
    if (sscanf(p, "%31s %31s", name, flavor) != 2 || strcmp(flavor, "with") == 0) return;
    size_t n = strlen(flavor);
    if (n > 4 && strcmp(flavor + n - 4, "with") == 0) flavor[n - 4] = '\0'; /* "8Bwith {" */
    snprintf(lower, sizeof lower, "%s-%s", name, flavor);
    for (char *q = lower; *q; q++) *q = (char)tolower((unsigned char)*q);
    if (log_preset_fill(r, lower, 0)) snprintf(r->model, sizeof r->model, "%s", lower);
    else snprintf(r->model, sizeof r->model, "%s-%s", name, flavor);
}

/* Line `line` of the log states the batch sizes and the sequence length (batch), else the mesh. */
static void tt_stated(log_run *r, int line, int batch)
{
    static const log_field b[] = {LF_MICRO_BATCH, LF_GLOBAL_BATCH, LF_SEQ}, m[] = {LF_TP, LF_PP, LF_DP, LF_DEVICES};
    for (int k = 0; k < (batch ? 3 : 4); k++) log_run_stated(r, batch ? b[k] : m[k], line, 0);
}

/* The lines before and between the step lines that state the run's setup. Returns 0 or CB_EUSAGE
 * (a device mesh past the bounds, error printed). */
static int tt_setup_line(log_run *r, const text_lines *t, int i, const char *s)
{
    const char *p;
    double v;
    long local, global, seq;
    if ((p = strstr(s, "with local batch size ")) && tt_batch_line(p, &local, &global, &seq))
        r->micro_batch = local, r->global_batch = global, r->seq_len = seq, tt_stated(r, i + 1, 1);
    else if ((p = strstr(s, "Applied ")) && strstr(p, " activation checkpointing"))
        tt_recompute(r, p + 8);
    else if ((p = strstr(s, "Peak FLOPS used for computing MFU:")) && sscanf(p + 34, "%lf", &v) == 1 && v > 0 &&
             v < 1e20)
        r->peak_tflops = v / 1e12;
    else if (strstr(s, "Building ") && strstr(s, "device mesh")) {
        if (tt_mesh(r, s, t->path, i + 1) != 0) return CB_EUSAGE;
        if (r->devices > 0) tt_stated(r, i + 1, 0);
    } else if (strstr(s, "Building ") && (strstr(s, "ModelArgs(") || strstr(s, "with {"))) {
        tt_model_args(r, t, i);
        tt_model_name(r, strstr(s, "Building ") + 9);
    }
    else if ((p = strstr(s, " size: ")) && strstr(p, " total parameters")) {
        char digits[32];
        size_t k = 0;
        for (p += 7; (*p == ',' || (*p >= '0' && *p <= '9')) && k + 1 < sizeof digits; p++)
            if (*p != ',') digits[k++] = *p;
        digits[k] = '\0';
        if (k && k < 16) r->params = strtod(digits, NULL);
        const char *m = strstr(s, "Model ");
        if (m) tt_model_name(r, m + 6);
    }
    return 0;
}

/* The model flavors of torchtitan's model args tables: llama3_args (torchtitan/models/llama3/__init__.py)
 * and the 2024 versions' llama2_configs (torchtitan/models/llama/__init__.py). vocab 0: the tokenizer
 * sets it (llama2). llama3's debugmodel is the current table's (older versions: 8 layers, the test
 * tokenizer's vocabulary); a model-args line in the log overrides the table. */
typedef struct {
    const char *name, *flavor;
    int dim, layers, heads, kv_heads, multiple_of;
    double ffn_multiplier;
    int vocab;
} tt_flavor;
static const tt_flavor tt_flavors[] = {
    {"llama3", "debugmodel", 256, 6, 16, 16, 256, 0, 2048},  {"llama3", "8B", 4096, 32, 32, 8, 1024, 1.3, 128256},
    {"llama3", "70B", 8192, 80, 64, 8, 4096, 1.3, 128256},    {"llama3", "405B", 16384, 126, 128, 8, 4096, 1.2, 128256},
    {"llama2", "7B", 4096, 32, 32, 32, 256, 0, 0},            {"llama2", "13B", 5120, 40, 40, 40, 256, 0, 0},
    {"llama2", "70B", 8192, 80, 64, 8, 4096, 1.3, 0},
};

/* [model] name and flavor: the model's name and, unless the log gave it, its shape. */
static void tt_config_model(const kv_conf *c, log_run *r)
{
    const kv_item *name = kvconf_get(c, "model.name"), *flavor = kvconf_get(c, "model.flavor");
    if (!name || !flavor) return;
    char both[80];
    snprintf(both, sizeof both, "%.31s %.31s", name->value, flavor->value);
    tt_model_name(r, both);
    if (strncmp(name->value, "llama", 5) == 0) snprintf(r->arch, sizeof r->arch, "llama");
    log_run_note(r, "flavor %s", flavor->value);
    if (r->layers) return;
    for (size_t i = 0; i < sizeof tt_flavors / sizeof tt_flavors[0]; i++) {
        const tt_flavor *f = &tt_flavors[i];
        if (strcmp(f->name, name->value) != 0 || strcmp(f->flavor, flavor->value) != 0) continue;
        r->d_model = f->dim, r->layers = f->layers, r->heads = f->heads, r->kv_heads = f->kv_heads;
        r->ffn_dim = (int)llama_ffn(f->dim, f->ffn_multiplier, f->multiple_of), r->vocab = f->vocab;
        return;
    }
    log_run_note(r, "%s %s: a flavor whose shape is not known here", name->value, flavor->value);
}

/* The parallel degrees ([parallelism]; [training] and [experimental] in 2024 versions). The log's
 * device mesh line, when there was one, has set them already. */
static int tt_config_parallel(const kv_conf *c, log_run *r)
{
    static const char *const rep_k[] = {"data_parallel_replicate_degree", NULL},
                             *const shard_k[] = {"data_parallel_shard_degree", NULL},
                             *const tp_k[] = {"tensor_parallel_degree", NULL},
                             *const pp_k[] = {"pipeline_parallel_degree", NULL},
                             *const cp_k[] = {"context_parallel_degree", NULL};
    long rep = 1, shard = 0, tp = 1, pp = 1, cp = 1;
    if (kvconf_long(c, rep_k, 1, 1000000, &rep) < 0 || kvconf_long(c, shard_k, -1, 1000000, &shard) < 0 ||
        kvconf_long(c, tp_k, 1, 1000000, &tp) < 0 || kvconf_long(c, pp_k, 1, 1000000, &pp) < 0 ||
        kvconf_long(c, cp_k, 1, 1000000, &cp) < 0)
        return CB_EUSAGE;
    if (r->devices) return 0;
    long devices = 0;
    if (shard > 0 && log_degrees_product((const long[]){rep, shard, tp, pp, cp}, 5, LOG_MAX_DEVICES, &devices) != 0)
        return err_usage("%s:%d: data_parallel_replicate_degree %ld x data_parallel_shard_degree %ld x tp %ld x pp %ld "
                         "x cp %ld: more than %d devices",
                         c->path, kvconf_find(c, "data_parallel_shard_degree")->line, rep, shard, tp, pp, cp,
                         LOG_MAX_DEVICES);
    r->tp = (int)tp, r->pp = (int)pp, r->cp = (int)cp;
    if (shard == -1) { /* the devices left over: unknown without the world size */
        log_run_note(r, "data_parallel_shard_degree -1 (FSDP over the devices left)");
        return 0;
    }
    if (shard == 0) return 0;
    r->dp = (int)(rep * shard); /* at most `devices` */
    r->devices = devices;
    snprintf(r->sharding, sizeof r->sharding, "%s", shard > 1 ? (rep > 1 ? "hybrid" : "zero3") : "none");
    return 0;
}

/* [training]: batch sizes, sequence length, precision; float8, activation checkpointing, compile. */
static int tt_config_training(const kv_conf *c, log_run *r)
{
    static const char *const local_k[] = {"training.local_batch_size", "training.batch_size", NULL},
                             *const global_k[] = {"training.global_batch_size", NULL},
                             *const seq_k[] = {"training.seq_len", NULL},
                             *const f8_k[] = {"float8.enable_float8_linear", NULL},
                             *const compile_k[] = {"compile.enable", "training.compile", NULL};
    long global = -1;
    int f8 = 0, compile = 0;
    if (kvconf_long(c, local_k, 1, 1000000000, &r->micro_batch) < 0 ||
        kvconf_long(c, global_k, -1, 1000000000, &global) < 0 ||
        kvconf_long(c, seq_k, 1, 1000000000, &r->seq_len) < 0 ||
        kvconf_bool(c, f8_k, &f8) < 0 || kvconf_bool(c, compile_k, &compile) < 0)
        return CB_EUSAGE;
    /* global_batch_size -1 (the default): local_batch_size x the data-parallel degree */
    if (global > 0) r->global_batch = global;
    else if (r->micro_batch && r->dp) r->global_batch = r->micro_batch * r->dp;
    const kv_item *conv = kvconf_get(c, "model.converters"), *mp = kvconf_find(c, "mixed_precision_param");
    if (conv && strstr(conv->value, "float8")) f8 = 1;
    if (mp && strcmp(mp->value, "bfloat16") == 0) snprintf(r->precision, sizeof r->precision, "bf16-mixed");
    if (mp && strcmp(mp->value, "float32") == 0) snprintf(r->precision, sizeof r->precision, "fp32");
    if (f8) {
        snprintf(r->precision, sizeof r->precision, "fp8");
        log_run_note(r, "float8 linear layers");
        /* torchao's default recipe is tensorwise dynamic (per-tensor current scaling); rowwise has no term */
        const kv_item *rn = kvconf_find(c, "recipe_name");
        if (!rn || strcmp(rn->value, "tensorwise") == 0 || strcmp(rn->value, "None") == 0)
            snprintf(r->fp8_recipe, sizeof r->fp8_recipe, "current");
        else
            log_run_note(r, "float8 recipe '%.24s' (no fp8_recipe term)", rn->value);
    }
    if (compile) log_run_note(r, "torch.compile");
    log_run_stated_kv(r, LF_MICRO_BATCH, c, local_k, 1), log_run_stated_kv(r, LF_SEQ, c, seq_k, 1);
    if (global > 0) log_run_stated_kv(r, LF_GLOBAL_BATCH, c, global_k, 1);
    const kv_item *ac = kvconf_get(c, "activation_checkpoint.mode");
    if (ac && (strcmp(ac->value, "none") == 0 || strcmp(ac->value, "selective") == 0 || strcmp(ac->value, "full") == 0))
        snprintf(r->recompute, sizeof r->recompute, "%s", ac->value);
    else if (ac)
        log_run_note(r, "activation checkpointing '%.40s'", ac->value);
    return 0;
}

/* The TOML job config: what the log does not state. */
static int tt_config(const char *path, log_run *r)
{
    kv_conf c;
    if (kvconf_load_toml(&c, path) != 0) return CB_EUSAGE;
    tt_config_model(&c, r);
    int rc = tt_config_parallel(&c, r);
    if (rc == 0) rc = tt_config_training(&c, r);
    kvconf_free(&c);
    if (rc == 0) snprintf(r->config_from, sizeof r->config_from, "--config %.200s", path);
    return rc;
}

/* 1 when s, line i of t, is the log's last non-blank line and ends inside its tps figure ("tps: 5,6":
 * a group of fewer than 3 digits after the last ','): a pasted excerpt cut short, not a step. */
static int tt_cut_last(const text_lines *t, int i, const char *s)
{
    for (int j = i + 1; j < t->n; j++)
        if (t->line[j][strspn(t->line[j], " \t")]) return 0;
    const char *p = find_key(s, "tps");
    if (!p) return 0;
    p += strspn(p, " ");
    size_t len = strspn(p, "0123456789,");
    const char *comma = memchr(p, ',', len), *last = comma;
    while (comma && (comma = memchr(comma + 1, ',', (size_t)(p + len - comma - 1)))) last = comma;
    return last && p[len + strspn(p + len, " \t")] == '\0' && (size_t)(p + len - last - 1) < 3;
}

int log_parse_torchtitan(const text_lines *t, const char *config_path, log_run *r)
{
    char s[TT_LINE_MAX];
    for (int i = 0; i < t->n; i++) {
        strip_ansi(s, sizeof s, t->line[i]);
        if (log_is_torchtitan_line(s) && tt_cut_last(t, i, s)) {
            log_run_note(r, "the last line (%d) ends inside its tps figure (cut short): dropped", i + 1);
        } else if (log_is_torchtitan_line(s)) {
            if (tt_step(r, s, t->path, i + 1) != 0) return CB_EUSAGE;
        } else if (tt_setup_line(r, t, i, s) != 0) {
            return CB_EUSAGE;
        }
    }
    if (r->nsteps == 0)
        return log_not_format(t, r->format,
                              "'step: 10  loss:  7.1234  memory: 40.50GiB(51.27%)  tps: 3,456  tflops: 180.12  "
                              "mfu: 57.73%'");
    return config_path ? tt_config(config_path, r) : 0;
}
