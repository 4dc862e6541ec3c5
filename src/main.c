/* costbench: benchmark and cost-analysis harness for training large language models.
 * The only place that turns errors into exit codes: 0 ok, 1 runtime failure, 2 usage. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../common/err.h"
#include "../bench/comm.h"
#include "../common/stats.h"
#include "commands.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"peak", cmd_peak, "this machine's limits: fp32 FMA, BF16 dot, memory bandwidth, sgemm per OpenBLAS kernel"},
    {"matmul", cmd_matmul, "sgemm sweep over (N x K) @ (K x K), or every matmul of a preset's training step"},
    {"rope", cmd_rope, "rotary embedding variants (reference, zero_freq, fused), forward and backward"},
    {"models", cmd_models, "the model presets of data/models.csv with their parameter counts"},
    {"devices", cmd_devices,
     "the accelerators of data/devices.csv: dense peaks per precision, memory, scale-up link, sources"},
    {"train", cmd_train, "train a preset (forward, backward, AdamW) and measure seq/s, tokens/s, MFU"},
    {"allreduce", cmd_allreduce, "collective microbenchmark (all-reduce, reduce-scatter, all-gather) under mpirun"},
    {"report", cmd_report, "Table-1-style cost report: seq/s, tokens/$, cost to train, scaling, plots"},
    {"scale", cmd_scale, "predict seq/s, tokens/$ and efficiency across node counts (fits measured points)"},
    {"plan", cmd_plan,
     "the cheapest configuration (instance, nodes, TP/PP, ZeRO, ...) that trains N tokens by a deadline"},
    {"validate", cmd_validate,
     "score the scaling model on published runs: calibrate on some rows, predict the others, beside a naive baseline"},
    {"trajectory", cmd_trajectory,
     "loss and grad-norm trajectories of runs compared across precisions, with tokens/s and tokens/$"},
    {"import", cmd_import,
     "a training log (of a framework 'import --help' lists under --framework) as one published-runs row, or "
     "nccl-tests output as a network fit"},
    {"prices", cmd_prices,
     "instance prices cheapest first with their age; 'prices import' reads cloud price catalogues ('prices import "
     "--help' lists their formats); 'prices update' downloads the current ones"},
    {"dataset", cmd_dataset, "build or inspect a Megatron indexed dataset (PREFIX.bin/.idx)"},
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

/* A failure under mpirun: rank 0 ends the job at once (its message is printed). Another rank
 * waits a moment first: if rank 0 failed the same way it ends the job meanwhile and the message
 * is printed once; if not, the failure is this rank's own and its held message is printed. */
static void rank_failed(int rc)
{
    if (comm_rank() != 0) {
        struct timespec ts = {2, 0};
        nanosleep(&ts, NULL);
        err_release_held();
    }
    comm_abort(err_exit_status(rc));
}

static void usage(FILE *f)
{
    fprintf(f, "usage: costbench <command> [options]\n\ncommands:\n");
    for (int i = 0; i < NCOMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-10s %s\n", "help", "this text, or 'costbench help <command>' for a command's options");
    fprintf(f, "\nEvery command takes --help. Results: a table on stdout, --csv FILE for CSV.\n");
}

int main(int argc, char **argv)
{
    stats_init();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc >= 3)
            for (int i = 0; i < NCOMMANDS; i++)
                if (strcmp(argv[2], commands[i].name) == 0) {
                    char *hargv[] = {argv[0], argv[2], "--help", NULL};
                    return err_exit_status(commands[i].fn(3, hargv));
                }
        if (argc >= 3) {
            err_usage("unknown command '%s'", argv[2]);
            usage(stderr);
            return 2;
        }
        usage(stdout);
        return 0;
    }
    for (int i = 0; i < NCOMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0) {
            int rc = commands[i].fn(argc, argv);
            /* one rank failing alone would leave the others waiting in a collective */
            if (rc != 0 && comm_size() > 1) rank_failed(rc);
            comm_finalize();
            return err_exit_status(rc);
        }
    err_usage("unknown command '%s'", cmd);
    usage(stderr);
    return 2;
}
