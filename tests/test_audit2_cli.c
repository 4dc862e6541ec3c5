/* Regression tests for the second hostile audit's defects (issue 18) in the command line: list
 * flags that took a value twice (6), --calibrate with flags it makes meaningless (8), numbers that
 * were not decimal (10) and a --d-model override that kept the preset's MLP width (12). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/parse.h"
#include "../common/presets.h"
#include "check.h"
#include "../common/files.h"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

/* One usage error (exit 2, one line) that contains `want`. */
static void check_refused(const char *const *args, const char *want)
{
    int rc = run(args);
    const char *nl = strchr(g_err, '\n');
    int one_line = nl && nl[1] == '\0';
    CHECK(rc == 2 && strstr(g_err, want) && one_line, "%s %s %s: exit %d, expected 2 and one line with \"%s\": %s",
          args[0], args[1], args[2] ? args[2] : "", rc, want, g_err);
}

/* ---------------------------------------------------------------- 6: repeated list entries */

#define PLAN_OF(m) "plan", "--model", m, "--tokens", "1B", "--deadline-days", "30", "--max-nodes", "2"
#define PLAN PLAN_OF("pythia-70m")
#define SCALE_OF(m) "scale", "--model", m, "--instance", "trn1.32xlarge", "--nodes", "1,2"
#define SCALE SCALE_OF("pythia-1b")

static void test_list_repeats(void)
{
    const char *p1[] = {PLAN, "--instances", "trn1.32xlarge,trn1.32xlarge", NULL};
    check_refused(p1, "flag '--instances': 'trn1.32xlarge' given twice");
    const char *p2[] = {PLAN, "--pricing", "on_demand,spot,on_demand", NULL};
    check_refused(p2, "flag '--pricing': 'on_demand' given twice");
    const char *p3[] = {PLAN, "--pricing", "spot,spot", "--instances", "trn1.32xlarge", NULL};
    check_refused(p3, "flag '--pricing': 'spot' given twice");
    /* names are exact, as everywhere else: another spelling is no repeat but an unknown type */
    const char *p4[] = {PLAN, "--instances", "trn1.32xlarge,TRN1.32XLARGE", NULL};
    check_refused(p4, "flag '--instances': unknown instance type 'TRN1.32XLARGE'");
    const char *p5[] = {PLAN, "--pricing", "spot,,on_demand", NULL};
    check_refused(p5, "flag '--pricing': an empty entry in 'spot,,on_demand'");
    const char *r1[] = {"report", "--throughput", "data/reference/trn1_table1.csv", "--pricing", "spot,spot", NULL};
    check_refused(r1, "flag '--pricing': 'spot' given twice");
    const char *r2[] = {"report", "--throughput", "data/reference/trn1_table1.csv", "--throughput",
                        "data/reference/trn1_table1.csv", NULL};
    check_refused(r2, "flag '--throughput': 'data/reference/trn1_table1.csv' given twice");
    const char *s1[] = {SCALE, "--global-batch", "64", "--nodes", "1,2,2", NULL};
    check_refused(s1, "flag '--nodes': 2 given twice");
    const char *s2[] = {SCALE, "--global-batch", "64", "--nodes", "1000,1K", NULL};
    check_refused(s2, "flag '--nodes': 1000 given twice");
    const char *s3[] = {SCALE, "--global-batch", "64", "--fit", "compute,compute", "--measured",
                        "data/reference/trn1_table1.csv", NULL};
    check_refused(s3, "flag '--fit': 'compute' given twice");
    /* one batch per node count: the same batch at two node counts is a series, not a repeat */
    const char *s4[] = {SCALE, "--global-batch", "64,64", NULL};
    CHECK(run(s4) == 0, "--global-batch 64,64 for --nodes 1,2: %s", g_err);
    const char *m1[] = {"matmul", "--n", "512,512", "--shapes", "bogus", NULL};
    check_refused(m1, "flag '--n': 512 given twice");
    const char *m2[] = {"matmul", "--k", "768,1024,768", "--shapes", "bogus", NULL};
    check_refused(m2, "flag '--k': 768 given twice");
    const char *m3[] = {"matmul", "--dtype", "fp32,fp32", "--shapes", "bogus", NULL};
    check_refused(m3, "flag '--dtype': 'fp32' given twice");
    /* one peak per --dtype entry: two equal peaks are allowed (the error is --shapes') */
    const char *m4[] = {"matmul", "--dtype", "fp32,bf16", "--peak-gflops", "100,100", "--shapes", "bogus", NULL};
    check_refused(m4, "flag '--shapes'");
    const char *o1[] = {"rope", "--model", "pythia-160m,pythia-160m", "--cache", "bogus", NULL};
    check_refused(o1, "flag '--model': 'pythia-160m' given twice");
    const char *a1[] = {"allreduce", "--ops", "allreduce,allreduce", "--profile", "/dev/null", NULL};
    check_refused(a1, "flag '--ops': 'allreduce' given twice");
}

