/* Model descriptions in train, scale and plan: --models FILE (a preset only that file has), the
 * shape overrides and --max-seq-len from one shared fragment, --seq against the limit, bad
 * values and a malformed models file as one error each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/presets.h"
#include "check.h"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

/* One "error: " line and nothing else but an optional "hint: " line after it. */
static int one_error(const char *err)
{
    const char *nl = strchr(err, '\n');
    return strncmp(err, "error: ", 7) == 0 && nl &&
           (nl[1] == '\0' || (strncmp(nl + 1, "hint: ", 6) == 0 && count_lines(err) == 2));
}

#define MODELS_HEADER                                                                                                  \
    "# my presets\n"                                                                                                   \
    "name,family,layers,d_model,heads,vocab,rotary_pct,rotary_base,parallel_residual,tied_embeddings,pos_emb,max_seq_" \
    "len,"                                                                                                             \
    "norm,norm_eps,norm_bias,mlp,ffn_dim,kv_heads,rotary_style,attn_bias,mlp_bias,lm_head_bias,shared_norm,source\n"
/* A row only this file has: Llama-2 7B's shape at 32k tokens. */
#define LONG_ROW                                                                                                       \
    "llama2-7b-32k,llama2,32,4096,32,32000,1,500000,false,false,rotary,32768,rmsnorm,1e-5,false,swiglu,11008,32,neox," \
    "false,false,false,false,a long-context variant\n"

/* FILE in a new directory holding MODELS_HEADER then `rows`; NULL after a failed check. */
static const char *models_file(const char *rows)
{
    static char path[8][256];
    static int k;
    char *d = test_tmpdir();
    if (!d) return NULL;
    char *p = path[k++ % 8];
    snprintf(p, sizeof path[0], "%s/models.csv", d);
    char text[4096];
    snprintf(text, sizeof text, "%s%s", MODELS_HEADER, rows);
    write_text(p, text);
    return p;
}

#define SCALE_ARGS "scale", "--instance", "p5.48xlarge", "--tp", "8", "--global-batch", "64", "--nodes", "1,2"
#define PLAN_ARGS "plan", "--tokens", "20B", "--deadline-days", "30", "--instances", "p5.48xlarge", "--top", "2"

/* scale --models FILE --model (a row only FILE has): predicted, the CSV names it, and report
 * --models FILE prices that CSV; data/models.csv alone does not know it. */
static void test_models_scale_file(void)
{
    const char *m = models_file(LONG_ROW);
    if (!m) return;
    char csv[300], out[300];
    snprintf(csv, sizeof csv, "%s.scale.csv", m);
    snprintf(out, sizeof out, "%s.report", m);
    const char *a[] = {SCALE_ARGS, "--models", m, "--model", "llama2-7b-32k", "--seq", "32768", "--csv", csv, NULL};
    int rc = run(a);
    CHECK(rc == 0 && strstr(g_out, "# llama2-7b-32k, p5.48xlarge:"), "scale --models: exit %d: %s%s", rc, g_out, g_err);
    char text[16384];
    slurp(csv, text, sizeof text);
    CHECK(strstr(text, ",llama2-7b-32k,") && strstr(text, ",32768,"), "the CSV names the model and its seq: %.400s",
          text);
    const char *r[] = {"report", "--throughput", csv, "--models", m, "--out", out, NULL};
    rc = run(r);
    CHECK(rc == 0, "report --models reads the scale CSV of the file's model: exit %d: %s", rc, g_err);
    const char *b[] = {SCALE_ARGS, "--model", "llama2-7b-32k", "--seq", "32768", NULL};
    rc = run(b);
    CHECK(rc == 2 && one_error(g_err) && strstr(g_err, "unknown model preset 'llama2-7b-32k'"),
          "without --models: exit %d: %s", rc, g_err);
}

/* plan --models FILE: the search runs on the file's model at its max_seq_len (the --seq default). */
static void test_models_plan_file(void)
{
    const char *m = models_file(LONG_ROW);
    if (!m) return;
    const char *a[] = {PLAN_ARGS, "--models", m, "--model", "llama2-7b-32k", NULL};
    int rc = run(a);
    CHECK(rc == 0 && strstr(g_out, "# plan: llama2-7b-32k (6.74 B parameters)") && strstr(g_out, "seq 32768"),
          "plan --models: exit %d: %.600s%s", rc, g_out, g_err);
    const char *b[] = {PLAN_ARGS, "--model", "llama2-7b-32k", NULL};
    rc = run(b);
    CHECK(rc == 2 && one_error(g_err) && strstr(g_err, "unknown model preset"), "without --models: exit %d: %s", rc,
          g_err);
}

