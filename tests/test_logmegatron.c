/* test_logmegatron.c: the Megatron-LM and NeMo log parsers (report/logfmt_megatron.c, logfmt_nemo.c) on
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
#include "../report/logimport.h"
#include "check.h"

/* t and r loaded from `path` by parser p (with config `cfg`); returns the parser's code. */
static int parse_fixture(log_parser p, log_format f, const char *path, const char *cfg, text_lines *t, log_run *r)
{
    log_run_init(r, f);
    if (text_lines_load(t, path) != 0) {
        CHECK(0, "%s: cannot load", path);
        return CB_EUSAGE;
    }
    return p(t, cfg, r);
}

static int near(double x, double want) { return fabs(x - want) <= 1e-9 * fmax(1, fabs(want)); }

static void test_megatron_core(void)
{
    text_lines t;
    log_run r;
    CHECK(parse_fixture(log_parse_megatron, LOG_MEGATRON, "tests/logs/megatron_core.log", NULL, &t, &r) == 0, "parse");
    CHECK(r.layers == 32 && r.d_model == 4096 && r.heads == 32 && r.kv_heads == 8 && r.ffn_dim == 14336,
          "shape %d %d %d %d %d", r.layers, r.d_model, r.heads, r.kv_heads, r.ffn_dim);
    CHECK(r.vocab == 128256 && r.seq_len == 4096 && r.micro_batch == 1 && r.global_batch == 128, "sizes %d %ld %ld %ld",
          r.vocab, r.seq_len, r.micro_batch, r.global_batch);
    CHECK(r.tp == 2 && r.pp == 2 && r.cp == 1 && r.vp == 0 && r.dp == 8 && r.devices == 32,
          "degrees %d %d %d %d %d %ld", r.tp, r.pp, r.cp, r.vp, r.dp, r.devices);
    CHECK(r.sequence_parallel == 1 && r.tied_embeddings == 0, "sp %d tied %d", r.sequence_parallel, r.tied_embeddings);
    CHECK(strcmp(r.precision, "bf16-mixed") == 0 && strcmp(r.sharding, "zero1") == 0 &&
              strcmp(r.recompute, "selective") == 0 && strcmp(r.arch, "llama") == 0,
          "names %s %s %s %s", r.precision, r.sharding, r.recompute, r.arch);
    CHECK(strcmp(r.flop_convention, "megatron-core") == 0, "convention %s", r.flop_convention);
    CHECK(strcmp(r.config_from, "the arguments block (lines 4-57)") == 0, "from %s", r.config_from);
    CHECK(strcmp(r.notes, "overlap_grad_reduce; overlap_param_gather") == 0, "notes %s", r.notes);
    CHECK(r.nsteps == 9, "steps %d", r.nsteps);
    if (r.nsteps == 9) {
        const log_step *a = &r.steps[0], *b = &r.steps[1], *z = &r.steps[8];
        CHECK(a->iter == 1 && a->iters == 1 && near(a->step_s, 9.8742) && near(a->tflops_per_device, 95.3) &&
                  a->global_batch == 128 && near(a->loss, 11.89325) && a->line == 70,
              "first %ld %ld %g %g %ld %g %d", a->iter, a->iters, a->step_s, a->tflops_per_device, a->global_batch,
              a->loss, a->line);
        CHECK(b->iter == 10 && b->iters == 10 && b->line == 72, "second %ld %ld %d", b->iter, b->iters, b->line);
        CHECK(z->iter == 80 && z->iters == 10 && near(z->step_s, 4.0971) && near(z->tflops_per_device, 229.7) &&
                  z->global_batch == 128 && near(z->loss, 6.338074) && z->line == 79,
              "last %ld %ld %g %g %ld %g %d", z->iter, z->iters, z->step_s, z->tflops_per_device, z->global_batch,
              z->loss, z->line);
    }
    log_run_free(&r);
    text_lines_free(&t);
}

