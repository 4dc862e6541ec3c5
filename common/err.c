#include "err.h"

#include <stdarg.h>
#include <stdio.h>

static void vprefixed(const char *prefix, const char *fmt, va_list ap)
{
    fflush(stdout);
    fputs(prefix, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
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
