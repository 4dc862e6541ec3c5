/* kvconf.c: YAML and TOML settings flattened to dotted keys (kvconf.h). */
#include "kvconf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/files.h"
#include "../../common/parse.h"

enum { KV_DEPTH = 32, KV_KEY_MAX = 512 };

static int kv_add(kv_conf *c, const char *key, const char *value, int line)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        kv_item *p = realloc(c->items, (size_t)cap * sizeof *p);
        if (!p) return err_msg("out of memory");
        c->items = p, c->cap = cap;
    }
    kv_item *it = &c->items[c->n];
    it->key = strdup(key), it->value = strdup(value), it->line = line;
    if (!it->key || !it->value) {
        free(it->key), free(it->value);
        return err_msg("out of memory");
    }
    c->n++;
    return 0;
}

void kvconf_free(kv_conf *c)
{
    for (int i = 0; i < c->n; i++) free(c->items[i].key), free(c->items[i].value);
    free(c->items);
    c->items = NULL, c->n = c->cap = 0;
}

char *text_trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = '\0';
    return s;
}

void text_vnote(char *buf, size_t n, const char *fmt, va_list ap)
{
    size_t len = strlen(buf);
    if (len && len + 2 < n) len += (size_t)snprintf(buf + len, n - len, "; ");
    if (len + 1 < n) vsnprintf(buf + len, n - len, fmt, ap);
}

/* Cuts a '#' comment that is outside quotes and starts the line or follows a blank. */
static void cut_comment(char *s)
{
    char q = 0;
    for (char *p = s; *p; p++) {
        if (q) {
            if (*p == q) q = 0;
        } else if ((*p == '"' || *p == '\'') && (p == s || strchr(" \t:=[{,", p[-1]))) {
            q = *p; /* a quote opens a string only where a value or a key starts: "Llama's" is text */
        } else if (*p == '#' && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
            *p = '\0';
            return;
        }
    }
}

/* A scalar without its surrounding quotes, in place. */
static char *unquote(char *v)
{
    size_t n = strlen(v);
    if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
        v[n - 1] = '\0';
        return v + 1;
    }
    return v;
}

/* prefix.key into dst; a key too long for it is cut (no setting a run is read by is that long). */
static void join_key(char *dst, size_t n, const char *prefix, const char *key)
{
    if ((size_t)snprintf(dst, n, "%s%s%s", prefix, prefix[0] ? "." : "", key) >= n) dst[n - 1] = '\0';
}

/* "a: 1, b: x" (the inside of a flow mapping) as items under prefix. */
static int yaml_flow(kv_conf *c, const char *prefix, char *body, int line)
{
    for (char *save = NULL, *part = strtok_r(body, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(part, ':');
        if (!colon) continue;
        *colon = '\0';
        char key[KV_KEY_MAX];
        join_key(key, sizeof key, prefix, unquote(text_trim(part)));
        if (kv_add(c, key, unquote(text_trim(colon + 1)), line) != 0) return CB_EFAIL;
    }
    return 0;
}

typedef struct {
    int indent[KV_DEPTH];
    char key[KV_DEPTH][KV_KEY_MAX];
    int depth;
    int skip_indent; /* >= 0: inside a block scalar or a sequence begun at this indent */
    int skip_seq;    /* 1: the skipped block is a sequence ("- " lines at skip_indent continue it) */
} yaml_state;

/* One YAML line (comment cut, not blank). */
static int yaml_line(kv_conf *c, yaml_state *st, char *raw, int line)
{
    int indent = (int)strspn(raw, " ");
    char *s = text_trim(raw);
    if (st->skip_indent >= 0) {
        if (indent > st->skip_indent || (st->skip_seq && indent == st->skip_indent && s[0] == '-')) return 0;
        st->skip_indent = -1;
    }
    if (strcmp(s, "---") == 0 || strcmp(s, "...") == 0) return 0;
    while (st->depth > 0 && st->indent[st->depth - 1] >= indent) st->depth--;
    const char *prefix = st->depth ? st->key[st->depth - 1] : "";
    if (s[0] == '-' && (s[1] == ' ' || s[1] == '\0')) { /* a sequence: kept whole under its key */
        st->skip_indent = indent, st->skip_seq = 1;
        return 0;
    }
    char *colon = s;
    while ((colon = strchr(colon, ':')) && colon[1] && colon[1] != ' ' && colon[1] != '\t') colon++;
    if (!colon || colon == s)
        return err_usage("%s:%d: expected 'key: value' (YAML), got '%.60s'", c->path, line, s);
    *colon = '\0';
    char key[KV_KEY_MAX], *v = text_trim(colon + 1);
    join_key(key, sizeof key, prefix, unquote(text_trim(s)));
    if (v[0] == '{') {
        size_t n = strlen(v);
        if (v[n - 1] == '}') v[n - 1] = '\0';
        return kv_add(c, key, "", line) || yaml_flow(c, key, v + 1, line) ? CB_EFAIL : 0;
    }
    if (v[0] == '|' || v[0] == '>') { /* a block scalar: its lines are not settings */
        st->skip_indent = indent, st->skip_seq = 0;
        return kv_add(c, key, "", line);
    }
    if (v[0] == '\0' && st->depth < KV_DEPTH) {
        st->indent[st->depth] = indent;
        snprintf(st->key[st->depth++], KV_KEY_MAX, "%s", key);
    }
    return kv_add(c, key, unquote(v), line);
}

int kvconf_yaml_lines(kv_conf *c, const char *path, char *const *lines, int first, int n)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    yaml_state st = {.skip_indent = -1};
    for (int i = 0; i < n; i++) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", lines[first + i]);
        for (char *p = buf; *p; p++)
            if (*p == '\t') *p = ' ';
        cut_comment(buf);
        if (text_trim(buf)[0] == '\0') continue;
        if (yaml_line(c, &st, buf, first + i + 1) != 0) {
            kvconf_free(c);
            return CB_EUSAGE;
        }
    }
    return 0;
}

