/* logfmt_nemo.c: NeMo logs (logimport.h): the config NeMo 1.x's megatron_gpt_pretraining.py logs as YAML
 * at start (or the --config YAML), and one step per progress update that shows "train_step_timing in s"
 * (exp_manager.py's TimingCallback): Lightning's tqdm bar (nlp_overrides.py's CustomProgressBar, updates
 * separated by '\r') or NeMo 2.0's ProgressPrinter lines (lightning/pytorch/callbacks/progress_printer.py). */
#include "registry.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/parse.h"

/* Its row of the registry (registry.c). */
log_parse_fn log_parse_nemo;
log_signature_fn log_is_nemo_line;

/* The largest step number read (global_step's bound): step counts stay far from overflowing. */
#define NM_MAX_STEP 1000000000000000L

/* PyTorch Lightning's progress line with NeMo's logged metrics: "Epoch 0: ... train_step_timing in
 * s=1.21 ..." */
static int nm_has_timing(const char *line)
{
    return strstr(line, "train_step_timing") != NULL;
}

/* ... and a Lightning bar of NeMo's metrics without it ("Epoch 0: ... global_step=794.0,
 * consumed_samples=1.63e+6]": the TimingCallback off), which the parser refuses with that reason. */
int log_is_nemo_line(const char *line)
{
    return nm_has_timing(line) || (strstr(line, "Epoch ") && strstr(line, "global_step=") &&
                                   strstr(line, "consumed_samples="));
}

/* The first of names (NULL-terminated) the config sets, as a string; NULL when none is (or null). */
static const char *conf_str(const kv_conf *c, const char *const *names)
{
    for (; *names; names++) {
        const kv_item *it = kvconf_find(c, *names);
        if (it && it->value[0] && strcmp(it->value, "null") != 0) return it->value;
    }
    return NULL;
}

/* The model's sizes and degrees ("model.X" in the printed config, "X" at the top of hparams.yaml). */
static int conf_sizes(const kv_conf *c, log_run *r)
{
    struct { const char *name; int *dst; long hi; } ints[] = {
        {"num_layers", &r->layers, INT_MAX}, {"hidden_size", &r->d_model, INT_MAX},
        {"num_attention_heads", &r->heads, INT_MAX}, {"num_query_groups", &r->kv_heads, INT_MAX},
        {"ffn_hidden_size", &r->ffn_dim, INT_MAX}, {"tensor_model_parallel_size", &r->tp, LOG_MAX_DEGREE},
        {"pipeline_model_parallel_size", &r->pp, LOG_MAX_DEGREE},
        {"virtual_pipeline_model_parallel_size", &r->vp, LOG_MAX_DEGREE},
        {"context_parallel_size", &r->cp, LOG_MAX_DEGREE},
    };
    long v = 0;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        char model[96];
        snprintf(model, sizeof model, "model.%s", ints[i].name);
        int rc = kvconf_long(c, (const char *const[]){model, ints[i].name, NULL}, 1, ints[i].hi, &v);
        if (rc < 0) return rc;
        if (rc) *ints[i].dst = (int)v;
    }
    if (kvconf_long(c, (const char *const[]){"model.micro_batch_size", "micro_batch_size", NULL}, 1, LONG_MAX,
                    &r->micro_batch) < 0 ||
        kvconf_long(c, (const char *const[]){"model.global_batch_size", "global_batch_size", NULL}, 1, LONG_MAX,
                    &r->global_batch) < 0 ||
        kvconf_long(c, (const char *const[]){"model.encoder_seq_length", "encoder_seq_length", "seq_length", NULL}, 1,
                    LONG_MAX, &r->seq_len) < 0)
        return CB_EUSAGE;
    return 0;
}

