/* netfit.c: collective benchmark tables read and fitted (see netfit.h; the network file: netfile.c). */
#include "netfit.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_fit.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/machine.h"
#include "../../common/parse.h"
#include "../../common/schema.h"

const char *const net_coll_names[NET_NCOLL] = {"all_reduce", "all_gather", "reduce_scatter"};
/* The collective of each op of `costbench allreduce --csv` (common/schema.h's allreduce_ops). */
static const net_coll costbench_colls[AR_NOPS] = {
    [AR_OP_ALLREDUCE] = NET_ALL_REDUCE, [AR_OP_REDUCE_SCATTER] = NET_REDUCE_SCATTER, [AR_OP_ALLGATHER] = NET_ALL_GATHER};
/* The columns that start a costbench allreduce CSV's header: op .. time_us_median, in its order. */
enum { COSTBENCH_HEADER_COLS = AR_T_MED + 1 };


enum { NCCL_MAX_TOKENS = 64 };

/* The traffic the busiest link carries per byte of `size` (nccl-tests' busbw / algbw). */
static double bus_factor(net_coll c, int ranks)
{
    double n = (double)ranks;
    return c == NET_ALL_REDUCE ? 2.0 * (n - 1) / n : (n - 1) / n;
}

/* Splits a copy of line into whitespace-separated tokens (at most NCCL_MAX_TOKENS). */
static int tokens_split(const char *line, char *buf, size_t bufsz, char **tok)
{
    snprintf(buf, bufsz, "%s", line);
    int n = 0;
    for (char *p = strtok(buf, " \t"); p && n < NCCL_MAX_TOKENS; p = strtok(NULL, " \t")) tok[n++] = p;
    return n;
}

static const char *skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

/* The text of a line after its blanks and the tag `mpirun --tag-output` puts on every line
 * ("[1,0]<stdout>:", Open MPI's [job,rank]<stream>:); *rank: the tag's rank (-1: no tag). */
static const char *tag_skip(const char *line, long *rank)
{
    const char *l = skip_space(line), *p = l;
    *rank = -1;
    if (*p++ != '[' || !isdigit((unsigned char)*p)) return l;
    while (isdigit((unsigned char)*p)) p++;
    if (*p++ != ',' || !isdigit((unsigned char)*p)) return l;
    char *end;
    long r = strtol(p, &end, 10);
    p = end;
    if (*p++ != ']' || *p++ != '<') return l;
    while (isalpha((unsigned char)*p)) p++;
    if (*p++ != '>' || *p++ != ':') return l;
    *rank = r;
    return skip_space(p);
}

/* A table header of nccl-tests: "#  size  count  type ... busbw ...". */
static int is_nccl_header(const char *line)
{
    char buf[1024], *tok[NCCL_MAX_TOKENS];
    int n = tokens_split(line, buf, sizeof buf, tok);
    if (n < 6 || strcmp(tok[0], "#") != 0 || strcmp(tok[1], "size") != 0 || strcmp(tok[2], "count") != 0) return 0;
    for (int i = 3; i < n; i++)
        if (strcmp(tok[i], "busbw") == 0) return 1;
    return 0;
}

/* 1 when line l starts with the costbench allreduce CSV's first columns, comma-separated. */
static int is_costbench_header(const char *l)
{
    for (int c = 0; c < COSTBENCH_HEADER_COLS; c++) {
        size_t n = strlen(allreduce_cols[c].name);
        if (strncmp(l, allreduce_cols[c].name, n) != 0) return 0;
        l += n;
        if (c + 1 < COSTBENCH_HEADER_COLS && *l++ != ',') return 0;
    }
    return 1;
}

int netfit_detect(const text_lines *t)
{
    for (int i = 0; i < t->n; i++) {
        long tag;
        const char *l = tag_skip(t->line[i], &tag);
        if (*l == '\0') continue;
        if (is_costbench_header(l)) return NETFIT_COSTBENCH;
        if (strncmp(l, "# nThread ", 10) == 0 || strstr(l, "# Collective test starting:") || is_nccl_header(l))
            return NETFIT_NCCL;
    }
    return NETFIT_NONE;
}

/* ------------------------------------------------------------------ runs */

void net_run_free(net_run *r)
{
    free(r->pts);
    r->pts = NULL, r->n = r->cap = 0;
}

static void run_note(net_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_note(net_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    text_vnote(r->notes, sizeof r->notes, fmt, ap);
    va_end(ap);
}

static int run_add(net_run *r, double bytes, double time_us, double inplace_us, int line)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 32;
        net_point *p = realloc(r->pts, (size_t)cap * sizeof *p);
        if (!p) return err_msg("out of memory for the benchmark's rows");
        r->pts = p, r->cap = cap;
    }
    r->pts[r->n++] = (net_point){bytes, time_us, inplace_us, line};
    if (r->first_line == 0) r->first_line = line;
    r->last_line = line;
    return 0;
}

/* The UTC date of the file's last change (when its text states none). */
static void file_date(const char *path, char *out, size_t n)
{
    struct stat st;
    struct tm tm;
    time_t when = stat(path, &st) == 0 ? st.st_mtime : time(NULL);
    gmtime_r(&when, &tm);
    strftime(out, n, "%Y-%m-%d", &tm);
}

