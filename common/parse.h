/* parse.h: strict number parsing (strtol/strtod + endptr + errno + range + isfinite).
 * Each function prints one error naming `what` (a flag or file:line: column) on failure. */
#ifndef CB_PARSE_H
#define CB_PARSE_H

/* Integer in [lo, hi]. Accepts an optional K/M/G/T (x1e3..) or Ki/Mi/Gi (x1024..) suffix
 * only when `suffixes` is non-zero. Returns 0 or CB_EUSAGE. */
int parse_long(const char *s, long lo, long hi, int suffixes, const char *what, long *out);
/* Finite number in [lo, hi]. Returns 0 or CB_EUSAGE. */
int parse_double(const char *s, double lo, double hi, const char *what, double *out);
/* Comma-separated integers, each in [lo, hi], at most `cap` of them. Returns count or CB_EUSAGE. */
int parse_long_list(const char *s, long lo, long hi, int suffixes, const char *what, long *out, int cap);
/* Comma-separated words into `out` (pointers into `buf`, which receives a copy of s).
 * Returns count or CB_EUSAGE. */
int parse_word_list(const char *s, const char *what, char *buf, int bufsz, char **out, int cap);

#endif
