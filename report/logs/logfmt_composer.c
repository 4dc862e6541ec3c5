/* logfmt_composer.c: Composer / llm-foundry logs (logimport.h).
 *
 * The console logger (composer/loggers/console_logger.py, ConsoleLogger.log_to_console) prints at
 * each logged batch a progress header and then each metric logged since, one a line:
 *   [batch=10/100]:
 *   	 Train time/batch: 9
 *   	 Train loss/train/total: 7.1234
 *   	 Train throughput/batches_per_sec: 0.2500
 *   	 Train throughput/samples_per_sec: 64.0000
 * ("[epoch=1][batch=10/100]:" when the run's length is in epochs; floats with four decimals,
 * format_log_data_value). The SpeedMonitor callback (composer/callbacks/speed_monitor.py) logs,
 * once its window of batches is full, throughput/batches_per_sec, samples_per_sec,
 * device/samples_per_sec, tokens_per_sec, device/tokens_per_sec (the whole run's figure divided by
 * the world size), flops_per_sec, device/flops_per_sec and device/mfu (a fraction of the device's
 * peak: device/flops_per_sec / gpu_flops_available). The FLOPs are the model's flops_per_batch:
 * llm-foundry's 6 x parameters + attention per token, SCHEMA.md's "llm-foundry".
 * The run's YAML (--config) gives the configuration (cm_config). */
#include "registry.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/files.h"
#include "../../common/parse.h"

/* Its row of the registry (registry.c). */
log_parse_fn log_parse_composer;
log_signature_fn log_is_composer_line;

/* The console logger's training header with metrics below it: "[batch=N/M]:" or
 * "[epoch=E][batch=N/M]:" (the evaluation header reads "[Eval batch=..."). */
int log_is_composer_line(const char *line)
{
    const char *b = strstr(line, "[batch=");
    if (!b || b[7] < '0' || b[7] > '9') return 0;
    const char *end = strstr(b, "]:");
    return end && end[2 + strspn(end + 2, " \t")] == '\0';
}

/* A metric line of a block: "\t Train NAME: VALUE" (or "\t NAME: VALUE"). NAME and VALUE into the
 * buffers; 0 when the line is not one. */
static int cm_metric(const char *line, char *name, size_t nn, char *value, size_t vn)
{
    if (line[0] != '\t' && line[0] != ' ') return 0;
    line += strspn(line, " \t");
    if (strncmp(line, "Train ", 6) == 0) line += 6;
    const char *colon = strstr(line, ": ");
    if (!colon || (size_t)(colon - line) >= nn) return 0;
    snprintf(name, nn, "%.*s", (int)(colon - line), line);
    snprintf(value, vn, "%s", colon + 2 + strspn(colon + 2, " "));
    return 1;
}

/* The metrics a step keeps: name, where its figure goes, the factor it is multiplied by. */
typedef struct {
    const char *name;
    size_t offset;
    double scale;
} cm_key;
static const cm_key cm_keys[] = {
    {"loss/train/total", offsetof(log_step, loss), 1},
    {"throughput/samples_per_sec", offsetof(log_step, samples_per_s), 1},
    {"throughput/tokens_per_sec", offsetof(log_step, tokens_per_s), 1},
    {"throughput/device/tokens_per_sec", offsetof(log_step, tokens_per_s_per_device), 1},
    {"throughput/device/flops_per_sec", offsetof(log_step, tflops_per_device), 1e-12},
    {"throughput/device/mfu", offsetof(log_step, mfu_pct), 100},
    {"throughput/batches_per_sec", offsetof(log_step, step_s), 1}, /* inverted below: seconds per batch */
};

/* One header and the metric lines under it (from line i). Returns the index of the line after
 * the block, or CB_EUSAGE. */
