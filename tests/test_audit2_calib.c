/* Regression tests for the second hostile audit's defects (issue 18), the part on calibrations and
 * plans: 10 (a plan of less than one step; a calibration row carried far outside the efficiency
 * curve's range or above 100% MFU; --matmul-csv's numbers range-checked) and 11 (one error line
 * per calibration row, FILE:LINE and exit 2 whatever rejects it; a wrong --matmul-csv; the budget
 * and MTBF verdicts; rows measured on this machine). Worked on a made-up instance: 8 accelerators
 * of 100 dense BF16 TFLOP/s, one rank each, no memory bandwidth or device link listed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/presets.h"
#include "check.h"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

static const char g_hw[] =
    "instance_type,accelerator,accelerators,workers_per_accelerator,bf16_tflops,fp32_tflops,mem_gib,mem_gb_per_s,"
    "intra_node_gb_per_s,network_gbit_per_s,network_latency_us,source\n"
    "toy.8x,Toy,8,1,100,25,80,,,100,,made up for tests\n";
static const char g_prices[] = "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n"
                               "aws,toy.8x,us-east-1,on_demand,10,2026,test\n";
static const char g_head[] =
    "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n";

typedef struct {
    char dir[64], hw[128], prices[128], rows[128], mm[128];
} files;

/* A temp dir with the toy hardware and price tables and a throughput file: `head` (NULL: g_head)
 * then `rows`. */
static int files_make(files *f, const char *head, const char *rows)
{
    char *d = test_tmpdir();
    if (!d) return -1;
    snprintf(f->dir, sizeof f->dir, "%s", d);
    snprintf(f->hw, sizeof f->hw, "%s/hardware.csv", d);
    snprintf(f->prices, sizeof f->prices, "%s/prices.csv", d);
    snprintf(f->rows, sizeof f->rows, "%s/rows.csv", d);
    snprintf(f->mm, sizeof f->mm, "%s/mm.csv", d);
    write_text(f->hw, g_hw);
    write_text(f->prices, g_prices);
    char text[4096];
    snprintf(text, sizeof text, "%s%s", head ? head : g_head, rows);
    write_text(f->rows, text);
    return 0;
}

/* costbench scale --calibrate spec on toy.8x: target `model`, tp 8, seq 2048, global batch 64, 1 node. */
static int scale_toy(const files *f, const char *spec, const char *model, const char *matmul_csv)
{
    const char *args[32] = {"scale", "--calibrate", spec, "--model", model, "--instance", "toy.8x", "--hardware", f->hw,
                            "--usd-per-hour", "10", "--tp", "8", "--seq", "2048", "--global-batch", "64", "--nodes",
                            "1"};
    int a = 19;
    if (matmul_csv) args[a++] = "--matmul-csv", args[a++] = matmul_csv;
    args[a] = NULL;
    return run(args);
}

/* costbench plan of `model` on toy.8x (up to 4 nodes, seq 2048, global batch 64), `extra` flags after. */
static int plan_toy(const files *f, const char *model, const char *tokens, const char *const *extra)
{
    const char *args[40] = {"plan", "--model", model, "--tokens", tokens, "--deadline-days", "30", "--seq", "2048",
                            "--global-batch", "64", "--max-nodes", "4", "--hardware", f->hw, "--prices", f->prices};
    int a = 17;
    for (int i = 0; extra && extra[i] && a < 38; i++) args[a++] = extra[i];
    args[a] = NULL;
    return run(args);
}

/* Exit code want_rc, one line starting "error: " + `lead` with `want` in it, at most a hint after. */
static void expect_error(int rc, int want_rc, const char *lead, const char *want, const char *what)
{
    CHECK(rc == want_rc, "%s: exit %d, expected %d: %s", what, rc, want_rc, g_err);
    char start[512];
    snprintf(start, sizeof start, "error: %s", lead);
    const char *nl = strchr(g_err, '\n');
    CHECK(strncmp(g_err, start, strlen(start)) == 0, "%s: the error starts '%s': %s", what, start, g_err);
    CHECK(!nl || !nl[1] || (strncmp(nl + 1, "hint: ", 6) == 0 && (!strchr(nl + 1, '\n') || !strchr(nl + 1, '\n')[1])),
          "%s: one error line (and at most a hint): %s", what, g_err);
    CHECK(strstr(g_err, want) != NULL, "%s: '%s' in %s", what, want, g_err);
}

