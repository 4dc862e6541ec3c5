/* Regression tests for the defects a hostile audit found, one per defect and named after it.
 * The report's output directory (defect 1), truncated plots (4) and scale calibrations (5) have
 * theirs in test_outdir.c, test_plot.c and test_scale.c. */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/parse.h"
#include "../common/timer.h"
#include "../bench/runner.h"
#include "../kernels/adamw.h"
#include "../kernels/attention.h"
#include "../kernels/crossentropy.h"
#include "../kernels/gelu.h"
#include "../kernels/layernorm.h"
#include "../kernels/matmul.h"
#include "../kernels/rope.h"
#include "../model/safetensors.h"
#include "check.h"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

#define TINY                                                                                                      \
    "--model", "pythia-14m", "--layers", "2", "--d-model", "64", "--heads", "4", "--vocab", "256", "--seq", "32", \
        "--micro-batch", "2", "--no-predict", "--peak-gflops", "100", "--quiet", "--discard-steps", "0"

static int any_nonfinite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 1;
    return 0;
}

/* ---------------------------------------------------------------- 2: NaN hidden */

static void nan_matmul_layernorm_gelu(void)
{
    enum { N = 4, C = 32, OC = 24 };
    float x[N * C], w[OC * C], out[N * OC], dout[N * OC], dx[N * C], dw[OC * C] = {0}, g[C], b[C], mean[N], rstd[N];
    unsigned st = 3;
    rand_fill(x, N * C, &st), rand_fill(w, OC * C, &st), rand_fill(dout, N * OC, &st), rand_fill(g, C, &st),
        rand_fill(b, C, &st);
    x[5] = NAN;
    CHECK(matmul_forward(out, x, w, NULL, N, C, OC) == KERNEL_OK && any_nonfinite(out, N * OC),
          "matmul forward hid a NaN input");
    dout[3] = NAN;
    CHECK(matmul_backward_input(dx, dout, w, N, C, OC) == KERNEL_OK && any_nonfinite(dx, N * C),
          "matmul backward (input) hid a NaN");
    CHECK(matmul_backward_weight(dw, NULL, dout, x, N, C, OC) == KERNEL_OK && any_nonfinite(dw, OC * C),
          "matmul backward (weight) hid a NaN");
    float ln[N * C], dln[N * C], dg[C] = {0}, db[C] = {0};
    layernorm_forward(ln, mean, rstd, x, g, b, N, C);
    CHECK(any_nonfinite(ln, C) && !any_nonfinite(ln + C, (N - 1) * C),
          "layernorm: the NaN row must be NaN, the others finite");
    x[5] = 0.5f;
    layernorm_forward(ln, mean, rstd, x, g, b, N, C);
    dln[0] = 0;
    for (int i = 0; i < N * C; i++) dln[i] = i == 7 ? NAN : 0.1f;
    layernorm_backward(dx, NULL, dg, db, dln, x, g, mean, rstd, N, C);
    CHECK(any_nonfinite(dx, N * C) && any_nonfinite(dg, C), "layernorm backward hid a NaN");
    float gi[40], go[40], gd[40];
    rand_fill(gi, 40, &st);
    gi[17] = NAN;
    gelu_forward(go, gi, 40); /* 40: a vector body and a masked tail */
    CHECK(isnan(go[17]) && !any_nonfinite(go, 17), "gelu(NaN) = %g", go[17]);
    for (int i = 0; i < 40; i++) gd[i] = i == 33 ? NAN : 1.0f;
    gi[17] = 0.3f;
    gelu_backward(gd, gi, gd, 40);
    CHECK(isnan(gd[33]), "gelu backward hid a NaN gradient");
}

