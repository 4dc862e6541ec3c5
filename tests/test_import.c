/* test_import.c: costbench import: the steady state of constructed step series, the costbench
 * train log (tests/logs/costbench_tiny.log: `costbench train --model pythia-70m --layers 2
 * --d-model 64 --heads 4 --vocab 512 --micro-batch 2 --seq 64 --steps 8 --no-predict` as
 * src/cmd_train.c prints it) into its row, --out, the flags, and the round trip into scale. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "../common/err.h"
#include "../common/frameworks.h"
#include "../report/formats/devices.h"
#include "../report/logs/logrow.h"
#include "../report/logs/registry.h"
#include "../report/formats/published.h"
#include "../report/predict/stepmodel.h"
#include "check.h"

#define TINY "tests/logs/costbench_tiny.log"

/* A run of n steps with these step times (global batch gb[k], or 8 when gb is NULL). */
static void run_of(log_run *r, const double *s, const long *gb, int n)
{
    log_run_init(r, log_format_find("costbench"));
    r->global_batch = 8;
    for (int k = 0; k < n; k++) {
        log_step st = log_step_unset(k + 1);
        st.step_s = s[k], st.global_batch = gb ? gb[k] : 8, st.iter = k + 1;
        log_run_add_step(r, &st);
    }
}

static void test_steady_warmup(void)
{
    /* start-up 9 s, two slow warm-up steps, then 1.0 .. 1.06 */
    const double s[10] = {9, 2.0, 1.5, 1.00, 1.02, 1.01, 1.04, 1.03, 1.06, 1.05};
    log_run r;
    run_of(&r, s, NULL, 10);
    log_steady st;
    CHECK(log_steady_compute(&r, -1, "x.log", &st) == 0, "computes");
    CHECK(st.warm == 3 && st.n == 7 && st.ramp == 0 && st.iters == 7, "warm %d n %d", st.warm, st.n);
    CHECK(st.metric == PUB_STEP_TIME_S, "metric %d", st.metric);
    /* kept 1.00 1.01 1.02 1.03 1.04 1.05 1.06: median 1.03, Q1 1.015, Q3 1.045 */
    CHECK(fabs(st.median - 1.03) < 1e-12 && st.min == 1.00 && st.max == 1.06, "median %g", st.median);
    CHECK(fabs(st.iqr_pct - 100 * 0.03 / 1.03) < 1e-9, "iqr %g", st.iqr_pct);
    log_steady_free(&st);
    CHECK(log_steady_compute(&r, 5, "x.log", &st) == 0 && st.warm == 5 && st.n == 5 &&
              fabs(st.median - 1.04) < 1e-12,
          "--skip-steps 5: %d %g", st.n, st.median);
    log_steady_free(&st);
    log_run_free(&r);
}

static void test_steady_ramp(void)
{
    const double s[8] = {3, 0.5, 0.6, 1.0, 1.0, 1.2, 0.8, 1.0};
    const long gb[8] = {2, 2, 4, 8, 8, 8, 8, 8};
    log_run r;
    run_of(&r, s, gb, 8);
    log_steady st;
    CHECK(log_steady_compute(&r, -1, "x.log", &st) == 0, "computes");
    /* 3 dropped for another batch; of the 5 left the first is start-up, the rest inside the band */
    CHECK(st.ramp == 3 && st.warm == 1 && st.n == 4, "ramp %d warm %d n %d", st.ramp, st.warm, st.n);
    CHECK(fabs(st.median - 1.0) < 1e-12 && st.min == 0.8 && st.max == 1.2, "median %g", st.median);
    log_steady_free(&st);
    capture_stderr_begin();
    int rc = log_steady_compute(&r, 9, "x.log", &st);
    const char *err = capture_stderr_end();
    CHECK(rc == CB_EUSAGE && strstr(err, "x.log:8: no step line left after the warm-up: 8 step lines"), "%s", err);
    log_steady_free(&st);
    log_run_free(&r);
}

