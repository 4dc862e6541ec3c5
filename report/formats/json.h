/* json.h: a small strict JSON reader (RFC 8259) for the price catalogues. The whole document
 * becomes a tree of json_val; each value keeps the line it starts on. Strict: no comments, no
 * trailing commas, no member name twice in one object, no leading zeros, no control characters in
 * strings, nothing after the value; nesting deeper than JSON_MAX_DEPTH is refused. Errors read
 * "error: path:line: ...". */
#ifndef CB_JSON_H
#define CB_JSON_H

#include <stddef.h>

#define JSON_MAX_DEPTH 64

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_kind;

typedef struct json_val {
    json_kind kind;
    int line;               /* where the value starts */
    int boolean;            /* JSON_BOOL */
    double number;          /* JSON_NUMBER */
    char *str;              /* JSON_STRING: UTF-8, NUL-terminated (an escaped NUL is refused) */
    struct json_val *items; /* JSON_ARRAY, JSON_OBJECT: (n) values */
    char **keys;            /* JSON_OBJECT: (n) member names */
    int n;
} json_val;

/* Parses text[0..len) (`path` names it in errors). Returns 0, or CB_EUSAGE after one error line
 * naming path:line; *out is then empty. */
int json_parse(const char *text, size_t len, const char *path, json_val *out);
/* Reads and parses a file (at most JSON_MAX_BYTES). */
#define JSON_MAX_BYTES ((size_t)512 << 20)
int json_load(const char *path, json_val *out);
void json_free(json_val *v);
/* The member `key` of an object, or NULL (also when v is not an object). */
const json_val *json_get(const json_val *v, const char *key);
/* The member's string, or NULL when absent or not a string. */
const char *json_get_str(const json_val *v, const char *key);

#endif