/* ---------------------------------------------------------------- 8: flags --calibrate makes meaningless */

static void test_calibrate_alone(void)
{
    const char *cal = "data/reference/trn1_table1.csv:8";
    const char *s1[] = {SCALE, "--global-batch", "256", "--tp", "8", "--calibrate", cal, "--mfu", "50", NULL};
    check_refused(s1, "flag '--calibrate': give it alone, not with '--mfu'");
    const char *s2[] = {SCALE, "--global-batch", "256", "--tp", "8", "--calibrate", cal, "--fit", "compute", NULL};
    check_refused(s2, "flag '--calibrate': give it alone, not with '--fit'");
    const char *s3[] = {SCALE, "--global-batch", "256", "--tp", "8", "--calibrate", cal, "--base-nodes", "1",
                        "--base-seq-per-s", "1", NULL};
    check_refused(s3, "flag '--calibrate': give it alone, not with '--base-nodes'");
    /* with measured points --mfu has no part either */
    const char *s4[] = {SCALE, "--global-batch", "64", "--base-nodes", "1", "--base-seq-per-s", "10", "--mfu", "50",
                        NULL};
    check_refused(s4, "flag '--mfu': ");
    const char *s6[] = {SCALE, "--global-batch", "64", "--fit", "compute,latency", NULL};
    check_refused(s6, "flag '--fit' needs measured points");
    const char *p1[] = {PLAN, "--calibrate", cal, "--mfu", "50", NULL};
    check_refused(p1, "flag '--calibrate': give it alone, not with '--mfu'");
    /* each alone still runs */
    const char *s5[] = {SCALE, "--global-batch", "256", "--tp", "8", "--calibrate", cal, NULL};
    CHECK(run(s5) == 0, "scale --calibrate: %s", g_err);
    const char *p2[] = {PLAN, "--mfu", "50", NULL};
    CHECK(run(p2) == 0 && strstr(g_out, "at 50% MFU"), "plan --mfu 50: %s", g_err);
}

/* ---------------------------------------------------------------- 10: decimal numbers only */

