/* costbench scale: every function small, and a calibration that does not reproduce its own points is an error, never
 * "fitted". The audit's reproducers (ZeRO-3 with full overlap, absurd base throughputs) exit 1 with the worst residual
 * and write nothing; impossible throughputs (above the data-sheet peak) are refused naming the flag or file:line; a
 * good calibration says it reproduces its points; --fit-tolerance cuts both ways. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/err.h"
#include "../report/predict/scale.h"
#include "check.h"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

static const char *const g_table1 = "data/reference/trn1_table1.csv";

static int count_lines_starting(const char *text, const char *prefix)
{
    int n = 0;
    size_t k = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, prefix, k) == 0) n++;
    return n;
}

/* Runs `costbench scale` NeoX-20B on trn1.32xlarge, TP 8 x PP 4, global batch 16384, with the
 * extra arguments (NULL-terminated, at most 16) and --csv csv. */
static int run_neox(const char *csv, const char *const *extra)
{
    const char *args[48] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4",
                            "--seq", "2048", "--global-batch", "16384", "--nodes", "4,8,16,32,64"};
    int a = 15;
    for (int i = 0; extra[i] && i < 16; i++) args[a++] = extra[i];
    args[a++] = "--csv", args[a++] = csv;
    args[a] = NULL;
    return run(args);
}

/* The audit's reproducer: ZeRO-3 all-gathers the weights in each of 4096 micro-batches, which the
 * model prices at more than the measured step; it used to print "calibrated ... (fitted)" and miss
 * its own point by 52%. (-5x% until trn1.32xlarge's network was its measured 404.5 Gbit/s, not the
 * 800 line rate: -77.8%.) */
static void test_scale_reproducer_zero3(void)
{
    char *d = test_tmpdir(), csv[128];
    snprintf(csv, sizeof csv, "%s/out.csv", d);
    const char *extra[] = {"--base-nodes", "4", "--base-seq-per-s", "13.6", "--zero", "3", "--overlap", "1", NULL};
    int rc = run_neox(csv, extra);
    CHECK(rc == 1, "zero 3 reproducer: exit %d, expected 1: %s", rc, g_err);
    CHECK(strncmp(g_err, "error: ", 7) == 0 && count_lines_starting(g_err, "error: ") == 1, "one error line: %s",
          g_err);
    CHECK(strstr(g_err, "does not reproduce") &&
              strstr(g_err, "at 4 nodes (flag '--base-seq-per-s') measured 13.6 seq/s") && strstr(g_err, "(error -7"),
          "the error names the worst point and its residual: %s", g_err);
    CHECK(strstr(g_err, "\nhint: the modelled communication alone takes") != NULL, "hint with the cause: %s", g_err);
    CHECK(strstr(g_out, "fitted") == NULL && g_out[0] == '\0', "nothing on stdout, never 'fitted': %s", g_out);
    CHECK(access(csv, F_OK) != 0, "a failed calibration wrote %s", csv);
    /* the same flags with the tolerance opened past the residual: accepted, but the compute time
     * pinned at the peak is not called fitted */
    const char *loose[] = {"--base-nodes", "4", "--base-seq-per-s", "13.6", "--zero", "3", "--overlap", "1",
                           "--fit-tolerance", "80", NULL};
    rc = run_neox(csv, loose);
    CHECK(rc == 0 && strstr(g_out, "reproduces its 1 point within 80%") != NULL, "--fit-tolerance 80: exit %d: %s%s",
          rc, g_out, g_err);
    CHECK(strstr(g_out, "(fitted)") == NULL && strstr(g_out, "held at the data-sheet peak") != NULL,
          "a compute time at the edge of its range is not 'fitted': %s", g_out);
    rm_tree(d);
}

/* Absurd base throughputs: too fast for the hardware is refused naming the flag; one the model
 * cannot reach (compute at the data-sheet peak with --recompute) is a calibration error with its
 * cause; a very slow one is possible and reproduced. */
