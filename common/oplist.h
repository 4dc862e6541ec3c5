/* oplist.h: one training step of a transformer as the list of what runs: the one model of a step
 * that `costbench train`'s predicted breakdown, `matmul --shapes transformer` and the predictor
 * (`scale`, `plan`, `validate`) all read. Plain arithmetic on a model_config (common/presets.h's
 * shape functions, model_qkv_rows, model_mlp_in_rows, model_ffn, model_kv_heads, applied to the
 * part of the model a tensor-parallel rank holds), shared by the model and the report (which
 * never links the model).
 *
 * The list is for ONE micro-batch of b sequences of s tokens on ONE rank of a layout:
 *   rows     n = b s / cp: every GEMM sees all of its context-parallel share of the tokens;
 *            tensor parallelism (tp) splits the weight dimension, never the rows (Megatron-LM's
 *            column- and row-parallel linears)
 *   GEMMs    per layer: qkv (C -> (NH / tp + 2 KVH / tp) HS; with fewer key/value heads than tp
 *            ranks each rank holds one, replicated, as Megatron-LM does), attn_out (NH HS / tp ->
 *            C), mlp_up (C -> ffn / tp, twice for SwiGLU's gate and up), mlp_down (ffn / tp -> C);
 *            each once forward and twice backward (the input gradient and the weight gradient);
 *            once per micro-batch on the last stage: logits (C -> V / tp, a vocabulary tp does not
 *            divide padded up)
 *   attention the core, per head of the rank's NH / tp: tiled (flash) kernels compute the causal
 *            half, s (s + 1) / 2 scores, 4 HS FLOPs each forward and 10 HS backward (the backward
 *            recomputes the scores: 2.5 x the forward; Dao 2022); materialised ("full") attention
 *            computes all s^2 scores (4 HS forward, 8 HS backward) and moves them through memory
 *            between its two products: the softmax reads and writes them, the dropout reads,
 *            writes and keeps a 1-byte mask (4 B + 1 bytes per score forward); backward, the
 *            dropout's (read, mask, write) and the softmax's (read y and dy, write): 5 B + 1
 *   memory-bound, as bytes moved (B bytes per activation element): two norms (one with GPT-J's
 *            shared norm; read, write; backward read x and dy, write dx) and the final one on
 *            the last stage, the MLP activation (GELU: read and write ffn / tp wide, backward
 *            read 2 and write 1; SwiGLU: read 2 ffn / tp, write ffn / tp, backward read 3 and
 *            write 2), rotary on the rotated dimensions (model_rotary_dims) of the rank's q and k
 *            heads (read, write), two residual adds (read 2, write 1; a parallel residual one add
 *            of three), the embedding lookup, and cross-entropy over the rank's V / tp logits in
 *            fp32 (read, write; backward one more pass); with sequence parallelism the norms,
 *            residuals and the embedding work on n / tp rows
 *   TP       per layer, the all-reduces of an n x C activation: 2 forward, 2 backward (input
 *            gradients); with sequence parallelism each is an all-gather + a reduce-scatter of
 *            the same bytes (Korthikanti et al. 2022)
 *   fp8      (op_layout.fp8) the four block Linear layers run fp8 forward and backward (Transformer
 *            Engine's te.Linear / LayerNormLinear / LayerNormMLP, torchao's Float8Linear with the
 *            output filtered: the frameworks' defaults; the logits GEMM and the attention core stay
 *            16-bit), and their inputs are quantised, memory-bound ops `fp8_cast` at the traffic of
 *            the layout's recipe (op_layout.fp8_recipe, op_fp8_cast_bytes): per micro-batch the
 *            activation X (n x k; with sequence parallelism a C-wide one before its all-gather, n / tp
 *            rows) forward, and again under full recompute, and the output gradient dY (n x m)
 *            backward; the weights once per step (TE caches them across micro-batches; none with fp8
 *            parameters), OPS_STEP
 *   CP       (cp > 1) ring attention (Transformer Engine's cp_comm_type p2p, Megatron's default): per
 *            layer each rank sends its K and V chunk, s / cp tokens x its key/value heads x HS, to
 *            the next rank cp - 1 times forward (cp_kv_send, count cp - 1), and the K, V and their
 *            gradients dK, dV backward (twice the bytes; TE context_parallel.py's p2p_comm_buffers)
 *   recompute full: every forward op of the layers again in the backward pass (TP collectives
 *            included); selective: the attention core (and a materialised attention's memory
 *            traffic, and the ring's K and V sends) again (Korthikanti et al. 2022); full on a share
 *            of a stage's layers (op_layout.recompute_share, Megatron's --recompute-method block):
 *            each per-layer recompute entry counts that share of a layer
 * and the data movement around them: the gradient bytes a rank synchronises once per step
 * (grad_sync; ZeRO-3/FSDP: a reduce-scatter per layer and micro-batch instead), the weights a
 * ZeRO-3/FSDP rank gathers in every forward and backward (param_gather: per layer, and the
 * embeddings and the output layer on the first and last stage), the activation
 * a pipeline stage sends forward and the gradient it sends back per micro-batch (pp_send), and
 * the bytes AdamW streams once per step (optimizer). Who overlaps what with which is the
 * framework's (report/predict/stepmodel.h), not the list's. */
