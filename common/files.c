#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"

int path_fmt(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n) {
        int shown = n > 60 ? 60 : (int)(n ? n - 1 : 0);
        err_usage("path too long (%d characters, at most %zu): '%.*s...'", k, n ? n - 1 : 0, shown, out);
        if (n) out[0] = '\0';
        return CB_EUSAGE;
    }
    return 0;
}

FILE *file_open_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_msg("cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        err_msg("cannot open '%s': %s", path, strerror(errno));
        fclose(f);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        err_msg("'%s' is a directory, expected a file", path);
        fclose(f);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        err_msg("'%s' is not a regular file", path);
        fclose(f);
        return NULL;
    }
    return f;
}

char *file_read_all(const char *path, size_t max_bytes, size_t *n)
{
    FILE *f = file_open_read(path);
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    int nomem = !buf, big = 0;
    while (!nomem && !big) {
        if (len >= max_bytes) { /* full: a byte more is too much */
            big = fgetc(f) != EOF;
            break;
        }
        if (len == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (!b) nomem = 1;
            else buf = b, cap *= 2;
            continue;
        }
        size_t got = fread(buf + len, 1, (cap < max_bytes ? cap : max_bytes) - len, f);
        if (got == 0) break;
        len += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (nomem || big || bad) {
        free(buf);
        if (big) err_msg("'%s': larger than %zu MiB", path, max_bytes >> 20);
        else err_msg("cannot read '%s': %s", path, nomem ? "out of memory" : "read error");
        return NULL;
    }
    buf[len] = '\0';
    *n = len;
    return buf;
}

int file_commit(const char *tmp, const char *path)
{
    int fd = open(tmp, O_RDONLY);
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        unlink(tmp);
        return err_msg("cannot write '%s': %s", path, strerror(e));
    }
    close(fd);
    struct stat old;
    if (stat(path, &old) == 0 && S_ISREG(old.st_mode) && chmod(tmp, old.st_mode & 07777) != 0) {
        int e = errno;
        unlink(tmp);
        return err_msg("cannot write '%s': %s", path, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return err_msg("cannot write '%s': %s", path, strerror(e));
    }
    char *d = strdup(path);
    if (d) {
        int dfd = open(dirname(d), O_RDONLY | O_DIRECTORY);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        free(d);
    }
    return 0;
}

int file_parse_pid(const char *s, long *pid)
{
    if (s[0] < '1' || s[0] > '9') return 0;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || errno != 0) return 0;
    *pid = v;
    return 1;
}

/* ---------------------------------------------------------------- a user's file replaced whole */

/* `path` with its symbolic links followed to the end (a missing file ends the walk: it will be
 * created) into out (n bytes). Returns 0 or CB_EUSAGE/CB_EFAIL (error printed). */
static int follow_links(const char *path, char *out, size_t n)
{
    if (path_fmt(out, n, "%s", path) != 0) return CB_EUSAGE;
    for (int hops = 0; hops < 40; hops++) {
        struct stat st;
        if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode)) return 0;
        char target[CB_PATH_MAX], next[CB_PATH_MAX];
        ssize_t k = readlink(out, target, sizeof target);
        if (k < 0) return err_msg("cannot read the symbolic link '%s': %s", out, strerror(errno));
        if ((size_t)k >= sizeof target) return err_usage("'%s': its symbolic link's target is too long", path);
        target[k] = '\0';
        const char *slash = strrchr(out, '/');
        int rc = target[0] == '/' || !slash ? path_fmt(next, sizeof next, "%s", target)
                                            : path_fmt(next, sizeof next, "%.*s/%s", (int)(slash - out), out, target);
        if (rc != 0 || path_fmt(out, n, "%s", next) != 0) return CB_EUSAGE;
    }
    return err_usage("'%s': too many levels of symbolic links", path);
}

int file_out_target(const char *path, char *resolved, size_t n)
{
    int rc = follow_links(path, resolved, n);
    if (rc != 0) return rc;
    char shown[CB_WHERE_MAX + CB_PATH_MAX];
    if (strcmp(path, resolved) == 0) snprintf(shown, sizeof shown, "'%s'", path);
    else snprintf(shown, sizeof shown, "'%s' (a link to '%s')", path, resolved);
    struct stat st;
    if (stat(resolved, &st) != 0) return 0; /* a new file */
    if (S_ISDIR(st.st_mode)) return err_msg("cannot write %s: it is a directory, expected a file", shown);
    if (!S_ISREG(st.st_mode)) return err_msg("cannot write %s: it is not a regular file", shown);
    if (!(st.st_mode & 0222) || access(resolved, W_OK) != 0)
        return err_msg("cannot write %s: it is read-only (mode %03o); make it writable or write another file", shown,
                       (unsigned)(st.st_mode & 0777));
    if (st.st_nlink > 1)
        return err_msg("cannot write %s: it has %ju hard links, and replacing it would split them; write a copy, "
                       "or remove the other links",
                       shown, (uintmax_t)st.st_nlink);
    return 0;
}

/* Removes each `name`.tmp.PID in `dir` that no process holds (file_out_begin's flock): a killed
 * write's temporary. */
static void remove_stale(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    if (!d) return;
    const size_t n = strlen(name);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid;
        char p[CB_PATH_MAX];
        if (strncmp(e->d_name, name, n) != 0 || strncmp(e->d_name + n, ".tmp.", 5) != 0 ||
            !file_parse_pid(e->d_name + n + 5, &pid) || path_fmt(p, sizeof p, "%s/%s", dir, e->d_name) != 0)
            continue;
        int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) continue;
        struct stat held, named;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &held) == 0 && lstat(p, &named) == 0 &&
            S_ISREG(held.st_mode) && held.st_dev == named.st_dev && held.st_ino == named.st_ino && unlink(p) == 0)
            fprintf(stderr, "note: removed '%s', left by a killed write\n", p);
        close(fd);
    }
    closedir(d);
}

/* Creates o->tmp and takes its flock, checking that the name still holds the file locked (a
 * cleaner may remove an unlocked temporary between the two). */
static int create_locked(file_out *o)
{
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0) return err_msg("cannot write '%s': %s", o->path, strerror(errno));
        struct stat held, named;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &held) == 0 && lstat(o->tmp, &named) == 0 &&
            held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
            o->lock_fd = fd;
            return 0;
        }
        close(fd);
    }
    return err_msg("cannot write '%s': its temporary '%s' is held by another process", o->path, o->tmp);
}

int file_out_begin(file_out *o, const char *path)
{
    o->tmp[0] = '\0';
    o->lock_fd = -1;
    int rc = file_out_target(path, o->path, sizeof o->path);
    if (rc == 0 && path_fmt(o->tmp, sizeof o->tmp, "%s.tmp.%ld", o->path, (long)getpid()) != 0) rc = CB_EUSAGE;
    if (rc != 0) {
        o->tmp[0] = '\0';
        return rc;
    }
    char d[CB_PATH_MAX], b[CB_PATH_MAX];
    snprintf(d, sizeof d, "%s", o->path);
    snprintf(b, sizeof b, "%s", o->path);
    remove_stale(dirname(d), basename(b));
    if ((rc = create_locked(o)) != 0) o->tmp[0] = '\0';
    return rc;
}

static void release(file_out *o)
{
    if (o->lock_fd >= 0) close(o->lock_fd);
    o->lock_fd = -1;
    o->tmp[0] = '\0';
}

int file_out_commit(file_out *o)
{
    int rc = file_commit(o->tmp, o->path);
    release(o);
    return rc;
}

void file_out_abort(file_out *o)
{
    if (o->tmp[0]) unlink(o->tmp);
    release(o);
}
