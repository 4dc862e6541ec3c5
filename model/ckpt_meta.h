/* ckpt_meta.h: what a checkpoint's two safetensors files say besides their tensors (the
 * metadata: the model's configuration, the precision, the loop position), written and read
 * through one definition, and the checks --resume makes of a checkpoint before its tensors reach
 * the model: the model it was written for is this run's, its parts belong to one step of one
 * run, its batch shape and seed are this run's, its AdamW step count is its step's, its
 * second moments are not negative, and its first moments are within AdamW's bound
 * (ckpt_moment_bound; checked by model/checkpoint.c once both moments are loaded, and before a
 * save).
 *
 * The metadata (string values):
 *   both files       format, costbench_model (the name; not compared), one key per field of the
 *                    model's configuration that gives the tensors their meaning (the column names
 *                    of data/models.csv: family, layers, d_model, heads, kv_heads, ffn_dim, vocab,
 *                    max_seq_len, pos_emb, rotary_pct, rotary_base, rotary_style, norm, norm_eps,
 *                    norm_bias, mlp, attn_bias, mlp_bias, lm_head_bias, parallel_residual,
 *                    shared_norm, tied_embeddings: effective values, booleans 0/1), precision
 *                    (precision_name; ckpt_meta_precision reads it), step, run_id (16 hex digits)
 *   optimizer file   adam_t, seed, micro_batch, seq, accum
 * Checkpoints of older costbench versions record only layers, d_model, heads, vocab, rotary_pct,
 * parallel_residual and tied_embeddings of the model: those are compared, and one warning names
 * the fields that cannot be.
 *
 * No kernels and no model: the fuzz harness tests/fuzz/fuzz_ckpt.c links this file with the
 * safetensors reader alone. */
#ifndef CB_CKPT_META_H
#define CB_CKPT_META_H

#include <stdint.h>

#include "../common/presets.h"
#include "safetensors.h"

/* The optimizer file's tensor names: these prefixes and the weight's Hugging Face name. */
#define CKPT_EXP_AVG "exp_avg/"
#define CKPT_EXP_AVG_SQ "exp_avg_sq/"

typedef struct {
    long step;              /* steps completed */
    unsigned long long seed;
    int B, T, accum;
    uint64_t run_id;        /* identifies one training run across its resumes */
    float beta1, beta2;     /* the run's AdamW betas: the bound on the moments (ckpt_moment_bound, checked by
                             * model/checkpoint.c); 0, 0: not checked */
} ckpt_state;

/* A file's metadata as st_write takes it: kv[2i], kv[2i+1] = key, value (in buf[i]). */
enum { CKPT_META_MAX = 40 };
typedef struct {
    char buf[CKPT_META_MAX][64];
    const char *kv[2 * CKPT_META_MAX];
    int n;
} ckpt_meta;

/* The metadata of model.safetensors (optimizer 0) or optimizer.safetensors (optimizer 1, with
 * adam_t) of step st->step of a model of configuration c trained in `precision`. */
void ckpt_meta_write(ckpt_meta *ml, const model_config *c, const char *precision, const ckpt_state *st, int optimizer,
                     int adam_t);

/* The precision checkpoint file f was written in: its metadata's precision (precision_name's
 * names) into *out. Checkpoints of older costbench versions: no precision is fp32 (written before
 * precisions were recorded), and "bf16" is bf16-nearest (the name precision_name gave
 * bf16-nearest then; here it is not the --precision alias bf16 = bf16-sr). Returns 0, or -1 with
 * *out untouched for a name it does not know. */
int ckpt_meta_precision(const st_file *f, train_precision *out);

/* model.safetensors f of the step `latest` (the step DIR/latest names) for a run of model c
 * resuming from DIR: the model compared field by field (a mismatch is CB_EUSAGE naming the field,
 * both values and the flag; fields an older checkpoint does not record are named in one warning),
 * its step and run id read into *w and the step checked against `latest` (CB_EFAIL). */
int ckpt_meta_check_weights(const st_file *f, const model_config *c, const char *dir, long latest, ckpt_state *w);
/* optimizer.safetensors f of the same step: the model compared again (without the warning); its
 * step and run id those of the weights' file w (CB_EFAIL); its micro-batch, sequence length,
 * accumulation and seed those of `expect` (CB_EUSAGE); adam_t its step, the one AdamW update a
 * step that gpt_update counts (CB_EFAIL: no run can follow a wrong count; with --steps at most
 * 10^8 it cannot overflow either). *got receives the position, *adam_t the count. */
int ckpt_meta_check_optimizer(const st_file *f, const model_config *c, const char *dir, const ckpt_state *w,
                              const ckpt_state *expect, ckpt_state *got, int *adam_t);
/* Reads tensor `name` of f into dst: floats, or bf16 values when as_bf16 is set (st_read_f32 or
 * st_read_bf16: the shape checked, non-finite values refused). A second moment (a name under
 * CKPT_EXP_AVG_SQ) with a negative value is refused too, naming the file, the tensor and the
 * first such element. Returns 0 or CB_EFAIL. */
int ckpt_meta_read_tensor(const st_file *f, const char *name, void *dst, const int64_t *shape, int ndim, int as_bf16);

/* AdamW's moments from zero satisfy |m| <= k sqrt(v) element by element, whatever the gradients,
 * with k = (1 - b1) / sqrt((1 - b2) (1 - b1^2 / b2)) when b1^2 < b2 (Cauchy-Schwarz over
 * m = (1-b1) sum b1^j g_j and v = (1-b2) sum b2^j g_j^2; 1.165 at 0.9/0.95), so that an update moves
 * a weight by at most lr (k sqrt(1 - b2^t) / (1 - b1^t) + wd |w|). Returns k, or INFINITY (no
 * bound) for betas outside 0 <= b1 < 1, 0 < b2 < 1 or with b1^2 >= b2. */
double ckpt_moment_bound(double b1, double b2);
/* The elements i of m and v (n each: floats, or bf16 values when as_bf16 is set) with
 * |m_i| > k sqrt(v_i), beyond a slack for rounding (relative: 1e-3, bf16 storage 0.25; absolute
 * 1e-15, for a v that underflowed): their count, the first one's index in *first. */
size_t ckpt_moments_over(const void *m, const void *v, size_t n, int as_bf16, double k, size_t *first);

#endif
