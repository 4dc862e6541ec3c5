/* test_layout.c: the report side's house rules, read from the sources' #include lines (the README's
 * "Layout"): report/ has three wings and the pages above them,
 *   report/formats/  every file the report side reads or writes    -> common/ only
 *   report/logs/     a training log into a published-runs row       -> formats, common
 *   report/predict/  the step model and its fits                    -> formats, common
 *   report/          the pages and the command runs                 -> predict, logs, formats, common
 * and no file of report/ includes kernels/ or model/ (the report never links the training side). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

typedef enum { W_PAGES, W_FORMATS, W_LOGS, W_PREDICT, W_COMMON, W_OTHER } wing;
static const char *const wing_names[] = {"report/", "report/formats/", "report/logs/", "report/predict/", "common/",
                                         "elsewhere"};

/* The wing of a path relative to the repository root. */
static wing wing_of(const char *p)
{
    if (strncmp(p, "report/formats/", 15) == 0) return W_FORMATS;
    if (strncmp(p, "report/logs/", 12) == 0) return W_LOGS;
    if (strncmp(p, "report/predict/", 15) == 0) return W_PREDICT;
    if (strncmp(p, "report/", 7) == 0 && !strchr(p + 7, '/')) return W_PAGES;
    if (strncmp(p, "common/", 7) == 0) return W_COMMON;
    return W_OTHER;
}

/* Whether a file of wing `from` may include one of wing `to`. */
static int allowed(wing from, wing to)
{
    if (to == W_COMMON || to == from) return 1;
    switch (from) {
    case W_FORMATS: return 0;
    case W_LOGS:
    case W_PREDICT: return to == W_FORMATS;
    case W_PAGES: return to == W_FORMATS || to == W_LOGS || to == W_PREDICT;
    default: return 0;
    }
}

/* dir/rel normalised ("a/b/../c" -> "a/c") into out. */
static void resolve(const char *dir, const char *rel, char *out, size_t n)
{
    char buf[512], *part[32];
    int np = 0;
    snprintf(buf, sizeof buf, "%s/%s", dir, rel);
    for (char *save = NULL, *t = strtok_r(buf, "/", &save); t && np < 32; t = strtok_r(NULL, "/", &save)) {
        if (strcmp(t, "..") == 0) np -= np > 0;
        else if (strcmp(t, ".") != 0) part[np++] = t;
    }
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < np && len < n; i++) len += (size_t)snprintf(out + len, n - len, "%s%s", i ? "/" : "", part[i]);
}

/* Checks every #include "..." of dir/name; returns the number of includes read. */
static int check_file(const char *dir, const char *name)
{
    char path[512], line[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot read %s", path);
    if (!f) return 0;
    int n = 0;
    for (int ln = 1; fgets(line, sizeof line, f); ln++) {
        char rel[256], to[512];
        if (sscanf(line, " #include \"%255[^\"]\"", rel) != 1) continue;
        resolve(dir, rel, to, sizeof to);
        n++;
        wing a = wing_of(path), b = wing_of(to);
        CHECK(allowed(a, b), "%s:%d: includes %s: %s may not depend on %s", path, ln, to, wing_names[a],
              wing_names[b]);
    }
    fclose(f);
    return n;
}

static int check_dir(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot list %s (run from the repository root)", dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len > 2 && e->d_name[len - 2] == '.' && (e->d_name[len - 1] == 'c' || e->d_name[len - 1] == 'h'))
            n += check_file(dir, e->d_name);
    }
    closedir(d);
    return n;
}

static void test_report_direction(void)
{
    int n = 0;
    static const char *const dirs[] = {"report", "report/formats", "report/logs", "report/predict"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) n += check_dir(dirs[i]);
    CHECK(n > 100, "only %d #include lines read under report/", n);
}

const test_case tests_layout[] = {
    {"layout: report/'s wings include only in the allowed direction (formats <- logs, predict <- pages)",
     test_report_direction},
    {NULL, NULL},
};
