/* test_planview.c: `costbench plan` as a buyer reads it (issue 30 point 9): the best layout of each
 * instance type and offer by default, why it wins and its runner-ups, its band, the precisions each
 * device's frameworks train in (data/devices.csv stochastic_rounding, the FP8 peak), and the stale
 * prices in one line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/csvio.h"
#include "../common/files.h"
#include "../report/formats/devices.h"
#include "../report/predict/plan.h"
#include "check.h"
#include "csvrun.h"

static char g_out[131072], g_err[16384];

/* Runs `plan` with args (NULL-terminated) and --csv into dir/name; loads the CSV into t. Returns 0,
 * or -1 after a failed check. */
static int view_csv(const char *const *args, const char *dir, const char *name, table *t)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return test_cmd_csv(args, path, g_out, sizeof g_out, g_err, sizeof g_err, t);
}

/* The precisions of an instance of device `name` (NULL: a hardware row naming no device). */
static int precs_of(const dev_table *dt, const char *name, double fp8_tflops, plan_prec *out)
{
    plan_instance pi;
    memset(&pi, 0, sizeof pi);
    const dev_row *d = name ? devices_find(dt, name) : NULL;
    CHECK(!name || d, "device '%s' listed", name ? name : "");
    pi.hw.bf16_tflops = d ? d->bf16_tflops : 100, pi.hw.fp8_tflops = fp8_tflops;
    plan_instance_device(&pi, d);
    return plan_precisions(&pi, out);
}

/* bf16-mixed everywhere a BF16 peak is; fp8 on the GPUs with an FP8 peak; bf16-sr only where the
 * device rounds stochastically (Trainium); fp32 only without a BF16 peak. */
static void test_planview_precisions(void)
{
    dev_table dt;
    if (devices_load(&dt, NULL) != 0) {
        CHECK(0, "data/devices.csv loads");
        return;
    }
    static const struct {
        const char *dev;
        int n, fp8, sr, sr_col;
    } want[] = {{"h100-sxm5-80gb", 2, 1, 0, 0}, {"h200-sxm5-141gb", 2, 1, 0, 0}, {"b200", 2, 1, 0, 0},
                {"mi300x", 2, 1, 0, 0},         {"a100-sxm4-80gb", 1, 0, 0, 0},  {"trainium1", 2, 0, 1, 1},
                {"trainium2", 2, 0, 1, 1}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        plan_prec p[PLAN_MAX_PRECS];
        int n = precs_of(&dt, want[k].dev, NAN, p), fp8 = 0, sr = 0, mixed = 0;
        for (int i = 0; i < n; i++)
            fp8 += p[i].fp8, sr += p[i].prec == PRECISION_BF16_SR, mixed += p[i].prec == PRECISION_BF16_MIXED && !p[i].fp8;
        CHECK(n == want[k].n && fp8 == want[k].fp8 && sr == want[k].sr && mixed == 1,
              "%s: %d precisions (fp8 %d, bf16-sr %d, bf16-mixed %d), expected %d (fp8 %d, bf16-sr %d)", want[k].dev, n,
              fp8, sr, mixed, want[k].n, want[k].fp8, want[k].sr);
        const dev_row *d = devices_find(&dt, want[k].dev);
        CHECK(d && d->stochastic_rounding == want[k].sr_col, "%s: stochastic_rounding %d", want[k].dev,
              d ? d->stochastic_rounding : -2);
    }
    plan_prec p[PLAN_MAX_PRECS];
    int n = precs_of(&dt, "v100-sxm2-32gb", NAN, p);
    CHECK(n == 1 && p[0].prec == PRECISION_FP32, "v100 (no BF16 peak): fp32 alone, got %d", n);
    n = precs_of(&dt, NULL, 200, p);
    CHECK(n == 2 && p[1].fp8 && p[1].prec == PRECISION_BF16_MIXED, "no device, an FP8 peak: bf16-mixed and fp8");
    CHECK(strcmp(plan_prec_name(PRECISION_BF16_MIXED, 1), "fp8") == 0 &&
              strcmp(plan_prec_name(PRECISION_BF16_SR, 0), "bf16-sr") == 0,
          "precision names");
    devices_free(&dt);
}

