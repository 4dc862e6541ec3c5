#include "schema.h"

const schema_col tput_schema[TP_NCOLS] = {
    [TP_MODEL] = {TPUT_MODEL, 1, 0, 0},
    [TP_TP] = {TPUT_TP, 0, 1, 1 << 20},
    [TP_PP] = {TPUT_PP, 0, 1, 1 << 20},
    [TP_INSTANCES] = {TPUT_INSTANCES, 1, 1, CB_MAX_INSTANCES},
    [TP_INSTANCE_TYPE] = {TPUT_INSTANCE_TYPE, 1, 0, 0},
    [TP_SEQ_LEN] = {TPUT_SEQ_LEN, 1, 1, CB_MAX_SEQ_LEN},
    [TP_GLOBAL_BATCH] = {TPUT_GLOBAL_BATCH, 1, 1, CB_MAX_GLOBAL_BATCH},
    [TP_MICRO_BATCH] = {TPUT_MICRO_BATCH, 0, 1, CB_MAX_GLOBAL_BATCH},
    [TP_RANKS] = {TPUT_RANKS, 0, 1, 1 << 24},
    [TP_SEQ_PER_S] = {TPUT_SEQ_PER_S, 1, 1e-12, 1e15},
    [TP_SEQ_PER_S_MIN] = {TPUT_SEQ_PER_S_MIN, 0, 0, 1e15},
    [TP_SEQ_PER_S_MAX] = {TPUT_SEQ_PER_S_MAX, 0, 0, 1e15},
    /* measured or predicted, never zero: from a token every 12 days to 1e12 (some 1e5 x the largest
     * published training runs) */
    [TP_TOKENS_PER_S] = {TPUT_TOKENS_PER_S, 0, 1e-6, 1e12},
    [TP_USD_PER_HOUR] = {TPUT_USD_PER_HOUR, 0, 1e-9, 1e9},
    [TP_TOKENS_PER_USD] = {TPUT_TOKENS_PER_USD, 0, 0, 1e18},
    [TP_MFU] = {TPUT_MFU, 0, 0, 100},
    [TP_PEAK_GFLOPS] = {TPUT_PEAK_GFLOPS, 0, 1, 1e12},
    [TP_SOURCE] = {TPUT_SOURCE, 0, 0, 0},
    [TP_PRECISION] = {TPUT_PRECISION, 0, 0, 0},
    [TP_RECOMPUTE] = {TPUT_RECOMPUTE, 0, 0, 0},
    [TP_SHARDING] = {TPUT_SHARDING, 0, 0, 0},
    /* a virtual stage holds at least one layer, and no model has more than 1000 (models.csv) */
    [TP_VP] = {TPUT_VP, 0, 1, 1000},
    [TP_SEQUENCE_PARALLEL] = {TPUT_SEQUENCE_PARALLEL, 0, 0, 0},
    [TP_ATTENTION] = {TPUT_ATTENTION, 0, 0, 0},
    [TP_DEVICE] = {TPUT_DEVICE, 0, 0, 0},
};

const char *const tput_recomputes[TPUT_NRECOMPUTES] = {"none", "selective", "full"};
const char *const tput_shardings[TPUT_NSHARDINGS] = {"none", "zero1", "zero2", "zero3", "hybrid"};
const char *const tput_attentions[TPUT_NATTENTIONS] = {"full", "flash"};

/* a process holds at least a megabyte; no machine holds 64 TiB */
const schema_col tput_peak_rss = {TPUT_PEAK_RSS_GIB, 0, 1e-3, 65536};

/* The per-accelerator columns (accelerator .. intra_node_gb_per_s) are required only of a file
 * without the device column (report/formats/inputs.c checks that). */
