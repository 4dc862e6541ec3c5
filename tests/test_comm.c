/* Multi-process runs under Open MPI's mpirun: the collective benchmark checks every size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "check.h"

static char g_out[65536], g_err[16384];

int mpi_run(int np, const char *const *args, char *out, size_t outsz, char *err, size_t errsz)
{
    char npb[16];
    snprintf(npb, sizeof npb, "%d", np);
    const char *argv[64] = {"env", "ASAN_OPTIONS=detect_leaks=0", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", npb,
                            g_costbench};
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
            ops[0] += strcmp(op, "allreduce") == 0, ops[1] += strcmp(op, "reduce_scatter") == 0, ops[2] += strcmp(op, "allgather") == 0;
        }
        CHECK(ops[0] >= 10 && ops[1] >= 9 && ops[2] >= 9, "rows per op: %d %d %d", ops[0], ops[1], ops[2]);
        table_free(&t);
    }
    unlink(csv);
    const char *bad[] = {"allreduce", "-b", "1M", "-e", "1K", NULL};
    rc = mpi_run(2, bad, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 2 && strstr(g_err, "--min-bytes") != NULL, "bad sizes under mpirun: exit %d: %s", rc, g_err);
}

/* Column `name` of every row of a CSV. */
static int read_col(const char *path, const char *name, double *out, int cap)
{
    table t;
    if (table_load(&t, path) != 0) return -1;
    int c = table_col(&t, name, 1), n = 0;
    for (int i = 0; c >= 0 && i < t.nrows && n < cap; i++) out[n++] = strtod(table_cell(&t, i, c), NULL);
    table_free(&t);
    return c >= 0 ? n : -1;
}

