#include "opts.h"

#include <string.h>

#include "err.h"
#include "parse.h"

/* "costbench " before a subcommand's name; nothing before one that names its program itself
 * ("costbench-gpu matmul"). */
static const char *opts_prog(const char *cmd) { return strncmp(cmd, "costbench", 9) == 0 ? "" : "costbench "; }

void opts_help(FILE *f, const char *cmd, const char *synopsis, const opt_spec *specs)
{
    fprintf(f, "usage: %s%s %s\n", opts_prog(cmd), cmd, synopsis ? synopsis : "[options]");
    if (!specs || !specs[0].name) return;
    fprintf(f, "\noptions:\n");
    for (int i = 0; specs[i].name; i++) {
        char left[64];
        if (specs[i].kind == OPT_FLAG)
            snprintf(left, sizeof left, "--%s", specs[i].name);
        else
            snprintf(left, sizeof left, "--%s %s", specs[i].name, specs[i].metavar ? specs[i].metavar : "VALUE");
        fprintf(f, "  %-26s %s\n", left, specs[i].help ? specs[i].help : "");
    }
    fprintf(f, "  %-26s %s\n", "--help", "show this help");
}

static int set_value(const opt_spec *o, const char *val)
{
    char what[96];
    snprintf(what, sizeof what, "flag '--%s'", o->name);
    switch (o->kind) {
    case OPT_LONG: return parse_long(val, o->lo, o->hi, 1, what, (long *)o->dst);
    case OPT_DOUBLE: return parse_double(val, o->dlo, o->dhi, what, (double *)o->dst);
    case OPT_STR:
        if (val == NULL || *val == '\0') return err_usage("%s: expected a value, got an empty one", what);
        *(const char **)o->dst = val;
        return 0;
    case OPT_LONG_LIST:
    case OPT_LONG_PARALLEL: {
        opt_list *l = (opt_list *)o->dst;
        int flags = PARSE_SUFFIXES | (o->kind == OPT_LONG_PARALLEL ? PARSE_REPEATS : 0);
        int n = parse_long_list(val, o->lo, o->hi, flags, what, l->v, OPT_LIST_CAP);
        if (n < 0) return n;
        l->n = n;
        return 0;
    }
    case OPT_FLAG: *(int *)o->dst = 1; return 0;
    }
    return CB_EUSAGE;
}

int opts_parse(const char *cmd, const char *synopsis, const opt_spec *specs, int argc, char **argv,
               int first, char **positional, int *npositional)
{
    int maxpos = npositional ? *npositional : 0, npos = 0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            opts_help(stdout, cmd, synopsis, specs);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            if (positional && npos < maxpos) {
                positional[npos++] = argv[i];
                continue;
            }
            err_usage("%s%s: unexpected argument '%s'", opts_prog(cmd), cmd, a);
            opts_help(stderr, cmd, synopsis, specs);
            return CB_EUSAGE;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        int k = -1;
        for (int j = 0; specs[j].name; j++)
            if (strlen(specs[j].name) == len && strncmp(specs[j].name, name, len) == 0) { k = j; break; }
        if (k < 0) {
            err_usage("%s%s: unknown flag '--%.*s'", opts_prog(cmd), cmd, (int)len, name);
            opts_help(stderr, cmd, synopsis, specs);
            return CB_EUSAGE;
        }
        const opt_spec *o = &specs[k];
        const char *val = NULL;
        if (o->kind == OPT_FLAG) {
            if (eq) return err_usage("flag '--%s' takes no value", o->name);
        } else if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc)
                return err_usage("flag '--%s' needs a value (%s)", o->name, o->metavar ? o->metavar : "VALUE");
            val = argv[++i];
        }
        if (set_value(o, val) != 0) return CB_EUSAGE;
    }
    if (npositional) *npositional = npos;
    return 0;
}