const schema_col hw_schema[HW_NCOLS] = {
    [HW_INSTANCE_TYPE] = {{"instance_type", "", REC_STR, 0}, 1, 0, 0},
    [HW_DEVICE] = {{"device", "", REC_STR, 0}, 0, 0, 0},
    [HW_ACCELERATOR] = {{"accelerator", "", REC_STR, 0}, 0, 0, 0},
    [HW_ACCELERATORS] = {{"accelerators", "", REC_NUM, 0}, 1, 1, 4096},
    [HW_WORKERS] = {{"workers_per_accelerator", "", REC_NUM, 0}, 0, 1, 64},
    [HW_BF16_TFLOPS] = {{"bf16_tflops", "TFLOP/s", REC_NUM, 1}, 0, 1e-3, 1e6},
    [HW_FP32_TFLOPS] = {{"fp32_tflops", "TFLOP/s", REC_NUM, 1}, 0, 1e-3, 1e6},
    [HW_MEM_GIB] = {{"mem_gib", "GiB", REC_NUM, 1}, 0, 1e-3, 1e6},
    [HW_MEM_GB_PER_S] = {{"mem_gb_per_s", "GB/s", REC_NUM, 1}, 0, 1e-3, 1e6},
    [HW_INTRA_GB_PER_S] = {{"intra_node_gb_per_s", "GB/s", REC_NUM, 1}, 0, 1e-3, 1e6},
    [HW_NETWORK_GBIT_PER_S] = {{"network_gbit_per_s", "Gbit/s", REC_NUM, 1}, 1, 1e-3, 1e6},
    [HW_NETWORK_LATENCY_US] = {{"network_latency_us", "us", REC_NUM, 2}, 1, 0, 1e6},
    [HW_SOURCE] = {{"source", "", REC_STR, 0}, 1, 0, 0},
    [HW_NETWORK_BUSBW_GBIT_PER_S] = {{"network_busbw_gbit_per_s", "Gbit/s", REC_NUM, 1}, 0, 1e-3, 1e6},
    [HW_NETWORK_SOURCE] = {{"network_source", "", REC_STR, 0}, 0, 0, 0},
};

/* Peaks are dense, per device, from 1 GFLOP/s to 1 EFLOP/s; empty: none (no such precision) or
 * unknown. A device holds at least a MiB and moves at least a MB/s. */
const schema_col dev_schema[DV_NCOLS] = {
    [DV_DEVICE] = {{"device", "", REC_STR, 0}, 1, 0, 0},
    [DV_VENDOR] = {{"vendor", "", REC_STR, 0}, 1, 0, 0},
    [DV_WORKERS] = {{"workers", "", REC_NUM, 0}, 1, 1, 64},
    [DV_FP32_TFLOPS] = {{"fp32_tflops", "TFLOP/s", REC_NUM, 1}, 1, 1e-3, 1e6},
    [DV_TF32_TFLOPS] = {{"tf32_tflops", "TFLOP/s", REC_NUM, 1}, 1, 1e-3, 1e6},
    [DV_BF16_TFLOPS] = {{"bf16_tflops", "TFLOP/s", REC_NUM, 1}, 1, 1e-3, 1e6},
    [DV_FP16_TFLOPS] = {{"fp16_tflops", "TFLOP/s", REC_NUM, 1}, 1, 1e-3, 1e6},
    [DV_FP8_TFLOPS] = {{"fp8_tflops", "TFLOP/s", REC_NUM, 1}, 1, 1e-3, 1e6},
    [DV_HBM_GIB] = {{"hbm_gib", "GiB", REC_NUM, 1}, 1, 1e-3, 1e6},
    [DV_HBM_GB_PER_S] = {{"hbm_gb_per_s", "GB/s", REC_NUM, 1}, 1, 1e-3, 1e6},
    [DV_LINK_GB_PER_S] = {{"link_gb_per_s", "GB/s", REC_NUM, 1}, 1, 1e-3, 1e6},
    [DV_SCALEUP_DOMAIN] = {{"scaleup_domain", "", REC_NUM, 0}, 1, 1, 1 << 20},
    [DV_GEMM_EFF] = {{"gemm_eff", "", REC_NUM, 2}, 1, 0.01, 1},
    [DV_ATTN_EFF] = {{"attn_eff", "", REC_NUM, 2}, 1, 0.01, 1},
    [DV_MEM_EFF] = {{"mem_eff", "", REC_NUM, 2}, 1, 0.01, 1},
    [DV_LAUNCH_US] = {{"launch_us", "us", REC_NUM, 1}, 1, 0, 1e4},
    [DV_NODE_NET_GBPS] = {{"node_net_gbps", "Gbit/s", REC_NUM, 0}, 1, 1e-3, 1e7},
    [DV_MODEL_SOURCE] = {{"model_source", "", REC_STR, 0}, 1, 0, 0},
    [DV_SOURCE] = {{"source", "", REC_STR, 0}, 1, 0, 0},
    [DV_FAMILY] = {{"family", "", REC_STR, 0}, 1, 0, 0},
    /* the kernel figures (report/formats/devices.h): fp8 GEMMs' share of the FP8 peak, the attention
     * curve E s / (s + s_half), the link's achieved share and its latency per ring step */
    [DV_FP8_GEMM_EFF] = {{"fp8_gemm_eff", "", REC_NUM, 2}, 1, 0.01, 1},
    [DV_ATTN_EFF_MAX] = {{"attn_eff_max", "", REC_NUM, 3}, 1, 0.01, 1},
    [DV_ATTN_S_HALF] = {{"attn_s_half", "tokens", REC_NUM, 0}, 1, 0, 1e7},
    [DV_LINK_EFF] = {{"link_eff", "", REC_NUM, 2}, 1, 0.01, 2},
    [DV_LINK_LATENCY_US] = {{"link_latency_us", "us", REC_NUM, 1}, 1, 0, 1e4},
    [DV_EFF_SOURCE] = {{"eff_source", "", REC_STR, 0}, 1, 0, 0},
    /* the GEMM shape factor's half dimension h of f(x) = x / (x + h) (report/predict/stepmodel.h) */
    [DV_GEMM_HALF_DIM] = {{"gemm_half_dim", "", REC_NUM, 0}, 1, 1, 1e5},
};

