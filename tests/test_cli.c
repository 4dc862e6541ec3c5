/* The command line: bad input gives one clear error line and exit 2; the benchmarks run and
 * write the CSV columns and files they promise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "check.h"

static char g_out[65536], g_err[16384];

static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

static int count_lines_starting(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *p = text; p && *p;) {
        if (strncmp(p, prefix, strlen(prefix)) == 0) n++;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return n;
}

typedef struct {
    const char *args[12];
    const char *expect;
} bad_case;

static void test_cli_bad_input(void)
{
    static const bad_case cases[] = {
        {{"bogus"}, "unknown command 'bogus'"},
        {{"matmul", "--n", "abc"}, "flag '--n': expected an integer"},
        {{"matmul", "--n", "0"}, "flag '--n': expected an integer from 1"},
        {{"matmul", "--n", "-5"}, "flag '--n'"},
        {{"matmul", "--k", "999999999"}, "flag '--k'"},
        {{"matmul", "--n", "4096", "--k", "4096", "--budget-s", "1e400"}, "flag '--budget-s'"},
        {{"matmul", "--frobnicate"}, "unknown flag '--frobnicate'"},
        {{"matmul", "--model", "pythia-7b"}, "unknown model preset 'pythia-7b'"},
        {{"matmul", "--shapes", "transformer"}, "needs '--model PRESET'"},
        {{"matmul", "--shapes", "diagonal"}, "flag '--shapes'"},
        {{"matmul", "--model", "pythia-70m", "--seq", "4096"}, "exceeds pythia-70m's max_seq_len 2048"},
        {{"matmul", "--n", "1048576", "--k", "131072"}, "exceeds 2^31-1 elements"},
        {{"matmul", "--n", "53000", "--k", "40000"}, "GiB available"},
        {{"matmul", "--plot", "out.jpg"}, "flag '--plot'"},
        {{"matmul", "--blas-core", "Bogus"}, "flag '--blas-core'"},
        {{"rope", "--model", "nope"}, "unknown model preset 'nope'"},
        {{"rope", "--model", "gpt3-125m"}, "no rotary embedding"},
        {{"rope", "--tokens", "0"}, "flag '--tokens'"},
        {{"rope", "--tokens", "1000", "--seq", "300"}, "not a multiple of --seq 300"},
        {{"rope", "--model", "neox-20b", "--tokens", "16777216"}, "GiB available"},
        {{"rope", "--min-time", "nan"}, "flag '--min-time'"},
        {{"rope", "--cache", "lukewarm"}, "flag '--cache': expected cold or warm"},
        {{"peak", "--array-mib", "-1"}, "flag '--array-mib'"},
        {{"models", "extra"}, "unexpected argument 'extra'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run(cases[i].args);
        char cmd[256] = "";
        for (int a = 0; cases[i].args[a]; a++) {
            strcat(cmd, " ");
            strcat(cmd, cases[i].args[a]);
        }
        CHECK(rc == 2, "costbench%s: exit %d, expected 2 (stderr: %s)", cmd, rc, g_err);
        CHECK(strstr(g_err, cases[i].expect) != NULL, "costbench%s: expected '%s' in stderr: %s", cmd, cases[i].expect,
              g_err);
        CHECK(count_lines_starting(g_err, "error: ") == 1 && strncmp(g_err, "error: ", 7) == 0,
              "costbench%s: expected exactly one leading 'error:' line: %s", cmd, g_err);
    }
}

static void test_cli_help(void)
{
    const char *a1[] = {"help", NULL}, *a2[] = {"matmul", "--help", NULL}, *a3[] = {NULL},
               *a4[] = {"help", "rope", NULL};
    CHECK(run(a1) == 0 && strstr(g_out, "usage: costbench <command>"), "costbench help");
    CHECK(run(a2) == 0 && strstr(g_out, "usage: costbench matmul") && strstr(g_out, "--plot"),
          "costbench matmul --help");
    CHECK(run(a3) == 2 && strstr(g_err, "usage: costbench"), "costbench without a command: usage on stderr, exit 2");
    CHECK(run(a4) == 0 && strstr(g_out, "--tokens"), "costbench help rope");
}

static int load_csv(table *t, const char *path, const char *const *cols)
{
    if (table_load(t, path) != 0) return 0;
    for (int i = 0; cols[i]; i++)
        if (table_col(t, cols[i], 0) < 0) {
            printf("    %s: no column '%s'\n", path, cols[i]);
            table_free(t);
            return 0;
        }
    return 1;
}

static int column_has(const table *t, const char *col, const char *value)
{
    int c = table_col(t, col, 0);
    for (int i = 0; c >= 0 && i < t->nrows; i++)
        if (strcmp(table_cell(t, i, c), value) == 0) return 1;
    return 0;
}

static void test_cli_matmul_runs(void)
{
    const char *csv = test_path("matmul.csv"), *png = test_path("matmul.png");
    unlink(csv);
    unlink(png);
    const char *args[] = {"matmul", "--n", "64,128", "--k", "64,96", "--min-time", "0.01", "--peak-gflops", "100",
                          "--csv", csv, "--plot", png, NULL};
    int rc = run(args);
    CHECK(rc == 0, "matmul sweep: exit %d: %s", rc, g_err);
    CHECK(strstr(g_out, "gflops_median") && strstr(g_out, "[GFLOP/s]"), "table with a units row: %s", g_out);
    table t;
    const char *cols[] = {"n", "k", "m", "gflops_median", "gflops_min", "gflops_max", "pct_of_peak", "cpu_model",
                          "blas_core", "git_rev", "date_utc", NULL};
    if (load_csv(&t, csv, cols)) {
        CHECK(t.nrows == 4, "rows %d, expected 4", t.nrows);
        table_free(&t);
    } else {
        CHECK(0, "matmul CSV missing or without its columns");
    }
    unsigned char sig[8] = {0};
    FILE *f = fopen(png, "rb");
    if (f) {
        CHECK(fread(sig, 1, 8, f) == 8, "short PNG");
        fclose(f);
    }
    CHECK(memcmp(sig, "\x89PNG\r\n\x1a\n", 8) == 0, "no PNG written at %s", png);
    /* transformer shapes of a preset */
    const char *args2[] = {"matmul", "--model", "pythia-14m", "--micro-batch", "1", "--seq", "64", "--min-time", "0.01",
                           "--peak-gflops", "100", "--csv", csv, NULL};
    rc = run(args2);
    CHECK(rc == 0, "matmul transformer: exit %d: %s", rc, g_err);
    const char *cols2[] = {"op", "phase", "count", "step_ms", NULL};
    if (load_csv(&t, csv, cols2)) {
        CHECK(t.nrows == 15, "rows %d, expected 15", t.nrows);
        CHECK(column_has(&t, "op", "qkv") && column_has(&t, "op", "logits") && !column_has(&t, "op", "attn_scores") &&
                  column_has(&t, "phase", "bwd_weight"),
              "transformer ops missing");
        table_free(&t);
    } else {
        CHECK(0, "transformer CSV missing or without its columns");
    }
    CHECK(strstr(g_out, "one training step's matmuls"), "no step total: %s", g_out);
    unlink(csv);
    unlink(png);
}

