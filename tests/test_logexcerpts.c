/* test_logexcerpts.c: real training-log excerpts (tests/logs/README.md: source, commit, licence and
 * the truth worked by hand) imported into their rows: the global batch the lines state, seq/s from
 * it, and the steady-state rule's counts on mid-run excerpts of 1 to 5 lines. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "csvrun.h"

/* One excerpt: its file, the row's global_batch and seq_per_s ("" / 0: empty), the steps line's
 * counts (kept, dropped as warm-up, dropped as repeats), a phrase its notes or # lines hold; then
 * (NULL: not checked) the row's framework, other cells as "column=value;..." ("column=" for an
 * empty cell) and one flag given to import with its value. */
typedef struct {
    const char *file, *gb;
    double seq_per_s;
    int kept, warm, dup;
    const char *says;
    const char *framework, *cells, *flag, *flag_value;
} excerpt;

static const excerpt cases[] = {
    /* 3 lines from iteration 25, interval 1: no start-up, no band; median(87.0, 86.5, 88.4) ms = 87.0 ms */
    {"megatron-lm_2024-07_awsome-gpt3-srun-prefix-3lines.log", "2", 2 / 0.0870, 3, 0, 0,
     "the first line is past its log interval", NULL, NULL, NULL, NULL},
    /* iterations 1-3 of a fresh run: iteration 1 start-up; median(129028.8, 128891.5) ms = 128.96015 s */
    {"megatron-lm_2021-05_bigscience-gpt2-perf-n16.log", "1024", 1024 / 128.96015, 2, 1, 0,
     "2 lines left: too few for a band", NULL, NULL, NULL, NULL},
    /* issue 756's iterations 71-73 of 100: all kept; median(5361.6, 5470.7, 5829.9) ms = 5.4707 s */
    {"megatron-lm_2024-04_issue756-mixtral-iter71-73-midrun.log", "128", 128 / 5.4707, 3, 0, 0,
     "3 lines left: too few for a band", NULL, NULL, NULL, NULL},
    /* its 4th line, cut after "consumed samples: 9472 | elapse", is dropped and counted */
    {"megatron-lm_2024-04_issue756-mixtral-iter71-73-midrun.log", "128", 128 / 5.4707, 3, 0, 0,
     "1 iteration line without 'elapsed time per iteration (ms)' (cut short) dropped, the first at line 4", NULL, NULL,
     NULL, NULL},
    /* iterations 1-3: iteration 1 start-up; median(243438.3, 243344.4) ms = 243.39135 s */
    {"megatron-lm_2024-07_awsome-gpt3-abbreviated-args-elided.log", "288", 288 / 243.39135, 2, 1, 0,
     "2 lines left: too few for a band", NULL, NULL, NULL, NULL},
    /* NeMo 1.x: consumed_samples 12800 / (global_step 99 + 1) = 128; 11.20 s */
    {"nemo1_24.x_dgxc-llama3.1-70b-lastline.log", "128", 128 / 11.20, 1, 0, 0,
     "global batch 128: consumed_samples / (global_step + 1) on 1 line", NULL, NULL, NULL, NULL},
    /* NeMo 1.x: 76800 / (50 + 1) = 1505.88 is no batch: left empty, and the note says why */
    {"nemo1_24.x_dgxc-gpt3-175b-valloss.log", "", 0, 1, 0, 0,
     "76800 / 51 = 1505.88 at line 2 is not a whole number: not used as the global batch", NULL, NULL, NULL, NULL},
    /* NeMo 2.0: global_step 45, 46, 48 (past the interval): median(47.12, 47.15, 46.81) = 47.12 s */
    {"nemo2_2025-05_awsome-skypilot-ray-prefix-b.log", "512", 512 / 47.12, 3, 0, 0,
     "3 lines left: too few for a band", NULL, NULL, NULL, NULL},
    /* NeMo 2.0: global_step 19, 29: median(46.86, 46.84) = 46.85 s */
    {"nemo2_2025-05_awsome-nemorun-ray-prefix-a.log", "512", 512 / 46.85, 2, 0, 0, "the median of all 2 kept", NULL,
     NULL, NULL, NULL},
    /* NeMo 2.0: one line, global_batch_size 128, 12.39 s */
    {"nemo2_25.x_dgxc-llama3.1-lastline.log", "128", 128 / 12.39, 1, 0, 0, "the median of all 1 kept", NULL, NULL, NULL,
     NULL},
    /* NeMo 1.x, issue 31 point 6: the bar with a validation bar's residue glued after its ']': 1.900 s;
     * consumed 1.28e+6 / (2e+3 + 1) = 639.68 (3 digits printed) is no batch */
    {"nemo1_24.01_awsome-eks-valbar-glued.log", "", 0, 1, 0, 0,
     "1280000 / 2001 = 639.68 at line 1 is not a whole number", "nemo", "seq_len=", NULL, NULL},
    /* point 6: a bar with "[rank: 1] ..." glued, and on line 10 two bars joined by a literal "^M": one step
     * (global_step 6023) on two lines; 96384 / 6024 = 16; 2.590 s */
    {"nemo1_24.03_jpdoc-ptuning-4gpu-rank-stop-glued-caretM.log", "16", 16 / 2.59, 1, 0, 1,
     "global batch 16: consumed_samples / (global_step + 1) on 2 lines", "nemo", NULL, NULL, NULL},
    /* dgxc's last bars: 12600 / (49 + 1) = 252, 12.80 s; 25600 / (99 + 1) = 256, 3.590 s */
    {"nemo1_24.x_dgxc-llama3.1-405b-vnum.log", "252", 252 / 12.80, 1, 0, 0,
     "global batch 252: consumed_samples / (global_step + 1) on 1 line", "nemo", NULL, NULL, NULL},
    {"nemo1_24.x_dgxc-nemotron4-340b-lastline.log", "256", 256 / 3.59, 1, 0, 0,
     "global batch 256: consumed_samples / (global_step + 1) on 1 line", "nemo", NULL, NULL, NULL},
    /* NeMo 2.0: one ProgressPrinter line wrapped over 3 lines after its '|': gbs 512 on the first, 46.84 s on
     * the second */
    {"nemo2_2026-02_awsome-perf-wrapped-3lines.log", "512", 512 / 46.84, 1, 0, 0, "the median of all 1 kept", "nemo",
     NULL, NULL, NULL},
    /* BioNeMo on NeMo 2: iterations 120-125 (mid-run), gbs 1; median of 6 = (0.03157 + 0.03163) / 2 = 0.0316 s;
     * the 7th line, cut after "train_step_timing in s:", dropped and counted */
    {"nemo2_2025_bionemo-pr740-gbs1-valloss.log", "1", 1 / 0.0316, 6, 0, 0,
     "1 progress line ending at 'train_step_timing in s:' (cut short) dropped, the first at line 7", "nemo", NULL,
     NULL, NULL},
    /* dgxc's NeMo 2 Nemotron line: gbs 256, 2.693 s */
    {"nemo2_25.x_dgxc-nemotron-lastline.log", "256", 256 / 2.693, 1, 0, 0, "the median of all 1 kept", "nemo", NULL,
     NULL, NULL},
    /* NeMo 2 AutoModel's bar with a "[default0]:" prefix glued at its end: 2.200 s, no batch in the log */
    {"nemo2-automodel_2025-06_speech-issue13903-default0-prefix-tps.log", "", 0, 1, 0, 0, "the median of all 1 kept",
     "nemo", NULL, NULL, NULL},
    /* torchtitan 2025-11, issue 31 point 7: "Trainer is initialized with local batch size 8, global batch size
     * 64, gradient accumulation steps 1, sequence length 2048", "Building llama3 debugmodel" (no preset),
     * "Applied selective activation checkpointing", mesh [8]; steps 1-10: step 1 start-up; median tps of
     * steps 2-10 = 338287 tok/s/device; seq/s = 338287 x 8 / 2048 = 1321.43 */
    {"torchtitan_2025-11_hpcdoc-h200-debugmodel-full-trainerinit.log", "64", 338287.0 * 8 / 2048, 9, 1, 0,
     "model 'llama3-debugmodel': not a preset of data/models.csv", "torchtitan",
     "seq_len=2048;micro_batch=8;devices=8;model=llama3-debugmodel;recompute=selective;"
     "metric=tokens_per_s_per_device;value=338287",
     NULL, NULL},
    /* the same step (1990) printed by 9 srun tasks, ANSI colours: one step, 6785 and 7865 tok/s/device */
    {"torchtitan_2025-03_awsome-llama3-8b-4node-9ranks-ansi.log", "", 0, 1, 0, 8, "the median of all 1 kept",
     "torchtitan", "metric=tokens_per_s_per_device;value=6785", NULL, NULL},
    {"torchtitan_2025-03_awsome-llama3-8b-fp8compile-9ranks-ansi.log", "", 0, 1, 0, 8, "the median of all 1 kept",
     "torchtitan", "value=7865", NULL, NULL},
    /* steps 22-29 mid-run, a re-looped dataset warning between: median tps = (197367 + 203673) / 2 = 200520 */
    {"torchtitan_2025-03_pr950-debug-relooped-warning.log", "", 0, 8, 0, 0, "none as start-up", "torchtitan",
     "value=200520", NULL, NULL},
    /* steps 200-250 every 10: median = (5862 + 5864) / 2 = 5863 */
    {"torchtitan_2025-06_pr1287-every10-gc-profiler.log", "", 0, 6, 0, 0, "none as start-up", "torchtitan",
     "value=5863", NULL, NULL},
    /* step 1 from 4 ranks, step 10 from rank 2, rank 3's line cut at "tps: 5,6" (dropped, not read as 56);
     * two steps are too few for the start-up rule: --skip-steps 1 leaves step 10's 5615 */
    {"torchtitan_2025-10_pr1884-llama3-8b-4ranks-cp2.log", "", 0, 1, 1, 3,
     "the last line (6) ends inside its tps figure (cut short): dropped", "torchtitan", "value=5615", "--skip-steps",
     "1"},
    /* step 4 printed 7 times (10050 x 5, 10049 x 2: the first kept), step 5 once: median(10050, 10007) */
    {"torchtitan_2026-02_pr2389-moe-7ranks-noprefix.log", "", 0, 2, 0, 6, "the median of all 2 kept", "torchtitan",
     "value=10028.5", NULL, NULL},
    /* steps 14-21 on a T4: median = (7304 + 7309) / 2 = 7306.5 */
    {"torchtitan_2026-05_pr3393-t4-debugmodel-steps.log", "", 0, 8, 0, 0, "none as start-up", "torchtitan",
     "value=7306.5", NULL, NULL},
    /* Composer 0.21.3, point 7: the Config block's num_gpus_per_node 8 x num_nodes 2; one batch block:
     * samples_per_sec 2.7330 */
    {"composer_0.21.3_rocmblog-mpt30b-2node-config.log", "", 2.733, 1, 0, 0, "the median of all 1 kept",
     "llm-foundry", "devices=16;devices_per_node=8;metric=seq_per_s", NULL, NULL},
    {"composer_0.21.3_rocmblog-mpt30b-1node-config.log", "", 1.4307, 1, 0, 0, "the median of all 1 kept",
     "llm-foundry", "devices=8;devices_per_node=8", NULL, NULL},
    /* Composer 0.31.0: the [batch=20/20] block, TAB-indented: samples_per_sec 0.2170 on one GPU */
    {"composer_0.31.0_2025-08_dyna-log-batch20-throughput.log", "", 0.217, 1, 0, 0, "the median of all 1 kept",
     "llm-foundry", "devices=", NULL, NULL},
    /* issue 756's first comment: iterations 10-12 and a 4th line cut after its time (10269.3 ms survives, read);
     * iteration 10 is past interval 1: all 4 kept; median = (10036.9 + 10198.4) / 2 ms = 10.11765 s */
    {"megatron-lm_2024-03_issue756-mixtral-iter10-13-startup.log", "128", 128 / 10.11765, 4, 0, 0,
     "4 lines left: too few for a band", "megatron-lm", NULL, NULL, NULL},
    /* epfLLM's Megatron-LLM fork: iterations 122-126, the 5th cut after its time and batch (read): median of 5 =
     * 89075.2 ms */
    {"megatron-llm_2023_epfl-issue11-iter122-126-fork.log", "1024", 1024 / 89.0752, 5, 0, 0,
     "5 lines left: too few for a band", "megatron-lm", NULL, NULL, NULL},
    /* point 7: Megatron's " > padded vocab (size: 50257) with 943 dummy tokens (new size: 51200)" (line 11) */
    {"megatron-lm_2024-07_awsome-gpt3-abbreviated-args-elided.log", "288", 288 / 243.39135, 2, 1, 0,
     "2 lines left: too few for a band", "megatron-lm", "vocab=51200;model=", NULL, NULL},
    /* --vocab wins over it, the difference named */
    {"megatron-lm_2024-07_awsome-gpt3-abbreviated-args-elided.log", "288", 288 / 243.39135, 2, 1, 0,
     "vocab 50257 from --vocab, over 51200 that tests/logs/megatron-lm_2024-07_awsome-gpt3-abbreviated-args-elided.log"
     ":11 states",
     "megatron-lm", "vocab=50257", "--vocab", "50257"},
    /* --model that is no preset: kept, and one # line says so */
    {"megatron-lm_2024-07_awsome-gpt3-abbreviated-args-elided.log", "288", 288 / 243.39135, 2, 1, 0,
     "# model 'gpt3-5b': not a preset of data/models.csv", "megatron-lm", "model=gpt3-5b;layers=", "--model",
     "gpt3-5b"},
    /* Megatron-DeepSpeed 2021 (ms lines, told apart by the block's "deepspeed ... True"): iterations 1-49,
     * interval 1: iteration 1 start-up; median of 48 = (137068.7 + 137138.4) / 2 ms = 137.10355 s */
    {"megatron-deepspeed_2021-06_bigscience-3d-ds-on-n16.log", "1024", 1024 / 137.10355, 48, 1, 0,
     "megatron-deepspeed format (detected from line 901: 'iteration        1/    1000 |", "megatron-deepspeed",
     "seq_len=1024;devices=64;vocab=50688;recompute=full;tp=4;pp=16;dp=1;precision=fp16-mixed", NULL, NULL},
    /* the same line, and DeepSpeed's own lines, name the marker */
    {"megatron-deepspeed_2021-06_bigscience-3d-ds-on-n16.log", "1024", 1024 / 137.10355, 48, 1, 0,
     "and line 86: 'deepspeed ....", "megatron-deepspeed", NULL, NULL, NULL},
    /* tr1-13B: Megatron-LM's ms lines and nothing else: detected as Megatron-LM; named, the fork's;
     * iterations 29020-29090 (interval 10, mid-run): median of 8 = (22148.5 + 22181.7) / 2 ms */
    {"megatron-deepspeed_2021-09_tr1-13b-spike.log", "1024", 1024 / 22.1651, 8, 0, 0, "megatron format (detected",
     "megatron-lm", NULL, NULL, NULL},
    {"megatron-deepspeed_2021-09_tr1-13b-spike.log", "1024", 1024 / 22.1651, 8, 0, 0,
     "megatron-deepspeed format (--framework megatron-deepspeed)", "megatron-deepspeed", "seq_len=", "--framework",
     "megatron-deepspeed"},
    /* 2022's s lines: one line, iteration 2 of a fresh run, 769.99 s; 8388608 tokens / 4096 samples = 2048 */
    {"megatron-deepspeed_2022-02_bloom-prequel-20b-1node.log", "2048", 2048 / 769.99, 1, 0, 0,
     "sequence length 2048: consumed tokens / consumed samples on every line", "megatron-deepspeed",
     "seq_len=2048;flop_convention=", NULL, NULL},
    /* BLOOM 176B: 11 lines (31214-31222, a "[...]" line, 31250-31251), all inside the band: median 106.33 s */
    {"megatron-deepspeed_2022-04_bloom176b-spike.log", "2048", 2048 / 106.33, 11, 0, 0,
     "TFLOPs dropped: Megatron-DeepSpeed counts", "megatron-deepspeed", "seq_len=2048", NULL, NULL},
    /* two lines with a prose line between: median(215.82, 215.99) = 215.905 s */
    {"megatron-deepspeed_2022-07_bloom176b-reshape-afterrestart.log", "2048", 2048 / 215.905, 2, 0, 0,
     "the median of all 2 kept", "megatron-deepspeed", "seq_len=2048", NULL, NULL},
    /* JUBE's 175B: iterations 10-50, interval 10: iteration 10 start-up; median(5.3551, 5.6192, 5.3291,
     * 5.3247) = 5.3421 s; no consumed tokens: no sequence length */
    {"megatron-deepspeed_2024_jubench-juwels-175b.log", "96", 96 / 5.3421, 4, 1, 0,
     "4 lines left: too few for a band", "megatron-deepspeed", "seq_len=", NULL, NULL},
};

