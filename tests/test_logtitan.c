/* Tests of the torchtitan and Composer / llm-foundry log parsers and of the YAML/TOML reader.
 *
 * The fixtures in tests/logs/ are written to what the frameworks print:
 *   torchtitan_llama3_8b.log    MetricsProcessor.log (torchtitan/components/metrics.py), with its ANSI
 *                               colours; ParallelDims' "Building device mesh with parallelism: ..."; the
 *                               trainer's JSON model args, "Model ... size: ..." and "Peak FLOPS used ...";
 *                               one validate line (MetricsProcessor.log_validation), not a step
 *   torchtitan_llama3_8b.toml   the layout of torchtitan/models/llama3/train_configs/llama3_8b.toml
 *   torchtitan_llama2_7b_wps.log  train.py's 2024 step line ("wps:", no tflops), "Building 2-D device mesh
 *                               with ['dp', 'tp'], [4, 2]", "Building llama2 7B with ModelArgs(...)"
 *   torchtitan_llama2_7b_old.toml the 2024 layout (batch_size, degrees under [training]/[experimental], [float8])
 *   composer_mpt7b.log          ConsoleLogger.log_to_console (composer/loggers/console_logger.py) with the
 *                               trainer's time metrics and SpeedMonitor's throughput metrics (window_size 2)
 *   composer_mpt7b.yaml         the layout of llm-foundry's scripts/train/yamls/pretrain/mpt-7b.yaml */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/err.h"
#include "../report/logs/registry.h"
#include "check.h"

static int near(double x, double ref) { return fabs(x - ref) <= 1e-9 * fabs(ref); }

/* Parses log (and config, or NULL) with the parser of framework fw's format (registry.h) into r;
 * returns the parser's status, stderr into err. */
static int parse(const char *fw, const char *log, const char *config, log_run *r, char *err, size_t errsz)
{
    text_lines t;
    log_format f = log_format_find(fw);
    log_run_init(r, f);
    capture_stderr_begin();
    int rc = f < 0 ? CB_EUSAGE : text_lines_load(&t, log);
    if (rc == 0) {
        rc = log_formats[f].parse(&t, config, r);
        text_lines_free(&t);
    }
    snprintf(err, errsz, "%s", capture_stderr_end());
    return rc;
}

/* A config file's text into a kv_conf (yaml: 1 YAML, 0 TOML); the loader's status, stderr into err. */
static int load_conf(const char *name, const char *text, int yaml, kv_conf *c, char *err, size_t errsz)
{
    const char *path = test_path(name);
    write_text(path, text);
    capture_stderr_begin();
    int rc = yaml ? kvconf_load_yaml(c, path) : kvconf_load_toml(c, path);
    snprintf(err, errsz, "%s", capture_stderr_end());
    return rc;
}

static int has(const kv_conf *c, const char *key, const char *value, int line)
{
    const kv_item *it = kvconf_get(c, key);
    if (!it) return 0;
    if (strcmp(it->value, value) != 0 || it->line != line) {
        fprintf(stderr, "  %s = '%s' (line %d), expected '%s' (line %d)\n", key, it->value, it->line, value, line);
        return 0;
    }
    return 1;
}