#ifndef CB_OPLIST_H
#define CB_OPLIST_H

#include "presets.h"

typedef enum { OPK_GEMM, OPK_ATTN, OPK_MEM, OPK_TP_COMM, OPK_DP_COMM, OPK_GATHER, OPK_PP_SEND, OPK_OPTIM, OPK_CP_SEND } op_kind;
typedef enum { OPP_FWD, OPP_BWD, OPP_RECOMPUTE, OPP_STEP } op_pass;
/* How often an op runs: per layer (times the layers of a stage), once per micro-batch on the
 * first or the last pipeline stage, once per micro-batch on every stage, or once per step. */
typedef enum { OPS_LAYER, OPS_FIRST, OPS_LAST, OPS_MB, OPS_STEP } op_scope;
extern const char *const op_kind_names[9];
extern const char *const op_pass_names[4];

typedef enum { OP_RECOMPUTE_NONE, OP_RECOMPUTE_SELECTIVE, OP_RECOMPUTE_FULL } op_recompute;
typedef enum { OP_ATTN_TILED, OP_ATTN_FULL } op_attention;
/* How an fp8 run scales its tensors (Transformer Engine's recipes; Megatron-Core --fp8-recipe
 * delayed / tensorwise / mxfp8): delayed (the default: last steps' amax history), current (per-tensor
 * scale from the tensor itself: "FP8-CS", torchao's tensorwise dynamic), mxfp8 (1 x 32 blocks with
 * an 8-bit power-of-two scale each: Blackwell's "FP8-MX"). */
typedef enum { OP_FP8_DELAYED, OP_FP8_CURRENT, OP_FP8_MXFP8, OP_FP8_NRECIPES } op_fp8_recipe;

typedef struct {
    long micro_batch, seq;
    int tp, pp, cp;
    int vp;                 /* interleaved chunks per rank (0 or 1: plain 1F1B): v sends per micro-batch each way */
    int sp;                 /* sequence parallelism (needs tp > 1 to matter) */
    op_recompute recompute;
    double recompute_share; /* full recompute: the share of a stage's layers recomputed (Megatron-Core's
                             * --recompute-method block recomputes the first --recompute-num-layers of each
                             * (virtual) stage, the others keep their activations); 0 or 1: all of them */
    op_attention attention;
    int act_bytes;          /* bytes per activation element: 2 (16-bit) or 4 (fp32) */
    int weight_bytes;       /* bytes per weight the GEMMs read and a ZeRO-3 rank gathers */
    int grad_bytes;         /* bytes per gradient element synchronised */
    int optim_bytes;        /* bytes AdamW reads and writes per parameter (weights, gradients, state) */
    int zero;               /* 0..3: ZeRO-3 gathers the weights per micro-batch */
    long dp;                /* data-parallel replicas (sharding of the optimizer state and gathers) */
    int fp8;                /* the transformer blocks' Linear layers in fp8 (qkv, attn_out, mlp_up, mlp_down), as
                             * Transformer Engine / torchao run them; the output layer and attention stay 16-bit */
    op_fp8_recipe fp8_recipe; /* the casts' traffic (op_fp8_cast_bytes); delayed when zeroed */
} op_layout;

