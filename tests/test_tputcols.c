/* The throughput format's configuration columns (recompute, sharding, vp, sequence_parallel,
 * attention, device; micro_batch): costbench train's summary and scale --csv write them,
 * throughput_load reads and checks them, rows that differ only in them are two rows, a bad value
 * is one error naming file:line and the column, and files without them keep their meaning. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/csvio.h"
#include "../common/schema.h"
#include "../report/formats/inputs.h"
#include "check.h"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

/* The throughput format's key columns, then the configuration ones. */
#define HEAD \
    "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s,usd_per_hour,"
#define CFG_HEAD "micro_batch,recompute,sharding,vp,sequence_parallel,attention,device\n"
#define KEY "neox-20b,8,4,4,trn1.32xlarge,2048,1024,13.6,30.36,"

/* Column `name` of row `row` of a loaded CSV ("" when absent). */
static const char *cell(const table *t, int row, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->header[i], name) == 0) return table_cell(t, row, i);
    return "";
}

/* Loads path into a fresh set with stderr captured; returns throughput_load's result. */
static int load(const char *path, tput_set *set, const char **msg)
{
    memset(set, 0, sizeof *set);
    capture_stderr_begin();
    int rc = throughput_load(set, path);
    *msg = capture_stderr_end();
    return rc;
}

/* A tiny training run writing its summary to sum (extra flags, NULL-terminated, after). */
static int tiny_train(const char *sum, const char *extra)
{
    const char *args[] = {"train", "--model", "pythia-14m", "--layers", "2", "--vocab", "512", "--micro-batch", "1",
                          "--seq", "64", "--steps", "2", "--no-predict", "--peak-gflops", "10000", "--quiet",
                          "--summary-csv", sum, extra, NULL};
    return run(args);
}

