/* costbench trajectory: the comparison's arithmetic on hand-made logs (values worked out by
 * hand), tokens/$ from a given price, the files it writes, and bad input (one-line errors with
 * file:line and column, exit 1; usage errors exit 2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/csvio.h"
#include "../report/trajectory.h"
#include "check.h"

static char g_out[32768], g_err[8192];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

/* A per-step log of n steps (1..n) as `costbench train --csv` writes it (fewer columns). */
static void write_log(const char *path, int n, const double *loss, const double *gnorm)
{
    char buf[4096];
    int l = snprintf(buf, sizeof buf, "step,loss,grad_norm,lr,ms\n");
    for (int i = 0; i < n && l > 0 && (size_t)l < sizeof buf; i++)
        l += snprintf(buf + l, sizeof buf - (size_t)l, "%d,%.17g,%.17g,0.0006,12.5\n", i + 1, loss[i], gnorm[i]);
    write_text(path, buf);
}

/* A summary row as `costbench train --summary-csv` writes it (the columns trajectory reads). */
static void write_summary(const char *path, double tokens_per_s, double rss_gib, const char *precision)
{
    char buf[512];
    snprintf(buf, sizeof buf, "model,instance_type,seq_len,tokens_per_s,peak_rss_gib,source,precision\n"
                              "pythia-14m,this machine,256,%.17g,%.17g,measured here 2026-01-01T00:00:00Z,%s\n",
             tokens_per_s, rss_gib, precision);
    write_text(path, buf);
}

/* Cell (row, column `name`) of a CSV into buf ("" when the file or the column is missing). */
static const char *cell(const char *path, int row, const char *name, char *buf, size_t n)
{
    table t;
    buf[0] = '\0';
    if (table_load(&t, path) != 0) return buf;
    int c = table_col(&t, name, 0);
    if (c >= 0 && row < t.nrows) snprintf(buf, n, "%s", table_cell(&t, row, c));
    table_free(&t);
    return buf;
}

static double cell_num(const char *path, int row, const char *name)
{
    char buf[128];
    cell(path, row, name, buf, sizeof buf);
    return *buf ? strtod(buf, NULL) : NAN;
}

/* One line "error: ..." naming each of `want` (NULL-terminated). */
static void check_one_line_error(const char *what, const char *const *want)
{
    const char *nl = strchr(g_err, '\n');
    CHECK(strncmp(g_err, "error: ", 7) == 0 && nl && nl[1] == '\0', "%s: expected one 'error:' line, got: %s", what,
          g_err);
    for (int i = 0; want[i]; i++)
        CHECK(strstr(g_err, want[i]) != NULL, "%s: the error does not name '%s': %s", what, want[i], g_err);
}

/* The fixture: baseline "fp32" and "other", 10 steps. The baseline's loss is 10 - i (10 .. 1)
 * and its gradient norm 1; "other" differs at step 1 (by 9 and 2) and at step 8, just before the
 * tail (by 5 in the loss, 8 against 3, and by 1 in the gradient norm), and in the last 20% (steps
 * 9 and 10) by 0.5 and 0.2 in the loss (2.5 and 0.8 against 2 and 1) and by 0.25 and 0.5 in the
 * gradient norm (1.25 and 0.5 against 1). */
static void fixture(const char *d, char *base, char *other, size_t n)
{
    double lb[10], gb[10], lo[10], go[10];
    for (int i = 0; i < 10; i++) lb[i] = lo[i] = 10 - i, gb[i] = go[i] = 1;
    lo[0] = 19, go[0] = 3;
    lo[7] = 8, go[7] = 2;
    lo[8] = 2.5, lo[9] = 0.8, go[8] = 1.25, go[9] = 0.5;
    snprintf(base, n, "%s/base.csv", d);
    snprintf(other, n, "%s/other.csv", d);
    write_log(base, 10, lb, gb);
    write_log(other, 10, lo, go);
}

