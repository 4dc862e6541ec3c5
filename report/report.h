/* report.h: the cost report (`costbench report`): throughput rows (measured here, imported,
 * predicted) priced against data/prices.csv into Table 1's columns (tokens/$ = seq/s x seq_len x
 * 3600 / $ per hour for all instances), followed by tokens/s, cost per 1B tokens, scaling
 * efficiency, MFU against a stated peak, and the time and cost to train a token budget; written
 * as report.md, report.csv and plots into a directory that appears complete or not at all, and
 * that replaces only a directory costbench wrote. */
#ifndef CB_REPORT_H
#define CB_REPORT_H

#include "../common/presets.h"
#include "formats/inputs.h"

#define REPORT_MAX_PRICING 8

typedef struct {
    const char *pricing[REPORT_MAX_PRICING]; /* "auto" or price options; the first one is the main table's */
    int npricing;
    const char *region;      /* NULL: the only region a price is listed in */
    const char *instance;    /* instance type that rows measured on "this machine" are priced as */
    double usd_per_hour;     /* or their price per instance-hour (NaN: none) */
    double tokens_budget;    /* tokens to train (NaN: 20 per parameter, Chinchilla) */
    const char *models_path; /* data/models.csv */
} report_opts;

typedef struct {
    const tput_row *in;
    model_config cfg;
    char instance[96];     /* as shown ("c7a.large (this machine)") */
    char pricing[24];      /* option the price came from ("imported" for a row's own price) */
    char price_note[512];  /* where the price came from */
    double usd_per_hour;   /* all instances; NaN: no price under this option */
    double tokens_per_s, tokens_per_usd, usd_per_1b_tokens, efficiency;
    double mfu_pct;
    char mfu_peak[192];    /* which peak */
    double train_tokens, train_days, train_usd;
} report_row;

/* Prices every row under every pricing option: n_in x npricing rows, option-major. An unknown
 * model or instance, or a row without a price under the first option, is an error naming the
 * row's file:line. Returns 0, CB_EFAIL or CB_EUSAGE. */
int report_compute(const tput_set *in, const price_table *prices, const hw_table *hw, const report_opts *o,
                   report_row **out, int *nout);

/* Extra inputs drawn or tabulated when given. */
typedef struct {
    const char *bench[16]; /* matmul or rope CSVs */
    int nbench;
    const char *logs[16];  /* per-step training logs (step, loss, grad_norm) */
    int nlogs;
} report_extras;

/* Writes report.md, report.csv, the plots and the marker `.costbench-report` (the names of the
 * files it wrote) into a temporary directory next to `dir`, then renames it to `dir`. An absent
 * or empty `dir` is taken; a report directory is replaced (moved aside, then only the files its
 * marker lists deleted) when it holds nothing else, as is one of a costbench that wrote no marker
 * (only the report's own file names, report.md starting with "# costbench cost report"). Any
 * other `dir` is refused (CB_EUSAGE, one error naming `dir` and a file costbench did not write,
 * and a hint), untouched: costbench never deletes a file it did not write. Prints the main table
 * to stdout. Returns 0 or an error code. */
int report_write(const char *dir, const report_row *rows, int n, const report_opts *o, const report_extras *x);

#endif