int text_lines_load(text_lines *t, const char *path)
{
    memset(t, 0, sizeof *t);
    if ((size_t)snprintf(t->path, sizeof t->path, "%s", path) >= sizeof t->path)
        return err_usage("%.64s...: path longer than %zu characters", path, sizeof t->path - 1);
    size_t len;
    char *b = file_read_all(path, (size_t)TEXT_LINES_MAX_MIB << 20, &len);
    if (!b) return CB_EUSAGE;
    if (memchr(b, '\0', len)) {
        free(b);
        return err_usage("%s: a NUL byte: not a text file", path);
    }
    int nl = 1;
    for (size_t i = 0; i < len; i++) nl += b[i] == '\n';
    if (!(t->line = malloc((size_t)nl * sizeof *t->line))) {
        free(b);
        return err_msg("out of memory");
    }
    char *start = len >= 3 && memcmp(b, "\xEF\xBB\xBF", 3) == 0 ? b + 3 : b; /* a UTF-8 byte-order mark */
    for (char *p = start, *e; p; p = e ? e + 1 : NULL) {
        if ((e = strchr(p, '\n'))) *e = '\0';
        size_t l = strlen(p);
        if (l && p[l - 1] == '\r') p[l - 1] = '\0';
        if (e || *p) t->line[t->n++] = p;
    }
    t->buf = b;
    return 0;
}

void text_lines_free(text_lines *t)
{
    free(t->line), free(t->buf);
    t->line = NULL, t->buf = NULL, t->n = 0;
}

int kvconf_load_yaml(kv_conf *c, const char *path)
{
    text_lines t;
    memset(c, 0, sizeof *c);
    if (text_lines_load(&t, path) != 0) return CB_EUSAGE;
    int rc = kvconf_yaml_lines(c, path, t.line, 0, t.n);
    text_lines_free(&t);
    return rc;
}

/* Brackets still open in s, outside quotes ("[1,\n 2]" spans lines). */
static int open_brackets(const char *s, int open)
{
    char q = 0;
    for (; *s; s++) {
        if (q) {
            if (*s == q) q = 0;
        } else if (*s == '"' || *s == '\'') {
            q = *s;
        } else {
            open += (*s == '[' || *s == '{') - (*s == ']' || *s == '}');
        }
    }
    return open;
}

/* One TOML line (comment cut, trimmed, not blank); *open: brackets of a value still open. */
static int toml_line(kv_conf *c, char *table, size_t tn, char *s, int line, int *open)
{
    if (*open > 0) {
        *open = open_brackets(s, *open);
        return 0;
    }
    if (s[0] == '[') {
        size_t n = strlen(s);
        int dbl = s[1] == '[';
        if (n < 3 || s[n - 1] != ']' || (dbl && s[n - 2] != ']'))
            return err_usage("%s:%d: expected a '[table]' header (TOML), got '%.60s'", c->path, line, s);
        s[n - 1 - dbl] = '\0';
        snprintf(table, tn, "%s", text_trim(s + 1 + dbl));
        return 0;
    }
    char *eq = strchr(s, '=');
    if (!eq || eq == s) return err_usage("%s:%d: expected 'key = value' (TOML), got '%.60s'", c->path, line, s);
    *eq = '\0';
    char key[KV_KEY_MAX], *v = text_trim(eq + 1);
    join_key(key, sizeof key, table, unquote(text_trim(s)));
    if (strncmp(v, "\"\"\"", 3) == 0 || strncmp(v, "'''", 3) == 0)
        return err_usage("%s:%d: key '%s': multi-line strings are not read", c->path, line, key);
    *open = open_brackets(v, 0);
    return kv_add(c, key, unquote(v), line);
}

