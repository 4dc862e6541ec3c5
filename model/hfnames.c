#include "hfnames.h"

#include <stdio.h>
#include <string.h>

typedef enum { FAM_NEOX, FAM_LLAMA, FAM_GPTJ, FAM_MPT } hf_family;

/* Naming by family (the GPT-3 presets, with no Hugging Face class of their own, take GPT-NeoX's). */
static hf_family family_of(const model_config *c)
{
    if (!strcmp(c->family, "llama2")) return FAM_LLAMA;
    if (!strcmp(c->family, "gpt-j")) return FAM_GPTJ;
    if (!strcmp(c->family, "mpt")) return FAM_MPT;
    return FAM_NEOX;
}

typedef struct {
    const char *layer_fmt;        /* per-layer prefix */
    const char *global[P_COUNT];  /* model-wide tensors */
    const char *layer[P_COUNT];   /* per-layer tensors (QKV and FC: see pieces) */
    const char *qkv[3];           /* separate q, k, v projections (NULL: one fused tensor) */
    const char *fc[2];            /* separate gate and up projections (NULL: one tensor) */
} hf_names;

static const hf_names NAMES[] = {
    [FAM_NEOX] = {"gpt_neox.layers.%d.",
                  {[P_WTE] = "gpt_neox.embed_in", [P_WPE] = "gpt_neox.embed_pos",
                          [P_LNFW] = "gpt_neox.final_layer_norm",
                   [P_LNFB] = "gpt_neox.final_layer_norm", [P_UNEMBED] = "embed_out", [P_UNEMBEDB] = "embed_out"},
                  {[P_LN1W] = "input_layernorm", [P_LN1B] = "input_layernorm", [P_QKVW] = "attention.query_key_value",
                   [P_QKVB] = "attention.query_key_value", [P_ATTPROJW] = "attention.dense",
                           [P_ATTPROJB] = "attention.dense",
                   [P_LN2W] = "post_attention_layernorm", [P_LN2B] = "post_attention_layernorm",
                   [P_FCW] = "mlp.dense_h_to_4h", [P_FCB] = "mlp.dense_h_to_4h", [P_FCPROJW] = "mlp.dense_4h_to_h",
                   [P_FCPROJB] = "mlp.dense_4h_to_h"},
                  {NULL, NULL, NULL},
                  {NULL, NULL}},
    [FAM_LLAMA] = {"model.layers.%d.",
                   {[P_WTE] = "model.embed_tokens", [P_WPE] = "model.embed_positions", [P_LNFW] = "model.norm",
                    [P_LNFB] = "model.norm", [P_UNEMBED] = "lm_head", [P_UNEMBEDB] = "lm_head"},
                   {[P_LN1W] = "input_layernorm", [P_LN1B] = "input_layernorm", [P_ATTPROJW] = "self_attn.o_proj",
                    [P_ATTPROJB] = "self_attn.o_proj", [P_LN2W] = "post_attention_layernorm",
                    [P_LN2B] = "post_attention_layernorm", [P_FCW] = "mlp.up_proj", [P_FCB] = "mlp.up_proj",
                    [P_FCPROJW] = "mlp.down_proj", [P_FCPROJB] = "mlp.down_proj"},
                   {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
                   {"mlp.gate_proj", "mlp.up_proj"}},
    [FAM_GPTJ] = {"transformer.h.%d.",
                  {[P_WTE] = "transformer.wte", [P_WPE] = "transformer.wpe", [P_LNFW] = "transformer.ln_f",
                   [P_LNFB] = "transformer.ln_f", [P_UNEMBED] = "lm_head", [P_UNEMBEDB] = "lm_head"},
                  {[P_LN1W] = "ln_1", [P_LN1B] = "ln_1", [P_ATTPROJW] = "attn.out_proj", [P_ATTPROJB] = "attn.out_proj",
                   [P_LN2W] = "ln_2", [P_LN2B] = "ln_2", [P_FCW] = "mlp.fc_in", [P_FCB] = "mlp.fc_in",
                   [P_FCPROJW] = "mlp.fc_out", [P_FCPROJB] = "mlp.fc_out"},
                  {"attn.q_proj", "attn.k_proj", "attn.v_proj"},
                  {NULL, NULL}},
    [FAM_MPT] = {"transformer.blocks.%d.",
                 {[P_WTE] = "transformer.wte", [P_WPE] = "transformer.wpe", [P_LNFW] = "transformer.norm_f",
                  [P_LNFB] = "transformer.norm_f", [P_UNEMBED] = "lm_head", [P_UNEMBEDB] = "lm_head"},
                 {[P_LN1W] = "norm_1", [P_LN1B] = "norm_1", [P_QKVW] = "attn.Wqkv", [P_QKVB] = "attn.Wqkv",
                  [P_ATTPROJW] = "attn.out_proj", [P_ATTPROJB] = "attn.out_proj", [P_LN2W] = "norm_2",
                          [P_LN2B] = "norm_2",
                  [P_FCW] = "ffn.up_proj", [P_FCB] = "ffn.up_proj", [P_FCPROJW] = "ffn.down_proj",
                  [P_FCPROJB] = "ffn.down_proj"},
                 {NULL, NULL, NULL},
                 {NULL, NULL}},
};

/* Columns of one row of tensor k (the input width of a matrix or an embedding; 1 for vectors). */
static size_t cols_of(const gpt_model *m, int k)
{
    size_t rows, cols;
    param_shape(&m->cfg, k, &rows, &cols);
    return param_is_weight(k) ? cols : 1;
}

static void set_piece(hf_piece *p, const char *prefix, const char *base, int bias, hf_map map, size_t row0, size_t rows,
                      size_t cols)
{
    snprintf(p->name, sizeof p->name, "%s%s.%s", prefix, base, bias ? "bias" : "weight");
    p->map = map, p->row0 = row0, p->cols = cols;
    p->ndim = cols == 1 ? 1 : 2;
    p->shape[0] = (int64_t)rows, p->shape[1] = (int64_t)cols;
}

int hf_pieces(const gpt_model *m, int k, int layer, hf_piece *out)
{
    const model_config *c = &m->cfg;
    if (m->w.sizes[k] == 0) return 0;
    const hf_names *nm = &NAMES[family_of(c)];
    const int bias = param_is_bias(k);
    const size_t cols = cols_of(m, k), rows = m->w.sizes[k] / (param_per_layer(k) ? (size_t)c->L : 1) / cols;
    char prefix[48] = "";
    if (param_per_layer(k)) snprintf(prefix, sizeof prefix, nm->layer_fmt, layer);
    if ((k == P_QKVW || k == P_QKVB) && nm->qkv[0]) {
        const size_t q = (size_t)c->NH * c->HS, kv = (size_t)model_kv_heads(c) * c->HS;
        set_piece(&out[0], prefix, nm->qkv[0], bias, HF_Q, 0, q, cols);
        set_piece(&out[1], prefix, nm->qkv[1], bias, HF_K, 0, kv, cols);
        set_piece(&out[2], prefix, nm->qkv[2], bias, HF_V, 0, kv, cols);
        return 3;
    }
    if ((k == P_FCW || k == P_FCB) && nm->fc[0] && c->mlp == MLP_SWIGLU) {
        set_piece(&out[0], prefix, nm->fc[0], bias, HF_ROWS, 0, rows / 2, cols);
        set_piece(&out[1], prefix, nm->fc[1], bias, HF_ROWS, rows / 2, rows / 2, cols);
        return 2;
    }
    const char *base = param_per_layer(k) ? nm->layer[k] : nm->global[k];
    set_piece(&out[0], prefix, base, bias,
            (k == P_QKVW || k == P_QKVB) && family_of(c) == FAM_MPT ? HF_QKV : HF_ROWS, 0,
              rows, cols);
    return 1;
}

size_t hf_row(const gpt_model *m, const hf_piece *p, size_t r)
{
    const size_t HS = (size_t)m->cfg.HS, NH = (size_t)m->cfg.NH, KVH = (size_t)model_kv_heads(&m->cfg), G = NH / KVH;
    hf_map map = p->map;
    if (map == HF_QKV) { /* [q; k; v] */
        if (r < NH * HS) map = HF_Q;
        else if (r < (NH + KVH) * HS) map = HF_K, r -= NH * HS;
        else map = HF_V, r -= (NH + KVH) * HS;
    }
    switch (map) {
    case HF_Q: {
        size_t h = r / HS;
        return (h / G) * (G + 2) * HS + (h % G) * HS + r % HS;
    }
    case HF_K: return (r / HS) * (G + 2) * HS + G * HS + r % HS;
    case HF_V: return (r / HS) * (G + 2) * HS + (G + 1) * HS + r % HS;
    default: return p->row0 + r;
    }
}

int hf_identity(const gpt_model *m, const hf_piece *p)
{
    (void)m;
    return p->map == HF_ROWS;
}

void gpt_param_name(const gpt_model *m, int k, int layer, char *buf, size_t n)
{
    hf_piece p[3];
    int np = hf_pieces(m, k, layer, p);
    if (np == 0) snprintf(buf, n, "(empty tensor %d)", k);
    else if (np == 1) snprintf(buf, n, "%s", p[0].name);
    else snprintf(buf, n, "%s (with %d more)", p[0].name, np - 1);
}
