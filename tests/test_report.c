/* The cost report and the scaling model: Table 1 reproduced exactly, pricing options, rows
 * measured on this machine, the step model's closed forms, the predictions the issue asks for
 * (NeoX-20B 4 -> 64 nodes within 10%, Pythia-6.9B 1 -> 4 within 15%), bad input, and a report
 * directory that is complete or absent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/presets.h"
#include "../report/predict/stepmodel.h"
#include "../report/predict/scale.h"
#include "check.h"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

static const char *const g_table1 = "data/reference/trn1_table1.csv";

/* Column `name` of row `row` of a loaded CSV as a number (NaN when absent or empty). */
static double cell_num(const table *t, int row, const char *name)
{
    int c = -1;
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->header[i], name) == 0) c = i;
    if (c < 0 || !*table_cell(t, row, c)) return NAN;
    return strtod(table_cell(t, row, c), NULL);
}

static const char *cell_str(const table *t, int row, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->header[i], name) == 0) return table_cell(t, row, i);
    return "";
}

static void check_table1_against(const table *rep, int first_row, const char *ref_path)
{
    table ref;
    if (table_load(&ref, ref_path) != 0) {
        CHECK(0, "cannot load %s", ref_path);
        return;
    }
    CHECK(ref.nrows == 7, "%s: %d rows, expected Table 1's 7", ref_path, ref.nrows);
    for (int i = 0; i < ref.nrows && first_row + i < rep->nrows; i++) {
        double want = cell_num(&ref, i, "tokens_per_usd"), got = cell_num(rep, first_row + i, "tokens_per_usd");
        CHECK(got == want, "%s row %d: tokens/$ %.0f, Table 1 says %.0f", ref_path, i + 1, got, want);
        CHECK(cell_num(rep, first_row + i, "instances") == cell_num(&ref, i, "instances"), "row %d: instances differ",
              i + 1);
        CHECK(cell_num(rep, first_row + i, "usd_per_hour") == cell_num(&ref, i, "usd_per_hour"), "row %d: $/h differs",
              i + 1);
    }
    table_free(&ref);
}

static void test_report_table1(void)
{
    char *d = test_tmpdir(), out[128], path[256];
    snprintf(out, sizeof out, "%s/rep", d);
    const char *args[] = {"report", "--throughput", g_table1, "--out", out, NULL};
    int rc = run(args);
    CHECK(rc == 0, "report on Table 1: exit %d: %s", rc, g_err);
    table rep;
    snprintf(path, sizeof path, "%s/report.csv", out);
    if (table_load(&rep, path) == 0) {
        CHECK(rep.nrows == 7, "report.csv: %d rows, expected 7", rep.nrows);
        check_table1_against(&rep, 0, g_table1);
        /* the copy in data/reference is the shared one plus a source column */
        if (access("../shared/reference/trn1_table1.csv", R_OK) == 0)
            check_table1_against(&rep, 0, "../shared/reference/trn1_table1.csv");
        for (int i = 0; i < rep.nrows; i++) {
            CHECK(strcmp(cell_str(&rep, i, "source_kind"), "imported") == 0, "row %d: source kind '%s'", i + 1,
                  cell_str(&rep, i, "source_kind"));
            double eff = cell_num(&rep, i, "scaling_efficiency");
            CHECK(eff > 0.8 && eff <= 1.01, "row %d: scaling efficiency %g", i + 1, eff);
        }
        CHECK(fabs(cell_num(&rep, 6, "scaling_efficiency") - (212.0 / 64) / (13.6 / 4)) < 1e-6, "64-node efficiency");
        table_free(&rep);
    } else {
        CHECK(0, "no report.csv");
    }
    static char md[262144];
    snprintf(path, sizeof path, "%s/report.md", out);
    slurp(path, md, sizeof md);
    CHECK(strstr(
              md,
              "| Model | Tensor Parallel | Pipeline Parallel | Number of instances | Cost ($/hour) | Sequence length | "
              "Global batch size | Throughput (seq/sec) | Cost-throughput ratio (tokens/$) |") != NULL,
          "report.md lacks Table 1's header");
    static const char *const values[] = {"10102387", "8693881", "3302704", "3254134", "3296632", "3263241", "3217708"};
    for (int i = 0; i < 7; i++) CHECK(strstr(md, values[i]) != NULL, "report.md lacks %s", values[i]);
    for (int i = 0; i < 7; i++) CHECK(strstr(g_out, values[i]) != NULL, "stdout lacks %s", values[i]);
    snprintf(path, sizeof path, "%s/throughput.png", out);
    CHECK(access(path, R_OK) == 0, "no throughput.png");
    snprintf(path, sizeof path, "%s/tokens_per_usd.png", out);
    CHECK(access(path, R_OK) == 0, "no tokens_per_usd.png");
    rm_tree(d);
}

