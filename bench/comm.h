/* comm.h: the communication module (Open MPI; the one place MPI is called from).
 * Under `mpirun` every process is one rank of MPI_COMM_WORLD; started any other way (or built
 * without MPI) the program is a single rank and every collective is a copy. Collectives work
 * in place on fp32 buffers and return 0 or CB_EFAIL after printing the MPI error. */
#ifndef CB_COMM_H
#define CB_COMM_H

#include <stddef.h>
#include <stdint.h>

/* Initialises MPI when the process was started by mpirun; every other function calls it on
 * first use (never before `--blas-core` has re-executed the program). Returns 0 or CB_EFAIL. */
int comm_init(int *argc, char ***argv);
void comm_finalize(void);
int comm_rank(void);
int comm_size(void);
/* Ranks on this machine (for memory checks): OMPI_COMM_WORLD_LOCAL_SIZE under mpirun, else 1. */
int comm_local_size(void);
/* Ends every rank with `code` (a failure on one rank must not leave the others waiting). */
void comm_abort(int code);
/* "Open MPI 4.1.4" or "none (built without MPI)" or "not started by mpirun". */
const char *comm_describe(void);
void comm_barrier(void);

/* sum over ranks, in place, n floats */
int comm_allreduce_sum(float *buf, size_t n);
/* in (size x n) -> out (n): this rank's block of the sum over ranks */
int comm_reduce_scatter_sum(const float *in, float *out, size_t n);
/* in (n) -> out (size x n): every rank's block */
int comm_allgather(const float *in, float *out, size_t n);
/* Variable blocks: rank r owns buf[displ_r, displ_r + counts[r]) with displ the prefix sums.
 * reduce-scatter: every rank's block of the sum over ranks lands in its own block of buf;
 * all-gather: every rank's block of buf is copied to every rank; gather: to rank 0's `full`. */
int comm_reduce_scatter_sum_v(float *buf, const int *counts);
int comm_allgather_v(float *buf, const int *counts);
int comm_gather_v(const float *mine, float *full, const int *counts);
/* The same for 16-bit elements (full-bf16 weights and moments). */
int comm_allgather_v_u16(uint16_t *buf, const int *counts);
int comm_gather_v_u16(const uint16_t *mine, uint16_t *full, const int *counts);
/* the maximum / sum of a double over ranks */
double comm_max(double v);
double comm_sum(double v);

/* Non-blocking all-reduce (sum, in place), for overlapping gradient buckets with backward. */
typedef struct {
    void *req; /* MPI_Request when active */
    int active;
} comm_request;
int comm_iallreduce_sum(float *buf, size_t n, comm_request *r);
int comm_wait(comm_request *r);
/* Lets MPI progress a request (non-blocking collectives move only inside MPI calls); returns 1
 * when it is complete, 0 when not yet, CB_EFAIL on error. */
int comm_test(comm_request *r);

#endif
