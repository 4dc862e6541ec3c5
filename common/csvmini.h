/* csvmini.h: the part of libcsv's API that common/csvio.c calls, for builds that must do without
 * Debian's libcsv-dev: the GPU microbenchmarks (`make gpu`, bench/gpu/), built on rented GPU
 * nodes that have the CUDA toolkit and a C compiler but none of Debian's -dev packages. Every
 * other build uses libcsv itself; tests/test_csvmini.c feeds both the same inputs and checks that
 * they agree on rows, fields and errors.
 *
 * What csvio.c relies on, as libcsv 3 does it with CSV_STRICT | CSV_APPEND_NULL | CSV_STRICT_FINI:
 *   - fields separated by ',', records ended by '\n' or '\r' (a CR LF pair ends one record; an
 *     empty record calls nothing); a field's callback gets its bytes (quotes removed, a doubled
 *     quote inside a quoted field one quote), NUL-terminated; unquoted fields have their leading
 *     and trailing blanks (space, tab) trimmed;
 *   - CSV_STRICT: a quote inside an unquoted field, or anything but a delimiter, a terminator or a
 *     blank after a closing quote, is CSV_EPARSE (csv_parse returns the bytes it consumed before it);
 *   - CSV_STRICT_FINI: an unterminated quoted field at csv_fini is CSV_EPARSE;
 *   - pstate is 0 (ROW_NOT_BEGUN) exactly between records;
 *   - csv_fwrite writes a field quoted, with its quotes doubled. */
#ifndef CB_CSVMINI_H
#define CB_CSVMINI_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CSV_STRICT 1
#define CSV_APPEND_NULL 8
#define CSV_STRICT_FINI 16
#define CSV_SUCCESS 0
#define CSV_EPARSE 1
#define CSV_ENOMEM 2

enum { CSVM_ROW_NOT_BEGUN, CSVM_FIELD_NOT_BEGUN, CSVM_FIELD_BEGUN, CSVM_IN_QUOTES, CSVM_QUOTE_IN_QUOTES,
       CSVM_AFTER_QUOTES };

struct csv_parser {
    int pstate;
    int status;
    int quoted;    /* the current field began with a quote (no trimming of its contents) */
    size_t trail;  /* unquoted field: its length up to the last non-blank byte */
    char *buf;
    size_t len, cap;
    int was_cr;    /* the last terminator was a CR: an LF right after it ends nothing */
};

static inline int csv_init(struct csv_parser *p, unsigned char options)
{
    (void)options; /* csvio.c always asks for strict parsing with NUL-terminated fields */
    memset(p, 0, sizeof *p);
    return 0;
}

static inline void csv_free(struct csv_parser *p)
{
    free(p->buf);
    p->buf = NULL, p->cap = p->len = 0;
}

static inline int csv_error(const struct csv_parser *p) { return p->status; }

static inline const char *csv_strerror(int status)
{
    return status == CSV_EPARSE ? "error parsing data while strict checking enabled"
           : status == CSV_ENOMEM ? "memory exhausted while increasing buffer size"
                                  : "success";
}

static inline int csvm_put(struct csv_parser *p, char ch)
{
    if (p->len + 2 > p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 128;
        char *b = realloc(p->buf, cap);
        if (!b) return p->status = CSV_ENOMEM;
        p->buf = b, p->cap = cap;
    }
    p->buf[p->len++] = ch;
    return 0;
}

typedef void (*csvm_field_cb)(void *, size_t, void *);
typedef void (*csvm_row_cb)(int, void *);

static inline void csvm_end_field(struct csv_parser *p, csvm_field_cb f, void *data)
{
    size_t n = p->quoted ? p->len : p->trail;
    if (!p->buf && csvm_put(p, '\0') != 0) return;
    p->buf[n] = '\0';
    if (f) f(p->buf, n, data);
    p->len = p->trail = 0, p->quoted = 0;
}

static inline void csvm_end_row(struct csv_parser *p, csvm_field_cb f, csvm_row_cb r, int term, void *data)
{
    csvm_end_field(p, f, data);
    if (r) r(term, data);
    p->pstate = CSVM_ROW_NOT_BEGUN;
}

/* One byte outside quotes (a field not begun, begun, or closed by its quote). 0, or CSV_EPARSE. */
static inline int csvm_plain(struct csv_parser *p, char ch, csvm_field_cb f, csvm_row_cb r, void *data)
{
    int blank = ch == ' ' || ch == '\t';
    if (ch == '\n' || ch == '\r') {
        if (p->pstate == CSVM_ROW_NOT_BEGUN) {
            if (!(ch == '\n' && p->was_cr)) p->was_cr = ch == '\r';
            else p->was_cr = 0;
            return 0;
        }
        csvm_end_row(p, f, r, ch, data);
        p->was_cr = ch == '\r';
        return 0;
    }
    p->was_cr = 0;
    if (ch == ',') {
        csvm_end_field(p, f, data);
        p->pstate = CSVM_FIELD_NOT_BEGUN;
        return 0;
    }
    if (p->pstate == CSVM_AFTER_QUOTES) return blank ? 0 : (p->status = CSV_EPARSE);
    if (ch == '"') {
        if (p->pstate == CSVM_FIELD_BEGUN) return p->status = CSV_EPARSE;
        p->pstate = CSVM_IN_QUOTES, p->quoted = 1, p->len = 0;
        return 0;
    }
    if (blank && p->pstate != CSVM_FIELD_BEGUN) {
        if (p->pstate == CSVM_ROW_NOT_BEGUN) p->pstate = CSVM_FIELD_NOT_BEGUN;
        return 0;
    }
    p->pstate = CSVM_FIELD_BEGUN;
    if (csvm_put(p, ch) != 0) return p->status;
    if (!blank) p->trail = p->len;
    return 0;
}

/* Parses len bytes; returns how many were consumed (len, or fewer at an error: csv_error says). */
static inline size_t csv_parse(struct csv_parser *p, const void *s, size_t len, csvm_field_cb f, csvm_row_cb r,
                               void *data)
{
    const char *c = s;
    for (size_t i = 0; i < len; i++) {
        char ch = c[i];
        if (p->pstate == CSVM_IN_QUOTES) {
            if (ch == '"') p->pstate = CSVM_QUOTE_IN_QUOTES;
            else if (csvm_put(p, ch) != 0) return i;
            continue;
        }
        if (p->pstate == CSVM_QUOTE_IN_QUOTES) {
            if (ch == '"') {
                p->pstate = CSVM_IN_QUOTES;
                if (csvm_put(p, ch) != 0) return i;
                continue;
            }
            p->pstate = CSVM_AFTER_QUOTES;
        }
        if (csvm_plain(p, ch, f, r, data) != 0) return i;
    }
    return len;
}

/* Ends the last record when the text did not; an open quoted field is CSV_EPARSE. */
static inline int csv_fini(struct csv_parser *p, csvm_field_cb f, csvm_row_cb r, void *data)
{
    if (p->pstate == CSVM_IN_QUOTES) return p->status = CSV_EPARSE;
    if (p->pstate != CSVM_ROW_NOT_BEGUN) csvm_end_row(p, f, r, -1, data);
    p->was_cr = 0;
    return 0;
}

static inline size_t csv_fwrite(FILE *fp, const void *src, size_t len)
{
    const char *s = src;
    fputc('"', fp);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"') fputc('"', fp);
        fputc(s[i], fp);
    }
    fputc('"', fp);
    return len;
}

#endif