static void test_cli_rope_runs(void)
{
    const char *csv = test_path("rope.csv");
    const char *args[] = {"rope", "--model", "pythia-14m,pythia-160m", "--tokens", "256", "--seq", "128", "--min-time",
                          "0.01", "--copy-gbps", "10", "--csv", csv, NULL};
    int rc = run(args);
    CHECK(rc == 0, "rope: exit %d: %s", rc, g_err);
    table t;
    const char *cols[] = {"model", "variant", "direction", "cache", "tokens", "ns_per_token_median", "gbps_median",
                          "pct_of_copy_bw", "speedup_vs_reference", NULL};
    if (load_csv(&t, csv, cols)) {
        CHECK(t.nrows == 12, "rows %d, expected 12", t.nrows);
        CHECK(column_has(&t, "cache", "cold"), "the default is not a cold cache");
        CHECK(column_has(&t, "variant", "reference") && column_has(&t, "variant", "zero_freq") &&
                  column_has(&t, "variant", "fused") && column_has(&t, "direction", "backward"),
              "variants or directions missing");
        table_free(&t);
    } else {
        CHECK(0, "rope CSV missing or without its columns");
    }
    unlink(csv);
}

static void test_cli_peak_runs(void)
{
    const char *csv = test_path("peak.csv");
    const char *args[] = {"peak", "--no-sgemm", "--array-mib", "8", "--min-time", "0.01", "--csv", csv, NULL};
    int rc = run(args);
    CHECK(rc == 0, "peak: exit %d: %s", rc, g_err);
    table t;
    const char *cols[] = {"probe", "threads", "gflops_median", "gbps_median", NULL};
    if (load_csv(&t, csv, cols)) {
        CHECK(column_has(&t, "probe", "fp32_fma") && column_has(&t, "probe", "copy") &&
                  column_has(&t, "probe", "triad"),
              "probes missing");
        table_free(&t);
    } else {
        CHECK(0, "peak CSV missing or without its columns");
    }
    unlink(csv);
}

static void test_cli_failed_run_keeps_csv(void)
{
    const char *csv = test_path("keep.csv");
    FILE *f = fopen(csv, "w");
    fputs("previous results\n", f);
    fclose(f);
    const char *args[] = {"matmul", "--n", "abc", "--csv", csv, NULL};
    CHECK(run(args) == 2, "bad flag did not exit 2");
    char buf[64];
    slurp(csv, buf, sizeof buf);
    CHECK(strcmp(buf, "previous results\n") == 0, "an earlier CSV was overwritten by a failed run");
    unlink(csv);
}

const test_case tests_cli[] = {
    {"cli: bad input gives one error line and exit 2", test_cli_bad_input},
    {"cli: help and usage", test_cli_help},
    {"cli: matmul sweep and transformer shapes write CSV and PNG", test_cli_matmul_runs},
    {"cli: rope writes its columns for every variant and direction", test_cli_rope_runs},
    {"cli: peak writes its probes", test_cli_peak_runs},
    {"cli: a failed run leaves an earlier CSV intact", test_cli_failed_run_keeps_csv},
    {NULL, NULL},
};
