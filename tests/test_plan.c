/* test_plan.c: costbench plan: the search on a one-instance table worked by hand, the Young/Daly
 * failure overhead worked by hand, bad flags, an impossible deadline. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../report/predict/plan.h"
#include "check.h"
#include "../common/files.h"

static int close_rel(double x, double ref, double rtol) { return fabs(x - ref) <= rtol * fabs(ref); }

/* One instance of 1 accelerator (1 rank) of 100 dense BF16 TFLOP/s, 1000 GiB, memory and device
 * link bandwidth unknown (no optimizer or TP time), at $2 per instance-hour. */
static const char toy_hw[] =
    "instance_type,accelerator,accelerators,workers_per_accelerator,bf16_tflops,fp32_tflops,mem_gib,mem_gb_per_s,"
    "intra_node_gb_per_s,network_gbit_per_s,network_latency_us,source\n"
    "toy.1x,Toy,1,1,100,,1000,,,100,,test\n";
static const char toy_prices[] = "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n"
                                 "aws,toy.1x,us-east-1,on_demand,2,2026,test\n";

static void toy_inputs(plan_inputs *in)
{
    memset(in, 0, sizeof *in);
    CHECK(model_preset_find("pythia-70m", &in->cfg) == 0, "pythia-70m preset");
    in->seq = 128, in->global_batch = 64, in->max_nodes = 1;
    in->tokens = 1e9, in->mfu = 0.5, in->deadline_s = 30 * 86400.0;
    in->ckpt_s = 60, in->restart_s = 300;
    hw_row *hw = &in->inst[0].hw;
    *hw = (hw_row){.instance = "toy.1x", .accelerator = "Toy", .accelerators = 1, .workers = 1, .bf16_tflops = 100,
                   .fp32_tflops = NAN, .mem_gib = 1000, .mem_gb_per_s = NAN, .intra_gb_per_s = NAN,
                   .net_gbit_per_s = 100, .net_latency_us = NAN};
    in->inst[0].noffers = 1;
    snprintf(in->inst[0].option[0], sizeof in->inst[0].option[0], "on_demand");
    in->inst[0].usd_per_hour[0] = 2;
    in->ninst = 1;
}

/* On one rank with PP 1 a step is G / b micro-batches of b T x F / (peak x MFU) seconds: the time
 * to train is tokens x F / (peak x MFU) whatever the micro-batch, F the FLOPs per token (4/3 the
 * matmul forward more with recomputation); cost = time x $2/h. */
static void test_plan_search_by_hand(void)
{
    plan_inputs in;
    toy_inputs(&in);
    plan_result res;
    CHECK(plan_search(&in, &res) == 0, "search runs");
    /* (TP 1, TP 2, 4, 8 each with and without sequence parallelism) x 4 PP (no virtual stages: 6
     * layers split into no 2 x 2 or more) x 3 ZeRO x 4 micro-batches x 2 recompute x 1 precision
     * (bf16-mixed: the toy names no device that rounds stochastically, and has no FP8 peak) on 1 node */
    CHECK(res.layouts == 672, "layouts %ld, expected 672", res.layouts);
    CHECK(res.bad[PLAN_BAD_TP_RANKS] == 576, "TP 2, 4, 8 on 1 rank: %ld, expected 576", res.bad[PLAN_BAD_TP_RANKS]);
    CHECK(res.bad[PLAN_BAD_PP_LAYERS] == 48, "PP 4, 8 for 6 layers: %ld, expected 48", res.bad[PLAN_BAD_PP_LAYERS]);
    CHECK(res.bad[PLAN_BAD_RANKS] == 24, "PP 2 on 1 rank: %ld, expected 24", res.bad[PLAN_BAD_RANKS]);
    CHECK(res.oom == 0 && res.n == 24 && res.ok == 24, "feasible %d (oom %ld), expected 24", res.n, res.oom);
    double t0 = 1e9 * model_flops_per_token(&in.cfg, 128) / 5e13;
    double t1 = 1e9 * model_hardware_flops_per_token(&in.cfg, 128, 1) / 5e13;
    if (res.n == 24) {
        CHECK(close_rel(res.c[0].train_s, t0, 1e-9), "best time %.9g s, expected %.9g", res.c[0].train_s, t0);
        CHECK(close_rel(res.c[0].cost_usd, t0 / 3600 * 2, 1e-9), "best cost %.9g, expected %.9g", res.c[0].cost_usd,
              t0 / 3600 * 2);
        CHECK(res.c[0].recompute == 0 && res.c[23].recompute == 1, "recomputation ranks last (4/3 the forward)");
        CHECK(close_rel(res.c[23].train_s, t1, 1e-9), "recompute time %.9g s, expected %.9g", res.c[23].train_s, t1);
        for (int i = 1; i < res.n; i++) CHECK(res.c[i - 1].cost_usd <= res.c[i].cost_usd, "ranked by cost at %d", i);
        int idx[48];
        CHECK(plan_pareto(&res, -1, 0, idx) == 1, "one point on the frontier (the same time and cost everywhere else)");
    }
    in.deadline_s = t0 * 0.5; /* impossible */
    plan_result_free(&res);
    CHECK(plan_search(&in, &res) == 0 && res.ok == 0 && res.too_slow == 24, "half the time: nothing meets it");
    plan_result_free(&res);
}

