/* schema.h: the CSV formats that travel between modules, each defined here once: every writer
 * builds its columns from these definitions and every reader looks columns up by them.
 *
 *   throughput   what `costbench report` and `costbench scale --measured/--compare` read: the
 *                summary `train --summary-csv` writes, the rows `scale --csv` writes, report.csv,
 *                and imported measurements (data/reference/trn1_table1.csv). A writer may add
 *                columns of its own after or between these; readers ignore columns they do not know.
 *   hardware     data/hardware.csv, and the row `allreduce --profile` writes for this machine.
 *   step log     `train --csv`: one row per step (report --log plots it).
 *   matmul       `matmul --csv` (report --bench plots it; peak's sgemm probe reads it). Columns
 *                are only ever added (at the end), never renamed: scripts read them by name.
 *   allreduce    `allreduce --csv` (import's network tables read it: report/formats/netfit.c).
 *   machine      the provenance columns record_write_csv appends to every measured row.
 * Also here: the data tables (devices, prices, models, blas_cores). The formats only the report side
 * reads or writes are defined beside their readers in report/formats/ (the published runs in
 * published.h, network files and nccl-tests output in netfit.h, the price catalogues in
 * priceimport.h); report/formats/README.md lists every file and where it is defined. */
#ifndef CB_SCHEMA_H
#define CB_SCHEMA_H

#include "record.h"

/* A column as a reader checks it: its definition, whether a file must have it, and (numbers) the
 * range a value must lie in. */
typedef struct {
    rec_col col;
    int required;
    double lo, hi;
} schema_col;

/* ---- throughput: each column's definition, for writers' column lists (in their own order) */
#define TPUT_MODEL          {"model", "", REC_STR, 0}
#define TPUT_TP             {"tensor_parallel", "", REC_NUM, 0}
#define TPUT_PP             {"pipeline_parallel", "", REC_NUM, 0}
#define TPUT_INSTANCES      {"instances", "", REC_NUM, 0}
#define TPUT_INSTANCE_TYPE  {"instance_type", "", REC_STR, 0}
#define TPUT_SEQ_LEN        {"seq_len", "", REC_NUM, 0}
#define TPUT_GLOBAL_BATCH   {"global_batch", "seq", REC_NUM, 0}
#define TPUT_MICRO_BATCH    {"micro_batch", "seq", REC_NUM, 0}
#define TPUT_RANKS          {"ranks", "", REC_NUM, 0}
#define TPUT_SEQ_PER_S      {"seq_per_s", "seq/s", REC_NUM, 3}
#define TPUT_SEQ_PER_S_MIN  {"seq_per_s_min", "seq/s", REC_NUM, 3}
#define TPUT_SEQ_PER_S_MAX  {"seq_per_s_max", "seq/s", REC_NUM, 3}
#define TPUT_TOKENS_PER_S   {"tokens_per_s", "tok/s", REC_NUM, 1}
#define TPUT_USD_PER_HOUR   {"usd_per_hour", "$/h", REC_NUM, 2}
#define TPUT_TOKENS_PER_USD {"tokens_per_usd", "tok/$", REC_NUM, 0}
#define TPUT_MFU            {"mfu", "%", REC_NUM, 1}
#define TPUT_PEAK_GFLOPS    {"peak_gflops", "GFLOP/s", REC_NUM, 1}
#define TPUT_SOURCE         {"source", "", REC_STR, 0}
/* peak resident memory of a measured run (costbench train's summary; read by costbench trajectory) */
#define TPUT_PEAK_RSS_GIB   {"peak_rss_gib", "GiB", REC_NUM, 3}
/* the training precision: a name of common/precision.h (fp32, bf16-mixed, bf16-sr, bf16-nearest,
 * or an alias; precision_column_valid), or fp16-mixed or fp8 (runs of other systems). Files of
 * older costbench versions wrote bf16 for bf16-nearest, read now as the alias bf16 = bf16-sr: full
 * bf16 either way, and no number of a throughput depends on the rounding. Empty: the file does not
 * say. */
