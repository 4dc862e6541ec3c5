#include "params.h"

const param_info param_table[P_COUNT] = {
    [P_WTE] = {"wte", PARAM_EMBEDDING, 0},          [P_WPE] = {"wpe", PARAM_EMBEDDING, 0},
    [P_LN1W] = {"ln1.weight", PARAM_NORM, 1},       [P_LN1B] = {"ln1.bias", PARAM_BIAS, 1},
    [P_QKVW] = {"qkv.weight", PARAM_MATRIX, 1},     [P_QKVB] = {"qkv.bias", PARAM_BIAS, 1},
    [P_ATTPROJW] = {"attn_out.weight", PARAM_MATRIX, 1}, [P_ATTPROJB] = {"attn_out.bias", PARAM_BIAS, 1},
    [P_LN2W] = {"ln2.weight", PARAM_NORM, 1},       [P_LN2B] = {"ln2.bias", PARAM_BIAS, 1},
    [P_FCW] = {"mlp_in.weight", PARAM_MATRIX, 1},   [P_FCB] = {"mlp_in.bias", PARAM_BIAS, 1},
    [P_FCPROJW] = {"mlp_out.weight", PARAM_MATRIX, 1}, [P_FCPROJB] = {"mlp_out.bias", PARAM_BIAS, 1},
    [P_LNFW] = {"lnf.weight", PARAM_NORM, 0},       [P_LNFB] = {"lnf.bias", PARAM_BIAS, 0},
    [P_UNEMBED] = {"unembed.weight", PARAM_MATRIX, 0}, [P_UNEMBEDB] = {"unembed.bias", PARAM_BIAS, 0},
};

/* The norms have a bias: LayerNorm unless norm_nobias; RMSNorm never. */
static int norm_bias(const model_config *c) { return c->norm == NORM_LAYERNORM && !c->norm_nobias; }

/* Whether the architecture has parameter k at all. */
static int param_present(const model_config *c, int k)
{
    switch (k) {
    case P_WPE: return c->pos == POS_LEARNED;
    case P_LN1B: case P_LNFB: return norm_bias(c);
    case P_LN2W: return !c->shared_norm;
    case P_LN2B: return !c->shared_norm && norm_bias(c);
    case P_QKVB: case P_ATTPROJB: return !c->attn_nobias;
    case P_FCB: case P_FCPROJB: return !c->mlp_nobias;
    case P_UNEMBED: return !c->tied_embeddings;
    case P_UNEMBEDB: return c->lm_head_bias;
    default: return 1;
    }
}

void param_shape(const model_config *c, int k, size_t *rows, size_t *cols)
{
    const size_t C = (size_t)c->C, V = (size_t)c->V, I = (size_t)model_ffn(c), FC = (size_t)model_mlp_in_rows(c);
    const size_t QKV = (size_t)model_qkv_rows(c);
    size_t r = 1, n = C;
    switch (k) {
    case P_WTE: case P_UNEMBED: r = V; break;
    case P_WPE: r = (size_t)c->max_T; break;
    case P_QKVW: r = QKV; break;
    case P_QKVB: n = QKV; break;
    case P_ATTPROJW: r = C; break;
    case P_FCW: r = FC; break;
    case P_FCB: n = FC; break;
    case P_FCPROJW: r = C, n = I; break;
    case P_UNEMBEDB: n = V; break;
    default: break; /* the norms' weights and biases and the C-wide biases: 1 x C */
    }
    if (!param_present(c, k)) r = 0, n = 0;
    *rows = r, *cols = n;
}

size_t param_size(const model_config *c, int k)
{
    size_t r, n;
    param_shape(c, k, &r, &n);
    return r * n * (param_table[k].per_layer ? (size_t)c->L : 1);
}