static void test_kvconf_yaml(void)
{
    static const char *const text = "# a run file\n"                               /* 1 */
                                     "variables:\n"                                /* 2 */
                                     "  seq: 2048  # tokens\n"                     /* 3 */
                                     "model:\n"                                    /* 4 */
                                     "  name: 'mpt_causal_lm'\n"                   /* 5 */
                                     "  attn_config: {attn_impl: flash, alibi: false}\n" /* 6 */
                                     "  max_seq_len: ${variables.seq}\n"           /* 7 */
                                     "  notes: |\n"                                /* 8 */
                                     "    free: text # not a comment\n"            /* 9 */
                                     "  d_model: 4096\n"                           /* 10 */
                                     "optimizer:\n"                                /* 11 */
                                     "  betas:\n"                                  /* 12 */
                                     "  - 0.9\n"                                   /* 13 */
                                     "  - 0.95\n"                                  /* 14 */
                                     "  eps: \"1e-8 # kept\"\n"                    /* 15 */
                                     "run_name: Llama's trial # a comment\n"       /* 16 */
                                     "top_seq: ${seq_missing}\n";                  /* 17 */
    kv_conf c;
    char err[512];
    CHECK(load_conf("kv.yaml", text, 1, &c, err, sizeof err) == 0, "yaml: %s", err);
    CHECK(kvconf_interpolate(&c, "variables") == 0, "interpolate");
    CHECK(has(&c, "variables.seq", "2048", 3), "scalar with a comment");
    CHECK(has(&c, "model", "", 4) && has(&c, "model.name", "mpt_causal_lm", 5), "nesting, quotes");
    CHECK(has(&c, "model.attn_config.attn_impl", "flash", 6) && has(&c, "model.attn_config.alibi", "false", 6),
          "flow mapping");
    CHECK(has(&c, "model.max_seq_len", "2048", 7), "${variables.seq} resolved");
    CHECK(has(&c, "model.notes", "", 8) && !kvconf_get(&c, "model.notes.free") && !kvconf_get(&c, "free"),
          "block scalar: its lines are not settings");
    CHECK(has(&c, "model.d_model", "4096", 10), "after a block scalar");
    CHECK(has(&c, "optimizer.betas", "", 12) && has(&c, "optimizer.eps", "1e-8 # kept", 15), "sequence, quoted #");
    CHECK(has(&c, "run_name", "Llama's trial", 16), "an apostrophe inside a word");
    CHECK(has(&c, "top_seq", "${seq_missing}", 17), "an unresolved reference stays");
    long seq = 0;
    static const char *const seq_k[] = {"model.max_seq_len", NULL}, *const bad_k[] = {"top_seq", NULL};
    CHECK(kvconf_long(&c, seq_k, 1, 1 << 30, &seq) == 1 && seq == 2048, "kvconf_long %ld", seq);
    capture_stderr_begin();
    CHECK(kvconf_long(&c, bad_k, 1, 1 << 30, &seq) == CB_EUSAGE, "unresolved value is not a number");
    const char *e = capture_stderr_end();
    CHECK(strstr(e, "kv.yaml:17: key 'top_seq'") && strstr(e, "${seq_missing}"), "%s", e);
    kvconf_free(&c);
    CHECK(load_conf("bad.yaml", "model:\n  d_model: 4096\n  just words here\n", 1, &c, err, sizeof err) == CB_EUSAGE,
          "malformed YAML line");
    CHECK(strstr(err, "bad.yaml:3: expected 'key: value'") && count_lines(err) == 1, "%s", err);
}

static void test_kvconf_toml(void)
{
    static const char *const text = "# torchtitan job\n"                  /* 1 */
                                    "[model]\n"                           /* 2 */
                                    "name = \"llama3\"  # the family\n"   /* 3 */
                                    "flavor = '8B'\n"                     /* 4 */
                                    "[compile]\n"                         /* 5 */
                                    "components = [\n"                    /* 6 */
                                    "    \"model\",  # blocks\n"          /* 7 */
                                    "    \"loss\",\n"                     /* 8 */
                                    "]\n"                                 /* 9 */
                                    "enable=true\n"                       /* 10 */
                                    "[quantize.linear.float8]\n"          /* 11 */
                                    "filter_fqns = [\"output\"]\n";       /* 12 */
    kv_conf c;
    char err[512];
    CHECK(load_conf("kv.toml", text, 0, &c, err, sizeof err) == 0, "toml: %s", err);
    CHECK(has(&c, "model.name", "llama3", 3) && has(&c, "model.flavor", "8B", 4), "table, quotes, comment");
    CHECK(has(&c, "compile.components", "[", 6), "a multi-line array keeps its first line");
    CHECK(has(&c, "compile.enable", "true", 10), "after a multi-line array");
    CHECK(has(&c, "quantize.linear.float8.filter_fqns", "[\"output\"]", 12), "dotted table");
    int on = 0;
    static const char *const en_k[] = {"compile.enable", NULL};
    CHECK(kvconf_bool(&c, en_k, &on) == 1 && on == 1, "bool");
    kvconf_free(&c);
    CHECK(load_conf("bad.toml", "[training]\nseq_len = 8192\nlocal_batch_size 2\n", 0, &c, err, sizeof err) ==
              CB_EUSAGE,
          "malformed TOML line");
    CHECK(strstr(err, "bad.toml:3: expected 'key = value'") && count_lines(err) == 1, "%s", err);
}

