/* The shared layer: strict parsing, the CSV loader's file:line errors, the writer's round
 * trip, statistics, and the model presets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/opts.h"
#include "../common/parse.h"
#include "../common/record.h"
#include "../common/stats.h"
#include "../common/presets.h"
#include "check.h"
#include "../common/files.h"

static void test_parse_numbers(void)
{
    long v = 0;
    double d = 0;
    capture_stderr_begin();
    int ok1 = parse_long("4096", 1, 1 << 20, 0, "flag '--n'", &v);
    int bad1 = parse_long("abc", 1, 100, 0, "flag '--n'", &v);
    int bad2 = parse_long("0", 1, 100, 0, "flag '--n'", &v);
    int bad3 = parse_long("-5", 1, 100, 0, "flag '--n'", &v);
    int bad4 = parse_long("99999999999999999999", 1, 100, 0, "flag '--n'", &v);
    int bad5 = parse_long("12x", 1, 100, 0, "flag '--n'", &v);
    int bad6 = parse_double("nan", 0, 1, "x", &d);
    int bad7 = parse_double("inf", 0, 1e300, "x", &d);
    int bad8 = parse_double("", 0, 1, "x", &d);
    const char *err = capture_stderr_end();
    CHECK(ok1 == 0, "4096 refused");
    CHECK(bad1 == CB_EUSAGE && bad2 == CB_EUSAGE && bad3 == CB_EUSAGE && bad4 == CB_EUSAGE && bad5 == CB_EUSAGE,
          "bad integers accepted: %d %d %d %d %d", bad1, bad2, bad3, bad4, bad5);
    CHECK(bad6 == CB_EUSAGE && bad7 == CB_EUSAGE && bad8 == CB_EUSAGE, "nan, inf or empty accepted");
    CHECK(strstr(err, "error: flag '--n': expected an integer from 1 to 100, got 'abc'") != NULL, "message: %s", err);
    CHECK(parse_long("300B", 1, (long)1e15, 1, "x", &v) == 0 && v == 300000000000L, "300B -> %ld", v);
    CHECK(parse_long("4Ki", 1, 1 << 20, 1, "x", &v) == 0 && v == 4096, "4Ki -> %ld", v);
    CHECK(parse_long("1.5M", 1, (long)1e9, 1, "x", &v) == 0 && v == 1500000, "1.5M -> %ld", v);
    long list[8];
    CHECK(parse_long_list("512,1024,2048", 1, 1 << 20, 0, "x", list, 8) == 3 && list[2] == 2048, "list parse");
    capture_stderr_begin();
    int badl = parse_long_list("512,,x", 1, 1 << 20, 0, "x", list, 8);
    capture_stderr_end();
    CHECK(badl == CB_EUSAGE, "a list with 'x' accepted");
}

static void test_opts(void)
{
    long n = 1;
    double t = 0.5;
    int flag = 0;
    const char *s = NULL;
    const opt_spec specs[] = {
        {"n", OPT_LONG, &n, 1, 100, 0, 0, "N", "n"},
        {"time", OPT_DOUBLE, &t, 0, 0, 0.0, 10.0, "S", "t"},
        {"flag", OPT_FLAG, &flag, 0, 0, 0, 0, NULL, "f"},
        {"name", OPT_STR, &s, 0, 0, 0, 0, "X", "s"},
        {0},
    };
    char *argv1[] = {"costbench", "x", "--n", "7", "--time=2.5", "--flag", "--name", "abc", NULL};
    CHECK(opts_parse("x", NULL, specs, 8, argv1, 2, NULL, NULL) == 0, "valid flags refused");
    CHECK(n == 7 && t == 2.5 && flag == 1 && s && strcmp(s, "abc") == 0, "values not stored");
    char *argv0[] = {"costbench", "x", "--n", "9", NULL};
    CHECK(opts_parse("x", NULL, specs, 4, argv0, 2, NULL, NULL) == 0 && n == 9 && t == 2.5 && flag == 1,
          "flags not given changed");
    char *argv2[] = {"costbench", "x", "--bogus", NULL};
    char *argv3[] = {"costbench", "x", "--n", NULL};
    char *argv4[] = {"costbench", "x", "--n", "101", NULL};
    char *argv5[] = {"costbench", "x", "stray", NULL};
    capture_stderr_begin();
    int r2 = opts_parse("x", NULL, specs, 3, argv2, 2, NULL, NULL);
    int r3 = opts_parse("x", NULL, specs, 3, argv3, 2, NULL, NULL);
    int r4 = opts_parse("x", NULL, specs, 4, argv4, 2, NULL, NULL);
    int r5 = opts_parse("x", NULL, specs, 3, argv5, 2, NULL, NULL);
    const char *err = capture_stderr_end();
    CHECK(r2 == CB_EUSAGE && r3 == CB_EUSAGE && r4 == CB_EUSAGE && r5 == CB_EUSAGE, "bad flags accepted: %d %d %d %d",
          r2, r3, r4, r5);
    CHECK(strstr(err, "unknown flag '--bogus'") != NULL, "message: %s", err);
}

static void test_csv_loader_good(void)
{
    const char *p = test_path("good.csv");
    write_text(p, "# a comment\nname,value,text\n\nalpha,1.5,\"with, comma\"\n# another\nbeta,2,\"multi\nline\"\n");
    table t;
    CHECK(table_load(&t, p) == 0, "a valid CSV was refused");
    CHECK(t.nrows == 2 && t.ncols == 3, "rows %d cols %d", t.nrows, t.ncols);
    if (t.nrows == 2) {
        CHECK(strcmp(table_cell(&t, 0, 2), "with, comma") == 0, "quoted field: '%s'", table_cell(&t, 0, 2));
        CHECK(t.lines[0] == 4 && t.lines[1] == 6, "line numbers %d %d", t.lines[0], t.lines[1]);
        double v;
        CHECK(table_get_double(&t, 1, table_col(&t, "value", 1), 0, 10, &v) == 0 && v == 2.0, "typed access");
    }
    table_free(&t);
    unlink(p);
}

static void expect_load_error(const char *text, const char *expect)
{
    const char *p = test_path("bad.csv");
    write_text(p, text);
    table t;
    capture_stderr_begin();
    int rc = table_load(&t, p);
    const char *err = capture_stderr_end();
    CHECK(rc == CB_EFAIL, "malformed CSV accepted: %s", text);
    CHECK(strstr(err, expect) != NULL, "expected '%s' in: %s", expect, err);
    CHECK(strchr(err, '\n') == err + strlen(err) - 1, "more than one line: %s", err);
    unlink(p);
}

static void test_csv_loader_errors(void)
{
    expect_load_error("a,b\n1,2\n3\n", "/bad.csv:3: expected 2 fields (as the header), got 1");
    expect_load_error("a,b\n1,\"2\n", "/bad.csv:2: malformed CSV");
    expect_load_error("a,b\n1,\"2\"x\n", "/bad.csv:2: malformed CSV");
    expect_load_error("", "empty file");
    expect_load_error("a,a\n1,2\n", "column 'a' appears twice");
    /* typed access errors name file:line and column */
    const char *p = test_path("typed.csv");
    write_text(p, "model,usd_per_hour\nx,n/a\n");
    table t;
    table_load(&t, p);
    double v;
    capture_stderr_begin();
    int rc = table_get_double(&t, 0, 1, 0, 1e6, &v);
    int miss = table_col(&t, "nope", 1);
    const char *err = capture_stderr_end();
    CHECK(rc != 0 && miss < 0, "bad number or missing column accepted");
    CHECK(strstr(err,
                 "/typed.csv:2: column 'usd_per_hour': expected a number from 0 to 1e+06, got 'n/a'") !=
              NULL,
          "message: %s", err);
    CHECK(strstr(err, "missing column 'nope'") != NULL, "message: %s", err);
    table_free(&t);
    unlink(p);
}