const schema_col price_schema[PR_NCOLS] = {
    [PR_PROVIDER] = {{"provider", "", REC_STR, 0}, 1, 0, 0},
    [PR_INSTANCE_TYPE] = {{"instance_type", "", REC_STR, 0}, 1, 0, 0},
    [PR_REGION] = {{"region", "", REC_STR, 0}, 1, 0, 0},
    [PR_OPTION] = {{"pricing_option", "", REC_STR, 0}, 1, 0, 0},
    /* a price of 0 or less would make tokens/$ infinite or negative */
    [PR_USD_PER_HOUR] = {{"usd_per_hour", "$/h", REC_NUM, 4}, 1, 1e-6, 1e6},
    [PR_AS_OF] = {{"as_of", "", REC_STR, 0}, 1, 0, 0},
    [PR_SOURCE] = {{"source", "", REC_STR, 0}, 1, 0, 0},
};

const schema_col model_schema[MD_NCOLS] = {
    [MD_NAME] = {{"name", "", REC_STR, 0}, 1, 0, 0},
    [MD_FAMILY] = {{"family", "", REC_STR, 0}, 1, 0, 0},
    [MD_LAYERS] = {{"layers", "", REC_NUM, 0}, 1, 1, 1000},
    [MD_D_MODEL] = {{"d_model", "", REC_NUM, 0}, 1, 1, 131072},
    [MD_HEADS] = {{"heads", "", REC_NUM, 0}, 1, 1, 4096},
    [MD_VOCAB] = {{"vocab", "", REC_NUM, 0}, 1, 1, 10000000},
    [MD_ROTARY_PCT] = {{"rotary_pct", "", REC_NUM, 2}, 1, 0, 1},
    [MD_ROTARY_BASE] = {{"rotary_base", "", REC_NUM, 0}, 1, 1, 1e12},
    [MD_PARALLEL_RESIDUAL] = {{"parallel_residual", "", REC_STR, 0}, 1, 0, 0},
    [MD_TIED_EMBEDDINGS] = {{"tied_embeddings", "", REC_STR, 0}, 1, 0, 0},
    [MD_POS_EMB] = {{"pos_emb", "", REC_STR, 0}, 1, 0, 0},
    [MD_MAX_SEQ_LEN] = {{"max_seq_len", "", REC_NUM, 0}, 1, 1, CB_MAX_SEQ_LEN},
    [MD_SOURCE] = {{"source", "", REC_STR, 0}, 1, 0, 0},
    [MD_NORM] = {{"norm", "", REC_STR, 0}, 0, 0, 0},
    [MD_NORM_EPS] = {{"norm_eps", "", REC_NUM, 0}, 0, 1e-12, 0.1},
    [MD_NORM_BIAS] = {{"norm_bias", "", REC_STR, 0}, 0, 0, 0},
    [MD_MLP] = {{"mlp", "", REC_STR, 0}, 0, 0, 0},
    [MD_FFN_DIM] = {{"ffn_dim", "", REC_NUM, 0}, 0, 1, 1048576},
    [MD_KV_HEADS] = {{"kv_heads", "", REC_NUM, 0}, 0, 1, 4096},
    [MD_ROTARY_STYLE] = {{"rotary_style", "", REC_STR, 0}, 0, 0, 0},
    [MD_ATTN_BIAS] = {{"attn_bias", "", REC_STR, 0}, 0, 0, 0},
    [MD_MLP_BIAS] = {{"mlp_bias", "", REC_STR, 0}, 0, 0, 0},
    [MD_LM_HEAD_BIAS] = {{"lm_head_bias", "", REC_STR, 0}, 0, 0, 0},
    [MD_SHARED_NORM] = {{"shared_norm", "", REC_STR, 0}, 0, 0, 0},
};