/* The fixture's row, exactly. */
static void test_fixture_row(void)
{
    const char *args[] = {"import", TINY, "--skip-steps", "2", NULL};
    static char out[16384], err[4096];
    int rc = cli_run(args, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "exit %d: %s", rc, err);
    const char *row = strstr(out, "\ncostbench_tiny,");
    CHECK(row != NULL, "no row: %s", out);
    if (!row) return;
    const char *want = "\ncostbench_tiny,\"costbench import of " TINY " (lines 11-16, 6 steps after 2 warm-up)\","
                       "costbench,this machine,1,1,,this machine,pythia-70m-custom,neox,2,64,4,4,256,512,,false,64,2,"
                       "2,1,1,1,,,,none,none,fp32,step_time_s,0.6159,palm,0.0132,3.2472804,";
    CHECK(strncmp(row, want, strlen(want)) == 0, "row:\n%s\nwant:\n%s", row, want);
    CHECK(strstr(out, "costbench train's own summary: 3.247 seq/s, the median of 6 steps"), "notes");
    CHECK(strstr(out, "# steps: 8 step lines; 0 dropped for a global batch other than the last (ramp-up); 0 "
                      "without step_time_s (before the framework's throughput window filled); 2 dropped as warm-up "
                      "(--skip-steps 2); 6 kept, 6 steps"),
          "steps line: %s", out);
}

static void test_out_files(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char path[512], before[65536], after[65536];
    snprintf(path, sizeof path, "%s/runs.csv", dir);
    const char *a1[] = {"import", TINY, "--out", path, NULL};
    CHECK(cli_run(a1, NULL, 0, NULL, 0) == 0, "new file");
    const char *a2[] = {"import", TINY, "--out", path, "--id", "second", "--skip-steps", "3", NULL};
    CHECK(cli_run(a2, NULL, 0, NULL, 0) == 0, "append");
    dev_table dt = {0};
    pub_table t;
    CHECK(devices_load(&dt, NULL) == 0 && published_load(&t, path, &dt) == 0 && t.n == 2 &&
              published_find(&t, "costbench_tiny") && published_find(&t, "second"),
          "loads with 2 rows");
    published_free(&t);
    devices_free(&dt);
    slurp(path, before, sizeof before);
    char err[4096];
    CHECK(cli_run(a2, NULL, 0, err, sizeof err) == 2 && strstr(err, "column 'id': 'second' is already in"),
          "duplicate: %s", err);
    slurp(path, after, sizeof after);
    CHECK(strcmp(before, after) == 0, "file unchanged");
    char ro[512], rpath[600];
    snprintf(ro, sizeof ro, "%s/ro", dir);
    mkdir(ro, 0500);
    snprintf(rpath, sizeof rpath, "%s/x.csv", ro);
    const char *a3[] = {"import", TINY, "--out", rpath, NULL};
    int rc = cli_run(a3, NULL, 0, err, sizeof err);
    CHECK(getuid() == 0 || (rc != 0 && strstr(err, "cannot write")), "read-only: %d %s", rc, err);
    chmod(ro, 0700);
    rm_tree(dir);
}

static void test_flags(void)
{
    char out[16384], err[4096];
    const char *a1[] = {"import", TINY, "--seq", "128", NULL};
    CHECK(cli_run(a1, out, sizeof out, err, sizeof err) == 2 &&
              strstr(err, "flag '--seq': 128, but " TINY ":24 says 64") && count_lines(err) == 1,
          "contradiction: %s", err);
    const char *a2[] = {"import", TINY, "--precision", "fp64", NULL};
    CHECK(cli_run(a2, out, sizeof out, err, sizeof err) == 2 && strstr(err, "flag '--precision'"), "%s", err);
    const char *a3[] = {"import", TINY, "--micro-batch", "2", "--framework", "costbench", NULL};
    CHECK(cli_run(a3, out, sizeof out, err, sizeof err) == 0 && strstr(out, "none from flags"), "agreeing flag");
    write_text(test_path("empty.log"), "hello\n");
    const char *a4[] = {"import", test_path("empty.log"), NULL};
    CHECK(cli_run(a4, out, sizeof out, err, sizeof err) == 2 && strstr(err, "empty.log:1: no step line of Megatron-LM"),
          "%s", err);
}

