#include "fuzz_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_FILES = 4, MAX_DIRS = 2 };

static int report_fd = 2;       /* the original stderr */
static const char *harness = "fuzz";
static char stderr_buf[1 << 16];

void fuzz_init(int argc, char **argv)
{
    const char *slash = strrchr(argv[0], '/');
    harness = slash ? slash + 1 : argv[0];
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-close_fd_mask=", 15) == 0) quiet = (strtol(argv[i] + 15, NULL, 10) & 2) != 0;
    }
    if (!quiet) return;
    int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    if (fd >= 0) report_fd = fd;
    setvbuf(stderr, stderr_buf, _IOFBF, sizeof stderr_buf);
}

void fuzz_fail(const char *fmt, ...)
{
    fflush(stderr);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dprintf(report_fd, "%s: %s\n", harness, msg);
    abort();
}

void fuzz_input_done(void)
{
    fflush(stderr);
}

static struct {
    char path[256];
    int fd;
} files[MAX_FILES];
static int nfiles;

static void remove_all(void)
{
    for (int i = nfiles - 1; i >= 0; i--) {
        close(files[i].fd);
        unlink(files[i].path);
    }
    nfiles = 0;
}

static int add_file(const char *path, int fd)
{
    if (nfiles == 0) atexit(remove_all);
    if (nfiles == MAX_FILES) {
        fprintf(stderr, "error: %s: more than %d scratch files\n", harness, MAX_FILES);
        close(fd);
        unlink(path);
        exit(1);
    }
    snprintf(files[nfiles].path, sizeof files[nfiles].path, "%s", path);
    files[nfiles].fd = fd;
    return nfiles++;
}

/* path, and when it is a directory what it holds `depth` levels down. */
static void remove_tree(const char *path, int depth)
{
    if (unlink(path) == 0 || (errno != EISDIR && errno != EPERM)) return;
    DIR *d = depth > 0 ? opendir(path) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char sub[512];
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub)
            remove_tree(sub, depth - 1);
    }
    if (d) closedir(d);
    rmdir(path);
}

/* Files and directories "costbench-fuzz-<pid>-..." of processes that are gone: a crash skips exit
 * handlers. */
static void remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    const char *prefix = "costbench-fuzz-";
    size_t np = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, np) != 0) continue;
        char *end;
        long pid = strtol(e->d_name + np, &end, 10);
        if (end == e->d_name + np || *end != '-' || pid <= 0) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char path[512];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path) remove_tree(path, 2);
    }
    closedir(d);
}

static char dirs[MAX_DIRS][256];
static int ndirs, stale_done;

static void remove_dirs(void)
{
    for (int i = ndirs - 1; i >= 0; i--) remove_tree(dirs[i], 2);
    ndirs = 0;
}

/* Where scratch files go; the first call removes those of crashed harnesses. */
static const char *scratch_root(void)
{
    const char *dir = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
    if (!stale_done) remove_stale(dir);
    stale_done = 1;
    return dir;
}

const char *fuzz_tmp_dir(const char *stem)
{
    const char *root = scratch_root();
    if (ndirs == MAX_DIRS) {
        fprintf(stderr, "error: %s: more than %d scratch directories\n", harness, MAX_DIRS);
        exit(1);
    }
    char *path = dirs[ndirs];
    if (snprintf(path, sizeof dirs[0], "%s/costbench-fuzz-%ld-%s-XXXXXX", root, (long)getpid(), stem) >=
            (int)sizeof dirs[0] ||
        !mkdtemp(path)) {
        fprintf(stderr, "error: %s: cannot create a scratch directory for '%s': %s\n", harness, stem, strerror(errno));
        exit(1);
    }
    if (ndirs++ == 0) atexit(remove_dirs);
    return path;
}

void fuzz_file_write(const char *path, const void *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t done = 0;
    while (fd >= 0 && done < n) {
        ssize_t k = write(fd, (const char *)data + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        done += (size_t)k;
    }
    if (fd < 0 || done < n || close(fd) != 0) fuzz_fail("cannot write '%s': %s", path, strerror(errno));
}

size_t fuzz_split_config(const uint8_t *data, size_t n, const uint8_t **config, size_t *config_n)
{
    const size_t k = strlen(FUZZ_CONFIG_SEP);
    const uint8_t *sep = n >= k ? memmem(data, n, FUZZ_CONFIG_SEP, k) : NULL;
    *config = sep ? sep + k : NULL;
    *config_n = sep ? n - (size_t)(sep + k - data) : 0;
    return sep ? (size_t)(sep - data) + 1 : n; /* the log keeps its last newline */
}

int fuzz_tmp_new(const char *stem)
{
    const char *dir = scratch_root();
    char path[256];
    if (snprintf(path, sizeof path, "%s/costbench-fuzz-%ld-%s-XXXXXX", dir, (long)getpid(), stem) >= (int)sizeof path) {
        fprintf(stderr, "error: %s: stem '%s' is too long\n", harness, stem);
        exit(1);
    }
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "error: %s: cannot create '%s': %s\n", harness, path, strerror(errno));
        exit(1);
    }
    return add_file(path, fd);
}

int fuzz_tmp_sibling(int base, const char *suffix)
{
    char path[256];
    if (snprintf(path, sizeof path, "%s%s", files[base].path, suffix) >= (int)sizeof path) {
        fprintf(stderr, "error: %s: '%s%s' is too long\n", harness, files[base].path, suffix);
        exit(1);
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "error: %s: cannot create '%s': %s\n", harness, path, strerror(errno));
        exit(1);
    }
    return add_file(path, fd);
}

const char *fuzz_tmp_path(int h)
{
    return files[h].path;
}

void fuzz_tmp_write(int h, const uint8_t *data, size_t n)
{
    int fd = files[h].fd;
    if (ftruncate(fd, 0) != 0) goto fail;
    size_t done = 0;
    while (done < n) {
        ssize_t k = pwrite(fd, data + done, n - done, (off_t)done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) goto fail;
        done += (size_t)k;
    }
    return;
fail:
    fuzz_fail("cannot write the scratch file '%s': %s", files[h].path, strerror(errno));
}
