/* test_logmegatron.c: the Megatron-LM and NeMo log parsers (report/logs/logfmt_megatron.c, logfmt_nemo.c) on
 * fixtures in tests/logs/ written as the frameworks print them:
 *   megatron_core.log     Megatron-LM (2025): _print_args' arguments block (megatron/training/arguments.py,
 *                         sorted case-blind, name padded with 48 - len(name) dots; trimmed to 53 keys) and
 *                         training_log's iteration lines (megatron/training/training.py, with --log-throughput,
 *                         the first iteration logged on its own)
 *   megatron_2021.log     Megatron-LM (2021): megatron/arguments.py's block, megatron/training.py's
 *                         training_log (no date, no throughput), fp16 with one skipped iteration
 *   megatron_excerpt.log  five iteration lines of megatron_core.log alone
 *   nemo_gpt.log          NeMo 1.x megatron_gpt_pretraining.py: the config logged as YAML after "Experiment
 *                         configuration" (NeMo's log formatter indents a message's lines by 4), then Lightning's
 *                         tqdm progress bar (CustomProgressBar, nlp_overrides.py) rewritten with '\r'
 *   nemo_excerpt.log + nemo_hparams.yaml  NeMo 2.0's ProgressPrinter lines (progress_printer.py) and a config */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/err.h"
#include "../report/logs/registry.h"
#include "check.h"

/* t and r loaded from `path` by the parser of framework fw's format (registry.h; with config
 * `cfg`); returns the parser's code. */
static int parse_fixture(const char *fw, const char *path, const char *cfg, text_lines *t, log_run *r)
{
    log_format f = log_format_find(fw);
    log_run_init(r, f);
    if (f < 0 || text_lines_load(t, path) != 0) {
        CHECK(0, "%s: cannot load (format '%s': %d)", path, fw, f);
        return CB_EUSAGE;
    }
    return log_formats[f].parse(t, cfg, r);
}

/* The fixture a test reads, loaded by parse_ok and released by parsed_free. */
static text_lines g_text;
static log_run g_run;

/* `path` (and config `cfg`) read by the parser of framework fw, which must accept it. */
static log_run *parse_ok(const char *fw, const char *path, const char *cfg)
{
    CHECK(parse_fixture(fw, path, cfg, &g_text, &g_run) == 0, "%s: parse", path);
    return &g_run;
}

static void parsed_free(void)
{
    log_run_free(&g_run);
    text_lines_free(&g_text);
}

static int near(double x, double want) { return fabs(x - want) <= 1e-9 * fmax(1, fabs(want)); }
static int near_or_unset(double x, double want) { return isnan(want) ? isnan(x) : near(x, want); }

/* Step `which` of r is as given (NaN: unset; batch 0: not printed); prints what differs. */
static void step_is(const log_run *r, int which, long iter, long iters, double step_s, double tflops, long batch,
                    double loss, int line)
{
    if (which >= r->nsteps) {
        CHECK(0, "step %d of %d", which, r->nsteps);
        return;
    }
    const log_step *s = &r->steps[which];
    CHECK(s->iter == iter && s->iters == iters && near(s->step_s, step_s) &&
              near_or_unset(s->tflops_per_device, tflops) && s->global_batch == batch &&
              near_or_unset(s->loss, loss) && s->line == line,
          "step %d: iter %ld iters %ld step_s %g tflops %g batch %ld loss %g line %d", which, s->iter, s->iters,
          s->step_s, s->tflops_per_device, s->global_batch, s->loss, s->line);
}

/* The configuration's sizes and degrees are as given (0: unset). */
static void config_is(const log_run *r, const int shape[6], const long batch[3], const int deg[5], long devices)
{
    CHECK(r->layers == shape[0] && r->d_model == shape[1] && r->heads == shape[2] && r->kv_heads == shape[3] &&
              r->ffn_dim == shape[4] && r->vocab == shape[5],
          "shape %d %d %d %d %d %d", r->layers, r->d_model, r->heads, r->kv_heads, r->ffn_dim, r->vocab);
    CHECK(r->seq_len == batch[0] && r->micro_batch == batch[1] && r->global_batch == batch[2], "sizes %ld %ld %ld",
          r->seq_len, r->micro_batch, r->global_batch);
    CHECK(r->tp == deg[0] && r->pp == deg[1] && r->cp == deg[2] && r->vp == deg[3] && r->dp == deg[4] &&
              r->devices == devices,
          "degrees %d %d %d %d %d devices %ld", r->tp, r->pp, r->cp, r->vp, r->dp, r->devices);
}

