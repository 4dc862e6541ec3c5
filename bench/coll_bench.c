#include "coll_bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../common/stats.h"
#include "../common/timer.h"
#include "comm.h"

/* One call of op on `count` floats of payload (all-reduce: the buffer; reduce-scatter: the
 * input of size x block; all-gather: the output of size x block). */
static int coll_call(coll_op op, float *a, float *b, size_t count, int size)
{
    size_t block = count / (size_t)size;
    switch (op) {
    case COLL_ALLREDUCE: return comm_allreduce_sum(a, count);
    case COLL_REDUCE_SCATTER: return comm_reduce_scatter_sum(a, b, block);
    default: return comm_allgather(a, b, block);
    }
}

/* Exact check: rank r contributes (r + 1) x (i % 13 + 1), small integers, so every sum is exact. */
static int coll_check(coll_op op, float *a, float *b, size_t count, int rank, int size, char *why, size_t whysz)
{
    size_t block = count / (size_t)size;
    for (size_t i = 0; i < count; i++) a[i] = (float)((rank + 1) * (int)(i % 13 + 1));
    if (op == COLL_ALLGATHER)
        for (size_t i = 0; i < block; i++) a[i] = (float)((rank + 1) * (int)((rank * block + i) % 13 + 1));
    if (coll_call(op, a, b, count, size) != 0) return CB_EFAIL;
    double tri = (double)size * (size + 1) / 2;
    size_t n = op == COLL_REDUCE_SCATTER ? block : count;
    for (size_t i = 0; i < n; i++) {
        double want, got;
        if (op == COLL_ALLREDUCE) want = tri * (double)(i % 13 + 1), got = a[i];
        else if (op == COLL_REDUCE_SCATTER) want = tri * (double)((rank * block + i) % 13 + 1), got = b[i];
        else {
            size_t r = i / block;
            want = (double)(r + 1) * (double)(i % 13 + 1), got = b[i];
        }
        if (got != want) {
            snprintf(why, whysz, "%s of %zu floats on rank %d: element %zu is %g, expected %g", "check", count, rank, i,
                     got, want);
            return 1;
        }
    }
    return 0;
}

int coll_bench_run(const coll_opts *o, record *rec)
{
    int size = comm_size(), rank = comm_rank();
    size_t max_count = (size_t)(o->max_bytes / sizeof(float));
    float *a = mem_alloc(max_count, sizeof(float), "collective send buffer");
    float *b = mem_alloc(max_count, sizeof(float), "collective receive buffer");
    if (!a || !b) {
        free(a), free(b);
        return CB_EFAIL;
    }
    int rc = 0;
    for (int op = 0; op < COLL_COUNT && rc == 0; op++) {
        if (!o->ops[op]) continue;
        for (double bytes = o->min_bytes; bytes <= o->max_bytes * (1 + 1e-9) && rc == 0; bytes *= o->factor) {
            size_t count = (size_t)(bytes / sizeof(float));
            if (op != COLL_ALLREDUCE) count = count / (size_t)size * (size_t)size; /* whole blocks */
            if (count == 0) continue;
            char why[256] = "";
            int bad = coll_check((coll_op)op, a, b, count, rank, size, why, sizeof why);
            if (bad < 0) {
                rc = CB_EFAIL;
                break;
            }
            /* every rank must agree on the outcome and the number of calls */
            int any_bad = comm_max(bad) > 0;
            if (any_bad) {
                if (bad) err_msg("%s: %s", allreduce_ops[op], why);
                rc = CB_EFAIL;
                break;
            }
            memset(a, 0, count * sizeof(float)); /* timed on zeros: in-place sums stay finite */
            /* calibrate: calls per sample so that a sample lasts >= 1 ms on the slowest rank */
            comm_barrier();
            double t0 = timer_now_s();
            if ((rc = coll_call((coll_op)op, a, b, count, size)) != 0) break;
            double one = comm_max(timer_now_s() - t0);
            int reps = one >= 1e-3 ? 1 : (int)ceil(1e-3 / fmax(one, 1e-7));
            int nsamples = (int)fmax(o->min_iters, fmin(200.0, ceil(o->min_time_s / (one * reps))));
            double *t = malloc((size_t)nsamples * sizeof *t);
            if (!t) {
                rc = err_msg("out of memory");
                break;
            }
            for (int s = 0; s < nsamples && rc == 0; s++) {
                comm_barrier();
                double s0 = timer_now_s();
                for (int k = 0; k < reps && rc == 0; k++) rc = coll_call((coll_op)op, a, b, count, size);
                t[s] = comm_max((timer_now_s() - s0) / reps); /* the slowest rank's time */
            }
            if (rc == 0) {
                stats_summary ss;
                stats_summarize(t, nsamples, &ss);
                double payload = (double)count * sizeof(float);
                double algbw = payload / ss.median / 1e9;
                double factor = op == COLL_ALLREDUCE ? 2.0 * (size - 1) / size : (double)(size - 1) / size;
                int row = record_add_row(rec);
                if (row >= 0) {
                    record_str(rec, row, AR_OP, allreduce_ops[op]);
                    record_num(rec, row, AR_RANKS, size);
                    record_num(rec, row, AR_SIZE_BYTES, payload);
                    record_num(rec, row, AR_COUNT, (double)count);
                    record_num(rec, row, AR_T_MED, ss.median * 1e6);
                    record_num(rec, row, AR_T_MIN, ss.min * 1e6);
                    record_num(rec, row, AR_T_MAX, ss.max * 1e6);
                    record_num(rec, row, AR_ALGBW, algbw);
                    record_num(rec, row, AR_BUSBW, algbw * factor);
                    record_str(rec, row, AR_CHECK, ALLREDUCE_CHECK_OK);
                }
            }
            free(t);
        }
    }
    free(a);
    free(b);
    return rc;
}
