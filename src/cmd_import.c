/* costbench import FILE: the flags, then the page: a training log as one published-runs row
 * (report/importrun.h), or a collective benchmark's output as a network file (report/netimportrun.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/frameworks.h"
#include "../common/opts.h"
#include "../report/formats/netfit.h"
#include "../report/importrun.h"
#include "../report/logs/registry.h"
#include "../report/netimportrun.h"
#include "commands.h"

/* --framework's help: the registry's frameworks and the aliases. */
static void framework_help(char *buf, size_t n)
{
    char names[256], al[256];
    log_format_list(names, sizeof names, 0);
    framework_aliases(al, sizeof al);
    snprintf(buf, n, "the log's framework: %s; aliases %s (default: detected from the first step line)", names, al);
}

static int import_parse(import_opts *o, int argc, char **argv)
{
    *o = (import_opts){.skip = -1, .nfiles = 2};
    char fw_help[600];
    framework_help(fw_help, sizeof fw_help);
    const opt_spec specs[] = {
        {"config", OPT_STR, &o->config, 0, 0, 0, 0, "FILE",
         "the run's config file (YAML or TOML) when the log lacks it"},
        {"framework", OPT_STR, &o->framework, 0, 0, 0, 0, "NAME", fw_help},
        {"skip-steps", OPT_LONG, &o->skip, 0, 100000000, 0, 0, "N", "drop the first N step lines as warm-up "
                                                                     "(default: detected)"},
        {"out", OPT_STR, &o->out, 0, 0, 0, 0, "FILE.csv",
         "write the row: a new file, or appended to a published-runs file (nccl-tests output: a network file)"},
        {"id", OPT_STR, &o->id, 0, 0, 0, 0, "ID", "the row's id (default: the log's file name without extension)"},
        {"model", OPT_STR, &o->model, 0, 0, 0, 0, "NAME", "the model (a preset of data/models.csv fills its shape)"},
        {"device", OPT_STR, &o->device, 0, 0, 0, 0, "NAME", "the accelerator (data/devices.csv)"},
        {"instance", OPT_STR, &o->instance, 0, 0, 0, 0, "TYPE",
         "the cloud instance type (nccl-tests output: the node type, a row of data/hardware.csv)"},
        {"devices", OPT_LONG, &o->devices, 1, 10000000, 0, 0, "N", "accelerators in the run"},
        {"devices-per-node", OPT_LONG, &o->per_node, 1, 100000, 0, 0, "N", "accelerators per node"},
        {"tp", OPT_LONG, &o->tp, 1, 65536, 0, 0, "N", "tensor parallel degree"},
        {"pp", OPT_LONG, &o->pp, 1, 65536, 0, 0, "N", "pipeline parallel degree"},
        {"dp", OPT_LONG, &o->dp, 1, 10000000, 0, 0, "N", "data parallel degree"},
        {"micro-batch", OPT_LONG, &o->micro_batch, 1, 100000000, 0, 0, "B", "sequences per device per micro-batch"},
        {"global-batch", OPT_LONG, &o->global_batch, 1, 100000000, 0, 0, "G", "sequences per optimizer step"},
        {"seq", OPT_LONG, &o->seq, 1, 100000000, 0, 0, "T", "tokens per sequence"},
        {"vocab", OPT_LONG, &o->vocab, 1, 100000000, 0, 0, "V",
         "the vocabulary (the embedding's rows); wins over the log's, a difference named"},
        {"precision", OPT_STR, &o->precision, 0, 0, 0, 0, "NAME", "bf16-mixed, fp16-mixed, fp8, fp32 or bf16"},
        {"collective", OPT_STR, &o->collective, 0, 0, 0, 0, "NAME",
         "nccl-tests output: all_reduce, all_gather or reduce_scatter, when the output does not say"},
        {"scope", OPT_STR, &o->scope, 0, 0, 0, 0, "intra|inter",
         "nccl-tests output: inside a node or across nodes (default: from the hosts its rank lines name)"},
        {"hardware", OPT_STR, &o->hw_path, 0, 0, 0, 0, "FILE",
         "nccl-tests output: the hardware table --instance is looked up in (default data/hardware.csv)"},
        {0},
    };
    int rc = opts_parse("import", "LOG [--framework NAME] [--skip-steps N] [--out FILE.csv] [configuration flags]",
                        specs, argc, argv, 2, o->files, &o->nfiles);
    if (rc != 0) return rc;
    if (o->nfiles != 1) return err_usage("import: expected one LOG, got %d", o->nfiles);
    return 0;
}

int cmd_import(int argc, char **argv)
{
    import_opts o;
    int rc = import_parse(&o, argc, argv);
    if (rc != 0) return rc > 0 ? 0 : rc;
    text_lines t;
    if (text_lines_load(&t, o.files[0]) != 0) return CB_EUSAGE;
    if (netfit_detect(&t) != 0) { /* a collective benchmark: the network, not a training run */
        const char *log_only = import_log_flag(&o);
        const net_import_opts no = {o.out, o.instance, o.collective, o.scope, o.hw_path};
        rc = log_only ? err_usage("flag '--%s': for a training log; %s is a collective benchmark's output", log_only,
                                  t.path)
                      : import_network(&t, &no);
        text_lines_free(&t);
        return rc;
    }
    const char *net_only = o.collective ? "collective" : o.scope ? "scope" : o.hw_path ? "hardware" : NULL;
    if (net_only) {
        text_lines_free(&t);
        return err_usage("flag '--%s': for nccl-tests or `costbench allreduce` output; %s has no nccl-tests table "
                         "('#  size  count  type ... busbw' header, tags of mpirun --tag-output read off) and no "
                         "'op,ranks,size_bytes,...' header",
                         net_only, o.files[0]);
    }
    rc = import_run(&o, &t);
    text_lines_free(&t);
    return rc;
}