static void test_train_summary_columns(void)
{
    char *d = test_tmpdir(), s1[128], s2[128];
    snprintf(s1, sizeof s1, "%s/plain.csv", d);
    snprintf(s2, sizeof s2, "%s/recompute.csv", d);
    int rc = tiny_train(s1, NULL);
    CHECK(rc == 0, "train: exit %d: %s", rc, g_err);
    rc = tiny_train(s2, "--recompute");
    CHECK(rc == 0, "train --recompute: exit %d: %s", rc, g_err);
    table t;
    if (rc != 0 || table_load(&t, s2) != 0) return;
    static const char *const want[][2] = {
        {"recompute", "full"},  {"sharding", "none"}, {"vp", "1"},    {"sequence_parallel", "false"},
        {"attention", "flash"}, {"micro_batch", "1"}, {"device", ""}, {"instance_type", "this machine"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int c = table_col(&t, want[i][0], 0);
        CHECK(c >= 0, "the summary has no '%s' column", want[i][0]);
        if (c >= 0)
            CHECK(strcmp(table_cell(&t, 0, c), want[i][1]) == 0, "summary %s '%s', expected '%s'", want[i][0],
                  table_cell(&t, 0, c), want[i][1]);
    }
    table_free(&t);
    /* read back: the two runs differ only in recomputation (and speed): two rows */
    tput_set set = {0};
    const char *msg;
    rc = throughput_load(&set, s1);
    if (rc == 0) rc = throughput_load(&set, s2);
    CHECK(rc == 0 && set.n == 2, "two summaries, with and without --recompute: %d rows (rc %d)", set.n, rc);
    if (set.n == 2) {
        CHECK(set.rows[0].recompute == TPUT_RECOMPUTE_NONE && set.rows[1].recompute == TPUT_RECOMPUTE_FULL,
              "recompute %d, %d", set.rows[0].recompute, set.rows[1].recompute);
        CHECK(set.rows[1].sharding == TPUT_SHARD_NONE && set.rows[1].vp == 1 && set.rows[1].sequence_parallel == 0 &&
                  set.rows[1].attention == TPUT_ATTN_FLASH && set.rows[1].micro_batch == 1 && !set.rows[1].device[0],
              "the summary's configuration as read");
    }
    throughput_free(&set);
    /* the same summary twice is still a duplicate */
    memset(&set, 0, sizeof set);
    rc = throughput_load(&set, s2);
    capture_stderr_begin();
    int rc2 = throughput_load(&set, s2);
    msg = capture_stderr_end();
    CHECK(rc == 0 && rc2 != 0 && strstr(msg, "duplicates") != NULL, "the same summary twice: %s", msg);
    throughput_free(&set);
}

/* --zero 1 under mpirun shards the AdamW moments: the summary says zero1. */
static void test_train_zero1_sharding(void)
{
    char *d = test_tmpdir(), sum[128];
    snprintf(sum, sizeof sum, "%s/zero1.csv", d);
    const char *args[] = {"train", "--model", "pythia-14m", "--layers", "2", "--vocab", "512", "--micro-batch", "1",
                          "--seq", "64", "--global-batch", "2", "--steps", "2", "--no-predict", "--peak-gflops",
                          "10000", "--quiet", "--zero", "1", "--summary-csv", sum, NULL};
    int rc = mpi_run(2, args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "2 ranks --zero 1: exit %d: %s", rc, g_err);
    table t;
    if (rc != 0 || table_load(&t, sum) != 0) return;
    CHECK(strcmp(cell(&t, 0, "sharding"), "zero1") == 0 && strcmp(cell(&t, 0, "ranks"), "2") == 0,
          "2 ranks --zero 1: sharding '%s', ranks '%s'", cell(&t, 0, "sharding"), cell(&t, 0, "ranks"));
    table_free(&t);
}

/* Summaries written before the columns were words: recompute 0 and 1. */
static void test_old_numeric_recompute(void)
{
    char *d = test_tmpdir(), p[128];
    snprintf(p, sizeof p, "%s/old.csv", d);
    write_text(p, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,micro_batch,"
                  "seq_per_s,recompute,source\n"
                  "pythia-70m,1,1,1,this machine,512,4,4,2.0,0,measured here 2026-11-21T00:00:00Z\n"
                  "pythia-70m,1,1,1,this machine,512,4,4,1.5,1,measured here 2026-11-21T00:00:00Z\n");
    tput_set set;
    const char *msg;
    int rc = load(p, &set, &msg);
    CHECK(rc == 0 && set.n == 2, "recompute 0 and 1: %d rows: %s", set.n, msg);
    if (set.n == 2)
        CHECK(set.rows[0].recompute == TPUT_RECOMPUTE_NONE && set.rows[1].recompute == TPUT_RECOMPUTE_FULL &&
                  set.rows[0].sharding == TPUT_NOT_STATED && set.rows[0].vp == 1,
              "recompute 0, 1 read as %d, %d", set.rows[0].recompute, set.rows[1].recompute);
    throughput_free(&set);
}

static void test_scale_csv_columns(void)
{
    char *d = test_tmpdir(), csv[128], csv2[128];
    snprintf(csv, sizeof csv, "%s/pred.csv", d);
    snprintf(csv2, sizeof csv2, "%s/pred2.csv", d);
    const char *a[] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4",
                       "--interleave", "2", "--zero", "2", "--recompute", "--attention", "flash", "--global-batch",
                       "1024", "--nodes", "4,8", "--csv", csv, NULL};
    int rc = run(a);
    CHECK(rc == 0, "scale --csv: exit %d: %s", rc, g_err);
    table t;
    if (rc == 0 && table_load(&t, csv) == 0) {
        static const char *const want[][2] = {
            {"recompute", "full"},          {"sharding", "zero2"},  {"vp", "2"},
            {"sequence_parallel", "false"}, {"attention", "flash"}, {"micro_batch", "1"}};
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            for (int r = 0; r < t.nrows; r++)
                CHECK(strcmp(cell(&t, r, want[i][0]), want[i][1]) == 0, "row %d: %s '%s', expected '%s'", r + 1,
                      want[i][0], cell(&t, r, want[i][0]), want[i][1]);
        table_free(&t);
    }
    const char *b[] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4",
                       "--selective-recompute", "--global-batch", "1024", "--nodes", "4,8", "--csv", csv2, NULL};
    rc = run(b);
    CHECK(rc == 0, "scale --selective-recompute --csv: exit %d: %s", rc, g_err);
    /* both predictions in one set: the same layouts in two configurations */
    tput_set set = {0};
    if (rc == 0) rc = throughput_load(&set, csv);
    if (rc == 0) rc = throughput_load(&set, csv2);
    CHECK(rc == 0 && set.n == 4, "two predictions of the same layouts: %d rows", set.n);
    if (set.n == 4)
        CHECK(set.rows[2].recompute == TPUT_RECOMPUTE_SELECTIVE && set.rows[2].sharding == TPUT_SHARD_NONE &&
                  set.rows[2].vp == 1 && set.rows[2].attention == TPUT_ATTN_FLASH &&
                  set.rows[0].sharding == TPUT_SHARD_ZERO2 && set.rows[0].vp == 2,
              "the predictions' configuration as read");
    throughput_free(&set);
}