/* trainer.devices x trainer.num_nodes (devices -1 or "auto": all the node has, unknown here). */
static int conf_devices(const kv_conf *c, log_run *r)
{
    const char *d = conf_str(c, (const char *const[]){"trainer.devices", NULL});
    long per_node = 0, nodes = 1;
    if (!d || strcmp(d, "-1") == 0 || strcmp(d, "auto") == 0) return 0;
    if (kvconf_long(c, (const char *const[]){"trainer.devices", NULL}, 1, LOG_MAX_DEVICES, &per_node) < 0 ||
        kvconf_long(c, (const char *const[]){"trainer.num_nodes", NULL}, 1, LOG_MAX_DEVICES, &nodes) < 0)
        return CB_EUSAGE;
    if (log_degrees_product((const long[]){per_node, nodes}, 2, LOG_MAX_DEVICES, &r->devices) != 0)
        return err_usage("%s:%d: key 'trainer.num_nodes': %ld nodes of %ld devices: more than %d devices", c->path,
                         kvconf_find(c, "trainer.num_nodes")->line, nodes, per_node, LOG_MAX_DEVICES);
    r->devices_per_node = per_node;
    long model;
    if (log_degrees_product((const long[]){r->tp ? r->tp : 1, r->pp ? r->pp : 1, r->cp ? r->cp : 1}, 3, r->devices,
                            &model) == 0 &&
        r->devices % model == 0)
        r->dp = (int)(r->devices / model);
    return 0;
}

/* Lightning's precision spellings (and the model's fp8 switch) as the schema's names. */
static const char *precision_name(const char *p, int fp8)
{
    static const struct { const char *lightning, *schema; } tab[] = {
        {"bf16", "bf16-mixed"}, {"bf16-mixed", "bf16-mixed"}, {"bf16-true", "bf16"}, {"16", "fp16-mixed"},
        {"16-mixed", "fp16-mixed"}, {"fp16", "fp16-mixed"}, {"32", "fp32"}, {"32-true", "fp32"},
    };
    if (fp8 == 1) return "fp8";
    for (size_t i = 0; p && i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(p, tab[i].lightning) == 0) return tab[i].schema;
    return "";
}

/* The names and switches: precision, sharding, recompute, arch, sequence parallelism, tied embeddings. */
static int conf_names(const kv_conf *c, log_run *r)
{
    int fp8 = -1, sp = -1, tied = -1;
    if (kvconf_bool(c, (const char *const[]){"model.fp8", "fp8", NULL}, &fp8) < 0 ||
        kvconf_bool(c, (const char *const[]){"model.sequence_parallel", "sequence_parallel", NULL}, &sp) < 0 ||
        kvconf_bool(c, (const char *const[]){"model.share_embeddings_and_output_weights",
                                             "share_embeddings_and_output_weights", NULL},
                    &tied) < 0)
        return CB_EUSAGE;
    r->sequence_parallel = sp, r->tied_embeddings = tied;
    snprintf(r->precision, sizeof r->precision, "%s",
             precision_name(conf_str(c, (const char *const[]){"trainer.precision", "precision", NULL}), fp8));
    const char *opt = conf_str(c, (const char *const[]){"model.optim.name", "optim.name", NULL});
    if (opt) /* NeMo's distributed optimizer is Megatron's: optimizer state sharded over data parallel */
        snprintf(r->sharding, sizeof r->sharding, "%s", strcmp(opt, "distributed_fused_adam") == 0 ? "zero1" : "none");
    const char *gran = conf_str(c, (const char *const[]){"activations_checkpoint_granularity", NULL});
    const char *method = conf_str(c, (const char *const[]){"activations_checkpoint_method", NULL});
    if (gran && (strcmp(gran, "full") == 0 || strcmp(gran, "selective") == 0))
        snprintf(r->recompute, sizeof r->recompute, "%s", gran);
    else if (kvconf_find(c, "activations_checkpoint_granularity"))
        snprintf(r->recompute, sizeof r->recompute, "none");
    if (method && gran && strcmp(gran, "full") == 0) log_run_note(r, "activations_checkpoint_method %s", method);
    const char *pos = conf_str(c, (const char *const[]){"position_embedding_type", NULL});
    const char *act = conf_str(c, (const char *const[]){"activation", NULL});
    int swiglu = act && strstr(act, "swiglu") != NULL, rope = pos && strcmp(pos, "rope") == 0;
    const char *arch = rope && swiglu                               ? "llama"
                       : rope                                       ? "neox"
                       : pos && strcmp(pos, "learned_absolute") == 0 ? "gpt"
                                                                     : "";
    snprintf(r->arch, sizeof r->arch, "%s", arch);
    return 0;
}