/* ---------------------------------------------------------------- 10: less than one step */

static void test_plan_less_than_one_step(void)
{
    files f;
    if (files_make(&f, NULL, "") != 0) return;
    /* one step is 64 sequences x 2048 tokens = 131072 tokens */
    expect_error(plan_toy(&f, "gpt3-1.3b", "1K", NULL), 2, "flag '--tokens'", "131072", "1K tokens");
    CHECK(strstr(g_err, "one step") != NULL, "says one step: %s", g_err);
    CHECK(plan_toy(&f, "gpt3-1.3b", "131072", NULL) == 0, "exactly one step is a plan: %s", g_err);
    rm_tree(f.dir);
}

/* ---------------------------------------------------------------- 10: far outside the curve */

/* seq_len 1 at tp 8 is N = 1/8 row per device: the old assumed curve's N term there was 1/4097,
 * and carried to N 256 (1/3) it multiplied the row's MFU by 1366. The step model times the row's
 * own tiny GEMMs (their launches dominate): the carried MFU stays within what the device allows,
 * and the target is marked extrapolated. */
static void test_calib_outside_curve(void)
{
    files f;
    if (files_make(&f, NULL, "gpt3-1.3b,8,1,1,toy.8x,1,64,10\n") != 0) return;
    int rc = scale_toy(&f, f.rows, "gpt3-1.3b", NULL);
    CHECK(rc == 0, "exit %d: %s", rc, g_err);
    double mfu_c = note_value(g_out, "# calibration gpt3-1.3b", "compute MFU "),
           mfu_t = note_value(g_out, "# target gpt3-1.3b", "compute MFU "),
           e = note_value(g_out, "# target gpt3-1.3b", " e ");
    CHECK(mfu_t > mfu_c && mfu_t < 0.75 && e <= 1,
          "carried within the device: MFU %.6g -> %.6g, GEMMs at %.6g of the peak", mfu_c, mfu_t, e);
    CHECK(strstr(g_out, "extrapolated: ") && strstr(g_out, "the tokens per device per step of the calibration"),
          "the target is marked extrapolated: %s", g_out);
    /* the same row for plan: a plan */
    const char *cal[] = {"--calibrate", f.rows, NULL};
    rc = plan_toy(&f, "gpt3-1.3b", "10B", cal);
    CHECK(rc == 0, "plan: exit %d: %s", rc, g_err);
    rm_tree(f.dir);
}

/* ---------------------------------------------------------------- 10: above 100% */

/* 130 seq/s of gpt3-1.3b at seq 512 on toy.8x: the step model would need its GEMMs at over 120% of the
 * dense peak to reproduce it. scale and plan refuse the calibration in one error naming the row
 * and the term; 50 seq/s at twice the batch (97% of it) calibrates. */
static void test_calib_above_peak(void)
{
    files f;
    if (files_make(&f, NULL, "gpt3-1.3b,8,1,1,toy.8x,512,64,130\ngpt3-1.3b,8,1,1,toy.8x,512,128,50\n") != 0) return;
    char spec[160], lead[200];
    snprintf(spec, sizeof spec, "%s:2", f.rows);
    snprintf(lead, sizeof lead, "%s:2: ", f.rows);
    expect_error(scale_toy(&f, spec, "gpt3-1.3b", NULL), 2, lead, "above 100%", "calibration above the peak");
    CHECK(strstr(g_err, "the row implies its GEMMs run at 1") && strstr(g_err, "% of the dense peak"),
          "names the term: %s", g_err);
    const char *cal[] = {"--calibrate", spec, NULL};
    expect_error(plan_toy(&f, "gpt3-1.3b", "10B", cal), 2, lead, "above 100%", "plan: calibration above the peak");
    snprintf(spec, sizeof spec, "%s:3", f.rows);
    CHECK(scale_toy(&f, spec, "gpt3-1.3b", NULL) == 0, "50 seq/s at batch 128 calibrates: %s", g_err);
    rm_tree(f.dir);
}