static void test_trajectory_tail_math(void)
{
    CHECK(trajectory_tail_steps(10, 20) == 2, "10 steps, 20%%: %d", trajectory_tail_steps(10, 20));
    CHECK(trajectory_tail_steps(10, 25) == 3, "10 steps, 25%% (2.5 rounds up): %d", trajectory_tail_steps(10, 25));
    CHECK(trajectory_tail_steps(80, 20) == 16, "80 steps, 20%%: %d", trajectory_tail_steps(80, 20));
    CHECK(trajectory_tail_steps(3, 1) == 1, "at least one step: %d", trajectory_tail_steps(3, 1));
    CHECK(trajectory_tail_steps(5, 100) == 5, "100%%: every step: %d", trajectory_tail_steps(5, 100));
    const double a[5] = {100, 1, 2, 3, 4}, b[5] = {0, 1.5, 2.5, 2, 4};
    double mean, max;
    trajectory_tail_diff(a, b, 5, 3, &mean, &max); /* |2-2.5|, |3-2|, |4-4| = 0.5, 1, 0 (not the 0.5 before) */
    CHECK(mean == 0.5 && max == 1, "tail of 3: mean %g (0.5), max %g (1)", mean, max);
    trajectory_tail_diff(a, b, 5, 5, &mean, &max); /* 100, 0.5, 0.5, 1, 0 */
    CHECK(mean == 102.0 / 5 && max == 100, "tail of 5: mean %g, max %g", mean, max);
}

static void test_trajectory_compare(void)
{
    char *d = test_tmpdir(), base[128], other[128], out[128], csv[160], sum[128];
    if (!d) return;
    fixture(d, base, other, sizeof base);
    snprintf(out, sizeof out, "%s/out", d);
    snprintf(csv, sizeof csv, "%s/trajectory.csv", out);
    snprintf(sum, sizeof sum, "%s/sum.csv", d);
    write_summary(sum, 1000, 0.5, "bf16-sr");
    char r1[200], r2[300];
    snprintf(r1, sizeof r1, "fp32=%s", base);
    snprintf(r2, sizeof r2, "other=%s,%s", other, sum);
    const char *args[] = {"trajectory", "--run", r1, "--run", r2, "--usd-per-hour", "0.5", "--out", out, NULL};
    int rc = run(args);
    CHECK(rc == 0, "trajectory: exit %d: %s", rc, g_err);
    char buf[256];
    CHECK(strcmp(cell(csv, 0, "label", buf, sizeof buf), "fp32") == 0 &&
              strcmp(cell(csv, 1, "label", buf, sizeof buf), "other") == 0,
          "rows in --run order");
    CHECK(cell_num(csv, 1, "steps") == 10, "steps %g", cell_num(csv, 1, "steps"));
    CHECK(fabs(cell_num(csv, 1, "loss_mean_abs_diff") - 0.35) < 1e-9,
          "loss mean abs diff %.9g, expected (0.5 + 0.2) / 2 = 0.35", cell_num(csv, 1, "loss_mean_abs_diff"));
    CHECK(fabs(cell_num(csv, 1, "loss_max_abs_diff") - 0.5) < 1e-9, "loss max abs diff %.9g, expected 0.5",
          cell_num(csv, 1, "loss_max_abs_diff"));
    CHECK(fabs(cell_num(csv, 1, "grad_norm_mean_abs_diff") - 0.375) < 1e-9,
          "grad norm mean abs diff %.9g, expected 0.375", cell_num(csv, 1, "grad_norm_mean_abs_diff"));
    CHECK(fabs(cell_num(csv, 1, "grad_norm_max_abs_diff") - 0.5) < 1e-9, "grad norm max abs diff %.9g",
          cell_num(csv, 1, "grad_norm_max_abs_diff"));
    CHECK(fabs(cell_num(csv, 1, "final_loss") - 0.8) < 1e-9, "final loss %.9g", cell_num(csv, 1, "final_loss"));
    CHECK(fabs(cell_num(csv, 1, "final_loss_vs_baseline_pct") + 20) < 1e-9,
          "final loss vs baseline %.9g%%, expected -20%%", cell_num(csv, 1, "final_loss_vs_baseline_pct"));
    CHECK(cell_num(csv, 0, "loss_max_abs_diff") == 0 && cell_num(csv, 0, "final_loss_vs_baseline_pct") == 0,
          "the baseline against itself");
    /* tokens/$ = 1000 tok/s x 3600 / $0.5 per hour, exactly; the summary's precision as written */
    CHECK(cell_num(csv, 1, "tokens_per_usd") == 7200000, "tokens/$ %.17g, expected 7200000",
          cell_num(csv, 1, "tokens_per_usd"));
    CHECK(strcmp(cell(csv, 1, "precision", buf, sizeof buf), "bf16-sr") == 0, "precision '%s'", buf);
    CHECK(cell_num(csv, 1, "peak_rss_gib") == 0.5, "peak RSS %g", cell_num(csv, 1, "peak_rss_gib"));
    CHECK(strstr(cell(csv, 1, "price_source", buf, sizeof buf), "--usd-per-hour") != NULL, "price source '%s'", buf);
    /* no summary: throughput, RSS and tokens/$ unknown (empty), not zero */
    const char *unknown[] = {"tokens_per_s", "tokens_per_usd", "peak_rss_gib", "precision", NULL};
    for (int i = 0; unknown[i]; i++)
        CHECK(*cell(csv, 0, unknown[i], buf, sizeof buf) == '\0', "baseline without a summary: %s '%s', expected empty",
              unknown[i], buf);
    CHECK(strstr(g_out, "# baseline 'fp32'") && strstr(g_out, "loss_mean_abs_diff") &&
              strstr(g_out, "last 2 steps (9 to 10"),
          "stdout: the table and its context lines: %s", g_out);
    rm_tree(d);
}

