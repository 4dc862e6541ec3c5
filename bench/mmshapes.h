/* mmshapes.h: the matmul shapes the benchmarks time, apart from the CPU libraries that run them so
 * that the GPU benchmark (bench/gpu/, built with the CUDA toolkit alone) lists the same shapes:
 * the (N x K) @ (K x K) sweep (N = tokens per device, K = model width), or the GEMMs of one
 * training step of a preset as common/oplist.h lists them (--shapes transformer). Shapes:
 * C (n x m) = op(A) (n x k) op(B). */
#ifndef CB_MMSHAPES_H
#define CB_MMSHAPES_H

#include "../common/presets.h"

typedef enum { MM_FP32 = 0, MM_BF16 = 1, MM_NDTYPES } mm_dtype;
typedef enum { MM_OPENBLAS = 0, MM_ONEDNN = 1, MM_NBACKENDS } mm_backend;
extern const char *const mm_dtype_names[MM_NDTYPES];     /* "fp32", "bf16" */
extern const char *const mm_backend_names[MM_NBACKENDS]; /* "openblas", "onednn" */

typedef struct {
    char op[24];    /* op_list's GEMM names: qkv, attn_out, mlp_up, mlp_down, logits; "linear" in sweeps */
    char phase[12]; /* fwd, bwd_input, bwd_weight */
    int n, k, m;
    int trans_a, trans_b, lda, ldb, ldc;
    double count;   /* times per training step of one micro-batch (transformer mode), NaN otherwise */
    int concurrent; /* one single-threaded call per thread at once (set by no shape list here) */
    int weight_b;   /* B is a weight (the linear layers' fwd and bwd_input): packed once on oneDNN */
    mm_dtype dtype;     /* 0 (fp32) unless set: mm_shapes_set_dtype */
    mm_backend backend; /* fp32's backend, 0 (OpenBLAS) unless set; bf16 always runs on oneDNN */
} mm_shape;

/* The results' columns: mm_cols (common/schema.h). */

/* The sweep shapes: Y (n x m) = X (n x k) W^T with m = k, for each n and k. */
int mm_shapes_sweep(mm_shape *out, int cap, const long *ns, int nn, const long *ks, int nk);
/* The GEMMs of op_list (common/oplist.h) for one micro-batch of B sequences of T tokens on one
 * rank (no tensor, pipeline or context parallelism, no recomputation): each linear layer's and
 * the logits' forward, bwd_input and bwd_weight, count = op_times (the layers, or 1 for the
 * logits). At most mm_shapes_transformer_count() shapes (returns the count, or CB_EFAIL when cap
 * is smaller). The attention core is not among them: kernels/attention.c runs its own tiles. */
int mm_shapes_transformer(mm_shape *out, int cap, const model_config *cfg, int B, int T);
/* The same on one of `tp` tensor-parallel ranks (Megatron's split: QKV and MLP-up by columns,
 * attention-out and MLP-down by rows, the logits by the vocabulary; op_tp_splits must hold):
 * the per-rank shapes the GPU benchmark times (costbench-gpu matmul --tp). */
int mm_shapes_transformer_tp(mm_shape *out, int cap, const model_config *cfg, int B, int T, int tp);
int mm_shapes_transformer_count(void);
/* Sets every shape's precision, and the backend fp32 shapes run on (bf16 runs on oneDNN
 * whatever fp32_backend says). A bf16 mixed-precision step: mm_shapes_set_dtype(s, n, MM_BF16,
 * MM_OPENBLAS) (a concurrent shape still runs as fp32 sgemm; rows say what ran). */
void mm_shapes_set_dtype(mm_shape *s, int n, mm_dtype dtype, mm_backend fp32_backend);
#endif
