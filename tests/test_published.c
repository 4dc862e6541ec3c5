/* Tests of issue 19's published part: the published-runs loader, the FLOP conventions, seq/s. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../report/formats/inputs.h"
#include "../report/formats/published.h"
#include "../report/logs/logrow.h"
#include "../report/predict/pubmodel.h"
#include "../report/predict/stepmodel.h"
#include "check.h"

/* The devices the shipped files name, as data/devices.csv describes them (workers: ranks a device). */
static dev_row test_devs[] = {
    {.device = "a100-sxm4-40gb", .vendor = "nvidia", .workers = 1},
    {.device = "a100-sxm4-80gb", .vendor = "nvidia", .workers = 1},
    {.device = "v100-sxm3-32gb", .vendor = "nvidia", .workers = 1},
    {.device = "trainium1", .vendor = "aws", .workers = 2},
};

static dev_table test_dev_table(void)
{
    dev_table dt = {.path = "data/devices.csv", .rows = test_devs, .n = 4};
    return dt;
}

/* A row of the small shapes the hand-worked figures use: l 2, h 64, 4 heads, V 1024, s 128. */
static pub_row small_row(const char *arch, int kv_heads, int ffn)
{
    pub_row r = {.layers = 2, .d_model = 64, .heads = 4, .kv_heads = kv_heads, .ffn_dim = ffn, .vocab = 1024,
                 .seq_len = 128, .tied_embeddings = -1, .params = NAN, .line = 9};
    snprintf(r.arch, sizeof r.arch, "%s", arch);
    snprintf(r.model, sizeof r.model, "small-%s", arch);
    return r;
}

static int near(double x, double ref, double rel) { return fabs(x - ref) <= rel * fabs(ref); }

/* GPT layer: l = 2, h = 64, 4 heads, ffn 4h = 256, V = 1024, s = 128, one sequence.
 *   megatron-2021: 96 s l h^2 (1 + s/6h + V/16lh) = 96 x 128 x 2 x 4096 x (1 + 128/384 + 1024/2048)
 *                = 100,663,296 x 11/6 = 184,549,376
 *   megatron-core: 72 s l h^2 (1 + s/6h + V/12lh) = 75,497,472 x (1 + 1/3 + 1024/1536 = 2) = 150,994,944
 *   palm: N = l 12 h^2 + V h = 98,304 + 65,536 = 163,840; (6 N + 12 l h s) s = (983,040 + 196,608) x 128
 *         = 150,994,944 (the same count as megatron-core for a GPT layer)
 *   llm-foundry, params 200,000: 6 x 200,000 x 128 + 12 l h s^2 = 153,600,000 + 25,165,824 = 178,765,824
 *   llm-foundry, params counted (learned positions over max_seq_len 128, biases, tied):
 *         V h + s h + l (12 h^2 + 13 h) + 2 h = 65,536 + 8,192 + 99,968 + 128 = 173,824;
 *         6 x 173,824 x 128 + 25,165,824 = 133,496,832 + 25,165,824 = 158,662,656 */
static void test_flops_gpt(void)
{
    pub_row r = small_row("gpt", 4, 256);
    model_config cfg;
    CHECK(published_config(&r, "hand.csv", &cfg) == 0, "gpt config");
    CHECK(flops_per_seq(FLOPS_MEGATRON_2021, &cfg, NAN, 128) == 184549376.0, "megatron-2021 %.0f",
          flops_per_seq(FLOPS_MEGATRON_2021, &cfg, NAN, 128));
    CHECK(flops_per_seq(FLOPS_MEGATRON_CORE, &cfg, NAN, 128) == 150994944.0, "megatron-core %.0f",
          flops_per_seq(FLOPS_MEGATRON_CORE, &cfg, NAN, 128));
    CHECK(flops_per_seq(FLOPS_PALM, &cfg, NAN, 128) == 150994944.0, "palm %.0f",
          flops_per_seq(FLOPS_PALM, &cfg, NAN, 128));
    CHECK(flops_per_seq(FLOPS_LLM_FOUNDRY, &cfg, 200000, 128) == 178765824.0, "llm-foundry %.0f",
          flops_per_seq(FLOPS_LLM_FOUNDRY, &cfg, 200000, 128));
    CHECK(flops_per_seq(FLOPS_LLM_FOUNDRY, &cfg, NAN, 128) == 158662656.0, "llm-foundry counted %.0f",
          flops_per_seq(FLOPS_LLM_FOUNDRY, &cfg, NAN, 128));
    /* a perturbed figure fails the same comparison */
    CHECK(flops_per_seq(FLOPS_MEGATRON_2021, &cfg, NAN, 127) != 184549376.0, "s = 127 gave the s = 128 count");
}

/* Llama layer with grouped-query attention and SwiGLU: l 2, h 64, 4 heads, 2 kv_heads (width 32),
 * ffn 176, V 1024, s 128.
 *   megatron-core (Megatron-LM's form): 12 s l h^2 ((1 + g/n + s/h) + (f/h) 3/2) + 6 s h V
 *         = 12,582,912 x ((1 + 0.5 + 2) + 2.75 x 1.5 = 7.625) + 6 x 128 x 64 x 1024
 *         = 95,944,704 + 50,331,648 = 146,276,352
 *   palm: one layer's matmuls h (h + 2 x 32) + h^2 + 3 h f = 8,192 + 4,096 + 33,792 = 46,080;
 *         N = 2 x 46,080 + 65,536 = 157,696; (6 N + 12 l h s) s = (946,176 + 196,608) x 128 = 146,276,352
 *   megatron-2021 (each GEMM 4 times, the output layer 3): 4 (2 s l P + l 4 s^2 h) + 3 (2 s h V)
 *         = 4 (23,592,960 + 8,388,608) + 3 x 16,777,216 = 127,926,272 + 50,331,648 = 178,257,920 */
