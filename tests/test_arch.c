/* The other model families through the whole model: a tiny Llama-2 (RMSNorm, SwiGLU,
 * grouped-query attention, full rotary, no biases), GPT-J (one LayerNorm feeding attention and
 * MLP in parallel, interleaved rotary on half of each head, MLP and output-layer biases) and MPT
 * (ALiBi, LayerNorm without bias, no biases, tied embeddings): the loss against a double-precision
 * reference written from the Hugging Face definitions, the whole gradient against finite
 * differences, recomputation bit for bit, bf16-mixed against fp32; Hugging Face names and layouts
 * (q/k/v and gate/up split, MPT's [q; k; v]) written and read back exactly, and the row mapping
 * worked out by hand. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/attention.h"
#include "../kernels/crossentropy.h"
#include "../kernels/gelu.h"
#include "../kernels/layernorm.h"
#include "../kernels/matmul.h"
#include "../kernels/rmsnorm.h"
#include "../kernels/swiglu.h"
#include "../model/checkpoint.h"
#include "../model/gpt.h"
#include "../model/hfnames.h"
#include "../model/safetensors.h"
#include "check.h"

typedef enum { ARCH_LLAMA, ARCH_GPTJ, ARCH_MPT } arch;
static const char *const ARCH_NAMES[] = {"llama2 (RMSNorm, SwiGLU, GQA 4/2, full rotary)",
                                         "gpt-j (shared LayerNorm, interleaved rotary, biases)",
                                         "mpt (ALiBi, LayerNorm without bias, tied)"};

static model_config arch_cfg(arch a)
{
    model_config c;
    memset(&c, 0, sizeof c);
    c.L = 2, c.C = 16, c.V = 23, c.max_T = 8, c.rotary_base = 10000;
    if (a == ARCH_LLAMA) {
        snprintf(c.family, sizeof c.family, "llama2");
        c.NH = 4, c.KVH = 2, c.HS = 4, c.ffn = 24, c.norm = NORM_RMSNORM, c.mlp = MLP_SWIGLU, c.rotary_pct = 1.0;
        c.attn_nobias = c.mlp_nobias = 1;
    } else if (a == ARCH_GPTJ) {
        snprintf(c.family, sizeof c.family, "gpt-j");
        c.NH = 2, c.HS = 8, c.ffn = 32, c.rotary_pct = 0.5, c.rope = ROPE_GPTJ, c.attn_nobias = 1, c.lm_head_bias = 1;
        c.parallel_residual = c.shared_norm = 1;
    } else {
        snprintf(c.family, sizeof c.family, "mpt");
        c.NH = 2, c.HS = 8, c.pos = POS_ALIBI, c.norm_nobias = 1, c.attn_nobias = c.mlp_nobias = 1,
        c.tied_embeddings = 1;
    }
    snprintf(c.name, sizeof c.name, "tiny-%s", c.family);
    return c;
}

/* ---- double-precision reference forward over a double copy of the parameter slab ---- */

static const double *pt(const gpt_model *m, const double *P, int k, size_t at)
{
    return m->w.sizes[k] ? P + m->w.offsets[k] + at : NULL;
}

static void norm_ref(const gpt_model *m, double *out, const double *x, const double *w, const double *b, int N)
{
    if (m->cfg.norm == NORM_RMSNORM) rmsnorm_forward_ref(out, x, w, N, m->cfg.C, model_norm_eps(&m->cfg));
    else layernorm_forward_ref(out, x, w, b, N, m->cfg.C);
}

