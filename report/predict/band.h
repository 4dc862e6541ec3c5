/* band.h: the uncertainty band of a prediction, from out-of-sample errors (data/band.csv).
 *
 * A prediction's band is +-(the 90th percentile, nearest rank, of |error| that `costbench validate`
 * measures on the shipped published runs, data/reference/published/, in the prediction's mode and
 * case), plus in first-row mode the calibration row's own residual. Modes: first_row (a file
 * calibrated on one of its rows, the case from calib_case_of), lofo (the file predicted from a joint
 * fit on the other files' rows, no row of its own), none (no calibration: the framework's default
 * efficiency fitted without the file, data/framework_eff.csv). Every constant is out of sample for
 * the file it scores: data/band.csv holds, for each shipped file, the percentiles over the OTHER
 * files' errors (left_out = its name), and over every shipped file (left_out empty) for runs that are
 * not shipped (scale, plan, any other file). A case with fewer than BAND_MIN_PREDICTIONS errors takes
 * the percentile of its mode's errors over every case; a case's band is never narrower than a nearer
 * case's (near <= layout <= device). tests/test_band.c recomputes the table from
 * the shipped files; `costbench validate --band-csv FILE` writes it. */
#ifndef CB_BAND_H
#define CB_BAND_H

#include <stddef.h>

typedef enum { BAND_FIRST_ROW, BAND_LOFO, BAND_NONE, BAND_NMODES } band_mode;
#define BAND_NCASES 3 /* calibration.h's calib_case */
#define BAND_MIN_PREDICTIONS 8
#define BAND_FILE_MAX 64

extern const char *const band_mode_names[BAND_NMODES];

typedef struct {
    band_mode mode;
    int kase;                   /* calib_case */
    char left_out[BAND_FILE_MAX]; /* the shipped file (base name) whose errors are left out; "": none */
    int predictions;            /* the errors the percentile is over */
    int pooled;                 /* 1: fewer than BAND_MIN_PREDICTIONS in the case: every case of the mode */
    double p90_pct;             /* rounded up to 0.1 */
    double band_pct;            /* the band: the largest p90_pct of this case and the nearer ones (a
                                   prediction farther from its calibration is never given a narrower band) */
} band_entry;

typedef struct {
    band_entry *e;
    int n, cap;
} band_table;

/* One out-of-sample |error| (validate's rows): its mode, case and file (base name). */
typedef struct {
    band_mode mode;
    int kase;
    char file[BAND_FILE_MAX];
    double abs_err_pct;
} band_sample;

/* Loads path (NULL: data/band.csv by machine_data_file). Returns 0, or CB_EUSAGE/CB_EFAIL after a
 * file:line error. */
int band_load(band_table *t, const char *path);
void band_free(band_table *t);
/* The band (band_pct) for a prediction of `file` (a path; its base name is matched against left_out,
 * else the entry with left_out empty) in mode m, case k: NaN when the table has none. */
double band_lookup(const band_table *t, band_mode m, int k, const char *file);
/* The entry band_lookup reads (NULL when none). */
const band_entry *band_find(const band_table *t, band_mode m, int k, const char *file);
/* The table from samples[0..n) (rule above). Returns 0, or CB_EFAIL out of memory. */
int band_derive(band_table *out, const band_sample *s, int n);
/* Writes the table with its header comment. Returns 0, or CB_EFAIL after an error line. */
int band_write(const band_table *t, const char *path);
/* The base name of a path. */
const char *band_base(const char *path);
/* The 90th percentile (nearest rank) of x[0..n), sorted in place; NaN for n 0. */
double band_p90(double *x, int n);

#endif