/* The column is read by name: absent, every device -1 (not known); a bad cell one error naming the
 * file, the line and the column. */
static void test_planview_sr_column(void)
{
    char *dir = test_tmpdir(), path[CB_PATH_MAX];
    if (!dir) return;
    snprintf(path, sizeof path, "%s/devices.csv", dir);
    static const char head[] = "device,vendor,workers,fp32_tflops,tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,"
                               "hbm_gib,hbm_gb_per_s,link_gb_per_s,scaleup_domain,source";
    char text[1024];
    snprintf(text, sizeof text, "%s\nx1,acme,1,1,,2,,,16,100,,1,test\n", head);
    write_text(path, text);
    dev_table dt;
    CHECK(devices_load(&dt, path) == 0 && dt.n == 1 && dt.rows[0].stochastic_rounding == -1,
          "no stochastic_rounding column: not known");
    devices_free(&dt);
    snprintf(text, sizeof text, "%s,stochastic_rounding\nx1,acme,1,1,,2,,,16,100,,1,test,yes\n", head);
    write_text(path, text);
    capture_stderr_begin();
    int rc = devices_load(&dt, path);
    const char *err = capture_stderr_end();
    CHECK(rc != 0 && strstr(err, ":2: column 'stochastic_rounding': expected true, false or empty, got 'yes'"),
          "a bad cell: %d %s", rc, err);
    rm_tree(dir);
}

/* The default view: one row per instance type, cheapest first, each saying why it wins and its band
 * (uncalibrated: the framework's default efficiency's spread, data/framework_eff.csv); --all: no bf16-sr on an H100, bf16-sr and no fp8 on Trainium;
 * calibrated, fp8 layouts on an H100, each with its band; --all with --runners-up is an error. */