static int coll_parse(const char *s, const char *what, net_coll *out)
{
    for (int c = 0; c < NET_NCOLL; c++)
        if (strcmp(s, net_coll_names[c]) == 0) return *out = (net_coll)c, 0;
    return err_usage("%s: expected all_reduce, all_gather or reduce_scatter, got '%s'", what, s);
}

/* ------------------------------------------------------------------ nccl-tests */

/* What the text around the table says. */
typedef struct {
    const text_lines *t;
    char program[64]; /* the banner's program, its directory dropped ("" without a banner) */
    int banner_line, ranks, nhosts, cap_hosts;
    char **hosts;
    char device[96];
    int header_line, ncols, col_type, col_redop, col_time, col_in_time, col_algbw, col_busbw, footer;
    char type0[24], redop0[24];
    int skipped, zero_rows;
    double big_bytes, big_ratio; /* the largest row: its busbw / algbw */
    struct nccl_rank {
        int line, host; /* its first rank line (0: not seen), the index of its host */
    } *rank;            /* (rank_cap) by rank number */
    int rank_cap, rank_repeats, nthread_line, start_line; /* start_line: this line began the run */
    int other, other_line[4];             /* lines inside the table that are not rows (the first 4) */
    int per_process;                      /* ranks a process drives: the header's nThread x nGpus */
    int rank_hi, rank_first, rank_last;   /* the highest rank number + 1; the first and last rank lines */
    int tag_ranks, dots_line, rows_dots;  /* tags' highest rank + 1; the last "..." before the
                                           * header; "..." lines among the rows */
    double r_lo, r_hi;                    /* busbw / algbw: the range every row's printed pair allows */
    int r_rows, r_line;                   /* rows in it; the row of the largest algbw */
    double best_algbw, best_lo, best_hi;  /* that row's own range */
} nccl_scan;

enum { NCCL_MAX_RANK = 1000000 };

static void scan_free(nccl_scan *s)
{
    for (int i = 0; i < s->nhosts; i++) free(s->hosts[i]);
    free(s->hosts);
    free(s->rank);
}

/* The index of host in s->hosts (added when new), or a negative code. */
static int host_add(nccl_scan *s, const char *host)
{
    for (int i = 0; i < s->nhosts; i++)
        if (strcmp(s->hosts[i], host) == 0) return i;
    if (s->nhosts == s->cap_hosts) {
        int cap = s->cap_hosts ? 2 * s->cap_hosts : 16;
        char **h = realloc(s->hosts, (size_t)cap * sizeof *h);
        if (!h) return err_msg("out of memory for the host names");
        s->hosts = h, s->cap_hosts = cap;
    }
    if (!(s->hosts[s->nhosts] = strdup(host))) return err_msg("out of memory for the host names");
    return s->nhosts++;
}

/* Counts rank `rank` of line `lineno` on host index `host` once: a repeated rank line (the same
 * rank on the same host) is counted as a repeat; the same rank on another host is an error. */
static int rank_mark(nccl_scan *s, long rank, int host, int lineno)
{
    if (rank >= s->rank_cap) {
        int cap = s->rank_cap ? s->rank_cap : 64;
        while (cap <= rank) cap = cap > NCCL_MAX_RANK / 2 ? NCCL_MAX_RANK + 1 : 2 * cap;
        struct nccl_rank *r = realloc(s->rank, (size_t)cap * sizeof *r);
        if (!r) return err_msg("out of memory for the rank lines");
        memset(r + s->rank_cap, 0, (size_t)(cap - s->rank_cap) * sizeof *r);
        s->rank = r, s->rank_cap = cap;
    }
    struct nccl_rank *r = &s->rank[rank];
    if (rank + 1 > s->rank_hi) s->rank_hi = (int)rank + 1;
    if (!s->rank_first) s->rank_first = lineno;
    s->rank_last = lineno;
    if (r->line == 0) return r->line = lineno, r->host = host, s->ranks++, 0;
    if (r->host != host)
        return err_usage("%s:%d: rank %ld on host '%s', but line %d puts it on '%s': the output of two runs",
                         s->t->path, lineno, rank, s->hosts[host], r->line, s->hosts[r->host]);
    s->rank_repeats++;
    return 0;
}

/* "#  Rank  3 Group  0 Pid  1234 on host-a device  3 [0x..] NVIDIA A100-SXM4-80GB" (older: no
 * Group): a rank (each counted once), its host, the device name after the bus id. */
static int rank_line(nccl_scan *s, const char *line, int lineno)
{
    char buf[1024], *tok[NCCL_MAX_TOKENS];
    int n = tokens_split(line, buf, sizeof buf, tok);
    if (n < 4 || strcmp(tok[0], "#") != 0 || strcmp(tok[1], "Rank") != 0) return 0;
    for (int i = 3; i + 1 < n; i++)
        if (strcmp(tok[i], "on") == 0) {
            char what[CB_WHERE_MAX + 64];
            long rank;
            snprintf(what, sizeof what, "%s:%d: the rank number", s->t->path, lineno);
            if (parse_long(tok[2], 0, NCCL_MAX_RANK, 0, what, &rank) != 0) return CB_EUSAGE;
            const char *bus = strchr(line, ']');
            if (s->device[0] == '\0' && bus) snprintf(s->device, sizeof s->device, "%s", skip_space(bus + 1));
            int host = host_add(s, tok[i + 1]);
            return host < 0 ? host : rank_mark(s, rank, host, lineno);
        }
    return 0;
}