static void test_record_csv_roundtrip(void)
{
    static const rec_col cols[] = {{"probe", "", REC_STR, 0}, {"gflops_median", "GFLOP/s", REC_NUM, 1}};
    record r;
    record_init(&r, cols, 2);
    int row = record_add_row(&r);
    record_str(&r, row, 0, "fp32, \"fma\"");
    record_num(&r, row, 1, 123.456789012);
    row = record_add_row(&r);
    record_str(&r, row, 0, "copy");
    machine_info m;
    machine_probe(&m);
    const char *p = test_path("record.csv");
    CHECK(record_write_csv(&r, p, &m) == 0, "write failed");
    table t;
    CHECK(table_load(&t, p) == 0, "written CSV does not load");
    if (t.nrows == 2) {
        CHECK(strcmp(table_cell(&t, 0, 0), "fp32, \"fma\"") == 0, "quoted cell: %s", table_cell(&t, 0, 0));
        CHECK(strcmp(table_cell(&t, 0, 1), "123.456789") == 0, "%%.9g cell: %s", table_cell(&t, 0, 1));
        CHECK(table_cell(&t, 1, 1)[0] == '\0', "unknown value is not an empty cell");
        CHECK(table_col(&t, "cpu_model", 0) >= 0 && table_col(&t, "git_rev", 0) >= 0 &&
                  table_col(&t, "blas_core", 0) >= 0 && table_col(&t, "date_utc", 0) >= 0 &&
                  table_col(&t, "cflags", 0) >= 0,
              "machine metadata columns missing");
    } else {
        CHECK(0, "rows: %d", t.nrows);
    }
    table_free(&t);
    /* a failed write leaves the previous file intact */
    capture_stderr_begin();
    int bad = record_write_csv(&r, "/nonexistent-dir/x.csv", &m);
    capture_stderr_end();
    CHECK(bad != 0, "writing into a missing directory succeeded");
    record_free(&r);
    unlink(p);
}

