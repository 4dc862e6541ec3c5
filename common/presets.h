/* presets.h: model architectures (data/models.csv) by name, their parameter counts and FLOPs
 * per token: plain data and arithmetic shared by the model and the report (which never links
 * the model). */
#ifndef CB_PRESETS_H
#define CB_PRESETS_H

#include <stddef.h>

#include "precision.h" /* train_precision: the training precisions */

/* Architecture choices (data/models.csv's columns norm, mlp, pos_emb, rotary_style). */
typedef enum { NORM_LAYERNORM = 0, NORM_RMSNORM = 1 } norm_kind;
typedef enum { MLP_GELU = 0, MLP_SWIGLU = 1 } mlp_kind;
typedef enum { POS_ROTARY = 0, POS_LEARNED = 1, POS_ALIBI = 2 } pos_kind;
typedef enum { ROPE_NEOX = 0, ROPE_GPTJ = 1 } rope_style;

typedef struct {
    char name[48];
    char family[16];     /* pythia, neox, gpt3, llama2, gpt-j, mpt */
    int L;               /* layers */
    int C;               /* d_model */
    int NH;              /* query heads */
    int HS;              /* head size C / NH */
    int KVH;             /* key/value heads (0: NH, multi-head); fewer: grouped-query; NH % KVH == 0 */
    int ffn;             /* MLP intermediate width (0: 4 C); SwiGLU's gate and up each have ffn rows */
    int V;               /* vocabulary, padded */
    int max_T;           /* max sequence length */
    norm_kind norm;      /* LayerNorm or RMSNorm */
    double norm_eps;     /* 0: 1e-5 */
    int norm_nobias;     /* a LayerNorm without bias (MPT); RMSNorm has none either way */
    mlp_kind mlp;        /* GELU (exact) MLP, or SwiGLU: down(silu(gate x) * up x) */
    pos_kind pos;        /* rotary, learned absolute positions, or ALiBi biases */
    double rotary_pct;   /* share of each head's dims rotated (0: none) */
    double rotary_base;
    rope_style rope;     /* rotate_half pairs (i, i + r/2), or GPT-J's interleaved pairs (2i, 2i+1) */
    int attn_nobias;     /* no biases on the QKV projection and the attention output */
    int mlp_nobias;      /* no biases on the MLP's linears */
    int lm_head_bias;    /* a bias on the output projection (GPT-J) */
    int parallel_residual;
    int shared_norm;     /* parallel residual with one norm feeding attention and MLP (GPT-J) */
    int tied_embeddings;
    char source[256];
} model_config;
/* A config zeroed and given only the GPT-NeoX fields means GPT-NeoX: every new field's zero is
 * GPT-NeoX's choice. These give the effective values. */
static inline int model_kv_heads(const model_config *c) { return c->KVH > 0 ? c->KVH : c->NH; }
static inline int model_ffn(const model_config *c) { return c->ffn > 0 ? c->ffn : 4 * c->C; }
static inline double model_norm_eps(const model_config *c) { return c->norm_eps > 0 ? c->norm_eps : 1e-5; }
/* Rows of the MLP's first matrix: ffn (GELU), or 2 ffn (SwiGLU: gate, then up). */
static inline int model_mlp_in_rows(const model_config *c)
{
    return c->mlp == MLP_SWIGLU ? 2 * model_ffn(c) : model_ffn(c);
}
/* Rows of the fused QKV projection: (NH + 2 KVH) HS, the query heads and the key and value heads. */
static inline int model_qkv_rows(const model_config *c) { return (c->NH + 2 * model_kv_heads(c)) * c->HS; }
/* The dimensions of a head that rotary rotates: floor(HS x pct) rounded down to even, within
 * [0, HS]. The one statement of the rule (the kernels, the model, the benchmarks, the op list). */
int rotary_dims_of(int HS, double rotary_pct);
/* A config's rotated dimensions: rotary_dims_of(HS, rotary_pct) with rotary positions, else 0. */
int model_rotary_dims(const model_config *c);
/* MPT's alibi_bias_max: head h's ALiBi slope is 2^(-8 (h + 1) / NH') (kernels/attention.h). */
#define MODEL_ALIBI_BIAS_MAX 8.0

/* Loads every preset of `path`. Returns 0 or CB_EFAIL (file:line error printed). */
int model_presets_load(const char *path, model_config **out, int *n);
/* Finds `name` in data/models.csv (machine_data_file()). Unknown name: CB_EUSAGE with the list.
 * A broken file: CB_EFAIL. */