/* Parses log and config (CHECKs that it succeeds with nsteps steps); 1 when it has them. */
static int parsed(const char *fw, const char *log, const char *config, int nsteps, log_run *r)
{
    char err[1024];
    int rc = parse(fw, log, config, r, err, sizeof err);
    CHECK(rc == 0, "%s: %s", log, err);
    CHECK(r->nsteps == nsteps, "%s: %d steps, expected %d", log, r->nsteps, nsteps);
    return rc == 0 && r->nsteps == nsteps;
}

static void test_titan_current(void)
{
    log_run r;
    /* 10 step lines: the validate line is not one */
    if (parsed("torchtitan", "tests/logs/torchtitan_llama3_8b.log",
               "tests/logs/torchtitan_llama3_8b.toml", 10, &r)) {
        const log_step *a = &r.steps[0], *z = &r.steps[9];
        CHECK(a->iter == 1 && a->line == 19 && a->iters == 1, "first step %ld line %d", a->iter, a->line);
        CHECK(near(a->loss, 12.25391) && near(a->mem_gib, 42.10) && near(a->tokens_per_s_per_device, 1234) &&
                  near(a->tflops_per_device, 71.45) && near(a->mfu_pct, 7.22),
              "first step's figures");
        CHECK(z->iter == 10 && z->line == 28, "last step %ld line %d", z->iter, z->line);
        CHECK(near(z->loss, 8.01953) && near(z->mem_gib, 58.33) && near(z->tokens_per_s_per_device, 6506) &&
                  near(z->tflops_per_device, 376.73) && near(z->mfu_pct, 38.09),
              "last step's figures");
        CHECK(isnan(z->step_s) && isnan(z->tokens_per_s) && isnan(z->samples_per_s) && z->global_batch == 0,
              "what the line does not print stays unset");
    }
    /* the log: device mesh (pp 1, dp_shard 8), JSON model args, size, peak 9.890e+14 */
    CHECK(r.devices == 8 && r.dp == 8 && r.tp == 1 && r.pp == 1 && r.cp == 1, "degrees %ld %d", r.devices, r.dp);
    CHECK(strcmp(r.sharding, "zero3") == 0, "sharding %s", r.sharding);
    /* ffn: 2/3 x 4 x 4096 = 10922, x 1.3 = 14198, up to a multiple of 1024 = 14336 */
    CHECK(r.d_model == 4096 && r.layers == 32 && r.heads == 32 && r.kv_heads == 8 && r.ffn_dim == 14336 &&
              r.vocab == 128256,
          "shape %d %d %d %d %d %d", r.d_model, r.layers, r.heads, r.kv_heads, r.ffn_dim, r.vocab);
    CHECK(r.params == 8030261248.0 && near(r.peak_tflops, 989.0), "params %g peak %g", r.params, r.peak_tflops);
    CHECK(strcmp(r.flop_convention, "palm") == 0, "convention %s", r.flop_convention);
    /* the TOML: model, local batch 2 (global 2 x dp 8), seq, precision, AC, compile */
    CHECK(strcmp(r.model, "llama3-8B") == 0 && strcmp(r.arch, "llama") == 0, "model %s arch %s", r.model, r.arch);
    CHECK(r.micro_batch == 2 && r.global_batch == 16 && r.seq_len == 8192, "batch %ld %ld seq %ld", r.micro_batch,
          r.global_batch, r.seq_len);
    CHECK(strcmp(r.precision, "bf16-mixed") == 0 && strcmp(r.recompute, "selective") == 0, "%s %s", r.precision,
          r.recompute);
    CHECK(strcmp(r.config_from, "--config tests/logs/torchtitan_llama3_8b.toml") == 0, "from '%s'", r.config_from);
    CHECK(strstr(r.notes, "flavor 8B") && strstr(r.notes, "torch.compile"), "notes '%s'", r.notes);
    CHECK(r.tied_embeddings == -1 && r.sequence_parallel == -1 && r.vp == 0 && r.devices_per_node == 0 &&
              r.device[0] == '\0',
          "what neither states stays unset");
    log_run_free(&r);
}