static void nan_attention_xent_rope_adamw(void)
{
    enum { B = 1, T = 20, NH = 2, HS = 8, C = NH * HS, V = 37 };
    float qkv[B * T * 3 * C], out[B * T * C], lse_att[B * NH * T], dout[B * T * C], dqkv[B * T * 3 * C];
    float *scratch = malloc(attention_scratch_floats(T, HS, 1) * sizeof(float));
    unsigned st = 9;
    rand_fill(qkv, B * T * 3 * C, &st), rand_fill(dout, B * T * C, &st);
    qkv[3 * C * 4 + HS + 1] = NAN; /* a key of token 4, head 0 */
    attention_forward(out, lse_att, qkv, B, T, NH, HS);
    CHECK(!any_nonfinite(out, 4 * C) && any_nonfinite(out + 4 * C, C),
          "attention: tokens before 4 finite, token 4 on NaN");
    attention_backward(dqkv, scratch, 1, dout, qkv, out, lse_att, B, T, NH, HS);
    CHECK(any_nonfinite(dqkv, B * T * 3 * C), "attention backward hid a NaN");
    free(scratch);
    float logits[2 * V], losses[2], lse[2];
    int targets[2] = {3, 4};
    rand_fill(logits, 2 * V, &st);
    logits[V + 30] = NAN;
    CHECK(crossentropy_forward(losses, lse, logits, targets, 2, V) == KERNEL_OK && isfinite(losses[0]) &&
              isnan(losses[1]),
          "cross-entropy: losses %g %g (the second row holds a NaN)", losses[0], losses[1]);
    float dl[2] = {0.5f, 0.5f};
    CHECK(crossentropy_backward_inplace(logits, dl, lse, targets, 2, V) == KERNEL_OK && any_nonfinite(logits + V, V),
          "cross-entropy backward hid a NaN");
    rope_tables tb;
    float *store = malloc(rope_tables_floats(T, 4, HS) * sizeof(float));
    rope_tables_init(&tb, store, T, 4, HS, 10000);
    rope_shape rs = {.B = B, .T = T, .NH = NH, .HS = HS, .r = 4};
    rand_fill(qkv, B * T * 3 * C, &st);
    qkv[1] = NAN;
    rope_forward_fused(qkv, &rs, &tb);
    CHECK(isnan(qkv[1]) || isnan(qkv[3]), "rotary hid a NaN");
    rope_backward_fused(qkv, &rs, &tb);
    CHECK(any_nonfinite(qkv, 3 * HS), "rotary backward hid a NaN");
    free(store);
    float p[8] = {1, 1, 1, 1, 1, 1, 1, 1}, gr[8] = {0, 0, NAN, 0, 0, 0, 0, 0}, m1[8] = {0}, v1[8] = {0};
    adamw_params hp = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.0f};
    CHECK(isnan(grad_sumsq(gr, 8)), "the gradient norm hid a NaN");
    adamw_update(p, gr, m1, v1, 8, &hp, 1);
    CHECK(isnan(p[2]) && isfinite(p[0]), "AdamW: %g %g", p[0], p[2]);
}

static void test_audit_nan_kernels(void)
{
    nan_matmul_layernorm_gelu();
    nan_attention_xent_rope_adamw();
}

/* Offset in the file of element `elem` of tensor `name` of a safetensors file. */
static long tensor_offset(const char *path, const char *name, long elem)
{
    st_file f;
    if (st_open(&f, path) != 0) return -1;
    const st_tensor *t = st_find(&f, name);
    FILE *fp = fopen(path, "rb");
    unsigned char h8[8] = {0};
    long off = -1;
    if (t && fp && fread(h8, 1, 8, fp) == 8) {
        uint64_t hl = 0;
        for (int i = 7; i >= 0; i--) hl = hl << 8 | h8[i];
        off = (long)(8 + hl + t->begin) + 4 * elem;
    }
    if (fp) fclose(fp);
    st_close(&f);
    return off;
}

static void poke_float(const char *path, long off, float v)
{
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    fseek(f, off, SEEK_SET);
    fwrite(&v, 4, 1, f);
    fclose(f);
}

