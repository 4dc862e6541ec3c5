/* test_audit3_files.c: regression tests of the third audit: every atomic writer's target (mode, read-only, symlinks, hard links, stale temporaries), train --csv, optimizer-state bounds (issue 28: #5 #6 #7 #16). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/err.h"
#include "../common/presets.h"
#include "../model/checkpoint.h"
#include "../model/gpt.h"
#include "../model/safetensors.h"
#include "check.h"

#define TINY_LOG "tests/logs/costbench_tiny.log"

/* import TINY_LOG --out path with --id id: the exit status (stderr into err). */
static int import_to(const char *path, const char *id, char *err, size_t errsz)
{
    const char *a[] = {"import", TINY_LOG, "--out", path, "--id", id, NULL};
    return cli_run(a, NULL, 0, err, errsz);
}

/* #7: --out keeps the target's mode, refuses a read-only or hard-linked target (the file byte for
 * byte as it was), and writes through a symbolic link to its target. */
static void t_out_target(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char path[512], lnk[600], hard[600], err[4096], before[65536], after[65536];
    snprintf(path, sizeof path, "%s/runs.csv", dir);
    CHECK(import_to(path, "first", err, sizeof err) == 0, "new file: %s", err);
    chmod(path, 0600);
    CHECK(import_to(path, "second", err, sizeof err) == 0, "append: %s", err);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600, "mode 600 kept: %o", (unsigned)(st.st_mode & 07777));
    chmod(path, 0444);
    slurp(path, before, sizeof before);
    int rc = import_to(path, "third", err, sizeof err);
    slurp(path, after, sizeof after);
    CHECK(rc == 1 && strstr(err, "read-only") && count_lines(err) == 1 && strcmp(before, after) == 0,
          "read-only target: %d %s", rc, err);
    chmod(path, 0644);
    snprintf(lnk, sizeof lnk, "%s/link.csv", dir);
    CHECK(symlink("runs.csv", lnk) == 0, "symlink");
    CHECK(import_to(lnk, "fourth", err, sizeof err) == 0, "through the link: %s", err);
    slurp(path, after, sizeof after);
    struct stat lst;
    CHECK(lstat(lnk, &lst) == 0 && S_ISLNK(lst.st_mode) && strstr(after, "fourth"),
          "the link stays a link and its target got the row");
    snprintf(hard, sizeof hard, "%s/hard.csv", dir);
    CHECK(link(path, hard) == 0, "hard link");
    slurp(path, before, sizeof before);
    rc = import_to(path, "fifth", err, sizeof err);
    slurp(path, after, sizeof after);
    CHECK(rc == 1 && strstr(err, "hard link") && count_lines(err) == 1 && strcmp(before, after) == 0,
          "hard-linked target: %d %s", rc, err);
    struct stat a, b;
    CHECK(stat(path, &a) == 0 && stat(hard, &b) == 0 && a.st_ino == b.st_ino, "the link is not split");
    rm_tree(dir);
}

/* #7 for prices import --out: a symbolic link's target gets the rows. */
static void t_prices_out_link(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char path[512], link[600], err[4096], buf[65536];
    snprintf(path, sizeof path, "%s/prices.csv", dir);
    snprintf(link, sizeof link, "%s/link.csv", dir);
    write_text(path, "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n"
                     "gcp,a2-highgpu-1g,us-central1,on_demand,3.67,2024-06,page\n");
    CHECK(symlink(path, link) == 0, "symlink");
    const char *a[] = {"prices", "import", "tests/catalogs/aws-offer.csv", "--format", "aws-offer", "--out", link,
                       NULL};
    CHECK(cli_run(a, NULL, 0, err, sizeof err) == 0, "import: %s", err);
    slurp(path, buf, sizeof buf);
    struct stat lst;
    CHECK(lstat(link, &lst) == 0 && S_ISLNK(lst.st_mode) && strstr(buf, "p4d.24xlarge"),
          "the link stays a link and its target got the rows:\n%s", buf);
    rm_tree(dir);
}

/* #16: a temporary FILE.tmp.PID that no process holds (a killed write's) is removed by the next
 * write of FILE; one a live writer holds stays. */