/* The round trip: scale on "this machine" calibrated on the imported row predicts its own seq/s. */
static void test_round_trip(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char path[512], spec[600], out[32768], err[4096];
    snprintf(path, sizeof path, "%s/run.csv", dir);
    snprintf(spec, sizeof spec, "%s:run", path);
    /* no --skip-steps: the log's own summary states its warm-up (2 steps), and import keeps to it */
    const char *a1[] = {"import", TINY, "--id", "run", "--out", path, NULL};
    CHECK(cli_run(a1, out, sizeof out, err, sizeof err) == 0 &&
              strstr(out, "2 dropped as warm-up (the 2 the log's own summary leaves out); 6 kept"),
          "import: %s%s", out, err);
    const char *a2[] = {"scale", "--calibrate", spec, "--model", "pythia-70m", "--layers", "2", "--d-model", "64",
                        "--heads", "4", "--vocab", "512", "--instance", "this machine", "--seq", "64", "--micro-batch",
                        "2", "--global-batch", "2", "--nodes", "1", "--precision", "fp32", "--csv", "-", NULL};
    CHECK(cli_run(a2, out, sizeof out, err, sizeof err) == 0, "scale: %s", err);
    char csv[512];
    snprintf(csv, sizeof csv, "%s/scale.csv", dir);
    const char *a3[] = {"scale", "--calibrate", spec, "--model", "pythia-70m", "--layers", "2", "--d-model", "64",
                        "--heads", "4", "--vocab", "512", "--instance", "this machine", "--seq", "64", "--micro-batch",
                        "2", "--global-batch", "2", "--nodes", "1", "--precision", "fp32", "--csv", csv, NULL};
    double sps[4];
    CHECK(cli_run(a3, NULL, 0, err, sizeof err) == 0 && csv_column(csv, "seq_per_s", sps, 4) == 1, "scale csv");
    /* the train summary's 3.247 seq/s (its median of the same 6 steps) */
    CHECK(fabs(sps[0] / 3.247 - 1) < 0.01, "predicted %g seq/s, the run 3.247", sps[0]);
    const char *a4[] = {"scale",   "--model", "pythia-70m",     "--instance", "this machine",
                        "--nodes", "1",       "--global-batch", "2",          NULL};
    CHECK(cli_run(a4, NULL, 0, err, sizeof err) == 2 && strstr(err, "runs on the hardware of a --calibrate"),
          "no calibration: %s", err);
    rm_tree(dir);
}

/* One log of each framework through `costbench import`, with the flags a user adds for what the
 * log does not state; the row's configuration and figures as worked by hand from the fixture:
 *   Megatron-LM: lines at iterations 10..80 (the first, iteration 1, is start-up), median of
 *     4112.6 4098.3 4101.9 4095.0 4103.4 4099.7 4100.8 4097.1 ms = 4100.25 ms; 128 / 4.10025 s
 *     = 31.2176 seq/s; 8 lines of 10 iterations = 80 steps; world 32 = tp 2 x pp 2 x dp 8.
 *   NeMo: steps 1..11 (step 0 at 9.01 s is start-up; the bar redrawn at 11 counts once) at 3.95
 *     and 3.94 s: median 3.94 s; 128 / 3.94 = 32.4873 seq/s.
 *   torchtitan: steps 2..10 tps 6412 6498 6503 6487 6510 6495 6501 6492 6506, median 6498 per
 *     device; x 8 devices / 8192 tokens = 6.3457 seq/s.
 *   Composer: batches 3..6 print throughput (1..2 only the loss), batch 3 is start-up; 1 /
 *     batches_per_sec 0.0625 0.0625 0.0640 = 16, 16, 15.625 s: median 16 s; 256 / 16 = 16 seq/s;
 *     FSDP on 8 devices: tp 1, pp 1, dp 8. */
