/* parse.h: strict parsing of numbers (decimal, strtol/strtod + errno + range + isfinite).
 * Each function prints one error naming `what` (a flag or file:line: column) on failure. */
#ifndef CB_PARSE_H
#define CB_PARSE_H

/* Numbers are decimal only: an optional sign, digits with an optional fraction, an optional
 * exponent (e[sign]digits), then the suffix when one is allowed; no white space, hex, inf or nan. */

/* Integer in [lo, hi]. Accepts an optional K/M/G/T (x1e3..) or Ki/Mi/Gi (x1024..) suffix, and a
 * fraction or exponent that the suffix makes whole (1.5M, 1e9), only when `suffixes` is non-zero.
 * Returns 0 or CB_EUSAGE. */
int parse_long(const char *s, long lo, long hi, int suffixes, const char *what, long *out);
/* Finite number in [lo, hi]. Returns 0 or CB_EUSAGE. */
int parse_double(const char *s, double lo, double hi, const char *what, double *out);

/* Comma-separated integers, each in [lo, hi], at most `cap` of them. Returns count or CB_EUSAGE. */
int parse_long_list(const char *s, long lo, long hi, int suffixes, const char *what, long *out, int cap);
/* Comma-separated words into `out` (pointers into `buf`, which receives a copy of s).
 * Returns count or CB_EUSAGE. */
int parse_word_list(const char *s, const char *what, char *buf, int bufsz, char **out, int cap);

#endif
