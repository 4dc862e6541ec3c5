/* test_audit3_import.c: regression tests of the third audit: `costbench import` and its --out (issue 28: #0 #1 #3 #4 #9 #10 #12 of the log side). */
#include <stdio.h>
#include <string.h>

#include "check.h"

#define EXCERPT "tests/logs/megatron_excerpt.log"
#define CORE "tests/logs/megatron_core.log"
#define TINY "tests/logs/costbench_tiny.log"
/* what megatron_excerpt.log does not state, for a complete row */
#define EXCERPT_FLAGS                                                                                              \
    "--device", "a100-sxm4-80gb", "--devices", "8", "--devices-per-node", "8", "--tp", "1", "--pp", "1", "--dp", \
        "8", "--model", "pythia-1b", "--seq", "2048"

static char out[1 << 16], err[1 << 14];

/* A copy of `path` with every line that holds `old` changed by replacing `old` with `new` (NULL: the
 * file as it is) written `times` times into dst, each line `each` times in a row. */
static void log_copy(const char *path, const char *old, const char *repl, int times, int each, const char *dst)
{
    static char src[1 << 17], buf[1 << 19];
    slurp(path, src, sizeof src);
    size_t n = 0;
    for (int t = 0; t < times; t++)
        for (const char *p = src; *p;) {
            const char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p + 1) : strlen(p);
            char line[8192];
            snprintf(line, sizeof line, "%.*s", (int)len, p);
            char *hit = old ? strstr(line, old) : NULL;
            if (hit) {
                char rest[8192];
                snprintf(rest, sizeof rest, "%s", hit + strlen(old));
                snprintf(hit, sizeof line - (size_t)(hit - line), "%s%s", repl, rest);
            }
            for (int k = 0; k < each && n + strlen(line) < sizeof buf; k++)
                n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", line);
            p += len;
        }
    write_text(dst, buf);
}

/* #1: a row the published-runs loader would refuse never goes into an existing file. */
static void test_out_refused_row(void)
{
    static char before[1 << 16], after[1 << 16];
    const char *pub = test_path("a3i_pub.csv");
    slurp("data/reference/published/trn1_table1.csv", before, sizeof before);
    write_text(pub, before);
    int rc = cli_run((const char *const[]){"import", CORE, "--out", pub, NULL}, NULL, 0, err, sizeof err);
    slurp(pub, after, sizeof after);
    CHECK(rc == 2 && strcmp(before, after) == 0, "an incomplete row appended: rc %d, %s", rc, err);
    CHECK(strstr(err, pub) && strstr(err, "device"), "the error names the file and the missing column: %s", err);
    rc = cli_run((const char *const[]){"import", EXCERPT, EXCERPT_FLAGS, "--tp", "3", "--devices", "33", "--out", pub,
                                       NULL},
                 NULL, 0, err, sizeof err);
    slurp(pub, after, sizeof after);
    CHECK(rc == 2 && strcmp(before, after) == 0, "a bad layout appended: rc %d, %s", rc, err);
    /* an incomplete row may start a new file, its # lines saying what is missing */
    const char *fresh = test_path("a3i_new.csv");
    rc = cli_run((const char *const[]){"import", CORE, "--out", fresh, NULL}, NULL, 0, err, sizeof err);
    slurp(fresh, after, sizeof after);
    CHECK(rc == 0 && strstr(after, "# device") && strstr(after, "empty"), "new file: rc %d, %s", rc, after);
}

/* #18 (part): the load-back check's errors name the user's files, never its scratch copy. */
static void test_loadback_names(void)
{
    const char *pub = test_path("a3i_names.csv");
    int rc = cli_run((const char *const[]){"import", EXCERPT, EXCERPT_FLAGS, "--device", "nosuch", NULL}, NULL, 0, err,
                     sizeof err);
    CHECK(rc == 2 && !strstr(err, "costbench-import-") && !strstr(err, "scratch") && strstr(err, EXCERPT),
          "stdout only: rc %d, %s", rc, err);
    write_text(pub, "");
    remove(pub);
    rc = cli_run((const char *const[]){"import", EXCERPT, "--device", "nosuch", "--devices", "8", "--devices-per-node",
                                       "8", "--tp", "1", "--pp", "1", "--dp", "8", "--model", "pythia-1b", "--seq",
                                       "2048", "--out", pub, NULL},
                 NULL, 0, err, sizeof err);
    CHECK(rc == 2 && !strstr(err, "costbench-import-") && strstr(err, pub), "--out: rc %d, %s", rc, err);
}