#define TPUT_PRECISION      {"precision", "", REC_STR, 0}
/* The configuration a row ran in, spelt as the published-runs schema spells it. An absent column
 * or an empty cell is "not stated": files written before these columns existed keep their meaning.
 *   recompute          activation recomputation: none | selective | full (0 and 1, as costbench
 *                      train's summaries wrote it before, read as none and full)
 *   sharding           optimizer/parameter sharding: none | zero1 (ZeRO-1, Megatron's distributed
 *                      optimizer) | zero2 (FSDP SHARD_GRAD_OP) | zero3 (FSDP FULL_SHARD) | hybrid
 *                      (FSDP HYBRID_SHARD)
 *   vp                 virtual pipeline stages per device (interleaved 1F1B); empty or 1: plain 1F1B
 *   sequence_parallel  true | false: the norms' and dropouts' rows split over the TP ranks
 *   attention          full (the s x s scores kept) | flash (tiled: none kept)
 *   device             the accelerator, as data/devices.csv keys it (a100-sxm4-80gb, trainium1, ...);
 *                      empty for rows measured here (a CPU is not a device of that table) and when
 *                      the instance type says it */
#define TPUT_RECOMPUTE      {"recompute", "", REC_STR, 0}
#define TPUT_SHARDING       {"sharding", "", REC_STR, 0}
#define TPUT_VP             {"vp", "", REC_NUM, 0}
#define TPUT_SEQUENCE_PARALLEL {"sequence_parallel", "", REC_STR, 0}
#define TPUT_ATTENTION      {"attention", "", REC_STR, 0}
#define TPUT_DEVICE         {"device", "", REC_STR, 0}

/* ... and as a reader checks them (tput_schema[TP_x]). Sizes obey the limits below. */
enum { TP_MODEL, TP_TP, TP_PP, TP_INSTANCES, TP_INSTANCE_TYPE, TP_SEQ_LEN, TP_GLOBAL_BATCH, TP_MICRO_BATCH, TP_RANKS,
       TP_SEQ_PER_S, TP_SEQ_PER_S_MIN, TP_SEQ_PER_S_MAX, TP_TOKENS_PER_S, TP_USD_PER_HOUR, TP_TOKENS_PER_USD, TP_MFU,
       TP_PEAK_GFLOPS, TP_SOURCE, TP_PRECISION, TP_RECOMPUTE, TP_SHARDING, TP_VP, TP_SEQUENCE_PARALLEL, TP_ATTENTION,
       TP_DEVICE, TP_NCOLS };
extern const schema_col tput_schema[TP_NCOLS];
/* The values of the configuration columns (besides empty), each list in the order of its enum:
 * a row holds the index, or TPUT_NOT_STATED. */
enum { TPUT_NOT_STATED = -1 };
typedef enum { TPUT_RECOMPUTE_NONE, TPUT_RECOMPUTE_SELECTIVE, TPUT_RECOMPUTE_FULL, TPUT_NRECOMPUTES } tput_recompute;
typedef enum {
    TPUT_SHARD_NONE,
    TPUT_SHARD_ZERO1,
    TPUT_SHARD_ZERO2,
    TPUT_SHARD_ZERO3,
    TPUT_SHARD_HYBRID,
    TPUT_NSHARDINGS
} tput_sharding;
typedef enum { TPUT_ATTN_FULL, TPUT_ATTN_FLASH, TPUT_NATTENTIONS } tput_attention;
extern const char *const tput_recomputes[TPUT_NRECOMPUTES];
extern const char *const tput_shardings[TPUT_NSHARDINGS];
extern const char *const tput_attentions[TPUT_NATTENTIONS];
/* peak_rss_gib (TPUT_PEAK_RSS_GIB) as a reader checks it; empty: not measured. */
extern const schema_col tput_peak_rss;

/* Limits every size obeys wherever it enters (flags and files). */
#define CB_MAX_SEQ_LEN (1L << 20)       /* tokens per sequence */
#define CB_MAX_GLOBAL_BATCH (1L << 20)  /* sequences per optimizer step */
#define CB_MAX_ACCUM (1L << 16)         /* micro-batches per optimizer step */
#define CB_MAX_INSTANCES 1000000L

/* ---- hardware (data/hardware.csv): an instance or node, `accelerators` x one device of
 * data/devices.csv plus a network. A row that names its device takes the per-accelerator figures
 * from it and leaves their cells empty (accelerator .. intra_node_gb_per_s); a row with no device
 * (an empty cell, or a file without the column: the format before data/devices.csv) gives them. */
enum { HW_INSTANCE_TYPE, HW_DEVICE, HW_ACCELERATOR, HW_ACCELERATORS, HW_WORKERS, HW_BF16_TFLOPS, HW_FP32_TFLOPS,
       HW_MEM_GIB, HW_MEM_GB_PER_S, HW_INTRA_GB_PER_S, HW_NETWORK_GBIT_PER_S, HW_NETWORK_LATENCY_US, HW_SOURCE,
       HW_NETWORK_BUSBW_GBIT_PER_S, HW_NETWORK_SOURCE, HW_NCOLS };