/* Rotary on every q and k head of the group layout, at position t of each token. */
static void rope_ref(const gpt_model *m, double *qkv, int BT, size_t QKV)
{
    const model_config *c = &m->cfg;
    const int r = m->rotary_dims, HS = c->HS, KVH = model_kv_heads(c), G = c->NH / KVH;
    for (int i = 0; i < BT && r > 0; i++)
        for (int g = 0; g < KVH; g++)
            for (int j = 0; j <= G; j++) { /* G query heads, then k */
                double *v = qkv + (size_t)i * QKV + (size_t)g * (G + 2) * HS + (size_t)j * HS;
                for (int d = 0; d < r / 2; d++) {
                    double ang = (i % m->T) * pow(c->rotary_base, -2.0 * d / r);
                    int ia = c->rope == ROPE_GPTJ ? 2 * d : d, ib = c->rope == ROPE_GPTJ ? 2 * d + 1 : d + r / 2;
                    double a = v[ia], b = v[ib];
                    v[ia] = a * cos(ang) - b * sin(ang);
                    v[ib] = b * cos(ang) + a * sin(ang);
                }
            }
}

static double arch_ref(void *p, const double *P)
{
    const gpt_model *m = p;
    const model_config *c = &m->cfg;
    const size_t *off = m->w.offsets;
    const int B = m->B, T = m->T, BT = B * T, C = c->C, V = c->V;
    const size_t I = (size_t)model_ffn(c), FC = (c->mlp == MLP_SWIGLU ? 2 : 1) * I;
    const size_t QKV = (size_t)(c->NH + 2 * model_kv_heads(c)) * c->HS;
    double *x = calloc((size_t)BT * C, 8), *ln = calloc((size_t)BT * C, 8), *ln2 = calloc((size_t)BT * C, 8);
    double *qkv = calloc((size_t)BT * QKV, 8), *atty = calloc((size_t)BT * C, 8), *ap = calloc((size_t)BT * C, 8);
    double *res2 = calloc((size_t)BT * C, 8), *h = calloc((size_t)BT * FC, 8), *g = calloc((size_t)BT * I, 8);
    double *mo = calloc((size_t)BT * C, 8), *logits = calloc((size_t)BT * V, 8), *losses = calloc((size_t)BT, 8);
    float alibi[64];
    if (c->pos == POS_ALIBI) attention_alibi_slopes(alibi, c->NH, MODEL_ALIBI_BIAS_MAX);
    attn_shape as = {B, T, c->NH, model_kv_heads(c), c->HS, c->pos == POS_ALIBI ? alibi : NULL};
    const double *wte = P + off[P_WTE], *unembed = c->tied_embeddings ? wte : P + off[P_UNEMBED];
    for (int i = 0; i < BT; i++)
        for (int k = 0; k < C; k++) x[i * C + k] = wte[(size_t)m->inputs[i] * C + k];
    for (int l = 0; l < c->L; l++) {
        size_t o = (size_t)l;
        norm_ref(m, ln, x, pt(m, P, P_LN1W, o * C), pt(m, P, P_LN1B, o * C), BT);
        matmul_forward_ref(qkv, ln, P + off[P_QKVW] + o * QKV * C, pt(m, P, P_QKVB, o * QKV), BT, C, (int)QKV);
        rope_ref(m, qkv, BT, QKV);
        attention_forward_ref_gqa(atty, qkv, &as);
        matmul_forward_ref(ap, atty, P + off[P_ATTPROJW] + o * C * C, pt(m, P, P_ATTPROJB, o * C), BT, C, C);
        const double *ln2_in = x;
        if (!c->parallel_residual) {
            for (int i = 0; i < BT * C; i++) res2[i] = x[i] + ap[i];
            ln2_in = res2;
        }
        if (!c->shared_norm) norm_ref(m, ln2, ln2_in, pt(m, P, P_LN2W, o * C), pt(m, P, P_LN2B, o * C), BT);
        matmul_forward_ref(h, c->shared_norm ? ln : ln2, P + off[P_FCW] + o * FC * C, pt(m, P, P_FCB, o * FC), BT, C,
                           (int)FC);
        if (c->mlp == MLP_SWIGLU) swiglu_forward_ref(g, h, BT, (int)I);
        else gelu_forward_ref(g, h, (size_t)BT * I);
        matmul_forward_ref(mo, g, P + off[P_FCPROJW] + o * C * I, pt(m, P, P_FCPROJB, o * C), BT, (int)I, C);
        for (int i = 0; i < BT * C; i++) x[i] = c->parallel_residual ? x[i] + ap[i] + mo[i] : res2[i] + mo[i];
    }
    norm_ref(m, ln, x, pt(m, P, P_LNFW, 0), pt(m, P, P_LNFB, 0), BT);
    matmul_forward_ref(logits, ln, unembed, pt(m, P, P_UNEMBEDB, 0), BT, C, V);
    crossentropy_forward_ref(losses, logits, m->targets, BT, V);
    double s = 0;
    for (int i = 0; i < BT; i++) s += losses[i];
    free(x), free(ln), free(ln2), free(qkv), free(atty), free(ap), free(res2), free(h), free(g), free(mo), free(logits),
        free(losses);
    return s / BT;
}