static void test_decimal_numbers(void)
{
    static const char *const bad[] = {"0x10", " 5", "5 ", "inf", "nan", "1e", "1e5x", "0x1e", "+-5", "."};
    const int nbad = (int)(sizeof bad / sizeof bad[0]);
    for (int i = 0; i < nbad; i++) {
        char want[64];
        const char *p1[] = {PLAN, "--deadline-days", bad[i], NULL}; /* a float flag */
        check_refused(p1, "flag '--deadline-days': expected a number");
        const char *p2[] = {PLAN, "--top", bad[i], NULL}; /* an integer flag */
        check_refused(p2, "flag '--top': expected an integer");
        const char *s1[] = {SCALE, "--global-batch", "64", "--overlap", bad[i], NULL};
        check_refused(s1, "flag '--overlap': expected a number");
        const char *s2[] = {SCALE, "--global-batch", "64", "--seq", bad[i], NULL};
        check_refused(s2, "flag '--seq': expected an integer");
        snprintf(want, sizeof want, "got '%s'", bad[i]);
        CHECK(strstr(g_err, want), "the value as given: %s", g_err);
        const char *p3[] = {"plan", "--model",         "pythia-70m", "--tokens",
                            bad[i], "--deadline-days", "30",         NULL}; /* suffixed */
        check_refused(p3, "flag '--tokens': expected an integer");
    }
    /* decimal forms keep working */
    const char *ok1[] = {PLAN, "--deadline-days", "1e1", "--top", "1e1", NULL};
    CHECK(run(ok1) == 0 && strstr(g_out, "deadline 10 days"), "1e1: %s", g_err);
    const char *ok2[] = {SCALE, "--global-batch", "0.064K", "--overlap", ".5", "--seq", "2.048e3", NULL};
    CHECK(run(ok2) == 0, "0.064K, .5, 2.048e3: %s", g_err);
    long l = 0;
    double d = 0;
    CHECK(parse_long("1.5M", 0, 1L << 40, 1, "x", &l) == 0 && l == 1500000, "1.5M: %ld", l);
    CHECK(parse_long("1e9", 0, 1L << 40, 1, "x", &l) == 0 && l == 1000000000, "1e9: %ld", l);
    CHECK(parse_long("-3", -5, 5, 0, "x", &l) == 0 && l == -3, "-3: %ld", l);
    CHECK(parse_long("2Ki", 0, 1L << 40, 1, "x", &l) == 0 && l == 2048, "2Ki: %ld", l);
    CHECK(parse_double("-0.5", -1, 1, "x", &d) == 0 && d == -0.5, "-0.5: %g", d);
    CHECK(parse_double("+2.5e-1", -1, 1, "x", &d) == 0 && d == 0.25, "+2.5e-1: %g", d);
    capture_stderr_begin();
    int r1 = parse_long("1e9", 0, 1L << 40, 0, "x", &l);   /* no suffixes: digits only */
    int r2 = parse_long("1.5", 0, 100, 1, "x", &l);        /* not an integer */
    int r3 = parse_double("1e999", 0, INFINITY, "x", &d); /* out of range */
    int r4 = parse_double("0x1p3", 0, 100, "x", &d);
    capture_stderr_end();
    CHECK(r1 != 0 && r2 != 0 && r3 != 0 && r4 != 0, "refused: %d %d %d %d", r1, r2, r3, r4);
    /* a CSV cell: hex was a price */
    char *dir = test_tmpdir(), path[CB_PATH_MAX];
    if (!dir) return;
    snprintf(path, sizeof path, "%s/prices.csv", dir);
    write_text(path, "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n"
                     "aws,trn1.32xlarge,us-east-1,on_demand,0x10,2024-06,test\n");
    const char *r[] = {"report", "--throughput", "data/reference/trn1_table1.csv", "--prices", path, "--out", dir,
                       NULL};
    int rc = run(r);
    CHECK(rc != 0 && strstr(g_err, ":2: column 'usd_per_hour': expected a number") && strstr(g_err, "got '0x10'"),
          "hex price: exit %d: %s", rc, g_err);
    rm_tree(dir);
}

/* ---------------------------------------------------------------- 12: --d-model and the MLP width */

/* The header line of a one-step train run of `model` with the extra flags (NULL-terminated). */
static int train_header(const char *model, const char *a, const char *b, const char *c, const char *d)
{
    const char *args[] = {"train", "--model", model, "--layers", "1", "--vocab", "256", "--seq", "16", "--micro-batch",
                          "1", "--steps", "1", "--discard-steps", "0", "--no-predict", "--peak-gflops", "100",
                          "--quiet", a, b, c, d, NULL};
    return run(args);
}