/* The row's cells e->framework and e->cells ("column=value;...") against t's row 0. */
static void excerpt_cells(const excerpt *e, table *t)
{
    if (e->framework)
        CHECK(strcmp(test_cell(t, 0, "framework"), e->framework) == 0, "%s: framework '%s', want '%s'", e->file,
              test_cell(t, 0, "framework"), e->framework);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", e->cells ? e->cells : "");
    char *save = NULL;
    for (char *kv = strtok_r(buf, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) continue;
        *eq = '\0';
        CHECK(strcmp(test_cell(t, 0, kv), eq + 1) == 0, "%s: %s '%s', want '%s'", e->file, kv, test_cell(t, 0, kv),
              eq + 1);
    }
}

/* One excerpt imported into a new file and its row checked against the hand truth. */
static void excerpt_check(const excerpt *e, const char *dir)
{
    char log[512], csv[600], steps[200];
    static char out[65536], err[8192], text[65536];
    snprintf(log, sizeof log, "tests/logs/%s", e->file);
    static int seq;
    snprintf(csv, sizeof csv, "%s/%d-%s.csv", dir, seq++, e->file);
    const char *argv[] = {"import", log, "--out", csv, e->flag, e->flag_value, NULL};
    int rc = cli_run(argv, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "%s: exit %d: %s", e->file, rc, err);
    if (rc != 0) return;
    FILE *f = fopen(csv, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f) fclose(f);
    int skip = e->flag && strcmp(e->flag, "--skip-steps") == 0;
    snprintf(steps, sizeof steps, "dropped as warm-up (%s",
             skip ? "--skip-steps" : e->warm ? "the first step" : "none");
    CHECK(strstr(text, steps) != NULL, "%s: warm-up %d: %s", e->file, e->warm, text);
    snprintf(steps, sizeof steps, "%d dropped as warm-up", e->warm);
    CHECK(strstr(text, steps) != NULL, "%s: '%s' in %s", e->file, steps, text);
    snprintf(steps, sizeof steps, "; %d kept, ", e->kept);
    CHECK(strstr(text, steps) != NULL, "%s: '%s' in %s", e->file, steps, text);
    snprintf(steps, sizeof steps, "; %d dropped as repeats of a step number", e->dup);
    CHECK(strstr(text, steps) != NULL, "%s: '%s' in %s", e->file, steps, text);
    CHECK(strstr(text, e->says) != NULL, "%s: '%s' in %s", e->file, e->says, text);
    table t;
    if (table_load(&t, csv) != 0) {
        CHECK(0, "%s: %s loads", e->file, csv);
        return;
    }
    CHECK(strcmp(test_cell(&t, 0, "global_batch"), e->gb) == 0, "%s: global_batch '%s', want '%s'", e->file,
          test_cell(&t, 0, "global_batch"), e->gb);
    const char *sps = test_cell(&t, 0, "seq_per_s");
    if (e->seq_per_s > 0)
        CHECK(fabs(test_num(&t, 0, "seq_per_s") - e->seq_per_s) <= 1e-6 * e->seq_per_s, "%s: seq_per_s %s, want %.9g",
              e->file, sps, e->seq_per_s);
    else
        CHECK(!*sps, "%s: seq_per_s '%s', want empty", e->file, sps);
    excerpt_cells(e, &t);
    table_free(&t);
}