static void test_megatron_2021(void)
{
    text_lines t;
    log_run r;
    CHECK(parse_fixture(log_parse_megatron, LOG_MEGATRON, "tests/logs/megatron_2021.log", NULL, &t, &r) == 0, "parse");
    CHECK(r.layers == 24 && r.d_model == 2048 && r.heads == 16 && r.kv_heads == 0 && r.ffn_dim == 8192 &&
              r.vocab == 50304,
          "shape %d %d %d %d %d %d", r.layers, r.d_model, r.heads, r.kv_heads, r.ffn_dim, r.vocab);
    CHECK(r.seq_len == 2048 && r.micro_batch == 4 && r.global_batch == 512, "sizes");
    CHECK(r.tp == 2 && r.pp == 1 && r.cp == 0 && r.dp == 32 && r.devices == 64, "degrees %d %d %d %d %ld", r.tp, r.pp,
          r.cp, r.dp, r.devices);
    CHECK(strcmp(r.precision, "fp16-mixed") == 0 && strcmp(r.sharding, "none") == 0 &&
              strcmp(r.recompute, "full") == 0 && strcmp(r.arch, "") == 0,
          "names %s %s %s '%s'", r.precision, r.sharding, r.recompute, r.arch);
    CHECK(r.sequence_parallel == -1 && r.tied_embeddings == -1, "unprinted flags stay unset");
    CHECK(strcmp(r.flop_convention, "") == 0, "no throughput, no convention: %s", r.flop_convention);
    CHECK(strcmp(r.config_from, "the arguments block (lines 3-47)") == 0, "from %s", r.config_from);
    CHECK(strcmp(r.notes, "1 skipped iterations (the first at line 60)") == 0, "notes %s", r.notes);
    CHECK(r.nsteps == 6, "steps %d", r.nsteps);
    if (r.nsteps == 6) {
        const log_step *a = &r.steps[0], *z = &r.steps[5];
        CHECK(a->iter == 100 && a->iters == 100 && near(a->step_s, 2.2318) && isnan(a->tflops_per_device) &&
                  a->global_batch == 512 && a->line == 60,
              "first %ld %ld %g %g %ld %d", a->iter, a->iters, a->step_s, a->tflops_per_device, a->global_batch,
              a->line);
        CHECK(z->iter == 600 && z->iters == 100 && near(z->step_s, 2.145) && near(z->loss, 5.652098) && z->line == 66,
              "last %ld %ld %g %g %d", z->iter, z->iters, z->step_s, z->loss, z->line);
    }
    log_run_free(&r);
    text_lines_free(&t);
}

/* Iteration lines alone: timing and throughput; the configuration stays unset; the interval is the
 * difference between the last two lines. */
static void test_megatron_excerpt(void)
{
    text_lines t;
    log_run r;
    CHECK(parse_fixture(log_parse_megatron, LOG_MEGATRON, "tests/logs/megatron_excerpt.log", NULL, &t, &r) == 0,
          "parse");
    CHECK(r.layers == 0 && r.tp == 0 && r.dp == 0 && r.devices == 0 && r.precision[0] == '\0' &&
              r.sharding[0] == '\0' && r.config_from[0] == '\0',
          "configuration unset");
    CHECK(strcmp(r.flop_convention, "megatron-core") == 0, "convention %s", r.flop_convention);
    CHECK(r.nsteps == 5, "steps %d", r.nsteps);
    if (r.nsteps == 5) {
        const log_step *a = &r.steps[0], *z = &r.steps[4];
        CHECK(a->iter == 30 && a->iters == 10 && near(a->step_s, 4.1019) && near(a->tflops_per_device, 229.4) &&
                  a->global_batch == 128 && a->line == 1,
              "first %ld %ld %g %g %d", a->iter, a->iters, a->step_s, a->tflops_per_device, a->line);
        CHECK(z->iter == 70 && near(z->step_s, 4.1008) && near(z->tflops_per_device, 229.5) && z->line == 5,
              "last %ld %g %g %d", z->iter, z->step_s, z->tflops_per_device, z->line);
    }
    log_run_free(&r);
    text_lines_free(&t);
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
    text_lines t;
    log_run r;
    CHECK(parse_fixture(log_parse_megatron, LOG_MEGATRON, path, NULL, &t, &r) == 0, "parse");
    CHECK(r.dp == 4 && r.devices == 256, "dp %d devices %ld", r.dp, r.devices);
    CHECK(r.nsteps == 1 && r.steps[0].iters == 1 && near(r.steps[0].step_s, 1.5), "one step of one iteration");
    log_run_free(&r);
    text_lines_free(&t);
}

/* A log that parser p refuses with one error naming `want` (and holding `got`). */
typedef struct {
    const char *name, *text, *cfg, *want, *got;
} bad_log;

static void check_errors(log_parser p, log_format f, const bad_log *cases, int n)
{
    for (int i = 0; i < n; i++) {
        const char *path = test_path(cases[i].name);
        write_text(path, cases[i].text);
        text_lines t;
        log_run r;
        capture_stderr_begin();
        int rc = parse_fixture(p, f, path, cases[i].cfg, &t, &r);
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
    check_errors(log_parse_megatron, LOG_MEGATRON, cases, (int)(sizeof cases / sizeof cases[0]));
}

const test_case tests_logmegatron[] = {
    {"megatron log: current Megatron-LM, arguments block and iteration lines with throughput", test_megatron_core},
    {"megatron log: 2021 Megatron-LM, no throughput, fp16 with a skipped iteration", test_megatron_2021},
    {"megatron log: iteration lines alone give steps and no configuration", test_megatron_excerpt},
    {"megatron log: data-parallel size from the world size when not printed", test_megatron_dp_from_world},
    {"megatron log: malformed fields, another format, an empty file: one error naming the line", test_megatron_errors},
    {NULL, NULL},
};
