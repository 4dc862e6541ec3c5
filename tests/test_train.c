/* Training infrastructure: indexed datasets (round trip, corrupt files), safetensors and
 * checkpoints (round trip, bad files), gradient accumulation, and the command line: --data,
 * --recompute, --init, --save/--resume, and a run killed with SIGKILL that resumes with the
 * same losses as an uninterrupted one. */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../model/checkpoint.h"
#include "../model/dataset.h"
#include "../model/gpt.h"
#include "../model/safetensors.h"
#include "check.h"

static const char *TXT1 = "The quick brown fox jumps over the lazy dog. ";
static const char *TXT2 = "Pythia and GPT-NeoX rotate a quarter of each head.";

static void make_dataset(const char *prefix)
{
    char a[256], b[256];
    snprintf(a, sizeof a, "%s-a.txt", prefix);
    snprintf(b, sizeof b, "%s-b.txt", prefix);
    write_file_bytes(a, TXT1, strlen(TXT1));
    write_file_bytes(b, TXT2, strlen(TXT2));
    char *files[2] = {a, b};
    uint64_t n = 0;
    dataset_build(prefix, files, 2, &n);
    unlink(a);
    unlink(b);
}

static void test_dataset_roundtrip(void)
{
    const char *prefix = test_path("ds");
    make_dataset(prefix);
    dataset d;
    CHECK(dataset_open(&d, prefix) == 0, "a dataset just built does not open");
    size_t n1 = strlen(TXT1), n2 = strlen(TXT2);
    CHECK(d.ntokens == n1 + n2 && d.nseq == 2 && d.dtype == 8, "tokens %llu sequences %llu dtype %d",
          (unsigned long long)d.ntokens, (unsigned long long)d.nseq, d.dtype);
    int same = d.ntokens == n1 + n2;
    for (size_t i = 0; same && i < n1 + n2; i++)
        same = dataset_token(&d, i) == (unsigned char)(i < n1 ? TXT1[i] : TXT2[i - n1]);
    CHECK(same, "tokens read back differ from the bytes written");
    int in[2 * 8], tg[2 * 8];
    CHECK(dataset_batch(&d, 7, 3, 0, in, tg, 2, 8, 256) == 0, "batch refused");
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 7; t++) CHECK(tg[b * 8 + t] == in[b * 8 + t + 1], "targets are not the next tokens");
    capture_stderr_begin();
    int bad = dataset_batch(&d, 7, 3, 0, in, tg, 2, 8, 64); /* vocabulary smaller than the bytes */
    const char *err = capture_stderr_end();
    CHECK(bad != 0 && strstr(err, "outside the model's vocabulary"), "an out-of-vocabulary token passed: %s", err);
    dataset_close(&d);
}

static void expect_corrupt(const char *prefix, const char *expect)
{
    dataset d;
    capture_stderr_begin();
    int rc = dataset_open(&d, prefix);
    const char *err = capture_stderr_end();
    CHECK(rc != 0, "a corrupt dataset opened (%s)", expect);
    CHECK(strstr(err, expect) != NULL, "expected '%s' in: %s", expect, err);
    if (rc == 0) dataset_close(&d);
}

static void test_dataset_corrupt(void)
{
    const char *prefix = test_path("dsbad");
    char idx[256], bin[256];
    snprintf(idx, sizeof idx, "%s.idx", prefix);
    snprintf(bin, sizeof bin, "%s.bin", prefix);
    make_dataset(prefix);
    unsigned char buf[4096];
    FILE *f = fopen(idx, "rb");
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    unsigned char tmp[4096];
    memcpy(tmp, buf, n);
    tmp[0] = 'X';
    write_file_bytes(idx, tmp, n);
    expect_corrupt(prefix, "expected the 'MMIDIDX' header");
    write_file_bytes(idx, buf, n - 5);
    expect_corrupt(prefix, "truncated or corrupt");
    memcpy(tmp, buf, n);
    tmp[17] = 6;
    write_file_bytes(idx, tmp, n);
    expect_corrupt(prefix, "token dtype code 6");
    memcpy(tmp, buf, n);
    tmp[18] = 0xff; /* absurd sequence count */
    write_file_bytes(idx, tmp, n);
    expect_corrupt(prefix, "truncated or corrupt");
    memcpy(tmp, buf, n);
    tmp[34] = 0x7f; /* first size: huge, so the second pointer is wrong */
    write_file_bytes(idx, tmp, n);
    expect_corrupt(prefix, "sequence 1: size");
    write_file_bytes(idx, buf, n);
    write_file_bytes(bin, "ab", 2); /* .bin shorter than the index says */
    expect_corrupt(prefix, "truncated");
    unlink(idx);
    expect_corrupt(prefix, "cannot open");
    unlink(bin);
}

