/* costbench validate: the flags, then the run (report/validaterun.h): the step model of `costbench
 * scale` scored on published runs, beside the naive baseline. It reports; it does not judge: exit 0
 * whatever the errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/opts.h"
#include "../common/parse.h"
#include "../report/validaterun.h"
#include "commands.h"

/* Parses the flags and the files. Returns 0, 1 after --help, or CB_EUSAGE. */
static int val_opts_parse(val_opts *o, int argc, char **argv)
{
    *o = (val_opts){.fit_tol_pct = 5, .latency_us = -1, .nfiles = VAL_MAX_FILES};
    const opt_spec specs[] = {
        {"calibrate", OPT_STR, &o->calibrate, 0, 0, 0, 0, "ID[,ID...]|none",
         "rows to calibrate on (ids of the files' rows; a file none of them is in: its first row on a known device); 'none': no row of "
         "the file, every row from the device model x its framework's default efficiency phi fitted on the OTHER "
         "files (data/framework_eff.csv's rule, the file left out), naive = a flat 40% MFU of the data-sheet peak"},
        {"leave-one-out", OPT_FLAG, &o->lofo, 0, 0, 0, 0, NULL,
         "each file from a joint fit (phi and a per-step overhead) on the rows of the OTHER files with its framework "
         "(every framework when no other file has it), no row of its own; naive = a flat 40% MFU of the data-sheet "
         "peak"},
        {"band-csv", OPT_STR, &o->band_csv, 0, 0, 0, 0, "FILE",
         "derive the band (report/predict/band.h) from the files in all three modes and write it (data/band.csv is "
         "this of data/reference/published/*.csv)"},
        {"framework-eff-csv", OPT_STR, &o->fweff_csv, 0, 0, 0, 0, "FILE",
         "fit each framework's default efficiency phi on the files and write it with its out-of-sample spread "
         "(data/framework_eff.csv is this of data/reference/published/*.csv: what scale and plan use uncalibrated)"},
        CSV_FLAG_SPEC(&o->csv, "one line per row: file, id, calibration, published, predicted, errors, naive"),
        {"summary-csv", OPT_STR, &o->summary_csv, 0, 0, 0, 0, "FILE",
         "one line per file: rows, median and max |error|, the naive's"},
        {"plot", OPT_STR, &o->plot, 0, 0, 0, 0, "FILE.png",
         "predicted against published, log-log, with the +-10% and +-25% bands"},
        HARDWARE_FLAG_SPEC(&o->hw_path),
        MATMUL_CSV_FLAG_SPEC(&o->matmul_csv),
        GEMM_FLAG_SPEC(&o->gemm),
        FIT_TOLERANCE_FLAG_SPEC(&o->fit_tol_pct),
        NETWORK_FLAG_SPECS(&o->net_gbps, &o->intra_gbps, &o->latency_us),
        {0},
    };
    int rc = opts_parse("validate", "FILE... [--calibrate ID[,ID...]] [--csv F] [--plot F.png] [options]", specs, argc,
                        argv, 2, o->files, &o->nfiles);
    if (rc != 0) return rc;
    if (o->nfiles == 0)
        return err_usage(
            "costbench validate: no file given (published-runs CSVs, e.g. data/reference/published/*.csv)");
    if (o->plot && !strstr(o->plot, ".png") && !strstr(o->plot, ".svg"))
        return err_usage("flag '--plot': expected a file name ending in .png or .svg, got '%s'", o->plot);
    if (o->calibrate && strcmp(o->calibrate, "none") == 0) o->mode = VAL_NONE, o->calibrate = NULL;
    if (o->lofo && (o->mode == VAL_NONE || o->calibrate))
        return err_usage("flag '--leave-one-out': give it without '--calibrate'");
    if (o->lofo) o->mode = VAL_LOFO;
    if (!o->calibrate) return 0;
    size_t len = strlen(o->calibrate) + 1, cap = len / 2 + 1; /* words of one character at the most */
    o->idbuf = malloc(len), o->ids = malloc(cap * sizeof *o->ids);
    if (!o->idbuf || !o->ids) return err_msg("out of memory");
    o->nids = parse_word_list(o->calibrate, "flag '--calibrate'", 0, o->idbuf, len, o->ids, (int)cap);
    return o->nids < 0 ? o->nids : 0;
}

int cmd_validate(int argc, char **argv)
{
    val_opts o;
    int rc = val_opts_parse(&o, argc, argv);
    if (rc == 0) rc = validate_run(&o);
    free(o.idbuf), free(o.ids);
    return rc > 0 ? 0 : rc;
}
