/* netfit.h: the network a collective benchmark measured, fitted into the figures the step model
 * takes, and the network file that carries them to `costbench scale` and `plan` (--net-from).
 *
 * Inputs (netfit_detect tells them apart):
 *   nccl-tests  all_reduce_perf, all_gather_perf, reduce_scatter_perf: the banner ("# Collective
 *               test starting: all_reduce_perf"), one "#  Rank  N Group  G Pid P on HOST device D
 *               [..] NAME" line per rank (older versions: no Group), the table header ("size count
 *               type redop root time algbw busbw #wrong time algbw busbw #wrong"; older versions
 *               "error" for "#wrong", all_gather without redop and root), its rows (out-of-place
 *               then in-place), "# Avg bus bandwidth : X". `size` is the whole buffer in bytes
 *               (all-gather: the output, reduce-scatter: the input).
 *   costbench   `costbench allreduce --csv`: op, ranks, size_bytes, count, time_us_median, ...,
 *               check, date_utc (common/schema.h's allreduce_cols, written by bench/coll_bench.c):
 *               ranks on this machine.
 *
 * The fit, per collective: time(size) = latency + bus_bytes / busbw, bus_bytes = size x the
 * collective's bus factor (2(n-1)/n for all-reduce, (n-1)/n for all-gather and reduce-scatter,
 * n ranks: the traffic the busiest link carries, as nccl-tests' busbw counts it), over the
 * out-of-place times: busbw_gb_per_s from the large-message plateau (the median over the rows
 * within 5% of the best measured busbw, latency taken off), latency_us from the small-message
 * times (the median over the rows that spend at most half their time moving data, transfer taken
 * off); held at 0 (clamped) when no row is latency-bound.
 *
 * The rank count: the rank lines when they list every rank; when they are elided ("...") or
 * absent, the table's busbw / algbw (the bus factor above, within the printed digits, a multiple
 * of the header's nThread x nGpus, at least the highest rank number seen), nodes then unknown (0:
 * `costbench import` takes them from --instance). A complete list the ratio contradicts is taken
 * and the disagreement noted (nccl-tests versions counted busbw differently); an incomplete list
 * whose ratio allows several counts, or none of at least its highest rank, is refused with the
 * reason. Lines tagged by
 * `mpirun --tag-output` ("[1,0]<stdout>:") are read without their tag.
 *
 * How the step model takes the figures (this file fits, writes and reads them; they are applied to
 * the hardware rows by report/predict/netapply.c, read by report/predict/scale.c dp_sync_s and
 * report/predict/stepmodel.c):
 *   across nodes  the gradient ring across k nodes costs 2(k-1)/k x bytes / (net_gbit_per_s / 8 x
 *                 net_eff), so its bus bandwidth is net_gbit_per_s / 8 x net_eff: net_gbit_per_s =
 *                 busbw x 8 with net_eff 1 reproduces the measured all-reduce busbw. Its latency
 *                 is hops x latency_s a bucket, hops = min(2(k-1), 2 ceil(log2 k)): the measured
 *                 latency / hops(k) at the measured node count k is the per-hop latency (the
 *                 intra-node part of the measured latency included).
 *   inside a node the device-link ring runs at intra_gb_per_s x STEP_LINK_EFF (stepmodel.h):
 *                 intra_gb_per_s = busbw / STEP_LINK_EFF reproduces the measured busbw. The model's
 *                 link latency is its constant STEP_LINK_LATENCY_US, not taken from the fit.
 * Only all_reduce rows set the network; all_gather and reduce_scatter rows are recorded. */
#ifndef CB_NETFIT_H
#define CB_NETFIT_H

#include "inputs.h"
#include "kvconf.h"
#include "netfile.h"

typedef enum { NET_ALL_REDUCE, NET_ALL_GATHER, NET_REDUCE_SCATTER, NET_NCOLL } net_coll;
extern const char *const net_coll_names[NET_NCOLL]; /* all_reduce, all_gather, reduce_scatter */

/* 0: neither, 1: nccl-tests output, 2: a `costbench allreduce --csv` file. */
enum { NETFIT_NONE, NETFIT_NCCL, NETFIT_COSTBENCH };
int netfit_detect(const text_lines *t);

/* One measured size: bytes as the benchmark counts them (nccl-tests' `size`), its out-of-place
 * time and in-place time (NaN: none), its line. */
typedef struct {
    double bytes, time_us, inplace_us;
    int line;
} net_point;

/* One collective's table. */
typedef struct {
    net_coll coll;
    char coll_from[96];  /* how the collective was known: "the banner, line 2", "--collective", ... */
    char program[64];    /* "nccl-tests all_reduce_perf", "costbench allreduce" */
    int ranks, nodes;    /* nodes: distinct hosts; 0: unknown (the rank list elided or absent) */
    int hosts_seen, ranks_seen; /* nodes 0: the hosts and ranks the rank lines that are there name */
    int nodes_given;            /* 1: nodes from --instance's ranks a node (report/netimportrun.c) */
    int inter;           /* 1: across nodes (nodes > 1, unless --scope intra says otherwise) */
    char device[96];     /* the device name the rank lines give ("" for costbench) */
    char as_of[24];      /* YYYY-MM-DD of the measurement (the CSV's date, else the file's time) */
    char notes[512];     /* "; "-separated */
    net_point *pts;
    int n, cap, first_line, last_line;
} net_run;

/* Reads t into runs (one per collective the file holds; *nruns of them). coll: --collective
 * (NULL: the file says, or its columns do). Returns 0 or CB_EUSAGE after one error naming
 * t->path:line. Free each run with net_run_free. */
int netfit_parse(const text_lines *t, const char *coll, net_run runs[NET_NCOLL], int *nruns);
void net_run_free(net_run *r);

typedef struct {
    double latency_us, busbw_gb_per_s, busbw_max_gb_per_s, r2, max_resid_pct;
    double inplace_latency_us, inplace_busbw_gb_per_s; /* NaN: no in-place times */
    double min_bytes, max_bytes;
    int sizes, clamped; /* clamped: no latency-bound row (or a negative median), latency held at 0 */
    int plateau_rows, latency_rows;            /* the rows each figure is the median over */
    double plateau_min_bytes, latency_max_bytes; /* the plateau from this size up; latency rows up to this */
} net_fit;

/* The fit of r (see above; netfit.c says how each figure is taken). Returns 0 or CB_EUSAGE (fewer than 2 sizes,
 * times that do not grow with size: one error naming the file). */
int netfit_fit(const net_run *r, const char *path, net_fit *f);
/* The per-hop latency the model takes from an across-nodes latency over `nodes` nodes. */
double netfit_hop_latency_us(double latency_us, int nodes);

#endif