static void test_report_pricing_options(void)
{
    char *d = test_tmpdir(), out[128], path[256];
    snprintf(out, sizeof out, "%s/rep", d);
    const char *args[] = {"report", "--throughput", g_table1, "--pricing", "reserved_3y,on_demand", "--tokens", "300B",
                          "--out", out, NULL};
    int rc = run(args);
    CHECK(rc == 0, "exit %d: %s", rc, g_err);
    table rep;
    snprintf(path, sizeof path, "%s/report.csv", out);
    if (table_load(&rep, path) == 0) {
        CHECK(rep.nrows == 14, "%d rows, expected 7 per pricing option", rep.nrows);
        check_table1_against(&rep, 0, g_table1); /* reserved_3y: USD 7.59 per instance-hour */
        double od = cell_num(&rep, 7, "tokens_per_usd");
        CHECK(od == round(10.4 * 2048 * 3600 / 21.50), "on-demand tokens/$ %.0f", od);
        CHECK(strcmp(cell_str(&rep, 7, "pricing_option"), "on_demand") == 0, "pricing option '%s'",
              cell_str(&rep, 7, "pricing_option"));
        double days = cell_num(&rep, 2, "train_days"), want = 300e9 / (13.6 * 2048) / 86400;
        CHECK(fabs(days / want - 1) < 1e-6, "time to train 300B tokens: %g days, expected %g", days, want);
        double usd = cell_num(&rep, 2, "train_usd");
        CHECK(fabs(usd / (want * 24 * 30.36) - 1) < 1e-6, "cost to train %g", usd);
        table_free(&rep);
    } else {
        CHECK(0, "no report.csv");
    }
    static char md[262144];
    snprintf(path, sizeof path, "%s/report.md", out);
    slurp(path, md, sizeof md);
    CHECK(strstr(md, "Pricing options side by side") != NULL, "no side-by-side table");
    rm_tree(d);
}