/* network_busbw_gbit_per_s (optional): a vendor's or a user's measured all-reduce bus bandwidth across
 * nodes, x 8 (nccl-tests' busbw, GB/s, per node): where filled, the step model's network in place
 * of the line rate network_gbit_per_s; network_source cites it (and a measured network_latency_us). */
extern const schema_col hw_schema[HW_NCOLS];

/* ---- devices (data/devices.csv, report/formats/devices.h): one row per accelerator model */
enum { DV_DEVICE, DV_VENDOR, DV_WORKERS, DV_FP32_TFLOPS, DV_TF32_TFLOPS, DV_BF16_TFLOPS, DV_FP16_TFLOPS, DV_FP8_TFLOPS,
       DV_HBM_GIB, DV_HBM_GB_PER_S, DV_LINK_GB_PER_S, DV_SCALEUP_DOMAIN, DV_GEMM_EFF, DV_ATTN_EFF, DV_MEM_EFF,
       DV_LAUNCH_US, DV_NODE_NET_GBPS, DV_MODEL_SOURCE, DV_SOURCE, DV_FAMILY, DV_FP8_GEMM_EFF, DV_ATTN_EFF_MAX,
       DV_ATTN_S_HALF, DV_LINK_EFF, DV_LINK_LATENCY_US, DV_EFF_SOURCE, DV_GEMM_HALF_DIM, DV_NCOLS };
/* The step model's columns (gemm_eff .. model_source, and the kernel figures at the end of the
 * header: fp8_gemm_eff .. gemm_half_dim) may be absent from a file: the defaults of
 * report/predict/stepmodel.h then. */
#define DV_FIRST_OPTIONAL DV_GEMM_EFF
#define DV_LAST_OPTIONAL DV_MODEL_SOURCE
/* family (optional): a variant row names the device it is a variant of; its empty cells are
 * that device's (report/formats/devices.h). */
#define DV_FIRST_FIGURE DV_FP8_GEMM_EFF
extern const schema_col dev_schema[DV_NCOLS];

/* ---- prices (data/prices.csv) */
enum { PR_PROVIDER, PR_INSTANCE_TYPE, PR_REGION, PR_OPTION, PR_USD_PER_HOUR, PR_AS_OF, PR_SOURCE, PR_NCOLS };
extern const schema_col price_schema[PR_NCOLS];

/* ---- model presets (data/models.csv)
 * Required: name, family, layers, d_model, heads, vocab (padded), rotary_pct, rotary_base,
 * parallel_residual, tied_embeddings, pos_emb, max_seq_len, source.
 * Optional architecture columns: a missing column or an empty cell is GPT-NeoX's choice, so old
 * files keep their meaning:
 *   norm          layernorm (default) | rmsnorm
 *   norm_eps      default 1e-5; a layernorm preset must use 1e-5 (the LayerNorm kernel's epsilon)
 *   norm_bias     true (default for layernorm) | false (MPT); rmsnorm has none
 *   mlp           gelu (default; exact erf GELU) | swiglu (down(silu(gate x) * up x))
 *   ffn_dim       MLP intermediate width; default 4 d_model for gelu; required for swiglu, where it
 *                 must be a positive multiple of 8 (Llama rounds 8 d_model/3 up to a multiple of 256)
 *   kv_heads      key/value heads; default heads; heads % kv_heads == 0 (fewer: grouped-query)
 *   rotary_style  neox (default; rotate_half pairs i, i + r/2) | gptj (interleaved pairs 2i, 2i+1)
 *   attn_bias     true (default) | false: biases on the QKV projection and the attention output
 *   mlp_bias      true (default) | false: biases on the MLP's linears
 *   lm_head_bias  false (default) | true: a bias on the output projection (GPT-J)
 *   shared_norm   false (default) | true: one norm feeds attention and MLP (GPT-J); needs
 *                 parallel_residual true
 * pos_emb is rotary (needs rotary_pct > 0), learned or alibi (needs rotary_pct 0). */
