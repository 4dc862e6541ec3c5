/* netimportrun.h: `costbench import FILE` of a collective benchmark's output (nccl-tests'
 * all_reduce_perf, all_gather_perf, reduce_scatter_perf; `costbench allreduce --csv`): the fitted
 * network as rows of a network file (report/formats/netfit.h). */
#ifndef CB_NETIMPORTRUN_H
#define CB_NETIMPORTRUN_H

#include "formats/kvconf.h"

/* What `costbench import`'s flags say of a collective benchmark (NULL: not given): --out FILE,
 * --instance TYPE (the node type, a row of the hardware table --hardware FILE names), --collective
 * NAME (when the output does not say), --scope intra|inter. */
typedef struct {
    const char *out, *instance, *collective, *scope, *hw_path;
} net_import_opts;

/* t: the file (netfit_detect(t) says it is one of those). Returns 0, CB_EUSAGE or CB_EFAIL (one
 * error printed). */
int import_network(const text_lines *t, const net_import_opts *o);

#endif
