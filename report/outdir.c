#include "outdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/err.h"
#include "../common/files.h"

const char *const out_names[OUT_NNAMES] = {"report.md", "report.csv", "throughput.png", "tokens_per_usd.png",
                                           "matmul.png", "loss.png", "grad_norm.png"};
static const char *const out_traj_names[OUT_TRAJ_NNAMES] = {"trajectory.md", "trajectory.csv", "loss.png",
                                                            "grad_norm.png"};

/* In every such directory, the marker: the names of the files costbench wrote there, one a line. */
const outdir_kind outdir_report = {"report", out_names, OUT_NNAMES, OUT_MD, OUT_MD_TITLE, ".costbench-report"};
const outdir_kind outdir_trajectory = {"trajectory", out_traj_names, OUT_TRAJ_NNAMES, OUT_TRAJ_MD, OUT_TRAJ_MD_TITLE,
                                       ".costbench-trajectory"};

#define OUT_ALL(k) ((unsigned)((1ull << (k)->nnames) - 1))

/* A directory is replaced only when everything in it is a file costbench wrote: the files its
 * marker lists (or, in a directory of a costbench that wrote no marker, the kind's own file
 * names, its Markdown file starting with its title), and the marker. Anything else is never
 * deleted: such a directory is refused. */
typedef enum { OUT_ABSENT, OUT_EMPTY, OUT_REPORT } out_state;

static int out_name_index(const outdir_kind *k, const char *name)
{
    for (int i = 0; i < k->nnames; i++)
        if (strcmp(name, k->names[i]) == 0) return i;
    return -1;
}

/* Removes from `dir` the files of `owned` (bits of k->names) and the marker, then `dir` itself.
 * Nothing else is deleted: a directory that still holds something is kept, with a warning. */
static void out_remove(const outdir_kind *k, const char *dir, unsigned owned)
{
    char p[CB_PATH_MAX];
    for (int i = 0; i <= k->nnames; i++) {
        if (i < k->nnames && !(owned >> i & 1u)) continue;
        if (path_fmt(p, sizeof p, "%s/%s", dir, i < k->nnames ? k->names[i] : k->marker) != 0) return;
        if (unlink(p) != 0 && errno != ENOENT) err_warn("cannot remove '%s': %s", p, strerror(errno));
    }
    if (rmdir(dir) != 0 && errno != ENOENT)
        err_warn("kept '%s': %s (costbench deletes only the files it wrote)", dir, strerror(errno));
}

/* One error line naming the directory and a file that keeps it from being replaced (NULL: it has
 * no Markdown file of the kind), and a hint. */
static int out_refuse(const outdir_kind *k, const char *dir, const char *name, int marked)
{
    if (!name) {
        err_usage("flag '--out': '%s' exists and is not a costbench %s directory (it has no %s)", dir, k->what,
                  k->names[k->md]);
        err_hint("choose another --out directory: costbench replaces only a directory of files it wrote");
        return CB_EUSAGE;
    }
    if (marked)
        err_usage("flag '--out': '%s' holds '%s', which costbench did not write; nothing in it is replaced", dir, name);
    else
        err_usage("flag '--out': '%s' exists and is not a costbench %s directory ('%s' was not written by costbench)",
                  dir, k->what, name);
    err_hint("choose another --out directory, or move '%s' out of '%s': costbench replaces only a directory of files "
             "it wrote",
             name, dir);
    return CB_EUSAGE;
}

/* The files `dir`'s marker lists, as bits of k->names (*found = 0 and none when it has no
 * marker). A marker that is not a regular file, or lists a name the kind never writes, is an error. */