static void test_flops_llama(void)
{
    pub_row r = small_row("llama", 2, 176);
    model_config cfg;
    CHECK(published_config(&r, "hand.csv", &cfg) == 0, "llama config");
    CHECK(cfg.mlp == MLP_SWIGLU && model_kv_heads(&cfg) == 2, "llama: swiglu %d kv %d", cfg.mlp, model_kv_heads(&cfg));
    CHECK(flops_per_seq(FLOPS_MEGATRON_CORE, &cfg, NAN, 128) == 146276352.0, "megatron-core %.0f",
          flops_per_seq(FLOPS_MEGATRON_CORE, &cfg, NAN, 128));
    CHECK(flops_per_seq(FLOPS_PALM, &cfg, NAN, 128) == 146276352.0, "palm %.0f",
          flops_per_seq(FLOPS_PALM, &cfg, NAN, 128));
    CHECK(flops_per_seq(FLOPS_MEGATRON_2021, &cfg, NAN, 128) == 178257920.0, "megatron-2021 %.0f",
          flops_per_seq(FLOPS_MEGATRON_2021, &cfg, NAN, 128));
}

/* Published MFU figures converted back in their source's convention land on the published
 * throughput: llm-foundry's A100-40GB mpt-70b on 128 GPUs (MFU 48.91% of 312 TFLOP/s, 48194 T/s at
 * seq 2048: 23.532 seq/s) and the Megatron-LM README's 41.5% MFU for Korthikanti et al.'s 22B
 * (1.1 s for 4 sequences on 8 GPUs: 3.636 seq/s; the README rounds, 41.6% by the formula). */
static void test_mfu_crosscheck(void)
{
    pub_row r = {.layers = 80, .d_model = 8192, .heads = 64, .kv_heads = 64, .ffn_dim = 4 * 8192, .vocab = 50368,
                 .seq_len = 2048, .tied_embeddings = 1, .params = 64862437376.0, .devices = 128, .metric = PUB_MFU_PCT,
                 .value = 48.91, .convention = FLOPS_LLM_FOUNDRY, .peak_tflops = 312, .line = 1};
    snprintf(r.arch, sizeof r.arch, "mpt");
    snprintf(r.model, sizeof r.model, "mpt-70b");
    model_config cfg;
    CHECK(published_config(&r, "hand.csv", &cfg) == 0, "mpt-70b config");
    double sps = published_seq_per_s(&r, &cfg);
    CHECK(near(sps, 48194.0 / 2048, 0.001), "llm-foundry mfu -> %.4f seq/s, published 23.532", sps);
    pub_row k = {.layers = 48, .d_model = 6144, .heads = 64, .kv_heads = 64, .ffn_dim = 24576, .vocab = 51200,
                 .seq_len = 2048, .tied_embeddings = -1, .params = NAN, .devices = 8, .metric = PUB_MFU_PCT,
                 .value = 41.5, .convention = FLOPS_MEGATRON_CORE, .peak_tflops = 312, .line = 1};
    snprintf(k.arch, sizeof k.arch, "gpt");
    snprintf(k.model, sizeof k.model, "22B");
    CHECK(published_config(&k, "hand.csv", &cfg) == 0, "22B config");
    sps = published_seq_per_s(&k, &cfg);
    CHECK(near(sps, 4 / 1.1, 0.005), "megatron-core mfu -> %.4f seq/s, published 3.636", sps);
}

/* Every metric's conversion on one row: 4 devices, seq 100, global batch 64. */
static void test_metrics(void)
{
    pub_row r = small_row("gpt", 4, 256);
    r.devices = 4, r.global_batch = 64, r.seq_len = 128;
    model_config cfg;
    CHECK(published_config(&r, "hand.csv", &cfg) == 0, "config");
    r.metric = PUB_SEQ_PER_S, r.value = 3;
    CHECK(published_seq_per_s(&r, &cfg) == 3, "seq_per_s");
    r.metric = PUB_TOKENS_PER_S, r.value = 1280;
    CHECK(published_seq_per_s(&r, &cfg) == 10, "tokens_per_s 1280 / 128");
    r.metric = PUB_TOKENS_PER_S_PER_DEVICE, r.value = 320;
    CHECK(published_seq_per_s(&r, &cfg) == 10, "tokens_per_s_per_device 320 x 4 / 128");
    r.metric = PUB_STEP_TIME_S, r.value = 8;
    CHECK(published_seq_per_s(&r, &cfg) == 8, "step_time_s 64 / 8");
    /* 184,549,376 FLOPs a sequence (megatron-2021, above): 1.84549376e-4 TFLOP/s x 4 devices = 4 seq/s */
    r.metric = PUB_TFLOPS_PER_DEVICE, r.value = 1.84549376e-4, r.convention = FLOPS_MEGATRON_2021;
    CHECK(near(published_seq_per_s(&r, &cfg), 4, 1e-12), "tflops %.9g", published_seq_per_s(&r, &cfg));
    /* 50% of 3.69098752e-4 TFLOP/s a device is the same 4 seq/s */
    r.metric = PUB_MFU_PCT, r.value = 50, r.peak_tflops = 3.69098752e-4;
    CHECK(near(published_seq_per_s(&r, &cfg), 4, 1e-12), "mfu %.9g", published_seq_per_s(&r, &cfg));
}

/* Every row of the six shipped files loads, and its seq/s from metric and value agrees with its
 * seq_per_s column within 0.5% (the loader refuses otherwise; checked here again, worst per file). */
static void test_shipped(void)
{
    static const struct {
        const char *file;
        int rows;
        double worst; /* the cells carry 10 significant digits of the same conversion */
    } files[] = {
        {"megatron_a100_2021.csv", 10, 1e-8}, {"megatron_2020.csv", 12, 1e-8},       {"korthikanti_2022.csv", 8, 1e-8},
        {"llmfoundry_a100_40gb.csv", 78, 1e-8}, {"llmfoundry_a100_80gb.csv", 61, 1e-8}, {"trn1_table1.csv", 7, 1e-8},
    };
    dev_table dt;
    if (devices_load(&dt, NULL) != 0) {
        CHECK(0, "data/devices.csv does not load");
        return;
    }
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[256];
        snprintf(path, sizeof path, "data/reference/published/%s", files[f].file);
        CHECK(published_is_schema(path) == 1, "%s: not the schema", path);
        pub_table t;
        int rc = published_load(&t, path, &dt);
        CHECK(rc == 0 && t.n == files[f].rows, "%s: rc %d, %d rows, expected %d", path, rc, t.n, files[f].rows);
        double worst = 0;
        for (int i = 0; i < t.n; i++) {
            const pub_row *r = &t.rows[i];
            CHECK(!isnan(r->seq_per_s_column), "%s:%d: no seq_per_s cell", path, r->line);
            double rel = fabs(r->seq_per_s - r->seq_per_s_column) / r->seq_per_s_column;
            if (rel > worst) worst = rel;
            CHECK(published_find(&t, r->id) == r, "%s: find '%s'", path, r->id);
        }
        CHECK(worst <= files[f].worst, "%s: worst relative difference %.3g", path, worst);
        CHECK(published_find(&t, "no-such-id") == NULL, "find of an unknown id");
        published_free(&t);
    }
    devices_free(&dt);
}