static void test_report_this_machine(void)
{
    char *d = test_tmpdir(), out[128], tp[128], path[256];
    snprintf(out, sizeof out, "%s/rep", d);
    snprintf(tp, sizeof tp, "%s/train.csv", d);
    write_text(tp, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,micro_batch,"
                   "seq_per_s,mfu,peak_gflops,source,cpu_model\n"
                   "pythia-70m,1,1,1,this machine,512,4,4,2.0,70.5,400,measured here 2026-11-21T00:00:00Z,Test CPU\n");
    const char *a1[] = {"report", "--throughput", tp, "--out", out, NULL};
    int rc = run(a1);
    CHECK(rc == 2 && strstr(g_err, "--instance") != NULL, "without an instance: exit %d: %s", rc, g_err);
    const char *a2[] = {"report", "--throughput", tp, "--instance", "c7a.large", "--out", out, NULL};
    rc = run(a2);
    CHECK(rc == 0, "--instance c7a.large: exit %d: %s", rc, g_err);
    table rep;
    snprintf(path, sizeof path, "%s/report.csv", out);
    if (rc == 0 && table_load(&rep, path) == 0) {
        CHECK(cell_num(&rep, 0, "tokens_per_usd") == round(2.0 * 512 * 3600 / 0.10264), "tokens/$ %.0f",
              cell_num(&rep, 0, "tokens_per_usd"));
        CHECK(strcmp(cell_str(&rep, 0, "source_kind"), "measured") == 0, "kind '%s'", cell_str(&rep, 0, "source_kind"));
        CHECK(cell_num(&rep, 0, "mfu") == 70.5, "the measured MFU is kept");
        /* a summary written before the precision column: fp32, as costbench train then ran */
        CHECK(strcmp(cell_str(&rep, 0, "precision"), "") == 0, "precision '%s', expected empty",
              cell_str(&rep, 0, "precision"));
        CHECK(strstr(cell_str(&rep, 0, "mfu_peak"), "fp32 FMA peak") != NULL, "mfu_peak '%s'",
              cell_str(&rep, 0, "mfu_peak"));
        table_free(&rep);
    }
    const char *a3[] = {"report", "--throughput", tp, "--usd-per-hour", "0.5", "--out", out, NULL};
    rc = run(a3);
    CHECK(rc == 0, "--usd-per-hour: exit %d: %s", rc, g_err);
    if (rc == 0 && table_load(&rep, path) == 0) {
        CHECK(cell_num(&rep, 0, "tokens_per_usd") == round(2.0 * 512 * 3600 / 0.5), "tokens/$ %.0f",
              cell_num(&rep, 0, "tokens_per_usd"));
        table_free(&rep);
    }
    rm_tree(d);
}

/* One machine's fp32 and bf16-mixed runs of one configuration are two rows, each with its
 * precision and the peak of its precision; report.csv keeps its columns and appends precision. */