/* #3: a flag that contradicts what the log states is an error naming both. */
static void test_flag_contradicts(void)
{
    int rc = cli_run((const char *const[]){"import", EXCERPT, EXCERPT_FLAGS, "--global-batch", "512", NULL}, out,
                     sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "flag '--global-batch': 512, but " EXCERPT ":5 says 128"), "step lines: rc %d, %s",
          rc, err);
    rc = cli_run((const char *const[]){"import", CORE, "--tp", "4", NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "flag '--tp': 4, but " CORE ":45 says 2"), "arguments block: rc %d, %s", rc, err);
    rc = cli_run((const char *const[]){"import", CORE, "--devices", "16", NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "flag '--devices': 16, but " CORE ":56 says 32"), "world size: rc %d, %s", rc, err);
    /* the batch the step lines state fills the row */
    rc = cli_run((const char *const[]){"import", EXCERPT, EXCERPT_FLAGS, NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, ",2048,128,"), "global batch from the step lines: rc %d, %s", rc, out);
}

/* #4: an arguments block without its closing rule states only what it printed, and says so. */
static void test_truncated_args(void)
{
    const char *log = test_path("a3i_trunc.log");
    static char src[1 << 17], buf[1 << 17];
    slurp(CORE, src, sizeof src);
    /* the block cut after its first argument, then the iteration lines */
    char *bf = strstr(src, "  bf16 ");
    char *iter = strstr(src, " [20");
    CHECK(bf && iter, "fixture");
    if (!bf || !iter) return;
    snprintf(buf, sizeof buf, "%.*s%s", (int)(bf - src), src, iter);
    write_text(log, buf);
    int rc = cli_run((const char *const[]){"import", log, NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "truncated") && strstr(out, ",bf16-mixed,") && !strstr(out, ",fp32,") &&
              !strstr(out, ",none,none,"),
          "truncated block: rc %d, %s%s", rc, out, err);
    rc = cli_run((const char *const[]){"import", log, "--precision", "bf16-mixed", NULL}, out, sizeof out, err,
                 sizeof err);
    CHECK(rc == 0, "a flag the truncated block does not contradict: rc %d, %s", rc, err);
}

/* #10: restarted logs are refused (interleaved ranks' repeats count once: issue 31), and so is a world size
 * stated twice differently. */
static void test_repeated_iterations(void)
{
    const char *twice = test_path("a3i_twice.log"), *inter = test_path("a3i_inter.log"), *ws = test_path("a3i_ws.log");
    log_copy(EXCERPT, NULL, NULL, 2, 1, twice);
    int rc = cli_run((const char *const[]){"import", twice, EXCERPT_FLAGS, NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, EXCERPT) == NULL && strstr(err, ":6: step 30 after step 70 at line 5"), "restarted: rc %d, %s", rc, err);
    log_copy(EXCERPT, NULL, NULL, 1, 2, inter);
    rc = cli_run((const char *const[]){"import", inter, EXCERPT_FLAGS, NULL}, out, sizeof out, err, sizeof err);
    /* moved on purpose (issue 31): a step printed by several ranks counts once, the repeats counted */
    CHECK(rc == 0 && strstr(out, "5 kept, 50 steps; 5 dropped as repeats of a step number"), "interleaved: rc %d, %s%s",
          rc, out, err);
    log_copy(CORE, "using world size: 32", "using world size: 16", 1, 1, ws);
    rc = cli_run((const char *const[]){"import", ws, NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, ":1:") && strstr(err, "32"), "world size: rc %d, %s", rc, err);
}

