/* parse.h: strict parsing of numbers (decimal, strtol/strtod + errno + range + isfinite) and lists.
 * Each function prints one error naming `what` (a flag or file:line: column) on failure. */
#ifndef CB_PARSE_H
#define CB_PARSE_H

#include <stddef.h>

/* Numbers are decimal only: an optional sign, digits with an optional fraction, an optional
 * exponent (e[sign]digits), then the suffix when one is allowed; no white space, hex, inf or nan. */

/* Integer in [lo, hi]. Accepts an optional K/M/G/T (x1e3..) or Ki/Mi/Gi (x1024..) suffix, and a
 * fraction or exponent that the suffix makes whole (1.5M, 1e9), only when `suffixes` is non-zero.
 * Returns 0 or CB_EUSAGE. */
int parse_long(const char *s, long lo, long hi, int suffixes, const char *what, long *out);
/* Finite number in [lo, hi]. Returns 0 or CB_EUSAGE. */
int parse_double(const char *s, double lo, double hi, const char *what, double *out);

/* What the list parsers accept besides plain entries. */
#define PARSE_SUFFIXES 1 /* integers with parse_long's suffixes */
#define PARSE_REPEATS 2  /* an entry may repeat: a list parallel to another, one entry per entry of it */

/* A list is comma-separated entries, none empty, each given once (the same word, or the same
 * integer however written: 1000 and 1K) unless `flags` has PARSE_REPEATS. Every command's list
 * flags go through these two, so that a repeat is one error naming the flag and the value. */
/* Integers, each in [lo, hi], at most `cap` of them. Returns the count or CB_EUSAGE. */
int parse_long_list(const char *s, long lo, long hi, int flags, const char *what, long *out, int cap);
/* Words into `out` (pointers into `buf`, which receives a copy of s), at most `cap` of them.
 * Returns the count or CB_EUSAGE. */
int parse_word_list(const char *s, const char *what, int flags, char *buf, size_t bufsz, char **out, int cap);

#endif
