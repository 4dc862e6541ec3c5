/* kvconf.h: the configuration files training frameworks write, flattened to dotted keys.
 *
 * YAML (llm-foundry / Composer run files, NeMo's hparams.yaml and the config NeMo prints at
 * start): block mappings nest by indentation and flatten to "model.n_layers"; a scalar is the
 * rest of the line after "key:" with a trailing comment and surrounding quotes removed; flow
 * mappings ({a: 1}) flatten the same way; a flow sequence ([a, b]) is kept as one raw value under
 * its key, a block sequence ("- x" lines) and a block scalar ("|", ">") leave their key with the
 * value "" (their lines are not settings). TOML (torchtitan's job files): "[a.b]" tables, "key = value" pairs, the same
 * value rules. Enough of both formats for the flat settings a training run is configured by; a
 * line neither rule reads is an error naming path:line. Also: a text file as lines (text_lines),
 * and the trimming and "; "-separated notes the readers of such files share. */
#ifndef CB_KVCONF_H
#define CB_KVCONF_H

#include <stdarg.h>
#include <stddef.h>

/* A text file (a log, a config, a catalogue) as lines: line[i] is line i + 1 without its "\n" or
 * "\r\n", all in one buffer; a UTF-8 byte-order mark at its start is skipped. Files over TEXT_LINES_MAX_MIB, with a NUL byte or unreadable: one error
 * naming the path (CB_EUSAGE). */
enum { TEXT_LINES_MAX_MIB = 1024 };
typedef struct {
    char path[4096];
    char *buf;
    char **line;
    int n;
} text_lines;
int text_lines_load(text_lines *t, const char *path);
void text_lines_free(text_lines *t);
/* s without its leading and trailing blanks (spaces, tabs, CR, LF), in place. */
char *text_trim(char *s);
/* Appends fmt's text to the note buf (n bytes), after "; " when buf already holds one; cut at the
 * buffer's end. */
void text_vnote(char *buf, size_t n, const char *fmt, va_list ap);

typedef struct {
    char *key;   /* dotted path, "training.local_batch_size" */
    char *value; /* unquoted scalar ("" for a mapping's own key line) */
    int line;    /* 1-based line in the file (or in the log the text was cut from) */
} kv_item;

typedef struct {
    char path[4096];
    kv_item *items;
    int n, cap;
} kv_conf;

/* Loads a YAML or TOML file. Returns 0 or CB_EUSAGE after one error naming path:line. */
int kvconf_load_yaml(kv_conf *c, const char *path);
int kvconf_load_toml(kv_conf *c, const char *path);
/* YAML held in lines[first .. first + n) of a log (1-based line numbers first + 1 ...): the config
 * a framework prints at start. `path` names the log in messages. */
int kvconf_yaml_lines(kv_conf *c, const char *path, char *const *lines, int first, int n);
void kvconf_free(kv_conf *c);
/* Replaces each value that is a whole "${name}" (llm-foundry's interpolation) by the value of the
 * item `name`, else of `scope`.name ("variables"); references that resolve to nothing stay as
 * they are (a number read from one is then an error naming the key). Returns 0 or CB_EFAIL. */
int kvconf_interpolate(kv_conf *c, const char *scope);

/* The item whose key is exactly `key`, or NULL. */
const kv_item *kvconf_get(const kv_conf *c, const char *key);
/* The first item whose key is `name` or ends in "." name (the setting wherever it nests), or NULL. */
const kv_item *kvconf_find(const kv_conf *c, const char *name);
/* The value of the first of `names` (a NULL-terminated list) found by kvconf_find as a number in
 * [lo, hi] into *out (1 when found, 0 when none is present, CB_EUSAGE after an error naming
 * path:line and the key when the value is no such number). YAML/TOML booleans: kvconf_bool. */
int kvconf_long(const kv_conf *c, const char *const *names, long lo, long hi, long *out);
int kvconf_double(const kv_conf *c, const char *const *names, double lo, double hi, double *out);
/* true/false/True/False/yes/no/1/0 into *out (1 found, 0 absent, CB_EUSAGE not a boolean). */
int kvconf_bool(const kv_conf *c, const char *const *names, int *out);

#endif
