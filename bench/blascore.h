/* blascore.h: which OpenBLAS kernel set the benchmarks use (--blas-core auto|env|NAME).
 * OpenBLAS reads OPENBLAS_CORETYPE when it is loaded, so choosing another kernel means
 * re-executing this program with the variable set. The one piece of state that crosses the
 * exec is COSTBENCH_BLAS_REEXEC ("<the user's OPENBLAS_CORETYPE>|<the kernel it gave>"), so that
 * results report the user's setting and child processes get it back. */
#ifndef CB_BLASCORE_H
#define CB_BLASCORE_H

#include <stddef.h>

#include "../common/machine.h"

/* Applies the choice: may not return (re-exec). Returns 0, or CB_EUSAGE for an unknown or
 * unsupported NAME, CB_EFAIL for a broken data/blas_cores.csv. Call before any BLAS work. */
int blascore_select(const char *choice, char **argv);
/* The best kernel of data/blas_cores.csv this CPU supports into out ("" if none). Returns 0 or
 * CB_EFAIL. */
int blascore_best(char *out, size_t n);
/* OPENBLAS_CORETYPE as the user set it into out ("" when unset). */
void blascore_env_orig(char *out, size_t n);
/* Fills the BLAS fields of m (kernel in use, the environment's, the choice, threads). */
void blascore_fill(machine_info *m, const char *choice);
/* A sentence for result headers describing m's kernel choice and any override. */
void blascore_describe(const machine_info *m, char *out, size_t n);
/* For a child process measuring another kernel: restore the user's environment. */
void blascore_restore_env(void);

#endif