/* The header's columns (a row's token i is the header's token i + 1, after its "#"). */
static void header_read(nccl_scan *s, const char *line, int lineno)
{
    char buf[1024], *tok[NCCL_MAX_TOKENS];
    int n = tokens_split(line, buf, sizeof buf, tok);
    s->header_line = lineno;
    s->col_type = s->col_redop = s->col_time = s->col_in_time = s->col_algbw = s->col_busbw = -1;
    s->ncols = n - 1;
    for (int i = 1; i < n; i++) {
        const char *w = tok[i];
        int c = i - 1;
        if (strcmp(w, "type") == 0) s->col_type = c;
        else if (strcmp(w, "redop") == 0) s->col_redop = c;
        else if (strcmp(w, "time") == 0 || strcmp(w, "cputime") == 0) {
            if (s->col_time < 0) s->col_time = c;
            else if (s->col_in_time < 0) s->col_in_time = c;
        } else if (strcmp(w, "algbw") == 0 && s->col_algbw < 0) s->col_algbw = c;
        else if (strcmp(w, "busbw") == 0 && s->col_busbw < 0) s->col_busbw = c;
        else if (strcmp(w, "timestamp") == 0 && i == n - 1) s->ncols--; /* -T: its own format, not read */
    }
}

static int row_number(const nccl_scan *s, int lineno, char **tok, int col, const char *name, double *out)
{
    char what[CB_WHERE_MAX + 64];
    snprintf(what, sizeof what, "%s:%d: column '%s'", s->t->path, lineno, name);
    return parse_double(tok[col], 0, 1e18, what, out);
}

/* Half the last printed digit of a number as text ("76.31": 0.005). */
static double half_ulp(const char *tok)
{
    const char *dot = strchr(tok, '.');
    int d = 0;
    if (dot)
        while (isdigit((unsigned char)dot[1 + d])) d++;
    return 0.5 * pow(10.0, -d);
}

/* A row's busbw / algbw as the printed digits allow it (each printed value within half its last
 * digit), intersected with the other rows'; the row of the largest algbw kept apart (its range is
 * the narrowest, the fallback when the rows disagree). */
static void ratio_add(nccl_scan *s, const char *ta, double algbw, const char *tb, double busbw, int lineno)
{
    double ea = half_ulp(ta), eb = half_ulp(tb);
    if (!(algbw - ea > 0) || !(busbw - eb > 0)) return;
    double lo = (busbw - eb) / (algbw + ea), hi = (busbw + eb) / (algbw - ea);
    if (s->r_rows == 0) s->r_lo = lo, s->r_hi = hi;
    else s->r_lo = fmax(s->r_lo, lo), s->r_hi = fmin(s->r_hi, hi);
    s->r_rows++;
    if (algbw > s->best_algbw) s->best_algbw = algbw, s->best_lo = lo, s->best_hi = hi, s->r_line = lineno;
}

/* "# nThread T nGpus G ...": each process drives T x G ranks. */
static void nthread_read(nccl_scan *s, const char *l)
{
    char buf[1024], *tok[NCCL_MAX_TOKENS];
    int n = tokens_split(l, buf, sizeof buf, tok);
    long th = 1, g = 1;
    for (int i = 1; i + 1 < n; i++) {
        if (strcmp(tok[i], "nThread") == 0) th = strtol(tok[i + 1], NULL, 10);
        if (strcmp(tok[i], "nGpus") == 0) g = strtol(tok[i + 1], NULL, 10);
    }
    s->per_process = th >= 1 && g >= 1 && th * g <= 1024 ? (int)(th * g) : 1;
}

/* One data row: its size and times into r (rows of another type or reduction than the first are
 * counted and left out). */
static int data_row(nccl_scan *s, const char *line, int lineno, net_run *r)
{
    char buf[1024], *tok[NCCL_MAX_TOKENS];
    int n = tokens_split(line, buf, sizeof buf, tok);
    if (s->col_time < 0 || s->col_algbw < 0 || s->col_busbw < 0)
        return err_usage("%s:%d: the table's header has no 'time', 'algbw' or 'busbw' column", s->t->path,
                         s->header_line);
    if (n < s->ncols)
        return err_usage("%s:%d: the table's row ends after %d of its %d columns (header at line %d): a truncated "
                         "table",
                         s->t->path, lineno, n, s->ncols, s->header_line);
    const char *type = s->col_type >= 0 ? tok[s->col_type] : "", *redop = s->col_redop >= 0 ? tok[s->col_redop] : "";
    if (r->n == 0 && s->skipped == 0 && s->zero_rows == 0) {
        snprintf(s->type0, sizeof s->type0, "%s", type);
        snprintf(s->redop0, sizeof s->redop0, "%s", redop);
    } else if (strcmp(type, s->type0) != 0 || strcmp(redop, s->redop0) != 0) return s->skipped++, 0;
    double size, t_us, in_us = NAN, algbw, busbw;
    if (row_number(s, lineno, tok, 0, "size", &size) != 0 || row_number(s, lineno, tok, s->col_time, "time", &t_us) ||
        row_number(s, lineno, tok, s->col_algbw, "algbw", &algbw) ||
        row_number(s, lineno, tok, s->col_busbw, "busbw", &busbw))
        return CB_EUSAGE;
    if (s->col_in_time >= 0 && row_number(s, lineno, tok, s->col_in_time, "time (in-place)", &in_us) != 0)
        return CB_EUSAGE;
    if (size == 0) return s->zero_rows++, 0; /* nothing moves: the call returns at once, no latency measured */
    if (!(t_us > 0)) return err_usage("%s:%d: column 'time': expected more than 0 us, got '%s'", s->t->path, lineno,
                                      tok[s->col_time]);
    if (size >= s->big_bytes && algbw > 0) s->big_bytes = size, s->big_ratio = busbw / algbw;
    ratio_add(s, tok[s->col_algbw], algbw, tok[s->col_busbw], busbw, lineno);
    return run_add(r, size, t_us, in_us, lineno);
}