/* ---------------------------------------------------------------- 10: --matmul-csv numbers */

static void test_matmul_csv_ranges(void)
{
    files f;
    if (files_make(&f, NULL, "gpt3-1.3b,8,1,1,toy.8x,2048,64,10\n") != 0) return;
    static const struct {
        const char *text, *column;
    } bad[] = {
        {"op,n,k,m,pct_of_peak\nqkv,128,2048,6144,300\n", "column 'pct_of_peak'"},
        {"op,n,k,m,pct_of_peak\nqkv,128,2048,6144,0\n", "column 'pct_of_peak'"},
        {"op,n,k,m,pct_of_peak\nqkv,128,2048,0,50\n", "column 'm'"},
        {"op,n,k,m,gflops_median\nqkv,128,2048,6144,-5\n", "column 'gflops_median'"},
        {"op,n,k,m,gflops_median\nqkv,128,2048,6144,nan\n", "column 'gflops_median'"},
        {"op,n,k,m,gflops_median\nqkv,0,2048,6144,5\n", "column 'n'"},
    };
    char lead[200];
    snprintf(lead, sizeof lead, "%s:2: ", f.mm);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(f.mm, bad[i].text);
        expect_error(scale_toy(&f, f.rows, "gpt3-1.3b", f.mm), 2, lead, bad[i].column, bad[i].text);
    }
    write_text(f.mm, "op,n,k,m,pct_of_peak\nqkv,128,2048,6144,100\n");
    CHECK(scale_toy(&f, f.rows, "gpt3-1.3b", f.mm) == 0, "100%% of the peak is a measurement: %s", g_err);
    rm_tree(f.dir);
}

/* ---------------------------------------------------------------- 10: TP past the instance */

static void test_calib_tp_past_instance(void)
{
    files f;
    /* 16 ranks on 2 x toy.8x split as tp 16, but toy.8x holds 8 ranks: TP would cross the network */
    if (files_make(&f, NULL, "gpt3-1.3b,16,1,2,toy.8x,2048,64,10\n") != 0) return;
    char lead[200];
    snprintf(lead, sizeof lead, "%s:2: column 'tensor_parallel'", f.rows);
    expect_error(scale_toy(&f, f.rows, "gpt3-1.3b", NULL), 2, lead, "8", "tp 16 on toy.8x");
    rm_tree(f.dir);
}

/* ---------------------------------------------------------------- 11: calibration-row errors */

