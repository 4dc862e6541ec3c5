#include "comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"

int comm_local_size(void)
{
    const char *s = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    int n = s ? atoi(s) : 1;
    return n > 0 ? n : 1;
}

#ifdef CB_HAVE_MPI
#include <mpi.h>

static int g_mpi, g_rank, g_size = 1;
static char g_desc[160] = "not started by mpirun";

static int check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return err_msg("MPI %s failed on rank %d: %s", what, g_rank, msg);
}

static int g_tried, g_init_rc;

int comm_init(int *argc, char ***argv)
{
    if (g_tried) return g_init_rc;
    g_tried = 1;
    /* Open MPI's launcher sets OMPI_COMM_WORLD_SIZE; PMI/PMIx launchers (srun) set these */
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_RANK")) return 0;
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return g_init_rc = err_msg("MPI_Init_thread failed");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    g_mpi = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strpbrk(lib, ",\n");
    if (nl) *nl = '\0';
    snprintf(g_desc, sizeof g_desc, "%.120s, %d ranks", lib, g_size);
    return 0;
}

void comm_finalize(void)
{
    if (g_mpi) MPI_Finalize();
    g_mpi = 0;
}

/* MPI starts on first use, not at program start: `--blas-core auto` may re-execute the program
 * first, and a process must not exec itself after MPI_Init. */
#define ENSURE() (void)comm_init(NULL, NULL)

