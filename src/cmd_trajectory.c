/* costbench trajectory: per-precision training runs compared step by step with a baseline (the
 * loss and gradient-norm trajectories, next to each run's tokens/s and tokens/$). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/opts.h"
#include "../report/formats/inputs.h"
#include "../report/trajectory.h"
#include "commands.h"

/* The repeatable --run values are taken out of argv before the option parser sees the rest. */
static int take_runs(int *argc, char **argv, traj_input *runs, int *n)
{
    int w = 2;
    for (int i = 2; i < *argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--run", 5) != 0 || (a[5] != '\0' && a[5] != '=')) {
            argv[w++] = argv[i];
            continue;
        }
        const char *v = a[5] == '=' ? a + 6 : (i + 1 < *argc ? argv[++i] : NULL);
        if (!v || !*v) return err_usage("flag '--run' needs a value (LABEL=LOG.csv[,SUMMARY.csv])");
        if (*n == TRAJ_MAX_RUNS) return err_usage("flag '--run': at most %d runs", TRAJ_MAX_RUNS);
        if (trajectory_input_parse(v, &runs[*n]) != 0) return CB_EUSAGE;
        (*n)++;
    }
    *argc = w;
    return 0;
}

/* Flags that exclude or need each other. */
static int traj_flags_check(const traj_opts *o, int nruns)
{
    if (nruns == 0) return err_usage("flag '--run' is required (LABEL=LOG.csv[,SUMMARY.csv], once per run)");
    if (!o->out_dir)
        return err_usage("flag '--out' is required (the directory for the plots, trajectory.md and trajectory.csv)");
    if (o->instance && isfinite(o->usd_per_hour))
        return err_usage("flags '--instance' and '--usd-per-hour' exclude each other");
    if ((o->pricing || o->region || o->prices_path) && !o->instance)
        return err_usage(
            "flags '--pricing', '--region' and '--prices' price an instance type: they need '--instance TYPE'");
    if (o->pricing && !price_option_valid(o->pricing))
        return err_usage("flag '--pricing': expected one of %s, got '%s'", PRICE_OPTIONS, o->pricing);
    return 0;
}

int cmd_trajectory(int argc, char **argv)
{
    traj_input *runs = calloc(TRAJ_MAX_RUNS, sizeof *runs);
    if (!runs) return err_msg("out of memory");
    int nruns = 0;
    double usd = 0;
    traj_opts o = {.runs = runs, .tail_pct = 20};
    const opt_spec specs[] = {
        {"run", OPT_STR, NULL, 0, 0, 0, 0, "LABEL=LOG[,SUMMARY]",
         "a run: its label, its per-step log (train --csv) and optionally its summary (train --summary-csv); "
         "repeatable"},
        {"baseline", OPT_STR, &o.baseline, 0, 0, 0, 0, "LABEL",
         "the run the others are compared with (default: the one labelled fp32)"},
        {"tail-pct", OPT_DOUBLE, &o.tail_pct, 0, 0, 1e-6, 100, "PCT",
         "differences over the last PCT % of the steps (default 20)"},
        {"instance", OPT_STR, &o.instance, 0, 0, 0, 0, "TYPE",
         "price the runs as this instance type (data/prices.csv) for tokens/$"},
        {"pricing", OPT_STR, &o.pricing, 0, 0, 0, 0, "OPTION",
         "with --instance: " PRICE_OPTIONS " (default on_demand)"},
        REGION_FLAG_SPEC(&o.region),
        PRICES_FLAG_SPEC(&o.prices_path),
        {"usd-per-hour", OPT_DOUBLE, &usd, 0, 0, 1e-9, 1e9, "USD", "or the machine's price per hour"},
        {"out", OPT_STR, &o.out_dir, 0, 0, 0, 0, "DIR",
         "write loss.png, grad_norm.png, trajectory.md and trajectory.csv here: a new or empty directory, or one "
         "costbench trajectory wrote (replaced whole)"},
        CSV_FLAG_SPEC(&o.csv_path, "write the CSV here instead of DIR/trajectory.csv"),
        {0},
    };
    int rc = take_runs(&argc, argv, runs, &nruns), help = 0;
    if (rc == 0)
        rc = opts_parse("trajectory", "--run LABEL=LOG.csv[,SUMMARY.csv] ... --out DIR [options]", specs, argc, argv, 2,
                        NULL, NULL);
    if (rc > 0) help = 1, rc = 0;
    o.nruns = nruns;
    o.usd_per_hour = usd > 0 ? usd : NAN;
    if (rc == 0 && !help) rc = traj_flags_check(&o, nruns);
    if (rc == 0 && !help) rc = trajectory_run(&o);
    free(runs);
    return rc;
}
