/* Multi-process runs under Open MPI's mpirun: the collective benchmark checks every size. */
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

const test_case tests_comm[] = {
    {"mpi: 2-rank allreduce, reduce-scatter and all-gather checked at every size", test_allreduce_two_ranks},
    {NULL, NULL},
};