const char *const model_families[MD_NFAMILIES] = {"pythia", "neox", "gpt3", "llama2", "gpt-j", "mpt"};
const char *const model_norms[2] = {"layernorm", "rmsnorm"};
const char *const model_mlps[2] = {"gelu", "swiglu"};
const char *const model_pos_embs[3] = {"rotary", "learned", "alibi"};
const char *const model_rotary_styles[2] = {"neox", "gptj"};

const schema_col blas_core_schema[BC_NCOLS] = {
    [BC_CORE] = {{"core", "", REC_STR, 0}, 1, 0, 0},
    [BC_REQUIRES] = {{"requires", "", REC_STR, 0}, 1, 0, 0},
    [BC_NOTE] = {{"note", "", REC_STR, 0}, 0, 0, 0},
};

const rec_col step_log_cols[SL_NCOLS] = {
    [SL_STEP] = {"step", "", REC_NUM, 0},           [SL_LOSS] = {"loss", "nats", REC_NUM, 4},
    [SL_GNORM] = {"grad_norm", "", REC_NUM, 4},     [SL_LR] = {"lr", "", REC_NUM, 7},
    [SL_MS] = {"ms", "ms", REC_NUM, 1},             [SL_TOKS] = {"tokens_per_s", "tok/s", REC_NUM, 1},
    [SL_SEQS] = {"seq_per_s", "seq/s", REC_NUM, 3}, [SL_MFU] = {"mfu", "%", REC_NUM, 1},
    [SL_HFU] = {"hfu", "%", REC_NUM, 1},            [SL_COMM] = {"comm_ms", "ms", REC_NUM, 1},
    [SL_EXPOSED] = {"exposed_comm_ms", "ms", REC_NUM, 1},
};

const rec_col mm_cols[MM_NCOLS] = {
    [MM_OP] = {"op", "", REC_STR, 0},           [MM_PHASE] = {"phase", "", REC_STR, 0},
    [MM_N] = {"n", "", REC_NUM, 0},             [MM_K] = {"k", "", REC_NUM, 0},
    [MM_M] = {"m", "", REC_NUM, 0},             [MM_COUNT] = {"count", "per step", REC_NUM, 0},
    [MM_GF_MED] = {"gflops_median", "GFLOP/s", REC_NUM, 1}, [MM_GF_MIN] = {"gflops_min", "GFLOP/s", REC_NUM, 1},
    [MM_GF_MAX] = {"gflops_max", "GFLOP/s", REC_NUM, 1},    [MM_CV] = {"cv_pct", "%", REC_NUM, 1},
    [MM_MS] = {"ms_median", "ms", REC_NUM, 3},  [MM_PCT] = {"pct_of_peak", "%", REC_NUM, 1},
    [MM_STEP_MS] = {"step_ms", "ms", REC_NUM, 2},
    /* operand precision (fp32, or bf16 with fp32 accumulation and output), the library, the
     * kernel it ran (oneDNN's implementation name, or cblas_sgemm), oneDNN's ISA level or
     * OpenBLAS's kernel set, and the once-per-optimizer-step reorder of a packed weight */
    [MM_DTYPE] = {"dtype", "", REC_STR, 0},     [MM_BACKEND] = {"backend", "", REC_STR, 0},
    [MM_IMPL] = {"impl", "", REC_STR, 0},       [MM_ISA] = {"isa", "", REC_STR, 0},
    [MM_PACK_MS] = {"pack_ms", "ms", REC_NUM, 3},
};