static void test_audit_nan_init_and_divergence(void)
{
    const char *dir = test_path("nan"), *saved = test_path("nan-out");
    rm_tree(dir), rm_tree(saved);
    const char *a1[] = {"train", TINY, "--steps", "1", "--save", dir, NULL};
    CHECK(run(a1) == 0, "a tiny run to get weights: %s", g_err);
    char w[256];
    snprintf(w, sizeof w, "%s/step-00000001/model.safetensors", dir);
    const char *qkv = "gpt_neox.layers.0.attention.query_key_value.weight";
    long off = tensor_offset(w, qkv, 100);
    CHECK(off > 0, "no %s in %s", qkv, w);
    poke_float(w, off, NAN);
    const char *a2[] = {"train", TINY, "--steps", "2", "--init", w, "--save", saved, NULL};
    int rc = run(a2);
    CHECK(rc == 1 && strstr(g_err, w) && strstr(g_err, qkv) && strstr(g_err, "not finite"), "a NaN weight: exit %d: %s",
          rc, g_err);
    CHECK(access(saved, F_OK) != 0, "a checkpoint was written from NaN weights");
    /* a finite weight that overflows: the loss is not finite at step 1; nothing is updated or saved */
    poke_float(w, off, 0.01f);
    const char *lnf = "gpt_neox.final_layer_norm.weight";
    for (int i = 0; i < 64; i++) poke_float(w, tensor_offset(w, lnf, i), 3e38f);
    const char *csv = test_path("nan.csv");
    unlink(csv);
    const char *a3[] = {"train", TINY, "--steps", "3", "--init", w, "--save", saved, "--csv", csv, NULL};
    rc = run(a3);
    CHECK(rc == 1 && strstr(g_err, "step 1: the loss is not finite") &&
              strstr(g_err, "stopped before the update, nothing saved") && strstr(g_err, "the loss of"),
          "an overflowing run: exit %d: %s", rc, g_err);
    CHECK(access(saved, F_OK) != 0 || access(test_path("nan-out/latest"), F_OK) != 0,
          "a diverged run saved a checkpoint");
    CHECK(access(csv, F_OK) != 0, "a failed run wrote its log");
    rm_tree(dir), rm_tree(saved);
}

/* ---------------------------------------------------------------- 3: leaked checkpoint files */

static pid_t dead_pid(void)
{
    pid_t p = fork();
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0);
    return p;
}

static int leftovers(const char *dir, char *which, size_t n)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -a %s", dir);
    const char *argv[] = {"ls", "-a", dir, NULL};
    static char out[8192];
    cmd_run(argv, out, sizeof out, NULL, 0);
    which[0] = '\0';
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
        if (strstr(l, ".tmp.") || strstr(l, ".old.")) snprintf(which + strlen(which), n - strlen(which), "%s ", l);
    return which[0] != '\0';
}