/* Weights 20x the initialisation and random biases and norm parameters, so every path carries signal. */
static void signal_weights(gpt_model *m)
{
    gpt_init_weights(m, 7);
    for (int k = 0; k < P_COUNT; k++) {
        if (!m->w.sizes[k] || (m->cfg.tied_embeddings && k == P_UNEMBED)) continue;
        if (param_is_weight(k)) {
            for (size_t i = 0; i < m->w.sizes[k]; i++) m->w.p[k][i] *= 20.0f;
            continue;
        }
        unsigned st = 100u + (unsigned)k;
        rand_fill(m->w.p[k], m->w.sizes[k], &st);
        int is_w = k == P_LN1W || k == P_LN2W || k == P_LNFW;
        float *t = m->w.p[k];
        for (size_t i = 0; i < m->w.sizes[k]; i++) t[i] = is_w ? 1.0f + 0.3f * t[i] : 0.3f * t[i];
    }
    gpt_params_changed(m);
}

static void check_arch_gradient(arch a)
{
    const char *label = ARCH_NAMES[a];
    model_config c = arch_cfg(a);
    gpt_model m, mr;
    if (gpt_init(&m, &c, 2, 5, 0, PRECISION_FP32) != 0 || gpt_init(&mr, &c, 2, 5, 1, PRECISION_FP32) != 0) {
        CHECK(0, "%s: init failed", label);
        return;
    }
    signal_weights(&m);
    fill_tokens(&m, 3);
    copy_weights_and_tokens(&mr, &m);
    double loss = NAN, lr = NAN;
    CHECK(train_micro_step(&m, 1.0f, &loss) == 0, "%s: forward or backward failed", label);
    double *P = malloc(m.w.nparams * sizeof(double));
    to_double(P, m.w.params, m.w.nparams);
    double lref = arch_ref(&m, P);
    CHECK(isfinite(loss) && fabs(loss - lref) < 1e-5 * (1 + fabs(lref)), "%s: loss %.9g vs double reference %.9g",
          label, loss, lref);
    char what[160];
    snprintf(what, sizeof what, "%s full-model gradient", label);
    CHECK(fd_check(what, P, m.w.nparams, m.w.grads, arch_ref, &m, 400, 2e-3), "%s: gradient vs finite differences",
          label);
    CHECK(train_micro_step(&mr, 1.0f, &lr) == 0 && lr == loss &&
              !memcmp(mr.w.grads, m.w.grads, m.w.nparams * sizeof(float)),
          "%s: --recompute changes the loss or the gradients", label);
    free(P);
    gpt_free(&m), gpt_free(&mr);
}

static void test_arch_llama_gradient(void) { check_arch_gradient(ARCH_LLAMA); }
static void test_arch_gptj_gradient(void) { check_arch_gradient(ARCH_GPTJ); }
static void test_arch_mpt_gradient(void) { check_arch_gradient(ARCH_MPT); }