static int cm_block(const text_lines *t, int i, log_run *r)
{
    log_step st = log_step_unset(i + 1);
    const char *b = strstr(t->line[i], "[batch=") + 7;
    st.iter = strtol(b, NULL, 10);
    int j = i + 1;
    for (char name[128], value[128]; j < t->n && cm_metric(t->line[j], name, sizeof name, value, sizeof value); j++)
        for (size_t k = 0; k < sizeof cm_keys / sizeof cm_keys[0]; k++) {
            if (strcmp(name, cm_keys[k].name) != 0) continue;
            char what[CB_PATH_MAX + 160];
            double v;
            snprintf(what, sizeof what, "%s:%d: '%s'", t->path, j + 1, name);
            if (parse_double(value, k + 1 == sizeof cm_keys / sizeof cm_keys[0] ? 1 / LOG_STEP_MAX_S : 0, 1e18, what, &v))
                return CB_EUSAGE;
            *(double *)((char *)&st + cm_keys[k].offset) = v * cm_keys[k].scale;
        }
    if (!isnan(st.step_s)) st.step_s = 1 / st.step_s;
    if (!isnan(st.tflops_per_device) || !isnan(st.mfu_pct))
        snprintf(r->flop_convention, sizeof r->flop_convention, "llm-foundry");
    return log_run_add_step(r, &st) == 0 ? j : CB_EFAIL;
}

/* `value` mapped through pairs {from, to, ...} (NULL-terminated) into dst; 0 when no pair matches. */
static int cm_map(const char *value, const char *const *pairs, char *dst, size_t n)
{
    for (; pairs[0]; pairs += 2)
        if (strcmp(value, pairs[0]) == 0) return snprintf(dst, n, "%s", pairs[1]), 1;
    return 0;
}

/* model.*: the architecture and shape. */
static int cm_config_model(const kv_conf *c, log_run *r)
{
    static const char *const d_k[] = {"model.d_model", NULL}, *const h_k[] = {"model.n_heads", NULL},
                             *const l_k[] = {"model.n_layers", NULL}, *const v_k[] = {"model.vocab_size", NULL},
                             *const kv_k[] = {"model.attn_config.kv_n_heads", NULL},
                             *const x_k[] = {"model.expansion_ratio", NULL};
    long d = 0, h = 0, l = 0, v = 0, kv = 0;
    double ratio = 0;
    if (kvconf_long(c, d_k, 1, 10000000, &d) < 0 || kvconf_long(c, h_k, 1, 100000, &h) < 0 ||
        kvconf_long(c, l_k, 1, 100000, &l) < 0 || kvconf_long(c, v_k, 1, 1000000000, &v) < 0 ||
        kvconf_long(c, kv_k, 1, 100000, &kv) < 0 || kvconf_double(c, x_k, 0.01, 1000, &ratio) < 0)
        return CB_EUSAGE;
    r->d_model = (int)d, r->heads = (int)h, r->layers = (int)l, r->vocab = (int)v, r->kv_heads = (int)kv;
    if (ratio > 0 && d) r->ffn_dim = (int)lround(ratio * (double)d);
    const kv_item *name = kvconf_get(c, "model.name"), *hf = kvconf_get(c, "model.pretrained_model_name_or_path");
    if (name && strcmp(name->value, "mpt_causal_lm") == 0) snprintf(r->arch, sizeof r->arch, "mpt");
    if (hf && hf->value[0]) {
        const char *slash = strrchr(hf->value, '/');
        snprintf(r->model, sizeof r->model, "%s", slash ? slash + 1 : hf->value);
    }
    if (name) log_run_note(r, "model %.40s", name->value);
    return 0;
}