/* A line that begins a run: the banner (its program kept) or "# nThread". A second of either in
 * the same text is an error: a second run's rank lines and table would be counted with the
 * first's. */
static int run_start(nccl_scan *s, const char *l, int lineno)
{
    const char *banner = strstr(l, "# Collective test starting:");
    int nthread = !banner && strncmp(l, "# nThread ", 10) == 0;
    if (!banner && !nthread) return 0;
    int first = banner ? s->banner_line : s->nthread_line;
    if (first)
        return err_usage("%s:%d: a second nccl-tests run (the first began at line %d): import one run at a time",
                         s->t->path, lineno, first);
    s->start_line = lineno;
    if (nthread) return nthread_read(s, l), s->nthread_line = lineno, 0;
    char prog[256];
    snprintf(prog, sizeof prog, "%s", skip_space(banner + 27));
    prog[strcspn(prog, " \t")] = '\0';
    const char *base = strrchr(prog, '/');
    snprintf(s->program, sizeof s->program, "%.63s", base ? base + 1 : prog);
    s->banner_line = lineno;
    return 0;
}

/* A line of the table that reads as a row: its first word a number by any reading (a sign, a
 * digit, a point, nan, inf), so that data_row takes it by the decimal rule or names it. */
static int row_like(const char *l)
{
    return isdigit((unsigned char)*l) || *l == '-' || *l == '+' || *l == '.' || strncasecmp(l, "nan", 3) == 0 ||
           strncasecmp(l, "inf", 3) == 0;
}

/* A line inside the table that is neither a row nor a comment: counted, the first few kept. */
static void other_line(nccl_scan *s, int lineno)
{
    if (s->other < 4) s->other_line[s->other] = lineno;
    s->other++;
}

/* Every line: the banner, the rank lines, the header, the rows, the footer. */
static int nccl_scan_lines(nccl_scan *s, net_run *r)
{
    const text_lines *t = s->t;
    for (int i = 0; i < t->n; i++) {
        long tag;
        const char *l = tag_skip(t->line[i], &tag);
        if (tag >= 0 && tag < NCCL_MAX_RANK && tag + 1 > s->tag_ranks) s->tag_ranks = (int)tag + 1;
        int rc = run_start(s, l, i + 1), in_table = s->header_line && !s->footer;
        if (rc != 0) return rc;
        if (s->start_line == i + 1) continue;
        if (strncmp(l, "...", 3) == 0 && !s->header_line) { /* the rank list elided (or a list before the run) */
            s->dots_line = i + 1;
            continue;
        }
        if (strncmp(l, "...", 3) == 0 && in_table) { /* rows elided */
            s->rows_dots++;
            continue;
        }
        if (strncmp(l, "# Avg bus bandwidth", 19) == 0 && s->header_line) s->footer = i + 1;
        else if (is_nccl_header(l) && s->header_line)
            return err_usage("%s:%d: a second nccl-tests table (the first's header at line %d): import one table at "
                             "a time",
                             t->path, i + 1, s->header_line);
        else if (is_nccl_header(l)) header_read(s, l, i + 1);
        else if (in_table && row_like(l)) rc = data_row(s, l, i + 1, r);
        else if (in_table && *l != '#' && *l != '\0') other_line(s, i + 1);
        else rc = rank_line(s, l, i + 1);
        if (rc != 0) return rc;
    }
    if (s->header_line == 0)
        return err_usage("%s: no nccl-tests table: no '#  size  count  type ... busbw' header line", t->path);
    if (s->col_time < 0 || s->col_algbw < 0 || s->col_busbw < 0)
        return err_usage("%s:%d: the table header has no 'time', 'algbw' or 'busbw' column", t->path, s->header_line);
    if (r->n == 0) return err_usage("%s:%d: the table has no rows", t->path, s->header_line);
    return 0;
}

/* 1 when a "..." line after the run's start (or with no start line seen) stands for rank lines. */
static int rank_list_elided(const nccl_scan *s)
{
    return s->dots_line && (!s->start_line || s->dots_line > s->start_line);
}