static void test_scale_reproducer_absurd_base(void)
{
    char *d = test_tmpdir(), csv[128];
    snprintf(csv, sizeof csv, "%s/out.csv", d);
    static const char *const fast[] = {"1e6", "1000", "46.5"};
    for (int i = 0; i < 3; i++) {
        const char *extra[] = {"--base-nodes", "4", "--base-seq-per-s", fast[i], NULL};
        int rc = run_neox(csv, extra);
        CHECK(rc == 2 && count_lines_starting(g_err, "error: ") == 1 &&
                  strstr(g_err, "error: flag '--base-seq-per-s': ") &&
                  strstr(g_err, "of the data-sheet dense BF16 peak of 4 x trn1.32xlarge: impossible"),
              "--base-seq-per-s %s: exit %d: %s", fast[i], rc, g_err);
        CHECK(access(csv, F_OK) != 0 && g_out[0] == '\0', "--base-seq-per-s %s: output written", fast[i]);
    }
    /* 38 seq/s is 82% of the peak: possible, and reproduced (46, 99.4%, was before the TP rings were
     * charged on trn1's NeuronLink: at the peak the model now gives 38.8) */
    const char *edge[] = {"--base-nodes", "4", "--base-seq-per-s", "38", NULL};
    int rc = run_neox(csv, edge);
    CHECK(rc == 0 && strstr(g_out, "reproduces its 1 point within 5%"), "38 seq/s: exit %d: %s", rc, g_err);
    unlink(csv);
    /* with full recomputation the hardware does 4/3 the FLOPs: 40 seq/s needs more than the peak */
    const char *rec[] = {"--base-nodes", "4", "--base-seq-per-s", "40", "--recompute", NULL};
    rc = run_neox(csv, rec);
    CHECK(rc == 1 && strstr(g_err, "measured 40 seq/s, the model gives") &&
              strstr(g_err, "\nhint: the fit hit a parameter bound: compute time"),
          "40 seq/s with --recompute: exit %d: %s", rc, g_err);
    CHECK(access(csv, F_OK) != 0 && strstr(g_out, "fitted") == NULL, "40 seq/s with --recompute: output written");
    /* very slow is possible: reproduced exactly */
    const char *slow[] = {"--base-nodes", "4", "--base-seq-per-s", "1e-6", NULL};
    rc = run_neox(csv, slow);
    CHECK(rc == 0 && strstr(g_out, "reproduces its 1 point within 5% (--fit-tolerance): worst residual") != NULL,
          "1e-6 seq/s: exit %d: %s%s", rc, g_out, g_err);
    double meas[8], err[8];
    CHECK(csv_column(csv, "measured_seq_per_s", meas, 8) == 5 && meas[0] == 1e-6 &&
              csv_column(csv, "error_pct", err, 8) == 5 && fabs(err[0]) < 0.01,
          "1e-6 seq/s: the 4-node row reproduces the point (error %g%%)", err[0]);
    rm_tree(d);
}

/* A --measured (or --compare) row above the data-sheet peak is refused naming file:line. */
static void test_scale_measured_row_impossible(void)
{
    char *d = test_tmpdir(), csv[128], meas[128], arg[2][16] = {"--measured", "--compare"};
    snprintf(csv, sizeof csv, "%s/out.csv", d);
    snprintf(meas, sizeof meas, "%s/meas.csv", d);
    write_text(meas, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n"
                           "neox-20b,8,4,4,trn1.32xlarge,2048,16384,13.6\n"
                           "neox-20b,8,4,8,trn1.32xlarge,2048,16384,1e6\n");
    char expect[256];
    snprintf(expect, sizeof expect, "error: %s:3: 1e+06 seq/s of neox-20b at seq_len 2048 needs ", meas);
    for (int i = 0; i < 2; i++) {
        const char *extra[] = {"--base-nodes", "4", "--base-seq-per-s", "13.6", arg[i], meas, NULL};
        int rc = run_neox(csv, extra);
        CHECK((rc == 1 || rc == 2) && strncmp(g_err, expect, strlen(expect)) == 0 &&
                  strstr(g_err, "peak of 8 x trn1.32xlarge: impossible") && count_lines_starting(g_err, "error: ") == 1,
              "%s with a row at 1e6 seq/s: exit %d: %s", arg[i], rc, g_err);
        CHECK(access(csv, F_OK) != 0, "%s: output written", arg[i]);
    }
    rm_tree(d);
}

/* A good calibration says it reproduces its points (the worst residual and where); a tolerance
 * tighter than the worst residual fails it, a looser one accepts a fit that misses the default. */