static void test_stats(void)
{
    double x[5] = {5, 1, 4, 2, 3};
    stats_summary s;
    stats_summarize(x, 5, &s);
    CHECK(s.median == 3 && s.min == 1 && s.max == 5 && s.mean == 3, "median %g min %g max %g mean %g", s.median, s.min,
          s.max, s.mean);
    CHECK(fabs(s.cv_pct - 100.0 * sqrt(2.5) / 3) < 1e-9, "cv %g", s.cv_pct);
    double y[4] = {4, 1, 3, 2};
    stats_summarize(y, 4, &s);
    CHECK(s.median == 2.5, "even-count median %g", s.median);
}

static void test_model_presets(void)
{
    char path[CB_PATH_MAX];
    machine_data_file(path, sizeof path, "models.csv");
    model_config *all;
    int n;
    CHECK(model_presets_load(path, &all, &n) == 0, "data/models.csv does not load");
    const char *need[] = {"pythia-14m", "pythia-70m", "pythia-160m", "pythia-410m", "pythia-1b", "pythia-1.4b",
                          "pythia-2.8b", "pythia-6.9b", "pythia-12b", "neox-20b", "gpt3-125m", "gpt3-350m",
                          "gpt3-760m", "gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        model_config c;
        CHECK(model_preset_find(need[i], &c) == 0, "preset %s missing", need[i]);
    }
    model_config c;
    model_preset_find("neox-20b", &c);
    CHECK(c.L == 44 && c.C == 6144 && c.NH == 64 && c.HS == 96 && c.V == 50432 && c.rotary_pct == 0.25 &&
              c.parallel_residual && !c.tied_embeddings,
          "neox-20b fields");
    model_preset_find("pythia-70m", &c);
    CHECK(c.L == 6 && c.C == 512 && c.NH == 8 && c.V == 50304, "pythia-70m fields");
    model_preset_find("gpt3-1.3b", &c);
    CHECK(c.pos == POS_LEARNED && !c.parallel_residual && c.tied_embeddings && c.C == 2048 && c.L == 24,
          "gpt3-1.3b fields");
    capture_stderr_begin();
    int unk = model_preset_find("pythia-7b", &c);
    const char *err = capture_stderr_end();
    CHECK(unk == CB_EUSAGE && strstr(err, "unknown model preset 'pythia-7b'") && strstr(err, "hint: known presets:"),
          "unknown preset: %d %s", unk, err);
    free(all);
    /* a broken presets file names its line and column */
    const char *p = test_path("models.csv");
    write_text(p, "name,family,layers,d_model,heads,vocab,rotary_pct,rotary_base,parallel_residual,tied_embeddings,pos_"
                  "emb,max_seq_len,source\n"
                  "ok,pythia,6,512,8,50304,0.25,10000,true,false,rotary,2048,x\n"
                  "bad,pythia,6,500,8,50304,0.25,10000,true,false,rotary,2048,x\n");
    capture_stderr_begin();
    int rc = model_presets_load(p, &all, &n);
    err = capture_stderr_end();
    CHECK(rc != 0 &&
              strstr(err, "/models.csv:3: column 'heads': d_model 500 is not a multiple of 8 heads"),
          "message: %s", err);
    unlink(p);
}

const test_case tests_common[] = {
    {"parse: strict integers and numbers, suffixes, lists", test_parse_numbers},
    {"opts: flags, values, unknown and bad flags", test_opts},
    {"csv: loads quoted fields, comments, multi-line cells with line numbers", test_csv_loader_good},
    {"csv: malformed input gives one file:line error", test_csv_loader_errors},
    {"record: CSV round trip with metadata, failed write", test_record_csv_roundtrip},
    {"stats: median, min, max, cv", test_stats},
    {"models: presets load with the right fields, bad rows name file:line", test_model_presets},
    {NULL, NULL},
};