/* The run's batch sizes, sequence length, precision and FSDP settings. */
static int cm_config_run(const kv_conf *c, log_run *r)
{
    static const char *const seq_k[] = {"model.max_seq_len", "max_seq_len", NULL},
                             *const gb_k[] = {"global_train_batch_size", NULL},
                             *const mb_k[] = {"device_train_microbatch_size", NULL},
                             *const ac_k[] = {"fsdp_config.activation_checkpointing", NULL};
    static const char *const precisions[] = {"amp_bf16", "bf16-mixed", "amp_fp16", "fp16-mixed", "amp_fp8", "fp8",
                                             "fp32", "fp32", NULL},
                             *const shardings[] = {"FULL_SHARD", "zero3", "SHARD_GRAD_OP", "zero2", "HYBRID_SHARD",
                                                   "hybrid", "NO_SHARD", "none", NULL};
    const kv_item *mb = kvconf_find(c, "device_train_microbatch_size");
    int ac = -1;
    if (kvconf_long(c, seq_k, 1, 1000000000, &r->seq_len) < 0 ||
        kvconf_long(c, gb_k, 1, 1000000000, &r->global_batch) < 0 ||
        (mb && strcmp(mb->value, "auto") != 0 && kvconf_long(c, mb_k, 1, 1000000000, &r->micro_batch) < 0) ||
        kvconf_bool(c, ac_k, &ac) < 0)
        return CB_EUSAGE;
    if (mb && strcmp(mb->value, "auto") == 0) log_run_note(r, "device_train_microbatch_size auto");
    log_run_stated_kv(r, LF_SEQ, c, seq_k, 1), log_run_stated_kv(r, LF_GLOBAL_BATCH, c, gb_k, 1);
    log_run_stated_kv(r, LF_MICRO_BATCH, c, mb_k, 1);
    if (*r->precision) log_run_stated_kv(r, LF_PRECISION, c, (const char *const[]){"precision", NULL}, 1);
    if (ac >= 0) snprintf(r->recompute, sizeof r->recompute, "%s", ac ? "full" : "none");
    const kv_item *prec = kvconf_get(c, "precision"), *shard = kvconf_find(c, "fsdp_config.sharding_strategy");
    if (prec && !cm_map(prec->value, precisions, r->precision, sizeof r->precision))
        log_run_note(r, "precision %.40s", prec->value);
    if (shard && !cm_map(shard->value, shardings, r->sharding, sizeof r->sharding))
        log_run_note(r, "sharding_strategy %.40s", shard->value);
    /* Composer has no pipeline parallelism; tensor parallelism only through a tp_config */
    r->pp = 1;
    if (kvconf_find(c, "tp_config") || kvconf_find(c, "parallelism_config.tp")) log_run_note(r, "tensor parallel");
    else r->tp = 1;
    return 0;
}

/* The llm-foundry run YAML: what the log does not state. */
static int cm_config(const char *path, log_run *r)
{
    kv_conf c;
    if (kvconf_load_yaml(&c, path) != 0) return CB_EUSAGE;
    int rc = kvconf_interpolate(&c, "variables");
    if (rc == 0) rc = cm_config_model(&c, r);
    if (rc == 0) rc = cm_config_run(&c, r);
    kvconf_free(&c);
    if (rc == 0) snprintf(r->config_from, sizeof r->config_from, "--config %.200s", path);
    return rc;
}

/* The "Config:" block Composer's trainer prints at the start of a run (between lines of stars:
 * composer_version, num_gpus_per_node, num_nodes, rank_zero_seed, ...): the devices per node and,
 * with num_nodes, the devices. A block without num_nodes states the devices per node only. */
static void cm_config_block(const text_lines *t, log_run *r)
{
    int i = 0;
    while (i < t->n &&
           !(strncmp(t->line[i], "Config:", 7) == 0 && t->line[i][7 + strspn(t->line[i] + 7, " \t")] == '\0'))
        i++;
    long per_node = 0, nodes = 0;
    int per_line = 0, nodes_line = 0;
    for (i++; i < t->n && strncmp(t->line[i], "****", 4) != 0; i++) {
        char *end;
        const char *s = t->line[i];
        if (strncmp(s, "num_gpus_per_node: ", 19) == 0) {
            long v = strtol(s + 19, &end, 10);
            if (end != s + 19 && v > 0 && v <= 100000) per_node = v, per_line = i + 1;
        } else if (strncmp(s, "num_nodes: ", 11) == 0) {
            long v = strtol(s + 11, &end, 10);
            if (end != s + 11 && v > 0 && v <= 1000000) nodes = v, nodes_line = i + 1;
        }
    }
    if (!per_node) return;
    r->devices_per_node = per_node, log_run_stated(r, LF_PER_NODE, per_line, 0);
    if (nodes && log_degrees_product((const long[]){per_node, nodes}, 2, LOG_MAX_DEVICES, &r->devices) == 0)
        log_run_stated(r, LF_DEVICES, nodes_line, 0);
    else if (!nodes)
        log_run_note(r, "the Config block (line %d) states num_gpus_per_node %ld but not num_nodes: devices not stated",
                     per_line, per_node);
}

int log_parse_composer(const text_lines *t, const char *config_path, log_run *r)
{
    cm_config_block(t, r);
    for (int i = 0; i < t->n;) {
        if (!log_is_composer_line(t->line[i])) {
            i++;
            continue;
        }
        if ((i = cm_block(t, i, r)) < 0) return i;
    }
    if (r->nsteps == 0)
        return log_not_format(t, r->format,
                              "'[batch=10/100]:' followed by '\\t Train throughput/samples_per_sec: 64.0000'");
    return config_path ? cm_config(config_path, r) : 0;
}
