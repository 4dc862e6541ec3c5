/* import_net.h: `costbench import FILE` of a collective benchmark's output (nccl-tests'
 * all_reduce_perf, all_gather_perf, reduce_scatter_perf; `costbench allreduce --csv`): the fitted
 * network as rows of a network file (report/netfit.h). */
#ifndef CB_IMPORT_NET_H
#define CB_IMPORT_NET_H

#include "../report/kvconf.h"

/* t: the file (netfit_detect(t) says it is one of those); argc/argv as main gives them
 * (argv[1] "import"; the file's name may be among them, as the one positional argument). Flags:
 * --out FILE, --instance TYPE, --collective NAME, --scope intra|inter, --hardware FILE, --help.
 * Returns 0, CB_EUSAGE or CB_EFAIL (one error printed). */
int cmd_import_net(const text_lines *t, int argc, char **argv);

#endif
