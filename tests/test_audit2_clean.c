/* Regression tests for the second hostile audit's defects (issue 18) in checkpoint clean-up and
 * the Megatron sampler's index: 3 (clean-up deleted a user's files), 5 (a killed save's leftovers
 * stayed while its PID was alive) and 9 (the Megatron index missing from the memory estimate). */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/mem.h"
#include "check.h"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

#define TINY                                                                                                      \
    "--model", "pythia-14m", "--layers", "2", "--d-model", "64", "--heads", "4", "--vocab", "256", "--seq", "32", \
        "--micro-batch", "1", "--no-predict", "--peak-gflops", "100", "--quiet", "--discard-steps", "0"

static int exists(const char *fmt, const char *a, const char *b)
{
    char p[1024];
    snprintf(p, sizeof p, fmt, a, b);
    return access(p, F_OK) == 0;
}

/* ---------------------------------------------------------------- 3: clean-up deleted a user's files */

static void test_clean_user_files(void)
{
    char *tmp = test_tmpdir(), ck[512], p[600];
    if (!tmp) return;
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    const char *a1[] = {"train", TINY, "--steps", "1", "--save", ck, NULL};
    CHECK(run(a1) == 0, "train --save: %s", g_err);
    /* a user's backup and a Hugging Face shard index next to the weights of step 1 */
    snprintf(p, sizeof p, "%s/step-00000001/model.safetensors.my-backup", ck), write_text(p, "mine");
    snprintf(p, sizeof p, "%s/step-00000001/model.safetensors.index.json", ck), write_text(p, "{}");
    /* steps 2, 3, 4: step 1 is superseded at the save of step 3 and seen again at step 4's */
    const char *a2[] = {"train", TINY, "--steps", "4", "--resume", ck, "--save", ck, "--save-every", "1", NULL};
    CHECK(run(a2) == 0, "train --resume --save-every 1: %s", g_err);
    CHECK(exists("%s/%s", ck, "step-00000001/model.safetensors.my-backup") &&
              exists("%s/%s", ck, "step-00000001/model.safetensors.index.json"),
          "the user's files in step-00000001 were deleted");
    CHECK(exists("%s/%s", ck, "step-00000001/model.safetensors"), "the kept step directory lost its weights");
    CHECK(!exists("%s/%s", ck, "step-00000002"), "step 2 (only costbench's files) was not removed");
    char want[700];
    snprintf(want, sizeof want, "warning: kept '%s/step-00000001': it holds files costbench did not write", ck);
    CHECK(count_of(g_err, want) == 1, "expected the warning once: %s", g_err);
    const char *a3[] = {"train", TINY, "--steps", "5", "--resume", ck, NULL};
    CHECK(run(a3) == 0, "the latest checkpoint does not resume: %s", g_err);
    rm_tree(tmp);
}

/* ---------------------------------------------------------------- 5: leftovers of live PIDs */

static void make_leftovers(const char *ck, long pid)
{
    char p[700];
    snprintf(p, sizeof p, "%s/step-00000005.tmp.%ld", ck, pid), mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/step-00000005.tmp.%ld/model.safetensors.tmp.%ld", ck, pid, pid), write_text(p, "xx");
    snprintf(p, sizeof p, "%s/step-00000004.old.%ld", ck, pid), mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/step-00000004.old.%ld/optimizer.safetensors", ck, pid), write_text(p, "xx");
    snprintf(p, sizeof p, "%s/latest.tmp.%ld", ck, pid), write_text(p, "step-00000004\n");
}

static void test_clean_live_pid(void)
{
    char *tmp = test_tmpdir(), ck[512], p[700], lock[700];
    if (!tmp) return;
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    mkdir(ck, 0755);
    /* PID 1 is alive and writes no checkpoint: its "leftovers" hold no lock */
    make_leftovers(ck, 1);
    /* this process saves (it holds its save lock): its temporaries stay */
    const long me = (long)getpid();
    make_leftovers(ck, me);
    snprintf(lock, sizeof lock, "%s/save.lock.%ld", ck, me);
    int fd = open(lock, O_RDWR | O_CREAT, 0644);
    CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0, "cannot lock %s", lock);
    const char *a[] = {"train", TINY, "--steps", "1", "--save", ck, NULL};
    CHECK(run(a) == 0, "train --save: %s", g_err);
    const char *gone[] = {"step-00000005.tmp.1", "step-00000004.old.1", "latest.tmp.1"};
    for (int i = 0; i < 3; i++) {
        char note[900];
        snprintf(note, sizeof note, "note: removed '%s/%s', left by a killed save\n", ck, gone[i]);
        CHECK(!exists("%s/%s", ck, gone[i]), "'%s' (PID 1 holds no lock) was not removed", gone[i]);
        CHECK(count_of(g_err, note) == 1, "expected once: %s; got: %s", note, g_err);
    }
    snprintf(p, sizeof p, "%s/step-00000005.tmp.%ld/model.safetensors.tmp.%ld", ck, me, me);
    CHECK(access(p, F_OK) == 0, "a live save's temporary was removed");
    snprintf(p, sizeof p, "%s/latest.tmp.%ld", ck, me);
    CHECK(access(p, F_OK) == 0 && !strstr(g_err, p), "a live save's latest.tmp was removed or reported: %s", g_err);
    /* the writer ends (its lock is released): the next clean-up removes what it left */
    if (fd >= 0) close(fd);
    CHECK(run(a) == 0, "train --save: %s", g_err);
    snprintf(p, sizeof p, "%s/step-00000005.tmp.%ld", ck, me);
    CHECK(access(p, F_OK) != 0 && strstr(g_err, p), "a dead writer's temporary stayed or was not reported: %s", g_err);
    CHECK(access(lock, F_OK) != 0, "the save lock file stayed");
    rm_tree(tmp);
}

