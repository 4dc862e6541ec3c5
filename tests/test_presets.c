/* Model presets of Llama-2, GPT-J and MPT: the architecture columns of data/models.csv, exact
 * parameter counts against the Hugging Face checkpoints, FLOPs per token, the old presets'
 * figures unchanged, and one file:line error per bad row; the precision vocabulary (common/precision.h):
 * its names, aliases and errors, and the names of older checkpoints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/machine.h"
#include "../common/precision.h"
#include "../common/presets.h"
#include "../model/ckpt_meta.h"
#include "../model/safetensors.h"
#include "check.h"
#include "../common/files.h"

static char g_out[65536], g_err[16384];

static model_config preset(const char *name)
{
    model_config c;
    memset(&c, 0, sizeof c);
    CHECK(model_preset_find(name, &c) == 0, "preset %s missing", name);
    return c;
}

/* Totals are sums of the tensors of each Hugging Face checkpoint (model.num_parameters()). */
static void test_presets_param_counts(void)
{
    static const struct {
        const char *name;
        double total, non_embedding;
    } want[] = {
        {"llama2-7b", 6738415616.0, 6476267520.0},
        {"llama2-13b", 13015864320.0, 12688179200.0},
        /* grouped-query: K and V are 8 x 128 wide; 68.98B is the figure published for Llama-2 70B */
        {"llama2-70b", 68976648192.0, 68452352000.0},
        /* GPTJForCausalLM's tensors (lm_head bias included); the model card's 6,053,381,344 is
         * mesh-transformer-jax's own count of its parameters, not the Hugging Face checkpoint's */
        {"gpt-j-6b", 6050882784.0, 5637947392.0},
        {"mpt-7b", 6649286656.0, 6442713088.0},
        /* MPT-30B's model card: n_parameters 29.95B */
        {"mpt-30b", 29957200896.0, 29595697152.0},
        /* without mpt-1b-redpajama-200b's q/k LayerNorm weights (24 x 2 x 2048 = 98,304 more) */
        {"mpt-1b", 1311344640.0, 1208057856.0},
        {"mpt-3b", 2645690880.0, 2516746240.0},
        /* the existing presets: pythia-6.9b is Hugging Face's 6,857,302,016 */
        {"pythia-6.9b", 6857302016.0, 6444154880.0},
        {"pythia-70m", 70426624.0, 18914304.0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        model_config c = preset(want[i].name);
        double t = model_params_total(&c), ne = model_params_non_embedding(&c);
        CHECK(t == want[i].total, "%s: total %.0f, expected %.0f", want[i].name, t, want[i].total);
        CHECK(ne == want[i].non_embedding, "%s: non-embedding %.0f, expected %.0f", want[i].name, ne,
              want[i].non_embedding);
    }
}

static void test_presets_llama2_7b_flops(void)
{
    model_config c = preset("llama2-7b");
    /* per layer: Q, K, V, O 4 x 4096^2 = 67,108,864; MLP 3 x 4096 x 11008 = 135,266,304;
     * together 202,375,168, x 32 layers = 6,476,005,376; output layer 32000 x 4096 = 131,072,000;
     * N = 6,607,077,376, 6 N = 39,642,464,256; attention 12 x 32 x 4096 x 2048 = 3,221,225,472;
     * FLOPs per token at T = 2048: 42,863,689,728. */
    CHECK(model_layer_matmul_params(&c) == 202375168.0, "llama2-7b layer matmul weights %.0f",
          model_layer_matmul_params(&c));
    double f = model_flops_per_token(&c, 2048);
    CHECK(f == 42863689728.0, "llama2-7b FLOPs per token %.0f", f);
    /* recompute adds one forward of the layers: 2 x 6,476,005,376 + 4 x 32 x 4096 x 2048 */
    double h = model_hardware_flops_per_token(&c, 2048, 1);
    CHECK(h == 42863689728.0 + 12952010752.0 + 1073741824.0, "llama2-7b hardware FLOPs per token %.0f", h);
    CHECK(model_hardware_flops_per_token(&c, 2048, 0) == f, "no recompute: hardware = model FLOPs");
}

/* Grouped-query attention shrinks K and V (N), never the attention-score term (NH query heads). */
static void test_presets_gqa_flops(void)
{
    model_config g = preset("llama2-70b"), m = g;
    m.KVH = 0; /* the same model with multi-head attention */
    double C = g.C, kv = 8.0 * 128, L = g.L;
    double dN = L * 2 * C * (C - kv);
    CHECK(model_params_total(&m) - model_params_total(&g) == dN, "GQA saves 2 C (C - KVH HS) a layer");
    for (int T = 1024; T <= 4096; T *= 2) {
        double d = model_flops_per_token(&m, T) - model_flops_per_token(&g, T);
        CHECK(d == 6 * dN, "T=%d: GQA changes FLOPs by 6 dN only: %.0f vs %.0f", T, d, 6 * dN);
    }
}

/* Every preset that existed before the architecture columns: total, non-embedding, FLOPs per
 * token and hardware FLOPs with recompute at T = 2048, as the code gave them before. */
static void test_presets_old_unchanged(void)
{
    static const struct {
        const char *name;
        double total, non_embedding, flops, hflops;
    } old[] = {
        {"pythia-14m", 14067712, 1189632, 64585728, 73236480},
        {"pythia-70m", 70426624, 18914304, 343277568, 406192128},
        {"pythia-160m", 162322944, 85054464, 967901184, 1213267968},
        {"pythia-410m", 405334016, 302309376, 2724986880, 3530293248},
        {"pythia-1b", 1011781632, 805732352, 6255280128, 8134328320},
        {"pythia-1.4b", 1414647808, 1208598528, 9073852416, 11892424704},
        {"pythia-2.8b", 2775208960, 2517647360, 17885429760, 23589683200},
        {"pythia-6.9b", 6857302016, 6444154880, 43115347968, 57073991680},
        {"pythia-12b", 11846072320, 11327016960, 74034708480, 98193899520},
        {"neox-20b", 20554567680, 19934846976, 128090898432, 170168156160},
        {"gpt3-125m", 125311488, 85054464, 968196096, 1213562880},
        {"gpt3-350m", 355985408, 302309376, 2725380096, 3530686464},
        {"gpt3-760m", 760470528, 679956480, 5447024640, 7107969024},
        {"gpt3-1.3b", 1315950592, 1208598528, 9074638848, 11893211136},
        {"gpt3-2.7b", 2651837440, 2517647360, 17886412800, 23590666240},
        {"gpt3-6.7b", 6658859008, 6444154880, 43113775104, 57072418816},
        {"gpt3-13b", 12853954560, 12585574400, 82077941760, 108921487360},
    };
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) {
        model_config c = preset(old[i].name);
        CHECK(model_params_total(&c) == old[i].total && model_params_non_embedding(&c) == old[i].non_embedding,
              "%s: params %.0f / %.0f changed", old[i].name, model_params_total(&c), model_params_non_embedding(&c));
        CHECK(model_flops_per_token(&c, 2048) == old[i].flops &&
                  model_hardware_flops_per_token(&c, 2048, 1) == old[i].hflops,
              "%s: FLOPs per token %.0f / %.0f changed", old[i].name, model_flops_per_token(&c, 2048),
              model_hardware_flops_per_token(&c, 2048, 1));
        CHECK(c.KVH == 0 && c.ffn == 0 && c.norm == NORM_LAYERNORM && c.norm_eps == 0 && !c.norm_nobias &&
                  c.mlp == MLP_GELU && c.rope == ROPE_NEOX && !c.attn_nobias && !c.mlp_nobias && !c.lm_head_bias &&
                  !c.shared_norm,
              "%s: empty architecture cells are not GPT-NeoX's zeros", old[i].name);
    }
}