static void test_frameworks(void)
{
    static const struct {
        const char *args[12], *want;
    } cases[] = {
        {{"import", "tests/logs/megatron_core.log", "--device", "h100-sxm5-80gb", "--devices-per-node", "8", NULL},
         "megatron-lm,h100-sxm5-80gb,32,8,,,,llama,32,4096,32,8,14336,128256,,false,4096,128,1,2,2,8,1,,true,zero1,"
         "selective,bf16-mixed,step_time_s,4.10025,,,31.2176087,"},
        {{"import", "tests/logs/nemo_gpt.log", "--device", "h100-sxm5-80gb", NULL},
         "nemo,h100-sxm5-80gb,16,8,,,,llama,32,4096,32,,11008,,,false,4096,128,1,2,1,8,1,,true,zero1,none,bf16-mixed,"
         "step_time_s,3.94,,,32.4873096,"},
        {{"import", "tests/logs/torchtitan_llama3_8b.log", "--config", "tests/logs/torchtitan_llama3_8b.toml",
          "--device", "h100-sxm5-80gb", "--devices-per-node", "8", NULL},
         "torchtitan,h100-sxm5-80gb,8,8,,,llama3-8B,llama,32,4096,32,8,14336,128256,8.03026125e+09,,8192,16,2,1,1,8,1,"
         ",,zero3,selective,bf16-mixed,tokens_per_s_per_device,6498,palm,989,6.34570312,"},
        {{"import", "tests/logs/composer_mpt7b.log", "--config", "tests/logs/composer_mpt7b.yaml", "--devices", "8",
          "--devices-per-node", "8", "--device", "a100-sxm4-80gb", NULL},
         "llm-foundry,a100-sxm4-80gb,8,8,,,,mpt,32,4096,32,,16384,50368,,,2048,256,8,1,1,8,,,,zero3,full,bf16-mixed,"
         "step_time_s,16,,,16,"},
    };
    static char out[16384], err[4096];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int rc = cli_run(cases[k].args, out, sizeof out, err, sizeof err);
        CHECK(rc == 0 && strstr(out, cases[k].want), "%s: exit %d\n%s\nwant:\n%s\n%s", cases[k].args[1], rc, out,
              cases[k].want, err);
    }
    /* `costbench train --summary-csv`'s file: its one row is the steady state (0.500508358 seq/s);
     * the shape from the pythia-70m preset, the peak per rank 76.52 GFLOP/s */
    const char *sm[] = {"import", "tests/logs/costbench_summary.csv", NULL};
    int rs = cli_run(sm, out, sizeof out, err, sizeof err);
    CHECK(rs == 0 &&
              strstr(out, ",costbench,this machine,1,1,,this machine,pythia-70m,neox,6,512,8,8,2048,50304,,false,"
                          "64,1,1,1,1,1,,,,none,none,fp32,seq_per_s,0.500508358,palm,0.0765236266,0.500508358,"),
          "summary: %d\n%s%s", rs, out, err);
    /* an excerpt without the configuration still gives its timing; seq/s needs the batch */
    const char *ex[] = {"import", "tests/logs/nemo_excerpt.log", NULL};
    int rc = cli_run(ex, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, ",step_time_s,2.451,,,,") && strstr(out, "seq_per_s left empty"), "excerpt:\n%s%s",
          out, err);
    /* a collective benchmark's output goes to the network fit; a log's own flags are refused there */
    const char *nc[] = {"import", "tests/logs/nccl_all_reduce_2x8.txt", NULL};
    rc = cli_run(nc, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "\nall_reduce,inter,NVIDIA A100-SXM4-40GB,16,2,8,"), "nccl:\n%s%s", out, err);
    const char *nf[] = {"import", "tests/logs/nccl_all_reduce_2x8.txt", "--framework", "megatron", NULL};
    CHECK(cli_run(nf, out, sizeof out, err, sizeof err) == 2 && strstr(err, "flag '--framework'"), "%s", err);
    const char *ns[] = {"import", TINY, "--scope", "inter", NULL};
    CHECK(cli_run(ns, out, sizeof out, err, sizeof err) == 2 && strstr(err, "flag '--scope'"), "%s", err);
}