static void test_titan_wps(void)
{
    log_run r;
    if (parsed("torchtitan", "tests/logs/torchtitan_llama2_7b_wps.log",
               "tests/logs/torchtitan_llama2_7b_old.toml", 5, &r)) {
        const log_step *a = &r.steps[0], *z = &r.steps[4];
        CHECK(a->iter == 1 && a->line == 7 && near(a->tokens_per_s_per_device, 812) && near(a->mfu_pct, 1.05) &&
                  near(a->loss, 10.8123) && near(a->mem_gib, 9.62) && isnan(a->tflops_per_device),
              "first step (wps, no tflops)");
        CHECK(z->iter == 40 && z->line == 11 && near(z->tokens_per_s_per_device, 2340) && near(z->mfu_pct, 30.15),
              "last step");
    }
    /* "Building 2-D device mesh with ['dp', 'tp'], [4, 2]": 8 devices, dp 4 (FSDP), tp 2 */
    CHECK(r.devices == 8 && r.dp == 4 && r.tp == 2 && r.pp == 1 && strcmp(r.sharding, "zero3") == 0,
          "mesh %ld dp %d tp %d %s", r.devices, r.dp, r.tp, r.sharding);
    /* ModelArgs(dim=4096, n_layers=32, n_heads=32, n_kv_heads=None, vocab_size=32000): ffn 10922 -> 11008 */
    CHECK(r.d_model == 4096 && r.layers == 32 && r.heads == 32 && r.kv_heads == 32 && r.ffn_dim == 11008 &&
              r.vocab == 32000,
          "shape %d %d %d %d %d", r.d_model, r.layers, r.kv_heads, r.ffn_dim, r.vocab);
    CHECK(r.params == 6738415616.0 && isnan(r.peak_tflops), "params %g", r.params);
    /* "with local batch size 4, global batch size 16, sequence length 4096"; the TOML agrees */
    CHECK(r.micro_batch == 4 && r.global_batch == 16 && r.seq_len == 4096, "batch %ld %ld", r.micro_batch,
          r.global_batch);
    CHECK(strcmp(r.precision, "fp8") == 0 && strstr(r.notes, "float8") && strcmp(r.recompute, "full") == 0,
          "precision %s recompute %s notes %s", r.precision, r.recompute, r.notes);
    /* float8 with no recipe named: torchao's tensorwise dynamic scaling, per-tensor current scaling */
    CHECK(strcmp(r.fp8_recipe, "current") == 0, "fp8_recipe '%s'", r.fp8_recipe);
    /* "Building llama2 7B ...": the preset llama2-7b of data/models.csv (issue 31 point 7; was llama2-7B) */
    CHECK(strcmp(r.model, "llama2-7b") == 0 && strcmp(r.flop_convention, "palm") == 0, "%s", r.model);
    log_run_free(&r);
    /* a rowwise recipe: no fp8_recipe term (noted, the cell empty) */
    {
        char toml[4096], text[4200];
        slurp("tests/logs/torchtitan_llama2_7b_old.toml", toml, sizeof toml);
        snprintf(text, sizeof text, "%srecipe_name = \"rowwise\"\n", toml);
        const char *rw = test_path("titan_rowwise.toml");
        write_text(rw, text);
        if (parsed("torchtitan", "tests/logs/torchtitan_llama2_7b_wps.log", rw, 5, &r))
            CHECK(strcmp(r.precision, "fp8") == 0 && !r.fp8_recipe[0] && strstr(r.notes, "float8 recipe 'rowwise'"),
                  "rowwise: '%s', notes %s", r.fp8_recipe, r.notes);
        log_run_free(&r);
    }
    /* the same log without --config: the log's own lines only */
    parsed("torchtitan", "tests/logs/torchtitan_llama2_7b_wps.log", NULL, 5, &r);
    CHECK(r.config_from[0] == '\0' && strcmp(r.model, "llama2-7b") == 0 &&
              r.precision[0] == '\0' && r.recompute[0] == '\0' && r.devices == 8,
          "no config: '%s' '%s'", r.config_from, r.precision);
    log_run_free(&r);
}