static void test_planview_default(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    const char *args[] = {"plan", "--model", "llama2-7b", "--tokens", "140B", "--deadline-days", "30", "--instances",
                          "p5.48xlarge,trn1.32xlarge,p4d.24xlarge", "--max-nodes", "8", NULL};
    table t = {0};
    if (view_csv(args, dir, "best.csv", &t) == 0) {
        CHECK(t.nrows == 3, "one row per instance type: %d rows", t.nrows);
        int seen = 0;
        for (int i = 0; i < t.nrows; i++) {
            const char *it = test_cell(&t, i, "instance_type");
            seen |= strcmp(it, "p5.48xlarge") == 0 ? 1 : strcmp(it, "trn1.32xlarge") == 0 ? 2 : 4;
            if (i) CHECK(test_num(&t, i - 1, "cost_usd") <= test_num(&t, i, "cost_usd"), "cheapest first at %d", i);
            CHECK(strncmp(test_cell(&t, i, "why"), "cheapest of ", 12) == 0 && strstr(test_cell(&t, i, "why"), "; next: "),
                  "row %d why: '%s'", i, test_cell(&t, i, "why"));
            CHECK(strncmp(test_cell(&t, i, "band"), "+-", 2) == 0 && strchr(test_cell(&t, i, "band"), '%'), "row %d band '%s'",
                  i, test_cell(&t, i, "band")); /* uncalibrated: the framework's default phi's spread */
            CHECK(strcmp(it, "p5.48xlarge") != 0 || strcmp(test_cell(&t, i, "precision"), "bf16-sr") != 0,
                  "no bf16-sr on an H100");
        }
        CHECK(seen == 7, "each instance type once");
        CHECK(strstr(g_out, "# view: the best layout of each instance type") &&
                  strstr(g_out, "on h100-sxm5-80gb; full bf16 with stochastic rounding (bf16-sr) where the hardware "
                                "rounds stochastically (data/devices.csv stochastic_rounding): trainium1;"),
              "the view and the precisions said: %s", g_out);
        CHECK(strstr(g_out, "band") && strstr(g_out, "why"), "the human table shows band and why");
    }
    table_free(&t);
    const char *all[] = {"plan", "--model", "llama2-7b", "--tokens", "140B", "--deadline-days", "300", "--instances",
                         "p5.48xlarge,trn1.32xlarge", "--max-nodes", "2", "--all", "--top", "100000", NULL};
    if (view_csv(all, dir, "all.csv", &t) == 0) {
        int p5_sr = 0, trn_sr = 0, trn_fp8 = 0;
        for (int i = 0; i < t.nrows; i++) {
            int p5 = strcmp(test_cell(&t, i, "instance_type"), "p5.48xlarge") == 0;
            const char *p = test_cell(&t, i, "precision");
            p5_sr += p5 && !strcmp(p, "bf16-sr");
            trn_sr += !p5 && !strcmp(p, "bf16-sr"), trn_fp8 += !p5 && !strcmp(p, "fp8");
        }
        CHECK(p5_sr == 0 && trn_fp8 == 0 && trn_sr > 0, "--all: bf16-sr %d on p5, %d on trn1; fp8 on trn1 %d", p5_sr,
              trn_sr, trn_fp8);
        CHECK(strstr(g_out, "# view: every layout that meets the deadline"), "--all said: %s", g_out);
    }
    table_free(&t);
    /* calibrated, fp8's GEMMs run at the FP8 peak: its layouts differ from bf16-mixed's and are shown */
    const char *cal[] = {"plan", "--model", "llama2-7b", "--tokens", "140B", "--deadline-days", "300", "--instances",
                         "p5.48xlarge", "--max-nodes", "2", "--calibrate",
                         "data/reference/published/trn1_table1.csv:trn1blog-pythia-6.9b-4x", "--top", "100000", NULL};
    if (view_csv(cal, dir, "cal.csv", &t) == 0) {
        int fp8 = 0, banded = 0;
        for (int i = 0; i < t.nrows; i++)
            fp8 += !strcmp(test_cell(&t, i, "precision"), "fp8"), banded += test_cell(&t, i, "band")[0] == '+';
        CHECK(fp8 > 0 && banded == t.nrows, "calibrated: %d fp8 rows on p5, a band on %d of %d", fp8, banded, t.nrows);
    }
    table_free(&t);
    const char *both[] = {"plan", "--model", "llama2-7b", "--tokens", "1B", "--deadline-days", "30", "--all",
                          "--runners-up", "1", NULL};
    int rc = cli_run(both, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 2 && count_lines(g_err) == 1 && strstr(g_err, "error: flag '--all'"), "--all --runners-up: %d %s", rc,
          g_err);
    rm_tree(dir);
}

/* --runners-up 2: up to three rows per type; the best's "next" is the first runner-up, with the same
 * percentage and its change named; with two types, each type's rows together. */
static void test_planview_runners_up(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    const char *args[] = {"plan", "--model", "llama2-7b", "--tokens", "140B", "--deadline-days", "300", "--instances",
                          "p5.48xlarge", "--max-nodes", "4", "--runners-up", "2", NULL};
    table t = {0};
    if (view_csv(args, dir, "ru.csv", &t) == 0) {
        CHECK(t.nrows == 3, "the best and 2 runner-ups: %d rows", t.nrows);
        if (t.nrows == 3) {
            const char *best = test_cell(&t, 0, "why"), *second = test_cell(&t, 1, "why");
            const char *nx = strstr(best, "; next: ");
            char pct[16] = "";
            if (nx) sscanf(nx + 8, "%15s", pct);
            CHECK(pct[0] == '+' && strncmp(second, pct, strlen(pct)) == 0 &&
                      strstr(second, " over the best p5.48xlarge on_demand layout; "),
                  "next '%s' is the first runner-up '%s'", best, second);
            CHECK(test_num(&t, 1, "cost_usd") > test_num(&t, 0, "cost_usd"), "the runner-up costs more");
        }
    }
    table_free(&t);
    /* two types: each type's best then its runner-up, the types cheapest first */
    const char *two[] = {"plan", "--model", "llama2-7b", "--tokens", "140B", "--deadline-days", "300", "--instances",
                         "p5.48xlarge,p4d.24xlarge", "--max-nodes", "4", "--runners-up", "1", NULL};
    if (view_csv(two, dir, "two.csv", &t) == 0) {
        CHECK(t.nrows == 4, "2 types x (best + 1 runner-up): %d rows", t.nrows);
        if (t.nrows == 4) {
            CHECK(!strcmp(test_cell(&t, 0, "instance_type"), test_cell(&t, 1, "instance_type")) &&
                      !strcmp(test_cell(&t, 2, "instance_type"), test_cell(&t, 3, "instance_type")) &&
                      test_num(&t, 0, "cost_usd") <= test_num(&t, 2, "cost_usd"),
                  "grouped by type, the cheaper type first");
            CHECK(strncmp(test_cell(&t, 2, "why"), "cheapest of ", 12) == 0 && test_cell(&t, 3, "why")[0] == '+',
                  "the second type's best, then its runner-up: '%s', '%s'", test_cell(&t, 2, "why"), test_cell(&t, 3, "why"));
        }
    }
    table_free(&t);
    rm_tree(dir);
}