/* The shipped rows as model configs: each arch's family architecture, the row's shape. */
static void test_config(void)
{
    dev_table dt;
    pub_table t;
    model_config cfg;
    if (devices_load(&dt, NULL) != 0) {
        CHECK(0, "data/devices.csv does not load");
        return;
    }
    CHECK(published_load(&t, "data/reference/published/trn1_table1.csv", &dt) == 0, "trn1 loads");
    const pub_row *r = published_find(&t, "trn1blog-neox-20b-4x");
    CHECK(r && r->tp * r->pp * r->dp == 2 * r->devices, "trn1: tp x pp x dp counts NeuronCores, 2 a chip");
    CHECK(r && published_config(r, t.path, &cfg) == 0, "neox config");
    CHECK(r && cfg.L == 44 && cfg.C == 6144 && cfg.NH == 64 && cfg.V == 50257 && cfg.max_T == 2048, "neox shape");
    CHECK(cfg.parallel_residual && cfg.pos == POS_ROTARY && cfg.rotary_pct == 0.25 && cfg.rope == ROPE_NEOX &&
              !cfg.tied_embeddings && cfg.norm == NORM_LAYERNORM && cfg.mlp == MLP_GELU,
          "neox architecture");
    CHECK(strcmp(cfg.name, "GPT-NeoX-20B") == 0, "name '%s'", cfg.name);
    published_free(&t);
    CHECK(published_load(&t, "data/reference/published/llmfoundry_a100_80gb.csv", &dt) == 0, "llm-foundry loads");
    r = &t.rows[0];
    CHECK(published_config(r, t.path, &cfg) == 0, "mpt config");
    CHECK(cfg.pos == POS_ALIBI && cfg.attn_nobias && cfg.mlp_nobias && cfg.tied_embeddings && !cfg.parallel_residual &&
              cfg.max_T == r->seq_len,
          "mpt architecture");
    published_free(&t);
    CHECK(published_load(&t, "data/reference/published/megatron_a100_2021.csv", &dt) == 0, "megatron loads");
    r = published_find(&t, "mlm2021-1t");
    CHECK(r && published_config(r, t.path, &cfg) == 0, "gpt config");
    CHECK(cfg.pos == POS_LEARNED && cfg.tied_embeddings && !cfg.parallel_residual && !cfg.attn_nobias &&
              cfg.norm == NORM_LAYERNORM && cfg.mlp == MLP_GELU,
          "gpt architecture");
    /* the published 1,008.0e9 parameters are the tied count: 128 x 12 x 25600^2 + ... */
    CHECK(r && near(model_params_total(&cfg), r->params, 0.001), "1T params %.6g vs %.6g", model_params_total(&cfg),
          r ? r->params : 0);
    published_free(&t);
    devices_free(&dt);
    pub_row llama = small_row("llama", 3, 176);
    capture_stderr_begin();
    int rc = published_config(&llama, "hand.csv", &cfg);
    const char *err = capture_stderr_end();
    CHECK(rc == CB_EUSAGE && strstr(err, "hand.csv:9: column 'kv_heads'"), "4 heads over 3 kv_heads: %d %s", rc, err);
}

/* ---- malformed files: one error line naming file:line and the column, CB_EUSAGE */

static const char *const good_header =
    "id,source,framework,device,devices,devices_per_node,model,arch,layers,d_model,heads,vocab,seq_len,"
    "global_batch,micro_batch,tp,pp,dp,sharding,recompute,precision,metric,value,flop_convention,"
    "peak_tflops,seq_per_s\n";
static const char *const good_row =
    "r1,test,megatron-lm,a100-sxm4-80gb,8,8,t,gpt,2,64,4,1024,128,4,4,8,1,1,none,full,fp16-mixed,"
    "step_time_s,2,,,2\n";

/* good_row with `from` replaced by `to` (once). */
static const char *row_with(const char *from, const char *to)
{
    static char buf[1024];
    const char *p = strstr(good_row, from);
    CHECK(p != NULL, "'%s' not in the row", from);
    if (!p) return good_row;
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(p - good_row), good_row, to, p + strlen(from));
    return buf;
}

/* The one row of `text` (named path) through published_row_check, its cells in pub_cols' order
 * (absent columns empty): its return code, its stderr into err. */
static int row_check_cells(const char *path, const char *text, char *err, size_t n, pub_row *r)
{
    table tb;
    if (table_load_text(&tb, path, text, strlen(text)) != 0 || tb.nrows != 1) {
        CHECK(0, "%s: not one row", path);
        return -99;
    }
    const char *cells[PUB_NCOLS];
    for (int c = 0; c < PUB_NCOLS; c++) {
        int j = table_col(&tb, pub_cols[c].name, 0);
        cells[c] = j >= 0 ? table_cell(&tb, 0, j) : "";
    }
    dev_table dt = test_dev_table();
    capture_stderr_begin();
    int rc = published_row_check(cells, path, tb.lines[0], &dt, r);
    snprintf(err, n, "%s", capture_stderr_end());
    table_free(&tb);
    return rc;
}

/* Loads header + rows from a file called name; expects CB_EUSAGE and one line "error: path:line: want".
 * A single row under the full header gives published_row_check the same error, word for word. */
