#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

/* 2^63: the first double a long cannot hold ((double)LONG_MAX rounds up to it, so a comparison
 * with LONG_MAX would let it through to an undefined conversion). */
#define LONG_LIMIT 9223372036854775808.0

static int fits_long(double d) { return d >= -LONG_LIMIT && d < LONG_LIMIT; }

static int suffix_mult(const char *end, double *mult)
{
    static const struct { const char *s; double m; } tab[] = {
        {"", 1}, {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"B", 1e9}, {"T", 1e12},
        {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(end, tab[i].s) == 0) { *mult = tab[i].m; return 0; }
    return -1;
}

int parse_long(const char *s, long lo, long hi, int suffixes, const char *what, long *out)
{
    if (s == NULL || *s == '\0')
        return err_usage("%s: expected an integer from %ld to %ld, got an empty value", what, lo, hi);
    errno = 0;
    char *end = NULL;
    while (isspace((unsigned char)*s)) s++;
    double mult = 1;
    long v;
    if (suffixes && (strpbrk(s, ".eE") != NULL)) {
        /* allow 1.5M or 1e9 style when suffixes are on */
        double d = strtod(s, &end);
        if (end == s || errno == ERANGE || !isfinite(d) || suffix_mult(end, &mult) != 0)
            goto bad;
        d *= mult;
        if (d != floor(d) || !fits_long(d)) goto bad;
        v = (long)d;
    } else {
        v = strtol(s, &end, 10);
        if (end == s || errno == ERANGE) goto bad;
        if (*end != '\0') {
            if (!suffixes || suffix_mult(end, &mult) != 0) goto bad;
            double d = (double)v * mult;
            if (!fits_long(d)) goto bad;
            v = (long)d;
        }
    }
    if (v < lo || v > hi)
        return err_usage("%s: expected an integer from %ld to %ld, got '%s'", what, lo, hi, s);
    *out = v;
    return 0;
bad:
    return err_usage("%s: expected an integer from %ld to %ld, got '%s'", what, lo, hi, s);
}

int parse_double(const char *s, double lo, double hi, const char *what, double *out)
{
    if (s == NULL || *s == '\0')
        return err_usage("%s: expected a number from %g to %g, got an empty value", what, lo, hi);
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    while (end && isspace((unsigned char)*end)) end++;
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        return err_usage("%s: expected a number from %g to %g, got '%s'", what, lo, hi, s);
    if (v < lo || v > hi)
        return err_usage("%s: expected a number from %g to %g, got '%s'", what, lo, hi, s);
    *out = v;
    return 0;
}

int parse_long_list(const char *s, long lo, long hi, int suffixes, const char *what, long *out, int cap)
{
    char buf[1024];
    if (s == NULL || *s == '\0')
        return err_usage("%s: expected a comma-separated list of integers, got an empty value", what);
    if (strlen(s) >= sizeof buf)
        return err_usage("%s: list is too long (%zu characters)", what, strlen(s));
    strcpy(buf, s);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == cap) return err_usage("%s: at most %d values, got more", what, cap);
        if (parse_long(tok, lo, hi, suffixes, what, &out[n]) != 0) return CB_EUSAGE;
        n++;
    }
    if (n == 0) return err_usage("%s: expected a comma-separated list of integers, got '%s'", what, s);
    return n;
}

int parse_word_list(const char *s, const char *what, char *buf, int bufsz, char **out, int cap)
{
    if (s == NULL || *s == '\0') return err_usage("%s: expected a comma-separated list, got an empty value", what);
    if ((int)strlen(s) >= bufsz) return err_usage("%s: list is too long", what);
    strcpy(buf, s);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == cap) return err_usage("%s: at most %d values, got more", what, cap);
        out[n++] = tok;
    }
    if (n == 0) return err_usage("%s: expected a comma-separated list, got '%s'", what, s);
    return n;
}