static void t_stale_tmp(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char path[512], dead[600], live[600], err[4096];
    snprintf(path, sizeof path, "%s/runs.csv", dir);
    snprintf(dead, sizeof dead, "%s.tmp.%d", path, 999999);
    snprintf(live, sizeof live, "%s.tmp.%d", path, 999998);
    write_text(dead, "half a file");
    write_text(live, "a live writer's");
    int fd = open(live, O_RDONLY);
    CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "lock the live one");
    CHECK(import_to(path, "first", err, sizeof err) == 0, "import: %s", err);
    CHECK(access(dead, F_OK) != 0 && strstr(err, "left by a killed write"), "the dead one removed: %s", err);
    CHECK(access(live, F_OK) == 0, "the live one stays");
    if (fd >= 0) close(fd);
    rm_tree(dir);
}


/* ---------------------------------------------------------------- train: #5 and #6 */

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

/* The tiny model of the audit ($B) on a corpus of made-up text (built once). */
#define TINY_TRAIN                                                                                                   \
    "--model", "pythia-14m", "--layers", "2", "--vocab", "512", "--micro-batch", "1", "--seq", "64", "--no-predict", \
        "--peak-gflops", "10000", "--quiet", "--data", test_corpus()


/* The step column of a --csv log as "1,2,3," (at most n characters). */
static void steps_of(const char *path, char *out, size_t n)
{
    double s[512];
    int k = csv_column(path, "step", s, 512);
    out[0] = '\0';
    for (int i = 0; i < k; i++) snprintf(out + strlen(out), n - strlen(out), "%g,", s[i]);
}

/* #6: --resume with the same --csv appends from the checkpoint's step (rows after it, which the
 * resumed run repeats, are replaced); a file that does not reach that step is refused untouched. */
static void t_csv_resume(void)
{
    const char *dir = test_tmpdir();
    if (!dir) return;
    char ck[512], csv[512], steps[4096], before[65536], after[65536];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(csv, sizeof csv, "%s/log.csv", dir);
    const char *a[] = {"train", TINY_TRAIN, "--steps", "3", "--save", ck, "--save-every", "2", "--csv", csv, NULL};
    CHECK(run(a) == 0, "first segment: %s", g_err);
    /* the checkpoint is at step 3; make it step 2's, as a kill after step 3's row leaves it */
    char latest[600];
    snprintf(latest, sizeof latest, "%s/latest", ck);
    write_text(latest, "step-00000002\n");
    const char *r[] = {"train", TINY_TRAIN, "--steps", "5", "--resume", ck, "--save", ck, "--csv", csv, NULL};
    CHECK(run(r) == 0, "resumed: %s", g_err);
    steps_of(csv, steps, sizeof steps);
    CHECK(strcmp(steps, "1,2,3,4,5,") == 0, "the whole curve: steps %s", steps);
    /* a file that ends before the checkpoint's step: refused, untouched */
    const char *b[] = {"train", TINY_TRAIN, "--steps", "1", "--csv", csv, NULL};
    CHECK(run(b) == 0, "a one-step file: %s", g_err);
    slurp(csv, before, sizeof before);
    const char *r2[] = {"train", TINY_TRAIN, "--steps", "7", "--resume", ck, "--csv", csv, NULL};
    int rc = run(r2);
    slurp(csv, after, sizeof after);
    CHECK(rc == 2 && strstr(g_err, csv) && strstr(g_err, "step 5") && count_of(g_err, "error:") == 1 &&
              strcmp(before, after) == 0,
          "a file ending at step 1 for a checkpoint at step 5: %d %s", rc, g_err);
    rm_tree((char *)dir);
}