static void test_audit_killed_saves(void)
{
    const char *dir = test_path("kill");
    rm_tree(dir);
    mkdir(dir, 0755);
    char p[512], left[1024];
    long dp = (long)dead_pid(), me = (long)getpid();
    /* what kills at every moment of a save leave: a temporary step, a step moved aside, `latest` */
    snprintf(p, sizeof p, "%s/step-00000005.tmp.%ld", dir, dp), mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/step-00000005.tmp.%ld/model.safetensors.tmp.%ld", dir, dp, dp),
        write_file_bytes(p, "xx", 2);
    snprintf(p, sizeof p, "%s/step-00000005.tmp.%ld/optimizer.safetensors", dir, dp), write_file_bytes(p, "xx", 2);
    snprintf(p, sizeof p, "%s/step-00000004.old.%ld", dir, dp), mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/step-00000004.old.%ld/model.safetensors", dir, dp), write_file_bytes(p, "xx", 2);
    snprintf(p, sizeof p, "%s/latest.tmp.%ld", dir, dp), write_file_bytes(p, "step-00000004\n", 14);
    /* a running writer's temporary (this process saves: it holds its save lock) and a user's file
     * are not costbench's to delete */
    snprintf(p, sizeof p, "%s/step-00000007.tmp.%ld", dir, me), mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/save.lock.%ld", dir, me);
    int lock = open(p, O_RDWR | O_CREAT, 0644);
    CHECK(lock >= 0 && flock(lock, LOCK_EX) == 0, "cannot lock %s", p);
    snprintf(p, sizeof p, "%s/step-00000006.tmp.%ld", dir, dp), mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/step-00000006.tmp.%ld/notes.txt", dir, dp), write_file_bytes(p, "mine", 4);
    const char *a[] = {"train", TINY, "--steps", "1", "--save", dir, NULL};
    CHECK(run(a) == 0, "train --save: %s", g_err);
    leftovers(dir, left, sizeof left);
    char live[128], mine[128];
    snprintf(live, sizeof live, "step-00000007.tmp.%ld ", me);
    snprintf(mine, sizeof mine, "step-00000006.tmp.%ld ", dp);
    CHECK(strstr(left, live) && strstr(left, mine) && count_of(left, ".tmp.") + count_of(left, ".old.") == 2,
          "left behind: %s(expected only the live writer's and the user's)", left);
    snprintf(p, sizeof p, "%s/step-00000006.tmp.%ld/notes.txt", dir, dp);
    CHECK(access(p, F_OK) == 0, "a file costbench did not write was deleted");
    if (lock >= 0) close(lock);
    rm_tree(dir);
    /* real kills at random moments of a run that saves every step, then one more save */
    const char *argv[] = {g_costbench, "train", TINY, "--steps", "400", "--save", dir, "--save-every", "1", NULL};
    srand(12345u);
    for (int trial = 0; trial < 6; trial++) {
        pid_t pid = fork();
        if (pid == 0) {
            int dn = open("/dev/null", O_WRONLY);
            dup2(dn, STDOUT_FILENO), dup2(dn, STDERR_FILENO);
            execv(g_costbench, (char **)argv);
            _exit(127);
        }
        struct timespec ts = {0, (long)(150 + rand() % 400) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    CHECK(run(a) == 0, "a save after killed ones: %s", g_err);
    CHECK(!leftovers(dir, left, sizeof left), "killed saves left: %s", left);
    rm_tree(dir);
}

/* ---------------------------------------------------------------- 6: corrupt safetensors */

static void write_st(const char *path, const char *hdr, const void *data, size_t n)
{
    unsigned char buf[4096];
    uint64_t hl = strlen(hdr);
    memcpy(buf, &hl, 8);
    memcpy(buf + 8, hdr, hl);
    memcpy(buf + 8 + hl, data, n);
    write_file_bytes(path, buf, 8 + hl + n);
}

static void expect_st(const char *hdr, size_t ndata, const char *expect)
{
    const char *p = test_path("audit.safetensors");
    float data[4] = {1, 2, 3, 4};
    write_st(p, hdr, data, ndata);
    st_file f;
    capture_stderr_begin();
    int rc = st_open(&f, p);
    const char *err = capture_stderr_end();
    CHECK(rc != 0 && strstr(err, expect) && strstr(err, p), "expected '%s' for %s: %s", expect, hdr, err);
    if (rc == 0) st_close(&f);
    unlink(p);
}

static void test_audit_corrupt_safetensors(void)
{
    expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
              "\"data_offsets\":[0,8]}}",
              8, "share data bytes");
    expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
              "\"data_offsets\":[4,8]}}",
              8, "tensor 'a' appears twice");
    expect_st(
        "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        4, "a metadata key given twice");
    expect_st("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
              "a tensor field given twice");
    expect_st("{\"a\":{\"dtype\":\"F12\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype 'F12'");
    expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "belong to no tensor");
    expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "trailing bytes");
    st_file f;
    capture_stderr_begin();
    int rc = st_open(&f, "/tmp");
    const char *err = capture_stderr_end();
    CHECK(rc != 0 && strstr(err, "'/tmp' is a directory"), "a directory: %s", err);
    const char *a[] = {"train", TINY, "--steps", "1", "--init", "/tmp", NULL};
    rc = run(a);
    CHECK(rc == 1 && strstr(g_err, "'/tmp' is a directory"), "train --init DIR: exit %d: %s", rc, g_err);
}

/* ---------------------------------------------------------------- 7: impossible numbers */