static void test_titan_bad(void)
{
    log_run r;
    char err[1024];
    int rc = parse("torchtitan", "tests/logs/torchtitan_bad_tps.log", NULL, &r, err,
                   sizeof err);
    CHECK(rc == CB_EUSAGE, "a malformed tps is an error");
    CHECK(strstr(err, "tests/logs/torchtitan_bad_tps.log:2: 'tps': expected a decimal number") &&
              strstr(err, "'6,4x2'") &&
              count_lines(err) == 1,
          "%s", err);
    log_run_free(&r);
    /* a Megatron-LM log is named as one */
    const char *meg = test_path("megatron.log");
    write_text(meg, "building GPT model ...\n [2024-05-01 10:00:00] iteration       10/     100 |"
                    " consumed samples: 2560 | elapsed time per iteration (ms): 5012.3 | learning rate: 3.0E-04 |"
                    " global batch size:   256 |\n");
    rc = parse("torchtitan", meg, NULL, &r, err, sizeof err);
    CHECK(rc == CB_EUSAGE && strstr(err, "megatron.log:2: a Megatron-LM line, not torchtitan") &&
              strstr(err, "--framework megatron") && count_lines(err) == 1,
          "%s", err);
    log_run_free(&r);
    rc = parse("llm-foundry", meg, NULL, &r, err, sizeof err);
    CHECK(rc == CB_EUSAGE && strstr(err, "megatron.log:2: a Megatron-LM line, not Composer / llm-foundry"), "%s",
          err);
    log_run_free(&r);
    /* neither format: the first line and what a step line looks like */
    const char *other = test_path("other.log");
    write_text(other, "\nhello\n");
    rc = parse("torchtitan", other, NULL, &r, err, sizeof err);
    CHECK(rc == CB_EUSAGE && strstr(err, "other.log:2: not a torchtitan log") && strstr(err, "tps: 3,456"), "%s", err);
    log_run_free(&r);
}

static void test_composer(void)
{
    log_run r;
    /* 6 batch blocks: the eval block is not one */
    if (parsed("llm-foundry", "tests/logs/composer_mpt7b.log", "tests/logs/composer_mpt7b.yaml", 6,
               &r)) {
        const log_step *a = &r.steps[0], *c = &r.steps[2], *z = &r.steps[5];
        CHECK(a->iter == 1 && a->line == 11 && near(a->loss, 11.8125) && isnan(a->samples_per_s) &&
                  isnan(a->step_s) && isnan(a->mfu_pct),
              "first block: loss only (the speed window is not full)");
        CHECK(c->iter == 3 && c->line == 43 && near(c->samples_per_s, 15.872) && near(c->step_s, 1 / 0.062),
              "third block");
        /* batches_per_sec 0.0640 -> 15.625 s; device/flops_per_sec 176160768000000 -> 176.160768 TFLOP/s;
         * mfu 0.5646 -> 56.46% */
        CHECK(z->iter == 6 && z->line == 121 && near(z->loss, 8.9531) && near(z->step_s, 15.625) &&
                  near(z->samples_per_s, 16.384) && near(z->tokens_per_s, 33554.432) &&
                  near(z->tokens_per_s_per_device, 4194.304) && near(z->tflops_per_device, 176.160768) &&
                  near(z->mfu_pct, 56.46) && isnan(z->mem_gib),
              "last block's figures");
    }
    CHECK(strcmp(r.flop_convention, "llm-foundry") == 0 && isnan(r.peak_tflops), "%s", r.flop_convention);
    /* the YAML: MPT, d_model 4096 x expansion 4, ${variables.max_seq_len} = 2048 */
    CHECK(strcmp(r.arch, "mpt") == 0 && r.model[0] == '\0' && r.d_model == 4096 && r.heads == 32 && r.layers == 32 &&
              r.ffn_dim == 16384 && r.vocab == 50368 && r.kv_heads == 0,
          "shape %s %d %d %d %d", r.arch, r.d_model, r.layers, r.ffn_dim, r.vocab);
    CHECK(r.seq_len == 2048 && r.global_batch == 256 && r.micro_batch == 8, "seq %ld batch %ld %ld", r.seq_len,
          r.global_batch, r.micro_batch);
    CHECK(strcmp(r.precision, "bf16-mixed") == 0 && strcmp(r.sharding, "zero3") == 0 &&
              strcmp(r.recompute, "full") == 0,
          "%s %s %s", r.precision, r.sharding, r.recompute);
    /* the log's Config block: num_gpus_per_node 8, num_nodes 1 (issue 31 point 7; before it, devices stayed
     * unset here) */
    CHECK(r.devices == 8 && r.devices_per_node == 8 && r.dp == 0, "devices %ld per node %ld dp %d", r.devices,
          r.devices_per_node, r.dp);
    CHECK(r.tp == 1 && r.pp == 1, "no tp_config: no tensor or pipeline parallelism (tp %d, pp %d)", r.tp, r.pp);
    CHECK(strcmp(r.config_from, "--config tests/logs/composer_mpt7b.yaml") == 0 && strstr(r.notes, "mpt_causal_lm"),
          "'%s' '%s'", r.config_from, r.notes);
    log_run_free(&r);
}