static void expect_bad(const char *name, const char *header, const char *rows, int line, const char *want)
{
    char *d = test_tmpdir(), path[256], text[4096], prefix[512];
    if (!d) return;
    snprintf(path, sizeof path, "%s/%s.csv", d, name);
    snprintf(text, sizeof text, "# a comment line\n%s%s", header, rows);
    write_text(path, text);
    dev_table dt = test_dev_table();
    pub_table t;
    capture_stderr_begin();
    int rc = published_load(&t, path, &dt);
    const char *err = capture_stderr_end();
    snprintf(prefix, sizeof prefix, "error: %s:%d: %s", path, line, want);
    const char *nl = strchr(err, '\n');
    CHECK(rc == CB_EUSAGE, "%s: rc %d", name, rc);
    CHECK(strncmp(err, prefix, strlen(prefix)) == 0 && nl && nl[1] == '\0', "%s: expected one line '%s...', got '%s'",
          name, prefix, err);
    CHECK(t.n == 0 && t.rows == NULL, "%s: rows left after a failed load", name);
    if (header != good_header || strchr(rows, '\n') != rows + strlen(rows) - 1) return;
    char load_err[4096], cells_err[4096];
    pub_row r;
    snprintf(load_err, sizeof load_err, "%s", err);
    rc = row_check_cells(path, text, cells_err, sizeof cells_err, &r);
    CHECK(rc == CB_EUSAGE && strcmp(cells_err, load_err) == 0, "%s as cells: rc %d, '%s' against the loader's '%s'",
          name, rc, cells_err, load_err);
}

static void test_malformed(void)
{
    char two[2048], hdr[1024];
    expect_bad("good-twice", good_header, (snprintf(two, sizeof two, "%s%s", good_row, good_row), two), 4,
               "column 'id'");
    expect_bad("enum", good_header, row_with(",none,full,", ",ZeRO3,full,"), 3,
               "column 'sharding': expected none, zero1");
    expect_bad("recompute", good_header, row_with(",none,full,", ",none,Full,"), 3, "column 'recompute'");
    expect_bad("negative", good_header, row_with("a100-sxm4-80gb,8,8", "a100-sxm4-80gb,-8,8"), 3,
               "column 'devices': expected an integer");
    expect_bad("layout", good_header, row_with(",8,1,1,none", ",8,1,2,none"), 3,
               "column 'dp': expected tp x pp x dp x cp");
    expect_bad("per-node", good_header, row_with("a100-sxm4-80gb,8,8", "a100-sxm4-80gb,8,3"), 3,
               "column 'devices_per_node'");
    expect_bad("micro", good_header, row_with(",128,4,4,", ",128,4,3,"), 3, "column 'global_batch'");
    expect_bad("mfu-peak", good_header, row_with("step_time_s,2,,,2", "mfu_pct,40,megatron-core,,"), 3,
               "column 'peak_tflops'");
    expect_bad("tflops-conv", good_header, row_with("step_time_s,2,,,2", "tflops_per_device,100,,,"), 3,
               "column 'flop_convention'");
    expect_bad("conv-enum", good_header, row_with("step_time_s,2,,,2", "tflops_per_device,100,Megatron,,"), 3,
               "column 'flop_convention': expected megatron-2021");
    expect_bad("disagree", good_header, row_with("step_time_s,2,,,2", "step_time_s,2,,,2.02"), 3, "column 'seq_per_s'");
    /* an unknown device is an error of its row, not of the file (test_unknown_device); a row about
     * to be written is refused for it (published_row_check): the message this case asserted before */
    {
        char one[2048], err[4096];
        pub_row r;
        snprintf(one, sizeof one, "%s%s", good_header, row_with("a100-sxm4-80gb", "h100-sxm5-80gb"));
        int rc = row_check_cells("device.csv", one, err, sizeof err, &r);
        CHECK(rc == CB_EUSAGE && strstr(err, "device.csv:2: column 'device': expected a device of data/devices.csv "
                                             "(a100-sxm4-40gb, a100-sxm4-80gb, v100-sxm3-32gb, trainium1), got "
                                             "'h100-sxm5-80gb'"),
              "unknown device as cells: rc %d, '%s'", rc, err);
    }
    expect_bad("heads", good_header, row_with(",64,4,1024,", ",64,5,1024,"), 3, "column 'heads'");
    /* a Trainium chip runs 2 ranks: 8 chips at tp 8 leave half the NeuronCores idle */
    expect_bad("trainium", good_header, row_with("a100-sxm4-80gb", "trainium1"), 3,
               "column 'dp': expected tp x pp x dp x cp = devices x "
               "workers per trainium1 = 8 x 2 = 16, got 8 x 1 x 1 x 1");
    snprintf(hdr, sizeof hdr, "%s", good_header);
    char *m = strstr(hdr, "metric,");
    memmove(m, m + strlen("metric,"), strlen(m + strlen("metric,")) + 1);
    expect_bad("missing", hdr, row_with("step_time_s,", ""), 2, "missing column 'metric'");
}

/* An unknown device against data/devices.csv: an error of that row alone, naming the device and
 * listing what the table knows; the file loads, its other rows too, nothing printed. */
static void test_unknown_device(void)
{
    char *d = test_tmpdir(), path[256], text[4096];
    dev_table dt;
    if (!d || devices_load(&dt, NULL) != 0) {
        CHECK(0, "no tmpdir or data/devices.csv");
        return;
    }
    snprintf(path, sizeof path, "%s/tpu.csv", d);
    snprintf(text, sizeof text, "%s%s", good_header, good_row);
    snprintf(text + strlen(text), sizeof text - strlen(text), "%s", row_with("r1,test,megatron-lm,a100-sxm4-80gb",
                                                                          "r2,test,megatron-lm,tpu-v4"));
    write_text(path, text);
    pub_table t;
    capture_stderr_begin();
    int rc = published_load(&t, path, &dt);
    const char *err = capture_stderr_end();
    CHECK(rc == 0 && t.n == 2 && !*err, "a file with an unknown device loads: rc %d, %d rows, '%s'", rc, t.n, err);
    const char *why = t.n == 2 ? t.rows[1].unknown : "";
    CHECK(t.n == 2 && !t.rows[0].unknown[0] && strncmp(why, "column 'device': unknown device 'tpu-v4' (known: ", 49) == 0 &&
              strstr(why, "a100-sxm4-80gb") && strstr(why, "trainium1") && t.rows[1].seq_per_s == 2,
          "the row's reason: '%s'", why);
    /* as a row about to be written: refused, one line naming the file, the column and what is known */
    char one[2048], cerr[4096], want[4608];
    pub_row r;
    snprintf(one, sizeof one, "%s%s", good_header, row_with("a100-sxm4-80gb", "tpu-v4"));
    snprintf(want, sizeof want, "error: %s:2: column 'device': expected a device of data/devices.csv (", path);
    rc = row_check_cells(path, one, cerr, sizeof cerr, &r);
    CHECK(rc == CB_EUSAGE && strncmp(cerr, want, strlen(want)) == 0 && strstr(cerr, "got 'tpu-v4'") &&
              strchr(cerr, '\n') == cerr + strlen(cerr) - 1,
          "unknown device as cells: %d %s", rc, cerr);
    published_free(&t);
    devices_free(&dt);
}