/* The collective: the banner's program, else --collective, else the columns. */
static int nccl_collective(const nccl_scan *s, const char *flag, net_run *r)
{
    if (s->program[0]) {
        int c = 0;
        while (c < NET_NCOLL && strncmp(s->program, net_coll_names[c], strlen(net_coll_names[c])) != 0) c++;
        if (c == NET_NCOLL)
            return err_usage("%s:%d: '%s' is not an all_reduce_perf, all_gather_perf or reduce_scatter_perf run",
                             s->t->path, s->banner_line, s->program);
        net_coll f = NET_ALL_REDUCE;
        if (flag && coll_parse(flag, "flag '--collective'", &f) != 0) return CB_EUSAGE;
        if (flag && f != (net_coll)c)
            return err_usage("flag '--collective': %s, but %s:%d says %s", flag, s->t->path, s->banner_line,
                             s->program);
        r->coll = (net_coll)c;
        snprintf(r->coll_from, sizeof r->coll_from, "the banner, line %d", s->banner_line);
        return 0;
    }
    if (flag) {
        snprintf(r->coll_from, sizeof r->coll_from, "--collective");
        return coll_parse(flag, "flag '--collective'", &r->coll);
    }
    if (s->col_redop < 0 || strcmp(s->redop0, "none") == 0) {
        r->coll = NET_ALL_GATHER;
        snprintf(r->coll_from, sizeof r->coll_from, "the columns: %s", s->col_redop < 0 ? "no redop" : "redop none");
    } else if (s->ranks >= 2 && s->ranks == s->rank_hi && !rank_list_elided(s)) {
        /* the rank lines' count: whichever factor is nearer the ratio */
        double ar = bus_factor(NET_ALL_REDUCE, s->ranks), rs = bus_factor(NET_REDUCE_SCATTER, s->ranks);
        r->coll = fabs(s->big_ratio - ar) <= fabs(s->big_ratio - rs) ? NET_ALL_REDUCE : NET_REDUCE_SCATTER;
        snprintf(r->coll_from, sizeof r->coll_from, "the columns: busbw / algbw %.3g at %d ranks", s->big_ratio,
                 s->ranks);
    } else { /* all_reduce's 2(n-1)/n is 1 or more, reduce_scatter's (n-1)/n less */
        r->coll = s->big_ratio >= 1 ? NET_ALL_REDUCE : NET_REDUCE_SCATTER;
        snprintf(r->coll_from, sizeof r->coll_from, "the columns: busbw / algbw %.3g", s->big_ratio);
    }
    return 0;
}

/* The rank count n whose bus factor is `ratio` (busbw / algbw): all_reduce 2(n-1)/n, n = 2/(2-r);
 * all_gather and reduce_scatter (n-1)/n, n = 1/(1-r); infinite past the factor's limit. */
static double ratio_ranks(net_coll c, double ratio)
{
    double top = c == NET_ALL_REDUCE ? 2.0 : 1.0;
    return ratio >= top ? INFINITY : top / (top - ratio);
}

/* The rank counts the table's busbw / algbw allows ([*lo, *hi], 0 when no row has both), each a
 * multiple of the ranks a process drives; the ratio used into *ratio. */
static void table_ranks(const nccl_scan *s, net_coll c, int *lo, int *hi, double *ratio, net_run *r)
{
    *lo = *hi = 0;
    if (s->r_rows == 0) return;
    double rl = s->r_lo, rh = s->r_hi;
    if (rl > rh) {
        rl = s->best_lo, rh = s->best_hi;
        run_note(r, "the rows' busbw / algbw disagree beyond their printed digits: the largest algbw's (line %d) "
                    "taken", s->r_line);
    }
    *ratio = 0.5 * (rl + rh);
    double nl = ratio_ranks(c, rl), nh = fmin(ratio_ranks(c, rh), NCCL_MAX_RANK);
    if (!(nl <= NCCL_MAX_RANK)) return; /* the factor's limit or past it: no count */
    int g = s->per_process > 1 ? s->per_process : 1;
    for (long k = (long)ceil(nl - 1e-9); k <= (long)floor(nh + 1e-9); k++)
        if (k >= 2 && k % g == 0) {
            if (!*lo) *lo = (int)k;
            *hi = (int)k;
        }
}

/* The rank lines complete (none elided, numbers 0 .. n-1): the count, the table's ratio compared
 * (a disagreement noted: the lines name every rank, the ratio is a version's convention). */
static int ranks_listed(const nccl_scan *s, net_run *r, int lo, int hi, double ratio)
{
    r->ranks = s->ranks, r->nodes = s->nhosts, r->inter = s->nhosts > 1;
    if (!s->r_rows) return 0;
    if (lo && s->ranks >= lo && s->ranks <= hi) run_note(r, "busbw / algbw %.4f agrees with %d ranks", ratio, s->ranks);
    else /* nccl-tests versions have counted busbw differently (all_gather's before 2.0): the lines win */
        run_note(r, "DISAGREE: the table's busbw / algbw %.4f (line %d) is not %s's factor at the %d ranks the rank "
                    "lines (%d-%d) list, every one of them: the rank lines taken",
                 ratio, s->r_line, net_coll_names[r->coll], s->ranks, s->rank_first, s->rank_last);
    return 0;
}

/* The rank lines incomplete (elided at a "..." line, numbers missing, or none): the count from the
 * table's busbw / algbw, at least the highest rank number seen; the nodes left 0 (unknown). */
