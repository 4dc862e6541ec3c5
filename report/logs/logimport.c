/* logimport.c: what every log format shares (logimport.h): the run record and its steps. Telling
 * the formats apart is the registry's (registry.c). */
#include "logimport.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/err.h"

void log_run_init(log_run *r, log_format f)
{
    memset(r, 0, sizeof *r);
    r->format = f;
    r->tied_embeddings = r->sequence_parallel = r->stated_warmup = -1;
    r->params = r->peak_tflops = NAN;
}

void log_run_free(log_run *r)
{
    free(r->steps);
    r->steps = NULL, r->nsteps = r->cap = 0;
}

log_step log_step_unset(int line)
{
    return (log_step){.iters = 1, .step_s = NAN, .tflops_per_device = NAN, .tokens_per_s = NAN,
                      .tokens_per_s_per_device = NAN, .samples_per_s = NAN, .mfu_pct = NAN, .loss = NAN,
                      .mem_gib = NAN, .consumed_samples = NAN, .line = line};
}

int log_run_add_step(log_run *r, const log_step *s)
{
    if (r->nsteps == r->cap) {
        int cap = r->cap ? 2 * r->cap : 256;
        log_step *p = realloc(r->steps, (size_t)cap * sizeof *p);
        if (!p) return err_msg("out of memory");
        r->steps = p, r->cap = cap;
    }
    r->steps[r->nsteps++] = *s;
    return 0;
}

void log_run_note(log_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    text_vnote(r->notes, sizeof r->notes, fmt, ap);
    va_end(ap);
}

void log_run_stated(log_run *r, log_field f, int line, int in_config)
{
    r->stated[f] = (log_where){line, in_config};
}

void log_run_stated_kv(log_run *r, log_field f, const kv_conf *c, const char *const *names, int in_config)
{
    static const char *const none[] = {"", "null", "None", "auto", "-1"};
    for (; *names; names++) {
        const kv_item *it = kvconf_find(c, *names);
        int stated = it != NULL;
        for (size_t k = 0; stated && k < sizeof none / sizeof none[0]; k++) stated = strcmp(it->value, none[k]) != 0;
        if (stated) {
            log_run_stated(r, f, it->line, in_config);
            return;
        }
    }
}

int log_steps_check(const log_run *r, const char *path)
{
    for (int k = 0; k < r->nsteps; k++)
        if (r->steps[k].step_s == 0)
            return err_usage("%s:%d: a step time of 0 s: expected a time above 0 (a misread or broken line)", path,
                             r->steps[k].line);
    for (int k = 1; k < r->nsteps; k++) {
        const log_step *a = &r->steps[k - 1], *b = &r->steps[k];
        /* the same step again (printed by several ranks) counts once: steady.c drops the repeats and counts them */
        if (a->iter <= 0 || b->iter <= 0 || b->iter >= a->iter) continue;
        err_usage("%s:%d: step %ld after step %ld at line %d: the log holds several runs (a restart, or the file "
                  "twice); their steps would be summarised together",
                  path, b->line, b->iter, a->iter, a->line);
        err_hint("import one rank's lines of one run (cut the log at the restart)");
        return CB_EUSAGE;
    }
    return 0;
}

int log_degrees_product(const long *deg, int n, long max, long *out)
{
    long p = 1;
    for (int k = 0; k < n; k++)
        if (deg[k] < 1 || __builtin_mul_overflow(p, deg[k], &p) || p > max) return -1;
    *out = p;
    return 0;
}