/* The good row loads, on Trainium too when the ranks count NeuronCores. */
static void test_good_row(void)
{
    char *d = test_tmpdir(), path[256], text[2048];
    if (!d) return;
    snprintf(path, sizeof path, "%s/good.csv", d);
    snprintf(text, sizeof text, "%s%s%s", good_header, good_row,
             row_with("r1,test,megatron-lm,a100-sxm4-80gb,8,8", "r2,test,neuron-nemo,trainium1,8,8"));
    char *r2 = strstr(text, "r2,");
    char *lay = r2 ? strstr(r2, ",4,4,8,1,1,") : NULL;
    if (lay) memcpy(lay, ",4,2,8,1,2,", strlen(",4,2,8,1,2,"));
    write_text(path, text);
    dev_table dt = test_dev_table();
    pub_table t;
    CHECK(published_load(&t, path, &dt) == 0 && t.n == 2, "good rows");
    CHECK(t.n == 2 && t.rows[1].dp == 2 && t.rows[1].seq_per_s == 2 && t.rows[0].cp == 1 && t.rows[0].vp == 1 &&
              t.rows[0].kv_heads == 4 && t.rows[0].ffn_dim == 256 && t.rows[0].recompute == RECOMPUTE_FULL &&
              t.rows[0].tied_embeddings == -1 && isnan(t.rows[0].params),
          "defaults");
    /* the same row as cells (published_row_check, import's check of the row it writes): the same row */
    char one[2048], err[4096];
    pub_row r;
    snprintf(one, sizeof one, "%s%s", good_header, good_row);
    int rc = row_check_cells(path, one, err, sizeof err, &r);
    CHECK(rc == 0 && !*err && t.n == 2 && r.seq_per_s == t.rows[0].seq_per_s && r.line == 2 &&
              r.kv_heads == t.rows[0].kv_heads && r.recompute == t.rows[0].recompute,
          "good row as cells: rc %d, '%s'", rc, err);
    published_free(&t);
    CHECK(published_is_schema("data/models.csv") == 0, "models.csv is not the published schema");
}

/* ---- the framework columns (issue 30): framework_version, overlap, attention, compile */

static const char *const fw_header =
    "id,source,framework,framework_version,device,devices,devices_per_node,model,arch,layers,d_model,heads,vocab,"
    "seq_len,global_batch,micro_batch,tp,pp,dp,sequence_parallel,sharding,recompute,precision,metric,value,overlap,"
    "attention,compile\n";
/* a 4-layer GPT at TP 8 with sequence parallelism on one DGX A100: TP traffic and GEMMs to compare */
static const char *const fw_row_start = "test,megatron-core,%s,a100-sxm4-80gb,8,8,t,gpt,4,1024,16,51200,2048,8,1,8,1,1,true,"
                                        "none,none,bf16-mixed,step_time_s,1,%s,%s,%s\n";

/* The rows "id,<fw_row_start with version, overlap, attention, compile>" loaded from memory. */
static int fw_load(pub_table *t, const dev_table *dt, const char *const rows[][5], int n)
{
    char text[8192], fmt[512];
    size_t len = (size_t)snprintf(text, sizeof text, "%s", fw_header);
    for (int i = 0; i < n && len < sizeof text; i++) {
        snprintf(fmt, sizeof fmt, "%%s,%s", fw_row_start);
        len += (size_t)snprintf(text + len, sizeof text - len, fmt, rows[i][0], rows[i][1], rows[i][2], rows[i][3],
                                rows[i][4]);
    }
    return published_load_text(t, "fw.csv", text, strlen(text), dt);
}

static void test_fw_columns_read(void)
{
    dev_table dt = test_dev_table();
    const char *const rows[][5] = {{"empty", "", "", "", ""},
                                   {"stated", "core_r0.8.0", "grad_reduce+tp_comm", "materialised", "true"},
                                   {"none", "2021", "none", "cudnn", "false"}};
    pub_table t;
    CHECK(fw_load(&t, &dt, rows, 3) == 0 && t.n == 3, "three rows with the framework columns");
    if (t.n == 3) {
        const pub_row *e = &t.rows[0], *s = &t.rows[1], *z = &t.rows[2];
        CHECK(!*e->framework_version && e->overlap == -1 && e->attention == -1 && e->compile == -1,
              "empty cells: not published");
        CHECK(strcmp(s->framework_version, "core_r0.8.0") == 0 && s->overlap == (PUB_OVERLAP_GRAD | PUB_OVERLAP_TP) &&
                  s->attention == PUB_ATTN_MATERIALISED && s->compile == 1,
              "stated: %s %d %d %d", s->framework_version, s->overlap, s->attention, s->compile);
        CHECK(z->overlap == 0 && z->attention == PUB_ATTN_CUDNN && z->compile == 0, "none, cudnn, false");
    }
    published_free(&t);
    static const char *const bad[] = {"grad", "grad_reduce+grad_reduce", "grad_reduce+", "+tp_comm", "none+tp_comm"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const char *const one[][5] = {{"bad", "", bad[k], "", ""}};
        capture_stderr_begin();
        int rc = fw_load(&t, &dt, one, 1);
        const char *err = capture_stderr_end();
        CHECK(rc == CB_EUSAGE && strstr(err, "error: fw.csv:2: column 'overlap': expected grad_reduce, param_gather, "
                                             "tp_comm joined by '+'") &&
                  strstr(err, bad[k]),
              "overlap '%s': %d %s", bad[k], rc, err);
    }
    const char *const attn[][5] = {{"bad", "", "", "tiled", ""}};
    capture_stderr_begin();
    int rc = fw_load(&t, &dt, attn, 1);
    const char *err = capture_stderr_end();
    CHECK(rc == CB_EUSAGE && strstr(err, "fw.csv:2: column 'attention'"), "attention 'tiled': %d %s", rc, err);
}

