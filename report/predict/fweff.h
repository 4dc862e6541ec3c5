/* fweff.h: a framework's default efficiency (data/framework_eff.csv): what `scale` and `plan`
 * compute with when nothing is calibrated (no --calibrate, no measured points, no --mfu).
 *
 * phi is the framework's efficiency against the step model's device time (calibration.h: t_mb =
 * t_device / phi), fitted by least squares on the relative seq/s errors of every shipped published
 * row of that framework (the files of data/reference/published/, calibration.h's calib_fit_phi: phi alone,
 * no per-step overhead); the row `any` over every row, for a framework the shipped files lack. Its
 * spread is what the band says: the 90th percentile (nearest rank, rounded up to 0.1) of |error|
 * of `costbench validate --calibrate none` on that framework's rows, each file predicted with the
 * phi fitted WITHOUT it (of its framework's other files, else every other file): out of sample,
 * so a framework seen in one file only gets the error of a phi carried from other frameworks.
 * `costbench validate --framework-eff-csv FILE` writes the table; tests/test_band.c refits it. */
#ifndef CB_FWEFF_H
#define CB_FWEFF_H

#define FWEFF_ANY "any"

typedef struct {
    char framework[32]; /* canonical (common/frameworks.h), or FWEFF_ANY */
    double phi;
    double spread_pct;  /* +- the band */
    int rows, files;    /* the rows phi is fitted on, the files they come from */
    char derived[160];
} fweff_entry;

typedef struct {
    fweff_entry *e;
    int n, cap;
} fweff_table;

/* Loads path (NULL: data/framework_eff.csv by machine_data_file). Returns 0, or CB_EUSAGE after a
 * file:line error. */
int fweff_load(fweff_table *t, const char *path);
void fweff_free(fweff_table *t);
/* A new zeroed entry (NULL out of memory). */
fweff_entry *fweff_add(fweff_table *t);
/* The entry of framework (canonical name or alias), else the FWEFF_ANY one; NULL when neither. */
const fweff_entry *fweff_find(const fweff_table *t, const char *framework);
/* Writes the table with its header comment. Returns 0, or CB_EFAIL after an error line. */
int fweff_write(const fweff_table *t, const char *path);

#endif