/* The configuration's names are as given ("": unset). */
static void names_is(const log_run *r, const char *precision, const char *sharding, const char *recompute,
                     const char *arch)
{
    CHECK(strcmp(r->precision, precision) == 0 && strcmp(r->sharding, sharding) == 0 &&
              strcmp(r->recompute, recompute) == 0 && strcmp(r->arch, arch) == 0,
          "names '%s' '%s' '%s' '%s'", r->precision, r->sharding, r->recompute, r->arch);
}

static void test_megatron_core(void)
{
    const log_run *r = parse_ok("megatron-lm", "tests/logs/megatron_core.log", NULL);
    config_is(r, (const int[6]){32, 4096, 32, 8, 14336, 128256}, (const long[3]){4096, 1, 128},
              (const int[5]){2, 2, 1, 0, 8}, 32);
    CHECK(r->sequence_parallel == 1 && r->tied_embeddings == 0, "sp %d tied %d", r->sequence_parallel,
          r->tied_embeddings);
    names_is(r, "bf16-mixed", "zero1", "selective", "llama");
    CHECK(strcmp(r->flop_convention, "megatron-core") == 0, "convention %s", r->flop_convention);
    CHECK(strcmp(r->config_from, "the arguments block (lines 4-57)") == 0, "from %s", r->config_from);
    CHECK(strcmp(r->notes, "overlap_grad_reduce; overlap_param_gather") == 0, "notes %s", r->notes);
    CHECK(r->nsteps == 9, "steps %d", r->nsteps);
    step_is(r, 0, 1, 1, 9.8742, 95.3, 128, 11.89325, 70); /* the first iteration, logged on its own */
    step_is(r, 1, 10, 10, 4.1126, 228.8, 128, 10.52114, 72);
    step_is(r, 8, 80, 10, 4.0971, 229.7, 128, 6.338074, 79);
    parsed_free();
}

static void test_megatron_2021(void)
{
    const log_run *r = parse_ok("megatron-lm", "tests/logs/megatron_2021.log", NULL);
    config_is(r, (const int[6]){24, 2048, 16, 0, 8192, 50304}, (const long[3]){2048, 4, 512},
              (const int[5]){2, 1, 0, 0, 32}, 64);
    names_is(r, "fp16-mixed", "none", "full", "");
    CHECK(r->sequence_parallel == -1 && r->tied_embeddings == -1, "unprinted flags stay unset");
    CHECK(strcmp(r->flop_convention, "") == 0, "no throughput, no convention: %s", r->flop_convention);
    CHECK(strcmp(r->config_from, "the arguments block (lines 3-47)") == 0, "from %s", r->config_from);
    CHECK(strcmp(r->notes, "1 skipped iterations (the first at line 60)") == 0, "notes %s", r->notes);
    CHECK(r->nsteps == 6, "steps %d", r->nsteps);
    step_is(r, 0, 100, 100, 2.2318, NAN, 512, 9.812034, 60);
    step_is(r, 5, 600, 100, 2.145, NAN, 512, 5.652098, 66);
    parsed_free();
}

/* The published-runs columns overlap and attention from the arguments block (issue 30): Megatron-Core's
 * three flags, 2021's DDP_impl and local attention; Transformer Engine's kernel is the device's (logrow.c). */
static void test_megatron_framework_columns(void)
{
    const log_run *r = parse_ok("megatron-lm", "tests/logs/megatron_core.log", NULL);
    CHECK(strcmp(r->overlap, "grad_reduce+param_gather") == 0 && strcmp(r->attention, LOG_ATTN_TE) == 0,
          "core: overlap '%s', attention '%s'", r->overlap, r->attention);
    parsed_free();
    r = parse_ok("megatron-lm", "tests/logs/megatron_2021.log", NULL);
    CHECK(strcmp(r->overlap, "none") == 0 && strcmp(r->attention, "materialised") == 0,
          "2021 (DDP_impl local, no flash): overlap '%s', attention '%s'", r->overlap, r->attention);
    parsed_free();
    r = parse_ok("megatron-lm", "tests/logs/megatron_excerpt.log", NULL);
    CHECK(!r->overlap[0] && !r->attention[0], "iteration lines alone state neither");
    parsed_free();
}

