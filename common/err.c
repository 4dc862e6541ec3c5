#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages of ranks other than 0, held until err_release_held (see err.h). */
static char held[4096];
static size_t held_len;

int err_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *s = getenv(vars[i]);
        if (s && *s) return atoi(s);
    }
    return 0;
}

static void vprefixed(const char *prefix, const char *fmt, va_list ap)
{
    fflush(stdout);
    int rank = err_rank();
    if (rank == 0) {
        fputs(prefix, stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        return;
    }
    char line[1024];
    int k = snprintf(line, sizeof line, "rank %d: %s", rank, prefix);
    if (k > 0 && (size_t)k < sizeof line) vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
    size_t n = strlen(line);
    if (held_len + n + 2 <= sizeof held) {
        memcpy(held + held_len, line, n);
        held_len += n;
        held[held_len++] = '\n';
        held[held_len] = '\0';
    }
}

void err_release_held(void)
{
    if (held_len) fputs(held, stderr);
    held_len = 0;
    held[0] = '\0';
}

int err_msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprefixed("error: ", fmt, ap);
    va_end(ap);
    return CB_EFAIL;
}

int err_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprefixed("error: ", fmt, ap);
    va_end(ap);
    return CB_EUSAGE;
}

void err_hint(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprefixed("hint: ", fmt, ap);
    va_end(ap);
}

void err_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprefixed("warning: ", fmt, ap);
    va_end(ap);
}

int err_exit_status(int rc)
{
    if (rc == CB_OK) return 0;
    if (rc == CB_EUSAGE) return 2;
    return 1;
}