int model_preset_find(const char *name, model_config *out);
/* The same in the presets file `models_path` (a models.csv of the same columns; NULL: data/models.csv). */
int model_preset_find_in(const char *models_path, const char *name, model_config *out);

/* The rules between a config's fields that no single column can check: heads % kv_heads == 0;
 * SwiGLU needs ffn_dim, a positive multiple of 8; a LayerNorm's epsilon is 1e-5 (the kernel's);
 * ALiBi needs rotary_pct 0; rotary positions rotate at least 2 of a head's dimensions; a shared
 * norm needs the parallel residual. 0, or -1 with the data/models.csv column at fault in *column
 * and the reason (one clause, no file:line) in why. */
int model_config_check(const model_config *c, const char **column, char *why, size_t n);
/* The command-line overrides of a preset (0: the preset's): --layers --d-model --heads --kv-heads
 * --ffn --vocab, and --max-seq-len. */
typedef struct {
    long layers, dmodel, heads, kv_heads, ffn, vocab;
    long max_seq_len;
} model_overrides;
/* Applies them (a multi-head preset stays multi-head under --heads; --d-model without --ffn keeps
 * the preset's ffn / d_model ratio, a SwiGLU width rounded up to a multiple of 8; a width the heads
 * do not divide names the flag given), checks the result with model_config_check and names it
 * PRESET-custom when the architecture changed: any shape override, or a --max-seq-len that changes
 * a learned-position model's position rows (for rotary and ALiBi presets the limit alone keeps the
 * preset's name: the weights are the same). Returns 0, or CB_EUSAGE after one line naming the flag. */
int model_config_override(model_config *cfg, const model_overrides *ov);

/* Counts (common/counts.c). Parameters, summed over common/params.h's tensors: total = every
 * tensor (token embeddings, learned positions, the layers, the final norm, an untied output layer
 * and its bias); non-embedding = the per-layer tensors (GPT-NeoX: L x (12 C^2 + 13 C)). */
double model_params_total(const model_config *cfg);
double model_params_non_embedding(const model_config *cfg);
/* One layer's matrices: (NH + 2 KVH) HS C + C^2 + (2, or 3 for SwiGLU) C ffn. */
double model_layer_matmul_params(const model_config *cfg);
/* FLOPs per token: model (PaLM appendix B: 6N + 12 L C T, N = every matmul weight including the
 * output projection) and hardware (adds the recomputed forward). */
double model_flops_per_token(const model_config *cfg, int T);
double model_hardware_flops_per_token(const model_config *cfg, int T, int recompute);

/* The architecture in one line, as `costbench train` prints it: "L=6 C=512 heads=8 kv_heads=8
 * ffn=2048 V=50304, LayerNorm, GELU MLP, rotary rotary_dims=16, parallel residual, untied
 * embeddings" (the norm, the MLP, the positions with GPT-J's pairing, the residual with a shared
 * norm, the embeddings). Truncated to n bytes. */
void model_describe(const model_config *cfg, char *buf, size_t n);

/* Model FLOPs utilisation in %: flops_per_token x tokens_per_s / peak_flops (PaLM appendix B);
 * NaN when the peak is unknown (not a positive number). The one definition of MFU (and of HFU
 * with hardware FLOPs per token). */
double mfu_pct(double flops_per_token, double tokens_per_s, double peak_flops);

/* The rules a throughput obeys wherever one enters (train, scale, report): seq_len within the
 * model's max_seq_len, and the model FLOP/s it implies at most `peak_flops` (the peak of all the
 * hardware it ran on; unchecked when NaN). `what` names where the figure came from (a flag, or
 * "file:line"), `peak_name` the peak ("the data-sheet dense BF16 peak of 4 x trn1.32xlarge").
 * Returns 0, or CB_EUSAGE after one error line. */
int throughput_check(const model_config *cfg, long seq_len, double seq_per_s, double peak_flops, const char *peak_name,
                     const char *what);
/* The same rules, printing nothing: 0, or -1 with why (what throughput_check prints after
 * "what: "), for a caller that reports a refused figure instead of stopping on it. */
int throughput_why(const model_config *cfg, long seq_len, double seq_per_s, double peak_flops, const char *peak_name,
                   char *why, size_t n);

#endif