static void test_train_two_ranks_equivalent(void)
{
    char dir[] = "/tmp/costbench-dp-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    char l1[128], l2[128], l3[128], ck[128], sum[128];
    snprintf(l1, sizeof l1, "%s/one.csv", dir);
    snprintf(l2, sizeof l2, "%s/two.csv", dir);
    snprintf(l3, sizeof l3, "%s/resumed.csv", dir);
    snprintf(ck, sizeof ck, "%s/ckpt", dir);
    snprintf(sum, sizeof sum, "%s/summary.csv", dir);
    const char *a1[] = {"train", "--model", "pythia-14m", "--micro-batch", "2", "--seq", "64", "--global-batch", "8", "--steps", "4",
                        "--no-predict", "--quiet", "--peak-gflops", "100", "--csv", l1, NULL};
    int rc = cli_run(a1, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "1 rank: exit %d: %s", rc, g_err);
    /* the same global batch over 2 ranks, saving a checkpoint at step 2 */
    const char *a2[] = {"train", "--model", "pythia-14m", "--micro-batch", "2", "--seq", "64", "--global-batch", "8", "--steps", "4",
                        "--no-predict", "--quiet", "--peak-gflops", "100", "--csv", l2, "--summary-csv", sum, "--save", ck,
                        "--save-every", "2", NULL};
    rc = mpi_run(2, a2, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "2 ranks: exit %d: %s", rc, g_err);
    double x1[8], x2[8], g1[8], g2[8];
    int n1 = read_col(l1, "loss", x1, 8), n2 = read_col(l2, "loss", x2, 8);
    read_col(l1, "grad_norm", g1, 8);
    read_col(l2, "grad_norm", g2, 8);
    CHECK(n1 == 4 && n2 == 4, "rows: %d and %d", n1, n2);
    for (int i = 0; i < n1 && i < n2; i++) {
        CHECK(fabs(x1[i] - x2[i]) <= 1e-5 * fabs(x1[i]), "step %d: loss %.9g on 1 rank, %.9g on 2", i + 1, x1[i], x2[i]);
        CHECK(fabs(g1[i] - g2[i]) <= 1e-4 * fabs(g1[i]), "step %d: grad norm %.9g on 1 rank, %.9g on 2", i + 1, g1[i], g2[i]);
    }
    /* the same without overlapping the all-reduce with the backward */
    char l4[128];
    snprintf(l4, sizeof l4, "%s/two_no_overlap.csv", dir);
    const char *a5[] = {"train", "--model", "pythia-14m", "--micro-batch", "2", "--seq", "64", "--global-batch", "8", "--steps", "4",
                        "--no-predict", "--quiet", "--peak-gflops", "100", "--no-overlap", "--csv", l4, NULL};
    rc = mpi_run(2, a5, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "2 ranks --no-overlap: exit %d: %s", rc, g_err);
    double x4[8];
    int n4 = read_col(l4, "loss", x4, 8);
    CHECK(n4 == 4, "rows: %d", n4);
    for (int i = 0; i < n1 && i < n4; i++)
        CHECK(fabs(x1[i] - x4[i]) <= 1e-5 * fabs(x1[i]), "step %d: loss %.9g on 1 rank, %.9g on 2 without overlap", i + 1, x1[i], x4[i]);
    double ranks[2], comm[2];
    CHECK(read_col(sum, "ranks", ranks, 2) == 1 && ranks[0] == 2, "summary: ranks");
    CHECK(read_col(sum, "exposed_comm_ms", comm, 2) == 1 && comm[0] > 0, "summary: exposed communication time");
    /* saved by 2 ranks, resumed on 1 from the step-2 checkpoint (kept as the previous one): steps 3
     * and 4 as in the uninterrupted runs */
    char latest[160];
    snprintf(latest, sizeof latest, "%s/latest", ck);
    FILE *lf = fopen(latest, "w");
    if (lf) {
        fputs("step-00000002\n", lf);
        fclose(lf);
    }
    const char *a3[] = {"train", "--model", "pythia-14m", "--micro-batch", "2", "--seq", "64", "--global-batch", "8", "--steps", "4",
                        "--no-predict", "--quiet", "--peak-gflops", "100", "--csv", l3, "--resume", ck, NULL};
    rc = cli_run(a3, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "resume on 1 rank: exit %d: %s", rc, g_err);
    double x3[8];
    int n3 = read_col(l3, "loss", x3, 8);
    CHECK(n3 == 2, "resumed rows: %d", n3);
    for (int i = 0; i < n3 && i + 2 < n1; i++)
        CHECK(fabs(x3[i] - x1[i + 2]) <= 1e-5 * fabs(x1[i + 2]), "resumed step %d: loss %.9g, uninterrupted %.9g", i + 3, x3[i], x1[i + 2]);
    /* a global batch that does not split over the ranks */
    const char *a4[] = {"train", "--model", "pythia-14m", "--micro-batch", "2", "--seq", "64", "--global-batch", "2", "--steps", "1", NULL};
    rc = mpi_run(2, a4, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 2 && strstr(g_err, "x 2 ranks") != NULL, "global batch 2 over 2 ranks of 2: exit %d: %s", rc, g_err);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* ZeRO-1 on 2 ranks: the losses of 1 rank, the moments' memory halved in the estimate, and a
 * checkpoint (moments gathered from both shards) that resumes on 1 rank. */
static void test_train_zero1(void)
{
    char dir[] = "/tmp/costbench-zero-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    char l1[128], lz[128], lr[128], ck[128], latest[160];
    snprintf(l1, sizeof l1, "%s/one.csv", dir);
    snprintf(lz, sizeof lz, "%s/zero.csv", dir);
    snprintf(lr, sizeof lr, "%s/resumed.csv", dir);
    snprintf(ck, sizeof ck, "%s/ckpt", dir);
    snprintf(latest, sizeof latest, "%s/latest", ck);
    const char *a1[] = {"train", "--model", "pythia-14m", "--micro-batch", "2", "--seq", "64", "--global-batch", "8", "--steps", "4",
                        "--no-predict", "--quiet", "--peak-gflops", "100", "--csv", l1, NULL};
    int rc = cli_run(a1, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "1 rank: exit %d: %s", rc, g_err);
    const char *a2[] = {"train", "--model", "pythia-14m", "--micro-batch", "2", "--seq", "64", "--global-batch", "8", "--steps", "4",
                        "--no-predict", "--quiet", "--peak-gflops", "100", "--zero", "1", "--csv", lz, "--save", ck, "--save-every", "2", NULL};
    rc = mpi_run(2, a2, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "2 ranks --zero 1: exit %d: %s", rc, g_err);
    CHECK(strstr(g_out, "ZeRO-1: AdamW moments 0.052 GiB per rank instead of 0.105 GiB") != NULL, "no ZeRO-1 estimate line: %s", g_out);
    double x1[8], xz[8], xr[8];
    int n1 = read_col(l1, "loss", x1, 8), nz = read_col(lz, "loss", xz, 8);
    CHECK(n1 == 4 && nz == 4, "rows: %d and %d", n1, nz);
    for (int i = 0; i < n1 && i < nz; i++)
        CHECK(fabs(x1[i] - xz[i]) <= 1e-5 * fabs(x1[i]), "step %d: loss %.9g on 1 rank, %.9g with ZeRO-1 on 2", i + 1, x1[i], xz[i]);
    FILE *lf = fopen(latest, "w");
    if (lf) {
        fputs("step-00000002\n", lf);
        fclose(lf);
    }
    const char *a3[] = {"train", "--model", "pythia-14m", "--micro-batch", "2", "--seq", "64", "--global-batch", "8", "--steps", "4",
                        "--no-predict", "--quiet", "--peak-gflops", "100", "--csv", lr, "--resume", ck, NULL};
    rc = cli_run(a3, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "resume on 1 rank: exit %d: %s", rc, g_err);
    int nr = read_col(lr, "loss", xr, 8);
    CHECK(nr == 2, "resumed rows: %d", nr);
    for (int i = 0; i < nr && i + 2 < n1; i++)
        CHECK(fabs(xr[i] - x1[i + 2]) <= 1e-5 * fabs(x1[i + 2]), "resumed step %d: loss %.9g, uninterrupted %.9g", i + 3, xr[i], x1[i + 2]);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
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
    const char *sub[] = {"bash", "bench/slurm/submit.sh", "--nodes", "1,2,4", "--out", "/tmp/x", "--instance", "p4d.24xlarge", "--dry-run", NULL};
    int rc = cmd_run(sub, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0 && strstr(g_err, "sbatch --parsable --nodes 4 --export=ALL,OUT=/tmp/x") != NULL &&
              strstr(g_err, "allreduce.sbatch") != NULL && strstr(g_err, "--dependency=afterok:") != NULL,
          "submit.sh --dry-run: exit %d: %s", rc, g_err);
    const char *job[] = {"env", "DRY_RUN=1", "OUT=/tmp/x", "SLURM_JOB_NUM_NODES=4", "SLURM_NTASKS=4", "bash", "bench/slurm/train_sweep.sbatch", NULL};
    rc = cmd_run(job, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0 && strstr(g_out, "srun --mpi=pmix") && strstr(g_out, "--global-batch 16") && strstr(g_out, "train_4n.csv"),
          "train_sweep.sbatch dry run: %s%s", g_out, g_err);
    char dir[] = "/tmp/costbench-sweep-XXXXXX";
    if (!mkdtemp(dir)) return;
    char env_bin[4200], out[128], path[256];
    snprintf(env_bin, sizeof env_bin, "COSTBENCH=%s", g_costbench);
    snprintf(out, sizeof out, "%s/s", dir);
    const char *sw[] = {"env", env_bin, "ASAN_OPTIONS=detect_leaks=0", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "bash",
                        "bench/sweep.sh", "--model", "pythia-14m", "--seq", "64", "--micro-batch", "2", "--steps", "3", "--out", out, NULL};
    rc = cmd_run(sw, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "bench/sweep.sh: exit %d: %s", rc, g_err);
    double ranks[8], meas[8];
    snprintf(path, sizeof path, "%s/sweep.csv", out);
    CHECK(read_col(path, "ranks", ranks, 8) == 3, "sweep.csv: expected 3 runs (strong 1 and 2 ranks, weak 1 rank)");
    snprintf(path, sizeof path, "%s/scale_strong.csv", out);
    CHECK(read_col(path, "measured_seq_per_s", meas, 8) == 2 && meas[1] > 0, "scale_strong.csv: the 2-rank measurement beside the model");
    snprintf(path, sizeof path, "%s/report/throughput.png", out);
    CHECK(access(path, R_OK) == 0, "no report/throughput.png from the sweep");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
}

const test_case tests_comm[] = {
    {"mpi: sweep script end to end; Slurm scripts parse and dry-run", test_sweep_and_cluster_scripts},
    {"mpi: --zero 1 on 2 ranks trains like 1 rank, halves the moments, checkpoints resume on 1", test_train_zero1},
    {"mpi: 2 ranks train like 1 rank at the same global batch; saved on 2, resumed on 1", test_train_two_ranks_equivalent},
    {"mpi: 2-rank allreduce, reduce-scatter and all-gather checked at every size", test_allreduce_two_ranks},
    {NULL, NULL},
};