/* The YAML the log prints after "Experiment configuration" (or on "Hydra config:"'s line): the next
 * "[NeMo I ...]" line's message and the lines indented under it (NeMo's formatter indents a message's
 * lines by 4). *first, *last: its 1-based lines (0: none). */
static int yaml_in_log(const text_lines *t, kv_conf *c, int *first, int *last)
{
    static char empty[1];
    int m = 0;
    while (m < t->n && !strstr(t->line[m], "Experiment configuration") && !strstr(t->line[m], "Hydra config:")) m++;
    *first = *last = 0;
    if (m == t->n) return 0;
    const char *tail = strstr(t->line[m], "Hydra config:");
    int h = tail ? m : m + 1; /* the header: "[NeMo I ...]", or "\x1b[32m[NeMo I ...]" on a terminal */
    while (!tail && h < t->n && t->line[h][0] != '[' && t->line[h][0] != '\x1b') h++;
    if (h == t->n) return 0;
    int end = h + 1;
    while (end < t->n && (t->line[end][0] == ' ' || t->line[end][0] == '\0')) end++;
    char **lines = malloc((size_t)end * sizeof *lines), *head = NULL;
    if (lines && tail && asprintf(&head, "    %s", tail + strlen("Hydra config:")) < 0) head = NULL;
    if (!lines || (tail && !head)) {
        free(lines);
        return err_msg("out of memory");
    }
    memcpy(lines, t->line, (size_t)end * sizeof *lines);
    lines[h] = head ? head : empty; /* the header line's own message: the first YAML line, or nothing */
    int rc = kvconf_yaml_lines(c, t->path, lines, h, end - h);
    free(head), free(lines);
    if (rc == 0) *first = h + 1, *last = end;
    return rc ? CB_EUSAGE : 0;
}

/* One metric of an update: train_step_timing in s, reduced_train_loss, global_step, global_batch_size,
 * consumed_samples. */
static int nm_metric(const char *path, int line, const char *key, const char *v, log_step *s, double *gstep)
{
    static const char *const keys[] = {"train_step_timing in s", "reduced_train_loss", "global_step",
                                       "global_batch_size", "consumed_samples"};
    int f = 0;
    while (f < 5 && strcmp(key, keys[f]) != 0) f++;
    if (f == 5 || (f == 1 && strcmp(v, "nan") == 0)) return 0; /* a NaN loss: unset */
    char what[4200];
    snprintf(what, sizeof what, "%s:%d: '%s'", path, line, key);
    double d = 0;
    if (parse_double(v, 0, f >= 2 ? 1e15 : f == 0 ? LOG_STEP_MAX_S : 1e300, what, &d) != 0) return CB_EUSAGE;
    if (f == 0) s->step_s = d;
    if (f == 1) s->loss = d;
    if (f == 2) *gstep = floor(d);
    if (f == 3) s->global_batch = (long)d;
    if (f == 4) s->consumed_samples = d;
    return 0;
}

/* The tqdm bar's update "Epoch 0: :  10%|#  | 10/100 [00:21<03:09, name=value, ...]": the counter (steps
 * done) into *count, the metrics into *s. */
