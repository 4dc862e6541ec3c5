/* blascore.h: which OpenBLAS kernel set the benchmarks use (--blas-core auto|env|NAME).
 * OpenBLAS reads OPENBLAS_CORETYPE when it is loaded, so choosing another kernel means
 * re-executing this program with the variable set; the user's original value is kept in
 * COSTBENCH_BLAS_ENV_ORIG and reported. */
#ifndef CB_BLASCORE_H
#define CB_BLASCORE_H

#include <stddef.h>

#include "../common/machine.h"

/* Applies the choice: may not return (re-exec). Returns 0, or CB_EUSAGE for an unknown or
 * unsupported NAME. Call before any BLAS work. */
int blascore_select(const char *choice, char **argv);
/* The best kernel of data/blas_cores.csv this CPU supports ("" if none known). */
int blascore_best(char *out, size_t n);
/* OPENBLAS_CORETYPE as the user set it ("" when unset). */
const char *blascore_env_orig(void);
/* Fills the BLAS fields of m (kernel in use, environment's, choice, threads). */
void blascore_fill(machine_info *m);
/* A sentence for result headers describing the choice and any override. */
void blascore_describe(char *out, size_t n);
/* For a child process measuring another kernel: restore the user's environment. */
void blascore_restore_env(void);

#endif
