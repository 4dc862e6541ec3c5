/* Plots: a full disk or an unwritable path fails with one error and keeps the earlier file; what is committed is
 * complete. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char g_err[16384];

/* The scale command of README's example (neox-20b on trn1.32xlarge), plotting to `plot`. */
#define SCALE_ARGS(plot)                                                                                           \
    {                                                                                                              \
        "scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4", "--seq", "2048",  \
            "--global-batch", "16384", "--base-nodes", "4", "--base-seq-per-s", "13.6", "--nodes", "4,8,16,32,64", \
            "--plot", (plot), NULL                                                                                 \
    }

/* What an earlier run left at the target: text and every byte value. */
static size_t earlier_bytes(unsigned char *buf, size_t n)
{
    size_t k = (size_t)snprintf((char *)buf, n, "an earlier plot that must survive\n");
    for (; k < n; k++) buf[k] = (unsigned char)(k * 7 + 3);
    return n;
}

/* The whole file into buf (at most n bytes); its size, or -1 when it cannot be read. */
static long read_bytes(const char *path, unsigned char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t k = fread(buf, 1, n, f);
    fclose(f);
    return (long)k;
}

/* Entries of dir whose name holds ".tmp." (a temporary file left behind). */
static int tmp_files_in(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* A whole PNG: signature, then chunks inside the file up to an IEND that ends it. */
static int png_is_whole(const unsigned char *b, long n)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n < 8 || memcmp(b, sig, 8) != 0) return 0;
    for (long off = 8; off + 12 <= n;) {
        uint32_t len = (uint32_t)b[off] << 24 | (uint32_t)b[off + 1] << 16 | (uint32_t)b[off + 2] << 8 | b[off + 3];
        long end = off + 12 + (long)len;
        if (end > n) return 0;
        if (memcmp(b + off + 4, "IEND", 4) == 0) return end == n;
        off = end;
    }
    return 0;
}

/* A full disk while the plot is written: exit 1, one error line naming the file, the earlier
 * file untouched byte for byte, no temporary file left. */
static void check_full_disk(const char *name)
{
    char dir[] = "/tmp/costbench-plot-XXXXXX", path[128];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    static unsigned char before[4096], after[8192];
    size_t n = earlier_bytes(before, sizeof before);
    CHECK(write_file_bytes(path, before, n) == 0, "cannot write %s", path);
    const char *args[] = SCALE_ARGS(path);
    int rc = cli_run_fsize_limited(args, 16384, g_err, sizeof g_err); /* both plots are larger: ~90 KB, ~380 KB */
    CHECK(rc == 1, "%s on a full disk: exit %d, expected 1: %s", name, rc, g_err);
    CHECK(strncmp(g_err, "error: ", 7) == 0 && count_lines(g_err) == 1, "%s: expected one error line, got: %s", name,
          g_err);
    char quoted[160];
    snprintf(quoted, sizeof quoted, "'%s'", path);
    CHECK(strstr(g_err, quoted) && strstr(g_err, "incomplete"), "%s: the error should name %s and say incomplete: %s",
          name, quoted, g_err);
    char wrote[160];
    snprintf(wrote, sizeof wrote, "wrote %s", path);
    CHECK(!strstr(g_err, wrote), "%s: says '%s' on a full disk: %s", name, wrote, g_err);
    long k = read_bytes(path, after, sizeof after);
    CHECK(k == (long)n && memcmp(before, after, n) == 0, "%s: the earlier file changed (%ld bytes, was %zu)", name, k,
          n);
    CHECK(tmp_files_in(dir) == 0, "%s: %d temporary files left in %s", name, tmp_files_in(dir), dir);
    rm_tree(dir);
}

static void test_plot_full_disk_png(void) { check_full_disk("s.png"); }
static void test_plot_full_disk_svg(void) { check_full_disk("s.svg"); }

/* An unwritable path fails before PLplot runs: one line with the path and the errno text
 * (never PLplot's "Too many tries"). The expected text is what creating the file here gives. */