/* Two rows that differ only in one configuration column are two rows; identical ones are not. */
static void test_rows_differ_in_config(void)
{
    static const char *const pairs[][2] = {
        {"1,none,,,,,", "1,full,,,,,"}, {",,zero1,,,,", ",,zero3,,,,"},
        {",,,2,,,", ",,,4,,,"},         {",,,,true,,", ",,,,false,,"},
        {",,,,,full,", ",,,,,flash,"},  {",,,,,,a100-sxm4-40gb", ",,,,,,a100-sxm4-80gb"},
        {"1,,,,,,", "2,,,,,,"},         {",full,,,,,", ",,,,,,"},
        {",,,,,,", ",,,1,,,"},
    };
    char *d = test_tmpdir(), p[128], text[1024];
    snprintf(p, sizeof p, "%s/pair.csv", d);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        snprintf(text, sizeof text, HEAD CFG_HEAD KEY "%s\n" KEY "%s\n", pairs[i][0], pairs[i][1]);
        write_text(p, text);
        tput_set set;
        const char *msg;
        int rc = load(p, &set, &msg);
        /* vp empty and vp 1 are the same plain 1F1B: a duplicate */
        int same = i == sizeof pairs / sizeof pairs[0] - 1;
        if (same)
            CHECK(rc != 0 && strstr(msg, ":3: duplicates") != NULL, "'%s' and '%s': not refused: %s", pairs[i][0],
                  pairs[i][1], msg);
        else CHECK(rc == 0 && set.n == 2, "'%s' and '%s': %d rows: %s", pairs[i][0], pairs[i][1], set.n, msg);
        throughput_free(&set);
        /* the same configuration twice is refused, naming both lines */
        snprintf(text, sizeof text, HEAD CFG_HEAD KEY "%s\n" KEY "%s\n", pairs[i][1], pairs[i][1]);
        write_text(p, text);
        rc = load(p, &set, &msg);
        CHECK(rc != 0 && strstr(msg, "pair.csv:3: duplicates") != NULL && strstr(msg, "pair.csv:2") != NULL &&
                  count_lines(msg) == 1,
              "'%s' twice: %s", pairs[i][1], msg);
        throughput_free(&set);
    }
}

/* A bad configuration cell is one error naming file:line and the column. */
static void test_bad_values(void)
{
    static const char *const bad[][2] = {{",sometimes,,,,,", "column 'recompute'"}, {",2,,,,,", "column 'recompute'"},
                                         {",,zero4,,,,", "column 'sharding'"}, {",,,0,,,", "column 'vp'"},
                                         {",,,1.5,,,", "column 'vp'"}, {",,,,maybe,,", "column 'sequence_parallel'"},
                                         {",,,,,sparse,", "column 'attention'"}, {",,,,,,A100", "column 'device'"},
                                         {",,,,,,a100 80gb", "column 'device'"}, {"0,,,,,,", "column 'micro_batch'"}};
    char *d = test_tmpdir(), p[128], text[1024], where[160];
    snprintf(p, sizeof p, "%s/bad.csv", d);
    snprintf(where, sizeof where, "%s:3: ", p);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, HEAD CFG_HEAD KEY ",,,,,,\n" KEY "%s\n", bad[i][0]);
        write_text(p, text);
        tput_set set;
        const char *msg;
        int rc = load(p, &set, &msg);
        CHECK(rc != 0 && set.n == 0 && strstr(msg, where) != NULL && strstr(msg, bad[i][1]) != NULL &&
                  count_lines(msg) == 1,
              "'%s': expected one error at %s%s, got: %s", bad[i][0], where, bad[i][1], msg);
        throughput_free(&set);
    }
    /* interleaving without a pipeline */
    snprintf(text, sizeof text, HEAD CFG_HEAD "neox-20b,8,1,4,trn1.32xlarge,2048,1024,13.6,30.36,,,,2,,,\n");
    write_text(p, text);
    tput_set set;
    const char *msg;
    int rc = load(p, &set, &msg);
    CHECK(rc != 0 && strstr(msg, ":2: column 'vp'") != NULL && strstr(msg, "pipeline") != NULL, "vp 2 with pp 1: %s",
          msg);
    throughput_free(&set);
    /* through the command: one line on stderr */
    snprintf(text, sizeof text, HEAD CFG_HEAD KEY ",,,0,,,\n");
    write_text(p, text);
    char out[160];
    snprintf(out, sizeof out, "%s/rep", d);
    const char *a[] = {"report", "--throughput", p, "--out", out, NULL};
    rc = run(a);
    CHECK(rc != 0 && strstr(g_err, ":2: column 'vp'") != NULL && count_lines(g_err) == 1, "report on vp 0: exit %d: %s",
          rc, g_err);
}

/* Table 1 has none of the columns: nothing stated, plain 1F1B, as before. */
static void test_old_file_meaning(void)
{
    tput_set set;
    const char *msg;
    int rc = load("data/reference/trn1_table1.csv", &set, &msg);
    CHECK(rc == 0 && set.n == 7, "Table 1: %d rows: %s", set.n, msg);
    for (int i = 0; i < set.n; i++) {
        const tput_row *r = &set.rows[i];
        CHECK(r->recompute == TPUT_NOT_STATED && r->sharding == TPUT_NOT_STATED && r->vp == 1 &&
                  r->sequence_parallel == TPUT_NOT_STATED && r->attention == TPUT_NOT_STATED && !r->device[0] &&
                  r->micro_batch == 0,
              "Table 1 row %d states a configuration", i + 1);
        char desc[128];
        tput_config_describe(r, desc, sizeof desc);
        CHECK(desc[0] == '\0', "Table 1 row %d described as '%s'", i + 1, desc);
    }
    throughput_free(&set);
}