static void test_report_precision(void)
{
    char *d = test_tmpdir(), out[128], tp[128], path[256];
    snprintf(out, sizeof out, "%s/rep", d);
    snprintf(tp, sizeof tp, "%s/train.csv", d);
    write_text(tp, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,micro_batch,"
                   "seq_per_s,mfu,peak_gflops,source,precision\n"
                   "pythia-70m,1,1,1,this machine,512,4,4,2.0,5.5,2000,measured here 2026-11-21T00:00:00Z,bf16-mixed\n"
                   "pythia-70m,1,1,1,this machine,512,4,4,1.0,30.1,400,measured here 2026-11-21T00:00:00Z,fp32\n");
    const char *args[] = {"report", "--throughput", tp, "--throughput", g_table1, "--instance", "c7a.large", "--out",
                          out, NULL};
    int rc = run(args);
    CHECK(rc == 0, "two precisions side by side: exit %d: %s", rc, g_err);
    table rep;
    snprintf(path, sizeof path, "%s/report.csv", out);
    if (rc == 0 && table_load(&rep, path) == 0) {
        CHECK(rep.nrows == 9, "%d rows, expected 2 measured and Table 1's 7", rep.nrows);
        /* columns are only appended: precision after ranks, then the configuration columns */
        static const char *const before[] = {"model", "tensor_parallel", "pipeline_parallel", "instances",
                                             "usd_per_hour", "seq_len", "global_batch", "seq_per_s", "tokens_per_usd",
                                             "tokens_per_s", "usd_per_1b_tokens", "scaling_efficiency", "mfu",
                                             "train_tokens", "train_days", "train_usd", "instance_type",
                                             "pricing_option", "source_kind", "source", "price_source", "mfu_peak",
                                             "ranks", "precision", "micro_batch", "recompute", "sharding", "vp",
                                             "sequence_parallel", "attention", "device"};
        CHECK(rep.ncols == (int)(sizeof before / sizeof before[0]), "report.csv has %d columns, expected %d", rep.ncols,
              (int)(sizeof before / sizeof before[0]));
        for (int c = 0; c < (int)(sizeof before / sizeof before[0]) && c < rep.ncols; c++)
            CHECK(strcmp(rep.header[c], before[c]) == 0, "report.csv column %d is '%s', expected '%s'", c + 1,
                  rep.header[c], before[c]);
        CHECK(strcmp(cell_str(&rep, 0, "precision"), "bf16-mixed") == 0, "row 1 precision '%s'",
              cell_str(&rep, 0, "precision"));
        CHECK(strcmp(cell_str(&rep, 1, "precision"), "fp32") == 0, "row 2 precision '%s'",
              cell_str(&rep, 1, "precision"));
        CHECK(cell_num(&rep, 0, "seq_per_s") == 2.0 && cell_num(&rep, 1, "seq_per_s") == 1.0,
              "both rows with their throughput");
        CHECK(strstr(cell_str(&rep, 0, "mfu_peak"), "bf16 matrix peak, 2000 GFLOP/s") != NULL,
              "bf16-mixed mfu_peak '%s'", cell_str(&rep, 0, "mfu_peak"));
        CHECK(strstr(cell_str(&rep, 1, "mfu_peak"), "fp32 FMA peak, 400 GFLOP/s") != NULL, "fp32 mfu_peak '%s'",
              cell_str(&rep, 1, "mfu_peak"));
        /* each is its own configuration: no scaling efficiency of one precision against the other */
        CHECK(cell_num(&rep, 0, "scaling_efficiency") == 1 && cell_num(&rep, 1, "scaling_efficiency") == 1,
              "scaling efficiency %g, %g", cell_num(&rep, 0, "scaling_efficiency"),
              cell_num(&rep, 1, "scaling_efficiency"));
        CHECK(strcmp(cell_str(&rep, 2, "precision"), "") == 0, "Table 1 gives no precision, got '%s'",
              cell_str(&rep, 2, "precision"));
        table_free(&rep);
    } else {
        CHECK(0, "no report.csv");
    }
    static char md[262144];
    snprintf(path, sizeof path, "%s/report.md", out);
    slurp(path, md, sizeof md);
    CHECK(strstr(md, "| Cost-throughput ratio (tokens/$) | Precision |") != NULL,
          "report.md lacks the Precision column");
    CHECK(strstr(md, "| bf16-mixed |") != NULL && strstr(md, "| fp32 |") != NULL,
          "report.md lacks the rows' precisions");
    CHECK(strstr(g_out, "precision") != NULL && strstr(g_out, "bf16-mixed") != NULL,
          "stdout lacks the precision column: %s", g_out);
    /* report.csv reads back as a throughput file, precisions included */
    char out2[128];
    snprintf(out2, sizeof out2, "%s/rep2", d);
    snprintf(path, sizeof path, "%s/report.csv", out);
    const char *again[] = {"report", "--throughput", path, "--out", out2, NULL};
    rc = run(again);
    CHECK(rc == 0, "report.csv read back: exit %d: %s", rc, g_err);
    /* the same precision twice is still a duplicate */
    write_text(tp, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s,"
                   "source,precision\n"
                   "pythia-70m,1,1,1,this machine,512,4,2.0,measured here,fp32\n"
                   "pythia-70m,1,1,1,this machine,512,4,1.0,measured here,fp32\n");
    rc = run(args);
    CHECK(rc == 1 && strstr(g_err, ":3: duplicates ") != NULL && strstr(g_err, "precision") != NULL,
          "same precision twice: exit %d: %s", rc, g_err);
    rm_tree(d);
}