/* bf16-mixed against fp32 on the same weights, each family: the loss within 1e-2 relative and the
 * whole gradient within 3e-2 relative L2 (bf16 rounding of the products' inputs). */
static void test_arch_bf16_mixed(void)
{
    for (int a = 0; a < 3; a++) {
        model_config c = arch_cfg((arch)a);
        c.C = 64, c.HS = c.C / c.NH, c.ffn = c.ffn ? 4 * c.ffn : 0, c.V = 97, c.max_T = 32;
        gpt_model f, b;
        if (gpt_init(&f, &c, 2, 24, 0, PRECISION_FP32) != 0 || gpt_init(&b, &c, 2, 24, 0, PRECISION_BF16_MIXED) != 0) {
            CHECK(0, "%s: init failed", ARCH_NAMES[a]);
            return;
        }
        gpt_init_weights(&f, 11);
        for (size_t i = 0; i < f.w.nparams; i++) f.w.params[i] *= 3.0f;
        fill_tokens(&f, 5);
        copy_weights_and_tokens(&b, &f);
        double lf = NAN, lb = NAN;
        CHECK(train_micro_step(&f, 1.0f, &lf) == 0 && train_micro_step(&b, 1.0f, &lb) == 0, "%s: steps failed",
              ARCH_NAMES[a]);
        CHECK(isfinite(lb) && fabs(lb - lf) <= 1e-2 * fabs(lf), "%s: loss bf16-mixed %.6f vs fp32 %.6f", ARCH_NAMES[a],
              lb, lf);
        double d = 0, r = 0;
        for (size_t i = 0; i < f.w.nparams; i++) {
            double e = (double)b.w.grads[i] - f.w.grads[i];
            d += e * e, r += (double)f.w.grads[i] * f.w.grads[i];
        }
        CHECK(sqrt(d / r) < 3e-2, "%s: gradient bf16-mixed vs fp32: relative L2 %.4f", ARCH_NAMES[a], sqrt(d / r));
        gpt_free(&f), gpt_free(&b);
    }
}

/* The Hugging Face row mapping by hand. Llama, NH 4, KVH 2, HS 4 (G = 2): the group layout is
 * [q0 q1 k0 v0 | q2 q3 k1 v1], 4 rows each; q_proj row 9 (head 2, dim 1) is internal row
 * 16 + 1 = 17; k_proj row 5 (kv head 1, dim 1) is 16 + 8 + 1 = 25; v_proj row 2 is 12 + 2 = 14.
 * MPT, NH 2, HS 8: per head [q k v]; Wqkv's [q; k; v] row 8 (q of head 1) is internal 24, row 16
 * (k of head 0) is 8, row 40 (v of head 1, dim 0) is 24 + 16 = 40. */
static void test_arch_hf_rows(void)
{
    model_config c = arch_cfg(ARCH_LLAMA);
    gpt_model m;
    if (gpt_init(&m, &c, 1, 4, 0, PRECISION_FP32) != 0) return;
    hf_piece p[3];
    CHECK(hf_pieces(&m, P_QKVW, 1, p) == 3 && !strcmp(p[1].name, "model.layers.1.self_attn.k_proj.weight") &&
              p[1].shape[0] == 8 && p[1].shape[1] == 16,
          "llama k_proj piece: %s [%lld, %lld]", p[1].name, (long long)p[1].shape[0], (long long)p[1].shape[1]);
    CHECK(hf_row(&m, &p[0], 9) == 17 && hf_row(&m, &p[1], 5) == 25 && hf_row(&m, &p[2], 2) == 14,
          "llama q/k/v rows: %zu %zu %zu", hf_row(&m, &p[0], 9), hf_row(&m, &p[1], 5), hf_row(&m, &p[2], 2));
    CHECK(hf_pieces(&m, P_FCW, 0, p) == 2 && !strcmp(p[0].name, "model.layers.0.mlp.gate_proj.weight") &&
              hf_row(&m, &p[1], 0) == 24,
          "llama gate/up pieces: %s, up row 0 -> %zu", p[0].name, hf_row(&m, &p[1], 0));
    gpt_free(&m);
    c = arch_cfg(ARCH_MPT);
    if (gpt_init(&m, &c, 1, 4, 0, PRECISION_FP32) != 0) return;
    CHECK(hf_pieces(&m, P_QKVW, 0, p) == 1 && !strcmp(p[0].name, "transformer.blocks.0.attn.Wqkv.weight"),
          "mpt Wqkv: %s", p[0].name);
    CHECK(hf_row(&m, &p[0], 8) == 24 && hf_row(&m, &p[0], 16) == 8 && hf_row(&m, &p[0], 40) == 40,
          "mpt Wqkv rows: %zu %zu %zu", hf_row(&m, &p[0], 8), hf_row(&m, &p[0], 16), hf_row(&m, &p[0], 40));
    gpt_free(&m);
}