static int nm_tqdm(const char *path, int line, char *u, log_step *s, double *gstep, long *count)
{
    char *open = strrchr(u, '['), *close = open ? strchr(open, ']') : NULL, *end = NULL;
    if (!open) return 0;
    if (close) *close = '\0';
    char *p = open;
    while (p > u && p[-1] == ' ') p--;
    while (p > u && p[-1] != ' ' && p[-1] != '|') p--;
    long n = strtol(p, &end, 10);
    if (end != p && *end == '/' && (n < 0 || n > NM_MAX_STEP))
        return err_usage("%s:%d: the step counter: expected a whole number from 0 to %ld, got '%.*s'", path, line,
                         NM_MAX_STEP, (int)(end - p), p);
    if (end != p && *end == '/') *count = n;
    char *save = NULL;
    int named = 0; /* after the first name=value, every part is one: a comma inside a value splits it */
    for (char *part = strtok_r(open + 1, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(part, '=');
        if (!eq && named)
            return err_usage("%s:%d: expected 'name=value' in the progress bar's metrics, got '%s' (a decimal comma?)",
                             path, line, text_trim(part));
        if (!eq) continue;
        named = 1;
        *eq = '\0';
        if (nm_metric(path, line, text_trim(part), text_trim(eq + 1), s, gstep) != 0) return CB_EUSAGE;
    }
    return 0;
}

/* ProgressPrinter's line "Training epoch 0, iteration 9/99 | name: value | ...": it prints the steps done
 * less one as the iteration. */
static int nm_printer(const char *path, int line, char *u, log_step *s, double *gstep, long *count)
{
    char *it = strstr(u, "iteration "), *end = NULL, *save = NULL;
    long n = it ? strtol(it + strlen("iteration "), &end, 10) : 0;
    if (it && end != it + strlen("iteration ") && *end == '/' && (n < 0 || n >= NM_MAX_STEP))
        return err_usage("%s:%d: 'iteration': expected a whole number from 0 to %ld, got '%.*s'", path, line,
                         NM_MAX_STEP - 1, (int)(end - it) - 10, it + 10);
    if (it && end != it + strlen("iteration ") && *end == '/') *count = n + 1;
    strtok_r(u, "|", &save);
    for (char *part = strtok_r(NULL, "|", &save); part; part = strtok_r(NULL, "|", &save)) {
        char *colon = strrchr(part, ':');
        if (!colon) continue;
        *colon = '\0';
        if (nm_metric(path, line, text_trim(part), text_trim(colon + 1), s, gstep) != 0) return CB_EUSAGE;
    }
    return 0;
}

/* One progress update u of line `line`: a step, unless it repeats the last step's number on the same
 * line (the bar redrawn at the same step); a step printed again on another line (several ranks'
 * bars) is a step line the steady state counts once (steady.c). */
static int nm_update(const char *path, int line, char *u, log_run *r)
{
    log_step s = log_step_unset(line);
    double gstep = NAN;
    long count = 0;
    int tqdm = strstr(u, "train_step_timing in s=") != NULL;
    if (!tqdm && !strstr(u, "train_step_timing in s:")) return 0; /* names the metric, prints none: a command */
    int rc = tqdm ? nm_tqdm(path, line, u, &s, &gstep, &count) : nm_printer(path, line, u, &s, &gstep, &count);
    if (rc) return rc;
    if (isnan(s.step_s))
        return err_usage("%s:%d: 'train_step_timing in s': expected a number, got nothing", path, line);
    s.iter = !isnan(gstep) ? (long)gstep + 1 : count; /* global_step is logged before the step counts */
    const log_step *prev = r->nsteps ? &r->steps[r->nsteps - 1] : NULL;
    if (prev && s.iter && prev->iter == s.iter && prev->line == line) return 0; /* the bar redrawn on its line */
    int k = r->nsteps - 1; /* the step before (a step printed again by another rank: the repeats count once) */
    while (k >= 0 && r->steps[k].iter == s.iter) k--;
    if (!tqdm && k >= 0 && s.iter > r->steps[k].iter) s.iters = s.iter - r->steps[k].iter; /* over log_interval */
    return log_run_add_step(r, &s);
}

/* The updates of one '\r'-separated piece u of line `line`. A tqdm bar ends at the ']' closing its
 * metrics: what follows on the line is another update or another printer's text glued to it (a
 * validation bar's residue "...val_loss=2.800]dation DataLoader 0: : 51it [00:20,  2.53it/s]", a
 * "[rank: 1] Monitored metric ..." line, a second bar after a literal "^M"), read on its own. */
static int nm_piece(const char *path, int line, char *u, log_run *r)
{
    int rc = 0;
    while (rc == 0 && u && *u) {
        char *m = strstr(u, "train_step_timing in s="), *close = m ? strchr(m, ']') : NULL, *next = NULL;
        if (!m) return nm_has_timing(u) ? nm_update(path, line, u, r) : 0;
        char kept = '\0';
        if (close) next = close + 1, kept = *next, *next = '\0';
        rc = nm_update(path, line, u, r);
        if (next) *next = kept;
        u = next;
    }
    return rc;
}

/* Every update of t->line[i] (a tqdm bar rewrites itself with '\r': one physical line, many updates). */
static int nm_line(const text_lines *t, int i, log_run *r)
{
    char *buf = strdup(t->line[i]), *save = NULL;
    if (!buf) return err_msg("out of memory");
    int rc = 0;
    for (char *u = strtok_r(buf, "\r", &save); rc == 0 && u; u = strtok_r(NULL, "\r", &save))
        rc = nm_piece(t->path, i + 1, u, r);
    free(buf);
    return rc;
}

/* The lines of the config that state what a flag also gives. */
static void nm_stated(const kv_conf *c, log_run *r, int in_config)
{
    static const struct {
        log_field f;
        const char *names[4];
    } said[] = {
        {LF_TP, {"model.tensor_model_parallel_size", "tensor_model_parallel_size"}},
        {LF_PP, {"model.pipeline_model_parallel_size", "pipeline_model_parallel_size"}},
        {LF_MICRO_BATCH, {"model.micro_batch_size", "micro_batch_size"}},
        {LF_GLOBAL_BATCH, {"model.global_batch_size", "global_batch_size"}},
        {LF_SEQ, {"model.encoder_seq_length", "encoder_seq_length", "seq_length"}},
        {LF_PER_NODE, {"trainer.devices"}},
        {LF_PRECISION, {"trainer.precision", "precision"}},
    };
    for (size_t k = 0; k < sizeof said / sizeof said[0]; k++)
        if (!r->stated[said[k].f].line) log_run_stated_kv(r, said[k].f, c, said[k].names, in_config);
}

/* The configuration from --config, else from the YAML the log prints (none: left unset). */
static int nm_config(const text_lines *t, const char *config_path, log_run *r)
{
    kv_conf c;
    int first = 0, last = 0;
    memset(&c, 0, sizeof c);
    int rc = config_path ? kvconf_load_yaml(&c, config_path) : yaml_in_log(t, &c, &first, &last);
    if (rc == 0 && (config_path || first)) {
        rc = conf_sizes(&c, r);
        if (rc == 0) rc = conf_devices(&c, r);
        if (rc == 0) rc = conf_names(&c, r);
        if (rc == 0) nm_stated(&c, r, config_path != NULL);
        if (config_path)
            snprintf(r->config_from, sizeof r->config_from, "--config %s", config_path);
        else
            snprintf(r->config_from, sizeof r->config_from, "the config it prints (lines %d-%d)", first, last);
    }
    kvconf_free(&c);
    return rc;
}

/* NeMo 1.x's bar states no global batch, but consumed_samples / (global_step + 1) on each line
 * (nlp_overrides.py: the samples consumed up to and including the step). When every line that prints
 * both gives the same whole number, it is each step's global batch; otherwise (a ramp-up, a restart
 * or a rounded print: dgxc's GPT-3 175B bar gives 76800 / 51 = 1505.9) it is not used, and a note
 * says why. Not where the configuration states the batch. */
static void nm_batch_from_consumed(log_run *r)
{
    long b = 0;
    int n = 0, bad = 0;
    if (r->global_batch > 0) return; /* the configuration states it */
    for (int k = 0; k < r->nsteps; k++) {
        const log_step *s = &r->steps[k];
        if (s->global_batch > 0) return; /* the lines state it (NeMo 2.0) */
        if (!isfinite(s->consumed_samples) || s->iter <= 0) continue;
        double x = s->consumed_samples / (double)s->iter;
        if (!bad && (x < 1 || x > 1e15 || fabs(x - round(x)) > 1e-9 * x || (n && (long)round(x) != b))) {
            bad = s->line;
            log_run_note(r, "consumed_samples / (global_step + 1) = %.9g / %ld = %.6g at line %d%s: not used as the "
                            "global batch",
                         s->consumed_samples, s->iter, x, s->line,
                         n && fabs(x - round(x)) <= 1e-9 * x ? " disagrees with the lines before" : " is not a whole number");
        }
        if (!n++) b = (long)round(x);
    }
    if (bad || !n) return;
    for (int k = 0; k < r->nsteps; k++) r->steps[k].global_batch = b;
    log_run_note(r, "global batch %ld: consumed_samples / (global_step + 1) on %d line%s", b, n, n > 1 ? "s" : "");
}

/* 1 when line s ends right after "train_step_timing in s:" (a ProgressPrinter line cut before its
 * time: a pasted excerpt's last line), not a step. */
static int nm_cut_line(const char *s)
{
    static const char key[] = "train_step_timing in s:";
    const char *m = strstr(s, key);
    return m && !strstr(s, "train_step_timing in s=") && m[sizeof key - 1 + strspn(m + sizeof key - 1, " \t")] == '\0';
}

/* A ProgressPrinter line wrapped after a '|' ("Training epoch 1, iteration 10/999 | lr: ... | " and
 * the rest on the lines below, as a page re-wraps it): t->line[i] and the lines that continue it
 * joined into *joined (malloc'd); returns the index of its last line, or i when it is not one. */
static int nm_wrapped(const text_lines *t, int i, char **joined)
{
    const char *s = t->line[i];
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    *joined = NULL;
    if (nm_has_timing(s) || !strstr(s, "Training epoch ") || !strstr(s, ", iteration ") || !n || s[n - 1] != '|')
        return i;
    int j = i;
    size_t len = strlen(s);
    while (j + 1 < t->n && !strstr(t->line[j + 1], "Training epoch ") && t->line[j + 1][0]) {
        len += strlen(t->line[++j]);
        const char *q = t->line[j];
        size_t m = strlen(q);
        while (m && (q[m - 1] == ' ' || q[m - 1] == '\t')) m--;
        if (!m || q[m - 1] != '|') break;
    }
    if (j == i || !(*joined = malloc(len + 1))) return i;
    (*joined)[0] = '\0';
    for (int k = i; k <= j; k++) strcat(*joined, t->line[k]);
    if (nm_has_timing(*joined)) return j;
    free(*joined), *joined = NULL;
    return i;
}

/* The step lines of t: each progress line's updates, a wrapped printer line joined, a line cut
 * before its time dropped and counted (*cut, the first at *cut_line). */
static int nm_steps(const text_lines *t, log_run *r, int *cut, int *cut_line)
{
    int rc = 0;
    for (int i = 0; rc == 0 && i < t->n; i++) {
        char *joined;
        int last = nm_wrapped(t, i, &joined);
        if (joined) {
            rc = nm_update(t->path, i + 1, joined, r);
            free(joined);
            i = last;
        } else if (nm_cut_line(t->line[i])) {
            if (!(*cut)++) *cut_line = i + 1;
        } else if (nm_has_timing(t->line[i])) {
            rc = nm_line(t, i, r);
        }
    }
    return rc;
}

int log_parse_nemo(const text_lines *t, const char *config_path, log_run *r)
{
    int rc = nm_config(t, config_path, r), cut = 0, cut_line = 0;
    if (rc == 0) rc = nm_steps(t, r, &cut, &cut_line);
    if (rc) return rc;
    if (cut)
        log_run_note(r,
                     "%d progress line%s ending at 'train_step_timing in s:' (cut short) dropped, the first at line %d",
                     cut, cut > 1 ? "s" : "", cut_line);
    for (int i = 0; !r->nsteps && i < t->n; i++)
        if (!nm_has_timing(t->line[i]) && log_is_nemo_line(t->line[i]))
            return err_usage("%s:%d: a NeMo progress bar without 'train_step_timing in s': no step time to read "
                             "(tqdm's s/it rate is not NeMo's step timing); log with NeMo's timing callback on",
                             t->path, i + 1);
    if (!r->nsteps)
        return log_not_format(t, r->format,
                              "'Epoch 0: :  10%|#  | 10/100 [00:21<03:09, reduced_train_loss=10.40, "
                              "global_step=9.000, train_step_timing in s=1.210]'");
    nm_batch_from_consumed(r);
    return 0;
}
