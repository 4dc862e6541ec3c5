#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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