/* Young/Daly: S = 60 s, job MTBF M = 7200 s: tau = sqrt(2 S M) = sqrt(864000) = 929.516 s;
 * overhead S/tau + tau/(2M) + R/M = 2 sqrt(S/(2M)) + 300/7200 = 0.129099 + 0.041667. */
static void test_plan_young_daly_by_hand(void)
{
    double tau;
    double t = plan_failure_time(1e5, 7200, 60, 300, &tau);
    CHECK(close_rel(tau, 929.5160030897799, 1e-12), "tau %.12g", tau);
    CHECK(close_rel(t, 1e5 * (1 + 2 * sqrt(60.0 / 14400) + 300.0 / 7200), 1e-12), "time %.12g", t);
    CHECK(close_rel(t, 117076.6, 1e-6), "time %.9g, expected 117076.6 s", t);
    /* checkpoints as long as the MTBF: 2 sqrt(1/2) > 1, the job never finishes */
    CHECK(isinf(plan_failure_time(1e5, 3600, 3600, 0, &tau)), "overhead past 1: never finishes");
    /* through the search: MTBF 2 h per instance on 1 node */
    plan_inputs in;
    toy_inputs(&in);
    in.mtbf_s = 7200;
    plan_result res;
    CHECK(plan_search(&in, &res) == 0 && res.n == 24, "search with failures");
    if (res.n == 24) {
        double t0 = 1e9 * model_flops_per_token(&in.cfg, 128) / 5e13, f = 2 * sqrt(60.0 / 14400) + 300.0 / 7200;
        CHECK(close_rel(res.c[0].train_s, t0 * (1 + f), 1e-9), "time with failures %.9g", res.c[0].train_s);
        CHECK(close_rel(res.c[0].lost_pct, 100 * f / (1 + f), 1e-9), "lost %.6g%%", res.c[0].lost_pct);
        CHECK(close_rel(res.c[0].tau_s, 929.5160030897799, 1e-12), "interval %.9g", res.c[0].tau_s);
    }
    plan_result_free(&res);
}

/* Writes the toy tables into a new temporary directory; NULL when it cannot. */
static char *toy_tables(char *hw, char *pr, size_t n)
{
    char *dir = test_tmpdir();
    if (!dir) return NULL;
    snprintf(hw, n, "%s/hardware.csv", dir);
    snprintf(pr, n, "%s/prices.csv", dir);
    write_text(hw, toy_hw);
    write_text(pr, toy_prices);
    return dir;
}

/* Exactly one line on stderr, an error naming the flag. */
static void check_one_error(const char *err, const char *flag, int rc)
{
    CHECK(rc == 2, "%s: exit %d, expected 2", flag, rc);
    CHECK(strncmp(err, "error: ", 7) == 0 && strstr(err, flag), "%s: message '%s'", flag, err);
    const char *nl = strchr(err, '\n');
    CHECK(nl && nl[1] == '\0', "%s: one line, got '%s'", flag, err);
}