/* #6: rows are written as they are produced: kill -9 leaves the steps done so far. */
static void t_csv_killed(void)
{
    const char *dir = test_tmpdir();
    if (!dir) return;
    char csv[512], steps[4096];
    snprintf(csv, sizeof csv, "%s/log.csv", dir);
    const char *argv[] = {g_costbench, "train", TINY_TRAIN, "--steps", "100000", "--csv", csv, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        dup2(dn, STDOUT_FILENO), dup2(dn, STDERR_FILENO);
        execv(g_costbench, (char **)argv);
        _exit(127);
    }
    double s[8];
    int rows = 0;
    for (int i = 0; i < 600 && rows < 3; i++) { /* at most a minute */
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
        if (access(csv, F_OK) == 0) rows = csv_column(csv, "step", s, 8);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    steps_of(csv, steps, sizeof steps);
    CHECK(rows >= 3 && strncmp(steps, "1,2,3,", 6) == 0, "killed run's log: %d rows, steps %s", rows, steps);
    rm_tree((char *)dir);
}

/* #5: a finite first moment far beyond AdamW's bound |m| <= 1.165 sqrt(v) is refused at --resume,
 * naming the file, the tensor and the element, in every precision; nothing is saved. */
static void moment_bound_in(const char *prec)
{
    const char *dir = test_tmpdir();
    if (!dir) return;
    char ck[512], opt[600], latest[600], text[64], step4[600];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(opt, sizeof opt, "%s/step-00000003/optimizer.safetensors", ck);
    snprintf(latest, sizeof latest, "%s/latest", ck);
    snprintf(step4, sizeof step4, "%s/step-00000004", ck);
    const char *a[] = {"train", TINY_TRAIN, "--precision", prec, "--steps", "3", "--save", ck, NULL};
    int made = run(a);
    if (made != 0 && strstr(g_err, "no bf16 matmul")) { /* this CPU cannot run the precision */
        rm_tree((char *)dir);
        return;
    }
    CHECK(made == 0, "train --save (%s): %s", prec, g_err);
    const char *vq = "exp_avg/gpt_neox.layers.0.attention.dense.weight";
    st_poke(opt, vq, 5, 1e30f);
    const char *r[] = {"train", TINY_TRAIN, "--precision", prec, "--steps", "4", "--resume", ck, "--save", ck, NULL};
    int rc = run(r);
    CHECK(rc == 1 && strstr(g_err, opt) && strstr(g_err, vq) && strstr(g_err, "element 5") &&
              count_of(g_err, "error:") == 1,
          "%s: an exp_avg of 1e30: exit %d: %s", prec, rc, g_err);
    slurp(latest, text, sizeof text);
    CHECK(strcmp(text, "step-00000003\n") == 0 && access(step4, F_OK) != 0, "%s: a checkpoint was saved", prec);
    rm_tree((char *)dir);
}

static void t_moment_bound(void)
{
    moment_bound_in("fp32");
    moment_bound_in("bf16-mixed");
    moment_bound_in("bf16");
}

/* #5: a state whose updates are not bounded by the learning rate is not saved. */
static void t_save_bound(void)
{
    model_config c;
    CHECK(model_preset_find("pythia-14m", &c) == 0, "pythia-14m preset");
    c.L = 1, c.V = 512;
    gpt_model m;
    if (gpt_init(&m, &c, 1, 8, 0, PRECISION_FP32) != 0) return;
    gpt_init_weights(&m, 3);
    float *mm = m.w.m, *vv = m.w.v;
    for (size_t i = 0; i < m.w.nparams; i++) mm[i] = 1e-3f, vv[i] = 1e-6f; /* |m| = sqrt(v): possible */
    const char *dir = test_path("savebound");
    ckpt_state st = {.step = 2, .seed = 1, .B = 1, .T = 8, .accum = 1, .run_id = 7, .beta1 = 0.9f, .beta2 = 0.95f};
    m.w.adam_t = 2;
    capture_stderr_begin();
    int ok = ckpt_save(&m, m.w.m, m.w.v, dir, &st);
    capture_stderr_end();
    CHECK(ok == 0, "a possible state refused");
    mm[12345] = 1e30f;
    st.step = 3, m.w.adam_t = 3;
    capture_stderr_begin();
    int rc = ckpt_save(&m, m.w.m, m.w.v, dir, &st);
    const char *err = capture_stderr_end();
    char step3[600];
    snprintf(step3, sizeof step3, "%s/step-00000003", dir);
    CHECK(rc == CB_EFAIL && strstr(err, "exp_avg/") && strstr(err, "learning rate") && count_lines(err) == 1 &&
              access(step3, F_OK) != 0,
          "an impossible state saved: %d %s", rc, err);
    gpt_free(&m);
}

const test_case tests_audit3_files[] = {
    {"audit3 files: #7 --out keeps the mode, refuses read-only and hard-linked targets, follows symlinks",
     t_out_target},
    {"audit3 files: #7 prices import --out through a symlink", t_prices_out_link},
    {"audit3 files: #16 a killed write's FILE.tmp.PID is removed", t_stale_tmp},
    {"audit3 files: #6 train --csv with --resume keeps the earlier segment's rows", t_csv_resume},
    {"audit3 files: #6 train --csv rows survive kill -9", t_csv_killed},
    {"audit3 files: #5 an exp_avg beyond AdamW's bound is refused at --resume", t_moment_bound},
    {"audit3 files: #5 a state whose update is not bounded by the learning rate is not saved", t_save_bound},
    {NULL, NULL},
};