/* The step model's closed forms. */
static void test_scale_closed_forms(void)
{
    scale_model s;
    test_scale_model(&s);
    scale_point p1, p4;
    CHECK(scale_check(&s, 1, "--nodes") == 0 && scale_check(&s, 4, "--nodes") == 0, "layouts");
    scale_eval(&s, 1, &p1);
    scale_eval(&s, 4, &p4);
    CHECK(p1.replicas == 1 && p1.micro_batches == 64 && fabs(p1.step_s - 32.0) < 1e-12 && p1.dp_s == 0,
          "1 node: 64 x 0.5 s, no all-reduce");
    double N = model_params_total(&s.cfg), ring = 2.0 * 3 / 4 * N * 2 / (800e9 / 8);
    CHECK(fabs(p4.dp_s / ring - 1) < 1e-12, "4 nodes: ring all-reduce %g s, expected 2(n-1)/n x bytes / bandwidth = %g",
          p4.dp_s, ring);
    CHECK(fabs(p4.step_s - (8.0 + ring)) < 1e-9, "4 nodes: compute 16 x 0.5 s plus the all-reduce");
    s.overlap = 1;
    scale_eval(&s, 4, &p4);
    CHECK(fabs(p4.exposed_s - fmax(0, ring - 2.0 / 3 * 0.5)) < 1e-12, "overlap hides under the last backward");
    s.overlap = 0;
    /* pipeline bubble: (p - 1) micro-batch times, (p - 1)/v interleaved */
    s.tp = 2, s.pp = 4;
    step_profile_fill(&s); /* a new layout: its step */
    scale_eval(&s, 1, &p1);
    CHECK(p1.micro_batches == 64 && fabs(p1.bubble_s - 3 * 0.5) < 1e-12, "bubble %g s, expected 3 x 0.5", p1.bubble_s);
    s.interleave = 3;
    step_profile_fill(&s);
    scale_eval(&s, 1, &p1);
    CHECK(fabs(p1.bubble_s - 0.5) < 1e-12, "interleaved bubble %g s, expected 0.5", p1.bubble_s);
    /* ZeRO shards the optimizer state: memory falls */
    s.interleave = 1, s.tp = 8, s.pp = 1;
    step_profile_fill(&s);
    scale_eval(&s, 4, &p4);
    double m0 = p4.mem_gib;
    s.zero = 1;
    scale_eval(&s, 4, &p4);
    CHECK(p4.mem_gib < m0, "ZeRO-1 memory %g GiB not below %g", p4.mem_gib, m0);
    capture_stderr_begin();
    int bad = scale_check(&s, 3, "--nodes");
    const char *msg = capture_stderr_end();
    CHECK(bad != 0 && strstr(msg, "does not split") != NULL, "64 sequences do not split over 3 replicas: %s", msg);
}

static void test_scale_table1(void)
{
    char *d = test_tmpdir(), csv[128], png[128];
    snprintf(csv, sizeof csv, "%s/neox.csv", d);
    snprintf(png, sizeof png, "%s/neox.png", d);
    const char *a1[] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4",
                        "--seq", "2048", "--global-batch", "16384", "--base-nodes", "4", "--base-seq-per-s", "13.6",
                        "--nodes", "4,8,16,32,64", "--pricing", "reserved_3y", "--compare", g_table1, "--csv", csv,
                        "--plot", png, NULL};
    int rc = run(a1);
    CHECK(rc == 0, "scale neox-20b: exit %d: %s", rc, g_err);
    table t;
    if (rc == 0 && table_load(&t, csv) == 0) {
        CHECK(t.nrows == 5, "%d rows", t.nrows);
        for (int i = 1; i < t.nrows; i++) {
            double err = cell_num(&t, i, "error_pct");
            CHECK(isfinite(err) && fabs(err) <= 10, "neox-20b at %.0f nodes: error %.1f%%, target within 10%%",
                  cell_num(&t, i, "nodes"), err);
        }
        CHECK(cell_num(&t, 0, "tokens_per_usd") == 3302704, "4-node tokens/$ %.0f", cell_num(&t, 0, "tokens_per_usd"));
        CHECK(strncmp(cell_str(&t, 0, "source"), "predicted", 9) == 0, "source '%s'", cell_str(&t, 0, "source"));
        table_free(&t);
    }
    CHECK(access(png, R_OK) == 0, "no plot");
    snprintf(csv, sizeof csv, "%s/pythia.csv", d);
    const char *a2[] = {"scale", "--model", "pythia-6.9b", "--instance", "trn1.32xlarge", "--tp", "8", "--seq", "2048",
                        "--global-batch", "256", "--base-nodes", "1", "--base-seq-per-s", "10.4", "--nodes", "1,4",
                        "--compare", g_table1, "--csv", csv, NULL};
    rc = run(a2);
    CHECK(rc == 0, "scale pythia-6.9b: exit %d: %s", rc, g_err);
    if (rc == 0 && table_load(&t, csv) == 0) {
        double err = cell_num(&t, 1, "error_pct");
        CHECK(isfinite(err) && fabs(err) <= 15, "pythia-6.9b at 4 nodes: error %.1f%%, target within 15%%", err);
        table_free(&t);
    }
    /* a fit to all five NeoX-20B points, and the predictions fed back into the report */
    snprintf(csv, sizeof csv, "%s/fit.csv", d);
    const char *a3[] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4",
                        "--global-batch", "16384", "--measured", g_table1, "--nodes", "4,8,16,32,64,128", "--csv", csv,
                        NULL};
    rc = run(a3);
    CHECK(rc == 0 && strstr(g_out, "fitted to 5 points") != NULL, "fit: exit %d: %s%s", rc, g_out, g_err);
    char out[128];
    snprintf(out, sizeof out, "%s/rep", d);
    const char *a4[] = {"report", "--throughput", g_table1, "--throughput", csv, "--pricing", "reserved_3y", "--out",
                        out, NULL};
    rc = run(a4);
    CHECK(rc == 0 && strstr(g_out, "predicted") != NULL, "report with predictions: exit %d: %s", rc, g_err);
    rm_tree(d);
}