static void test_audit_impossible_numbers(void)
{
    static const char hdr[] =
        "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n";
    const char *p = test_path("tput.csv");
    rm_tree(test_path("rep"));
    const char *rows[][2] = {
        {"neox-20b,8,4,4,trn1.32xlarge,2048,16384,1e9\n", ":2: 1e+09 seq/s of neox-20b at seq_len 2048 needs"},
        {"pythia-6.9b,8,1,1,trn1.32xlarge,4096,256,1\n", ":2: seq_len 4096 exceeds pythia-6.9b's max_seq_len 2048"},
    };
    for (int i = 0; i < 2; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", hdr, rows[i][0]);
        write_file_bytes(p, text, strlen(text));
        const char *a[] = {"report", "--throughput", p, "--out", test_path("rep"), NULL};
        int rc = run(a);
        CHECK(rc == 1 && strstr(g_err, rows[i][1]), "row %d: exit %d: %s", i, rc, g_err);
    }
    const char *m = "model,instances,instance_type,seq_len,global_batch,seq_per_s,mfu,peak_gflops,source\n"
                    "pythia-70m,1,this machine,512,4,1e12,2e15,1e-300,measured here\n";
    write_file_bytes(p, m, strlen(m));
    const char *a[] = {"report", "--throughput", p, "--usd-per-hour", "1", "--out", test_path("rep"), NULL};
    int rc = run(a);
    CHECK(rc == 1 && strstr(g_err, ":2: column 'mfu'"), "an absurd measured row: exit %d: %s", rc, g_err);
    CHECK(access(test_path("rep"), F_OK) != 0, "a report was written from impossible rows");
    unlink(p);
    const char *t[] = {"train", TINY, "--steps", "1", "--peak-gflops", "1e-300", NULL};
    rc = run(t);
    CHECK(rc == 2 && strstr(g_err, "flag '--peak-gflops'"), "--peak-gflops 1e-300: exit %d: %s", rc, g_err);
}

/* ---------------------------------------------------------------- 8: checkpoint parts */

static void copy_file(const char *from, const char *to)
{
    const char *argv[] = {"cp", from, to, NULL};
    cmd_run(argv, NULL, 0, NULL, 0);
}

static void test_audit_checkpoint_parts(void)
{
    const char *d = test_path("ck"), *d2 = test_path("ck2");
    rm_tree(d), rm_tree(d2);
    const char *a[] = {"train", TINY, "--steps", "2", "--save", d, "--save-every", "1", NULL};
    const char *b[] = {"train", TINY, "--steps", "2", "--save", d2, NULL};
    CHECK(run(a) == 0 && run(b) == 0, "runs that save: %s", g_err);
    const char *r[] = {"train", TINY, "--steps", "4", "--resume", d, NULL};
    char s1[256], s2[256], other[256], keep[256];
    snprintf(s1, sizeof s1, "%s/step-00000001/optimizer.safetensors", d);
    snprintf(s2, sizeof s2, "%s/step-00000002/optimizer.safetensors", d);
    snprintf(keep, sizeof keep, "%s/keep.safetensors", d);
    copy_file(s2, keep);
    copy_file(s1, s2); /* a step-1 optimizer inside step-00000002/ */
    int rc = run(r);
    CHECK(rc == 1 && strstr(g_err, "the parts disagree") && strstr(g_err, "optimizer.safetensors step 1"),
          "step-1 optimizer: %d %s", rc, g_err);
    copy_file(keep, s2);
    snprintf(s2, sizeof s2, "%s/step-00000002/model.safetensors", d);
    snprintf(other, sizeof other, "%s/step-00000002/model.safetensors", d2);
    copy_file(s2, keep);
    copy_file(other, s2); /* the same step of another run */
    rc = run(r);
    CHECK(rc == 1 && strstr(g_err, "come from different runs"), "another run's weights: exit %d: %s", rc, g_err);
    copy_file(keep, s2);
    char latest[256];
    snprintf(latest, sizeof latest, "%s/latest", d);
    write_file_bytes(latest, "step-00000001\r\n", 15); /* CRLF, and a step whose parts belong together */
    rc = run(r);
    CHECK(rc == 0 && strstr(g_err, "resumed from") && strstr(g_err, "at step 1"), "CRLF latest: exit %d: %s", rc,
          g_err);
    rm_tree(d), rm_tree(d2);
}