/* A preset the file lacks is one error naming the file (a hint lists the file's presets), in
 * train, scale and plan alike; a missing file is one error naming it. */
static void test_models_unknown_preset(void)
{
    const char *m = models_file(LONG_ROW);
    if (!m) return;
    char want[320];
    snprintf(want, sizeof want,
             "error: unknown model preset 'llama2-7b' (not in %s)\nhint: known presets: llama2-7b-32k\n", m);
    const char *cmds[][16] = {
        {SCALE_ARGS, "--models", m, "--model", "llama2-7b", NULL},
        {PLAN_ARGS, "--models", m, "--model", "llama2-7b", NULL},
        {"train", "--models", m, "--model", "llama2-7b", NULL},
    };
    for (int i = 0; i < 3; i++) {
        int rc = run(cmds[i]);
        CHECK(rc == 2 && strcmp(g_err, want) == 0, "%s: exit %d: %s", cmds[i][0], rc, g_err);
    }
    const char *none[] = {SCALE_ARGS, "--models", "/tmp/costbench-no-such-models.csv", "--model", "llama2-7b", NULL};
    int rc = run(none);
    CHECK(rc != 0 && count_lines(g_err) == 1 && strstr(g_err, "/tmp/costbench-no-such-models.csv"),
          "missing file: exit %d: %s", rc, g_err);
}

