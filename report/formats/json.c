#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/files.h"

typedef struct {
    const char *s, *path;
    size_t len, pos;
    int line, depth;
} json_reader;

static int json_fail(const json_reader *r, const char *what)
{
    if (r->pos >= r->len) return err_usage("%s:%d: %s (the text ends: truncated?)", r->path, r->line, what);
    return err_usage("%s:%d: %s, got '%c'", r->path, r->line, what, r->s[r->pos]);
}

static void skip_ws(json_reader *r)
{
    while (r->pos < r->len) {
        char c = r->s[r->pos];
        if (c == '\n')
            r->line++;
        else if (c != ' ' && c != '\t' && c != '\r')
            return;
        r->pos++;
    }
}

static int literal(json_reader *r, const char *word)
{
    size_t n = strlen(word);
    if (r->len - r->pos < n || memcmp(r->s + r->pos, word, n) != 0) return json_fail(r, "expected a JSON value");
    r->pos += n;
    return 0;
}

static int parse_number(json_reader *r, json_val *v)
{
    size_t start = r->pos, p = r->pos;
    const char *s = r->s;
    if (p < r->len && s[p] == '-') p++;
    if (p < r->len && s[p] == '0')
        p++;
    else if (p < r->len && s[p] >= '1' && s[p] <= '9')
        while (p < r->len && s[p] >= '0' && s[p] <= '9') p++;
    else
        return json_fail(r, "expected a JSON value");
    if (p < r->len && s[p] == '.') {
        if (++p >= r->len || s[p] < '0' || s[p] > '9')
            return err_usage("%s:%d: a number needs digits after '.'", r->path, r->line);
        while (p < r->len && s[p] >= '0' && s[p] <= '9') p++;
    }
    if (p < r->len && (s[p] == 'e' || s[p] == 'E')) {
        p++;
        if (p < r->len && (s[p] == '+' || s[p] == '-')) p++;
        if (p >= r->len || s[p] < '0' || s[p] > '9')
            return err_usage("%s:%d: a number needs an exponent", r->path, r->line);
        while (p < r->len && s[p] >= '0' && s[p] <= '9') p++;
    }
    char buf[64];
    if (p - start >= sizeof buf)
        return err_usage("%s:%d: a number longer than %zu characters", r->path, r->line, sizeof buf - 1);
    memcpy(buf, s + start, p - start);
    buf[p - start] = '\0';
    errno = 0;
    v->number = strtod(buf, NULL);
    if (errno == ERANGE || !isfinite(v->number))
        return err_usage("%s:%d: number '%s' out of range", r->path, r->line, buf);
    v->kind = JSON_NUMBER;
    r->pos = p;
    return 0;
}

static int hex4(json_reader *r, unsigned *out)
{
    if (r->len - r->pos < 4) return json_fail(r, "expected 4 hex digits after '\\u'");
    *out = 0;
    for (int i = 0; i < 4; i++) {
        char c = r->s[r->pos++];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16) return err_usage("%s:%d: expected 4 hex digits after '\\u'", r->path, r->line);
        *out = *out * 16 + d;
    }
    return 0;
}

