/* importrun.h: `costbench import LOG`, a training run's log as one row of the published-runs schema
 * (data/reference/published/SCHEMA.md): the page src/cmd_import.c runs after its flags. */
#ifndef CB_IMPORTRUN_H
#define CB_IMPORTRUN_H

#include "formats/kvconf.h"

/* import's flags (NULL / -1 / 0: not given). */
typedef struct {
    const char *config, *framework, *out, *id, *model, *device, *instance, *precision;
    const char *collective, *scope, *hw_path; /* a collective benchmark's (report/netimportrun.h) */
    long skip, devices, per_node, tp, pp, dp, micro_batch, global_batch, seq, vocab;
    char *files[2];
    int nfiles;
} import_opts;

/* The first flag given that is for a training log only (its name without "--"), or NULL. */
const char *import_log_flag(const import_opts *o);
/* The log t (a training log: not a collective benchmark's output) as a row: its format, parser, the
 * flags merged in, the steady state, the row printed and written to --out. Returns 0, CB_EUSAGE or
 * CB_EFAIL (one error printed). */
int import_run(const import_opts *o, const text_lines *t);

#endif