int kvconf_load_toml(kv_conf *c, const char *path)
{
    text_lines t;
    int open = 0, rc = 0;
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    if (text_lines_load(&t, path) != 0) return CB_EUSAGE;
    char table[KV_KEY_MAX] = "";
    for (int i = 0; rc == 0 && i < t.n; i++) {
        cut_comment(t.line[i]);
        char *s = text_trim(t.line[i]);
        if (s[0]) rc = toml_line(c, table, sizeof table, s, i + 1, &open);
    }
    if (rc == 0 && open > 0) rc = err_usage("%s:%d: a '[' or '{' is never closed", path, t.n);
    text_lines_free(&t);
    if (rc) kvconf_free(c);
    return rc ? CB_EUSAGE : 0;
}

const kv_item *kvconf_get(const kv_conf *c, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->items[i].key, key) == 0) return &c->items[i];
    return NULL;
}

const kv_item *kvconf_find(const kv_conf *c, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < c->n; i++) {
        const char *k = c->items[i].key;
        size_t kl = strlen(k);
        if (strcmp(k, name) == 0 || (kl > n && k[kl - n - 1] == '.' && strcmp(k + kl - n, name) == 0))
            return &c->items[i];
    }
    return NULL;
}

static const kv_item *find_any(const kv_conf *c, const char *const *names)
{
    for (; *names; names++) {
        const kv_item *it = kvconf_find(c, *names);
        if (it && it->value[0] && strcmp(it->value, "null") != 0 && strcmp(it->value, "None") != 0) return it;
    }
    return NULL;
}

int kvconf_long(const kv_conf *c, const char *const *names, long lo, long hi, long *out)
{
    const kv_item *it = find_any(c, names);
    if (!it) return 0;
    char what[CB_PATH_MAX + KV_KEY_MAX + 32];
    snprintf(what, sizeof what, "%s:%d: key '%s'", c->path, it->line, it->key);
    return parse_long(it->value, lo, hi, 0, what, out) == 0 ? 1 : CB_EUSAGE;
}

int kvconf_double(const kv_conf *c, const char *const *names, double lo, double hi, double *out)
{
    const kv_item *it = find_any(c, names);
    if (!it) return 0;
    char what[CB_PATH_MAX + KV_KEY_MAX + 32];
    snprintf(what, sizeof what, "%s:%d: key '%s'", c->path, it->line, it->key);
    return parse_double(it->value, lo, hi, what, out) == 0 ? 1 : CB_EUSAGE;
}

int kvconf_bool(const kv_conf *c, const char *const *names, int *out)
{
    const kv_item *it = find_any(c, names);
    if (!it) return 0;
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "1"}, *const no[] = {"false", "False", "FALSE",
                                                                                            "no", "0"};
    for (int i = 0; i < 5; i++) {
        if (strcmp(it->value, yes[i]) == 0) return *out = 1, 1;
        if (strcmp(it->value, no[i]) == 0) return *out = 0, 1;
    }
    return err_usage("%s:%d: key '%s': expected true or false, got '%.40s'", c->path, it->line, it->key, it->value);
}

int kvconf_interpolate(kv_conf *c, const char *scope)
{
    for (int pass = 0; pass < 4; pass++) { /* a variable may name another: a few levels resolve the chains seen */
        int changed = 0;
        for (int i = 0; i < c->n; i++) {
            char *v = c->items[i].value;
            size_t n = strlen(v);
            if (n < 4 || strncmp(v, "${", 2) != 0 || v[n - 1] != '}' || n - 3 >= KV_KEY_MAX) continue;
            char name[KV_KEY_MAX], scoped[2 * KV_KEY_MAX];
            snprintf(name, sizeof name, "%.*s", (int)(n - 3), v + 2);
            snprintf(scoped, sizeof scoped, "%s.%s", scope, name);
            const kv_item *to = kvconf_get(c, name);
            if (!to || to == &c->items[i]) to = kvconf_get(c, scoped);
            if (!to || to == &c->items[i] || strcmp(to->value, v) == 0) continue;
            char *copy = strdup(to->value);
            if (!copy) return err_msg("out of memory");
            free(c->items[i].value);
            c->items[i].value = copy, changed = 1;
        }
        if (!changed) break;
    }
    return 0;
}
