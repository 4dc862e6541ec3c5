/* Regression tests for the second hostile audit's checkpoint defects (issue 18), one or more per
 * defect and named after it: corrupt optimizer moments (1), the model's shape on --resume (2),
 * an impossible AdamW step count (7) and the messages of --init and of a change of precision (11).
 * Each builds a tiny checkpoint with the CLI, corrupts one number or metadata key of it, and
 * checks the exit code, the one error line and that nothing was saved from the corrupt state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kernels/adamw.h"
#include "../model/safetensors.h"
#include "check.h"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

/* The tiny model of these tests on a corpus of made-up text (built once). */
#define TINY                                                                                                         \
    "--model", "pythia-14m", "--layers", "2", "--vocab", "512", "--micro-batch", "1", "--seq", "64", "--no-predict", \
        "--peak-gflops", "10000", "--quiet", "--data", test_corpus()


static void copy_file(const char *from, const char *to)
{
    const char *argv[] = {"cp", from, to, NULL};
    CHECK(cmd_run(argv, NULL, 0, NULL, 0) == 0, "cp %s %s", from, to);
}

/* Rewrites a safetensors file with the same tensors and its metadata changed: only the keys of
 * `keep` kept (NULL: all), and `key` set to `value` (key NULL: none). */
static void rewrite_meta(const char *path, const char *const *keep, const char *key, const char *value)
{
    st_file f;
    if (st_open(&f, path) != 0) {
        CHECK(0, "cannot open %s", path);
        return;
    }
    st_out *t = calloc((size_t)f.n, sizeof *t);
    const char **kv = calloc(2 * (size_t)f.nmeta + 2, sizeof *kv);
    int rc = t && kv ? 0 : -1, nm = 0;
    for (int i = 0; i < f.n && rc == 0; i++) {
        const st_tensor *s = &f.t[i];
        size_t count = 1;
        for (int d = 0; d < s->ndim; d++) count *= (size_t)s->shape[d];
        int bf = strcmp(s->dtype, "BF16") == 0;
        void *buf = malloc(count * 4 + 1);
        t[i] = (st_out){.name = s->name, .data = buf, .bf16 = bf, .ndim = s->ndim};
        memcpy(t[i].shape, s->shape, sizeof t[i].shape);
        rc = !buf ? -1
             : bf ? st_read_bf16(&f, s->name, buf, s->shape, s->ndim)
                  : st_read_f32(&f, s->name, buf, s->shape, s->ndim);
    }
    for (int i = 0; i < f.nmeta && rc == 0; i++) {
        int kept = !keep;
        for (int k = 0; keep && keep[k] && !kept; k++) kept = strcmp(keep[k], f.meta_keys[i]) == 0;
        if (!kept || (key && strcmp(key, f.meta_keys[i]) == 0)) continue;
        kv[2 * nm] = f.meta_keys[i], kv[2 * nm + 1] = f.meta_vals[i], nm++;
    }
    if (key) kv[2 * nm] = key, kv[2 * nm + 1] = value, nm++;
    if (rc == 0) rc = st_write(path, t, f.n, kv, nm);
    CHECK(rc == 0, "cannot rewrite %s", path);
    for (int i = 0; t && i < f.n; i++) free((void *)t[i].data);
    free(t), free(kv);
    st_close(&f);
}

/* DIR/ck with `steps` steps of the tiny model in `prec` (extra: more flags, NULL-terminated). */
static void make_checkpoint(const char *ck, const char *prec, const char *steps, const char *const *extra)
{
    const char *a[48] = {"train", TINY, "--precision", prec, "--steps", steps, "--save", ck};
    int n = 0;
    while (a[n]) n++;
    for (int i = 0; extra && extra[i]; i++) a[n++] = extra[i];
    a[n] = NULL;
    CHECK(run(a) == 0, "train --save %s (%s): %s", ck, prec, g_err);
}

/* The checkpoint DIR names as its latest is still step 3 (nothing saved since), with no step 4. */
static void still_step3(const char *ck, const char *what)
{
    char latest[512], p[512], text[64];
    snprintf(latest, sizeof latest, "%s/latest", ck);
    slurp(latest, text, sizeof text);
    snprintf(p, sizeof p, "%s/step-00000004", ck);
    CHECK(strcmp(text, "step-00000003\n") == 0 && access(p, F_OK) != 0, "%s: a checkpoint was saved (latest '%s')",
          what, text);
}