/* The writer (import's logrow_save) writes the four columns and the loader reads them back. */
static void test_fw_columns_roundtrip(void)
{
    char *d = test_tmpdir(), path[256], text[2048];
    if (!d) return;
    snprintf(text, sizeof text, "%s", fw_header);
    snprintf(text + strlen(text), sizeof text - strlen(text), "rt,");
    snprintf(text + strlen(text), sizeof text - strlen(text), fw_row_start, "25.09", "param_gather+grad_reduce",
             "flash", "false");
    table tb;
    logrow row;
    memset(&row, 0, sizeof row);
    if (table_load_text(&tb, "rt.csv", text, strlen(text)) != 0) return;
    for (int c = 0; c < PUB_NCOLS; c++) {
        int j = table_col(&tb, pub_cols[c].name, 0);
        if (j >= 0) snprintf(row.cell[c], sizeof row.cell[c], "%s", table_cell(&tb, 0, j));
    }
    table_free(&tb);
    snprintf(path, sizeof path, "%s/rt.csv", d);
    const char *comments[] = {"written by the round-trip test"};
    capture_stderr_begin();
    int rc = logrow_save(&row, comments, 1, path);
    const char *err = capture_stderr_end();
    CHECK(rc == 0, "logrow_save: %d %s", rc, err);
    dev_table dt;
    pub_table t;
    if (devices_load(&dt, NULL) != 0) return;
    CHECK(published_load(&t, path, &dt) == 0 && t.n == 1, "the written file loads");
    CHECK(t.n == 1 && strcmp(t.rows[0].framework_version, "25.09") == 0 &&
              t.rows[0].overlap == (PUB_OVERLAP_GRAD | PUB_OVERLAP_PARAM) && t.rows[0].attention == PUB_ATTN_FLASH &&
              t.rows[0].compile == 0,
          "round trip: '%s' %d %d %d", t.n ? t.rows[0].framework_version : "", t.n ? t.rows[0].overlap : -9,
          t.n ? t.rows[0].attention : -9, t.n ? t.rows[0].compile : -9);
    published_free(&t);
    devices_free(&dt);
}

/* Row k of t as the step model (pubmodel.h) and its step profile (*p); why into why. */
static int fw_model(const pub_table *t, int k, const hw_table *ht, const dev_table *dt, scale_model *s,
                    step_profile *p, char *why, size_t n)
{
    scale_model d;
    memset(&d, 0, sizeof d);
    d.interleave = 1, d.bucket_bytes = 25.0 * 1048576.0, d.net_eff = 1.0; /* validate's defaults */
    const pub_model_env pe = {ht, dt, NULL, -1};
    long nodes = 0;
    int rc = pub_scale_model(&t->rows[k], "fw.csv", &pe, &d, s, &nodes, why, n);
    if (rc == 0) *p = *step_profile_get(s);
    return rc;
}

/* The shipped device and hardware tables (a failure is a failed check, not a skipped test). */
static int tables_load(dev_table *dt, hw_table *ht)
{
    char hw_path[4096];
    int rc = devices_load(dt, NULL);
    CHECK(rc == 0, "data/devices.csv loads");
    if (rc != 0) return -1;
    rc = machine_data_file(hw_path, sizeof hw_path, "hardware.csv") == 0 ? hardware_load_dev(ht, hw_path, dt) : -1;
    CHECK(rc == 0, "data/hardware.csv loads");
    if (rc != 0) devices_free(dt);
    return rc;
}

/* A row's stated overlap and attention beat its framework's defaults: tp_comm hides the TP
 * collectives under the layer's GEMMs; materialised attention charges the s x s scores. */
static void test_fw_columns_applied(void)
{
    dev_table dt;
    hw_table ht;
    if (tables_load(&dt, &ht) != 0) return;
    const char *const rows[][5] = {{"default", "", "", "", ""},
                                   {"tp", "", "tp_comm", "", ""},
                                   {"mat", "", "", "materialised", ""},
                                   {"old", "core_v0.4.0", "", "", ""},
                                   {"unknown", "banana", "", "", ""}};
    pub_table t;
    CHECK(fw_load(&t, &dt, rows, 5) == 0 && t.n == 5, "five rows");
    scale_model s[5];
    step_profile p[5];
    char why[5][512];
    for (int k = 0; k < t.n; k++) CHECK(fw_model(&t, k, &ht, &dt, &s[k], &p[k], why[k], sizeof why[k]) == 0, "row %d maps: %s", k, why[k]);
    if (t.n == 5) {
        /* megatron-core core_v0.6+: TE attention, nothing overlapped */
        CHECK(s[0].attn_flash && !s[0].tp_overlap && !s[0].grad_overlap && !why[0][0], "the default era");
        /* the era's async backward collectives (tp_bwd_overlap) hide part of the TP time already; tp_comm
         * hides all of it (parts.tp_s) under the GEMMs */
        CHECK(s[0].tp_bwd_overlap && p[0].tp_per_mb_s < p[0].parts.tp_s, "the default era: backward TP partly hidden");
        CHECK(s[1].tp_overlap && p[1].tp_per_mb_s < p[0].tp_per_mb_s && p[0].tp_per_mb_s > 0 &&
                  fabs(p[1].tp_per_mb_s - fmax(0.0, p[0].parts.tp_s - p[0].parts.gemm_s)) < 1e-12,
              "tp_comm: TP %.6g s a micro-batch, under GEMMs %.6g s: %.6g exposed", p[0].parts.tp_s,
              p[0].parts.gemm_s, p[1].tp_per_mb_s);
        CHECK(!s[2].attn_flash && p[2].t_device_s > p[0].t_device_s, "materialised: %.6g s > tiled %.6g s",
              p[2].t_device_s, p[0].t_device_s);
        CHECK(!s[3].attn_flash && p[3].t_device_s == p[2].t_device_s, "core_v0.4.0: the local (materialised) kernel");
        CHECK(s[4].attn_flash && strstr(why[4], "unknown version 'banana'") && strstr(why[4], "core_v0.6+ assumed"),
              "an unknown version: the default era, named: '%s'", why[4]);
    }
    published_free(&t);
    hardware_free(&ht);
    devices_free(&dt);
}

/* ---- the fp8_recipe column (issue 30): an fp8 row's scaling, its casts' traffic */

static const char *const recipe_header =
    "id,source,framework,device,devices,devices_per_node,model,arch,layers,d_model,heads,vocab,seq_len,global_batch,"
    "micro_batch,tp,pp,dp,sequence_parallel,sharding,recompute,precision,metric,value,fp8_recipe\n";