static void test_excerpts(void)
{
    char *dir = test_tmpdir();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) excerpt_check(&cases[k], dir);
}

/* A copy of tests/logs/NAME with each line holding `step` written twice (as several ranks print it),
 * imported; its output into out. */
static int import_twice(const char *name, const char *step, char *out, size_t on, char *err, size_t en)
{
    char *dir = test_tmpdir(), src[512], path[600], line[4096];
    snprintf(src, sizeof src, "tests/logs/%s", name);
    snprintf(path, sizeof path, "%s/twice-%s", dir, name);
    FILE *in = fopen(src, "r"), *f = fopen(path, "w");
    while (in && f && fgets(line, sizeof line, in))
        if (strstr(line, step)) fputs(line, f), fputs(line, f);
    if (in) fclose(in);
    if (f) fclose(f);
    return cli_run((const char *const[]){"import", path, NULL}, out, on, err, en);
}

/* The same step printed by several ranks counts once: issue 756's excerpt and a NeMo 1.x bar with each
 * step line twice. */
static void test_rank_repeats(void)
{
    static char out[65536], err[8192];
    int rc = import_twice("megatron-lm_2024-04_issue756-mixtral-iter71-73-midrun.log", "elapsed time per iteration",
                          out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "# steps: 6 step lines;") && strstr(out, "; 3 kept, 3 steps; 3 dropped as repeats") &&
              strstr(out, ",23.3973715,"),
          "megatron: exit %d: %s%s", rc, out, err);
    rc = import_twice("nemo1_24.x_dgxc-llama3.1-70b-lastline.log", "Epoch 0:", out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "# steps: 2 step lines;") && strstr(out, "; 1 kept, 1 steps; 1 dropped as repeats") &&
              strstr(out, ",11.4285714,"),
          "nemo: exit %d: %s%s", rc, out, err);
}