/* Every rule that rejects a calibration row: one line "error: FILE:LINE: ...", exit 2. */
static void test_calib_row_errors(void)
{
    files f;
    if (files_make(&f, NULL,
                   "nosuch-model,8,1,1,toy.8x,2048,64,10\n"   /* 2 */
                   "gpt3-1.3b,8,1,1,toy.9x,2048,64,10\n"      /* 3 */
                   "gpt3-1.3b,8,1,2,toy.8x,2048,63,10\n"      /* 4: 63 sequences on 2 replicas */
                   "gpt3-1.3b,8,1,64,toy.8x,512,128,6400\n")  /* 5: the all-reduce alone takes longer than the step */
        != 0)
        return;
    static const struct {
        int line;
        const char *want;
    } cases[] = {
        {2, "column 'model'"}, {3, "column 'instance_type'"}, {4, "column 'global_batch'"},
        {5, "reproduce"},      {1, "not a data row"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char spec[160], lead[200], what[64];
        snprintf(spec, sizeof spec, "%s:%d", f.rows, cases[i].line);
        snprintf(lead, sizeof lead, "%s:%d: ", f.rows, cases[i].line);
        snprintf(what, sizeof what, "scale, line %d", cases[i].line);
        expect_error(scale_toy(&f, spec, "gpt3-1.3b", NULL), 2, lead, cases[i].want, what);
        const char *cal[] = {"--calibrate", spec, NULL};
        snprintf(what, sizeof what, "plan, line %d", cases[i].line);
        expect_error(plan_toy(&f, "gpt3-1.3b", "10B", cal), 2, lead, cases[i].want, what);
    }
    char lead[200];
    write_text(f.rows,
               "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n"
               "gpt3-1.3b,8,1,1,toy.8x,2048,64,fast\n");
    snprintf(lead, sizeof lead, "%s:2: column 'seq_per_s'", f.rows);
    expect_error(scale_toy(&f, f.rows, "gpt3-1.3b", NULL), 2, lead, "fast", "an unreadable cell");
    expect_error(scale_toy(&f, "/nonexistent/rows.csv", "gpt3-1.3b", NULL), 2, "", "/nonexistent/rows.csv",
                 "an unreadable file");
    rm_tree(f.dir);
}

/* ---------------------------------------------------------------- 11: the wrong kind of CSV */

static void test_matmul_csv_wrong_kind(void)
{
    files f;
    if (files_make(&f, NULL, "gpt3-1.3b,8,1,1,toy.8x,2048,64,10\n") != 0) return;
    char lead[200];
    snprintf(lead, sizeof lead, "%s", f.rows);
    expect_error(scale_toy(&f, f.rows, "gpt3-1.3b", f.rows), 2, lead, "not a costbench matmul CSV",
                 "a throughput CSV as --matmul-csv");
    CHECK(strstr(g_err, "no column 'n'") || strstr(g_err, "no column 'k'"), "names a missing column: %s", g_err);
    const char *cal[] = {"--calibrate", f.rows, "--matmul-csv", f.rows, NULL};
    expect_error(plan_toy(&f, "gpt3-1.3b", "10B", cal), 2, lead, "not a costbench matmul CSV",
                 "plan: a throughput CSV as --matmul-csv");
    rm_tree(f.dir);
}

/* ---------------------------------------------------------------- 11: budget and MTBF verdicts */

static void test_plan_budget_verdict(void)
{
    files f;
    if (files_make(&f, NULL, "") != 0) return;
    const char *budget[] = {"--budget-usd", "1e-6", NULL};
    int rc = plan_toy(&f, "gpt3-1.3b", "10B", budget);
    CHECK(rc == 0, "a budget nothing fits is a result: exit %d, %s", rc, g_err);
    CHECK(strstr(g_out, "nothing fits the budget of $1e-06") && !strstr(g_out, "costs $0"), "the budget verdict: %s",
          g_out);
    CHECK(strstr(g_out, "the cheapest configuration costs $"), "the cheapest configuration's cost: %s", g_out);
    rm_tree(f.dir);
}

static void test_plan_mtbf_verdict(void)
{
    files f;
    if (files_make(&f, NULL, "") != 0) return;
    const char *mtbf[] = {"--mtbf-hours", "0.001", NULL};
    expect_error(plan_toy(&f, "gpt3-1.3b", "10B", mtbf), 2, "flag '--mtbf-hours'",
                 "faster than a checkpoint can be written", "MTBF 3.6 s");
    CHECK(strstr(g_err, "3.6 s") && strstr(g_err, "60 s"), "the two times: %s", g_err);
    CHECK(!strstr(g_err, "out of memory") && !strstr(g_out, "out of memory)"), "not blamed on memory: %s%s", g_out,
          g_err);
    rm_tree(f.dir);
}

/* ---------------------------------------------------------------- 11: rows measured here */

/* A `costbench train --csv` row: instance "this machine", the peak it was measured against
 * (peak_gflops, all ranks) and the MFU against it. Its hardware is that peak: calibrated, its
 * compute MFU is the row's own mfu column, and its framework efficiency carries elsewhere. */
static void test_calib_this_machine(void)
{
    model_config cfg;
    CHECK(model_preset_find("pythia-14m", &cfg) == 0, "pythia-14m preset");
    double sps = 20, peak_g = 1000, mfu = 100 * model_flops_per_token(&cfg, 256) * sps * 256 / (peak_g * 1e9);
    char head[] = "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,micro_batch,"
                  "seq_per_s,mfu,"
                  "peak_gflops,source,ranks,precision\n",
         rows[512];
    snprintf(rows, sizeof rows, "pythia-14m,1,1,1,this machine,256,32,4,%g,%.9g,%g,measured here 2026-01-01,1,fp32\n"
                                "pythia-14m,1,1,1,this machine,256,32,4,%g,,,measured here 2026-01-01,1,bf16-mixed\n",
             sps, mfu, peak_g, sps);
    files f;
    if (files_make(&f, head, rows) != 0) return;
    char spec[160];
    snprintf(spec, sizeof spec, "%s:2", f.rows);
    const char *args[] = {"scale", "--calibrate", spec, "--model", "pythia-14m", "--instance", "toy.8x", "--hardware",
                          f.hw, "--usd-per-hour", "10", "--tp", "1", "--seq", "256", "--micro-batch", "4",
                          "--global-batch", "32", "--precision", "fp32", "--nodes", "1", NULL};
    int rc = run(args);
    CHECK(rc == 0, "a row measured here calibrates: exit %d, %s", rc, g_err);
    double mfu_c = note_value(g_out, "# calibration pythia-14m", "compute MFU "),
           mfu_t = note_value(g_out, "# target pythia-14m", "compute MFU ");
    double phi_c = note_value(g_out, "# calibration pythia-14m", " phi "),
           phi_t = note_value(g_out, "# target pythia-14m", " phi ");
    /* its own MFU back; the framework efficiency carries to the toy device, whose kernel launches weigh more on a
     * faster device */
    CHECK(fabs(100 * mfu_c / mfu - 1) < 1e-6 && phi_t == phi_c && mfu_t > 0 && mfu_t <= mfu_c,
          "the row's own MFU %.9g%%: calibration %.9g, target %.9g (phi %.9g, %.9g)", mfu, mfu_c, mfu_t, phi_c, phi_t);
    const char *cal[] = {"--calibrate", spec, NULL};
    rc = plan_toy(&f, "pythia-14m", "1B", cal);
    CHECK(rc == 0 && strstr(g_out, "calibrated on"), "plan: exit %d, %s", rc, g_err);
    snprintf(spec, sizeof spec, "%s:3", f.rows);
    char lead[200];
    snprintf(lead, sizeof lead, "%s:3: column 'peak_gflops'", f.rows);
    expect_error(run(args), 2, lead, "this machine", "a row measured here without its peak");
    rm_tree(f.dir);
}

const test_case tests_audit2_calib[] = {
    {"audit2 10: plan refuses --tokens of less than one step", test_plan_less_than_one_step},
    {"audit2 10: a calibration row of tiny GEMMs (seq_len 1 at tp 8) carries within the device's limits, the target "
     "marked extrapolated",
     test_calib_outside_curve},
    {"audit2 10: a calibration that needs its GEMMs above 100% of the peak is one error naming the row and the term, "
     "in scale and plan",
     test_calib_above_peak},
    {"audit2 10: --matmul-csv range-checks pct_of_peak (0, 100], gflops_median, n, k and m", test_matmul_csv_ranges},
    {"audit2 10: a calibration row with TP past the ranks of its instance is refused naming the column",
     test_calib_tp_past_instance},
    {"audit2 11: every calibration-row error is one line FILE:LINE and exit 2, in scale and plan",
     test_calib_row_errors},
    {"audit2 11: --matmul-csv given a throughput CSV is one error naming the missing column",
     test_matmul_csv_wrong_kind},
    {"audit2 11: a budget nothing fits says so, with the cheapest configuration's cost", test_plan_budget_verdict},
    {"audit2 11: --mtbf-hours shorter than a checkpoint says failures come faster than one can be written",
     test_plan_mtbf_verdict},
    {"audit2 11: a row measured on this machine calibrates with the peak it records; without one, one error naming the "
     "column",
     test_calib_this_machine},
    {0},
};
