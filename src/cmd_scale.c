/* costbench scale: seq/s, tokens/$ and efficiency across node counts from the step model of
 * report/predict/scale.h: the flags, the run (report/scalerun.h), the table, CSV and plot. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/frameworks.h"
#include "../common/machine.h"
#include "../common/parse.h"
#include "../report/scalerun.h"
#include "../report/predict/stepmodel.h"
#include "commands.h"

/* Parses the flags into o (defaults first). Returns 0, 1 after --help, or CB_EUSAGE. */
static int scale_opts_parse(scale_opts *o, int argc, char **argv)
{
    *o = (scale_opts){.pricing = "on_demand", .precision = "bf16-mixed", .tp = 1, .pp = 1, .seq = 2048,
                      .micro_batch = 1, .interleave = 1, .bucket_mib = 25, .latency_us = -1, .net_eff = 1,
                      .fit_tol_pct = 5, .nodes = {{1, 2, 4, 8, 16, 32, 64}, 7}};
    char fw_help[700];
    step_framework_flag_help(fw_help, sizeof fw_help);
    const opt_spec specs[] = {
        {"model", OPT_STR, &o->model, 0, 0, 0, 0, "PRESET", "model preset of --models (required)"},
        {"instance", OPT_STR, &o->instance, 0, 0, 0, 0, "TYPE",
         "instance type of data/hardware.csv and data/prices.csv (required)"},
        MODEL_FLAG_SPECS(&o->mf),
        {"tp", OPT_LONG, &o->tp, 1, 4096, 0, 0, "T", "tensor-parallel degree, inside a node (default 1)"},
        {"pp", OPT_LONG, &o->pp, 1, 4096, 0, 0, "P", "pipeline-parallel stages (default 1)"},
        {"interleave", OPT_LONG, &o->interleave, 1, 64, 0, 0, "V",
         "virtual stages per rank, interleaved 1F1B (default 1)"},
        SEQ_FLAG_SPEC(&o->seq, "2048"),
        {"global-batch", OPT_LONG_PARALLEL, &o->gbs, 1, CB_MAX_GLOBAL_BATCH, 0, 0, "G[,G...]",
         "strong scaling: sequences per step, one value for every node count or one per --nodes entry (real series "
         "grow the batch with the nodes)"},
        {"batch-per-device", OPT_LONG, &o->batch_per_device, 1, CB_MAX_GLOBAL_BATCH, 0, 0, "B",
         "weak scaling: sequences per data-parallel replica, fixed"},
        MICRO_BATCH_FLAG_SPEC(&o->micro_batch, "1"),
        {"nodes", OPT_LONG_LIST, &o->nodes, 1, CB_MAX_INSTANCES, 0, 0, "LIST",
         "node counts to predict (default 1,2,4,...,64)"},
        {"base-nodes", OPT_LONG, &o->base_nodes, 1, 1000000, 0, 0, "N", "a measured point: node count ..."},
        {"base-seq-per-s", OPT_DOUBLE, &o->base_seq_per_s, 0, 0, 1e-9, 1e12, "S", "... and its throughput in seq/s"},
        CALIBRATE_FLAG_SPECS(&o->calibrate, &o->matmul_csv, &o->mfu_pct),
        GEMM_FLAG_SPEC(&o->gemm),
        {"measured", OPT_STR, &o->measured, 0, 0, 0, 0, "FILE", "throughput CSV: fit the model to its matching rows"},
        {"compare", OPT_STR, &o->compare, 0, 0, 0, 0, "FILE",
         "throughput CSV: show its matching rows and the error, not fitted"},
        {"fit", OPT_STR, &o->fit_list, 0, 0, 0, 0, "LIST",
         "parameters to fit to measured points: compute,bandwidth,latency,overlap (default compute,bandwidth)"},
        FIT_TOLERANCE_FLAG_SPEC(&o->fit_tol_pct),
        {"zero", OPT_LONG, &o->zero, 0, 3, 0, 0, "0-3",
         "ZeRO stage / FSDP sharding of optimizer state, gradients, weights (default 0)"},
        PRECISION_FLAG_SPEC(&o->precision, "bf16-mixed"),
        {"recompute", OPT_FLAG, &o->recompute, 0, 0, 0, 0, NULL,
         "full activation recomputation (memory; 4/3 the FLOPs from peak)"},
        {"selective-recompute", OPT_FLAG, &o->selective, 0, 0, 0, 0, NULL,
         "selective recomputation (Korthikanti et al.): the attention scores recomputed, not kept (memory; its FLOPs, "
         "4 L C T a token, not counted)"},
        ATTENTION_FLAG_SPEC(&o->attention),
        FRAMEWORK_FLAG_SPEC(&o->framework, fw_help),
        {"overlap", OPT_DOUBLE, &o->overlap, 0, 0, 0, 1, "F",
         "share of the last backward the all-reduce hides under (default 0)"},
        BUCKET_FLAG_SPEC(&o->bucket_mib),
        NETWORK_FLAG_SPECS(&o->net_gbps, &o->intra_gbps, &o->latency_us),
        NET_FROM_FLAG_SPEC(&o->net_from),
        {"net-efficiency", OPT_DOUBLE, &o->net_eff, 0, 0, 0.001, 1, "F",
         "achieved share of the network line rate (default 1)"},
        {"pricing", OPT_STR, &o->pricing, 0, 0, 0, 0, "OPTION",
         "price of data/prices.csv: " PRICE_OPTIONS " (default on_demand)"},
        REGION_FLAG_SPEC(&o->region),
        {"usd-per-hour", OPT_DOUBLE, &o->usd_per_hour, 0, 0, 1e-9, 1e9, "USD",
         "price per instance-hour instead of data/prices.csv"},
        PRICING_FLAG_SPECS(&o->prices_path, &o->hw_path),
        CSV_FLAG_SPEC(&o->csv, "write the table as CSV (a throughput file `costbench report` reads)"),
        {"plot", OPT_STR, &o->plot, 0, 0, 0, 0, "FILE.png",
         "throughput vs nodes: the model's curve, measured points, ideal line"},
        {0},
    };
    return opts_parse("scale", "--model PRESET --instance TYPE [options]", specs, argc, argv, 2, NULL, NULL);
}

