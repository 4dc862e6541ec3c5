/* opts.h: one option parser for every subcommand (--name VALUE or --name=VALUE).
 * Each spec names its destination and its valid range; parsing validates as it goes and
 * prints one error naming the flag. Help goes to stdout, usage errors to stderr. */
#ifndef CB_OPTS_H
#define CB_OPTS_H

#include <stdio.h>

typedef enum {
    OPT_FLAG,          /* int*: set to 1 */
    OPT_LONG,          /* long*: integer in [lo, hi] (K/M/G suffixes accepted) */
    OPT_DOUBLE,        /* double*: number in [dlo, dhi] */
    OPT_STR,           /* const char**: any non-empty string */
    OPT_LONG_LIST,     /* opt_list*: comma-separated integers, each in [lo, hi], each given once */
    OPT_LONG_PARALLEL, /* opt_list*: as OPT_LONG_LIST, one per entry of another list flag, so they may repeat */
} opt_kind;

#define OPT_LIST_CAP 64
typedef struct {
    long v[OPT_LIST_CAP];
    int n;
} opt_list;

typedef struct {
    const char *name;    /* without the leading dashes */
    opt_kind kind;
    void *dst;
    long lo, hi;         /* OPT_LONG, OPT_LONG_LIST, OPT_LONG_PARALLEL */
    double dlo, dhi;     /* OPT_DOUBLE */
    const char *metavar; /* shown in help */
    const char *help;
} opt_spec;

/* Parses argv[first..argc). `cmd` is the subcommand ("train": messages say "costbench train"), or a
 * program and its subcommand ("costbench-gpu matmul"). Returns 0 on success, 1 if --help was
 * printed, CB_EUSAGE on a bad flag (after printing the error and a usage hint to stderr). Positional arguments are refused
 * unless `positional` is non-NULL, in which case they are stored there (up to *npositional). */
int opts_parse(const char *cmd, const char *synopsis, const opt_spec *specs, int argc, char **argv,
               int first, char **positional, int *npositional);
void opts_help(FILE *f, const char *cmd, const char *synopsis, const opt_spec *specs);

#endif