/* ---------------------------------------------------------------- 1: corrupt moments */

static void moments_in(const char *prec)
{
    const char *dir = test_tmpdir();
    if (!dir) return;
    char ck[256], opt[512], keep[512];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(opt, sizeof opt, "%s/step-00000003/optimizer.safetensors", ck);
    snprintf(keep, sizeof keep, "%s/keep.safetensors", dir);
    make_checkpoint(ck, prec, "3", NULL);
    copy_file(opt, keep);
    const char *r[] = {"train", TINY, "--precision", prec, "--steps", "4", "--resume", ck, "--save", ck, NULL};
    /* an impossible moment: refused at load, naming the file and the tensor */
    const char *vq = "exp_avg_sq/gpt_neox.layers.0.attention.query_key_value.weight";
    st_poke(opt, vq, 7, -1.0f);
    int rc = run(r);
    CHECK(rc == 1 && strstr(g_err, opt) && strstr(g_err, vq) && strstr(g_err, ">= 0") && count_of(g_err, "error:") == 1,
          "%s: a negative exp_avg_sq: exit %d: %s", prec, rc, g_err);
    still_step3(ck, "a negative exp_avg_sq");
    /* a finite first moment that would make the update overflow: beyond AdamW's bound on the
     * moments, refused at load (issue 28 #5; it was stopped after the update, before any save) */
    copy_file(keep, opt);
    const char *bias = "gpt_neox.layers.1.mlp.dense_4h_to_h.bias";
    char mname[128];
    snprintf(mname, sizeof mname, "exp_avg/%s", bias);
    st_poke(opt, mname, 3, 3e38f);
    rc = run(r);
    CHECK(rc == 1 && strstr(g_err, opt) && strstr(g_err, mname) && strstr(g_err, "AdamW's bound") &&
              count_of(g_err, "error:") == 1,
          "%s: an exp_avg of 3e38: exit %d: %s", prec, rc, g_err);
    still_step3(ck, "an exp_avg of 3e38");
    rm_tree(dir);
}

static void test_moments(void)
{
    moments_in("fp32");
    moments_in("bf16-mixed");
    moments_in("bf16");
}

/* Each AdamW kernel counts the weights it leaves non-finite, in the vector body, the tail and
 * across threads' blocks, in every precision. */
static void test_update_counts(void)
{
    enum { N = 9001 };
    static const size_t bad_at[] = {0, 17, 4095, 4096, 8999, 9000};
    const adamw_params hp = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.0f};
    static float p[N], g[N], m[N], v[N];
    static bf16 p16[N], m16[N], v16[N];
    unsigned st = 11;
    for (int kernel = 0; kernel < 4; kernel++) {
        rand_fill(p, N, &st), rand_fill(g, N, &st), rand_fill(m, N, &st), rand_fill(v, N, &st);
        for (size_t i = 0; i < N; i++) {
            v[i] = v[i] * v[i];
            p16[i] = bf16_from_float(p[i]), m16[i] = bf16_from_float(m[i]), v16[i] = bf16_from_float(v[i]);
        }
        size_t n = kernel == 0 ? 5 : N, want = 0; /* kernel 0: one short masked step */
        for (size_t j = 0; j < sizeof bad_at / sizeof bad_at[0]; j++)
            if (bad_at[j] < n) m[bad_at[j]] = 3e38f, m16[bad_at[j]] = bf16_from_float(3e38f), want++;
        adamw_rounding r = {kernel == 2, 5, 0};
        size_t got = kernel <= 1 ? adamw_update(p, g, m, v, n, &hp, 4)
                     : kernel == 2 ? adamw_update_full_bf16(p16, NULL, g, m16, v16, n, &hp, 4, &r)
                                   : adamw_update_full_bf16_ref(p16, NULL, g, m16, v16, n, &hp, 4, &r);
        CHECK(got == want, "kernel %d, n %zu: %zu non-finite weights counted, %zu written", kernel, n, got, want);
        got = kernel <= 1 ? adamw_update(p, g, m, v, n, &hp, 5)
                          : adamw_update_full_bf16(p16, NULL, g, m16, v16, n, &hp, 5, &r);
        CHECK(got == want, "kernel %d, n %zu, a second step: %zu counted, %zu non-finite", kernel, n, got, want);
    }
}