/* a 4-layer GPT on one DGX H100 (an FP8 peak) at TP 8 */
static const char *const recipe_row =
    "%s,t,megatron-core,h100-sxm5-80gb,8,8,t,gpt,4,1024,16,51200,2048,8,1,8,1,1,true,none,none,%s,step_time_s,1,%s\n";

/* A published file of `header` and one row a triple (id and two cells) through the printf format `row`,
 * loaded as `name`. */
static int rows3_load(pub_table *t, const dev_table *dt, const char *name, const char *header, const char *row,
                      const char *const rows[][3], int n)
{
    char text[4096];
    size_t len = (size_t)snprintf(text, sizeof text, "%s", header);
    for (int i = 0; i < n && len < sizeof text; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, row, rows[i][0], rows[i][1], rows[i][2]);
    return published_load_text(t, name, text, strlen(text), dt);
}

static int recipe_load(pub_table *t, const dev_table *dt, const char *const rows[][3], int n)
{
    return rows3_load(t, dt, "recipe.csv", recipe_header, recipe_row, rows, n);
}

/* delayed, current, mxfp8 read; empty: not published (delayed); another word, or a recipe on a row that
 * is not fp8: one error naming the column. The model takes it: current scaling's casts move more bytes. */
static void test_fp8_recipe_column(void)
{
    dev_table dt;
    hw_table ht;
    if (tables_load(&dt, &ht) != 0) return;
    const char *const rows[][3] = {
        {"empty", "fp8", ""}, {"delayed", "fp8", "delayed"}, {"current", "fp8", "current"}, {"mx", "fp8", "mxfp8"}};
    pub_table t;
    CHECK(recipe_load(&t, &dt, rows, 4) == 0 && t.n == 4, "four fp8 rows");
    if (t.n == 4) {
        CHECK(t.rows[0].fp8_recipe == -1 && t.rows[1].fp8_recipe == PUB_FP8_DELAYED &&
                  t.rows[2].fp8_recipe == PUB_FP8_CURRENT && t.rows[3].fp8_recipe == PUB_FP8_MXFP8,
              "read: %d %d %d %d", t.rows[0].fp8_recipe, t.rows[1].fp8_recipe, t.rows[2].fp8_recipe,
              t.rows[3].fp8_recipe);
        scale_model s[4];
        step_profile p[4];
        char why[4][512];
        for (int k = 0; k < 4; k++)
            CHECK(fw_model(&t, k, &ht, &dt, &s[k], &p[k], why[k], sizeof why[k]) == 0, "row %d maps: %s", k, why[k]);
        CHECK(s[0].fp8_recipe == OP_FP8_DELAYED && s[1].fp8_recipe == OP_FP8_DELAYED &&
                  s[2].fp8_recipe == OP_FP8_CURRENT && s[3].fp8_recipe == OP_FP8_MXFP8,
              "the model's recipe: %d %d %d %d", s[0].fp8_recipe, s[1].fp8_recipe, s[2].fp8_recipe, s[3].fp8_recipe);
        CHECK(p[0].parts.mem_s == p[1].parts.mem_s && p[2].parts.mem_s > p[3].parts.mem_s &&
                  p[3].parts.mem_s > p[1].parts.mem_s && p[2].step_mem_bytes == 1.5 * p[1].step_mem_bytes,
              "memory time: empty = delayed %.6g s < mxfp8 %.6g s < current %.6g s; weight casts x 1.5",
              p[1].parts.mem_s, p[3].parts.mem_s, p[2].parts.mem_s);
    }
    published_free(&t);
    const char *const bad[][3] = {{"word", "fp8", "tensorwise"}, {"bf16", "bf16-mixed", "current"}};
    const char *const said[] = {"column 'fp8_recipe'", "column 'fp8_recipe': 'current' is an fp8 run's scaling, but "
                                                       "precision is 'bf16-mixed'"};
    for (int k = 0; k < 2; k++) {
        capture_stderr_begin();
        int rc = recipe_load(&t, &dt, &bad[k], 1);
        const char *err = capture_stderr_end();
        CHECK(rc == CB_EUSAGE && strstr(err, "recipe.csv:2: ") && strstr(err, said[k]), "%s: %d %s", bad[k][0], rc,
              err);
    }
    hardware_free(&ht);
    devices_free(&dt);
}

/* ---- the recompute_layers column (issue 30): full recompute of that many layers of each stage */

static const char *const rcl_header =
    "id,source,framework,device,devices,devices_per_node,model,arch,layers,d_model,heads,vocab,seq_len,global_batch,"
    "micro_batch,tp,pp,dp,sequence_parallel,sharding,recompute,precision,metric,value,recompute_layers\n";
/* a 4-layer GPT on one DGX H100 at TP 8, one stage of 4 layers */
static const char *const rcl_row =
    "%s,t,megatron-core,h100-sxm5-80gb,8,8,t,gpt,4,1024,16,51200,2048,8,1,8,1,1,true,none,%s,bf16-mixed,step_time_s,1,"
    "%s\n";

static int rcl_load(pub_table *t, const dev_table *dt, const char *const rows[][3], int n)
{
    return rows3_load(t, dt, "rcl.csv", rcl_header, rcl_row, rows, n);
}

/* Read (empty: 0, every layer); the model's share: 4 of the stage's 4 layers is full recompute, 2 of
 * them half of its recompute time; a count under recompute none, past the stage's layers, 0 or not a
 * number: one error naming the column. */