/* Copies `from` to `to` with the first occurrence of `old` replaced by `new` (same line count). */
static void copy_edited(const char *from, const char *to, const char *old, const char *new)
{
    FILE *f = fopen(from, "rb");
    static char buf[65536];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    char *at = strstr(buf, old);
    CHECK(at != NULL, "%s: no '%s'", from, old);
    if (!at) return;
    static char out[65536 + 256];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - buf), buf, new, at + strlen(old));
    write_text(to, out);
}

/* Inputs that once crashed a reader: each is now one error naming its line. */
static void test_malformed(void)
{
    char out[16384], err[4096];
    /* a summary row stating tensor_parallel 0 (a division by zero) */
    copy_edited(TINY, test_path("tp0.log"), "pythia-70m-custom                1", "pythia-70m-custom                0");
    const char *a1[] = {"import", test_path("tp0.log"), NULL};
    CHECK(cli_run(a1, out, sizeof out, err, sizeof err) == 2 && strstr(err, "tp0.log:24: column 'tensor_parallel'"),
          "%s", err);
    /* a summary CSV the throughput loader refuses (what it had read was leaked) */
    copy_edited("tests/logs/costbench_summary.csv", test_path("sum0.csv"), "pythia-70m,1,1,1,", "pythia-70m,0,1,1,");
    const char *as[] = {"import", test_path("sum0.csv"), NULL};
    CHECK(cli_run(as, out, sizeof out, err, sizeof err) == 2 && strstr(err, "sum0.csv:2: column 'tensor_parallel'"),
          "%s", err);
    /* an nccl-tests header without its time columns (the rows were read at column -1) */
    copy_edited("tests/logs/nccl_reduce_scatter_1x4.txt", test_path("notime.txt"),
                "time   algbw   busbw  #wrong     time", "xxxx   algbw   busbw  #wrong     xxxx");
    const char *a2[] = {"import", test_path("notime.txt"), NULL};
    CHECK(cli_run(a2, out, sizeof out, err, sizeof err) == 2 && strstr(err, "notime.txt:14: the table's header"),
          "%s", err);
    /* a catalogue whose JSON breaks inside a nested object (its partial members were leaked) */
    write_text(test_path("cut.json"), "{\"Items\": [{\"a\": {\"b\": [1, 2, {\"c\": \"d\"}, \n");
    const char *a3[] = {"prices", "import", test_path("cut.json"), "--format", "azure-retail", "--as-of", "2025", NULL};
    int rc = cli_run(a3, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "cut.json:"), "exit %d: %s%s", rc, out, err);
}

/* ---------------------------------------------------------------- the --framework vocabulary */

/* The registry's rows (report/logs/registry.c): each framework a canonical name the step model
 * knows, reached by its name and by the format's old name (an alias: megatron, composer). */
static void test_registry_rows(void)
{
    CHECK(log_nformats >= 5, "%d formats", log_nformats);
    for (int k = 0; k < log_nformats; k++) {
        const log_format_def *d = &log_formats[k];
        CHECK(d->name && d->framework && d->title && d->is_line && d->parse, "row %d complete", k);
        CHECK(strcmp(framework_canonical(d->framework), d->framework) == 0 &&
                  strcmp(step_framework_find(d->framework)->name, d->framework) == 0,
              "%s: a canonical name the step model knows", d->framework);
        CHECK(log_format_find(d->framework) == k && log_format_find(d->name) == k, "%s and %s find row %d",
              d->framework, d->name, k);
    }
    CHECK(log_format_find("megatron") == log_format_find("megatron-lm") &&
              log_format_find("composer") == log_format_find("llm-foundry") && log_format_find("nosuch") < 0 &&
              log_format_find("neuron-nemo") < 0,
          "aliases");
}