/* Under mpirun with ZeRO-1 the rank whose shard holds the bad element is not the only one to stop
 * (every rank loads the whole checkpoint: the moment beyond AdamW's bound is refused there). */
static void test_moments_zero1(void)
{
    const char *dir = test_tmpdir();
    if (!dir) return;
    char ck[256], opt[512];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(opt, sizeof opt, "%s/step-00000003/optimizer.safetensors", ck);
    const char *g2[] = {"--global-batch", "2", NULL};
    make_checkpoint(ck, "fp32", "3", g2);
    st_poke(opt, "exp_avg/embed_out.weight", 512 * 128 - 1, 3e38f); /* the last parameter: rank 1's shard */
    const char *r[] = {"train", TINY, "--global-batch", "2", "--zero", "1", "--steps", "4", "--resume", ck, "--save",
                       ck, NULL};
    int rc = mpi_run(2, r, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 1 && strstr(g_err, "embed_out.weight") && strstr(g_err, "AdamW's bound"),
          "ZeRO-1, a bad moment in rank 1's shard: exit %d: %s", rc, g_err);
    still_step3(ck, "ZeRO-1");
    rm_tree(dir);
}

/* ---------------------------------------------------------------- 2: the model's shape */

/* The metadata keys costbench recorded before the model's whole configuration was. */
static const char *const old_keys[] = {"format", "costbench_model", "layers", "d_model", "heads", "vocab", "rotary_pct",
                                       "parallel_residual", "tied_embeddings", "precision", "step", "run_id", "adam_t",
                                       "seed", "micro_batch", "seq", "accum", NULL};

static void test_model_shape(void)
{
    const char *dir = test_tmpdir();
    if (!dir) return;
    char ck[256], latest[512], before[64], after[64];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(latest, sizeof latest, "%s/latest", ck);
    make_checkpoint(ck, "fp32", "3", NULL);
    slurp(latest, before, sizeof before);
    const char *l1[] = {"train", TINY, "--layers", "1", "--steps", "5", "--resume", ck, "--save", ck, NULL};
    int rc = run(l1);
    CHECK(rc == 2 && strstr(g_err, "the checkpoint's model has layers 2; this run has 1 (flag '--layers')") &&
              count_of(g_err, "error:") == 1,
          "--layers 1 on a 2-layer checkpoint: exit %d: %s", rc, g_err);
    const char *h8[] = {"train", TINY, "--heads", "8", "--steps", "5", "--resume", ck, "--save", ck, NULL};
    rc = run(h8);
    CHECK(rc == 2 && strstr(g_err, "heads 4; this run has 8 (flag '--heads')"), "--heads 8 on 4 heads: exit %d: %s", rc,
          g_err);
    const char *ffn[] = {"train", TINY, "--ffn", "256", "--steps", "5", "--resume", ck, "--save", ck, NULL};
    rc = run(ffn);
    CHECK(rc == 2 && strstr(g_err, "ffn_dim 512; this run has 256 (flag '--ffn')"), "--ffn 256: exit %d: %s", rc,
          g_err);
    slurp(latest, after, sizeof after);
    CHECK(strcmp(before, after) == 0, "a refused resume changed latest: '%s' -> '%s'", before, after);
    /* a checkpoint of an older costbench: what it records is compared, the rest named once */
    char p[512];
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/step-00000003/%s", ck, i ? "optimizer.safetensors" : "model.safetensors");
        rewrite_meta(p, old_keys, NULL, NULL);
    }
    rc = run(l1);
    CHECK(rc == 2 && strstr(g_err, "layers 2; this run has 1"), "an older checkpoint, --layers 1: exit %d: %s", rc,
          g_err);
    const char *ok[] = {"train", TINY, "--steps", "4", "--resume", ck, NULL};
    rc = run(ok);
    CHECK(rc == 0 && count_of(g_err, "warning:") == 1 && strstr(g_err, "kv_heads") && strstr(g_err, "norm") &&
              strstr(g_err, "not checked"),
          "an older checkpoint of the same model: exit %d: %s", rc, g_err);
    rm_tree(dir);
}

/* ---------------------------------------------------------------- 7: adam_t */

