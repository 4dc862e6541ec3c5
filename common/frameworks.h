/* frameworks.h: the --framework vocabulary every command shares (import, scale, plan): the names
 * the published-runs schema's `framework` column uses (data/reference/published/SCHEMA.md:
 * megatron-lm, megatron-core, nemo, megatron-bridge, neuron-nemo, neuronx-distributed,
 * llm-foundry, torchtitan, deepspeed, megatron-deepspeed, costbench) and the step model's default,
 * plain. Which of them a command knows is its own table's: import the log formats'
 * (report/logs/registry.c), scale and plan the step model's frameworks (report/predict/frameworks.c,
 * which also reads a version: NAME@VERSION). The old spellings stay accepted as aliases, listed here once. */
#ifndef CB_FRAMEWORKS_H
#define CB_FRAMEWORKS_H

#include <stddef.h>

/* The canonical name of a spelling: an alias's name ("megatron" -> "megatron-lm", "composer" ->
 * "llm-foundry"), else `name` itself (NULL for NULL). */
const char *framework_canonical(const char *name);
/* spec "name" or "name@version" (scale/plan --framework, report/predict/frameworks.h): the
 * canonical name of its name part into name (n bytes) and *version the text after '@' (NULL: none). */
void framework_split(const char *spec, char *name, size_t n, const char **version);
/* The aliases as "megatron (megatron-lm), composer (llm-foundry)" into buf. */
void framework_aliases(char *buf, size_t n);
/* The one error of a --framework the command does not know: "flag '--framework': expected one of
 * KNOWN (the command's names; aliases: megatron (megatron-lm), ...), got 'x'". Returns CB_EUSAGE. */
int framework_unknown(const char *given, const char *known);

#endif