/* import, scale and plan take the schema's names and the old spellings; an unknown name is one
 * error listing the command's names and the aliases. */
static void test_framework_names(void)
{
    static char out[16384], out2[16384], err[4096];
    const char *a1[] = {"import", "tests/logs/megatron_core.log", "--framework", "megatron-lm", NULL};
    const char *a2[] = {"import", "tests/logs/megatron_core.log", "--framework", "megatron", NULL};
    int r1 = cli_run(a1, out, sizeof out, err, sizeof err), r2 = cli_run(a2, out2, sizeof out2, err, sizeof err);
    CHECK(r1 == 0 && r2 == 0 && strstr(out, "(--framework megatron-lm)") &&
              strstr(out, ",megatron-lm,") && strcmp(out, out2) == 0,
          "import --framework megatron-lm / megatron: %d %d\n%s%s", r1, r2, out, err);
    const char *a3[] = {"import", "tests/logs/megatron_core.log", "--framework", "nosuch", NULL};
    int rc = cli_run(a3, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && count_lines(err) == 1 && strstr(err, "error: flag '--framework': expected one of megatron-lm, "
                                                          "megatron-deepspeed, nemo, torchtitan, llm-foundry or "
                                                          "costbench") &&
              strstr(err, "megatron (megatron-lm)") && strstr(err, "got 'nosuch'"),
          "import --framework nosuch: %d %s", rc, err);
    const char *s1[] = {"scale", "--model", "pythia-6.9b", "--instance", "trn1.32xlarge", "--tp", "8", "--global-batch",
                        "1024", "--nodes", "1,2", "--framework", "megatron", NULL};
    rc = cli_run(s1, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "# framework features (--framework megatron-lm: Megatron-LM") &&
              strstr(out, "materialised (full) attention (the framework's)"),
          "scale --framework megatron: %d\n%s%s", rc, out, err);
    s1[12] = "megatron-lm";
    CHECK(cli_run(s1, out2, sizeof out2, err, sizeof err) == 0 && strcmp(out, out2) == 0,
          "scale: megatron and megatron-lm alike");
    s1[12] = "nosuch";
    rc = cli_run(s1, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && count_lines(err) == 1 &&
              strstr(err, "error: flag '--framework': expected one of plain, megatron-lm") &&
              strstr(err, "neuron-nemo") && strstr(err, "composer (llm-foundry)"),
          "scale --framework nosuch: %d %s", rc, err);
    const char *p1[] = {"plan", "--model", "llama2-7b", "--tokens", "140B", "--deadline-days", "300", "--instances",
                        "p5.48xlarge", "--max-nodes", "2", "--framework", "composer", "--top", "2", NULL};
    rc = cli_run(p1, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "# framework features (--framework llm-foundry"), "plan --framework composer: %d %s",
          rc, err);
}

const test_case tests_import[] = {
    {"import: malformed inputs that once crashed a reader", test_malformed},
    {"import: one log per framework into its row (worked by hand)", test_frameworks},
    {"import: steady state, warm-up detected, --skip-steps", test_steady_warmup},
    {"import: steady state, batch ramp-up dropped", test_steady_ramp},
    {"import: costbench train log into its row", test_fixture_row},
    {"import: --out new, appended, duplicate id, read-only", test_out_files},
    {"import: flags fill and contradict", test_flags},
    {"import: round trip into scale --instance 'this machine'", test_round_trip},
    {"import: the registry of log formats, one row each, frameworks by the schema's names", test_registry_rows},
    {"import: --framework: the schema's names and the aliases (import, scale, plan); an unknown one is one error",
     test_framework_names},
    {NULL, NULL},
};
