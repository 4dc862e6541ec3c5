/* Multi-process runs under Open MPI's mpirun: the collective benchmark checks every size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "check.h"
#include "../common/files.h"

static char g_out[65536], g_err[16384];

int mpi_run(int np, const char *const *args, char *out, size_t outsz, char *err, size_t errsz)
{
    char npb[16];
    snprintf(npb, sizeof npb, "%d", np);
    const char *argv[64] = {"env", "ASAN_OPTIONS=detect_leaks=0", "mpirun", "--allow-run-as-root", "--oversubscribe",
                            "-np", npb, g_costbench};
    int n = 8;
    for (int i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    return cmd_run(argv, out, outsz, err, errsz);
}

static void test_allreduce_two_ranks(void)
{
    char csv[] = "/tmp/costbench-allreduce-XXXXXX";
    int fd = mkstemp(csv);
    if (fd >= 0) close(fd);
    const char *args[] = {"allreduce", "-b", "4", "-e", "4M", "-f", "4", "--min-time", "0.02", "--csv", csv, NULL};
    int rc = mpi_run(2, args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "mpirun -np 2 costbench allreduce: exit %d: %s", rc, g_err);
    table t;
    if (rc == 0 && table_load(&t, csv) == 0) {
        int ops[3] = {0, 0, 0};
        for (int i = 0; i < t.nrows; i++) {
            const char *op = table_cell(&t, i, table_col(&t, "op", 0));
            CHECK(strcmp(table_cell(&t, i, table_col(&t, "check", 0)), "ok") == 0, "row %d not checked ok", i + 1);
            CHECK(strcmp(table_cell(&t, i, table_col(&t, "ranks", 0)), "2") == 0, "row %d: ranks %s", i + 1,
                  table_cell(&t, i, table_col(&t, "ranks", 0)));
            double busbw = strtod(table_cell(&t, i, table_col(&t, "busbw_gbps", 0)), NULL);
            CHECK(busbw > 0, "row %d: busbw %g", i + 1, busbw);
            ops[0] += strcmp(op, "allreduce") == 0, ops[1] += strcmp(op, "reduce_scatter") == 0,
                ops[2] += strcmp(op, "allgather") == 0;
        }
        CHECK(ops[0] >= 10 && ops[1] >= 9 && ops[2] >= 9, "rows per op: %d %d %d", ops[0], ops[1], ops[2]);
        table_free(&t);
    }
    unlink(csv);
    const char *bad[] = {"allreduce", "-b", "1M", "-e", "1K", NULL};
    rc = mpi_run(2, bad, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 2 && strstr(g_err, "--min-bytes") != NULL, "bad sizes under mpirun: exit %d: %s", rc, g_err);
}

/* The tiny training run every data-parallel test repeats: pythia-14m, micro-batch 2 x 64,
 * global batch 8, 4 steps, its log in `csv`, on np ranks (0: without mpirun), plus `extra`. */
static int tiny_train(int np, const char *csv, const char *const *extra)
{
    const char *args[40] = {"train", "--model", "pythia-14m", "--micro-batch", "2", "--seq", "64", "--global-batch",
                            "8", "--steps", "4", "--no-predict", "--quiet", "--peak-gflops", "100", "--csv", csv};
    int n = 17;
    for (int i = 0; extra && extra[i] && n < 39; i++) args[n++] = extra[i];
    args[n] = NULL;
    return np ? mpi_run(np, args, g_out, sizeof g_out, g_err, sizeof g_err)
              : cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
}

/* The 1-rank run the others are compared with, run once for all the tests. */
static char g_ref_dir[] = "/tmp/costbench-dp-ref-XXXXXX", g_ref[128];
static double g_ref_loss[4];
static void remove_reference(void) { rm_tree(g_ref_dir); }
static int reference_losses(void)
{
    static int state; /* 0: not yet, 1: ready, -1: failed */
    if (state) return state;
    state = -1;
    if (!mkdtemp(g_ref_dir)) return state;
    atexit(remove_reference);
    snprintf(g_ref, sizeof g_ref, "%s/one.csv", g_ref_dir);
    int rc = tiny_train(0, g_ref, NULL);
    CHECK(rc == 0, "1 rank: exit %d: %s", rc, g_err);
    if (rc == 0 && csv_column(g_ref, "loss", g_ref_loss, 4) == 4) state = 1;
    return state;
}