const rec_col rb_cols[RB_NCOLS] = {
    {"model", "", REC_STR, 0},      {"variant", "", REC_STR, 0},         {"direction", "", REC_STR, 0},
    {"cache", "", REC_STR, 0},      {"dtype", "", REC_STR, 0},
    {"tokens", "", REC_NUM, 0},     {"heads", "", REC_NUM, 0},           {"head_dim", "", REC_NUM, 0},
    {"rotary_dims", "", REC_NUM, 0}, {"ns_per_token_median", "ns", REC_NUM, 2},
    {"ns_per_token_min", "ns", REC_NUM, 2}, {"ns_per_token_max", "ns", REC_NUM, 2}, {"cv_pct", "%", REC_NUM, 1},
    {"bytes_per_token", "B", REC_NUM, 0}, {"gbps_median", "GB/s", REC_NUM, 2}, {"pct_of_copy_bw", "%", REC_NUM, 1},
    {"speedup_vs_reference", "x", REC_NUM, 2},
};

const rec_col peak_cols[PK_NCOLS] = {
    {"probe", "", REC_STR, 0},          {"threads", "", REC_NUM, 0},       {"isa", "", REC_STR, 0},
    {"sgemm_core", "", REC_STR, 0},     {"gflops_median", "GFLOP/s", REC_NUM, 1},
    {"gflops_min", "GFLOP/s", REC_NUM, 1}, {"gflops_max", "GFLOP/s", REC_NUM, 1},
    {"gbps_median", "GB/s", REC_NUM, 2}, {"gbps_min", "GB/s", REC_NUM, 2},   {"gbps_max", "GB/s", REC_NUM, 2},
    {"cv_pct", "%", REC_NUM, 1},        {"pct_of_fma_peak", "%", REC_NUM, 1}, {"array_mib", "MiB", REC_NUM, 0},
    {"mfu_peak", "", REC_STR, 0}, /* "fp32" / "bf16": the row MFU of that precision is measured against */
};

const rec_col allreduce_cols[AR_NCOLS] = {
    [AR_OP] = {"op", "", REC_STR, 0},
    [AR_RANKS] = {"ranks", "", REC_NUM, 0},
    [AR_SIZE_BYTES] = {"size_bytes", "B", REC_NUM, 0},
    [AR_COUNT] = {"count", "floats", REC_NUM, 0},
    [AR_T_MED] = {"time_us_median", "us", REC_NUM, 2},
    [AR_T_MIN] = {"time_us_min", "us", REC_NUM, 2},
    [AR_T_MAX] = {"time_us_max", "us", REC_NUM, 2},
    [AR_ALGBW] = {"algbw_gbps", "GB/s", REC_NUM, 3},
    [AR_BUSBW] = {"busbw_gbps", "GB/s", REC_NUM, 3},
    [AR_CHECK] = {"check", "", REC_STR, 0},
};
const char *const allreduce_ops[AR_NOPS] = {
    [AR_OP_ALLREDUCE] = "allreduce", [AR_OP_REDUCE_SCATTER] = "reduce_scatter", [AR_OP_ALLGATHER] = "allgather"};

const char *const machine_cols[MC_NCOLS] = {
    [MC_CPU_MODEL] = "cpu_model",       [MC_CORES] = "cores",         [MC_OMP_THREADS] = "omp_threads",
    [MC_BLAS_THREADS] = "blas_threads", [MC_BLAS_CORE] = "blas_core", [MC_BLAS_CORE_ENV] = "blas_core_env",
    [MC_BLAS_CORE_CHOICE] = "blas_core_choice", [MC_OMP_WAIT_POLICY] = "omp_wait_policy", [MC_CFLAGS] = "cflags",
    [MC_GIT_REV] = "git_rev",           [MC_DATE_UTC] = "date_utc",
};