/* --fit LIST into want[] (compute always on). */
static int fit_list_parse(const char *list, int *want)
{
    char buf[256], *words[8];
    int nw = parse_word_list(list, "flag '--fit'", 0, buf, sizeof buf, words, 8);
    if (nw < 0) return nw;
    memset(want, 0, SP_COUNT * sizeof *want);
    for (int i = 0; i < nw; i++) {
        int k = -1;
        for (int j = 0; j < SP_COUNT; j++)
            if (strcmp(words[i], scale_param_names[j]) == 0) k = j;
        if (k < 0)
            return err_usage("flag '--fit': expected compute, bandwidth, latency or overlap, got '%s'", words[i]);
        want[k] = 1;
    }
    want[SP_COMPUTE] = 1;
    return 0;
}

/* The sources of the compute time exclude each other's flags: --calibrate carries one row (not
 * with --base-nodes, --measured, or --fit and --mfu, which it makes meaningless); measured points
 * are fitted (--mfu is the assumption without them); --fit needs points. */
static int compute_source_check(scale_opts *o)
{
    int points = o->base_nodes > 0 || o->measured != NULL, mfu = o->mfu_pct > 0;
    const char *other = o->base_nodes > 0 ? "--base-nodes"
                        : o->measured     ? "--measured"
                        : mfu             ? "--mfu"
                        : o->fit_list     ? "--fit"
                                          : NULL;
    if (o->calibrate && other) return err_usage("flag '--calibrate': give it alone, not with '%s'", other);
    if (mfu && points)
        return err_usage("flag '--mfu': assumed only without measured points, not with '%s'",
                         o->base_nodes > 0 ? "--base-nodes" : "--measured");
    if (o->fit_list && !points && !o->calibrate)
        return err_usage(
            "flag '--fit' needs measured points to fit ('--base-nodes' and '--base-seq-per-s', or '--measured')");
    if (!mfu) o->mfu_pct = SCALE_ASSUMED_MFU_PCT, o->mfu_assumed = 1;
    return 0;
}