/* --tail-pct, --baseline, --csv, and a price from a price table. */
static void test_trajectory_options(void)
{
    char *d = test_tmpdir(), base[128], other[128], out[128], csv[160], sum[128], prices[128];
    if (!d) return;
    fixture(d, base, other, sizeof base);
    snprintf(out, sizeof out, "%s/out", d);
    snprintf(csv, sizeof csv, "%s/t.csv", d);
    snprintf(sum, sizeof sum, "%s/sum.csv", d);
    snprintf(prices, sizeof prices, "%s/prices.csv", d);
    write_summary(sum, 1000, 0.5, "fp32");
    write_text(prices, "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n"
                       "aws,x.large,us-east-1,on_demand,0.25,2024-06,test\n"
                       "aws,x.large,us-east-1,spot,0.125,2024-06,test\n");
    char r1[300], r2[200];
    snprintf(r1, sizeof r1, "ref=%s,%s", base, sum);
    snprintf(r2, sizeof r2, "other=%s", other);
    /* the last 30%: steps 8, 9, 10; loss diffs 5, 0.5, 0.2, gradient-norm diffs 1, 0.25, 0.5 */
    const char *args[] = {"trajectory", "--run", r1, "--run", r2, "--baseline", "ref", "--tail-pct", "30", "--instance",
                          "x.large", "--pricing", "spot", "--prices", prices, "--out", out, "--csv", csv, NULL};
    int rc = run(args);
    CHECK(rc == 0, "trajectory: exit %d: %s", rc, g_err);
    CHECK(fabs(cell_num(csv, 1, "loss_mean_abs_diff") - 5.7 / 3) < 1e-9 &&
              fabs(cell_num(csv, 1, "loss_max_abs_diff") - 5) < 1e-9,
          "tail of 3: loss mean abs diff %.9g (5.7 / 3), max %.9g (5)", cell_num(csv, 1, "loss_mean_abs_diff"),
          cell_num(csv, 1, "loss_max_abs_diff"));
    CHECK(fabs(cell_num(csv, 1, "grad_norm_mean_abs_diff") - 1.75 / 3) < 1e-9 &&
              fabs(cell_num(csv, 1, "grad_norm_max_abs_diff") - 1) < 1e-9,
          "tail of 3: grad norm mean abs diff %.9g (1.75 / 3), max %.9g (1)",
          cell_num(csv, 1, "grad_norm_mean_abs_diff"), cell_num(csv, 1, "grad_norm_max_abs_diff"));
    CHECK(cell_num(csv, 0, "tokens_per_usd") == 28800000,
          "tokens/$ at the spot price: %.17g, expected 1000 x 3600 / 0.125", cell_num(csv, 0, "tokens_per_usd"));
    char buf[256], p[200];
    snprintf(p, sizeof p, "%s:3", prices);
    CHECK(strstr(cell(csv, 0, "price_source", buf, sizeof buf), p) != NULL, "price source names %s: '%s'", p, buf);
    struct stat st;
    snprintf(p, sizeof p, "%s/trajectory.csv", out);
    CHECK(stat(p, &st) != 0, "--csv: no trajectory.csv in the directory");
    rm_tree(d);
}

