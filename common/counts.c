/* counts.c: what a model configuration counts to: its parameters (the tensors of common/params.h's
 * table), its FLOPs per token, the MFU of a throughput and whether a throughput is possible.
 * Declared in common/presets.h, beside the configuration they count. */
#include <math.h>
#include <stdio.h>

#include "err.h"
#include "params.h"
#include "presets.h"

/* ---- parameter counts: the tensors of common/params.h's table ---- */

/* Elements of the tensors of role `role` (-1: any), the per-layer ones only when `layers_only`:
 * one layer's (`one_layer`) or the whole model's. */
static size_t params_sum(const model_config *c, int layers_only, int role, int one_layer)
{
    size_t n = 0, r, cols;
    for (int k = 0; k < P_COUNT; k++) {
        if ((layers_only && !param_per_layer(k)) || (role >= 0 && (int)param_table[k].role != role)) continue;
        param_shape(c, k, &r, &cols);
        n += one_layer ? r * cols : param_size(c, k);
    }
    return n;
}

/* One layer's matrices (the per-layer PARAM_MATRIX tensors): QKV (NH + 2 KVH) HS x C, the
 * attention output C x C, the MLP's first matrix (model_mlp_in_rows x C) and its output C x ffn. */
double model_layer_matmul_params(const model_config *c) { return (double)params_sum(c, 1, PARAM_MATRIX, 1); }

/* The per-layer tensors (what Kaplan et al. call non-embedding; the final norm and the output
 * layer sit with the embeddings, as costbench has always counted them). */
double model_params_non_embedding(const model_config *c) { return (double)params_sum(c, 1, -1, 0); }

/* Every tensor. Exact against the tensors of the Hugging Face checkpoints: e.g. llama2-7b
 * 6,738,415,616 and gpt-j-6b 6,050,882,784 (GPTJForCausalLM's tensors; the model card's
 * 6,053,381,344 is mesh-transformer-jax's own count). */
double model_params_total(const model_config *c) { return (double)params_sum(c, 0, -1, 0); }

/* ---- FLOPs per token ----
 * Model FLOPs (PaLM, Chowdhery et al. 2022, appendix B; Narayanan et al. 2021 for the matmul
 * count): 6 N + 12 L C T, N = every matmul weight including the output projection (counted even
 * when tied: the logits matmul is done either way): per layer Q, K, V (grouped-query attention's
 * K and V are KVH HS wide, not C), the attention output, and the MLP (GELU: 2 C ffn; SwiGLU:
 * 3 C ffn). 6 = forward 2 + backward 4 FLOPs per weight and token. 12 L C T is the attention
 * scores and the weighted values (QK^T and AV, 2 x 2 C T FLOPs a token forward, x 3 with the
 * backward) over the full T x T square: causal masking is not discounted (llm.c's 6 L C T is);
 * C = NH HS, the query heads, so grouped-query attention leaves this term alone. Biases, norms,
 * activations, softmax, rotary and ALiBi are not counted (PaLM's convention). */
double model_flops_per_token(const model_config *c, int T)
{
    double N = c->L * model_layer_matmul_params(c) + (double)c->V * c->C; /* matmul weights + output projection */
    return 6.0 * N + 12.0 * c->L * (double)c->C * T;
}

double mfu_pct(double flops_per_token, double tokens_per_s, double peak_flops)
{
    if (!(peak_flops > 0) || !isfinite(peak_flops)) return NAN;
    return 100.0 * flops_per_token * tokens_per_s / peak_flops;
}

int throughput_why(const model_config *cfg, long seq_len, double seq_per_s, double peak_flops, const char *peak_name,
                   char *why, size_t n)
{
    if (seq_len > cfg->max_T)
        return snprintf(why, n, "seq_len %ld exceeds %s's max_seq_len %d", seq_len, cfg->name, cfg->max_T), -1;
    double mfu = mfu_pct(model_flops_per_token(cfg, (int)seq_len), seq_per_s * (double)seq_len, peak_flops);
    if (isfinite(mfu) && mfu > 100.0)
        return snprintf(why, n, "%.4g seq/s of %s at seq_len %ld needs %.3g%% of %s: impossible", seq_per_s, cfg->name,
                        seq_len, mfu, peak_name),
               -1;
    return 0;
}

int throughput_check(const model_config *cfg, long seq_len, double seq_per_s, double peak_flops, const char *peak_name,
                     const char *what)
{
    char why[512];
    if (throughput_why(cfg, seq_len, seq_per_s, peak_flops, peak_name, why, sizeof why) != 0)
        return err_usage("%s: %s", what, why);
    return 0;
}

double model_hardware_flops_per_token(const model_config *c, int T, int recompute)
{
    double f = model_flops_per_token(c, T);
    /* one more forward of the layers: 2 FLOPs per layer matmul weight + 4 L C T of attention */
    if (recompute) f += 2.0 * c->L * model_layer_matmul_params(c) + 4.0 * c->L * (double)c->C * T;
    return f;
}