/* A malformed models file: one line FILE:LINE: column 'x', exit 1, in scale, plan and train. */
static void test_models_malformed_file(void)
{
    static const struct {
        const char *row, *expect;
    } bad[] = {
        {"x,llama2,32,4096,32,32000,1,10000,false,false,rotary,4096k,,,,,,,,,,,,s\n",
         ":3: column 'max_seq_len': expected"},
        {"x,llama2,32,4096,30,32000,1,10000,false,false,rotary,4096,,,,,,,,,,,,s\n",
         ":3: column 'heads': d_model 4096 is not a multiple of 30 heads"},
        {"x,llama2,32,4096,32,32000,1,10000,false,false,rotary,4096,rmsnorm,,,swiglu,11008,5,,,,,,s\n",
         ":3: column 'kv_heads'"},
        {"x,llama2,32,4096,32,32000,1,10000,false,false,rotary,4096,,,,,,,,,,,,\n",
         ":3: column 'source': expected a value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *m = models_file(bad[i].row);
        if (!m) return;
        char want[400];
        snprintf(want, sizeof want, "error: %s%s", m, bad[i].expect);
        const char *cmds[][16] = {
            {SCALE_ARGS, "--models", m, "--model", "x", NULL},
            {PLAN_ARGS, "--models", m, "--model", "x", NULL},
            {"train", "--models", m, "--model", "x", NULL},
        };
        for (int c = 0; c < 3; c++) {
            int rc = run(cmds[c]);
            CHECK(rc == 1 && count_lines(g_err) == 1 && strncmp(g_err, want, strlen(want)) == 0,
                  "row %zu, %s: exit %d, expected '%s': %s", i, cmds[c][0], rc, want, g_err);
        }
    }
}

/* llama2-7b (max_seq_len 4096) at seq 8192: refused with a hint at --max-seq-len, accepted with
 * --max-seq-len 8192 (the name kept: rotary, the same weights); --seq above --max-seq-len is
 * refused naming it. Train: the seq check passes, the next check (the batch) stops it. */
static void test_models_max_seq_len_scale_plan_train(void)
{
    const char *ok[][24] = {
        {SCALE_ARGS, "--model", "llama2-7b", "--seq", "8192", "--max-seq-len", "8192", NULL},
        {PLAN_ARGS, "--model", "llama2-7b", "--seq", "8192", "--max-seq-len", "8192", NULL},
    };
    for (int i = 0; i < 2; i++) {
        int rc = run(ok[i]);
        CHECK(rc == 0 && strstr(g_out, "llama2-7b") && !strstr(g_out, "custom"), "%s at 8192: exit %d: %s", ok[i][0],
              rc, g_err);
    }
    CHECK(run(ok[1]) == 0 && strstr(g_out, "seq 8192"), "plan's seq: %.300s", g_out);
    const char *tr[] = {"train", "--model", "llama2-7b", "--seq", "8192", "--max-seq-len", "8192", "--micro-batch", "2",
                        "--global-batch", "3", NULL};
    int rc = run(tr);
    CHECK(rc == 2 && strstr(g_err, "flag '--global-batch'") && !strstr(g_err, "--seq"), "train at 8192: exit %d: %s",
          rc, g_err);
    const char *seq_only[][24] = {
        {SCALE_ARGS, "--model", "llama2-7b", "--seq", "8192", NULL},
        {PLAN_ARGS, "--model", "llama2-7b", "--seq", "8192", NULL},
        {"train", "--model", "llama2-7b", "--seq", "8192", NULL},
    };
    const char *want = "error: flag '--seq': 8192 exceeds llama2-7b's max_seq_len 4096\nhint: give '--max-seq-len "
                       "8192' to describe the model at that length\n";
    for (int i = 0; i < 3; i++) {
        rc = run(seq_only[i]);
        CHECK(rc == 2 && strcmp(g_err, want) == 0, "%s without --max-seq-len: exit %d: %s", seq_only[i][0], rc, g_err);
    }
    const char *over[][24] = {
        {SCALE_ARGS, "--model", "llama2-7b", "--seq", "16384", "--max-seq-len", "8192", NULL},
        {PLAN_ARGS, "--model", "llama2-7b", "--seq", "16384", "--max-seq-len", "8192", NULL},
        {"train", "--model", "llama2-7b", "--seq", "16384", "--max-seq-len", "8192", NULL},
    };
    for (int i = 0; i < 3; i++) {
        rc = run(over[i]);
        CHECK(
            rc == 2 && count_lines(g_err) == 1 &&
                strstr(g_err,
                       "error: flag '--seq': 16384 exceeds the max_seq_len 8192 that '--max-seq-len' gives llama2-7b"),
            "%s above --max-seq-len: exit %d: %s", over[i][0], rc, g_err);
    }
    /* lowered: a 2048-max preset at --max-seq-len 1024 refuses --seq 2048 */
    const char *low[] = {SCALE_ARGS, "--model", "pythia-1b", "--seq", "2048", "--max-seq-len", "1024", NULL};
    rc = run(low);
    CHECK(rc == 2 && strstr(g_err, "'--max-seq-len' gives pythia-1b"), "lowered limit: exit %d: %s", rc, g_err);
}

/* A learned-position model trains one step at a raised limit (its position table grows, so it is
 * PRESET-custom), and refuses --seq one past it. */
static void test_models_max_seq_len_train_run(void)
{
    const char *a[] = {"train", "--model", "gpt3-125m", "--layers", "1", "--d-model", "32", "--heads", "2", "--vocab",
                       "64", "--micro-batch", "1", "--steps", "1", "--no-predict", "--quiet", "--peak-gflops", "100",
                       "--discard-steps", "0", "--max-seq-len", "4096", "--seq", "4096", NULL};
    int rc = run(a);
    CHECK(rc == 0 && strstr(g_out, "# gpt3-125m-custom: L=1 C=32") && strstr(g_out, "seq 4096"),
          "train at 4096: exit %d: %.300s%s", rc, g_out, g_err);
    const char *b[] = {"train", "--model", "gpt3-125m", "--layers", "1", "--d-model", "32", "--heads", "2", "--vocab",
                       "64", "--max-seq-len", "64", "--seq", "65", NULL};
    rc = run(b);
    CHECK(rc == 2 &&
              strstr(g_err, "flag '--seq': 65 exceeds the max_seq_len 64 that '--max-seq-len' gives gpt3-125m-custom"),
          "train above the lowered limit: exit %d: %s", rc, g_err);
}

/* The override itself: rotary keeps the name and the parameters; learned positions add (new -
 * old) x d_model parameters and rename. */
static void test_models_max_seq_len_override(void)
{
    model_config c, base;
    const model_overrides ov = {.max_seq_len = 8192};
    CHECK(model_preset_find("llama2-7b", &base) == 0, "llama2-7b");
    c = base;
    CHECK(model_config_override(&c, &ov) == 0 && c.max_T == 8192 && strcmp(c.name, "llama2-7b") == 0 &&
              model_params_total(&c) == model_params_total(&base),
          "llama2-7b at 8192: %s, max_T %d", c.name, c.max_T);
    CHECK(model_preset_find("gpt3-125m", &base) == 0, "gpt3-125m");
    c = base;
    CHECK(model_config_override(&c, &ov) == 0 && c.max_T == 8192 && strcmp(c.name, "gpt3-125m-custom") == 0 &&
              model_params_total(&c) - model_params_total(&base) == (8192.0 - 2048.0) * 768.0,
          "gpt3-125m at 8192: %s, %.0f more parameters", c.name, model_params_total(&c) - model_params_total(&base));
    const model_overrides same = {.max_seq_len = 2048};
    c = base;
    CHECK(model_config_override(&c, &same) == 0 && strcmp(c.name, "gpt3-125m") == 0, "its own limit keeps the name: %s",
          c.name);
}

/* --max-seq-len and the overrides take positive decimal integers within models.csv's range: 0,
 * negative, hex, a fraction, empty and past the range are one error naming the flag, exit 2. */
static void test_models_bad_values(void)
{
    const char *vals[] = {"0", "-1", "0x2000", "8192.5", "", "2000000", "nan"};
    for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
        const char *cmds[][24] = {
            {SCALE_ARGS, "--model", "llama2-7b", "--max-seq-len", vals[v], NULL},
            {PLAN_ARGS, "--model", "llama2-7b", "--max-seq-len", vals[v], NULL},
            {"train", "--model", "llama2-7b", "--max-seq-len", vals[v], NULL},
        };
        for (int c = 0; c < 3; c++) {
            int rc = run(cmds[c]);
            CHECK(rc == 2 && count_lines(g_err) == 1 &&
                      strncmp(g_err, "error: flag '--max-seq-len': expected an integer from 1 to 1048576", 66) == 0,
                  "%s --max-seq-len '%s': exit %d: %s", cmds[c][0], vals[v], rc, g_err);
        }
    }
    const char *layers[] = {SCALE_ARGS, "--model", "llama2-7b", "--layers", "1001", NULL};
    int rc = run(layers);
    CHECK(rc == 2 && strstr(g_err, "flag '--layers': expected an integer from 1 to 1000"),
          "scale --layers 1001: exit %d: %s", rc, g_err);
    const char *models[] = {PLAN_ARGS, "--model", "llama2-7b", "--models", "", NULL};
    rc = run(models);
    CHECK(rc == 2 && strstr(g_err, "flag '--models'"), "plan --models '': exit %d: %s", rc, g_err);
}

