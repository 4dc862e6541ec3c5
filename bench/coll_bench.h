/* coll_bench.h: the collective microbenchmark behind `costbench allreduce`, in the manner of
 * nccl-tests and the OSU benchmarks: all-reduce, reduce-scatter and all-gather of fp32 buffers
 * from bytes to hundreds of MiB, every size checked against the exact expected result, then timed
 * (the slowest rank's time per call). algbw = bytes / time; busbw = algbw x 2(n-1)/n for
 * all-reduce and x (n-1)/n for the others (nccl-tests' PERFORMANCE.md), comparable to the link. */
#ifndef CB_COLL_BENCH_H
#define CB_COLL_BENCH_H

#include "../common/record.h"
#include "../common/schema.h"

/* The ops as common/schema.h's allreduce CSV names them (allreduce_ops[op]). */
typedef enum {
    COLL_ALLREDUCE = AR_OP_ALLREDUCE,
    COLL_REDUCE_SCATTER = AR_OP_REDUCE_SCATTER,
    COLL_ALLGATHER = AR_OP_ALLGATHER,
    COLL_COUNT = AR_NOPS
} coll_op;

typedef struct {
    double min_bytes, max_bytes, factor;
    int ops[COLL_COUNT]; /* 1: measure */
    double min_time_s;   /* per size and op */
    int min_iters;
} coll_opts;

/* Runs every (op, size) on every rank; rows are added on every rank (print from rank 0), in the
 * columns of common/schema.h's allreduce_cols.
 * Returns 0, or CB_EFAIL when a check fails or MPI reports an error. */
int coll_bench_run(const coll_opts *o, record *rec);

#endif