static model_config small_cfg(void)
{
    model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "tiny");
    c.L = 2, c.C = 32, c.NH = 4, c.HS = 8, c.V = 64, c.max_T = 16, c.rotary_pct = 0.25, c.rotary_base = 10000;
    c.parallel_residual = 1;
    return c;
}

static void test_checkpoint_roundtrip(void)
{
    model_config c = small_cfg();
    gpt_model a, b;
    gpt_init(&a, &c, 2, 16, 0, PRECISION_FP32);
    gpt_init(&b, &c, 2, 16, 0, PRECISION_FP32);
    gpt_init_weights(&a, 3);
    gpt_init_weights(&b, 4);
    unsigned st = 5;
    rand_fill(a.w.m, a.w.nparams, &st);
    rand_fill(a.w.v, a.w.nparams, &st);
    float *v = a.w.v; /* fp32 storage: float moments */
    for (size_t i = 0; i < a.w.nparams; i++) v[i] = fabsf(v[i]);
    a.w.adam_t = 17;
    const char *dir = test_path("ckpt");
    ckpt_state s = {17, 99, 2, 16, 1, 0x1234, 0, 0};
    CHECK(ckpt_save(&a, a.w.m, a.w.v, dir, &s) == 0, "save failed");
    CHECK(ckpt_load_weights(&b, test_path("ckpt/step-00000017/model.safetensors")) == 0, "load failed");
    CHECK(memcmp(a.w.params, b.w.params, a.w.nparams * sizeof(float)) == 0, "reloaded weights differ");
    ckpt_state got;
    CHECK(ckpt_resume(&b, dir, &s, &got) == 0 && got.step == 17 && b.w.adam_t == 17, "resume state");
    CHECK(memcmp(a.w.m, b.w.m, a.w.nparams * sizeof(float)) == 0 &&
              memcmp(a.w.v, b.w.v, a.w.nparams * sizeof(float)) == 0,
          "reloaded optimizer moments differ");
    ckpt_state other = {0, 98, 2, 16, 1, 0, 0, 0};
    capture_stderr_begin();
    int mism = ckpt_resume(&b, dir, &other, &got);
    capture_stderr_end();
    CHECK(mism == CB_EUSAGE, "resuming with another seed was accepted");
    /* a model of another shape refuses the file */
    model_config c2 = c;
    c2.C = 48, c2.HS = 12;
    gpt_model w;
    gpt_init(&w, &c2, 2, 16, 0, PRECISION_FP32);
    capture_stderr_begin();
    int bad = ckpt_load_weights(&w, test_path("ckpt/step-00000017/model.safetensors"));
    const char *err = capture_stderr_end();
    CHECK(bad != 0 && strstr(err, "has shape [64,32], the model needs [64,48]"), "shape mismatch: %s", err);
    gpt_free(&w);
    /* truncated and garbage files */
    const char *p = test_path("bad.safetensors");
    FILE *f = fopen(test_path("ckpt/step-00000017/model.safetensors"), "rb");
    unsigned char buf[200000];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_file_bytes(p, buf, n / 2);
    capture_stderr_begin();
    bad = ckpt_load_weights(&b, p);
    err = capture_stderr_end();
    CHECK(bad != 0 && strstr(err, p), "a truncated file loaded: %s", err);
    write_file_bytes(p, "\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":{\"dtype\":}}", 24);
    capture_stderr_begin();
    bad = ckpt_load_weights(&b, p);
    err = capture_stderr_end();
    CHECK(bad != 0 && strstr(err, "malformed safetensors header"), "a garbage header loaded: %s", err);
    unlink(p);
    gpt_free(&a);
    gpt_free(&b);
}

static void test_safetensors_half_types(void)
{
    /* BF16 1.5 = 0x3fc0, F16 -2.0 = 0xc000, F16 subnormal 2^-24 = 0x0001 */
    const char *p = test_path("half.safetensors");
    const char *hdr = "{\"b\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]},"
                      "\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[2,6]}}";
    unsigned char file[256];
    uint64_t hl = strlen(hdr);
    memcpy(file, &hl, 8);
    memcpy(file + 8, hdr, hl);
    unsigned char data[6] = {0xc0, 0x3f, 0x00, 0xc0, 0x01, 0x00};
    memcpy(file + 8 + hl, data, 6);
    write_file_bytes(p, file, 8 + hl + 6);
    st_file f;
    CHECK(st_open(&f, p) == 0, "open failed");
    float b = 0, h[2] = {0};
    int64_t s1[1] = {1}, s2[1] = {2};
    CHECK(st_read_f32(&f, "b", &b, s1, 1) == 0 && b == 1.5f, "BF16 read %g", b);
    CHECK(st_read_f32(&f, "h", h, s2, 1) == 0 && h[0] == -2.0f && h[1] == ldexpf(1.0f, -24), "F16 read %g %g", h[0],
          h[1]);
    st_close(&f);
    unlink(p);
}

static void test_gradient_accumulation(void)
{
    /* two micro-batches of 2 with scale 1/2 give the gradient of one batch of 4 */
    model_config c = small_cfg();
    gpt_model a, b;
    gpt_init(&a, &c, 4, 16, 0, PRECISION_FP32);
    gpt_init(&b, &c, 2, 16, 0, PRECISION_FP32);
    gpt_init_weights(&a, 1);
    memcpy(b.w.params, a.w.params, a.w.nparams * sizeof(float));
    synthetic_batch(5, 0, 0, a.inputs, a.targets, 4, 16, c.V);
    gpt_zero_grad(&a);
    double loss;
    CHECK(gpt_forward(&a, 1.0f, &loss) == 0 && gpt_backward(&a, 1.0f, NULL) == 0, "forward or backward failed");
    gpt_zero_grad(&b);
    for (int mi = 0; mi < 2; mi++) {
        memcpy(b.inputs, a.inputs + mi * 32, 32 * sizeof(int));
        memcpy(b.targets, a.targets + mi * 32, 32 * sizeof(int));
        CHECK(gpt_forward(&b, 1.0f, &loss) == 0 && gpt_backward(&b, 0.5f, NULL) == 0, "forward or backward failed");
    }
    double *ref = malloc(a.w.nparams * sizeof(double));
    to_double(ref, a.w.grads, a.w.nparams);
    CHECK(allclose("accumulated gradient", b.w.grads, ref, a.w.nparams, 1e-7, 1e-4),
          "accumulation differs from one batch");
    free(ref);
    gpt_free(&a);
    gpt_free(&b);
}

/* ---------------------------------------------------------------- command line */

static int run_quiet(const char *const *args, char *err, size_t errsz) { return cli_run(args, NULL, 0, err, errsz); }

#define TINY                                                                                                      \
    "--model", "pythia-14m", "--layers", "2", "--d-model", "64", "--heads", "4", "--vocab", "256", "--seq", "32", \
        "--micro-batch", "2", "--no-predict", "--peak-gflops", "100", "--quiet", "--discard-steps", "0"

/* step -> loss string from a per-step CSV */
static int read_losses(const char *csv, char losses[][32], int cap)
{
    table t;
    if (table_load(&t, csv) != 0) return -1;
    int cs = table_col(&t, "step", 1), cl = table_col(&t, "loss", 1), n = 0;
    for (int i = 0; cs >= 0 && cl >= 0 && i < t.nrows; i++) {
        int s = atoi(table_cell(&t, i, cs));
        if (s >= 1 && s < cap) {
            snprintf(losses[s], 32, "%s", table_cell(&t, i, cl));
            n++;
        }
    }
    table_free(&t);
    return n;
}

static void test_cli_train_features(void)
{
    char err[8192];
    const char *prefix = test_path("train-ds");
    const char *txt = test_path("train.txt");
    FILE *f = fopen(txt, "w");
    for (int i = 0; i < 200; i++) fprintf(f, "%s%s", TXT1, TXT2);
    fclose(f);
    const char *b1[] = {"dataset", "build", "--out", prefix, txt, NULL};
    CHECK(run_quiet(b1, err, sizeof err) == 0, "dataset build: %s", err);
    const char *b2[] = {"dataset", "info", prefix, NULL};
    CHECK(run_quiet(b2, err, sizeof err) == 0, "dataset info: %s", err);
    /* --data, with and without --recompute, gradient accumulation: identical losses */
    const char *c1 = test_path("train1.csv"), *c2 = test_path("train2.csv");
    const char *a1[] = {TINY, "--steps", "6", "--data", prefix, "--global-batch", "4", "--csv", c1, NULL};
    const char *a2[] = {TINY, "--steps", "6", "--data", prefix, "--global-batch", "4", "--recompute", "--csv", c2,
                        NULL};
    const char **runs[2] = {a1, a2};
    for (int r = 0; r < 2; r++) {
        const char *args[40] = {"train"};
        int k = 1;
        for (int i = 0; runs[r][i]; i++) args[k++] = runs[r][i];
        args[k] = NULL;
        CHECK(run_quiet(args, err, sizeof err) == 0, "train run %d: %s", r, err);
    }
    static char l1[16][32], l2[16][32];
    CHECK(read_losses(c1, l1, 16) == 6 && read_losses(c2, l2, 16) == 6, "per-step logs missing");
    for (int s = 1; s <= 6; s++)
        CHECK(strcmp(l1[s], l2[s]) == 0, "step %d: loss %s, with --recompute %s", s, l1[s], l2[s]);
    CHECK(atof(l1[6]) < atof(l1[1]), "loss does not fall on text data: %s -> %s", l1[1], l1[6]);
    /* --init from a checkpoint of the same shape; and a file of another shape is refused */
    const char *dir = test_path("train-ckpt");
    const char *a3[] = {"train", TINY, "--steps", "2", "--save", dir, NULL};
    CHECK(run_quiet(a3, err, sizeof err) == 0, "train --save: %s", err);
    const char *a4[] = {
        "train", TINY, "--steps", "1", "--init", test_path("train-ckpt/step-00000002/model.safetensors"), NULL};
    CHECK(run_quiet(a4, err, sizeof err) == 0 && strstr(err, "weights from"), "train --init: %s", err);
    const char *a5[] = {"train",
                        "--model",
                        "pythia-14m",
                        "--layers",
                        "2",
                        "--d-model",
                        "32",
                        "--heads",
                        "4",
                        "--vocab",
                        "256",
                        "--seq",
                        "32",
                        "--micro-batch",
                        "2",
                        "--no-predict",
                        "--peak-gflops",
                        "100",
                        "--quiet",
                        "--steps",
                        "1",
                        "--init",
                        test_path("train-ckpt/step-00000002/model.safetensors"),
                        NULL};
    CHECK(run_quiet(a5, err, sizeof err) == 1 && strstr(err, "the model needs"), "train --init with another shape: %s",
          err);
    unlink(c1), unlink(c2), unlink(txt);
}

static void test_cli_kill_and_resume(void)
{
    char err[8192];
    const char *full = test_path("full.csv"), *res = test_path("resumed.csv");
    const char *dir = test_path("kill");
    char latest[256];
    snprintf(latest, sizeof latest, "%s/latest", dir);
    rm_tree(dir);
    const char *a[] = {"train", TINY, "--steps", "300", "--csv", full, NULL};
    CHECK(run_quiet(a, err, sizeof err) == 0, "uninterrupted run: %s", err);
    /* the same run with a checkpoint every step, killed with SIGKILL once a few are written */
    const char *argv[64] = {g_costbench, "train", TINY, "--steps", "300", "--save", dir, "--save-every", "1", NULL};
    pid_t pid = fork();
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        dup2(dn, STDOUT_FILENO);
        dup2(dn, STDERR_FILENO);
        execv(g_costbench, (char **)argv);
        _exit(127);
    }
    int killed = 0;
    for (int i = 0; i < 60000 && !killed; i++) {
        FILE *f = fopen(latest, "r");
        long step = 0;
        if (f) {
            if (fscanf(f, "step-%ld", &step) != 1) step = 0;
            fclose(f);
        }
        if (step >= 5) {
            kill(pid, SIGKILL);
            killed = 1;
        } else {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the run was not killed mid-way (status %d)", st);
    const char *r[] = {"train", TINY, "--steps", "300", "--resume", dir, "--csv", res, NULL};
    CHECK(run_quiet(r, err, sizeof err) == 0 && strstr(err, "resumed from"), "resume: %s", err);
    static char lf[320][32], lr[320][32];
    memset(lr, 0, sizeof lr);
    int nf = read_losses(full, lf, 320), nr = read_losses(res, lr, 320), compared = 0;
    CHECK(nf == 300 && nr > 0 && nr < 300, "logs: %d full, %d resumed", nf, nr);
    for (int s = 1; s <= 300; s++)
        if (lr[s][0]) {
            CHECK(strcmp(lf[s], lr[s]) == 0, "step %d: uninterrupted loss %s, resumed %s", s, lf[s], lr[s]);
            compared++;
        }
    CHECK(compared == nr, "compared %d of %d resumed steps", compared, nr);
    unlink(full), unlink(res);
    rm_tree(dir), rm_tree(test_path("train-ckpt")), rm_tree(test_path("ckpt"));
}

static void test_cli_train_bad_input(void)
{
    char err[8192];
    const char *bad[][24] = {
        {"train", "--model", "pythia-7b", NULL},
        {"train", "--micro-batch", "0", NULL},
        {"train", "--micro-batch", "4", "--global-batch", "6", NULL},
        {"train", "--model", "pythia-70m", "--seq", "4096", NULL},
        {"train", "--model", "pythia-12b", "--micro-batch", "8", "--seq", "2048", NULL},
        {"train", "--heads", "7", NULL},
        {"train", "--save-every", "2", NULL},
        {"train", "--lr", "nan", NULL},
    };
    const char *expect[] = {"unknown model preset", "flag '--micro-batch'", "not a multiple of --micro-batch",
                            "max_seq_len", "GiB available", "not a multiple of 7 heads", "needs '--save DIR'",
                            "flag '--lr'"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run_quiet(bad[i], err, sizeof err);
        CHECK(rc == 2 && strstr(err, expect[i]), "case %zu: exit %d, expected '%s': %s", i, rc, expect[i], err);
    }
    const char *nodata[] = {"train", TINY, "--steps", "1", "--data", "/tmp/costbench-no-such-dataset", NULL};
    int rc = run_quiet(nodata, err, sizeof err);
    CHECK(rc == 1 && strstr(err, "cannot open '/tmp/costbench-no-such-dataset.idx'"), "missing dataset: %d %s", rc,
          err);
    const char *noresume[] = {"train", TINY, "--steps", "1", "--resume", "/tmp/costbench-no-such-dir", NULL};
    rc = run_quiet(noresume, err, sizeof err);
    CHECK(rc == 1 && strstr(err, "cannot resume"), "missing checkpoint: %d %s", rc, err);
}

const test_case tests_train[] = {
    {"dataset: built files read back, windows and targets, vocabulary check", test_dataset_roundtrip},
    {"dataset: corrupt and truncated files are refused", test_dataset_corrupt},
    {"checkpoint: weights and optimizer round trip, shape and header errors", test_checkpoint_roundtrip},
    {"safetensors: BF16 and F16 tensors read as fp32", test_safetensors_half_types},
    {"gradient accumulation equals one large batch", test_gradient_accumulation},
    {"cli: train --data, --recompute (same losses), accumulation, --init", test_cli_train_features},
    {"cli: train killed with SIGKILL resumes with identical losses", test_cli_kill_and_resume},
    {"cli: train refuses bad flags, sizes, missing files", test_cli_train_bad_input},
    {NULL, NULL},
};