static void check_unwritable(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
    int e = errno;
    if (fd >= 0) {
        close(fd);
        unlink(path);
        CHECK(0, "'%s' is writable here: not a test of an unwritable path", path);
        return;
    }
    char want[256];
    snprintf(want, sizeof want, "error: cannot write '%s': %s\n", path, strerror(e));
    const char *args[] = SCALE_ARGS(path);
    int rc = cli_run(args, NULL, 0, g_err, sizeof g_err);
    CHECK(rc != 0, "%s: exit 0", path);
    CHECK(strcmp(g_err, want) == 0, "%s: expected \"%.*s\", got: %s", path, (int)strlen(want) - 1, want, g_err);
    CHECK(!strstr(g_err, "Too many tries") && !strstr(g_err, "Can't open"), "%s: PLplot's messages: %s", path, g_err);
}

static void test_plot_unwritable_path(void)
{
    char dir[] = "/tmp/costbench-plot-XXXXXX", missing[128], notdir[128], file[128];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    snprintf(missing, sizeof missing, "%s/no-such-dir/s.png", dir);
    check_unwritable(missing);
    check_unwritable("/proc/costbench-test.png"); /* not writable even by root */
    snprintf(file, sizeof file, "%s/file", dir);
    snprintf(notdir, sizeof notdir, "%s/file/s.svg", dir);
    CHECK(write_file_bytes(file, (const unsigned char *)"x", 1) == 0, "cannot write %s", file);
    check_unwritable(notdir);
    rm_tree(dir);
}

/* A normal plot replaces the earlier file with a whole PNG (and the check of wholeness rejects
 * a truncated copy of it); an SVG ends with </svg>. */
static void test_plot_normal_is_whole(void)
{
    char dir[] = "/tmp/costbench-plot-XXXXXX", png[128], svg[128];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    snprintf(png, sizeof png, "%s/s.png", dir);
    snprintf(svg, sizeof svg, "%s/s.svg", dir);
    static unsigned char before[4096], buf[1 << 20];
    size_t n = earlier_bytes(before, sizeof before);
    CHECK(write_file_bytes(png, before, n) == 0, "cannot write %s", png);
    const char *a1[] = SCALE_ARGS(png);
    int rc = cli_run(a1, NULL, 0, g_err, sizeof g_err);
    CHECK(rc == 0 && strstr(g_err, "wrote") && !strstr(g_err, "error"), "scale --plot %s: exit %d: %s", png, rc, g_err);
    long k = read_bytes(png, buf, sizeof buf);
    CHECK(k > 16384 && k < (long)sizeof buf, "%s: %ld bytes", png, k);
    CHECK(png_is_whole(buf, k), "%s is not a whole PNG (%ld bytes)", png, k);
    CHECK(k > 0 && !png_is_whole(buf, k / 2) && !png_is_whole(buf, k - 1), "a truncated PNG passes as whole");
    const char *a2[] = SCALE_ARGS(svg);
    rc = cli_run(a2, NULL, 0, g_err, sizeof g_err);
    CHECK(rc == 0 && strstr(g_err, "wrote"), "scale --plot %s: exit %d: %s", svg, rc, g_err);
    k = read_bytes(svg, buf, sizeof buf - 1);
    buf[k > 0 ? k : 0] = '\0';
    char *end = strstr((char *)buf, "</svg>");
    CHECK(k > 16384 && end && strspn(end + 6, " \t\r\n") == strlen(end + 6), "%s does not end with </svg> (%ld bytes)",
          svg, k);
    CHECK(tmp_files_in(dir) == 0, "%d temporary files left in %s", tmp_files_in(dir), dir);
    rm_tree(dir);
}

const test_case tests_plot[] = {
    {"plot: a full disk (PNG) fails with one error, exit 1, and keeps the earlier file", test_plot_full_disk_png},
    {"plot: a full disk (SVG) fails with one error, exit 1, and keeps the earlier file", test_plot_full_disk_svg},
    {"plot: an unwritable path names the path and the errno, not 'Too many tries'", test_plot_unwritable_path},
    {"plot: a normal plot is whole (PNG chunks up to IEND, SVG up to </svg>) and replaces the earlier file",
     test_plot_normal_is_whole},
    {0},
};