/* report.csv carries the columns: rows that differ in recomputation stay two rows when it is
 * read again, with their configuration. */
static void test_report_round_trip(void)
{
    char *d = test_tmpdir(), p[128], out[128], rep[160], text[1024];
    snprintf(p, sizeof p, "%s/two.csv", d);
    snprintf(out, sizeof out, "%s/rep", d);
    snprintf(rep, sizeof rep, "%s/report.csv", out);
    snprintf(text, sizeof text,
             HEAD CFG_HEAD KEY "2,selective,zero1,2,true,flash,trainium1\n" KEY
                               "2,full,zero1,2,true,flash,trainium1\n");
    write_text(p, text);
    const char *a[] = {"report", "--throughput", p, "--out", out, NULL};
    int rc = run(a);
    CHECK(rc == 0, "report on two configurations: exit %d: %s", rc, g_err);
    tput_set set = {0};
    if (rc == 0) {
        capture_stderr_begin();
        rc = throughput_load(&set, rep);
        const char *msg = capture_stderr_end();
        CHECK(rc == 0 && set.n == 2, "report.csv read again: %d rows: %s", set.n, msg);
    }
    if (set.n == 2) {
        const tput_row *r = &set.rows[1];
        CHECK(set.rows[0].recompute == TPUT_RECOMPUTE_SELECTIVE && r->recompute == TPUT_RECOMPUTE_FULL &&
                  r->sharding == TPUT_SHARD_ZERO1 && r->vp == 2 && r->sequence_parallel == 1 &&
                  r->attention == TPUT_ATTN_FLASH && strcmp(r->device, "trainium1") == 0 && r->micro_batch == 2,
              "report.csv's configuration as read");
    }
    throughput_free(&set);
    char md[8192], mdp[160];
    snprintf(mdp, sizeof mdp, "%s/report.md", out);
    slurp(mdp, md, sizeof md);
    CHECK(strstr(md, "Configuration: micro-batch 2, recompute full, zero1, vp 2, sequence parallel, flash attention, "
                     "trainium1.") != NULL,
          "report.md does not state the configuration");
}

/* scale --measured fits only rows of its own configuration, when a row states one. */
static void test_scale_measured_config(void)
{
    char *d = test_tmpdir(), p[128], text[1024];
    snprintf(p, sizeof p, "%s/meas.csv", d);
    snprintf(text, sizeof text,
             HEAD "recompute\n"
                  "neox-20b,8,4,4,trn1.32xlarge,2048,16384,13.6,30.36,full\nneox-20b,8,4,8,trn1.32xlarge,2048,16384,26."
                  "8,60.72,full\n");
    write_text(p, text);
    const char *a[] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4",
                       "--global-batch", "16384", "--nodes", "4,8", "--measured", p, NULL};
    int rc = run(a);
    CHECK(rc == 2 && strstr(g_err, "no row matches") != NULL && strstr(g_err, "recompute none") != NULL,
          "rows recomputing fitted by a model that does not: exit %d: %s", rc, g_err);
    const char *b[] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4",
                       "--global-batch", "16384", "--nodes", "4,8", "--recompute", "--measured", p, NULL};
    rc = run(b);
    CHECK(rc == 0, "the same rows with --recompute: exit %d: %s", rc, g_err);
}

const test_case tests_tputcols[] = {
    {"tputcols: train's summary states recompute, sharding, vp, sequence parallelism, attention, micro-batch; two runs "
     "differing in --recompute are two rows",
     test_train_summary_columns},
    {"tputcols: train --zero 1 on 2 ranks states sharding zero1", test_train_zero1_sharding},
    {"tputcols: an older summary's recompute 0 and 1 read as none and full", test_old_numeric_recompute},
    {"tputcols: scale --csv states its target's recompute, --zero, --interleave, attention; two configurations are "
     "four rows",
     test_scale_csv_columns},
    {"tputcols: rows differing only in one configuration column are two rows; identical ones are refused",
     test_rows_differ_in_config},
    {"tputcols: a bad recompute, sharding, vp, sequence_parallel, attention or device is one error naming file:line "
     "and column",
     test_bad_values},
    {"tputcols: Table 1 (no configuration columns) loads as not stated, plain 1F1B", test_old_file_meaning},
    {"tputcols: report.csv carries the configuration, read again as the same rows", test_report_round_trip},
    {"tputcols: scale --measured fits only rows of its configuration", test_scale_measured_config},
    {0},
};