/* Stale prices: one warning line with the count and the oldest; --price-warnings all: one each; a
 * bad value is one error naming the flag. */
static void test_planview_stale(void)
{
    char *dir = test_tmpdir(), hw[CB_PATH_MAX], pr[CB_PATH_MAX];
    if (!dir) return;
    snprintf(hw, sizeof hw, "%s/hardware.csv", dir);
    snprintf(pr, sizeof pr, "%s/prices.csv", dir);
    write_text(hw, "instance_type,accelerator,accelerators,workers_per_accelerator,bf16_tflops,fp32_tflops,mem_gib,"
                   "mem_gb_per_s,intra_node_gb_per_s,network_gbit_per_s,network_latency_us,source\n"
                   "toy.1x,Toy,1,1,100,,1000,,,100,,test\ntoy.2x,Toy,2,1,100,,1000,,,100,,test\n");
    write_text(pr, "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n"
                   "aws,toy.1x,us-east-1,on_demand,2,2003,test\naws,toy.2x,us-east-1,on_demand,4,2001-05,test\n");
    const char *args[] = {"plan", "--model", "pythia-70m", "--tokens", "1B", "--deadline-days", "30", "--seq", "128",
                          "--global-batch", "64", "--max-nodes", "2", "--hardware", hw, "--prices", pr, NULL, NULL,
                          NULL};
    int rc = cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0 && count_lines(g_err) == 1 &&
              strstr(g_err, "warning: 2 prices older than a year (oldest: toy.2x on_demand $4 per instance-hour, "
                            "as of 2001-05); `costbench prices` lists them"),
          "one line: %d %s", rc, g_err);
    CHECK(strstr(g_out, "\n   2  toy.") && !strstr(g_out, "\n   3  ") && strstr(g_out, "toy.1x") &&
              strstr(g_out, "toy.2x"),
          "a row each: %s", g_out);
    args[17] = "--price-warnings", args[18] = "all";
    rc = cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0 && count_of(g_err, "plan uses a price older than a year") == 2, "one line each: %d %s", rc, g_err);
    args[18] = "some";
    rc = cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 2 && count_lines(g_err) == 1 && strstr(g_err, "error: flag '--price-warnings': expected one or all"),
          "a bad value: %d %s", rc, g_err);
    rm_tree(dir);
}

const test_case tests_planview[] = {
    {"planview: precisions as each device's frameworks train (bf16-mixed, fp8, bf16-sr where stochastic rounding)",
     test_planview_precisions},
    {"planview: data/devices.csv stochastic_rounding read by name; a bad cell is one error", test_planview_sr_column},
    {"planview: the best layout of each instance type by default, why and band; --all ranks every layout",
     test_planview_default},
    {"planview: --runners-up: the best's next is its first runner-up", test_planview_runners_up},
    {"planview: stale prices in one warning line; --price-warnings all; a bad value", test_planview_stale},
    {NULL, NULL},
};