/* Iteration lines alone: timing and throughput; the configuration stays unset; the interval is the
 * difference between the last two lines. */
static void test_megatron_excerpt(void)
{
    const log_run *r = parse_ok("megatron-lm", "tests/logs/megatron_excerpt.log", NULL);
    CHECK(r->layers == 0 && r->tp == 0 && r->dp == 0 && r->devices == 0 && r->precision[0] == '\0' &&
              r->sharding[0] == '\0' && r->config_from[0] == '\0',
          "configuration unset");
    CHECK(strcmp(r->flop_convention, "megatron-core") == 0, "convention %s", r->flop_convention);
    CHECK(r->nsteps == 5, "steps %d", r->nsteps);
    step_is(r, 0, 30, 10, 4.1019, 229.4, 128, 7.803311, 1);
    step_is(r, 4, 70, 10, 4.1008, 229.5, 128, 6.480555, 5);
    parsed_free();
}

/* A block trimmed of data_parallel_size: dp is world_size / (tp x pp x cp). */
static void test_megatron_dp_from_world(void)
{
    const char *path = test_path("mg_world.log");
    write_text(path, "------------------------ arguments ------------------------\n"
                     "  context_parallel_size ........................... 2\n"
                     "  pipeline_model_parallel_size .................... 4\n"
                     "  tensor_model_parallel_size ...................... 8\n"
                     "  world_size ...................................... 256\n"
                     "-------------------- end of arguments ---------------------\n"
                     " iteration       10/     100 | consumed samples:          640 | elapsed time per iteration "
                     "(ms): 1500.0 | global batch size:    64 | lm loss: 9.000000E+00 |\n");
    const log_run *r = parse_ok("megatron-lm", path, NULL);
    CHECK(r->dp == 4 && r->devices == 256, "dp %d devices %ld", r->dp, r->devices);
    CHECK(r->nsteps == 1, "steps %d", r->nsteps);
    step_is(r, 0, 10, 1, 1.5, NAN, 64, 9, 7);
    parsed_free();
}

/* An fp8 block's --fp8-recipe as the schema's fp8_recipe: tensorwise is current scaling, mxfp8 mxfp8;
 * blockwise has no term (noted, the cell empty: delayed); a run that is not fp8 states none. */
static void test_megatron_fp8_recipe(void)
{
    static const struct {
        const char *fp8, *recipe, *want, *note;
    } cases[] = {{"hybrid", "tensorwise", "current", ""},
                 {"e4m3", "mxfp8", "mxfp8", ""},
                 {"hybrid", "delayed", "delayed", ""},
                 {"hybrid", "blockwise", "", "fp8_recipe 'blockwise'"},
                 {"None", "delayed", "", ""}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "------------------------ arguments ------------------------\n"
                 "  bf16 ............................................ True\n"
                 "  fp8 ............................................. %s\n"
                 "  fp8_recipe ...................................... %s\n"
                 "-------------------- end of arguments ---------------------\n"
                 " iteration       10/     100 | consumed samples:          640 | elapsed time per iteration "
                 "(ms): 1500.0 | global batch size:    64 | lm loss: 9.000000E+00 |\n",
                 cases[k].fp8, cases[k].recipe);
        const char *path = test_path("mg_fp8.log");
        write_text(path, text);
        const log_run *r = parse_ok("megatron-lm", path, NULL);
        CHECK(strcmp(r->fp8_recipe, cases[k].want) == 0 && strstr(r->notes, cases[k].note),
              "fp8 %s, fp8_recipe %s: '%s' (want '%s'), notes '%s'", cases[k].fp8, cases[k].recipe, r->fp8_recipe,
              cases[k].want, r->notes);
        parsed_free();
    }
}

/* A log that parser p refuses with one error naming `want` (and holding `got`). */
typedef struct {
    const char *name, *text, *cfg, *want, *got;
} bad_log;

static void check_errors(const char *fw, const bad_log *cases, int n)
{
    for (int i = 0; i < n; i++) {
        const char *path = test_path(cases[i].name);
        write_text(path, cases[i].text);
        text_lines t;
        log_run r;
        capture_stderr_begin();
        int rc = parse_fixture(fw, path, cases[i].cfg, &t, &r);
        const char *e = capture_stderr_end();
        CHECK(rc == CB_EUSAGE && count_lines(e) == 1, "%s: code %d, one error line: %s", cases[i].name, rc, e);
        CHECK(strstr(e, cases[i].want) && strstr(e, cases[i].got), "%s: '%s' and '%s' in: %s", cases[i].name,
              cases[i].want, cases[i].got, e);
        log_run_free(&r);
        text_lines_free(&t);
    }
}