/* The two panels and the Markdown: files there, non-empty PNGs, the table with its labels. */
static void test_trajectory_files(void)
{
    char *d = test_tmpdir(), base[128], other[128], out[128], p[200];
    if (!d) return;
    fixture(d, base, other, sizeof base);
    snprintf(out, sizeof out, "%s/out", d);
    char r1[200], r2[200];
    snprintf(r1, sizeof r1, "fp32=%s", base);
    snprintf(r2, sizeof r2, "bf16-sr=%s", other);
    const char *args[] = {"trajectory", "--run", r1, "--run", r2, "--out", out, NULL};
    int rc = run(args);
    CHECK(rc == 0, "trajectory: exit %d: %s", rc, g_err);
    const char *png[] = {"loss.png", "grad_norm.png"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", out, png[i]);
        char head[16] = "";
        slurp(p, head, sizeof head);
        struct stat st;
        CHECK(stat(p, &st) == 0 && st.st_size > 1000 && memcmp(head + 1, "PNG", 3) == 0,
              "%s: missing, small or not a PNG", p);
    }
    static char md[16384];
    snprintf(p, sizeof p, "%s/trajectory.md", out);
    slurp(p, md, sizeof md);
    const char *want[] = {"| Run | Precision |", "**fp32** (baseline)", "| bf16-sr |", "(measured)", "(derived)",
                          "no price given", "](loss.png)", "](grad_norm.png)", NULL};
    for (int i = 0; want[i]; i++) CHECK(strstr(md, want[i]) != NULL, "trajectory.md lacks '%s'", want[i]);
    rm_tree(d);
}

/* Bad files: one line naming the file (and line and column), exit 1. */
static void test_trajectory_bad_files(void)
{
    char *d = test_tmpdir(), base[128], other[128], out[128], bad[128], sum[128];
    if (!d) return;
    fixture(d, base, other, sizeof base);
    snprintf(out, sizeof out, "%s/out", d);
    snprintf(bad, sizeof bad, "%s/bad.csv", d);
    snprintf(sum, sizeof sum, "%s/sum.csv", d);
    char r1[200], r2[300];
    snprintf(r1, sizeof r1, "fp32=%s", base);
    const char *args[] = {"trajectory", "--run", r1, "--run", r2, "--out", out, NULL};
    struct {
        const char *what, *log_text, *sum_text, *want1, *want2;
    } cases[] = {
        {"missing file", NULL, NULL, "missing.csv", NULL},
        {"missing column", "step,loss\n1,2\n", NULL, "bad.csv:1", "'grad_norm'"},
        {"non-numeric cell", "step,loss,grad_norm\n1,2,1\n2,n/a,1\n", NULL, "bad.csv:3", "column 'loss'"},
        {"steps out of order", "step,loss,grad_norm\n2,2,1\n1,2,1\n", NULL, "bad.csv:3", "column 'step'"},
        {"different length", "step,loss,grad_norm\n1,2,1\n2,2,1\n", NULL, "bad.csv", "10"},
        {"different steps",
         "step,loss,grad_norm\n1,2,1\n2,2,1\n3,2,1\n4,2,1\n5,2,1\n6,2,1\n7,2,1\n8,2,1\n9,2,1\n11,2,1\n", NULL,
         "bad.csv:11", "column 'step'"},
        {"no steps", "step,loss,grad_norm\n", NULL, "bad.csv", "no steps"},
        {"summary without tokens_per_s", NULL, "model,precision\npythia-14m,fp32\n", "sum.csv:1", "'tokens_per_s'"},
        {"summary non-numeric", NULL, "tokens_per_s,precision\nfast,fp32\n", "sum.csv:2", "column 'tokens_per_s'"},
        {"summary of two rows", NULL, "tokens_per_s,precision\n1,fp32\n2,fp32\n", "sum.csv", "one summary row"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].log_text) write_text(bad, cases[i].log_text);
        if (cases[i].sum_text) write_text(sum, cases[i].sum_text);
        if (cases[i].sum_text) snprintf(r2, sizeof r2, "x=%s,%s", other, sum);
        else snprintf(r2, sizeof r2, "x=%s/%s", d, cases[i].log_text ? "bad.csv" : "missing.csv");
        int rc = run(args);
        CHECK(rc == 1, "%s: exit %d, expected 1", cases[i].what, rc);
        const char *want[] = {cases[i].want1, cases[i].want2, NULL};
        check_one_line_error(cases[i].what, want);
    }
    rm_tree(d);
}