static void test_scale_fit_tolerance(void)
{
    char *d = test_tmpdir(), csv[128];
    snprintf(csv, sizeof csv, "%s/out.csv", d);
    const char *good[] = {"--measured", g_table1, NULL};
    int rc = run_neox(csv, good);
    CHECK(rc == 0 && strstr(g_out, "fitted to 5 points") &&
              strstr(g_out, "# the calibration reproduces its 5 points within 5% (--fit-tolerance): worst residual "
                            "+1.3% at 8 nodes (") &&
              strstr(g_out, "trn1_table1.csv:9)") && strstr(g_out, "# residuals (model / measured - 1): 4 nodes "),
          "Table 1 fit: exit %d: %s%s", rc, g_out, g_err);
    unlink(csv);
    const char *tight[] = {"--measured", g_table1, "--fit-tolerance", "0.5", NULL};
    rc = run_neox(csv, tight);
    CHECK(rc == 1 && strstr(g_err, "within 0.5% (--fit-tolerance): at 8 nodes") && strstr(g_err, "(error +1.3%)") &&
              strstr(g_err, "\nhint: residuals (model / measured - 1) at the 5 points: 4 nodes +0.0%, 8 nodes +1.3%"),
          "--fit-tolerance 0.5: exit %d: %s", rc, g_err);
    CHECK(access(csv, F_OK) != 0, "--fit-tolerance 0.5: CSV written");
    /* Pythia-6.9B at 1 and 4 nodes with the compute time alone: 3.5% apart either way (5.7% on the 800 Gbit/s
     * line rate before trn1.32xlarge's measured network; 5.8% before trn1's TP rings were charged): fails at 3% */
    const char *py[] = {"scale", "--model", "pythia-6.9b", "--instance", "trn1.32xlarge", "--tp", "8", "--global-batch",
                        "256", "--nodes", "1,4", "--measured", g_table1, "--fit", "compute", "--csv", csv,
                        "--fit-tolerance", "3", NULL};
    rc = run(py);
    CHECK(rc == 1 && strstr(g_err, "at 4 nodes") &&
              strstr(g_err, "\nhint: with 1 parameter fitted the model's shape does not follow"),
          "pythia compute-only fit at 3%%: exit %d: %s", rc, g_err);
    py[18] = "10";
    rc = run(py);
    CHECK(rc == 0 &&
              strstr(g_out, "reproduces its 2 points within 10% (--fit-tolerance): worst residual +3.5% at 4 nodes") &&
              access(csv, R_OK) == 0,
          "pythia compute-only fit at 10%%: exit %d: %s%s", rc, g_out, g_err);
    const char *bad[] = {"--base-nodes", "4", "--base-seq-per-s", "13.6", "--fit-tolerance", "0", NULL};
    rc = run_neox(csv, bad);
    CHECK(rc == 2 && strstr(g_err, "flag '--fit-tolerance'"), "--fit-tolerance 0: exit %d: %s", rc, g_err);
    rm_tree(d);
}

/* The library's check on its own: a fitted model passes; the same model nudged 10% off its point
 * fails with the residual; the fit never leaves the line rate. */
static void test_scale_fit_verify_unit(void)
{
    scale_model s;
    test_scale_model(&s);
    /* two points from a model at 30% of the line rate */
    scale_model truth = s;
    truth.net_eff = 0.3, truth.t_mb_s = 0.2;
    scale_points pts;
    memset(&pts, 0, sizeof pts);
    for (int i = 0; i < 2; i++) {
        scale_point p;
        scale_eval(&truth, i ? 8 : 2, &p);
        pts.nodes[i] = i ? 8 : 2, pts.seq_per_s[i] = p.seq_per_s, pts.src[i] = "unit", pts.line[i] = i + 2;
    }
    pts.n = 2;
    int want[SP_COUNT] = {1, 1, 0, 0};
    scale_fit fit;
    CHECK(scale_fit_points(&s, want, &pts, &fit) == 0 && fit.fitted[SP_BANDWIDTH] && !fit.at_bound[SP_BANDWIDTH],
          "fit from the line rate down to 0.3");
    CHECK(fabs(s.net_eff / 0.3 - 1) < 1e-3 && fabs(s.t_mb_s / 0.2 - 1) < 1e-3, "recovered net_eff %g, t_mb %g",
          s.net_eff, s.t_mb_s);
    capture_stderr_begin();
    int rc = scale_fit_verify(&s, &fit, &pts, 0.01);
    const char *msg = capture_stderr_end();
    CHECK(rc == 0 && msg[0] == '\0' && fabs(fit.resid_pct[fit.worst]) < 0.01, "exact fit verified: %s", msg);
    s.t_mb_s *= 1.1; /* the comparator must see the model, not the fit's numbers */
    capture_stderr_begin();
    rc = scale_fit_verify(&s, &fit, &pts, 5);
    msg = capture_stderr_end();
    CHECK(rc == CB_EFAIL && strstr(msg, "error: unit:2: ") && strstr(msg, "(error -9."),
          "a model 10%% slower fails: %s", msg);
    /* points that need more than the line rate: the efficiency stops at 1 and says so */
    truth.net_eff = 3;
    for (int i = 0; i < 2; i++) {
        scale_point p;
        scale_eval(&truth, pts.nodes[i], &p);
        pts.seq_per_s[i] = p.seq_per_s;
    }
    s.net_eff = 1, s.t_mb_s = 0.5;
    CHECK(scale_fit_points(&s, want, &pts, &fit) == 0 && s.net_eff <= 1 && fit.at_bound[SP_BANDWIDTH],
          "net_eff %g must stay at most 1 and be marked at its bound", s.net_eff);
}

const test_case tests_scale[] = {
    {"scale: ZeRO-3 reproducer is an error with its residual and a hint, exit 1, no CSV", test_scale_reproducer_zero3},
    {"scale: absurd base throughputs refused naming the flag, or unreachable ones an error with the cause",
     test_scale_reproducer_absurd_base},
    {"scale: a --measured/--compare row above the data-sheet peak is refused naming file:line",
     test_scale_measured_row_impossible},
    {"scale: a good calibration reproduces its points; --fit-tolerance cuts both ways", test_scale_fit_tolerance},
    {"scale: scale_fit_verify sees the model; a fit stays inside each parameter's range", test_scale_fit_verify_unit},
    {0},
};