/* ---------------------------------------------------------------- 9, 10: sizes and messages */

static void test_audit_sizes_and_messages(void)
{
    const char *a[] = {"train", TINY, "--global-batch", "1073741824", NULL};
    int rc = run(a);
    CHECK(rc == 2 && strstr(g_err, "flag '--global-batch'"), "--global-batch 2^30: exit %d: %s", rc, g_err);
    const char *b[] = {"train", TINY, "--global-batch", "200000", "--micro-batch", "1", NULL};
    rc = run(b);
    CHECK(rc == 2 && strstr(g_err, "micro-batches a step"), "200000 micro-batches a step: exit %d: %s", rc, g_err);
    const char *c[] = {"train", "--model", "pythia-70m", "--d-model", "65536", NULL};
    rc = run(c);
    CHECK(rc == 2 && strstr(g_err, "flag '--d-model'") && !strstr(g_err, "micro-batch"), "--d-model 65536: exit %d: %s",
          rc, g_err);
    /* a byte-order mark, and a header on line 4 */
    const char *p = test_path("bom.csv");
    const char bom[] = "\xEF\xBB\xBFmodel,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_"
                       "batch,seq_per_s,usd_per_hour\n"
                       "neox-20b,8,4,4,trn1.32xlarge,2048,16384,13.6,30.36\n";
    write_file_bytes(p, bom, strlen(bom));
    table t;
    CHECK(table_load(&t, p) == 0 && strcmp(t.header[0], "model") == 0, "a BOM spoils the first column");
    if (t.header) table_free(&t);
    const char late[] = "# a comment\n# another\n\nmodel,instances\nneox-20b,4\n";
    write_file_bytes(p, late, strlen(late));
    const char *r[] = {"report", "--throughput", p, NULL};
    rc = run(r);
    CHECK(rc == 1 && strstr(g_err, ":4: missing column"), "the header on line 4: exit %d: %s", rc, g_err);
    unlink(p);
    const char *m[] = {"allreduce", "-b", "1M", "-e", "1K", NULL};
    rc = mpi_run(2, m, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 2 && count_of(g_err, "error: flag '--min-bytes'") == 1, "under mpirun, one error line: exit %d: %s", rc,
          g_err);
}

/* ---------------------------------------------------------------- 11: a full disk */

static void test_audit_dataset_full_disk(void)
{
    const char *txt = test_path("big.txt"), *prefix = test_path("full");
    static char big[1 << 20];
    memset(big, 'a', sizeof big);
    write_file_bytes(txt, big, sizeof big);
    const char *a[] = {"dataset", "build", "--out", prefix, txt, NULL};
    int rc = cli_run_fsize_limited(a, 100 * 1024, g_err, sizeof g_err);
    char want[320];
    snprintf(want, sizeof want, "cannot write '%s.bin'", prefix);
    CHECK(rc == 1 && count_of(g_err, "error:") == 1 && strstr(g_err, want),
          "a full disk: exit %d, %d error lines: %s", rc, count_of(g_err, "error:"), g_err);
    CHECK(access(test_path("full.bin"), F_OK) != 0 && access(test_path("full.idx"), F_OK) != 0,
          "a failed build left output files");
    char left[1024];
    char ls[320];
    snprintf(ls, sizeof ls, "ls %s | grep full", test_path(""));
    const char *argv[] = {"sh", "-c", ls, NULL};
    cmd_run(argv, left, sizeof left, NULL, 0);
    CHECK(left[0] == '\0', "temporary files left: %s", left);
    unlink(txt);
}

/* ---------------------------------------------------------------- 12, 13 */

static void test_audit_parse_long_limit(void)
{
    long v = 0;
    const char *bad[] = {"9223372036854775808", "9.223372036854775808e18", "9223372036854776K", "9.3e18", "-9.3e18"};
    capture_stderr_begin();
    int refused = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused += parse_long(bad[i], LONG_MIN, LONG_MAX, 1, "x", &v) != 0;
    const char *err = capture_stderr_end();
    CHECK(refused == 5 && strstr(err, "expected an integer"), "2^63 and beyond: %d of 5 refused: %s", refused, err);
    CHECK(parse_long("9223372036854775807", LONG_MIN, LONG_MAX, 1, "x", &v) == 0 && v == LONG_MAX,
          "LONG_MAX itself: %ld", v);
    CHECK(parse_long("4.5e18", LONG_MIN, LONG_MAX, 1, "x", &v) == 0 && v == 4500000000000000000L, "4.5e18: %ld", v);
}