/* Duplicate labels and a missing baseline: exit 1; bad flags: exit 2. */
static void test_trajectory_bad_flags(void)
{
    char *d = test_tmpdir(), base[128], other[128], out[128];
    if (!d) return;
    fixture(d, base, other, sizeof base);
    snprintf(out, sizeof out, "%s/out", d);
    char r1[200], r2[200], r3[200];
    snprintf(r1, sizeof r1, "fp32=%s", base);
    snprintf(r2, sizeof r2, "fp32=%s", other);
    snprintf(r3, sizeof r3, "bf16=%s", other);
    const char *dup[] = {"trajectory", "--run", r1, "--run", r2, "--out", out, NULL};
    CHECK(run(dup) == 1, "duplicate label: exit 1");
    check_one_line_error("duplicate label", (const char *const[]){"label 'fp32' given twice", NULL});
    const char *nobase[] = {"trajectory", "--run", r3, "--out", out, NULL};
    CHECK(run(nobase) == 1, "no baseline: exit 1");
    check_one_line_error("no baseline", (const char *const[]){"no run labelled 'fp32'", NULL});
    const char *named[] = {"trajectory", "--run", r1, "--baseline", "bf16-sr", "--out", out, NULL};
    CHECK(run(named) == 1, "--baseline names no run: exit 1");
    check_one_line_error("--baseline", (const char *const[]){"'bf16-sr'", "--baseline", NULL});
    const char *usage[][12] = {
        {"trajectory", "--run", "fp32", "--out", "x", NULL},
        {"trajectory", "--run", "=a.csv", "--out", "x", NULL},
        {"trajectory", "--run", "a b=a.csv", "--out", "x", NULL},
        {"trajectory", "--run", r1, NULL},
        {"trajectory", "--out", out, NULL},
        {"trajectory", "--run", r1, "--out", out, "--tail-pct", "0", NULL},
        {"trajectory", "--run", r1, "--out", out, "--instance", "c7a.large", "--usd-per-hour", "1", NULL},
        {"trajectory", "--run", r1, "--out", out, "--pricing", "spot", NULL},
        {"trajectory", "--run", r1, "--out", out, "--instance", "c7a.large", "--pricing", "cheap", NULL},
        {"trajectory", "--run", r1, "--out", out, "--instance", "no-such.instance", NULL},
    };
    for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
        int rc = run(usage[i]);
        CHECK(rc == 2, "usage case %zu (%s %s): exit %d, expected 2: %s", i, usage[i][1],
              usage[i][2] ? usage[i][2] : "", rc, g_err);
        CHECK(strncmp(g_err, "error: ", 7) == 0, "usage case %zu: %s", i, g_err);
    }
    rm_tree(d);
}

/* A stand-in for costbench in bench/trajectory.sh: `train --help` lists --rounding or not, `train`
 * records its arguments and writes a 3-step log and a summary; anything else runs the real binary. */