static void test_plan_cli_bad_input(void)
{
    static const char *const bad[][2] = {{"--tokens", "0"}, {"--tokens", "12X"}, {"--deadline-days", "-1"},
                                         {"--deadline-days", "0"}, {"--instances", "nosuch.large"},
                                         {"--budget-usd", "-5"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[16] = {"plan", "--model", "llama2-7b", "--tokens", "1B", "--deadline-days", "3"};
        int na = 7;
        if (strcmp(bad[i][0], "--tokens") == 0) args[4] = bad[i][1];
        else if (strcmp(bad[i][0], "--deadline-days") == 0) args[6] = bad[i][1];
        else args[na++] = bad[i][0], args[na++] = bad[i][1];
        args[na] = NULL;
        char err[2048];
        int rc = cli_run(args, NULL, 0, err, sizeof err);
        check_one_error(err, bad[i][0], rc);
    }
}

/* The toy case through the CLI: the table's best row is the hand-worked time and cost; at up to
 * 2 nodes the second node is faster but dearer (its gradient all-reduce), so it ranks after. */
static void test_plan_cli_by_hand(void)
{
    char hw[CB_PATH_MAX], pr[CB_PATH_MAX], csv[CB_PATH_MAX], out[16384], err[4096];
    char *dir = toy_tables(hw, pr, sizeof hw);
    if (!dir) return;
    snprintf(csv, sizeof csv, "%s/plan.csv", dir);
    const char *args[] = {"plan", "--model", "pythia-70m", "--tokens", "1B", "--deadline-days", "30", "--seq", "128",
                          "--global-batch", "64", "--mfu", "50", "--max-nodes", "2", "--hardware", hw, "--prices", pr,
                          "--csv", csv, "--top", "50", NULL};
    int rc = cli_run(args, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "exit %d: %s", rc, err);
    CHECK(strstr(out, "# assumption: compute at 50% MFU of the data-sheet dense peak"), "assumption stated: %s", out);
    CHECK(strstr(out, "searched 1344 layouts"), "layouts counted (672 a node count, as plan_search_by_hand): %s", out);
    CHECK(!strstr(out, "band_pct") && !strstr(out, "extrapolated"), "an assumed MFU shows no band: %s", out);
    double days[64], cost[64], nodes[64];
    int n = csv_column(csv, "days", days, 64);
    CHECK(n >= 2 && csv_column(csv, "cost_usd", cost, 64) == n && csv_column(csv, "nodes", nodes, 64) == n,
          "csv columns");
    model_config cfg;
    CHECK(model_preset_find("pythia-70m", &cfg) == 0, "preset");
    double t0 = 1e9 * model_flops_per_token(&cfg, 128) / 5e13;
    if (n >= 2) {
        CHECK(close_rel(days[0] * 86400, t0, 1e-6), "best %.9g days, expected %.9g", days[0], t0 / 86400);
        CHECK(close_rel(cost[0], t0 / 3600 * 2, 1e-6), "best $%.9g, expected $%.9g", cost[0], t0 / 3600 * 2);
        CHECK(nodes[0] == 1, "1 node cheapest");
        int two = -1;
        for (int i = 0; i < n; i++) {
            if (i) CHECK(cost[i - 1] <= cost[i], "ranked by cost at %d", i);
            if (nodes[i] == 2 && two < 0) two = i;
        }
        CHECK(two > 0 && days[two] < days[0] && cost[two] > cost[0], "2 nodes: faster, dearer, ranked after");
    }
    rm_tree(dir);
}

static void test_plan_cli_impossible_deadline(void)
{
    char hw[CB_PATH_MAX], pr[CB_PATH_MAX], out[16384], err[4096];
    char *dir = toy_tables(hw, pr, sizeof hw);
    if (!dir) return;
    const char *args[] = {"plan", "--model", "pythia-70m", "--tokens", "1T", "--deadline-days", "0.5", "--seq", "128",
                          "--global-batch", "64", "--max-nodes", "4", "--hardware", hw, "--prices", pr, NULL};
    int rc = cli_run(args, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "an impossible deadline is a result: exit %d (%s)", rc, err);
    CHECK(strstr(out, "no configuration meets the deadline of 0.5 days"), "message: %s", out);
    CHECK(strstr(out, "fastest found: toy.1x on_demand x 4 nodes"), "fastest shown: %s", out);
    rm_tree(dir);
}

/* --calibrate: the candidates' compute comes from a throughput row (Table 1's NeoX-20B point),
 * named in the output; a candidate's compute time is calib_t_mb at the efficiency calib_fit_carry
 * carries to it, and on the calibration's own configuration that is the fitted time; a row of an
 * unknown model is one error line naming file:line. */
static void test_plan_calibrated(void)
{
    char out[65536], err[4096];
    const char *ok[] = {"plan", "--model", "neox-20b", "--tokens", "10B", "--deadline-days", "300", "--instances",
                        "trn1.32xlarge", "--calibrate", "data/reference/trn1_table1.csv:8", "--top", "3", NULL};
    int rc = cli_run(ok, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "calibrated on data/reference/trn1_table1.csv:8 (neox-20b on 4 x trn1.32xlarge"),
          "calibrated plan: exit %d, %s%s", rc, err, out);
    /* a fit on the toy instance (with a memory bandwidth: the step model needs one) */
    plan_inputs in;
    toy_inputs(&in);
    in.inst[0].hw.mem_gb_per_s = 2000;
    scale_eff_curve def = {0};
    calib_fit cf;
    memset(&cf, 0, sizeof cf);
    scale_model *c = &cf.cal;
    c->cfg = in.cfg, c->hw = in.inst[0].hw, c->tp = 1, c->pp = 1, c->interleave = 1, c->cp = 1, c->seq = 2048,
    c->micro_batch = 1;
    c->global_batch = 64, c->precision = PRECISION_BF16_MIXED, c->attn_flash = 1, c->bucket_bytes = 25.0 * 1048576.0,
    c->net_eff = 1;
    cf.nodes = 1, cf.seq_per_s = 20;
    char why[1024];
    CHECK(calib_fit_point(&cf, "test", 0, &def, 5.0, why, sizeof why) == 0, "the toy row calibrates: %s", why);
    in.cal = &cf, in.eff = &def;
    double t_own = plan_t_mb_s(c, &in);
    CHECK(fabs(t_own - c->t_mb_s) <= 1e-12 * c->t_mb_s, "the calibration's own configuration: t_mb %.12g, fitted %.12g",
          t_own, c->t_mb_s);
    scale_model t = *c;
    t.micro_batch = 4, t.recompute = 1, t.precision = PRECISION_BF16_SR;
    step_profile_fill(&t); /* a configuration changed: its step computed again */
    double eff_t, e_t;
    int clamped;
    CHECK(calib_fit_carry(&cf, &t, &eff_t, &clamped, &e_t, why, sizeof why) == 0, "carried: %s", why);
    CHECK(!clamped && !cf.clamped, "the assumed curve (no --matmul-csv) has no edge to clamp at");
    double t_plan = plan_t_mb_s(&t, &in), t_carry = calib_t_mb(&t, eff_t);
    CHECK(isfinite(t_plan) && t_plan == t_carry,
          "another layout: plan's t_mb %.12g, calib_t_mb at the carried efficiency %.12g", t_plan, t_carry);
    char *dir = test_tmpdir(), path[600];
    if (!dir) return;
    snprintf(path, sizeof path, "%s/row.csv", dir);
    write_text(path, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n"
                     "nosuch-model,8,1,1,trn1.32xlarge,2048,256,10\n");
    char spec[640];
    snprintf(spec, sizeof spec, "%s:2", path);
    const char *bad[] = {"plan", "--model", "llama2-7b", "--tokens", "1B", "--deadline-days", "3", "--calibrate", spec,
                         NULL};
    rc = cli_run(bad, NULL, 0, err, sizeof err);
    CHECK(rc == 2 && strstr(err, ":2: column 'model'") && strstr(err, "nosuch-model"), "unknown model row: exit %d, %s",
          rc, err);
    rm_tree(dir);
}