/* Each family's checkpoint: Hugging Face names with their shapes, read back bit for bit. */
static void test_arch_safetensors_round_trip(void)
{
    static const char *const expect[][3] = {
        {"model.layers.0.self_attn.k_proj.weight", "model.layers.1.mlp.up_proj.weight", "lm_head.weight"},
        {"transformer.h.0.attn.q_proj.weight", "transformer.h.1.mlp.fc_in.bias", "lm_head.bias"},
        {"transformer.blocks.0.attn.Wqkv.weight", "transformer.blocks.1.norm_2.weight", "transformer.norm_f.weight"}};
    for (int a = 0; a < 3; a++) {
        char *dir = test_tmpdir();
        if (!dir) return;
        model_config c = arch_cfg((arch)a);
        gpt_model m, r;
        if (gpt_init(&m, &c, 1, 4, 0, PRECISION_FP32) != 0 || gpt_init(&r, &c, 1, 4, 0, PRECISION_FP32) != 0) return;
        signal_weights(&m);
        ckpt_state st = {3, 1, 1, 4, 1, 42, 0, 0};
        CHECK(ckpt_save_own(&m, dir, &st) == 0, "%s: save failed", ARCH_NAMES[a]);
        char path[600];
        snprintf(path, sizeof path, "%s/step-00000003/model.safetensors", dir);
        st_file f;
        if (st_open(&f, path) == 0) {
            for (int i = 0; i < 3; i++)
                CHECK(st_find(&f, expect[a][i]) != NULL, "%s: no tensor '%s'", ARCH_NAMES[a], expect[a][i]);
            CHECK(a != 2 || (!st_find(&f, "lm_head.weight") && !st_find(&f, "transformer.blocks.0.norm_1.bias")),
                  "mpt: a tied output layer or a norm bias was written");
            st_close(&f);
        }
        CHECK(ckpt_load_weights(&r, path) == 0 && !memcmp(r.w.params, m.w.params, m.w.nparams * sizeof(float)),
              "%s: the weights read back differ", ARCH_NAMES[a]);
        gpt_free(&m), gpt_free(&r);
        rm_tree(dir);
    }
}

const test_case tests_arch[] = {
    {"arch: llama2 loss vs double reference, gradient vs finite differences, recompute", test_arch_llama_gradient},
    {"arch: gpt-j loss vs double reference, gradient vs finite differences, recompute", test_arch_gptj_gradient},
    {"arch: mpt loss vs double reference, gradient vs finite differences, recompute", test_arch_mpt_gradient},
    {"arch: bf16-mixed against fp32 for each family", test_arch_bf16_mixed},
    {"arch: Hugging Face row mapping worked out by hand", test_arch_hf_rows},
    {"arch: each family's safetensors names, shapes and round trip", test_arch_safetensors_round_trip},
    {NULL, NULL},
};