/* The losses of `csv` from step first+1 on equal the 1-rank run's, to fp32 summation order. */
static void check_losses(const char *what, const char *csv, int first, int want_rows)
{
    double x[8];
    int n = csv_column(csv, "loss", x, 8);
    CHECK(n == want_rows, "%s: %d rows, expected %d", what, n, want_rows);
    for (int i = 0; i < n && first + i < 4; i++)
        CHECK(fabs(x[i] - g_ref_loss[first + i]) <= 1e-5 * fabs(g_ref_loss[first + i]),
              "%s, step %d: loss %.9g, 1 rank %.9g", what, first + i + 1, x[i], g_ref_loss[first + i]);
}

/* A checkpoint saved at steps 2 and 4 resumes on 1 rank from step 2 (kept as the previous one)
 * with the uninterrupted losses of steps 3 and 4. */
static void check_resume_on_one_rank(const char *dir, const char *ck)
{
    char latest[200], log[200];
    snprintf(latest, sizeof latest, "%s/latest", ck);
    snprintf(log, sizeof log, "%s/resumed.csv", dir);
    FILE *lf = fopen(latest, "w");
    if (lf) {
        fputs("step-00000002\n", lf);
        fclose(lf);
    }
    const char *extra[] = {"--resume", ck, NULL};
    int rc = tiny_train(0, log, extra);
    CHECK(rc == 0, "resume on 1 rank: exit %d: %s", rc, g_err);
    check_losses("resumed on 1 rank", log, 2, 2);
}

static void test_train_two_ranks_equivalent(void)
{
    char dir[] = "/tmp/costbench-dp-XXXXXX";
    if (reference_losses() != 1 || !mkdtemp(dir)) {
        CHECK(0, "no 1-rank reference or no directory");
        return;
    }
    char l2[128], l4[128], ck[128], sum[128];
    snprintf(l2, sizeof l2, "%s/two.csv", dir);
    snprintf(l4, sizeof l4, "%s/two_no_overlap.csv", dir);
    snprintf(ck, sizeof ck, "%s/ckpt", dir);
    snprintf(sum, sizeof sum, "%s/summary.csv", dir);
    /* the same global batch over 2 ranks, saving checkpoints at steps 2 and 4 */
    const char *extra[] = {"--summary-csv", sum, "--save", ck, "--save-every", "2", NULL};
    int rc = tiny_train(2, l2, extra);
    CHECK(rc == 0, "2 ranks: exit %d: %s", rc, g_err);
    check_losses("2 ranks", l2, 0, 4);
    double g1[8], g2[8];
    int n1 = csv_column(g_ref, "grad_norm", g1, 8), n2 = csv_column(l2, "grad_norm", g2, 8);
    for (int i = 0; i < n1 && i < n2; i++)
        CHECK(fabs(g1[i] - g2[i]) <= 1e-4 * fabs(g1[i]), "step %d: grad norm %.9g on 1 rank, %.9g on 2", i + 1, g1[i],
              g2[i]);
    double ranks[2], comm[2];
    CHECK(csv_column(sum, "ranks", ranks, 2) == 1 && ranks[0] == 2, "summary: ranks");
    CHECK(csv_column(sum, "exposed_comm_ms", comm, 2) == 1 && comm[0] > 0, "summary: exposed communication time");
    /* the same without overlapping the all-reduce with the backward */
    const char *no_overlap[] = {"--no-overlap", NULL};
    rc = tiny_train(2, l4, no_overlap);
    CHECK(rc == 0, "2 ranks --no-overlap: exit %d: %s", rc, g_err);
    check_losses("2 ranks without overlap", l4, 0, 4);
    /* saved by 2 ranks, resumed on 1 */
    check_resume_on_one_rank(dir, ck);
    /* a global batch that does not split over the ranks */
    const char *a4[] = {"train", "--model", "pythia-14m", "--micro-batch", "2", "--seq", "64", "--global-batch", "2",
                        "--steps", "1", NULL};
    rc = mpi_run(2, a4, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 2 && strstr(g_err, "x 2 ranks") != NULL, "global batch 2 over 2 ranks of 2: exit %d: %s", rc, g_err);
    rm_tree(dir);
}

/* ZeRO-1 on 2 ranks: the losses of 1 rank, the moments' memory halved in the estimate, and a
 * checkpoint (moments gathered from both shards) that resumes on 1 rank. */