int comm_rank(void)
{
    ENSURE();
    return g_rank;
}
int comm_size(void)
{
    ENSURE();
    return g_size;
}
void comm_abort(int code)
{
    if (g_mpi && g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}
const char *comm_describe(void)
{
    ENSURE();
    return g_desc;
}
void comm_barrier(void)
{
    ENSURE();
    if (g_mpi) MPI_Barrier(MPI_COMM_WORLD);
}

/* MPI counts are int: large buffers go in chunks */
#define CHUNK ((size_t)1 << 30)

int comm_allreduce_sum(float *buf, size_t n)
{
    ENSURE();
    if (!g_mpi || g_size == 1) return 0;
    for (size_t o = 0; o < n; o += CHUNK) {
        size_t k = n - o < CHUNK ? n - o : CHUNK;
        if (check(MPI_Allreduce(MPI_IN_PLACE, buf + o, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "all-reduce"))
            return CB_EFAIL;
    }
    return 0;
}

int comm_reduce_scatter_sum(const float *in, float *out, size_t n)
{
    ENSURE();
    if (!g_mpi || g_size == 1) {
        if (out != in) memcpy(out, in, n * sizeof *out);
        return 0;
    }
    if (n > (size_t)0x7fffffff) return err_msg("reduce-scatter: %zu floats per rank exceeds MPI's int count", n);
    return check(MPI_Reduce_scatter_block(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "reduce-scatter");
}

int comm_allgather(const float *in, float *out, size_t n)
{
    ENSURE();
    if (!g_mpi || g_size == 1) {
        if (out != in) memcpy(out, in, n * sizeof *out);
        return 0;
    }
    if (n > (size_t)0x7fffffff) return err_msg("all-gather: %zu floats per rank exceeds MPI's int count", n);
    return check(MPI_Allgather(in, (int)n, MPI_FLOAT, out, (int)n, MPI_FLOAT, MPI_COMM_WORLD), "all-gather");
}

static int displs_of(const int *counts, int *displs)
{
    long d = 0;
    for (int r = 0; r < g_size; r++) {
        displs[r] = (int)d;
        d += counts[r];
        if (d > 0x7fffffffL) return err_msg("MPI: %ld floats exceed MPI's int displacements", d);
    }
    return 0;
}

int comm_reduce_scatter_sum_v(float *buf, const int *counts)
{
    ENSURE();
    if (!g_mpi || g_size == 1) return 0;
    int *displs = malloc((size_t)g_size * sizeof *displs);
    if (!displs) return err_msg("out of memory");
    int rc = displs_of(counts, displs);
    /* in place, MPI leaves this rank's block at the start of the buffer: move it to its place */
    if (rc == 0)
        rc = check(MPI_Reduce_scatter(MPI_IN_PLACE, buf, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "reduce-scatter");
    if (rc == 0 && displs[g_rank] > 0) memmove(buf + displs[g_rank], buf, (size_t)counts[g_rank] * sizeof *buf);
    free(displs);
    return rc;
}

static int allgather_v(void *buf, const int *counts, MPI_Datatype type)
{
    ENSURE();
    if (!g_mpi || g_size == 1) return 0;
    int *displs = malloc((size_t)g_size * sizeof *displs);
    if (!displs) return err_msg("out of memory");
    int rc = displs_of(counts, displs);
    if (rc == 0)
        rc = check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, type, MPI_COMM_WORLD),
                   "all-gather");
    free(displs);
    return rc;
}

static int gather_v(const void *mine, void *full, const int *counts, MPI_Datatype type, size_t elem)
{
    ENSURE();
    if (!g_mpi || g_size == 1) {
        if (full != mine) memcpy(full, mine, (size_t)counts[0] * elem);
        return 0;
    }
    int *displs = malloc((size_t)g_size * sizeof *displs);
    if (!displs) return err_msg("out of memory");
    int rc = displs_of(counts, displs);
    if (rc == 0)
        rc = check(MPI_Gatherv(mine, counts[g_rank], type, full, counts, displs, type, 0, MPI_COMM_WORLD), "gather");
    free(displs);
    return rc;
}

int comm_allgather_v(float *buf, const int *counts) { return allgather_v(buf, counts, MPI_FLOAT); }
int comm_allgather_v_u16(uint16_t *buf, const int *counts) { return allgather_v(buf, counts, MPI_UINT16_T); }
int comm_gather_v(const float *mine, float *full, const int *counts)
{
    return gather_v(mine, full, counts, MPI_FLOAT, sizeof(float));
}
int comm_gather_v_u16(const uint16_t *mine, uint16_t *full, const int *counts)
{
    return gather_v(mine, full, counts, MPI_UINT16_T, sizeof(uint16_t));
}

double comm_max(double v)
{
    ENSURE();
    double r = v;
    if (g_mpi && g_size > 1) MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return r;
}

double comm_sum(double v)
{
    ENSURE();
    double r = v;
    if (g_mpi && g_size > 1) MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return r;
}

int comm_iallreduce_sum(float *buf, size_t n, comm_request *r)
{
    ENSURE();
    r->active = 0;
    if (!g_mpi || g_size == 1) return 0;
    if (n > (size_t)0x7fffffff) return comm_allreduce_sum(buf, n);
    MPI_Request *q = malloc(sizeof *q);
    if (!q) return err_msg("out of memory");
    if (check(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, q), "all-reduce")) {
        free(q);
        return CB_EFAIL;
    }
    r->req = q, r->active = 1;
    return 0;
}

int comm_wait(comm_request *r)
{
    if (!r->active) return 0;
    int rc = check(MPI_Wait((MPI_Request *)r->req, MPI_STATUS_IGNORE), "wait");
    free(r->req);
    r->req = NULL, r->active = 0;
    return rc;
}

int comm_test(comm_request *r)
{
    if (!r->active) return 1;
    int done = 0;
    if (check(MPI_Test((MPI_Request *)r->req, &done, MPI_STATUS_IGNORE), "test")) return CB_EFAIL;
    if (done) {
        free(r->req);
        r->req = NULL, r->active = 0;
    }
    return done;
}

#else /* built without MPI: one rank */

int comm_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    if (getenv("OMPI_COMM_WORLD_SIZE") && atoi(getenv("OMPI_COMM_WORLD_SIZE")) > 1)
        return err_msg("started by mpirun with %s ranks, but this costbench was built without MPI (install "
                       "libopenmpi-dev and rebuild)",
                       getenv("OMPI_COMM_WORLD_SIZE"));
    return 0;
}
void comm_finalize(void) {}
int comm_rank(void) { return 0; }
int comm_size(void) { return 1; }
void comm_abort(int code) { (void)code; }
const char *comm_describe(void) { return "none (built without MPI)"; }
void comm_barrier(void) {}
int comm_allreduce_sum(float *buf, size_t n) { (void)buf, (void)n; return 0; }
int comm_reduce_scatter_sum(const float *in, float *out, size_t n)
{
    if (out != in) memcpy(out, in, n * sizeof *out);
    return 0;
}
int comm_allgather(const float *in, float *out, size_t n)
{
    if (out != in) memcpy(out, in, n * sizeof *out);
    return 0;
}
int comm_reduce_scatter_sum_v(float *buf, const int *counts)
{
    (void)buf, (void)counts;
    return 0;
}
int comm_allgather_v(float *buf, const int *counts)
{
    (void)buf, (void)counts;
    return 0;
}
int comm_allgather_v_u16(uint16_t *buf, const int *counts)
{
    (void)buf, (void)counts;
    return 0;
}
int comm_gather_v(const float *mine, float *full, const int *counts)
{
    if (full != mine) memcpy(full, mine, (size_t)counts[0] * sizeof *full);
    return 0;
}
int comm_gather_v_u16(const uint16_t *mine, uint16_t *full, const int *counts)
{
    if (full != mine) memcpy(full, mine, (size_t)counts[0] * sizeof *full);
    return 0;
}
double comm_max(double v) { return v; }
double comm_sum(double v) { return v; }
int comm_iallreduce_sum(float *buf, size_t n, comm_request *r)
{
    (void)buf, (void)n;
    r->active = 0;
    return 0;
}
int comm_wait(comm_request *r)
{
    r->active = 0;
    return 0;
}
int comm_test(comm_request *r)
{
    r->active = 0;
    return 1;
}

#endif