static void test_megatron_errors(void)
{
    static const bad_log cases[] = {
        {"mg_bad.log",
         "training ...\n"
         " iteration       10/     100 | consumed samples:          640 | elapsed time per iteration (ms): 812.3 |\n"
         " iteration       20/     100 | consumed samples:         1280 | elapsed time per iteration (ms): x |\n",
         NULL, "mg_bad.log:3: 'elapsed time per iteration (ms)'", "got 'x'"},
        {"mg_batch.log", " iteration 10/ 100 | elapsed time per iteration (ms): 812.3 | global batch size:  6a4 |\n",
         NULL, "mg_batch.log:1: 'global batch size'", "got '6a4'"},
        {"mg_arg.log",
         "------------------------ arguments ------------------------\n"
         "  num_layers ...................................... 3x2\n"
         "-------------------- end of arguments ---------------------\n",
         NULL, "mg_arg.log:2: argument 'num_layers'", "got '3x2'"},
        /* torchtitan's metrics line (torchtitan/components/metrics.py's log) */
        {"titan.log",
         "[rank0]:[titan] 2025-01-10 10:00:00,000 - root - INFO - Training starts at step 1.\n"
         "[rank0]:[titan] 2025-01-10 10:00:05,000 - root - INFO - step:  1  loss: 12.2345  memory: 40.50GiB(51.27%)"
         "  tps: 3,456  tflops: 180.12  mfu: 57.73%\n",
         NULL, "titan.log:2:", "torchtitan"},
        {"empty.log", "", NULL, "empty.log:1: empty", "Megatron-LM"},
        {"mg_cfg.log", " iteration 1/ 2 | elapsed time per iteration (ms): 812.3 |\n", "run.yaml", "flag '--config'",
         "no config file is read"},
    };
    check_errors("megatron-lm", cases, (int)(sizeof cases / sizeof cases[0]));
}

static void test_nemo_printed_config(void)
{
    const log_run *r = parse_ok("nemo", "tests/logs/nemo_gpt.log", NULL);
    config_is(r, (const int[6]){32, 4096, 32, 0, 11008, 0}, (const long[3]){4096, 1, 128},
              (const int[5]){2, 1, 1, 0, 8}, 16);
    CHECK(r->devices_per_node == 8, "per node %ld", r->devices_per_node);
    names_is(r, "bf16-mixed", "zero1", "none", "llama");
    CHECK(r->sequence_parallel == 1 && r->tied_embeddings == 0, "sp %d tied %d", r->sequence_parallel,
          r->tied_embeddings);
    CHECK(strcmp(r->config_from, "the config it prints (lines 5-86)") == 0, "from %s", r->config_from);
    /* line 93: the bar before any metric and six updates; line 95: six more and the last one redrawn */
    CHECK(r->nsteps == 12, "steps %d", r->nsteps);
    step_is(r, 0, 1, 1, 9.01, NAN, 0, 10.5, 93);
    step_is(r, 6, 7, 1, 3.94, NAN, 0, 8.96, 95); /* tqdm shows 3 significant digits */
    step_is(r, 11, 12, 1, 3.94, NAN, 0, 8.05, 95);
    parsed_free();
}

static void test_nemo_excerpt_config(void)
{
    const log_run *r = parse_ok("nemo", "tests/logs/nemo_excerpt.log", "tests/logs/nemo_run.yaml");
    config_is(r, (const int[6]){40, 5120, 40, 8, 13824, 0}, (const long[3]){8192, 2, 256},
              (const int[5]){4, 2, 2, 4, 2}, 32);
    CHECK(r->devices_per_node == 8, "per node %ld", r->devices_per_node);
    names_is(r, "fp8", "none", "full", "neox");
    CHECK(strcmp(r->notes, "activations_checkpoint_method uniform") == 0, "notes %s", r->notes);
    CHECK(strcmp(r->config_from, "--config tests/logs/nemo_run.yaml") == 0, "from %s", r->config_from);
    CHECK(r->nsteps == 6, "steps %d", r->nsteps);
    step_is(r, 0, 10, 1, 6.301, NAN, 0, 10.83, 1);
    step_is(r, 1, 20, 10, 2.452, NAN, 0, 9.214, 2); /* ProgressPrinter averages over its interval */
    step_is(r, 5, 60, 10, 2.452, NAN, 0, 6.702, 6);
    parsed_free();
}