static int ranks_from_table(const nccl_scan *s, net_run *r, int lo, int hi, double ratio, const char *why)
{
    int least = s->rank_hi > s->tag_ranks ? s->rank_hi : s->tag_ranks;
    while (lo && lo < least && lo <= hi) lo++;
    if (!lo || lo > hi)
        return err_usage("%s: %s, and %s: the number of ranks is unknown (paste the output from its start)",
                         s->t->path, why,
                         !s->r_rows ? "no row has both algbw and busbw"
                                    : "the table's busbw / algbw allows no count of at least the highest rank seen");
    if (hi > lo)
        return err_usage("%s:%d: %s, and the table's busbw / algbw (%.4f) allows %d to %d ranks for %s: the number of "
                         "ranks is not decided (paste the rank lines)",
                         s->t->path, s->r_line, why, ratio, lo, hi, net_coll_names[r->coll]);
    r->ranks = lo, r->nodes = 0, r->inter = 0, r->hosts_seen = s->nhosts;
    for (int k = 0; k < s->rank_cap; k++)
        if (s->rank[k].line) r->ranks_seen++;
    run_note(r, "%s: %d ranks from the table's busbw / algbw %.4f (line %d) = %s's factor at n = %d%s", why, lo, ratio,
             s->r_line, net_coll_names[r->coll], lo, s->per_process > 1 ? " (a multiple of nThread x nGpus)" : "");
    return 0;
}

/* The rank count and hosts from every signal the output has: the rank lines (complete or
 * elided), the table's busbw / algbw, the header's nThread x nGpus, the tags' ranks. */
static int nccl_ranks(const nccl_scan *s, net_run *r)
{
    int lo, hi;
    double ratio = 0;
    table_ranks(s, r->coll, &lo, &hi, &ratio, r);
    int elided = rank_list_elided(s);
    char why[160];
    if (elided) snprintf(why, sizeof why, "the rank list is elided at line %d (%d rank line%s shown)", s->dots_line,
                         s->ranks, s->ranks == 1 ? "" : "s");
    else if (s->ranks == 0) snprintf(why, sizeof why, "no '#  Rank N ... on HOST device D' lines");
    else snprintf(why, sizeof why, "the rank lines list %d ranks numbered up to %d", s->ranks, s->rank_hi - 1);
    int rc = !elided && s->ranks > 0 && s->ranks == s->rank_hi ? ranks_listed(s, r, lo, hi, ratio)
                                                               : ranks_from_table(s, r, lo, hi, ratio, why);
    if (rc == 0 && r->ranks < 2) return err_usage("%s: one rank: no traffic between ranks to fit", s->t->path);
    return rc;
}

/* "2 lines inside the table that are not rows left out (lines 30, 31)". */
static void other_note(const nccl_scan *s, net_run *r)
{
    char lines[64] = "";
    size_t len = 0;
    for (int k = 0; k < s->other && k < 4; k++)
        len += (size_t)snprintf(lines + len, sizeof lines - len, "%s%d", k ? ", " : "", s->other_line[k]);
    run_note(r, "%d line%s inside the table that %s not a row left out (line%s %s%s)", s->other,
             s->other == 1 ? "" : "s", s->other == 1 ? "is" : "are", s->other == 1 ? "" : "s", lines,
             s->other > 4 ? ", ..." : "");
}

static int nccl_parse(const text_lines *t, const char *flag, net_run *r)
{
    nccl_scan s = {.t = t};
    int rc = nccl_scan_lines(&s, r);
    if (rc == 0) rc = nccl_collective(&s, flag, r);
    if (rc == 0) rc = nccl_ranks(&s, r);
    if (rc == 0) {
        snprintf(r->device, sizeof r->device, "%s", s.device);
        snprintf(r->program, sizeof r->program, "nccl-tests %s_perf", net_coll_names[r->coll]);
        file_date(t->path, r->as_of, sizeof r->as_of);
        if (!s.footer) run_note(r, "no '# Avg bus bandwidth' line after the table: it may be cut short");
        if (s.skipped) run_note(r, "%d rows of another type or reduction than %s %s left out", s.skipped, s.type0,
                                s.redop0);
        if (s.zero_rows) run_note(r, "%d rows of size 0 left out (nothing moves)", s.zero_rows);
        if (s.rank_repeats) run_note(r, "%d repeated rank lines (a rank already listed) counted once", s.rank_repeats);
        if (s.other) other_note(&s, r);
        if (s.rows_dots) run_note(r, "rows elided ('...') in the table: the fit has the %d printed", r->n);
        if (s.tag_ranks) run_note(r, "'mpirun --tag-output' tags read off every line");
    }
    scan_free(&s);
    return rc;
}

/* ------------------------------------------------------------------ costbench allreduce --csv */

/* One row of the CSV into the run of its op (runs[c] for op c; want: --collective's op or -1). */
static int csv_row(const table *tb, int i, const int *col, int want, net_run *runs)
{
    int ar_op;
    if (table_get_word(tb, i, col[0], allreduce_ops, AR_NOPS, &ar_op) != 0) return CB_EUSAGE;
    int op = (int)costbench_colls[ar_op];
    if (want >= 0 && op != want) return 0;
    net_run *r = &runs[op];
    long ranks;
    double bytes, t_us;
    const char *check;
    if (table_get_long(tb, i, col[1], 2, 10000000, &ranks) != 0 || table_get_double(tb, i, col[2], 0, 1e18, &bytes) ||
        table_get_double(tb, i, col[3], 1e-9, 1e18, &t_us) || table_get_str(tb, i, col[4], &check))
        return CB_EUSAGE;
    if (strcmp(check, ALLREDUCE_CHECK_OK) != 0)
        return err_usage("%s:%d: column 'check': the result was wrong ('%s'): its time is no measurement", tb->path,
                         tb->lines[i], check);
    if (r->n > 0 && ranks != r->ranks)
        return err_usage("%s:%d: column 'ranks': %ld, but line %d has %d", tb->path, tb->lines[i], ranks,
                         r->first_line, r->ranks);
    r->coll = (net_coll)op, r->ranks = (int)ranks;
    if (col[5] >= 0 && r->as_of[0] == '\0') snprintf(r->as_of, sizeof r->as_of, "%.10s", table_cell(tb, i, col[5]));
    if (bytes == 0) return 0;
    return run_add(r, bytes, t_us, NAN, tb->lines[i]);
}