/* ---------------------------------------------------------------- 9: the Megatron index unestimated */

#define SMALL                                                                                                        \
    "--model", "pythia-14m", "--layers", "2", "--vocab", "512", "--micro-batch", "1", "--seq", "64", "--no-predict", \
        "--peak-gflops", "10000", "--quiet", "--discard-steps", "0"

/* Bytes of Megatron's document, sample and shuffle indices of num_samples samples of T+1 tokens
 * over one document of tpe tokens (gpt_dataset.py's _get_num_epochs, helpers.cpp's sample count):
 * 4 a document entry, 8 a sample row (one more row than samples), 4 a shuffle entry. */
static double index_bytes(double tpe, double num_samples, double T)
{
    const double epochs = ceil((num_samples * T + 1) / tpe), built = floor((epochs * tpe - 1) / T);
    return 4 * epochs + 8 * (built + 1) + 4 * built;
}

static void test_index_estimate(void)
{
    char *tmp = test_tmpdir(), txt[600], prefix[600], want[200];
    if (!tmp) return;
    snprintf(txt, sizeof txt, "%s/doc.txt", tmp), snprintf(prefix, sizeof prefix, "%s/corpus", tmp);
    char doc[201];
    for (int i = 0; i < 200; i++) doc[i] = (char)('a' + i % 23);
    doc[200] = '\0';
    write_text(txt, doc);
    const char *b[] = {"dataset", "build", "--out", prefix, txt, NULL};
    CHECK(run(b) == 0 && strstr(g_out, "200 byte-level tokens"), "dataset build: %s%s", g_out, g_err);
    /* a small run prints its (small) index as a term of the estimate */
    const char *a1[] = {"train", SMALL, "--data", prefix, "--steps", "2", NULL};
    CHECK(run(a1) == 0 && strstr(g_out, ", Megatron sample index 0.000 GiB: total"),
          "the estimate has no index term: %s%s", g_out, g_err);
    /* 65535 steps of 65536 samples: 4.3e9 samples, 53 GiB of indices */
    const double need = index_bytes(200, 65535.0 * 65536.0, 64) / 1073741824.0;
    if (0.9 * mem_available_bytes() / 1073741824.0 > need + 1) {
        fprintf(stderr, "    (audit2 9: this machine has room for a %.0f GiB index: its refusal is not tested here)\n",
                need);
        rm_tree(tmp);
        return;
    }
    const char *a2[] = {"train", SMALL, "--data", prefix, "--steps", "65535", "--global-batch", "65536", NULL};
    int rc = run(a2);
    snprintf(want, sizeof want, ", Megatron sample index %.3f GiB: total", need);
    CHECK(strstr(g_out, want), "expected '%s' in the estimate: %s", want, g_out);
    snprintf(want, sizeof want, "with a Megatron sample index of %.1f GiB needs", need);
    CHECK(rc == 2 && strstr(g_err, "error: pythia-14m") && strstr(g_err, want) && !strstr(g_err, "sample order of"),
          "expected a refusal before allocation (exit 2, '%s'): exit %d: %s", want, rc, g_err);
    CHECK(count_of(g_err, "\n") == 1, "expected one line: %s", g_err);
    rm_tree(tmp);
}

const test_case tests_audit2_clean[] = {
    {"audit2 3: clean-up removes only the names costbench writes; a step holding a user's file stays",
     test_clean_user_files},
    {"audit2 5: a killed save's leftovers go unless their writer holds the save lock, whatever its PID",
     test_clean_live_pid},
    {"audit2 9: the Megatron index is a term of the memory estimate; one that does not fit is refused before "
     "allocation",
     test_index_estimate},
    {0},
};