enum { MD_NAME, MD_FAMILY, MD_LAYERS, MD_D_MODEL, MD_HEADS, MD_VOCAB, MD_ROTARY_PCT, MD_ROTARY_BASE,
       MD_PARALLEL_RESIDUAL, MD_TIED_EMBEDDINGS, MD_POS_EMB, MD_MAX_SEQ_LEN, MD_SOURCE, MD_NORM, MD_NORM_EPS,
       MD_NORM_BIAS, MD_MLP, MD_FFN_DIM, MD_KV_HEADS, MD_ROTARY_STYLE, MD_ATTN_BIAS, MD_MLP_BIAS, MD_LM_HEAD_BIAS,
       MD_SHARED_NORM, MD_NCOLS };
extern const schema_col model_schema[MD_NCOLS];
/* The values of the word columns, each list in the order of its enum in common/presets.h
 * (norm_kind, mlp_kind, pos_kind, rope_style). */
enum { MD_NFAMILIES = 6 };
extern const char *const model_families[MD_NFAMILIES];
extern const char *const model_norms[2];
extern const char *const model_mlps[2];
extern const char *const model_pos_embs[3];
extern const char *const model_rotary_styles[2];

/* ---- OpenBLAS kernel sets (data/blas_cores.csv) */
enum { BC_CORE, BC_REQUIRES, BC_NOTE, BC_NCOLS };
extern const schema_col blas_core_schema[BC_NCOLS];

/* ---- step log (train --csv) */
enum { SL_STEP, SL_LOSS, SL_GNORM, SL_LR, SL_MS, SL_TOKS, SL_SEQS, SL_MFU, SL_HFU, SL_COMM, SL_EXPOSED, SL_NCOLS };
extern const rec_col step_log_cols[SL_NCOLS];

/* ---- matmul (matmul --csv) */
enum { MM_OP, MM_PHASE, MM_N, MM_K, MM_M, MM_COUNT, MM_GF_MED, MM_GF_MIN, MM_GF_MAX, MM_CV, MM_MS, MM_PCT,
       MM_STEP_MS, MM_DTYPE, MM_BACKEND, MM_IMPL, MM_ISA, MM_PACK_MS, MM_NCOLS };
extern const rec_col mm_cols[MM_NCOLS];

/* ---- rope (rope --csv; costbench-gpu rope --csv): one row per (model, variant, direction, dtype) */
enum { RB_MODEL, RB_VARIANT, RB_DIR, RB_CACHE, RB_DTYPE, RB_TOKENS, RB_HEADS, RB_HS, RB_R, RB_NS_MED, RB_NS_MIN,
       RB_NS_MAX, RB_CV, RB_BYTES, RB_GBPS, RB_PCT_BW, RB_SPEEDUP, RB_NCOLS };
extern const rec_col rb_cols[RB_NCOLS];

/* ---- peak (peak --csv; costbench-gpu peak --csv): one row per probe */
enum { PK_PROBE, PK_THREADS, PK_ISA, PK_BLAS, PK_GF_MED, PK_GF_MIN, PK_GF_MAX, PK_GB_MED, PK_GB_MIN, PK_GB_MAX,
       PK_CV, PK_PCT, PK_MIB, PK_MFU_PEAK, PK_NCOLS };
extern const rec_col peak_cols[PK_NCOLS];

/* ---- collectives (`costbench allreduce --csv`: bench/coll_bench.c writes it, report/formats/netfit.c
 * reads it): one row per (op, size), the machine's provenance columns after these (date_utc among
 * them). size_bytes is the payload (count floats); times are the slowest rank's per call; check is
 * ALLREDUCE_CHECK_OK for a result checked against the exact expected one. */
enum { AR_OP, AR_RANKS, AR_SIZE_BYTES, AR_COUNT, AR_T_MED, AR_T_MIN, AR_T_MAX, AR_ALGBW, AR_BUSBW, AR_CHECK, AR_NCOLS };
extern const rec_col allreduce_cols[AR_NCOLS];
/* The op column's values (and `allreduce --ops` words), in the order of this enum. */
enum { AR_OP_ALLREDUCE, AR_OP_REDUCE_SCATTER, AR_OP_ALLGATHER, AR_NOPS };
extern const char *const allreduce_ops[AR_NOPS];
#define ALLREDUCE_CHECK_OK "ok"

/* ---- machine provenance, appended to measured rows */
enum { MC_CPU_MODEL, MC_CORES, MC_OMP_THREADS, MC_BLAS_THREADS, MC_BLAS_CORE, MC_BLAS_CORE_ENV, MC_BLAS_CORE_CHOICE,
       MC_OMP_WAIT_POLICY, MC_CFLAGS, MC_GIT_REV, MC_DATE_UTC, MC_NCOLS };
extern const char *const machine_cols[MC_NCOLS];

#endif