static void test_audit_blas_cores_requires(void)
{
    char dir[] = "/tmp/costbench-audit-data-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "cannot create a temporary data directory");
        return;
    }
    char cmd[512], env[300];
    snprintf(cmd, sizeof cmd,
             "cp data/*.csv %s/ && printf 'core,requires,note\\nSkylakeX,,AVX-512\\n' > %s/blas_cores.csv", dir, dir);
    const char *sh[] = {"sh", "-c", cmd, NULL};
    CHECK(cmd_run(sh, NULL, 0, NULL, 0) == 0, "cannot prepare %s", dir);
    snprintf(env, sizeof env, "COSTBENCH_DATA=%s", dir);
    const char *a[] = {"env", env, g_costbench, "matmul", "--n", "64", "--k", "64", "--min-time", "0.01",
                       "--peak-gflops", "100", NULL};
    int rc = cmd_run(a, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 1 && strstr(g_err, "blas_cores.csv:2: column 'requires': expected a value"),
          "an empty requires: exit %d: %s", rc, g_err);
    rm_tree(dir);
}

/* ---------------------------------------------------------------- comments the code now keeps */

static void sleep_10ms(void *ctx)
{
    (void)ctx;
    struct timespec ts = {0, 10000000L};
    nanosleep(&ts, NULL);
}

static void test_audit_runner_cap(void)
{
    runner_opts o;
    runner_defaults(&o);
    o.min_samples = 1000, o.min_time_s = 100, o.max_time_s = 0.1, o.warmup = 0;
    bench_case bc = {"sleep", sleep_10ms, NULL, NULL};
    runner_result r;
    double t0 = timer_now_s();
    CHECK(runner_run(&o, &bc, NULL, &r) == 0, "the runner failed");
    double dt = timer_now_s() - t0;
    CHECK(dt < 1.0 && r.capped && r.s.n >= 1 && r.s.n < 1000, "max_time_s 0.1: ran %.2f s, %d samples, capped %d", dt,
          r.s.n, r.capped);
    o.max_time_s = 20, o.min_samples = 3, o.min_time_s = 0.01;
    CHECK(runner_run(&o, &bc, NULL, &r) == 0 && !r.capped && r.s.n >= 3, "uncapped: %d samples, capped %d", r.s.n,
          r.capped);
}

const test_case tests_audit[] = {
    {"audit 2: NaN propagates through every kernel, forward and backward", test_audit_nan_kernels},
    {"audit 2: a NaN weight is refused at load; a non-finite loss stops before the update and any save",
     test_audit_nan_init_and_divergence},
    {"audit 3: killed saves leave nothing behind; what costbench did not write stays", test_audit_killed_saves},
    {"audit 6: corrupt safetensors refused (shared bytes, a key twice, unknown dtype, gaps, a directory)",
     test_audit_corrupt_safetensors},
    {"audit 7: impossible throughputs and peaks refused at the edge", test_audit_impossible_numbers},
    {"audit 8: a checkpoint's weights, optimizer state and latest belong to one step of one run",
     test_audit_checkpoint_parts},
    {"audit 9, 10: --global-batch bounded; BOM, header line, --d-model, one error line under mpirun",
     test_audit_sizes_and_messages},
    {"audit 11: dataset build on a full disk stops at the first error", test_audit_dataset_full_disk},
    {"audit 12: parse_long refuses 2^63 before converting it", test_audit_parse_long_limit},
    {"audit 13: an empty 'requires' in blas_cores.csv is refused", test_audit_blas_cores_requires},
    {"runner: max_time_s ends the sampling, as documented, even short of min_samples", test_audit_runner_cap},
    {0},
};
