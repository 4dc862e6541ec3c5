/* matmul_bench.h: matmul throughput over the shapes a transformer spends its time in:
 * the (N x K) @ (K x K) sweep (N = tokens per device, K = model width), or the GEMMs of one
 * training step of a preset as common/oplist.h lists them (--shapes transformer). Shapes:
 * C (n x m) = op(A) (n x k) op(B).
 *
 * Precision and backend per shape: fp32 on OpenBLAS (sgemm, the default) or on oneDNN; bf16 on
 * oneDNN (bf16 A and B, fp32 accumulation, fp32 C: what a bf16 mixed-precision step's linear
 * layers compute). On oneDNN a B that is a weight is reordered once into oneDNN's blocked layout
 * (untimed in the product; the reorder is timed on its own, pack_ms), as a training step would
 * reorder each weight once per optimizer step. A concurrent shape (none of the lists here makes
 * one) always runs as fp32 sgemm, one call per thread: oneDNN is called from one thread at a time. */
#ifndef CB_MATMUL_BENCH_H
#define CB_MATMUL_BENCH_H

#include "../common/record.h"
#include "../common/schema.h"
#include "../common/presets.h"
#include "runner.h"

#include "mmshapes.h"

/* Bytes of the buffers the shapes need (largest A, B and C, bf16 copies, packed weights). */
double mm_shapes_bytes(const mm_shape *s, int n);

/* The peak each row's pct_of_peak is against, by the precision the row ran in (GFLOP/s; NaN or
 * <= 0: unknown, an empty cell). */
typedef struct {
    double gflops[MM_NDTYPES];
} mm_peaks;

/* Runs the shapes within budget_s, each checked against a double-precision reference first; a
 * row per shape measured, with the dtype, backend and kernel that ran. Returns 0 or CB_EFAIL. */
int mm_run_peaks(const mm_shape *s, int n, const runner_opts *ro, double budget_s, const mm_peaks *peaks, record *rec);
/* The same with one peak for every row. */
int mm_run(const mm_shape *s, int n, const runner_opts *ro, double budget_s, double peak_gflops, record *rec);

#endif
