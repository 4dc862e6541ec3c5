/* Regression tests for the second hostile audit's defects (issue 18) in `costbench trajectory`:
 * 4: its --out directory is treated as `report --out` treats its own (only a directory costbench
 *    wrote is replaced, whole, and a failure leaves the earlier one complete);
 * 10: throughput and memory from a run's summary are range-checked (zero is not a measurement);
 * 11: strings from input files cannot break trajectory.md's table. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

static char g_out[32768], g_err[8192];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

static const char *const g_files[] = {"trajectory.md", "trajectory.csv", "loss.png", "grad_norm.png"};

/* Two 10-step logs (d/base.csv, d/other.csv); `shift` moves the other run's loss. */
static void logs_write(const char *d, double shift)
{
    char p[256], buf[1024];
    for (int k = 0; k < 2; k++) {
        int l = snprintf(buf, sizeof buf, "step,loss,grad_norm\n");
        for (int i = 0; i < 10; i++)
            l += snprintf(buf + l, sizeof buf - (size_t)l, "%d,%g,%g\n", i + 1, 10.0 - i + (k ? shift : 0),
                          1.0 + 0.1 * i * k);
        snprintf(p, sizeof p, "%s/%s", d, k ? "other.csv" : "base.csv");
        write_text(p, buf);
    }
}

/* costbench trajectory of d's two logs (the other one with summary `sum`, when not NULL) into
 * `out`, plus `extra` flags (NULL-terminated, may be NULL); its exit status. */
static int traj_to(const char *d, const char *sum, const char *out, const char *const *extra)
{
    char r1[256], r2[512];
    snprintf(r1, sizeof r1, "fp32=%s/base.csv", d);
    if (sum) snprintf(r2, sizeof r2, "bf16=%s/other.csv,%s", d, sum);
    else snprintf(r2, sizeof r2, "bf16=%s/other.csv", d);
    const char *args[24] = {"trajectory", "--run", r1, "--run", r2, "--out", out};
    int n = 7;
    for (int i = 0; extra && extra[i] && n < 23; i++) args[n++] = extra[i];
    args[n] = NULL;
    return run(args);
}

/* The lines of costbench's messages (error:, warning:, hint:) in s; a sanitizer's report under
 * SAN=1 is not one of them. */
static int count_message_lines(const char *s)
{
    int n = 0;
    for (const char *l = s; *l; l++) {
        if (strncmp(l, "error: ", 7) == 0 || strncmp(l, "warning: ", 9) == 0 || strncmp(l, "hint: ", 6) == 0) n++;
        l = strchr(l, '\n');
        if (!l) break;
    }
    return n;
}

/* The names in `dir` (without . and ..), sorted, one a line. */
static void listing(const char *dir, char *buf, size_t n)
{
    struct dirent **ents;
    int k = scandir(dir, &ents, NULL, alphasort);
    buf[0] = '\0';
    for (int i = 0; i < k; i++) {
        size_t used = strlen(buf);
        if (strcmp(ents[i]->d_name, ".") != 0 && strcmp(ents[i]->d_name, "..") != 0)
            snprintf(buf + used, n - used, "%s\n", ents[i]->d_name);
        free(ents[i]);
    }
    if (k >= 0) free(ents);
}

/* The bytes of d/name into buf (n bytes at most); their number, -1 when it cannot be read. */
static long read_bytes(const char *d, const char *name, char *buf, size_t n)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", d, name);
    FILE *f = fopen(p, "rb");
    if (!f) return -1;
    size_t k = fread(buf, 1, n, f);
    fclose(f);
    return (long)k;
}

