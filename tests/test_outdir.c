/* The report's output directory: only a directory costbench wrote is replaced, and nothing it did not write is ever
 * deleted. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

static char g_out[65536], g_err[16384];
static const char *const g_table1 = "data/reference/trn1_table1.csv";

/* `costbench report` of Table 1 into `out`; its exit status. */
static int report_to(const char *out)
{
    const char *args[] = {"report", "--throughput", g_table1, "--out", out, NULL};
    return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
}

static void write_in(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void read_in(const char *dir, const char *name, char *buf, size_t n)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    slurp(p, buf, n);
}

/* The names in `dir` (without . and ..), sorted, one a line, into buf; returns their number. */
static int listing(const char *dir, char *buf, size_t n)
{
    struct dirent **ents;
    int k = scandir(dir, &ents, NULL, alphasort), count = 0;
    buf[0] = '\0';
    for (int i = 0; i < k; i++) {
        if (strcmp(ents[i]->d_name, ".") != 0 && strcmp(ents[i]->d_name, "..") != 0) {
            size_t used = strlen(buf);
            snprintf(buf + used, n - used, "%s\n", ents[i]->d_name);
            count++;
        }
        free(ents[i]);
    }
    if (k >= 0) free(ents);
    return count;
}

/* `dir` holds exactly `expected` (sorted names, one a line) and nothing named *.tmp.* or *.old.*. */
static void check_listing(const char *dir, const char *expected, const char *what)
{
    char got[4096];
    listing(dir, got, sizeof got);
    CHECK(strcmp(got, expected) == 0, "%s: '%s' holds\n%sexpected\n%s", what, dir, got, expected);
    CHECK(strstr(got, ".tmp.") == NULL && strstr(got, ".old.") == NULL,
          "%s: costbench's temporary directories left in '%s':\n%s", what, dir, got);
}

/* A refusal: exit 2, one error line naming the directory and `name`, and a hint. */
static void check_refused(int status, const char *dir, const char *name, const char *what)
{
    CHECK(status == 2, "%s: exit %d, expected 2: %s", what, status, g_err);
    const char *nl = strchr(g_err, '\n');
    CHECK(strncmp(g_err, "error: ", 7) == 0 && nl && strstr(g_err, dir) && strstr(g_err, name) &&
              strstr(g_err, name) < nl,
          "%s: expected one error line naming '%s' and '%s': %s", what, dir, name, g_err);
    CHECK(nl && strncmp(nl + 1, "hint: ", 6) == 0, "%s: expected a hint line after the error: %s", what, g_err);
}

static void test_outdir_audit(void)
{
    char *d = test_tmpdir(), notes[128], buf[256];
    snprintf(notes, sizeof notes, "%s/notes", d);
    mkdir(notes, 0755);
    write_in(notes, "report.md", "x\n");
    write_in(notes, "thesis.tex", "keep\n");
    check_refused(report_to(notes), notes, "thesis.tex", "a directory holding report.md and a thesis");
    read_in(notes, "thesis.tex", buf, sizeof buf);
    CHECK(strcmp(buf, "keep\n") == 0, "thesis.tex changed: '%.80s'", buf);
    read_in(notes, "report.md", buf, sizeof buf);
    CHECK(strcmp(buf, "x\n") == 0, "report.md changed: '%.80s'", buf);
    check_listing(notes, "report.md\nthesis.tex\n", "the audit's notes/");
    check_listing(d, "notes\n", "next to notes/");
    rm_tree(d);
}