typedef struct {
    const char *file;    /* contents of the bad file (NULL: none) */
    const char *args[24]; /* "@" is replaced by the bad file's path */
    const char *expect;
} bad_case;

/* Runs each case (its file written first) and expects one error line naming what is wrong, exit 1
 * or 2, and no report left behind. */
static void run_bad_cases(const bad_case *cases, size_t n)
{
    char *d = test_tmpdir(), bad[128];
    snprintf(bad, sizeof bad, "%s/bad.csv", d);
    for (size_t i = 0; i < n; i++) {
        const char *args[26];
        int a = 0;
        char out[128];
        snprintf(out, sizeof out, "%s/rep", d);
        if (cases[i].file) write_text(bad, cases[i].file);
        for (; cases[i].args[a]; a++) args[a] = strcmp(cases[i].args[a], "@") == 0 ? bad : cases[i].args[a];
        if (strcmp(args[0], "report") == 0) args[a++] = "--out", args[a++] = out;
        args[a] = NULL;
        int rc = run(args);
        char cmd[512] = "";
        for (int k = 0; args[k]; k++) snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " %s", args[k]);
        CHECK(rc == 1 || rc == 2, "costbench%s: exit %d, expected 1 or 2", cmd, rc);
        CHECK(strstr(g_err, cases[i].expect) != NULL, "costbench%s: expected '%s' in stderr: %s", cmd, cases[i].expect,
              g_err);
        CHECK(strncmp(g_err, "error: ", 7) == 0 && strstr(g_err + 1, "\nerror: ") == NULL,
              "costbench%s: expected exactly one leading 'error:' line: %s", cmd, g_err);
        CHECK(access(out, F_OK) != 0, "costbench%s: a failed report left %s behind", cmd, out);
    }
    rm_tree(d);
}