typedef struct {
    char name[24];  /* qkv, attn_out, mlp_up, mlp_down, logits, attn_core, attn_scores_mem, norm, act, rotary, residual,
                       embedding, cross_entropy, tp_collective, grad_sync, param_gather, pp_send, optimizer */
    op_kind kind;
    op_pass pass;
    op_scope scope;
    char phase[12]; /* GEMMs: fwd, bwd_input, bwd_weight (matmul CSVs' phase); others: fwd, bwd, step */
    long n, k, m;   /* GEMM: Y (n x m) = X (n x k) W^T; attention: n query rows, k head size, m keys (one head) */
    double batch;   /* attention: the heads (x sequences) one kernel call runs; 1 otherwise */
    double count;   /* kernel calls per scope */
    double flops;   /* per call (attention: all of its heads) */
    double bytes;   /* per instance: memory moved (MEM, OPTIM) or the message (collectives, sends) */
    int fp8;        /* a GEMM at the FP8 peak (op_layout.fp8's block Linear layers) */
} op_entry;

#define OP_LIST_MAX 128

/* Bytes moved per element of a 16-bit tensor quantised to fp8 for two GEMMs (the row-major copy
 * and the one its second GEMM reads transposed, as Hopper's TN-only fp8 GEMMs and MXFP8's two block
 * directions need), under `recipe`; `amax_known`: a previous fused kernel already produced the
 * tensor's amax (Transformer Engine's LayerNorm under current scaling):
 *   delayed  4: one cast_transpose kernel reads 2 B, writes 1 B + 1 B; the scale is last step's, the
 *            amax is taken in the same kernel (TE common/transpose/cast_transpose.cu:148-211 @v1.8)
 *   current  6: a separate amax pass reads the tensor first (2 B: nvte_compute_amax), then the cast
 *            reads 2 B and writes 1 B + 1 B (TE pytorch/csrc/quantizer.cpp:960-1009 @v2.18,
 *            Float8CurrentScalingQuantizer::quantize_impl); 4 when amax_known (quantize_with_amax,
 *            :1019-1025)
 *   mxfp8    4 + 2/32: one kernel reads 2 B and writes the row-wise (1 x 32 blocks) and column-wise
 *            (32 x 1 blocks) fp8 copies, 1 B each, with an E8M0 scale byte per 32 elements for each
 *            (TE common/util/cast_kernels.cuh:47-55 @v2.8, cast_mxfp8_2D_kernel: scales_rowwise,
 *            scales_colwise); no amax pass (each block's scale comes from the block itself) */
double op_fp8_cast_bytes(op_fp8_recipe recipe, int amax_known);

/* Whether TP t splits the model: it divides the query heads, and the key/value heads divide by it
 * or it by them (fewer key/value heads than ranks: each rank holds one, replicated, as
 * Megatron-LM does with grouped-query attention); the MLP width divides by it too. */
int op_tp_splits(const model_config *c, int t);

/* The list for cfg under lay into out (cap entries). Returns the count, or -1 when cap is too small
 * or the layout does not split the model (tp not dividing the heads or the widths, cp the tokens). */
int op_list(const model_config *cfg, const op_layout *lay, op_entry *out, int cap);

/* Sums over a list for a stage of `layers` layers that is (or is not) the first and the last:
 * FLOPs of the GEMMs and the attention core with the given passes (mask of 1 << OPP_*). */
double op_list_flops(const op_entry *ops, int n, double layers, int first, int last, unsigned pass_mask);
/* How many times an entry runs per micro-batch on such a stage (0 for OPS_STEP entries). */
double op_times(const op_entry *op, double layers, int first, int last);

#endif