/* What the flags say on their own (no tables needed). Returns 0 or CB_EUSAGE. */
static int scale_opts_check(scale_opts *o)
{
    int rc;
    if (!o->model) return err_usage("flag '--model' is required (a preset of data/models.csv)");
    if (!o->instance) return err_usage("flag '--instance' is required (an instance type of data/hardware.csv)");
    o->global_batch = o->gbs.n > 0 ? o->gbs.v[0] : 0;
    if (o->gbs.n > 1 && o->gbs.n != o->nodes.n)
        return err_usage(
            "flag '--global-batch': %d values for %d node counts in '--nodes' (give one, or one per node count)",
            o->gbs.n, o->nodes.n);
    if ((o->global_batch > 0) == (o->batch_per_device > 0))
        return err_usage("give exactly one of '--global-batch' (strong scaling) and '--batch-per-device' (weak)");
    if ((o->base_nodes > 0) != (o->base_seq_per_s > 0))
        return err_usage("flags '--base-nodes' and '--base-seq-per-s' go together");
    if ((rc = compute_source_check(o)) != 0) return rc;
    if (!price_option_valid(o->pricing))
        return err_usage("flag '--pricing': expected one of %s, got '%s'", PRICE_OPTIONS, o->pricing);
    if (o->selective && o->recompute)
        return err_usage("flags '--recompute' and '--selective-recompute' exclude each other");
    char fw_name[64];
    const char *fw_version;
    framework_split(o->framework, fw_name, sizeof fw_name, &fw_version); /* NAME[@VERSION] */
    if (o->framework && strcmp(step_framework_find(fw_name)->name, fw_name) != 0) {
        char list[256];
        step_framework_list(list, sizeof list);
        return framework_unknown(o->framework, list);
    }
    if (o->plot && !strstr(o->plot, ".png") && !strstr(o->plot, ".svg"))
        return err_usage("flag '--plot': expected a file name ending in .png or .svg, got '%s'", o->plot);
    if ((rc = precision_parse_flag("--precision", o->precision, &o->prec)) != 0) return rc;
    o->want[SP_COMPUTE] = o->want[SP_BANDWIDTH] = 1;
    return o->fit_list ? fit_list_parse(o->fit_list, o->want) : 0;
}

/* The table on stdout, then --csv and --plot. */
static int outputs_write(const record *rec, const scale_run *r)
{
    record_print(rec, stdout);
    int rc = 0;
    if (r->o.csv) {
        machine_info mi;
        machine_probe(&mi);
        rc = record_write_csv(rec, r->o.csv, &mi);
    }
    if (rc == 0 && r->o.plot && (rc = scale_run_plot(r, rec)) == 0) fprintf(stderr, "wrote %s\n", r->o.plot);
    return rc;
}

int cmd_scale(int argc, char **argv)
{
    scale_run r;
    memset(&r, 0, sizeof r);
    int rc = scale_opts_parse(&r.o, argc, argv);
    if (rc != 0) return rc > 0 ? 0 : rc;
    if ((rc = scale_opts_check(&r.o)) != 0) return rc;
    rc = scale_run_prepare(&r);
    record rec;
    memset(&rec, 0, sizeof rec);
    if (rc == 0 && (rc = scale_run_record(&r, &rec)) == 0) rc = outputs_write(&rec, &r);
    record_free(&rec);
    scale_run_free(&r);
    return rc;
}