static void test_presets_fields(void)
{
    model_config l = preset("llama2-70b");
    CHECK(l.KVH == 8 && l.NH == 64 && l.HS == 128 && l.ffn == 28672 && l.norm == NORM_RMSNORM && l.norm_eps == 1e-5 &&
              l.mlp == MLP_SWIGLU && l.pos == POS_ROTARY && l.rotary_pct == 1 && l.rope == ROPE_NEOX && l.attn_nobias &&
              l.mlp_nobias && !l.lm_head_bias && !l.parallel_residual && !l.tied_embeddings && l.max_T == 4096 &&
              strcmp(l.family, "llama2") == 0,
          "llama2-70b fields");
    model_config j = preset("gpt-j-6b");
    CHECK(j.L == 28 && j.HS == 256 && j.rope == ROPE_GPTJ && j.rotary_pct == 0.25 && j.shared_norm &&
              j.parallel_residual && j.lm_head_bias && j.attn_nobias && !j.mlp_nobias && !j.norm_nobias &&
              j.norm == NORM_LAYERNORM && j.mlp == MLP_GELU && model_ffn(&j) == 16384 && !j.tied_embeddings &&
              strcmp(j.family, "gpt-j") == 0,
          "gpt-j-6b fields");
    model_config m = preset("mpt-30b");
    CHECK(m.pos == POS_ALIBI && m.rotary_pct == 0 && m.norm_nobias && m.attn_nobias && m.mlp_nobias &&
              m.tied_embeddings && !m.parallel_residual && m.max_T == 8192 && model_kv_heads(&m) == 64 &&
              model_ffn(&m) == 4 * 7168 && strcmp(m.family, "mpt") == 0,
          "mpt-30b fields");
}