static void test_train_zero1(void)
{
    char dir[] = "/tmp/costbench-zero-XXXXXX";
    if (reference_losses() != 1 || !mkdtemp(dir)) {
        CHECK(0, "no 1-rank reference or no directory");
        return;
    }
    char lz[128], ck[128];
    snprintf(lz, sizeof lz, "%s/zero.csv", dir);
    snprintf(ck, sizeof ck, "%s/ckpt", dir);
    const char *extra[] = {"--zero", "1", "--save", ck, "--save-every", "2", NULL};
    int rc = tiny_train(2, lz, extra);
    CHECK(rc == 0, "2 ranks --zero 1: exit %d: %s", rc, g_err);
    CHECK(strstr(g_out, "ZeRO-1: AdamW moments 0.052 GiB per rank instead of 0.105 GiB") != NULL,
          "no ZeRO-1 estimate line: %s", g_out);
    check_losses("2 ranks with ZeRO-1", lz, 0, 4);
    check_resume_on_one_rank(dir, ck);
    rm_tree(dir);
}

/* The sweep script end to end on a tiny model, and the cluster scripts: syntax and dry runs. */
static void test_sweep_and_cluster_scripts(void)
{
    static const char *const scripts[] = {"bench/sweep.sh", "bench/slurm/submit.sh", "bench/slurm/train_sweep.sbatch",
                                          "bench/slurm/allreduce.sbatch", "bench/slurm/collect.sbatch"};
    for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
        const char *a[] = {"bash", "-n", scripts[i], NULL};
        int rc = cmd_run(a, g_out, sizeof g_out, g_err, sizeof g_err);
        CHECK(rc == 0, "bash -n %s: %s", scripts[i], g_err);
    }
    const char *sub[] = {"bash", "bench/slurm/submit.sh", "--nodes", "1,2,4", "--out", "/tmp/x", "--instance",
                         "p4d.24xlarge", "--dry-run", NULL};
    int rc = cmd_run(sub, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0 && strstr(g_err, "sbatch --parsable --nodes 4 --export=ALL,OUT=/tmp/x") != NULL &&
              strstr(g_err, "allreduce.sbatch") != NULL && strstr(g_err, "--dependency=afterok:") != NULL,
          "submit.sh --dry-run: exit %d: %s", rc, g_err);
    const char *job[] = {"env", "DRY_RUN=1", "OUT=/tmp/x", "SLURM_JOB_NUM_NODES=4", "SLURM_NTASKS=4", "bash",
                         "bench/slurm/train_sweep.sbatch", NULL};
    rc = cmd_run(job, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0 && strstr(g_out, "srun --mpi=pmix") && strstr(g_out, "--global-batch 16") &&
              strstr(g_out, "train_4n.csv"),
          "train_sweep.sbatch dry run: %s%s", g_out, g_err);
    char dir[] = "/tmp/costbench-sweep-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "cannot create a temporary directory for the sweep");
        return;
    }
    char env_bin[CB_PATH_MAX], out[128], path[256];
    snprintf(env_bin, sizeof env_bin, "COSTBENCH=%s", g_costbench);
    snprintf(out, sizeof out, "%s/s", dir);
    const char *sw[] = {"env", env_bin, "ASAN_OPTIONS=detect_leaks=0", "OMPI_ALLOW_RUN_AS_ROOT=1",
                        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "bash", "bench/sweep.sh", "--model", "pythia-14m", "--seq",
                        "64", "--micro-batch", "2", "--steps", "3", "--out", out, NULL};
    rc = cmd_run(sw, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "bench/sweep.sh: exit %d: %s", rc, g_err);
    double ranks[8], meas[8];
    snprintf(path, sizeof path, "%s/sweep.csv", out);
    CHECK(csv_column(path, "ranks", ranks, 8) == 3, "sweep.csv: expected 3 runs (strong 1 and 2 ranks, weak 1 rank)");
    snprintf(path, sizeof path, "%s/scale_strong.csv", out);
    CHECK(csv_column(path, "measured_seq_per_s", meas, 8) == 2 && meas[1] > 0,
          "scale_strong.csv: the 2-rank measurement beside the model");
    snprintf(path, sizeof path, "%s/report/throughput.png", out);
    CHECK(access(path, R_OK) == 0, "no report/throughput.png from the sweep");
    rm_tree(dir);
}

const test_case tests_comm[] = {
    {"mpi: sweep script end to end; Slurm scripts parse and dry-run", test_sweep_and_cluster_scripts},
    {"mpi: --zero 1 on 2 ranks trains like 1 rank, halves the moments, checkpoints resume on 1", test_train_zero1},
    {"mpi: 2 ranks train like 1 rank at the same global batch; saved on 2, resumed on 1",
     test_train_two_ranks_equivalent},
    {"mpi: 2-rank allreduce, reduce-scatter and all-gather checked at every size", test_allreduce_two_ranks},
    {NULL, NULL},
};