static void test_traj_out_refuses_user_files(void)
{
    char *d = test_tmpdir(), out[128], before[1024], after[1024], buf[256];
    if (!d) return;
    logs_write(d, 0.5);
    snprintf(out, sizeof out, "%s/notes", d);
    mkdir(out, 0755);
    char p[256];
    snprintf(p, sizeof p, "%s/trajectory.md", out);
    static const char notes[] = "# My own trajectory notes\n\nkeep me\n";
    write_text(p, notes);
    snprintf(p, sizeof p, "%s/loss.png", out);
    write_text(p, "my picture\n");
    listing(out, before, sizeof before);
    int rc = traj_to(d, NULL, out, NULL);
    CHECK(rc == 2, "a directory holding a user's trajectory.md: exit %d, expected 2: %s", rc, g_err);
    const char *nl = strchr(g_err, '\n');
    CHECK(strncmp(g_err, "error: ", 7) == 0 && nl && strstr(g_err, out) && strstr(g_err, "trajectory.md") < nl,
          "expected one error line naming '%s' and trajectory.md: %s", out, g_err);
    CHECK(nl && (count_message_lines(g_err) == 1 ||
                 (strncmp(nl + 1, "hint: ", 6) == 0 && count_message_lines(g_err) == 2)),
          "one error line (and a hint): %s", g_err);
    listing(out, after, sizeof after);
    CHECK(strcmp(before, after) == 0, "the directory changed: before\n%safter\n%s", before, after);
    long k = read_bytes(out, "trajectory.md", buf, sizeof buf - 1);
    CHECK(k == (long)strlen(notes) && memcmp(buf, notes, strlen(notes)) == 0, "the user's trajectory.md changed");
    k = read_bytes(out, "loss.png", buf, sizeof buf - 1);
    CHECK(k == 11 && memcmp(buf, "my picture\n", 11) == 0, "the user's loss.png changed");
    listing(d, after, sizeof after);
    CHECK(strstr(after, ".tmp.") == NULL, "a temporary directory left in %s:\n%s", d, after);
    rm_tree(d);
}

static void test_traj_out_replaced_whole(void)
{
    char *d = test_tmpdir(), out[128], csv[160], got[1024], buf[256];
    if (!d) return;
    logs_write(d, 0.5);
    snprintf(out, sizeof out, "%s/cmp", d);
    int rc = traj_to(d, NULL, out, NULL);
    CHECK(rc == 0, "first run: exit %d: %s", rc, g_err);
    listing(out, got, sizeof got);
    CHECK(strstr(got, ".costbench-") != NULL, "no marker saying costbench wrote '%s':\n%s", out, got);
    /* the second time the CSV goes elsewhere: the directory holds only what this run wrote */
    snprintf(csv, sizeof csv, "%s/t.csv", d);
    logs_write(d, 0.25);
    rc = traj_to(d, NULL, out, (const char *const[]){"--csv", csv, NULL});
    CHECK(rc == 0, "again into the directory costbench wrote: exit %d: %s", rc, g_err);
    listing(out, got, sizeof got);
    CHECK(strstr(got, "trajectory.csv") == NULL && strstr(got, "trajectory.md") && strstr(got, "loss.png") &&
              strstr(got, "grad_norm.png"),
          "the directory was not replaced whole (the first run's trajectory.csv stays):\n%s", got);
    listing(d, got, sizeof got);
    CHECK(strstr(got, ".tmp.") == NULL && strstr(got, ".old.") == NULL, "temporary directories left in %s:\n%s", d,
          got);
    CHECK(read_bytes(d, "t.csv", buf, sizeof buf) > 0, "--csv: %s not written", csv);
    /* a file the user adds to it makes it theirs: refused */
    snprintf(csv, sizeof csv, "%s/mine.txt", out);
    write_text(csv, "mine\n");
    rc = traj_to(d, NULL, out, NULL);
    CHECK(rc == 2 && strstr(g_err, "mine.txt"),
          "a costbench directory holding the user's mine.txt: exit %d, expected 2: %s", rc, g_err);
    rm_tree(d);
}

static void test_traj_out_full_disk(void)
{
    char *d = test_tmpdir(), out[128], got[1024];
    static char before[4][65536], after[65536];
    long nb[4];
    if (!d) return;
    logs_write(d, 0.5);
    snprintf(out, sizeof out, "%s/cmp", d);
    int rc = traj_to(d, NULL, out, NULL);
    CHECK(rc == 0, "first run: exit %d: %s", rc, g_err);
    for (int i = 0; i < 4; i++) nb[i] = read_bytes(out, g_files[i], before[i], sizeof before[i]);
    CHECK(nb[2] > 4096 && nb[1] > 0 && nb[1] < 4096, "the test needs a CSV under 4 KiB and plots over it: %ld, %ld",
          nb[1], nb[2]);
    logs_write(d, 0.25);
    char r1[256], r2[256];
    snprintf(r1, sizeof r1, "fp32=%s/base.csv", d);
    snprintf(r2, sizeof r2, "bf16=%s/other.csv", d);
    const char *args[] = {"trajectory", "--run", r1, "--run", r2, "--out", out, NULL};
    rc = cli_run_fsize_limited(args, 4096, g_err, sizeof g_err); /* the CSV fits, the plots do not */
    CHECK(rc == 1, "on a full disk: exit %d, expected 1: %s", rc, g_err);
    CHECK(strncmp(g_err, "error: ", 7) == 0 && count_message_lines(g_err) == 1,
          "on a full disk: expected one error line, got: %s", g_err);
    for (int i = 0; i < 4; i++) {
        long k = read_bytes(out, g_files[i], after, sizeof after);
        CHECK(k == nb[i] && memcmp(after, before[i], (size_t)(k > 0 ? k : 0)) == 0, "%s/%s changed on a full disk", out,
              g_files[i]);
    }
    listing(d, got, sizeof got);
    CHECK(strstr(got, ".tmp.") == NULL && strstr(got, ".old.") == NULL, "temporary directories left in %s:\n%s", d,
          got);
    rm_tree(d);
}