/* The op name of collective c in a costbench allreduce CSV. */
static const char *costbench_op(net_coll c)
{
    for (int k = 0; k < AR_NOPS; k++)
        if (costbench_colls[k] == c) return allreduce_ops[k];
    return "";
}

static int costbench_parse(const text_lines *t, const char *flag, net_run runs[NET_NCOLL], int *nruns)
{
    net_coll want = NET_NCOLL;
    if (flag && coll_parse(flag, "flag '--collective'", &want) != 0) return CB_EUSAGE;
    table tb;
    if (table_load(&tb, t->path) != 0) return CB_EUSAGE;
    const char *const names[6] = {allreduce_cols[AR_OP].name,    allreduce_cols[AR_RANKS].name,
                                  allreduce_cols[AR_SIZE_BYTES].name, allreduce_cols[AR_T_MED].name,
                                  allreduce_cols[AR_CHECK].name, machine_cols[MC_DATE_UTC]};
    int col[6], rc = 0;
    for (int k = 0; k < 6 && rc == 0; k++)
        if ((col[k] = table_col(&tb, names[k], k < 5)) < 0 && k < 5) rc = CB_EUSAGE;
    net_run all[NET_NCOLL] = {{.coll = NET_ALL_REDUCE}};
    for (int i = 0; i < tb.nrows && rc == 0; i++) rc = csv_row(&tb, i, col, flag ? (int)want : -1, all);
    *nruns = 0;
    for (int c = 0; c < NET_NCOLL; c++) {
        if (rc != 0 || all[c].n == 0) {
            net_run_free(&all[c]);
            continue;
        }
        net_run *r = &runs[(*nruns)++];
        *r = all[c];
        snprintf(r->coll_from, sizeof r->coll_from, "%s", flag ? "--collective" : "the 'op' column");
        snprintf(r->program, sizeof r->program, "costbench allreduce");
        r->nodes = 1, r->inter = 0;
        if (r->as_of[0] == '\0') file_date(t->path, r->as_of, sizeof r->as_of);
    }
    if (rc == 0 && *nruns == 0)
        rc = err_usage("%s: no %s rows of more than 0 bytes", t->path, flag ? costbench_op(want) : "collective");
    table_free(&tb);
    return rc;
}

int netfit_parse(const text_lines *t, const char *coll, net_run runs[NET_NCOLL], int *nruns)
{
    memset(runs, 0, NET_NCOLL * sizeof *runs);
    *nruns = 0;
    switch (netfit_detect(t)) {
    case NETFIT_NCCL: {
        int rc = nccl_parse(t, coll, &runs[0]);
        if (rc != 0) net_run_free(&runs[0]);
        else *nruns = 1;
        return rc;
    }
    case NETFIT_COSTBENCH: return costbench_parse(t, coll, runs, nruns);
    default:
        return err_usage("%s:1: neither nccl-tests output (no '# nThread' line, banner or '#  size  count  type' "
                         "header) nor a costbench allreduce CSV (header 'op,ranks,size_bytes,...')",
                         t->path);
    }
}

/* ------------------------------------------------------------------ the fit */

/* The fit (netfit.h): the bus bandwidth from the large-message plateau, the latency from the
 * small-message times, each a median of per-row figures, so that neither decides the other and the
 * model honours the measured plateau (a least-squares line weighted 1/t^2 over every row let the
 * many small rows pull its slope 12.5% under a real table's plateau).
 *   plateau       the rows whose measured busbw (bus bytes / time) is at least NETFIT_PLATEAU of
 *                 the best row's; busbw = median over them of bus bytes / (time - latency)
 *   latency-bound the rows that spend at most NETFIT_LAT_MOVING of their time moving data at that
 *                 busbw and take at most twice the table's shortest time (a table cut to its large
 *                 sizes, whose smallest rows still run below the plateau, has none); latency =
 *                 median over them of time - bus bytes / busbw
 * Rounds until the busbw settles (the plateau's busbw takes the latency off, the latency the
 * busbw's transfer time).
 * No latency-bound row (a table from 512 MiB up): the latency is not measured, held at 0 (noted). */
#define NETFIT_PLATEAU 0.95
#define NETFIT_LAT_MOVING 0.1

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, dbl_cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    double lat_s, bw, r2, worst;
    int bw_rows, lat_rows, clamped;
    double bw_min_bytes, lat_max_bytes; /* (x units) the plateau's smallest, the latency rows' largest */
} line_fit;

