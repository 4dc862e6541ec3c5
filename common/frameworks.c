/* frameworks.c: --framework's aliases (frameworks.h). */
#include "frameworks.h"

#include <stdio.h>
#include <string.h>

#include "err.h"

/* The spellings import accepted before every command took the schema's names (megatron,
 * composer), and the repositories' own names of three frameworks (mcore: Megatron-Core;
 * neuronx-nemo-megatron: aws-neuron's repository of neuron-nemo; nxd: neuronx-distributed). */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"megatron", "megatron-lm"},
    {"composer", "llm-foundry"},
    {"mcore", "megatron-core"},
    {"neuronx-nemo-megatron", "neuron-nemo"},
    {"nxd", "neuronx-distributed"},
};
enum { NALIASES = sizeof aliases / sizeof aliases[0] };

const char *framework_canonical(const char *name)
{
    for (int k = 0; name && k < NALIASES; k++)
        if (strcmp(name, aliases[k].alias) == 0) return aliases[k].name;
    return name;
}

void framework_split(const char *spec, char *name, size_t n, const char **version)
{
    const char *at = spec ? strchr(spec, '@') : NULL;
    *version = at ? at + 1 : NULL;
    snprintf(name, n, "%.*s", at ? (int)(at - spec) : (int)(spec ? strlen(spec) : 0), spec ? spec : "");
    const char *c = framework_canonical(name);
    if (c != name) snprintf(name, n, "%s", c);
}

void framework_aliases(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < NALIASES && used < n; k++) {
        int w = snprintf(buf + used, n - used, "%s%s (%s)", k ? ", " : "", aliases[k].alias, aliases[k].name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

int framework_unknown(const char *given, const char *known)
{
    char al[256];
    framework_aliases(al, sizeof al);
    return err_usage("flag '--framework': expected one of %s (aliases: %s), got '%s'", known, al, given);
}