/* A summary with tokens_per_s and peak_rss_gib as given. */
static void summary_write(const char *path, const char *toks, const char *rss, const char *precision)
{
    char buf[512];
    snprintf(buf, sizeof buf, "model,tokens_per_s,peak_rss_gib,precision\npythia-14m,%s,%s,%s\n", toks, rss, precision);
    write_text(path, buf);
}

static void test_traj_summary_ranges(void)
{
    char *d = test_tmpdir(), out[128], sum[128], p[256];
    if (!d) return;
    logs_write(d, 0.5);
    snprintf(out, sizeof out, "%s/cmp", d);
    snprintf(sum, sizeof sum, "%s/sum.csv", d);
    const struct {
        const char *toks, *rss, *col;
    } bad[] = {{"0", "0.5", "'tokens_per_s'"},   {"-100", "0.5", "'tokens_per_s'"}, {"inf", "0.5", "'tokens_per_s'"},
               {"nan", "0.5", "'tokens_per_s'"}, {"1e30", "0.5", "'tokens_per_s'"}, {"", "0.5", "'tokens_per_s'"},
               {"1000", "0", "'peak_rss_gib'"},  {"1000", "-1", "'peak_rss_gib'"},  {"1000", "inf", "'peak_rss_gib'"},
               {"1000", "1e12", "'peak_rss_gib'"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        summary_write(sum, bad[i].toks, bad[i].rss, "bf16");
        int rc = traj_to(d, sum, out, NULL);
        CHECK(rc == 1, "tokens_per_s '%s', peak_rss_gib '%s': exit %d, expected 1: %s", bad[i].toks, bad[i].rss, rc,
              g_err);
        CHECK(strncmp(g_err, "error: ", 7) == 0 && count_message_lines(g_err) == 1 && strstr(g_err, "sum.csv:2") &&
                  strstr(g_err, bad[i].col),
              "tokens_per_s '%s', peak_rss_gib '%s': expected one error naming sum.csv:2 and %s: %s", bad[i].toks,
              bad[i].rss, bad[i].col, g_err);
    }
    /* a summary without peak_rss_gib (an empty cell): unknown, '-' in the table, empty in the CSV */
    summary_write(sum, "1000", "", "bf16");
    int rc = traj_to(d, sum, out, (const char *const[]){"--usd-per-hour", "0.5", NULL});
    CHECK(rc == 0, "an empty peak_rss_gib: exit %d: %s", rc, g_err);
    static char text[16384];
    snprintf(p, sizeof p, "%s/trajectory.csv", out);
    slurp(p, text, sizeof text);
    CHECK(strstr(text, "\nbf16,bf16,10,1000,7200000,,") != NULL,
          "the CSV's bf16 row: an empty peak_rss_gib expected:\n%s", text);
    /* prices: zero is refused too (as a flag and in a price table) */
    CHECK(traj_to(d, sum, out, (const char *const[]){"--usd-per-hour", "0", NULL}) == 2,
          "--usd-per-hour 0: exit 2 expected: %s", g_err);
    snprintf(p, sizeof p, "%s/prices.csv", d);
    write_text(p, "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\naws,x.large,us-east-1,on_"
                  "demand,0,2024-06,test\n");
    rc = traj_to(d, sum, out, (const char *const[]){"--instance", "x.large", "--prices", p, NULL});
    CHECK(rc == 1 && strstr(g_err, "prices.csv:2") && strstr(g_err, "'usd_per_hour'"),
          "a price of 0: exit %d, expected 1: %s", rc, g_err);
    rm_tree(d);
}

/* The '|' that are not escaped with a backslash in a line. */
static int bars(const char *s, const char *end)
{
    int n = 0;
    for (const char *c = s; c < end; c++) {
        if (*c == '\\' && c + 1 < end) c++;
        else n += *c == '|';
    }
    return n;
}

static void test_traj_md_cells(void)
{
    char *d = test_tmpdir(), out[128], sum[128], p[256];
    if (!d) return;
    logs_write(d, 0.5);
    snprintf(out, sizeof out, "%s/cmp", d);
    snprintf(sum, sizeof sum, "%s/sum.csv", d);
    write_text(sum, "model,tokens_per_s,peak_rss_gib,precision\npythia-14m,1000,0.5,\"bf16|fp8 *x* `y`\"\n");
    int rc = traj_to(d, sum, out, NULL);
    CHECK(rc == 0, "a precision with a '|': exit %d: %s", rc, g_err);
    static char md[16384];
    snprintf(p, sizeof p, "%s/trajectory.md", out);
    slurp(p, md, sizeof md);
    const char *head = strstr(md, "| Run |");
    CHECK(head != NULL, "no table in trajectory.md");
    if (!head) {
        rm_tree(d);
        return;
    }
    int want = bars(head, strchr(head, '\n')), rows = 0;
    for (const char *l = head; *l == '|'; rows++) {
        const char *e = strchr(l, '\n');
        if (!e) break;
        CHECK(bars(l, e) == want, "a table line with %d cell borders, the header has %d: %.*s", bars(l, e), want,
              (int)(e - l), l);
        l = e + 1;
    }
    CHECK(rows == 4, "the table has %d lines, expected 4", rows);
    CHECK(strstr(md, "bf16\\|fp8 \\*x\\* \\`y\\`") != NULL, "the precision is not shown as written (escaped):\n%s",
          head);
    rm_tree(d);
}

/* report.md's benchmark tables show a CSV's cells as they are: a '|' in one adds no column. */
static void test_report_md_cells(void)
{
    char *d = test_tmpdir(), bench[128], out[128], p[256];
    if (!d) return;
    snprintf(bench, sizeof bench, "%s/bench.csv", d);
    snprintf(out, sizeof out, "%s/rep", d);
    write_text(bench, "op,variant,n,gflops_median\nmatmul,a|b *c*,1024,12.5\n");
    const char *args[] = {"report", "--throughput", "data/reference/trn1_table1.csv", "--bench", bench, "--out", out,
                          NULL};
    int rc = run(args);
    CHECK(rc == 0, "report --bench: exit %d: %s", rc, g_err);
    static char md[65536];
    snprintf(p, sizeof p, "%s/report.md", out);
    slurp(p, md, sizeof md);
    const char *head = strstr(md, "| op | variant |"), *row = head ? strstr(head, "\n| matmul |") : NULL;
    CHECK(head && row, "no benchmark table in report.md");
    if (head && row) {
        row++;
        int want = bars(head, strchr(head, '\n')), got = bars(row, strchr(row, '\n'));
        CHECK(got == want, "the benchmark row has %d cell borders, its header %d: %.60s", got, want, row);
        CHECK(strncmp(row, "| matmul | a\\|b \\*c\\* |", 23) == 0,
              "the variant is not shown as written (escaped): %.60s", row);
    }
    rm_tree(d);
}

const test_case tests_audit2_traj[] = {
    {"audit2 4: trajectory --out refuses a directory holding a user's trajectory.md, untouched",
     test_traj_out_refuses_user_files},
    {"audit2 4: trajectory --out replaces a directory costbench wrote, whole", test_traj_out_replaced_whole},
    {"audit2 4: trajectory on a full disk leaves the earlier outputs complete", test_traj_out_full_disk},
    {"audit2 10: trajectory refuses a zero, negative, non-finite or absurd throughput, memory or price",
     test_traj_summary_ranges},
    {"audit2 11: a '|' or markup in a precision cannot break trajectory.md's table", test_traj_md_cells},
    {"audit2 11: a '|' in a benchmark CSV cannot break report.md's table", test_report_md_cells},
    {0},
};