/* One round: the plateau's busbw with latency lat_s taken off, then the latency at that busbw. */
static void fit_round(const double *x, const double *y, int n, double best, double *tmp, line_fit *lf)
{
    int k = 0;
    lf->bw_min_bytes = INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] / y[i] >= NETFIT_PLATEAU * best && y[i] - lf->lat_s > 0)
            tmp[k++] = x[i] / (y[i] - lf->lat_s), lf->bw_min_bytes = fmin(lf->bw_min_bytes, x[i]);
    lf->bw = k ? median_of(tmp, k) : best, lf->bw_rows = k;
    k = 0;
    lf->lat_max_bytes = 0;
    double t_min = INFINITY;
    for (int i = 0; i < n; i++) t_min = fmin(t_min, y[i]);
    for (int i = 0; i < n; i++)
        if (x[i] / lf->bw <= NETFIT_LAT_MOVING * y[i] && y[i] <= 2 * t_min)
            tmp[k++] = y[i] - x[i] / lf->bw, lf->lat_max_bytes = fmax(lf->lat_max_bytes, x[i]);
    lf->lat_rows = k;
    lf->lat_s = k ? median_of(tmp, k) : 0;
    lf->clamped = !k || lf->lat_s < 0;
    if (lf->lat_s < 0) lf->lat_s = 0;
}

/* x: bus bytes, y: times (s). Returns 0, 1 when no row moves data, or a negative code. */
static int fit_line(const double *x, const double *y, int n, line_fit *lf)
{
    double *tmp = malloc((size_t)n * sizeof *tmp), best = 0;
    if (!tmp) return err_msg("out of memory for the fit");
    for (int i = 0; i < n; i++) best = fmax(best, x[i] / y[i]);
    memset(lf, 0, sizeof *lf);
    double prev = -1;
    for (int round = 0; round < 16 && best > 0 && fabs(lf->bw - prev) > 1e-12 * lf->bw; round++)
        prev = lf->bw, fit_round(x, y, n, best, tmp, lf);
    free(tmp);
    if (!(best > 0) || !(lf->bw > 0)) return 1;
    double sw = 0, swy = 0, tss = 0, rss = 0; /* R^2 in relative terms (weights 1/t^2) */
    for (int i = 0; i < n; i++) sw += 1 / (y[i] * y[i]), swy += 1 / y[i];
    for (int i = 0; i < n; i++) {
        double m = lf->lat_s + x[i] / lf->bw, e = (m - y[i]) / y[i], d = (y[i] - swy / sw) / y[i];
        rss += e * e, tss += d * d, lf->worst = fmax(lf->worst, fabs(e));
    }
    lf->r2 = tss > 0 ? 1 - rss / tss : 1;
    return 0;
}

int netfit_fit(const net_run *r, const char *path, net_fit *f)
{
    memset(f, 0, sizeof *f);
    if (r->n < 2)
        return err_usage("%s:%d: %s: %d size%s of more than 0 bytes: a latency and a bandwidth need at least 2",
                         path, r->first_line, net_coll_names[r->coll], r->n, r->n == 1 ? "" : "s");
    double *x = malloc(3 * (size_t)r->n * sizeof *x);
    if (!x) return err_msg("out of memory for the fit");
    double *y = x + r->n, *yi = y + r->n, fac = bus_factor(r->coll, r->ranks), big = -1;
    int inplace = 1;
    for (int i = 0; i < r->n; i++) {
        x[i] = r->pts[i].bytes * fac, y[i] = r->pts[i].time_us * 1e-6, yi[i] = r->pts[i].inplace_us * 1e-6;
        inplace = inplace && yi[i] > 0;
        if (r->pts[i].bytes > big) big = r->pts[i].bytes, f->busbw_max_gb_per_s = x[i] / y[i] / 1e9;
        f->max_bytes = i == 0 ? r->pts[i].bytes : fmax(f->max_bytes, r->pts[i].bytes);
        f->min_bytes = i == 0 ? r->pts[i].bytes : fmin(f->min_bytes, r->pts[i].bytes);
    }
    line_fit lf, li;
    int rc = fit_line(x, y, r->n, &lf);
    f->inplace_latency_us = f->inplace_busbw_gb_per_s = NAN;
    if (rc == 0 && inplace && fit_line(x, yi, r->n, &li) == 0)
        f->inplace_latency_us = li.lat_s * 1e6, f->inplace_busbw_gb_per_s = li.bw / 1e9;
    free(x);
    if (rc < 0) return rc;
    if (rc != 0)
        return err_usage("%s:%d-%d: %s: the times do not grow with the size: no bandwidth to fit", path,
                         r->first_line, r->last_line, net_coll_names[r->coll]);
    f->latency_us = lf.lat_s * 1e6, f->busbw_gb_per_s = lf.bw / 1e9, f->r2 = lf.r2, f->max_resid_pct = 100 * lf.worst;
    f->sizes = r->n, f->clamped = lf.clamped, f->plateau_rows = lf.bw_rows, f->latency_rows = lf.lat_rows;
    f->plateau_min_bytes = lf.bw_min_bytes / fac, f->latency_max_bytes = lf.lat_max_bytes / fac;
    return 0;
}

double netfit_hop_latency_us(double latency_us, int nodes)
{
    double k = nodes > 1 ? (double)nodes : 2.0, hops = fmin(2.0 * (k - 1), 2.0 * ceil(log2(k)));
    return latency_us / hops;
}