static void test_recompute_layers_column(void)
{
    dev_table dt;
    hw_table ht;
    if (tables_load(&dt, &ht) != 0) return;
    const char *const rows[][3] = {{"all", "full", ""}, {"four", "full", "4"}, {"two", "full", "2"}, {"none", "none", ""}};
    pub_table t;
    CHECK(rcl_load(&t, &dt, rows, 4) == 0 && t.n == 4, "four rows");
    if (t.n == 4) {
        CHECK(t.rows[0].recompute_layers == 0 && t.rows[1].recompute_layers == 4 && t.rows[2].recompute_layers == 2,
              "read: %d %d %d", t.rows[0].recompute_layers, t.rows[1].recompute_layers, t.rows[2].recompute_layers);
        scale_model s[4];
        step_profile p[4];
        char why[4][512];
        for (int k = 0; k < 4; k++)
            CHECK(fw_model(&t, k, &ht, &dt, &s[k], &p[k], why[k], sizeof why[k]) == 0, "row %d maps: %s", k, why[k]);
        double want = p[3].t_device_s + 0.5 * (p[0].t_device_s - p[3].t_device_s);
        CHECK(scale_recompute_share(&s[1]) == 1 && p[1].t_device_s == p[0].t_device_s &&
                  scale_recompute_share(&s[2]) == 0.5 && fabs(p[2].t_device_s / want - 1) < 1e-12,
              "4 of 4 layers: full (%.9g s); 2 of 4: %.9g s, by hand %.9g", p[1].t_device_s, p[2].t_device_s, want);
    }
    published_free(&t);
    const char *const bad[][3] = {
        {"sel", "selective", "2"}, {"many", "full", "5"}, {"zero", "full", "0"}, {"word", "full", "half"}};
    const char *const said[] = {
        "column 'recompute_layers': the layers a stage recomputes in full need recompute full, got recompute "
        "'selective'",
        "column 'recompute_layers': expected at most the 4 layers a pipeline stage holds (layers 4 over pp 1 x vp 1), "
        "got '5'",
        "column 'recompute_layers'", "column 'recompute_layers'"};
    for (int k = 0; k < 4; k++) {
        capture_stderr_begin();
        int rc = rcl_load(&t, &dt, &bad[k], 1);
        const char *err = capture_stderr_end();
        CHECK(rc == CB_EUSAGE && strstr(err, "rcl.csv:2: ") && strstr(err, said[k]), "%s: %d %s", bad[k][0], rc, err);
    }
    hardware_free(&ht);
    devices_free(&dt);
}

/* The attention kernel a row runs (report/predict/attnpick.h): its attention column, else its framework
 * era's by the device's compute capability; its curve the device's row of data/attention.csv, a kernel
 * the device has none for named (the device's own curve kept). One-node rows, 4-layer GPT, TP 1. */
static void test_fw_attention_kernel(void)
{
    dev_table dt;
    hw_table ht;
    if (tables_load(&dt, &ht) != 0) return;
    static const struct {
        const char *fw, *version, *device, *attention, *kernel;
        double e_max; /* the curve the row runs at */
        int noted;
    } want[] = {
        {"megatron-core", "", "h100-sxm5-80gb", "", "cudnn", 0.522, 0},  /* TE: cuDNN fused on sm 9.0 */
        {"megatron-core", "", "a100-sxm4-80gb", "", "flash2", 0.618, 0}, /* TE: flash-attn 2 on sm 8.0 */
        {"megatron-bridge", "25.09", "b200", "", "cudnn", 0.580, 0},
        {"megatron-core", "", "h100-pcie-80gb", "", "cudnn", 0.522, 0}, /* a variant: its family's */
        {"llm-foundry", "", "a100-sxm4-40gb", "", "triton", 0.256, 0},  /* the 2023 tables' era */
        {"llm-foundry", "v0.2.0", "a100-sxm4-80gb", "", "triton", 0.256, 0},
        {"llm-foundry", "v0.7.0", "a100-sxm4-80gb", "", "flash2", 0.618, 0},
        {"megatron-core", "", "h100-sxm5-80gb", "flash", "flash2", 0.336, 0}, /* stated: the era's flash */
        {"megatron-core", "", "a100-sxm4-80gb", "cudnn", "cudnn", 0.496, 0},
        {"megatron-lm", "2022", "a100-sxm4-80gb", "flash", "flash1", 0.261, 0},
        {"megatron-core", "", "h100-sxm5-80gb", "materialised", "", 0.336, 0}, /* not a curve */
        {"torchtitan", "", "mi300x", "", "", 0.35, 1}, /* no flash2 curve: its own, named */
    };
    const int n = (int)(sizeof want / sizeof want[0]);
    char text[8192];
    size_t len = (size_t)snprintf(text, sizeof text, "%s", fw_header);
    for (int k = 0; k < n && len < sizeof text; k++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "k%d,test,%s,%s,%s,8,8,t,gpt,4,1024,16,51200,2048,8,1,1,1,8,false,none,none,"
                                "bf16-mixed,step_time_s,1,,%s,\n",
                                k, want[k].fw, want[k].version, want[k].device, want[k].attention);
    pub_table t;
    CHECK(published_load_text(&t, "fw.csv", text, strlen(text), &dt) == 0 && t.n == n, "%d rows", n);
    for (int k = 0; k < n && t.n == n; k++) {
        scale_model s;
        step_profile p;
        char why[512];
        int rc = fw_model(&t, k, &ht, &dt, &s, &p, why, sizeof why);
        CHECK(rc == 0 && strcmp(s.hw.attn_kernel, want[k].kernel) == 0 && fabs(s.hw.attn_eff_max - want[k].e_max) < 1e-9 &&
                  (strstr(why, "attention: no flash2 curve for mi300x") != NULL) == want[k].noted,
              "%s@%s on %s, attention '%s': kernel '%s' (want '%s'), curve %g (want %g), note '%s'", want[k].fw,
              want[k].version, want[k].device, want[k].attention, s.hw.attn_kernel, want[k].kernel, s.hw.attn_eff_max,
              want[k].e_max, why);
    }
    published_free(&t);
    hardware_free(&ht);
    devices_free(&dt);
}

const test_case tests_published[] = {
    {"published fp8_recipe column: read, checked, its casts' traffic in the step", test_fp8_recipe_column},
    {"published recompute_layers column: read, checked, the share of the layers recomputed in the step",
     test_recompute_layers_column},
    {"published flops gpt", test_flops_gpt},
    {"published flops llama", test_flops_llama},
    {"published mfu crosscheck", test_mfu_crosscheck},
    {"published metrics", test_metrics},
    {"published shipped files", test_shipped},
    {"published config", test_config},
    {"published malformed", test_malformed},
    {"published good rows", test_good_row},
    {"published unknown device", test_unknown_device},
    {"published framework columns: read, checked", test_fw_columns_read},
    {"published framework columns: the writer round-trips them", test_fw_columns_roundtrip},
    {"published framework columns: a row's overlap and attention beat the framework's defaults",
     test_fw_columns_applied},
    {"published attention kernel: a row runs the kernel its attention column, else its era and device, say",
     test_fw_attention_kernel},
    {0},
};