/* #12: the log parsers read numbers by the flags' rule and name what they cannot use. */
static void test_log_numbers(void)
{
    const char *p = test_path("a3i_num.log");
    log_copy(TINY, "     612.0 ", "      0x10 ", 1, 1, p);
    int rc = cli_run((const char *const[]){"import", p, NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "0x10"), "hex: rc %d, %s", rc, err);
    log_copy(EXCERPT, "(ms): 4100.8", "(ms): 3.4e38", 1, 1, p);
    rc = cli_run((const char *const[]){"import", p, EXCERPT_FLAGS, NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "3.4e38"), "huge step: rc %d, %s", rc, err);
    log_copy(EXCERPT, "(ms): 4100.8", "(ms): 0", 1, 1, p);
    rc = cli_run((const char *const[]){"import", p, EXCERPT_FLAGS, NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, ":5:"), "a 0 ms step: rc %d, %s", rc, err);
    log_copy("tests/logs/nemo_gpt.log", "train_step_timing in s=3.940", "train_step_timing in s=3,940", 1, 1, p);
    rc = cli_run((const char *const[]){"import", p, NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "940"), "a decimal comma: rc %d, %s", rc, err);
    log_copy("tests/logs/torchtitan_llama3_8b.log", "tps: 6,412", "tps: 6,4", 1, 1, p);
    rc = cli_run((const char *const[]){"import", p, NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "6,4"), "a comma that is no thousands separator: rc %d, %s", rc, err);
    static char src[1 << 16], bom[(1 << 16) + 8];
    slurp(TINY, src, sizeof src);
    snprintf(bom, sizeof bom, "\xEF\xBB\xBF%s", src);
    write_text(p, bom);
    rc = cli_run((const char *const[]){"import", p, NULL}, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "a UTF-8 BOM: rc %d, %s", rc, err);
}

/* #0, #9: counters and degree products read from a log past their bounds (the fuzzer's finds,
 * kept in its corpus): one error naming the file and line, exit 2. Before, each was a signed
 * overflow (UBSan stopped the fuzz run) and the plain build wrote a row, 5e18 devices for the mesh. */
static void test_counters_bounded(void)
{
    static const char *const crash[] = {
        "tests/fuzz/corpus/logs/crash_nemo_iteration_long_max.log",
        "tests/fuzz/corpus/logs/crash_nemo_tqdm_counter.log",
        "tests/fuzz/corpus/logs/crash_megatron_skipped_total.log",
        "tests/fuzz/corpus/logs/crash_torchtitan_mesh_product.log",
        "tests/fuzz/corpus/logs/crash_torchtitan_mesh2d_product.log",
        "tests/fuzz/corpus/import_out/crash_megatron_log_interval_iters.log",
    };
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) {
        const char *a[] = {"import", crash[i], NULL};
        int rc = cli_run(a, out, sizeof out, err, sizeof err);
        char where[300];
        snprintf(where, sizeof where, "error: %s:", crash[i]);
        CHECK(rc == 2 && strncmp(err, where, strlen(where)) == 0 && count_lines(err) == 1,
              "%s: exit %d, expected 2 and one error naming its line: %s", crash[i], rc, err);
    }
}

const test_case tests_audit3_import[] = {
    {"audit3 import: #0 #9 counters and degree products past their bounds are one error", test_counters_bounded},
    {"audit3 import: #1 --out never appends a row the loader refuses", test_out_refused_row},
    {"audit3 import: #18 load-back errors name the user's files", test_loadback_names},
    {"audit3 import: #3 a flag that contradicts the log is an error naming both", test_flag_contradicts},
    {"audit3 import: #4 a truncated arguments block states only what it printed", test_truncated_args},
    {"audit3 import: #10 repeated or decreasing iterations are refused", test_repeated_iterations},
    {"audit3 import: #12 log numbers follow the flags' rule", test_log_numbers},
    {NULL, NULL},
};