static void test_dmodel_ffn(void)
{
    /* GPT-J: 16384 = 4 x 4096; at width 256 the MLP is 4 x 256 */
    int rc = train_header("gpt-j-6b", "--d-model", "256", NULL, NULL);
    CHECK(rc == 0 && strstr(g_out, "C=256 heads=16 kv_heads=16 ffn=1024 "),
          "gpt-j-6b --d-model 256: exit %d: %.300s%.300s", rc, g_out, g_err);
    /* Llama-2 7B: 11008 / 4096 of 64 is 172, SwiGLU's width rounded up to a multiple of 8 */
    rc = train_header("llama2-7b", "--d-model", "64", NULL, NULL);
    CHECK(rc == 0 && strstr(g_out, "C=64 heads=32 kv_heads=32 ffn=176 "),
          "llama2-7b --d-model 64: exit %d: %.300s%.300s", rc, g_out, g_err);
    rc = train_header("llama2-7b", "--d-model", "1024", NULL, NULL);
    CHECK(rc == 0 && strstr(g_out, "ffn=2752 "), "llama2-7b --d-model 1024: exit %d: %.300s%.300s", rc, g_out, g_err);
    /* --ffn given: it is the width */
    rc = train_header("gpt-j-6b", "--d-model", "256", "--ffn", "96");
    CHECK(rc == 0 && strstr(g_out, "C=256 heads=16 kv_heads=16 ffn=96 "), "--ffn 96: exit %d: %.300s%.300s", rc, g_out,
          g_err);
    /* the same rule in scale and plan (one model_config_override): the parameters follow the width */
    model_config cfg;
    const model_overrides ov = {.dmodel = 64, .heads = 4};
    CHECK(model_preset_find("gpt-j-6b", &cfg) == 0 && model_config_override(&cfg, &ov) == 0 && cfg.ffn == 256,
          "override: ffn %d", cfg.ffn);
    char want[128];
    snprintf(want, sizeof want, "gpt-j-6b-custom (%.3g B parameters)", model_params_total(&cfg) / 1e9);
    const char *p1[] = {PLAN_OF("gpt-j-6b"), "--d-model", "64", "--heads", "4", NULL};
    rc = run(p1);
    CHECK(rc == 0 && strstr(g_out, want), "plan gpt-j-6b --d-model 64: exit %d, expected \"%s\": %.300s%.300s", rc,
          want, g_out, g_err);
    const char *s1[] = {SCALE_OF("gpt-j-6b"), "--global-batch", "64", "--d-model", "64", "--heads", "4", NULL};
    rc = run(s1);
    CHECK(rc == 0, "scale gpt-j-6b --d-model 64: %s", g_err);
    /* a width the heads do not divide: one error naming the flag given */
    const char *b1[] = {"train", "--model", "gpt-j-6b", "--d-model", "100", NULL};
    check_refused(b1, "flag '--d-model': 100 is not a multiple of gpt-j-6b's 16 heads");
    const char *b2[] = {"train", "--model", "gpt-j-6b", "--heads", "3", NULL};
    check_refused(b2, "flag '--heads': gpt-j-6b's d_model 4096 is not a multiple of 3 heads");
    const char *b3[] = {PLAN_OF("llama2-7b"), "--d-model", "100", NULL};
    check_refused(b3, "flag '--d-model': 100 is not a multiple of llama2-7b's 32 heads");
    const char *b4[] = {SCALE, "--global-batch", "64", "--d-model", "96", "--heads", "5", NULL};
    check_refused(b4, "flags '--d-model' / '--heads': 96 is not a multiple of 5 heads");
    const char *b5[] = {"train", "--model", "llama2-70b", "--heads", "4", NULL};
    check_refused(b5, "flags '--heads' / '--kv-heads': llama2-70b: 4 heads are not a multiple of 8 kv_heads");
    /* GPT-J's 16 heads at width 64 are 4 wide: 25% rotary is no dimension, so no positions at all */
    const char *b6[] = {"train", "--model", "gpt-j-6b", "--d-model", "64", NULL};
    check_refused(
        b6, "flags '--d-model' / '--heads': gpt-j-6b: rotary_pct 0.25 of a head of 4 dimensions rotates none of them");
}

const test_case tests_audit2_cli[] = {
    {"audit2 6: a list flag refuses a repeated entry (plan, report, scale, matmul, rope, allreduce); parallel lists "
     "may repeat",
     test_list_repeats},
    {"audit2 8: --calibrate refuses --mfu and --fit (scale, plan) as it does --base-nodes; --mfu with measured points, "
     "--fit without",
     test_calibrate_alone},
    {"audit2 10: numbers are decimal only: no hex, spaces, inf, nan or bare exponents (flags and CSV cells)",
     test_decimal_numbers},
    {"audit2 12: --d-model scales the preset's MLP width by its ratio (SwiGLU to a multiple of 8); heads that do not "
     "divide name the flag",
     test_dmodel_ffn},
    {0},
};
