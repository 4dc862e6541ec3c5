/* validaterun.h: `costbench validate`'s run (report/validaterun.c), which src/cmd_validate.c calls
 * after its flags: the step model of `costbench scale` scored on published runs, beside the naive
 * baseline. */
#ifndef CB_VALIDATERUN_H
#define CB_VALIDATERUN_H

#include "validate.h"

enum { VAL_MAX_FILES = 64 };

typedef struct {
    const char *calibrate, *csv, *summary_csv, *plot, *hw_path, *matmul_csv, *band_csv, *fweff_csv;
    const char *gemm; /* --gemm measured|cited (NULL: measured) */
    int lofo;      /* --leave-one-out */
    val_mode mode; /* first_row, lofo (--leave-one-out), none (--calibrate none) */
    double fit_tol_pct, net_gbps, intra_gbps, latency_us;
    char *files[VAL_MAX_FILES];
    int nfiles;
    char *idbuf, **ids; /* --calibrate's words (owned) */
    int nids;
} val_opts;

/* The tables, every file validated, the rows and the summary printed (and --csv, --summary-csv,
 * --plot written). Returns 0 whatever the errors, CB_EUSAGE or CB_EFAIL (one error printed). */
int validate_run(const val_opts *o);

#endif