static void test_composer_bad(void)
{
    log_run r;
    char err[1024];
    const char *log = test_path("composer_bad.log");
    write_text(log, "[batch=1/10]:\n\t Train loss/train/total: 9.1\n[epoch=1][batch=2/10]:\n"
                    "\t Train throughput/samples_per_sec: fast\n");
    int rc = parse("llm-foundry", log, NULL, &r, err, sizeof err);
    CHECK(rc == CB_EUSAGE && strstr(err, "composer_bad.log:4: 'throughput/samples_per_sec': expected a number") &&
              strstr(err, "'fast'") && count_lines(err) == 1,
          "%s", err);
    log_run_free(&r);
    const char *yaml = test_path("hf.yaml");
    write_text(yaml, "variables:\n  model_name: meta-llama/Meta-Llama-3.1-8B\nmodel:\n  name: hf_causal_lm\n"
                     "  pretrained_model_name_or_path: ${variables.model_name}\nprecision: amp_fp8\n"
                     "device_train_microbatch_size: auto\nparallelism_config:\n  fsdp_config:\n"
                     "    sharding_strategy: HYBRID_SHARD\n    activation_checkpointing: false\n");
    write_text(log, "[epoch=1][batch=2/10]:\n\t Train throughput/samples_per_sec: 12.5000\n");
    rc = parse("llm-foundry", log, yaml, &r, err, sizeof err);
    CHECK(rc == 0 && r.nsteps == 1 && r.steps[0].iter == 2 && near(r.steps[0].samples_per_s, 12.5), "%s", err);
    CHECK(strcmp(r.model, "Meta-Llama-3.1-8B") == 0 && r.arch[0] == '\0' && strcmp(r.precision, "fp8") == 0 &&
              strcmp(r.sharding, "hybrid") == 0 && strcmp(r.recompute, "none") == 0 && r.micro_batch == 0 &&
              strstr(r.notes, "microbatch_size auto") && r.flop_convention[0] == '\0',
          "hf: %s %s %s %s %ld '%s'", r.model, r.precision, r.sharding, r.recompute, r.micro_batch, r.notes);
    log_run_free(&r);
}

const test_case tests_logtitan[] = {
    {"kvconf: YAML nesting, flow mappings, comments, quotes, sequences, block scalars, ${} and a bad line",
     test_kvconf_yaml},
    {"kvconf: TOML tables, comments, a multi-line array and a bad line", test_kvconf_toml},
    {"torchtitan log: current step lines with colours, its TOML, the mesh and model args", test_titan_current},
    {"torchtitan log: a 2024 wps log with its older TOML, and without a config", test_titan_wps},
    {"torchtitan log: a malformed tps, a Megatron-LM log and neither format", test_titan_bad},
    {"composer log: six batch blocks and the llm-foundry YAML", test_composer},
    {"composer log: a malformed metric; an hf_causal_lm YAML with FSDP under parallelism_config", test_composer_bad},
    {NULL, NULL},
};
