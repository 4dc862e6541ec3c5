/* costbench plan: the cheapest configuration that trains a model on a number of tokens by a
 * deadline (and within a budget): the flags, the run (report/planrun.h), the table, CSV, Pareto
 * CSV and plot. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/opts.h"
#include "../report/planrun.h"
#include "commands.h"

/* Parses the flags into o (defaults first). Returns 0, 1 after --help, or CB_EUSAGE. */
static int plan_opts_parse(plan_opts *o, int argc, char **argv)
{
    *o = (plan_opts){.pricing = "on_demand", .max_nodes = 256, .ckpt_s = 60, .restart_s = 300};
    char fw_help[700];
    step_framework_flag_help(fw_help, sizeof fw_help);
    const opt_spec specs[] = {
        {"model", OPT_STR, &o->model, 0, 0, 0, 0, "PRESET", "model preset of --models (required)"},
        {"tokens", OPT_STR, &o->tokens, 0, 0, 0, 0, "N", "tokens to train on, K/M/B/T suffixes: 140B (required)"},
        {"deadline-days", OPT_DOUBLE, &o->deadline_days, 0, 0, 1e-6, 1e5, "D",
         "wall-clock deadline in days (required)"},
        {"budget-usd", OPT_DOUBLE, &o->budget_usd, 0, 0, 1e-6, 1e15, "USD", "keep configurations costing at most this"},
        {"instances", OPT_STR, &o->instances, 0, 0, 0, 0, "LIST",
         "instance types (default: every one of data/hardware.csv with a price)"},
        {"pricing", OPT_STR, &o->pricing, 0, 0, 0, 0, "LIST",
         "pricing options, each its own candidate: " PRICE_OPTIONS " (default on_demand)"},
        FRAMEWORK_FLAG_SPEC(&o->framework, fw_help),
        ATTENTION_FLAG_SPEC(&o->attention),
        CALIBRATE_FLAG_SPECS(&o->calibrate, &o->matmul_csv, &o->mfu_pct),
        GEMM_FLAG_SPEC(&o->gemm),
        {"max-nodes", OPT_LONG, &o->max_nodes, 1, 65536, 0, 0, "N",
         "largest node count searched: 1..16, then 4 per octave and the powers of two (default 256)"},
        SEQ_FLAG_SPEC(&o->seq, "the model's max_seq_len"),
        {"global-batch", OPT_LONG, &o->global_batch, 1, CB_MAX_GLOBAL_BATCH, 0, 0, "G",
         "sequences per step (default: 4M tokens)"},
        {"top", OPT_LONG, &o->top, 1, 100000, 0, 0, "N",
         "configurations shown: the N cheapest of every layout (as --all; default 10 there), or with --per-instance "
         "or --runners-up at most N rows"},
        {"per-instance", OPT_FLAG, &o->per_instance, 0, 0, 0, 0, NULL,
         "the best configuration of each instance type and pricing option, one row each (the default)"},
        {"all", OPT_FLAG, &o->all, 0, 0, 0, 0, NULL,
         "rank every layout, cheapest first, whatever its instance type (the runner-ups of the best type)"},
        {"runners-up", OPT_LONG, &o->runners_up, 0, 100, 0, 0, "N",
         "with each instance type's best, its next N layouts (default 0)"},
        {"price-warnings", OPT_STR, &o->price_warnings, 0, 0, 0, 0, "one|all",
         "prices older than a year: one line with their count and the oldest (default), or one line each"},
        {"mtbf-hours", OPT_DOUBLE, &o->mtbf_hours, 0, 0, 1e-3, 1e9, "H",
         "mean time between failures of one instance: model failures"},
        {"checkpoint-s", OPT_DOUBLE, &o->ckpt_s, 0, 0, 1e-3, 1e6, "S", "time to write a checkpoint (default 60)"},
        {"restart-s", OPT_DOUBLE, &o->restart_s, 0, 0, 0, 1e7, "S", "time to restart after a failure (default 300)"},
        MODEL_FLAG_SPECS(&o->mf),
        PRICING_FLAG_SPECS(&o->prices_path, &o->hw_path),
        NET_FROM_FLAG_SPEC(&o->net_from),
        CSV_FLAG_SPEC(&o->csv, "write the top configurations as CSV"),
        {"pareto-csv", OPT_STR, &o->pareto_csv, 0, 0, 0, 0, "FILE", "write the cost/time Pareto frontier as CSV"},
        {"plot", OPT_STR, &o->plot, 0, 0, 0, 0, "FILE.png", "cost vs time to train: the frontier and the deadline"},
        {0},
    };
    return opts_parse("plan", "--model PRESET --tokens N --deadline-days D [options]", specs, argc, argv, 2, NULL,
                      NULL);
}

/* The table (or the notes and the verdict when nothing qualified), then --csv, --pareto-csv and --plot. */
static int outputs_write(const plan_run *r)
{
    record rec;
    long hidden = 0;
    int rc = plan_run_record(r, &rec, 1, &hidden);
    if (rc == 0 && rec.nrows > 0) record_print(&rec, stdout);
    else if (rc == 0) { /* no table: the notes and the verdict */
        for (int i = 0; i < rec.nnotes; i++) printf("# %s\n", rec.notes[i]);
        plan_run_verdict(r);
    }
    machine_info mi;
    if (r->o.csv || r->o.pareto_csv) machine_probe(&mi);
    if (rc == 0 && r->o.csv) rc = record_write_csv(&rec, r->o.csv, &mi);
    record_free(&rec);
    int *idx = NULL, n = 0;
    if (rc == 0 && (r->o.pareto_csv || r->o.plot) && r->res.n > 0) {
        if (!(idx = malloc((size_t)r->res.n * sizeof *idx))) return err_msg("plan: out of memory for the frontier");
        n = plan_pareto(&r->res, -1, 0, idx);
    }
    if (rc == 0 && r->o.pareto_csv && n > 0) rc = plan_run_pareto_csv(r, idx, n, &mi);
    if (rc == 0 && r->o.plot && n > 0 && (rc = plan_run_plot(r, idx, n)) == 0) fprintf(stderr, "wrote %s\n", r->o.plot);
    free(idx);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    plan_run *r = calloc(1, sizeof *r);
    if (!r) return err_msg("plan: out of memory");
    int rc = plan_opts_parse(&r->o, argc, argv);
    if (rc == 0) {
        rc = plan_run_build(r);
        if (rc == 0) rc = plan_search(&r->in, &r->res);
        if (rc == 0) rc = plan_run_check(r);
        if (rc == 0) rc = outputs_write(r);
    } else if (rc > 0) rc = 0;
    plan_run_free(r);
    free(r);
    return rc;
}