static void test_report_bad_files(void)
{
    static const char prices_hdr[] = "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n";
    static const char tput_hdr[] =
        "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n";
    static char f1[512], f2[512], f3[512], f4[512], f5[512], f6[512], f7[512], f8[512], f9[512], f10[512];
    snprintf(f1, sizeof f1, "%saws,trn1.32xlarge,us-east-1,on_demand,,2024,x\n", prices_hdr);
    snprintf(f2, sizeof f2, "%saws,trn1.32xlarge,us-east-1,on_demand,n/a,2024,x\n", prices_hdr);
    snprintf(f3, sizeof f3, "%sneox-21b,8,4,4,trn1.32xlarge,2048,16384,13.6\n", tput_hdr);
    snprintf(f4, sizeof f4, "%sneox-20b,8,4,4,trn9.huge,2048,16384,13.6\n", tput_hdr);
    snprintf(
        f5, sizeof f5,
        "model,tensor_parallel,instances,instance_type,seq_len,global_batch\nneox-20b,8,4,trn1.32xlarge,2048,16384\n");
    snprintf(f6, sizeof f6,
             "%sneox-20b,8,4,4,trn1.32xlarge,2048,16384,13.6\nneox-20b,8,4,4,trn1.32xlarge,2048,16384,13.7\n",
             tput_hdr);
    snprintf(f7, sizeof f7, "%sneox-20b,8,4,4,trn1.32xlarge,2048,16384,-13.6\n", tput_hdr);
    snprintf(f8, sizeof f8, "%sneox-20b,8,4,-4,trn1.32xlarge,2048,16384,13.6\n", tput_hdr);
    snprintf(f9, sizeof f9,
             "model,instances,instance_type,seq_len,global_batch,seq_per_s,precision\n"
             "neox-20b,4,trn1.32xlarge,2048,16384,13.6,bf16-sr\nneox-20b,8,trn1.32xlarge,2048,16384,26.8,BF16\n");
    snprintf(
        f10, sizeof f10, "%sneox-20b,8,4,4,trn1.32xlarge,2048,16384,13.6,fp32\n",
        "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s,precision\n");
    const bad_case cases[] = {
        {f1, {"report", "--throughput", g_table1, "--prices", "@"}, ":2: column 'usd_per_hour': expected a number"},
        {f2, {"report", "--throughput", g_table1, "--prices", "@"}, ":2: column 'usd_per_hour': expected a number"},
        {f3, {"report", "--throughput", "@"}, ":2: column 'model': unknown model 'neox-21b'"},
        {f4, {"report", "--throughput", "@"}, ":2: column 'instance_type': unknown instance type 'trn9.huge'"},
        {f5, {"report", "--throughput", "@"}, ":1: missing column 'seq_per_s'"},
        {f6, {"report", "--throughput", "@"}, ":3: duplicates "},
        {f7, {"report", "--throughput", "@"}, ":2: column 'seq_per_s'"},
        {f8, {"report", "--throughput", "@"}, ":2: column 'instances'"},
        {f9,
         {"report", "--throughput", "@"},
         ":3: column 'precision': expected one of fp32, bf16-mixed, bf16-sr, bf16-nearest, "
         "fp16-mixed, fp8 (aliases: bf16 = bf16-sr, mixed = bf16-mixed), or empty, got 'BF16'"},
        {f10,
         {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4", "--global-batch",
          "16384", "--measured", "@"},
         "in bf16-mixed precision"},
    };
    run_bad_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_report_bad_flags(void)
{
    const bad_case cases[] = {
        {NULL, {"report"}, "flag '--throughput' is required"},
        {NULL, {"report", "--throughput", g_table1, "--pricing", "cheap"}, "flag '--pricing'"},
        {NULL, {"report", "--throughput", g_table1, "--tokens", "-5"}, "flag '--tokens'"},
        {NULL, {"report", "--throughput", g_table1, "--instance", "c99.nano"}, "unknown instance type 'c99.nano'"},
        {NULL, {"report", "--throughput", "/nonexistent.csv"}, "/nonexistent.csv"},
        {NULL,
         {"scale", "--model", "neox-20b", "--instance", "trn9.huge", "--global-batch", "16"},
         "unknown instance type 'trn9.huge'"},
        {NULL,
         {"scale", "--model", "neox-21b", "--instance", "trn1.32xlarge", "--global-batch", "16"},
         "unknown model preset 'neox-21b'"},
        {NULL,
         {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4", "--global-batch",
          "16384", "--nodes", "0"},
         "flag '--nodes'"},
        {NULL,
         {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "24", "--global-batch", "16384",
          "--nodes", "1"},
         "flag '--tp'"},
        {NULL,
         {"scale", "--model", "neox-20b", "--instance", "p4d.24xlarge", "--tp", "16", "--global-batch", "16384",
          "--nodes", "1,3"},
         "not a multiple of tp x pp"},
        {NULL,
         {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--global-batch", "100", "--nodes", "1"},
         "does not split"},
        {NULL,
         {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--global-batch", "16", "--batch-per-device",
          "1"},
         "exactly one of"},
        {NULL,
         {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--global-batch", "16384", "--base-nodes",
          "4"},
         "go together"},
        {NULL,
         {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--global-batch", "16384", "--base-nodes", "4",
          "--base-seq-per-s", "-1"},
         "flag '--base-seq-per-s'"},
        {NULL,
         {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--global-batch", "16384",
          "--measured", g_table1},
         "no row matches"},
        {NULL,
         {"scale", "--model", "neox-20b", "--instance", "g5.48xlarge", "--global-batch", "16384", "--nodes", "1"},
         "no BF16 peak"},
    };
    run_bad_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_report_atomic(void)
{
    char *d = test_tmpdir(), out[128], path[256], bad[128];
    snprintf(out, sizeof out, "%s/rep", d);
    const char *a1[] = {"report", "--throughput", g_table1, "--out", out, NULL};
    CHECK(run(a1) == 0, "first report: %s", g_err);
    static char before[262144], after[262144];
    snprintf(path, sizeof path, "%s/report.md", out);
    slurp(path, before, sizeof before);
    snprintf(bad, sizeof bad, "%s/bad.csv", d);
    write_text(bad, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n"
                    "neox-20b,8,4,4,trn1.32xlarge,2048,16384,oops\n");
    const char *a2[] = {"report", "--throughput", g_table1, "--throughput", bad, "--out", out, NULL};
    CHECK(run(a2) == 1, "bad second report: exit should be 1: %s", g_err);
    slurp(path, after, sizeof after);
    CHECK(before[0] && strcmp(before, after) == 0, "the earlier report changed after a failed run");
    char cmd[256], listing[4096] = "";
    snprintf(cmd, sizeof cmd, "ls -a '%s'", d);
    FILE *p = popen(cmd, "r");
    if (p) {
        size_t k = fread(listing, 1, sizeof listing - 1, p);
        listing[k] = '\0';
        pclose(p);
    }
    CHECK(strstr(listing, ".tmp.") == NULL && strstr(listing, ".old.") == NULL, "temporary directories left: %s",
          listing);
    /* a directory that is not a report is never replaced */
    char other[128];
    snprintf(other, sizeof other, "%s/mine", d);
    mkdir(other, 0755);
    snprintf(path, sizeof path, "%s/keep.txt", other);
    write_text(path, "precious\n");
    const char *a3[] = {"report", "--throughput", g_table1, "--out", other, NULL};
    CHECK(run(a3) == 2 && strstr(g_err, "not a costbench report directory") != NULL,
          "--out over a foreign directory: %s", g_err);
    CHECK(access(path, R_OK) == 0, "a foreign directory lost its file");
    /* a second good run replaces the first */
    CHECK(run(a1) == 0, "second report: %s", g_err);
    rm_tree(d);
}

const test_case tests_report[] = {
    {"report: Table 1 tokens/$ reproduced exactly", test_report_table1},
    {"report: pricing options side by side, token budget", test_report_pricing_options},
    {"report: rows measured on this machine are priced by --instance or --usd-per-hour", test_report_this_machine},
    {"report: fp32 and bf16-mixed rows side by side, each with its precision and its peak", test_report_precision},
    {"scale: closed forms (ring all-reduce, bubble, overlap, ZeRO)", test_scale_closed_forms},
    {"scale: Table 1 from one point (NeoX-20B within 10%, Pythia-6.9B within 15%)", test_scale_table1},
    {"report/scale: bad files give one file:line error, exit 1 or 2, no report", test_report_bad_files},
    {"report/scale: bad flags give one error naming the flag, exit 1 or 2, no report", test_report_bad_flags},
    {"report: a failed run leaves the earlier report; foreign directories are refused", test_report_atomic},
    {NULL, NULL},
};