static void test_adam_t(void)
{
    const char *dir = test_tmpdir();
    if (!dir) return;
    char ck[256], opt[512];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(opt, sizeof opt, "%s/step-00000003/optimizer.safetensors", ck);
    make_checkpoint(ck, "fp32", "3", NULL);
    const char *r[] = {"train", TINY, "--steps", "4", "--resume", ck, "--save", ck, NULL};
    const char *bad[] = {"2147483647", "2", "4"};
    for (int i = 0; i < 3; i++) {
        rewrite_meta(opt, NULL, "adam_t", bad[i]);
        int rc = run(r);
        CHECK(rc == 1 && strstr(g_err, opt) && strstr(g_err, "metadata 'adam_t'") && strstr(g_err, bad[i]) &&
                  count_of(g_err, "error:") == 1,
              "adam_t %s at step 3: exit %d: %s", bad[i], rc, g_err);
        still_step3(ck, "a bad adam_t");
    }
    rewrite_meta(opt, NULL, "adam_t", "3");
    int rc = run(r);
    CHECK(rc == 0, "adam_t 3 at step 3: exit %d: %s", rc, g_err);
    rm_tree(dir);
}

/* ---------------------------------------------------------------- 11: messages */

static void test_messages(void)
{
    const char *dir = test_tmpdir();
    if (!dir) return;
    char ck[256], w[512], out[256];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    make_checkpoint(ck, "fp32", "3", NULL);
    /* a finite weight that overflows the first forward: the file is to blame, not the learning rate */
    snprintf(w, sizeof w, "%s/step-00000003/model.safetensors", ck);
    char keep[512];
    snprintf(keep, sizeof keep, "%s/keep.safetensors", dir);
    copy_file(w, keep);
    for (int i = 0; i < 128; i++) st_poke(keep, "gpt_neox.final_layer_norm.weight", i, 3.4e38f);
    const char *a[] = {"train", TINY, "--steps", "2", "--init", keep, "--save", out, NULL};
    int rc = run(a);
    const char *hint = strstr(g_err, "hint:");
    CHECK(rc == 1 && strstr(g_err, "step 1: the loss is not finite") && hint && strstr(hint, keep) &&
              !strstr(g_err, "--lr") && access(out, F_OK) != 0,
          "an overflowing --init weight: exit %d: %s", rc, g_err);
    /* a change of precision on resume is always said, and what it changes */
    const char *mixed[] = {"train", TINY, "--precision", "bf16-mixed", "--steps", "4", "--resume", ck, NULL};
    rc = run(mixed);
    CHECK(rc == 0 && strstr(g_err, "warning:") && strstr(g_err, "fp32") && strstr(g_err, "bf16-mixed"),
          "fp32 resumed in bf16-mixed: exit %d: %s", rc, g_err);
    char ck2[256];
    snprintf(ck2, sizeof ck2, "%s/ck2", dir);
    make_checkpoint(ck2, "bf16-sr", "3", NULL);
    const char *nearest[] = {"train", TINY, "--precision", "bf16-nearest", "--steps", "4", "--resume", ck2, NULL};
    rc = run(nearest);
    CHECK(rc == 0 && strstr(g_err, "warning:") && strstr(g_err, "bf16-sr") && strstr(g_err, "rounding"),
          "bf16-sr resumed in bf16-nearest: exit %d: %s", rc, g_err);
    const char *same[] = {"train", TINY, "--precision", "bf16-sr", "--steps", "4", "--resume", ck2, NULL};
    rc = run(same);
    CHECK(rc == 0 && !strstr(g_err, "warning:"), "bf16-sr resumed in bf16-sr: exit %d: %s", rc, g_err);
    rm_tree(dir);
}

const test_case tests_audit2_ckpt[] = {
    {"audit2 1: a negative exp_avg_sq, or an exp_avg that would overflow the update, is refused at load (fp32, "
     "bf16-mixed, bf16)",
     test_moments},
    {"audit2 1: the AdamW kernels count the non-finite weights they write", test_update_counts},
    {"audit2 1: under mpirun with --zero 1 every rank refuses a moment beyond AdamW's bound", test_moments_zero1},
    {"audit2 2: --resume compares the model's configuration with the checkpoint's; older checkpoints warn",
     test_model_shape},
    {"audit2 7: an adam_t that is not the checkpoint's step is refused at load", test_adam_t},
    {"audit2 11: an overflowing --init blames the file; a change of precision on resume is said", test_messages},
    {0},
};