/* Megatron-DeepSpeed's s lines named as Megatron-LM's: one error naming the line and the format. */
static void test_ds_named(void)
{
    static char out[65536], err[8192];
    int rc = cli_run((const char *const[]){"import", "tests/logs/megatron-deepspeed_2022-04_bloom176b-spike.log",
                                           "--framework", "megatron-lm", NULL},
                     out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "megatron-deepspeed_2022-04_bloom176b-spike.log:1: a Megatron-DeepSpeed line, not "
                                 "Megatron-LM: give --framework megatron-deepspeed"),
          "exit %d: %s%s", rc, out, err);
}

/* Real excerpts that give no row: one error naming the line and the rule. And a --model that is a
 * preset gets no "not a preset" line. */
static void test_refused(void)
{
    static const struct {
        const char *file, *says;
    } no_row[] = {
        {"composer_0.31.0_2025-08_dyna-log-head-config-batch1.log", ":26: the last step line prints none of step time"},
        {"composer_2023_awsome-mpt7b-batch1-srun-prefix.log", ":2: the last step line prints none of step time"},
        {"composer_llmfoundry-0.x_readme-mpt125m-no-throughput.log", ":13: the last step line prints none of"},
        {"composer_llmfoundry_2023-06_issue336-config-only-16gpu.log", ":1: no step line of Megatron-LM"},
        {"nemo1_2023-05_launcher-issue55-no-timing.log",
         ":1: a NeMo progress bar without 'train_step_timing in s': no step time to read"},
        {"nemo1_2025-01_speech-issue11900-empty-values.log", ":1: 'reduced_train_loss': expected a number"},
    };
    static char out[65536], err[8192];
    char log[512];
    for (size_t k = 0; k < sizeof no_row / sizeof no_row[0]; k++) {
        snprintf(log, sizeof log, "tests/logs/%s", no_row[k].file);
        int rc = cli_run((const char *const[]){"import", log, NULL}, out, sizeof out, err, sizeof err);
        const char *nl = strchr(err, '\n');
        CHECK(rc == 2 && strstr(err, log) && strstr(err, no_row[k].says) && nl && !strchr(nl + 1, '\n'),
              "%s: exit %d: %s", no_row[k].file, rc, err);
    }
    const char *argv[] = {"import", "tests/logs/megatron-lm_2024-07_awsome-gpt3-abbreviated-args-elided.log", "--model",
                          "gpt3-1.3b", NULL};
    int rc = cli_run(argv, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, ",gpt3-1.3b,gpt,") && !strstr(out, "not a preset"), "--model gpt3-1.3b: %d %s%s", rc,
          out, err);
}

const test_case tests_logexcerpts[] = {
    {"log excerpts: real Megatron-LM and NeMo excerpts into their rows (global batch, seq/s, dropped lines)",
     test_excerpts},
    {"log excerpts: a step printed by several ranks counts once", test_rank_repeats},
    {"log excerpts: Megatron-DeepSpeed's lines given as Megatron-LM's name the format", test_ds_named},
    {"log excerpts: real excerpts with no row refused naming the line and the rule; a preset --model is one",
     test_refused},
    {NULL, NULL},
};