/* A \u escape (a surrogate pair too) appended as UTF-8 at out[*n]. */
static int unicode_escape(json_reader *r, char *out, size_t *n)
{
    unsigned cp;
    if (hex4(r, &cp) != 0) return CB_EUSAGE;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        unsigned lo;
        if (r->len - r->pos < 2 || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u')
            return err_usage("%s:%d: a lone surrogate in '\\u' escape", r->path, r->line);
        r->pos += 2;
        if (hex4(r, &lo) != 0) return CB_EUSAGE;
        if (lo < 0xDC00 || lo > 0xDFFF) return err_usage("%s:%d: a lone surrogate in '\\u' escape", r->path, r->line);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return err_usage("%s:%d: a lone surrogate in '\\u' escape", r->path, r->line);
    }
    if (cp == 0) return err_usage("%s:%d: '\\u0000' in a string", r->path, r->line);
    if (cp < 0x80)
        out[(*n)++] = (char)cp;
    else if (cp < 0x800) {
        out[(*n)++] = (char)(0xC0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xE0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | (cp >> 18));
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
    return 0;
}

/* A string at r->pos (the opening quote) into a new buffer: an escape never grows the text, so
 * the raw length bounds the result. */
static int parse_string(json_reader *r, char **out)
{
    static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";
    size_t end = ++r->pos;
    while (end < r->len && r->s[end] != '"') end += r->s[end] == '\\' ? 2 : 1;
    char *buf = malloc(end - r->pos + 1);
    if (!buf) return err_msg("out of memory");
    size_t n = 0;
    while (r->pos < r->len && r->s[r->pos] != '"') {
        char c = r->s[r->pos];
        const char *e;
        if ((unsigned char)c < 0x20) {
            free(buf);
            return err_usage("%s:%d: a control character in a string (unterminated string?)", r->path, r->line);
        }
        r->pos++;
        if (c != '\\')
            buf[n++] = c;
        else if (r->pos < r->len && r->s[r->pos] == 'u') {
            r->pos++;
            if (unicode_escape(r, buf, &n) != 0) {
                free(buf);
                return CB_EUSAGE;
            }
        } else if (r->pos < r->len && r->s[r->pos] != '\0' && (e = strchr(esc_in, r->s[r->pos]))) {
            buf[n++] = esc_out[e - esc_in];
            r->pos++;
        } else {
            free(buf);
            return json_fail(r, "expected an escape character after '\\'");
        }
    }
    if (r->pos >= r->len) {
        free(buf);
        return json_fail(r, "unterminated string");
    }
    r->pos++;
    buf[n] = '\0';
    *out = buf;
    return 0;
}

static int parse_value(json_reader *r, json_val *v);

/* One more element of an array or member of an object (keys NULL for arrays). */
static int grow(json_val *v, int *cap)
{
    if (v->n < *cap) return 0;
    int ncap = *cap ? 2 * *cap : 8;
    json_val *items = realloc(v->items, (size_t)ncap * sizeof *items);
    if (!items) return err_msg("out of memory");
    v->items = items;
    if (v->kind == JSON_OBJECT) {
        char **keys = realloc(v->keys, (size_t)ncap * sizeof *keys);
        if (!keys) return err_msg("out of memory");
        v->keys = keys;
    }
    *cap = ncap;
    return 0;
}

/* An array or object: r->pos at '[' or '{'. */
static int parse_container(json_reader *r, json_val *v, char close)
{
    int cap = 0, rc = 0;
    v->kind = close == ']' ? JSON_ARRAY : JSON_OBJECT;
    if (++r->depth > JSON_MAX_DEPTH)
        return err_usage("%s:%d: nested deeper than %d levels", r->path, r->line, JSON_MAX_DEPTH);
    r->pos++;
    skip_ws(r);
    if (r->pos < r->len && r->s[r->pos] == close) {
        r->pos++;
        r->depth--;
        return 0;
    }
    for (;;) {
        if ((rc = grow(v, &cap)) != 0) return rc;
        if (v->kind == JSON_OBJECT) {
            if (r->pos >= r->len || r->s[r->pos] != '"') return json_fail(r, "expected a member name in quotes");
            if ((rc = parse_string(r, &v->keys[v->n])) != 0) return rc;
            for (int k = 0; k < v->n; k++)
                if (strcmp(v->keys[k], v->keys[v->n]) == 0) {
                    rc = err_usage("%s:%d: member '%.60s' appears twice in one object", r->path, r->line,
                                   v->keys[v->n]);
                    free(v->keys[v->n]);
                    return rc;
                }
            skip_ws(r);
            if (r->pos >= r->len || r->s[r->pos] != ':') {
                free(v->keys[v->n]);
                return json_fail(r, "expected ':' after a member name");
            }
            r->pos++;
        }
        if ((rc = parse_value(r, &v->items[v->n])) != 0) { /* what the element holds so far is not counted in n */
            json_free(&v->items[v->n]);
            if (v->kind == JSON_OBJECT) free(v->keys[v->n]);
            return rc;
        }
        v->n++;
        skip_ws(r);
        if (r->pos < r->len && r->s[r->pos] == ',') {
            r->pos++;
            skip_ws(r);
            continue;
        }
        if (r->pos < r->len && r->s[r->pos] == close) break;
        return json_fail(r, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
    }
    r->pos++;
    r->depth--;
    return 0;
}

static int parse_value(json_reader *r, json_val *v)
{
    memset(v, 0, sizeof *v);
    skip_ws(r);
    v->line = r->line;
    if (r->pos >= r->len) return json_fail(r, "expected a JSON value");
    switch (r->s[r->pos]) {
    case '{':
        return parse_container(r, v, '}');
    case '[':
        return parse_container(r, v, ']');
    case '"':
        v->kind = JSON_STRING;
        return parse_string(r, &v->str);
    case 't':
        v->kind = JSON_BOOL;
        v->boolean = 1;
        return literal(r, "true");
    case 'f':
        v->kind = JSON_BOOL;
        return literal(r, "false");
    case 'n':
        v->kind = JSON_NULL;
        return literal(r, "null");
    default:
        return parse_number(r, v);
    }
}

int json_parse(const char *text, size_t len, const char *path, json_val *out)
{
    json_reader r = {.s = text, .path = path, .len = len, .line = 1};
    int rc = parse_value(&r, out);
    if (rc == 0) {
        skip_ws(&r);
        if (r.pos < r.len) rc = json_fail(&r, "expected the end of the text after the JSON value");
    }
    if (rc != 0) json_free(out);
    return rc;
}

int json_load(const char *path, json_val *out)
{
    memset(out, 0, sizeof *out);
    size_t n;
    char *buf = file_read_all(path, JSON_MAX_BYTES, &n);
    if (!buf) return CB_EUSAGE;
    int rc = json_parse(buf, n, path, out);
    free(buf);
    return rc;
}

void json_free(json_val *v)
{
    if (!v) return;
    for (int i = 0; i < v->n; i++) {
        json_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

const json_val *json_get(const json_val *v, const char *key)
{
    if (!v || v->kind != JSON_OBJECT) return NULL;
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0) return &v->items[i];
    return NULL;
}

const char *json_get_str(const json_val *v, const char *key)
{
    const json_val *m = json_get(v, key);
    return m && m->kind == JSON_STRING ? m->str : NULL;
}
