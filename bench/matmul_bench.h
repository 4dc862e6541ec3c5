/* matmul_bench.h: sgemm throughput over the shapes a transformer spends its time in:
 * the (N x K) @ (K x K) sweep (N = tokens per device, K = model width), or every matmul of
 * one training step of a preset (--shapes transformer). Shapes: C (n x m) = op(A) (n x k) op(B). */
#ifndef CB_MATMUL_BENCH_H
#define CB_MATMUL_BENCH_H

#include "../common/record.h"
#include "../common/schema.h"
#include "../common/presets.h"
#include "runner.h"

typedef struct {
    char op[24];    /* qkv, attn_out, mlp_up, mlp_down, attn_scores, ..., logits; "linear" in sweeps */
    char phase[12]; /* fwd, bwd_input, bwd_weight */
    int n, k, m;
    int trans_a, trans_b, lda, ldb, ldc;
    double count;   /* times per training step (transformer mode), NaN otherwise */
    int concurrent; /* one single-threaded call per thread at once (attention heads run so) */
} mm_shape;

/* The results' columns: mm_cols (common/schema.h). */

/* The sweep shapes: Y (n x m) = X (n x k) W^T with m = k, for each n and k. */
int mm_shapes_sweep(mm_shape *out, int cap, const long *ns, int nn, const long *ks, int nk);
/* Every matmul of one training step of `cfg` at micro-batch B and sequence T: at most
 * mm_shapes_transformer_count(T) shapes (returns the count, or CB_EFAIL when cap is smaller). */
int mm_shapes_transformer(mm_shape *out, int cap, const model_config *cfg, int B, int T);
int mm_shapes_transformer_count(int T);
/* Bytes of the buffers the shapes need (largest A, B and C). */
double mm_shapes_bytes(const mm_shape *s, int n);
/* Runs the shapes within budget_s; peak_gflops for pct_of_peak. */
int mm_run(const mm_shape *s, int n, const runner_opts *ro, double budget_s, double peak_gflops, record *rec);

#endif