static int out_marker_read(const outdir_kind *k, const char *dir, int *found, unsigned *listed)
{
    char p[CB_PATH_MAX], line[256];
    struct stat st;
    int rc, ln = 0;
    *found = 0, *listed = 0;
    if ((rc = path_fmt(p, sizeof p, "%s/%s", dir, k->marker)) != 0) return rc;
    if (lstat(p, &st) != 0) return errno == ENOENT ? 0 : err_msg("cannot read '%s': %s", p, strerror(errno));
    if (!S_ISREG(st.st_mode)) return out_refuse(k, dir, k->marker, 0);
    FILE *f = fopen(p, "r");
    if (!f) return err_msg("cannot read '%s': %s", p, strerror(errno));
    *found = 1;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        ln++;
        line[strcspn(line, "\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        int i = out_name_index(k, line);
        if (i >= 0) {
            *listed |= 1u << i;
            continue;
        }
        rc = err_usage("%s:%d: '%.80s' is not a file costbench's %s writes; nothing in '%s' is replaced", p, ln, line,
                       k->what, dir);
        err_hint("choose another --out directory");
    }
    if (rc == 0 && ferror(f)) rc = err_msg("cannot read '%s': %s", p, strerror(errno));
    fclose(f);
    return rc;
}

/* Whether dir/k->names[i] can be a file costbench wrote: a regular file, and the Markdown file
 * starts with the kind's title. */
static int out_file_is_ours(const outdir_kind *k, const char *dir, int i)
{
    char p[CB_PATH_MAX], head[128] = "";
    struct stat st;
    if (path_fmt(p, sizeof p, "%s/%s", dir, k->names[i]) != 0) return 0;
    if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    if (i != k->md) return 1;
    size_t len = strlen(k->md_title);
    FILE *f = fopen(p, "r");
    if (!f || len >= sizeof head) {
        if (f) fclose(f);
        return 0;
    }
    size_t got = fread(head, 1, len, f);
    fclose(f);
    head[got] = '\0';
    return strcmp(head, k->md_title) == 0;
}

/* What `dir` is: absent, empty, or a directory of the kind with the files costbench wrote there
 * (`owned`, bits of k->names); a directory holding anything else is refused (exit 2). */
static int out_dir_check(const outdir_kind *k, const char *dir, out_state *state, unsigned *owned)
{
    struct stat st;
    int marked, rc, n = 0;
    unsigned listed;
    char foreign[256] = "", unowned[256] = "";
    *state = OUT_ABSENT, *owned = 0;
    if (lstat(dir, &st) != 0) return errno == ENOENT ? 0 : err_msg("--out '%s': %s", dir, strerror(errno));
    if (S_ISLNK(st.st_mode))
        return err_usage("flag '--out': '%s' is a symbolic link; give the directory it points to", dir);
    if (!S_ISDIR(st.st_mode)) return err_usage("flag '--out': '%s' exists and is not a directory", dir);
    if ((rc = out_marker_read(k, dir, &marked, &listed)) != 0) return rc;
    DIR *d = opendir(dir);
    if (!d) return err_msg("cannot read '%s': %s", dir, strerror(errno));
    struct dirent *e;
    while ((errno = 0, e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        n++;
        if (marked && strcmp(e->d_name, k->marker) == 0) continue;
        int i = out_name_index(k, e->d_name);
        if (i >= 0 && (!marked || listed >> i & 1u) && out_file_is_ours(k, dir, i)) {
            *owned |= 1u << i;
            continue;
        }
        /* the first name the kind never writes, else the first of its names costbench did not write */
        char *slot = i < 0 ? foreign : unowned;
        if (!slot[0]) snprintf(slot, sizeof foreign, "%s", e->d_name);
    }
    rc = errno ? err_msg("cannot read '%s': %s", dir, strerror(errno)) : 0;
    closedir(d);
    if (rc) return rc;
    if (foreign[0] || unowned[0]) return out_refuse(k, dir, foreign[0] ? foreign : unowned, marked);
    if (n > 0 && !marked && !(*owned & 1u << k->md)) return out_refuse(k, dir, NULL, 0);
    *state = n == 0 ? OUT_EMPTY : OUT_REPORT;
    return 0;
}

/* `dir` without trailing slashes; a name that is no directory of its own ("/", ".", "..") is refused. */
static int out_dir_name(char *out, size_t n, const char *dir)
{
    int rc = path_fmt(out, n, "%s", dir);
    if (rc) return rc;
    size_t k = strlen(out);
    while (k > 1 && out[k - 1] == '/') out[--k] = '\0';
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return err_usage("flag '--out': '%s': expected the name of a new directory or of a costbench output directory",
                         dir);
    return 0;
}

/* Names a sibling of `dir` ("<dir>.<what>.<pid>", then ".<k>" while taken). */
static int out_sibling(char *out, size_t n, const char *dir, const char *what, int k)
{
    if (k == 0) return path_fmt(out, n, "%s.%s.%ld", dir, what, (long)getpid());
    return path_fmt(out, n, "%s.%s.%ld.%d", dir, what, (long)getpid(), k);
}

/* A new, empty temporary directory next to `dir` (never one that existed). */
static int out_tmp_make(const char *dir, char *tmp, size_t n)
{
    for (int k = 0; k < 100; k++) {
        int rc = out_sibling(tmp, n, dir, "tmp", k);
        if (rc) return rc;
        if (mkdir(tmp, 0755) == 0) return 0;
        if (errno != EEXIST) break;
    }
    return err_msg("cannot create '%s': %s", tmp, strerror(errno));
}

/* The marker of the kind in `dir`: the names of the files `wrote` lists. */
static int out_marker_write(const outdir_kind *k, const char *dir, unsigned wrote)
{
    char p[CB_PATH_MAX];
    int rc = path_fmt(p, sizeof p, "%s/%s", dir, k->marker);
    if (rc) return rc;
    FILE *f = fopen(p, "w");
    if (!f) return err_msg("cannot write '%s': %s", p, strerror(errno));
    fprintf(f, "# costbench %s directory: the files costbench wrote here, one a line. A new %s replaces\n"
               "# this directory only while it holds nothing else, and deletes only these files.\n", k->what, k->what);
    for (int i = 0; i < k->nnames; i++)
        if (wrote >> i & 1u) fprintf(f, "%s\n", k->names[i]);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return err_msg("cannot write '%s': %s", p, strerror(errno ? errno : EIO));
    return 0;
}

/* The earlier output `dir` renamed to a sibling that did not exist ("<dir>.old.<pid>"). */
static int out_move_aside(const char *dir, char *old, size_t n)
{
    struct stat st;
    for (int k = 0; k < 100; k++) {
        int rc = out_sibling(old, n, dir, "old", k);
        if (rc) return rc;
        if (lstat(old, &st) == 0) continue; /* never rename over anything */
        if (rename(dir, old) == 0) return 0;
        return err_msg("cannot move the earlier output '%s' aside: %s", dir, strerror(errno));
    }
    return err_msg("cannot move the earlier output '%s' aside: '%s' exists", dir, old);
}

/* Renames the finished `tmp` to `dir`, checked again (it may have changed while the files were
 * written). An absent or empty `dir` is taken at once (rename replaces an empty directory); an
 * earlier output is moved aside, the new one takes its name, and then only the files costbench
 * wrote in the old one are deleted. */
static int out_publish(const outdir_kind *k, const char *tmp, const char *dir)
{
    out_state state;
    unsigned owned;
    char old[CB_PATH_MAX];
    int rc = out_dir_check(k, dir, &state, &owned);
    if (rc) return rc;
    if (state == OUT_REPORT && (rc = out_move_aside(dir, old, sizeof old)) != 0) return rc;
    if (rename(tmp, dir) != 0) {
        rc = err_msg("cannot rename '%s' to '%s': %s", tmp, dir, strerror(errno));
        if (state == OUT_REPORT && rename(old, dir) != 0)
            err_warn("the earlier output is in '%s': %s", old, strerror(errno));
        return rc;
    }
    if (state == OUT_REPORT) out_remove(k, old, owned);
    return 0;
}

int outdir_open(const outdir_kind *k, const char *out_dir, char *dir, size_t ndir, char *tmp, size_t ntmp)
{
    out_state state;
    unsigned owned;
    int rc;
    if ((rc = out_dir_name(dir, ndir, out_dir)) != 0) return rc;
    if ((rc = out_dir_check(k, dir, &state, &owned)) != 0) return rc;
    return out_tmp_make(dir, tmp, ntmp);
}

int outdir_close(const outdir_kind *k, const char *tmp, const char *dir, unsigned wrote, int rc)
{
    if (rc == 0) rc = out_marker_write(k, tmp, wrote);
    if (rc == 0) rc = out_publish(k, tmp, dir);
    if (rc != 0) out_remove(k, tmp, OUT_ALL(k));
    return rc;
}