static void write_fake_costbench(const char *path, const char *dir, int rounding)
{
    char real[4096], text[8192];
    if (!realpath(g_costbench, real)) snprintf(real, sizeof real, "%s", g_costbench);
    snprintf(text, sizeof text,
             "#!/bin/sh\n"
             "if [ \"$1\" = train ]; then\n"
             "  if [ \"$2\" = --help ]; then echo '  --precision fp32|bf16-mixed%s'; exit 0; fi\n"
             "  echo \"$*\" >> '%s/train_args'\n"
             "  while [ $# -gt 0 ]; do case $1 in --csv) csv=$2; shift ;; --summary-csv) sum=$2; shift ;; esac; shift; "
             "done\n"
             "  printf 'step,loss,grad_norm\\n1,3,1\\n2,2,1\\n3,1,1\\n' > \"$csv\"\n"
             "  printf 'tokens_per_s,precision\\n100,x\\n' > \"$sum\"\n"
             "  exit 0\n"
             "fi\n"
             "exec '%s' \"$@\"\n",
             rounding ? "|bf16\\n  --rounding nearest|stochastic" : "", dir, real);
    write_text(path, text);
    chmod(path, 0755);
}

/* bench/trajectory.sh: the four runs with their flags, then costbench trajectory over them (into
 * DIR/trajectory, a directory of its own); a costbench train without --rounding, a non-empty
 * --out and bad flags refused before any run. */
static void test_trajectory_script(void)
{
    char *d = test_tmpdir(), fake[128], env[200], out[128], p[256];
    if (!d) return;
    const char *syntax[] = {"bash", "-n", "bench/trajectory.sh", NULL};
    CHECK(cmd_run(syntax, g_out, sizeof g_out, g_err, sizeof g_err) == 0, "bash -n bench/trajectory.sh: %s", g_err);
    snprintf(fake, sizeof fake, "%s/costbench", d);
    snprintf(env, sizeof env, "COSTBENCH=%s", fake);
    snprintf(out, sizeof out, "%s/traj", d);
    write_fake_costbench(fake, d, 0);
    const char *args[] = {"env", env, "bash", "bench/trajectory.sh", "--steps", "3", "--seed", "7", "--out", out, NULL};
    int rc = cmd_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    struct stat st;
    CHECK(rc == 1 && strstr(g_err, "--rounding") && stat(out, &st) != 0,
          "without --rounding: exit %d (expected 1), nothing made: %s", rc, g_err);
    write_fake_costbench(fake, d, 1);
    rc = cmd_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "bench/trajectory.sh: exit %d: %s", rc, g_err);
    static char argl[8192];
    snprintf(p, sizeof p, "%s/train_args", d);
    slurp(p, argl, sizeof argl);
    const char *want[] = {"--precision fp32 --no-predict", "--precision bf16-mixed --no-predict",
                          "--precision bf16 --rounding stochastic", "--precision bf16 --rounding nearest",
                          "--steps 3 --lr 6e-4 --seed 7", "bf16-sr_summary.csv", NULL};
    for (int i = 0; want[i]; i++) CHECK(strstr(argl, want[i]) != NULL, "the train runs lack '%s': %s", want[i], argl);
    snprintf(p, sizeof p, "%s/trajectory/trajectory.csv", out);
    char buf[64];
    CHECK(strcmp(cell(p, 3, "label", buf, sizeof buf), "bf16-nearest") == 0 && cell_num(p, 0, "steps") == 3,
          "%s: 4 runs of 3 steps", p);
    rc = cmd_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 2 && strstr(g_err, "not an empty directory"),
          "a second run into the same --out: exit %d, expected 2: %s", rc, g_err);
    const char *const bad[][8] = {{"env", env, "bash", "bench/trajectory.sh", NULL},           /* no --out */
                                  {"env", env, "bash", "bench/trajectory.sh", "--out", NULL},  /* no value */
                                  {"env", env, "bash", "bench/trajectory.sh", "--precision", "fp32", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = cmd_run(bad[i], g_out, sizeof g_out, g_err, sizeof g_err);
        CHECK(rc == 2 && strncmp(g_err, "error: ", 7) == 0, "bad flags %zu: exit %d, expected 2: %s", i, rc, g_err);
    }
    rm_tree(d);
}

const test_case tests_trajectory[] = {
    {"trajectory_tail_math", test_trajectory_tail_math},
    {"trajectory_compare", test_trajectory_compare},
    {"trajectory_options", test_trajectory_options},
    {"trajectory_files", test_trajectory_files},
    {"trajectory_bad_files", test_trajectory_bad_files},
    {"trajectory_bad_flags", test_trajectory_bad_flags},
    {"trajectory_script", test_trajectory_script},
    {NULL, NULL},
};