/* The three commands list the same model flags (one fragment). */
static void test_models_help_same_flags(void)
{
    static const char *const flags[] = {"--models FILE", "--layers L", "--d-model C", "--heads NH", "--kv-heads N",
                                        "--ffn N", "--vocab V", "--max-seq-len N"};
    const char *cmds[] = {"train", "scale", "plan"};
    for (int c = 0; c < 3; c++) {
        const char *a[] = {cmds[c], "--help", NULL};
        int rc = run(a);
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
            CHECK(rc == 0 && strstr(g_out, flags[f]), "%s --help lacks '%s'", cmds[c], flags[f]);
    }
}

/* --calibrate looks a throughput row's model up in the --models file too. */
static void test_models_calibrate_file(void)
{
    const char *m = models_file(LONG_ROW);
    if (!m) return;
    char row[300];
    snprintf(row, sizeof row, "%s.row.csv", m);
    write_text(row, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n"
                    "llama2-7b-32k,8,1,1,p5.48xlarge,32768,64,0.4\n");
    const char *a[] = {SCALE_ARGS, "--models", m, "--model", "llama2-7b-32k", "--seq", "32768", "--calibrate", row,
                       NULL};
    int rc = run(a);
    CHECK(rc == 0 && strstr(g_out, "# llama2-7b-32k, p5.48xlarge:"), "scale --models --calibrate: exit %d: %.600s%s",
          rc, g_out, g_err);
    const char *p[] = {PLAN_ARGS, "--models", m, "--model", "llama2-7b-32k", "--calibrate", row, NULL};
    rc = run(p);
    CHECK(rc == 0, "plan --models --calibrate: exit %d: %s", rc, g_err);
    const char *b[] = {SCALE_ARGS, "--model", "llama2-7b", "--calibrate", row, NULL};
    rc = run(b);
    CHECK(rc == 2 && one_error(g_err) && strstr(g_err, ":2: column 'model': unknown model preset 'llama2-7b-32k'"),
          "a row's model without --models: exit %d: %s", rc, g_err);
}

const test_case tests_models[] = {
    {"models: scale --models FILE predicts a preset only FILE has; report --models prices its CSV",
     test_models_scale_file},
    {"models: plan --models FILE searches a preset only FILE has, at its max_seq_len", test_models_plan_file},
    {"models: a preset the models file lacks is one error naming the file, in train, scale and plan",
     test_models_unknown_preset},
    {"models: a malformed models file is one FILE:LINE: column error, in train, scale and plan",
     test_models_malformed_file},
    {"models: --max-seq-len 8192 --seq 8192 for a 4096 preset in scale, plan and train; --seq above it names the flag",
     test_models_max_seq_len_scale_plan_train},
    {"models: train runs a learned-position model at a raised --max-seq-len", test_models_max_seq_len_train_run},
    {"models: --max-seq-len renames and grows only a learned-position model", test_models_max_seq_len_override},
    {"models: --max-seq-len 0, negative, hex, fractional, empty, too large: one error naming the flag",
     test_models_bad_values},
    {"models: train, scale and plan list the same model flags", test_models_help_same_flags},
    {"models: --calibrate finds a throughput row's model in the --models file", test_models_calibrate_file},
    {0},
};