/* "Hydra config: " + the YAML in one message (NeMo's other example scripts): its first line shares the header's. */
static void test_nemo_hydra_line(void)
{
    const char *path = test_path("nm_hydra.log");
    write_text(path, "[NeMo I 2024-06-11 08:02:14 train:151] Hydra config: trainer:\n"
                     "      devices: 4\n      num_nodes: 1\n      precision: 16\n"
                     "    model:\n      num_layers: 2\n"
                     "Epoch 0: :  50%|#####     | 1/2 [00:01<00:01, global_step=0.000, "
                     "train_step_timing in s=0.500]\n");
    const log_run *r = parse_ok("nemo", path, NULL);
    CHECK(r->devices == 4 && r->devices_per_node == 4 && r->dp == 4 && r->layers == 2, "devices %ld layers %d",
          r->devices, r->layers);
    names_is(r, "fp16-mixed", "", "", "");
    CHECK(strcmp(r->config_from, "the config it prints (lines 1-6)") == 0, "from %s", r->config_from);
    step_is(r, 0, 1, 1, 0.5, NAN, 0, NAN, 7);
    parsed_free();
}

static void test_nemo_errors(void)
{
    static const bad_log cases[] = {
        {"nm_bad.log",
         "Epoch 0: :   2%|          | 1/50 [00:09<07:21, reduced_train_loss=10.50, global_step=0.000, "
         "train_step_timing in s=9.010]\rEpoch 0: :   4%|          | 2/50 [00:13<03:10, reduced_train_loss=10.41, "
         "global_step=1.000, train_step_timing in s=x]\n",
         NULL, "nm_bad.log:1: 'train_step_timing in s'", "got 'x'"},
        {"nm_yaml.log",
         "[NeMo I 2024-06-11 08:02:14 megatron_gpt_pretraining:37] \n    \n"
         "    ************** Experiment configuration ***********\n"
         "[NeMo I 2024-06-11 08:02:14 megatron_gpt_pretraining:38] \n"
         "    model:\n      num_layers: 3x\n"
         "Training epoch 0, iteration 9/99 | global_step: 9 | train_step_timing in s: 2.5\n",
         NULL, "nm_yaml.log:6: key 'model.num_layers'", "got '3x'"},
        {"nm_megatron.log",
         " iteration       10/     100 | consumed samples:          640 | elapsed time per iteration (ms): 812.3 |\n",
         NULL, "nm_megatron.log:1:", "Megatron-LM"},
        {"nm_empty.log", "\n\n", NULL, "nm_empty.log:1: empty", "NeMo"},
        {"nm_nocfg.log", "Training epoch 0, iteration 9/99 | train_step_timing in s: 2.5\n", "tests/logs/none.yaml",
         "tests/logs/none.yaml", "cannot open"},
    };
    check_errors("nemo", cases, (int)(sizeof cases / sizeof cases[0]));
}

const test_case tests_logmegatron[] = {
    {"megatron log: current Megatron-LM, arguments block and iteration lines with throughput", test_megatron_core},
    {"megatron log: 2021 Megatron-LM, no throughput, fp16 with a skipped iteration", test_megatron_2021},
    {"megatron log: iteration lines alone give steps and no configuration", test_megatron_excerpt},
    {"megatron log: the overlap and attention columns from the arguments block", test_megatron_framework_columns},
    {"megatron log: data-parallel size from the world size when not printed", test_megatron_dp_from_world},
    {"megatron log: an fp8 block's --fp8-recipe as the fp8_recipe column (tensorwise: current)",
     test_megatron_fp8_recipe},
    {"megatron log: malformed fields, another format, an empty file: one error naming the line", test_megatron_errors},
    {"nemo log: the config it prints and the progress bar's updates", test_nemo_printed_config},
    {"nemo log: ProgressPrinter lines with --config", test_nemo_excerpt_config},
    {"nemo log: the config on the 'Hydra config:' line", test_nemo_hydra_line},
    {"nemo log: malformed fields, another format, an empty file: one error naming the line", test_nemo_errors},
    {NULL, NULL},
};
