#include "parse.h"

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

/* The length of the decimal number s starts with: an optional sign, digits with an optional
 * fraction (at least one digit), an optional exponent e[sign]digits; 0 when there is none. Nothing
 * else: no white space, hex, inf or nan (strtod takes them all). *frac: a fraction or exponent. */
static size_t decimal_span(const char *s, int *frac)
{
    size_t i = (*s == '+' || *s == '-') ? 1 : 0, d = strspn(s + i, "0123456789");
    i += d;
    *frac = 0;
    if (s[i] == '.') {
        size_t f = strspn(s + i + 1, "0123456789");
        d += f, i += 1 + f, *frac = 1;
    }
    if (d == 0) return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1 + (s[i + 1] == '+' || s[i + 1] == '-'), e = strspn(s + j, "0123456789");
        if (e > 0) i = j + e, *frac = 1;
    }
    return i;
}

int parse_long(const char *s, long lo, long hi, int suffixes, const char *what, long *out)
{
    if (s == NULL || *s == '\0')
        return err_usage("%s: expected an integer from %ld to %ld, got an empty value", what, lo, hi);
    int frac;
    size_t n = decimal_span(s, &frac);
    double mult = 1;
    if (n == 0 || (s[n] != '\0' && (!suffixes || suffix_mult(s + n, &mult) != 0)) || (frac && !suffixes)) goto bad;
    errno = 0;
    long v;
    if (frac) { /* 1.5M, 1e9: whole after scaling */
        double d = strtod(s, NULL) * mult;
        if (errno == ERANGE || d != floor(d) || !fits_long(d)) goto bad;
        v = (long)d;
    } else {
        v = strtol(s, NULL, 10);
        if (errno == ERANGE || (mult != 1 && !fits_long((double)v * mult))) goto bad;
        if (mult != 1) v = (long)((double)v * mult);
    }
    if (v < lo || v > hi) goto bad;
    *out = v;
    return 0;
bad:
    return err_usage("%s: expected an integer from %ld to %ld, got '%s'", what, lo, hi, s);
}

int parse_double(const char *s, double lo, double hi, const char *what, double *out)
{
    if (s == NULL || *s == '\0')
        return err_usage("%s: expected a number from %g to %g, got an empty value", what, lo, hi);
    int frac;
    size_t n = decimal_span(s, &frac);
    errno = 0;
    double v = n > 0 && s[n] == '\0' ? strtod(s, NULL) : NAN;
    if (errno == ERANGE || !isfinite(v) || v < lo || v > hi)
        return err_usage("%s: expected a number from %g to %g, got '%s'", what, lo, hi, s);
    *out = v;
    return 0;
}

/* A copy of s in buf split at its commas into out, every entry non-empty. Returns the count or
 * CB_EUSAGE. */
static int list_split(const char *s, const char *what, char *buf, size_t bufsz, char **out, int cap)
{
    if (s == NULL || *s == '\0') return err_usage("%s: expected a comma-separated list, got an empty value", what);
    if (strlen(s) >= bufsz) return err_usage("%s: list is too long (%zu characters)", what, strlen(s));
    strcpy(buf, s);
    int n = 0;
    for (char *p = buf;; n++) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (*p == '\0') return err_usage("%s: an empty entry in '%s'", what, s);
        if (n == cap) return err_usage("%s: at most %d values, got more", what, cap);
        out[n] = p;
        if (!comma) return n + 1;
        p = comma + 1;
    }
}

int parse_long_list(const char *s, long lo, long hi, int flags, const char *what, long *out, int cap)
{
    enum { MAX_ENTRIES = 512 }; /* each takes at least two of buf's characters */
    char buf[1024], *tok[MAX_ENTRIES];
    int n = list_split(s, what, buf, sizeof buf, tok, cap < MAX_ENTRIES ? cap : MAX_ENTRIES);
    for (int i = 0; i < n; i++) {
        if (parse_long(tok[i], lo, hi, flags & PARSE_SUFFIXES, what, &out[i]) != 0) return CB_EUSAGE;
        for (int j = 0; j < i && !(flags & PARSE_REPEATS); j++)
            if (out[j] == out[i]) return err_usage("%s: %ld given twice", what, out[i]);
    }
    return n;
}

int parse_word_list(const char *s, const char *what, int flags, char *buf, size_t bufsz, char **out, int cap)
{
    int n = list_split(s, what, buf, bufsz, out, cap);
    for (int i = 1; i < n && !(flags & PARSE_REPEATS); i++)
        for (int j = 0; j < i; j++)
            if (strcmp(out[j], out[i]) == 0) return err_usage("%s: '%s' given twice", what, out[i]);
    return n;
}