/* --matmul-csv with a curve narrower than the layouts' GEMMs: plan warns that e(K, N) is taken at
 * the curve's edge (calib_fit_carry's clamped, which the step model's GEMMs set), naming the row. */
static void test_plan_clamped_warning(void)
{
    char *dir = test_tmpdir(), path[600], out[65536], err[8192];
    if (!dir) return;
    snprintf(path, sizeof path, "%s/mm.csv", dir);
    write_text(path, "op,n,k,m,pct_of_peak\nqkv,128,2048,6144,40\nqkv,512,2048,6144,50\nqkv,128,4096,12288,60\n"
                     "qkv,512,4096,12288,90\n");
    const char *args[] = {"plan", "--model", "neox-20b", "--tokens", "10B", "--deadline-days", "300", "--instances",
                          "trn1.32xlarge", "--calibrate", "data/reference/trn1_table1.csv:8", "--top", "3",
                          "--matmul-csv", path, NULL};
    int rc = cli_run(args, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(err, "warning: data/reference/trn1_table1.csv:8: at ") &&
              strstr(err, "layouts K or N lies outside K 2048..4096 and N 128..512 (measured)"),
          "the clamped warning: exit %d, %s", rc, err);
    rm_tree(dir);
}

const test_case tests_plan[] = {
    {"plan: --calibrate carries a row's framework efficiency (calib_fit_carry, calib_t_mb); a bad row is one error",
     test_plan_calibrated},
    {"plan: a --matmul-csv narrower than the layouts' GEMMs warns that e(K, N) is taken at its edge",
     test_plan_clamped_warning},
    {"plan_search_by_hand", test_plan_search_by_hand},
    {"plan_young_daly_by_hand", test_plan_young_daly_by_hand},
    {"plan_cli_bad_input", test_plan_cli_bad_input},
    {"plan_cli_by_hand", test_plan_cli_by_hand},
    {"plan_cli_impossible_deadline", test_plan_cli_impossible_deadline},
    {NULL, NULL},
};