static void test_outdir_twice(void)
{
    char *d = test_tmpdir(), rep[128], slash[130], marker[1024], names[4096], *save = NULL;
    snprintf(rep, sizeof rep, "%s/rep", d);
    snprintf(slash, sizeof slash, "%s/", rep);
    CHECK(report_to(rep) == 0, "first report: %s", g_err);
    CHECK(report_to(rep) == 0, "the same report again: %s", g_err);
    CHECK(report_to(slash) == 0, "again, --out with a trailing slash: %s", g_err);
    check_listing(d, "rep\n", "next to the report");
    check_listing(rep, ".costbench-report\nreport.csv\nreport.md\nthroughput.png\ntokens_per_usd.png\n", "the report");
    /* the marker lists every file but itself */
    read_in(rep, ".costbench-report", marker, sizeof marker);
    listing(rep, names, sizeof names);
    int listed = 0;
    for (char *line = strtok_r(marker, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        char want[256];
        snprintf(want, sizeof want, "%s\n", line);
        CHECK(strstr(names, want) != NULL, "the marker lists '%s', which is not in the report", line);
        listed++;
    }
    CHECK(listed == 4, "the marker lists %d files, expected 4 (report.md, report.csv, 2 plots)", listed);
    rm_tree(d);
}

static void test_outdir_user_file(void)
{
    char *d = test_tmpdir(), rep[128], before[262144], after[262144], buf[256];
    snprintf(rep, sizeof rep, "%s/rep", d);
    CHECK(report_to(rep) == 0, "first report: %s", g_err);
    read_in(rep, "report.md", before, sizeof before);
    write_in(rep, "notes.txt", "mine\n");
    check_refused(report_to(rep), rep, "notes.txt", "a report with the user's notes added");
    read_in(rep, "notes.txt", buf, sizeof buf);
    read_in(rep, "report.md", after, sizeof after);
    CHECK(strcmp(buf, "mine\n") == 0, "the user's file changed: '%.80s'", buf);
    CHECK(before[0] && strcmp(before, after) == 0, "the report changed");
    check_listing(rep, ".costbench-report\nnotes.txt\nreport.csv\nreport.md\nthroughput.png\ntokens_per_usd.png\n",
                  "refused report");
    check_listing(d, "rep\n", "next to the refused report");
    /* a file with a report's name that the marker does not list is the user's too */
    snprintf(buf, sizeof buf, "%s/notes.txt", rep);
    remove(buf);
    write_in(rep, "matmul.png", "my picture\n");
    check_refused(report_to(rep), rep, "matmul.png", "a report with the user's matmul.png");
    read_in(rep, "matmul.png", buf, sizeof buf);
    CHECK(strcmp(buf, "my picture\n") == 0, "the user's matmul.png changed: '%.80s'", buf);
    /* a marker listing a file no report writes is not believed */
    write_in(rep, ".costbench-report", "report.md\nmatmul.png\nthesis.tex\n");
    write_in(rep, "thesis.tex", "keep\n");
    CHECK(report_to(rep) == 2 && strstr(g_err, "thesis.tex"), "a marker listing thesis.tex: %s", g_err);
    read_in(rep, "thesis.tex", buf, sizeof buf);
    CHECK(strcmp(buf, "keep\n") == 0, "thesis.tex listed in a marker changed: '%.80s'", buf);
    rm_tree(d);
}

static void test_outdir_legacy(void)
{
    char *d = test_tmpdir(), old[128], extra[128], foreign[128], nomd[128], buf[4096];
    const char *md = "# costbench cost report\n\nWritten by an earlier costbench.\n";
    snprintf(old, sizeof old, "%s/old", d);
    snprintf(extra, sizeof extra, "%s/extra", d);
    snprintf(foreign, sizeof foreign, "%s/foreign", d);
    snprintf(nomd, sizeof nomd, "%s/nomd", d);
    const char *dirs[] = {old, extra, foreign, nomd};
    for (int i = 0; i < 4; i++) {
        mkdir(dirs[i], 0755);
        write_in(dirs[i], "report.csv", "model\nneox-20b\n");
        write_in(dirs[i], "loss.png", "png\n");
        if (i != 3) write_in(dirs[i], "report.md", i == 2 ? "# My cost report\n" : md);
    }
    write_in(extra, "notes.txt", "mine\n");
    CHECK(report_to(old) == 0, "a report of an earlier costbench (no marker): %s", g_err);
    read_in(old, "report.md", buf, sizeof buf);
    CHECK(strstr(buf, "# costbench cost report") == buf && strstr(buf, "earlier") == NULL,
          "the earlier report was not replaced");
    check_listing(old, ".costbench-report\nreport.csv\nreport.md\nthroughput.png\ntokens_per_usd.png\n",
                  "the replaced legacy report");
    check_refused(report_to(extra), extra, "notes.txt", "a legacy lookalike with an extra file");
    check_listing(extra, "loss.png\nnotes.txt\nreport.csv\nreport.md\n", "the refused lookalike with an extra file");
    read_in(extra, "report.md", buf, sizeof buf);
    CHECK(strcmp(buf, md) == 0, "the lookalike's report.md changed");
    check_refused(report_to(foreign), foreign, "report.md", "a legacy lookalike whose report.md is not costbench's");
    read_in(foreign, "report.md", buf, sizeof buf);
    CHECK(strcmp(buf, "# My cost report\n") == 0, "the foreign report.md changed: '%.80s'", buf);
    check_listing(foreign, "loss.png\nreport.csv\nreport.md\n", "the refused lookalike with a foreign report.md");
    check_refused(report_to(nomd), nomd, "report.md", "a legacy lookalike without report.md");
    check_listing(nomd, "loss.png\nreport.csv\n", "the refused lookalike without report.md");
    check_listing(d, "extra\nforeign\nnomd\nold\n", "next to the legacy directories");
    rm_tree(d);
}

static void test_outdir_empty(void)
{
    char *d = test_tmpdir(), empty[128], buf[64];
    snprintf(empty, sizeof empty, "%s/empty", d);
    mkdir(empty, 0755);
    CHECK(report_to(empty) == 0, "an empty directory: %s", g_err);
    read_in(empty, "report.md", buf, sizeof buf);
    CHECK(strstr(buf, "# costbench cost report") == buf, "no report in the empty directory");
    check_listing(empty, ".costbench-report\nreport.csv\nreport.md\nthroughput.png\ntokens_per_usd.png\n",
                  "the report in an empty directory");
    check_listing(d, "empty\n", "next to the empty directory");
    rm_tree(d);
}

const test_case tests_outdir[] = {
    {"outdir: the audit's notes/ (report.md and a thesis) is refused, both files intact", test_outdir_audit},
    {"outdir: the same report twice to one --out; the marker lists its files; nothing left beside it",
     test_outdir_twice},
    {"outdir: a report with the user's file added is refused, the file and the report kept", test_outdir_user_file},
    {"outdir: a report of an earlier costbench is replaced; lookalikes are refused", test_outdir_legacy},
    {"outdir: an empty directory is used", test_outdir_empty},
    {0},
};