/* A temporary data directory whose models.csv is a header, one good row and `row` (line 3). */
static const char *bad_data_dir(const char *header_extra, const char *good_extra, const char *row)
{
    const char *dir = test_tmpdir();
    if (!dir) return NULL;
    char path[256], text[2048];
    snprintf(path, sizeof path, "%s/models.csv", dir);
    snprintf(text, sizeof text,
             "name,family,layers,d_model,heads,vocab,rotary_pct,rotary_base,parallel_residual,tied_embeddings,pos_emb,"
             "max_seq_len,source%s\n"
             "ok,pythia,2,64,4,128,0.25,10000,true,false,rotary,256,x%s\n%s\n",
             header_extra, good_extra, row);
    write_text(path, text);
    return dir;
}

/* Each bad row: `costbench models` exits 1 with one line naming models.csv:3 and the column. */
static void test_presets_bad_rows(void)
{
    static const char *const H =
        ",norm,norm_eps,norm_bias,mlp,ffn_dim,kv_heads,rotary_style,attn_bias,mlp_bias,lm_head_bias,shared_norm";
    static const char *const G = ",,,,,,,,,,,";
    static const struct {
        const char *row, *expect;
    } bad[] = {
        {"b,pythia,2,64,4,128,0.25,10000,true,false,rotary,256,x,batchnorm,,,,,,,,,,",
         "models.csv:3: column 'norm': expected layernorm or rmsnorm, got 'batchnorm'"},
        {"b,llama2,2,64,8,128,1,10000,false,false,rotary,256,x,rmsnorm,,,swiglu,176,3,,,,,",
         "models.csv:3: column 'kv_heads': 8 heads are not a multiple of 3 kv_heads"},
        {"b,llama2,2,64,4,128,1,10000,false,false,rotary,256,x,rmsnorm,,,swiglu,,,,,,,",
         "models.csv:3: column 'ffn_dim': swiglu needs ffn_dim"},
        {"b,llama2,2,64,4,128,1,10000,false,false,rotary,256,x,rmsnorm,,,swiglu,171,,,,,,",
         "models.csv:3: column 'ffn_dim': SwiGLU ffn_dim must be a positive multiple of 8 (Llama rounds 8C/3 up to a "
         "multiple of 256), got 171"},
        {"b,mpt,2,64,4,128,0.25,10000,false,true,alibi,256,x,,,false,,,,,false,false,,",
         "models.csv:3: column 'rotary_pct': alibi positions need rotary_pct 0, got 0.25"},
        {"b,gpt-j,2,64,4,128,0.25,10000,false,false,rotary,256,x,,,,,,,gptj,,,true,true",
         "models.csv:3: column 'shared_norm': a shared norm needs parallel_residual true"},
        {"b,pythia,2,64,4,128,0.25,10000,true,false,rotary,256,x,layernorm,1e-6,,,,,,,,,",
         "models.csv:3: column 'norm_eps': a layernorm preset needs 1e-5, the epsilon of costbench's LayerNorm kernel, "
         "got 1e-06"},
        {"b,opt,2,64,4,128,0.25,10000,true,false,rotary,256,x,,,,,,,,,,,",
         "models.csv:3: column 'family': expected pythia, neox, gpt3, llama2, gpt-j or mpt, got 'opt'"},
        {"b,mpt,2,64,4,128,0,10000,false,true,sinusoidal,256,x,,,,,,,,,,,",
         "models.csv:3: column 'pos_emb': expected rotary, learned or alibi, got 'sinusoidal'"},
        {"b,pythia,2,64,4,128,0.25,10000,true,false,rotary,256,x,,,,relu,,,,,,,",
         "models.csv:3: column 'mlp': expected gelu or swiglu, got 'relu'"},
        {"b,gpt-j,2,64,4,128,0.25,10000,true,false,rotary,256,x,,,,,,,palm,,,,",
         "models.csv:3: column 'rotary_style': expected neox or gptj, got 'palm'"},
        {"b,mpt,2,64,4,128,0,10000,false,true,alibi,256,x,,,,,,,,maybe,,,",
         "models.csv:3: column 'attn_bias': expected true or false, got 'maybe'"},
        {"b,llama2,2,64,4,128,1,10000,false,false,rotary,256,x,rmsnorm,,true,swiglu,176,,,,,,",
         "models.csv:3: column 'norm_bias': rmsnorm has no bias"},
        {"b,llama2,2,64,4,128,1,10000,false,false,rotary,256,x,rmsnorm,,,swiglu,-8,,,,,,",
         "models.csv:3: column 'ffn_dim'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *dir = bad_data_dir(H, G, bad[i].row);
        if (!dir) return;
        char env[300];
        snprintf(env, sizeof env, "COSTBENCH_DATA=%s", dir);
        const char *a[] = {"env", env, g_costbench, "models", NULL};
        int rc = cmd_run(a, g_out, sizeof g_out, g_err, sizeof g_err);
        CHECK(rc == 1 && strstr(g_err, bad[i].expect) && strncmp(g_err, "error: ", 7) == 0 && count_lines(g_err) == 1,
              "row %zu: exit %d, expected 1 and one line with \"%s\": %s", i, rc, bad[i].expect, g_err);
        rm_tree(dir);
    }
}

/* A file of the old format (no architecture columns) still loads, as GPT-NeoX; a file with the
 * columns and empty cells likewise. */
static void test_presets_old_format(void)
{
    const char *files[][2] = {{"", ""}, {",norm,mlp,kv_heads", ",,,"}};
    for (int k = 0; k < 2; k++) {
        const char *dir = bad_data_dir(files[k][0], files[k][1], "");
        if (!dir) return;
        char path[256];
        snprintf(path, sizeof path, "%s/models.csv", dir);
        model_config *all;
        int n;
        CHECK(model_presets_load(path, &all, &n) == 0 && n == 1, "file %d does not load", k);
        if (n == 1) {
            const model_config *c = &all[0];
            CHECK(c->KVH == 0 && c->ffn == 0 && c->norm == NORM_LAYERNORM && c->mlp == MLP_GELU &&
                      c->pos == POS_ROTARY && model_params_non_embedding(c) == 2.0 * (12 * 64 * 64 + 13 * 64),
                  "file %d: not GPT-NeoX", k);
            free(all);
        }
        rm_tree(dir);
    }
}

/* train's overrides obey the same rules (exit 2, the flags named). */
static void test_presets_train_flags(void)
{
    static const struct {
        const char *args[10];
        const char *expect;
    } bad[] = {
        {{"train", "--model", "pythia-70m", "--kv-heads", "3"},
         "flags '--heads' / '--kv-heads': pythia-70m: 8 heads are not a multiple of 3 kv_heads"},
        {{"train", "--model", "llama2-70b", "--heads", "4"}, "4 heads are not a multiple of 8 kv_heads"},
        {{"train", "--model", "llama2-7b", "--ffn", "1001"},
         "flag '--ffn': llama2-7b: SwiGLU ffn_dim must be a positive multiple of 8"},
        {{"train", "--model", "pythia-70m", "--ffn", "0"}, "flag '--ffn'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = cli_run(bad[i].args, g_out, sizeof g_out, g_err, sizeof g_err);
        CHECK(rc == 2 && strstr(g_err, bad[i].expect) && count_lines(g_err) == 1, "case %zu: exit %d: %s", i, rc,
              g_err);
    }
}

/* costbench models lists every preset with the new columns after the old ones. */
static void test_presets_models_command(void)
{
    const char *dir = test_tmpdir();
    if (!dir) return;
    char csv[256];
    snprintf(csv, sizeof csv, "%s/models.csv", dir);
    const char *a[] = {"models", "--csv", csv, NULL};
    int rc = cli_run(a, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0 && strstr(g_out, "llama2-70b") && strstr(g_out, "mpt-30b") && strstr(g_out, "gpt-j-6b") &&
              strstr(g_out, "T = 2048"),
          "models: exit %d: %s", rc, g_err);
    double kv[64], gf[64], p[64];
    int n = csv_column(csv, "kv_heads", kv, 64);
    CHECK(n >= 25 && csv_column(csv, "gflop_per_token", gf, 64) == n && csv_column(csv, "params_m", p, 64) == n,
          "models --csv: %d rows", n);
    char text[65536];
    slurp(csv, text, sizeof text);
    CHECK(strstr(text, "name,layers,d_model,heads,head_dim,vocab,rotary_dims,pos_emb,parallel_residual,tied_embeddings,"
                       "params_m,non_embedding_params_m,family,kv_heads,ffn,norm,mlp,gflop_per_token,source"),
          "models --csv header: %.300s", text);
    rm_tree(dir);
}

/* The parameter counts as closed forms of the architecture choices (the sums costbench stated
 * before common/params.h's table existed): every preset of data/models.csv, and each one with
 * each choice flipped, counted from the table must give the same. */
static double closed_norm(const model_config *c)
{
    return (c->norm == NORM_LAYERNORM && !c->norm_nobias ? 2.0 : 1.0) * c->C;
}

static double closed_matmul(const model_config *c)
{
    double C = c->C, kv = c->KVH > 0 ? (double)c->KVH * c->HS : C, ffn = model_ffn(c);
    return C * (C + 2 * kv) + C * C + (c->mlp == MLP_SWIGLU ? 3.0 : 2.0) * C * ffn;
}

static double closed_non_embedding(const model_config *c)
{
    double C = c->C, kv = c->KVH > 0 ? (double)c->KVH * c->HS : C, ffn = model_ffn(c);
    double attn_b = c->attn_nobias ? 0 : (C + 2 * kv) + C,
           mlp_b = c->mlp_nobias ? 0 : (c->mlp == MLP_SWIGLU ? 2 * ffn : ffn) + C;
    return c->L * (closed_matmul(c) + attn_b + mlp_b + (c->shared_norm ? 1 : 2) * closed_norm(c));
}

static double closed_total(const model_config *c)
{
    double C = c->C, V = c->V, emb = V * C + (c->pos == POS_LEARNED ? (double)c->max_T * C : 0);
    return emb + closed_non_embedding(c) + closed_norm(c) + (c->tied_embeddings ? 0 : V * C) +
           (c->lm_head_bias ? V : 0);
}

/* c with choice v (0..9) flipped; v 0: c itself. */
static model_config flip(model_config c, int v)
{
    switch (v) {
    case 1: c.attn_nobias = !c.attn_nobias; break;
    case 2: c.mlp_nobias = !c.mlp_nobias; break;
    case 3: c.lm_head_bias = !c.lm_head_bias; break;
    case 4: c.tied_embeddings = !c.tied_embeddings; break;
    case 5: c.shared_norm = !c.shared_norm, c.parallel_residual = 1; break;
    case 6:
        c.norm = c.norm == NORM_RMSNORM ? NORM_LAYERNORM : NORM_RMSNORM, c.norm_nobias = c.norm == NORM_RMSNORM;
        break;
    case 7: c.pos = c.pos == POS_LEARNED ? POS_ROTARY : POS_LEARNED; break;
    case 8: c.mlp = c.mlp == MLP_SWIGLU ? MLP_GELU : MLP_SWIGLU, c.ffn = 8 * ((model_ffn(&c) + 7) / 8); break;
    case 9: c.KVH = c.NH % 2 == 0 && model_kv_heads(&c) == c.NH ? c.NH / 2 : 0; break;
    default: break;
    }
    return c;
}

static void test_presets_params_from_table(void)
{
    char path[CB_PATH_MAX];
    model_config *all;
    int n;
    int rc = machine_data_file(path, sizeof path, "models.csv");
    if (rc == 0) rc = model_presets_load(path, &all, &n);
    CHECK(rc == 0, "load %s: %d", path, rc);
    if (rc != 0) return;
    for (int i = 0; i < n; i++)
        for (int v = 0; v < 10; v++) {
            model_config c = flip(all[i], v);
            CHECK(model_params_total(&c) == closed_total(&c) &&
                      model_params_non_embedding(&c) == closed_non_embedding(&c) &&
                      model_layer_matmul_params(&c) == closed_matmul(&c),
                  "%s (choice %d flipped): total %.0f / %.0f, non-embedding %.0f / %.0f, layer matrices %.0f / %.0f",
                  c.name, v, model_params_total(&c), closed_total(&c), model_params_non_embedding(&c),
                  closed_non_embedding(&c), model_layer_matmul_params(&c), closed_matmul(&c));
        }
    free(all);
}

/* The shape functions: QKV rows with grouped-query K/V, the MLP's first matrix with SwiGLU. */
static void test_presets_widths(void)
{
    model_config l = preset("llama2-70b"), p = preset("pythia-160m");
    CHECK(model_qkv_rows(&l) == (64 + 2 * 8) * 128 && model_mlp_in_rows(&l) == 2 * 28672,
          "llama2-70b: qkv %d, mlp in %d", model_qkv_rows(&l), model_mlp_in_rows(&l));
    CHECK(model_qkv_rows(&p) == 3 * 768 && model_mlp_in_rows(&p) == 4 * 768, "pythia-160m: qkv %d, mlp in %d",
          model_qkv_rows(&p), model_mlp_in_rows(&p));
}

/* model_describe: the one-line architecture `costbench train` and `matmul --shapes transformer` print. */
static void test_presets_describe(void)
{
    static const struct {
        const char *name, *want;
    } want[] = {
        {"pythia-70m", "L=6 C=512 heads=8 kv_heads=8 ffn=2048 V=50304, LayerNorm, GELU MLP, rotary rotary_dims=16, "
                       "parallel residual, untied embeddings"},
        {"gpt-j-6b", "L=28 C=4096 heads=16 kv_heads=16 ffn=16384 V=50400, LayerNorm, GELU MLP, rotary (GPT-J pairs) "
                     "rotary_dims=64, parallel residual (one norm), untied embeddings"},
        {"llama2-70b",
         "L=80 C=8192 heads=64 kv_heads=8 ffn=28672 V=32000, RMSNorm, SwiGLU MLP, rotary rotary_dims=128, "
         "sequential residual, untied embeddings"},
        {"mpt-7b", "L=32 C=4096 heads=32 kv_heads=32 ffn=16384 V=50432, LayerNorm without bias, GELU MLP, ALiBi "
                   "rotary_dims=0, sequential residual, tied embeddings"},
        {"gpt3-125m", "L=12 C=768 heads=12 kv_heads=12 ffn=3072 V=50368, LayerNorm, GELU MLP, learned positions "
                      "rotary_dims=0, sequential residual, tied embeddings"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        model_config c = preset(want[i].name);
        char buf[256];
        model_describe(&c, buf, sizeof buf);
        CHECK(strcmp(buf, want[i].want) == 0, "%s: '%s'", want[i].name, buf);
    }
}

/* ---------------------------------------------------------------- the precision vocabulary */

/* Every canonical name parses back to its precision; the aliases; unknown names; the table's facts. */
static void test_precision_names(void)
{
    static const char *const canonical[PRECISION_COUNT] = {"fp32", "bf16-mixed", "bf16-sr", "bf16-nearest"};
    for (int k = 0; k < PRECISION_COUNT; k++) {
        train_precision p = (train_precision)-1;
        const char *name = precision_name((train_precision)k);
        CHECK(strcmp(name, canonical[k]) == 0, "precision %d is named '%s', not '%s'", k, name, canonical[k]);
        CHECK(precision_parse(name, &p) == 0 && p == (train_precision)k, "'%s' parses to %d, not %d", name, (int)p, k);
        CHECK(precision_column_valid(name), "'%s' is not a precision column's value", name);
    }
    static const struct {
        const char *alias;
        train_precision p;
    } aliases[] = {{"bf16", PRECISION_BF16_SR}, {"mixed", PRECISION_BF16_MIXED}};
    for (int i = 0; i < 2; i++) {
        train_precision p = PRECISION_FP32;
        CHECK(precision_parse(aliases[i].alias, &p) == 0 && p == aliases[i].p, "alias '%s' parses to %d",
              aliases[i].alias, (int)p);
    }
    static const char *const unknown[] = {"", "BF16", "fp16", "bf16-", "fp32 ", "nearest", "fp16-mixed", "fp8"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        train_precision p = PRECISION_BF16_MIXED;
        CHECK(precision_parse(unknown[i], &p) == -1 && p == PRECISION_BF16_MIXED, "'%s' parses", unknown[i]);
    }
    CHECK(precision_column_valid("fp16-mixed") && precision_column_valid("fp8") && !precision_column_valid("BF16") &&
              !precision_column_valid(""),
          "the precision column's other values");
    CHECK(!precision_full_bf16(PRECISION_FP32) && !precision_full_bf16(PRECISION_BF16_MIXED) &&
              precision_full_bf16(PRECISION_BF16_SR) && precision_full_bf16(PRECISION_BF16_NEAREST),
          "full bf16: sr and nearest only");
    /* the ZeRO paper's bytes per parameter: 4 + 4 + 8, 2 + 2 + 12, full bf16 2 + 2 + 4 */
    static const double total[PRECISION_COUNT] = {16, 16, 8, 8};
    for (int k = 0; k < PRECISION_COUNT; k++) {
        const precision_info *i = precision_info_of((train_precision)k);
        double b = i->weight_bytes + i->grad_bytes + precision_optimizer_bytes((train_precision)k);
        CHECK(b == total[k], "%s: %g bytes per parameter, not %g", i->name, b, total[k]);
    }
    /* the one AdamW traffic rule: fp32 7 values of 4 bytes; mixed 2 x 2 + 2 + 2 x 12; full bf16 2 x 2 + 2 + 2 x 4 */
    static const double traffic[PRECISION_COUNT] = {28, 30, 14, 14};
    for (int k = 0; k < PRECISION_COUNT; k++) {
        double t = precision_adamw_traffic_bytes((train_precision)k);
        CHECK(t == traffic[k], "%s: AdamW moves %g bytes per parameter, not %g", precision_name((train_precision)k), t,
              traffic[k]);
    }
    CHECK(adamw_traffic_bytes(4, 4, 4, 0) == 28 && adamw_traffic_bytes(2, 4, 2, 0) == 16,
          "the trainer's storage (fp32 gradients): 28, full bf16 16");
    CHECK(precision_info_of(PRECISION_BF16_SR)->rounding == ROUNDING_STOCHASTIC &&
              precision_info_of(PRECISION_BF16_NEAREST)->rounding == ROUNDING_NEAREST &&
              precision_info_of(PRECISION_FP32)->rounding == ROUNDING_NONE,
          "the roundings");
}

/* --precision on train, scale and plan: an unknown value is one line naming the flag, the value
 * and every name; the aliases are accepted. */
static void test_precision_flag_errors(void)
{
    const char *const cmds[][12] = {
        {"train", "--precision", "bf17", "--steps", "1", NULL},
        {"scale", "--model", "pythia-1b", "--instance", "trn1.32xlarge", "--global-batch", "64", "--precision", "bf17",
         NULL},
    };
    for (int i = 0; i < 2; i++) {
        int rc = cli_run(cmds[i], g_out, sizeof g_out, g_err, sizeof g_err);
        int lines = 0;
        for (const char *c = g_err; *c; c++) lines += *c == '\n';
        CHECK(rc == 2 && lines == 1 && strstr(g_err, "flag '--precision'") && strstr(g_err, "'bf17'") &&
                  strstr(g_err, "fp32, bf16-mixed, bf16-sr, bf16-nearest") && strstr(g_err, "bf16 = bf16-sr") &&
                  strstr(g_err, "mixed = bf16-mixed"),
              "%s --precision bf17: exit %d: %s", cmds[i][0], rc, g_err);
    }
    static const char *const names[] = {"fp32", "bf16-mixed", "bf16-sr", "bf16-nearest", "bf16", "mixed"};
    for (int k = 0; k < 6; k++) {
        const char *a[] = {"scale", "--model", "pythia-1b", "--instance", "trn1.32xlarge", "--global-batch", "64",
                           "--nodes", "1", "--precision", names[k], NULL};
        int rc = cli_run(a, g_out, sizeof g_out, g_err, sizeof g_err);
        CHECK(rc == 0, "scale --precision %s: exit %d: %s", names[k], rc, g_err);
    }
}

/* A checkpoint's precision: the names precision_name writes, none (fp32), and "bf16", which
 * costbench wrote for bf16-nearest before it had that name: it resumes as bf16-nearest. */
static void test_precision_checkpoint_names(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    static const struct {
        const char *meta; /* NULL: no precision key */
        int rc;
        train_precision p;
    } cases[] = {{"fp32", 0, PRECISION_FP32},         {"bf16-mixed", 0, PRECISION_BF16_MIXED},
                 {"bf16-sr", 0, PRECISION_BF16_SR},   {"bf16-nearest", 0, PRECISION_BF16_NEAREST},
                 {"bf16", 0, PRECISION_BF16_NEAREST}, {NULL, 0, PRECISION_FP32},
                 {"fp64", -1, PRECISION_BF16_MIXED}};
    const float x[2] = {1, 2};
    const st_out t = {"x", x, 0, 1, {2}};
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *kv[] = {"format", "pt", "precision", cases[i].meta};
        CHECK(st_write(path, &t, 1, kv, cases[i].meta ? 2 : 1) == 0, "writing %s", path);
        st_file f;
        if (st_open(&f, path) != 0) {
            CHECK(0, "cannot open %s", path);
            continue;
        }
        train_precision p = PRECISION_BF16_MIXED;
        int rc = ckpt_meta_precision(&f, &p);
        CHECK(rc == cases[i].rc && p == cases[i].p, "a checkpoint of precision '%s': %d, %s",
              cases[i].meta ? cases[i].meta : "(none)", rc, precision_name(p));
        st_close(&f);
    }
    rm_tree(dir);
}

const test_case tests_presets[] = {
    {"presets: exact parameter counts of Llama-2, GPT-J, MPT and Pythia", test_presets_param_counts},
    {"presets: llama2-7b FLOPs per token by hand", test_presets_llama2_7b_flops},
    {"presets: grouped-query attention changes N, not the attention term", test_presets_gqa_flops},
    {"presets: the old presets' counts and FLOPs unchanged", test_presets_old_unchanged},
    {"presets: architecture fields of llama2-70b, gpt-j-6b, mpt-30b", test_presets_fields},
    {"presets: bad rows give one file:line error naming the column, exit 1", test_presets_bad_rows},
    {"presets: files without the architecture columns mean GPT-NeoX", test_presets_old_format},
    {"presets: train's --kv-heads and --ffn checked by the same rules", test_presets_train_flags},
    {"presets: costbench models lists the new columns after the old", test_presets_models_command},
    {"presets: parameter counts from the tensor table equal the closed forms, every preset and choice",
     test_presets_params_from_table},
    {"presets: QKV and MLP-in widths", test_presets_widths},
    {"presets: the one-line architecture description", test_presets_describe},
    {"presets: precision names round-trip, aliases bf16 and mixed, unknown names refused", test_precision_names},
    {"presets: --precision errors list every name; train and scale take the aliases", test_precision_flag_errors},
    {"presets: a checkpoint's precision, an old 'bf16' resuming as bf16-nearest", test_precision_checkpoint_names},
    {NULL, NULL},
};
