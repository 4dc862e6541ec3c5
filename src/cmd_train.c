/* costbench train and costbench dataset: flags, validation, the memory estimate, then
 * bench/step.c runs the loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/blascore.h"
#include "../bench/comm.h"
#include "../bench/peak.h"
#include "../bench/step.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/mem.h"
#include "../common/opts.h"
#include "../common/record.h"
#include "../kernels/matmul.h"
#include "../common/presets.h"
#include "../model/dataset.h"
#include "../model/gpt.h"
#include "commands.h"

static double gib(double b) { return b / 1073741824.0; }

int cmd_train(int argc, char **argv)
{
    const char *model = "pythia-70m", *csv = NULL, *summary_csv = NULL, *breakdown_csv = NULL, *blas = "auto";
    const char *data = NULL, *save = NULL, *resume = NULL, *init = NULL;
    long layers = 0, dmodel = 0, heads = 0, vocab = 0, B = 4, T = 512, G = 0, steps = 20, warmup = -1, discard = 2;
    long seed = 1234, save_every = 0;
    double lr = 6e-4, min_lr = -1, wd = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, clip = 1.0, peak = 0, budget = 60;
    double bucket_mib = 25;
    long zero = 0;
    int no_overlap = 0;
    int recompute = 0, no_predict = 0, quiet = 0;
    const opt_spec specs[] = {
        {"model", OPT_STR, &model, 0, 0, 0, 0, "PRESET", "model preset of data/models.csv (default pythia-70m)"},
        {"layers", OPT_LONG, &layers, 1, 1000, 0, 0, "L", "override the preset's layer count"},
        {"d-model", OPT_LONG, &dmodel, 1, 65536, 0, 0, "C", "override the preset's width"},
        {"heads", OPT_LONG, &heads, 1, 4096, 0, 0, "NH", "override the preset's head count"},
        {"vocab", OPT_LONG, &vocab, 2, 10000000, 0, 0, "V", "override the preset's vocabulary"},
        {"micro-batch", OPT_LONG, &B, 1, 65536, 0, 0, "B", "sequences per micro-batch (default 4)"},
        {"seq", OPT_LONG, &T, 1, 1 << 20, 0, 0, "T", "sequence length (default 512)"},
        {"global-batch", OPT_LONG, &G, 1, 1 << 30, 0, 0, "G", "sequences per optimizer step, a multiple of B (default B)"},
        {"steps", OPT_LONG, &steps, 1, 100000000, 0, 0, "N", "optimizer steps (default 20)"},
        {"lr", OPT_DOUBLE, &lr, 0, 0, 0, 10, "LR", "peak learning rate (default 6e-4)"},
        {"min-lr", OPT_DOUBLE, &min_lr, 0, 0, 0, 10, "LR", "final learning rate of the cosine decay (default lr/10)"},
        {"warmup-steps", OPT_LONG, &warmup, 0, 100000000, 0, 0, "N", "linear learning-rate warm-up (default steps/10)"},
        {"weight-decay", OPT_DOUBLE, &wd, 0, 0, 0, 10, "WD", "AdamW decoupled weight decay on matrices (default 0.1)"},
        {"beta1", OPT_DOUBLE, &beta1, 0, 0, 0, 0.999999, "B1", "AdamW beta1 (default 0.9)"},
        {"beta2", OPT_DOUBLE, &beta2, 0, 0, 0, 0.999999, "B2", "AdamW beta2 (default 0.95)"},
        {"eps", OPT_DOUBLE, &eps, 0, 0, 1e-30, 1, "EPS", "AdamW epsilon (default 1e-8)"},
        {"grad-clip", OPT_DOUBLE, &clip, 0, 0, 0, 1e6, "NORM", "clip the global gradient norm (0: off; default 1)"},
        {"seed", OPT_LONG, &seed, 0, 1L << 62, 0, 0, "S", "initialisation and data sampling seed (default 1234)"},
        {"recompute", OPT_FLAG, &recompute, 0, 0, 0, 0, NULL, "activation checkpointing: keep layer inputs, recompute the rest"},
        {"data", OPT_STR, &data, 0, 0, 0, 0, "PREFIX", "Megatron indexed dataset PREFIX.bin/.idx (default: synthetic tokens)"},
        {"init", OPT_STR, &init, 0, 0, 0, 0, "FILE", "start from these weights (safetensors, Hugging Face GPT-NeoX names)"},
        {"save", OPT_STR, &save, 0, 0, 0, 0, "DIR", "write checkpoints to DIR (every --save-every steps and at the end)"},
        {"save-every", OPT_LONG, &save_every, 1, 100000000, 0, 0, "N", "checkpoint interval in steps"},
        {"resume", OPT_STR, &resume, 0, 0, 0, 0, "DIR", "continue from DIR's latest checkpoint"},
        {"discard-steps", OPT_LONG, &discard, 0, 1000000, 0, 0, "N", "steps left out of the summary (default 2)"},
        {"peak-gflops", OPT_DOUBLE, &peak, 0, 0, 0, 1e9, "G", "fp32 peak for MFU (default: measured now)"},
        {"no-predict", OPT_FLAG, &no_predict, 0, 0, 0, 0, NULL, "skip the microbenchmarks behind the breakdown's prediction"},
        {"budget-s", OPT_DOUBLE, &budget, 0, 0, 1, 86400, "S", "time for the prediction's matmul measurements (default 60)"},
        {"csv", OPT_STR, &csv, 0, 0, 0, 0, "FILE", "per-step log as CSV"},
        {"summary-csv", OPT_STR, &summary_csv, 0, 0, 0, 0, "FILE", "the summary row as CSV (the throughput format of costbench report)"},
        {"breakdown-csv", OPT_STR, &breakdown_csv, 0, 0, 0, 0, "FILE", "the time breakdown as CSV"},
        {"blas-core", OPT_STR, &blas, 0, 0, 0, 0, "auto|env|NAME", "OpenBLAS kernel (default auto)"},
        {"quiet", OPT_FLAG, &quiet, 0, 0, 0, 0, NULL, "no per-step lines"},
        {"zero", OPT_LONG, &zero, 0, 1, 0, 0, "0|1", "under mpirun: 1 shards the AdamW moments over the ranks (ZeRO-1)"},
        {"no-overlap", OPT_FLAG, &no_overlap, 0, 0, 0, 0, NULL, "under mpirun: all-reduce after the backward, in --bucket-mib buckets"},
        {"bucket-mib", OPT_DOUBLE, &bucket_mib, 0, 0, 0.01, 1e6, "MIB", "with --no-overlap: gradient all-reduce bucket size (default 25)"},
        {0},
    };
    int rc = opts_parse("train", "[options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    model_config cfg;
    if ((rc = model_preset_find(model, &cfg)) != 0) return rc;
    if (layers) cfg.L = (int)layers;
    if (dmodel) cfg.C = (int)dmodel;
    if (heads) cfg.NH = (int)heads;
    if (vocab) cfg.V = (int)vocab;
    if (cfg.C % cfg.NH != 0) return err_usage("flags '--d-model' / '--heads': %d is not a multiple of %d heads", cfg.C, cfg.NH);
    cfg.HS = cfg.C / cfg.NH;
    if (layers || dmodel || heads || vocab) {
        char nm[48];
        snprintf(nm, sizeof nm, "%.20s-custom", cfg.name);
        snprintf(cfg.name, sizeof cfg.name, "%s", nm);
    }
    if (T > cfg.max_T) return err_usage("flag '--seq': %ld exceeds %s's max_seq_len %d", T, cfg.name, cfg.max_T);
    if (G == 0) G = B;
    if (G % B != 0) return err_usage("flag '--global-batch': %ld is not a multiple of --micro-batch %ld", G, B);

    if (B * T > (1L << 24)) return err_usage("flags '--micro-batch' x '--seq': %ld tokens per micro-batch is too many", B * T);
    if (warmup < 0) warmup = steps / 10;
    if (min_lr < 0) min_lr = lr / 10;
    if (save_every && !save) return err_usage("flag '--save-every' needs '--save DIR'");
    if (resume && init) return err_usage("flags '--resume' and '--init' exclude each other");
    /* OpenBLAS takes int dimensions: every matrix must have fewer than 2^31 elements */
    if ((double)cfg.V * cfg.C > 2147483647.0 || (double)B * T * cfg.V > 2147483647.0 ||
        (double)B * T * 4 * cfg.C > 2147483647.0)
        return err_usage("flags '--micro-batch' x '--seq': the logits (%ld x %d) or the MLP activations (%ld x %d) exceed 2^31-1 elements, the largest matrix BLAS indexes; use a smaller --micro-batch with --global-batch",
                         B * T, cfg.V, B * T, 4 * cfg.C);

    if ((rc = blascore_select(blas, argv)) != 0) return rc; /* may re-exec: before any output, before MPI starts */
    if (comm_init(NULL, NULL) != 0) return CB_EFAIL;
    const int ranks = comm_size(), rank = comm_rank(), root = rank == 0;
    if (G % (B * ranks) != 0)
        return err_usage("flag '--global-batch': %ld is not a multiple of --micro-batch %ld x %d ranks", G, B, ranks);

    /* memory, estimated and shown before anything is allocated */
    gpt_mem mem;
    gpt_estimate(&cfg, (int)B, (int)T, recompute, &mem);
    double moments_full = mem.moments;
    if (zero && ranks > 1) { /* ZeRO-1: each rank holds 1/N of the moments */
        mem.moments /= ranks;
        mem.total -= moments_full - mem.moments;
    }
    if (root) printf("# %s: L=%d C=%d heads=%d V=%d rotary_dims=%d, %s residual, %s embeddings; micro-batch %ld x seq %ld, global batch %ld (%ld accumulation steps)\n",
           cfg.name, cfg.L, cfg.C, cfg.NH, cfg.V, cfg.learned_pos ? 0 : rope_rotary_dims(cfg.HS, cfg.rotary_pct),
           cfg.parallel_residual ? "parallel" : "sequential", cfg.tied_embeddings ? "tied" : "untied", B, T, G, G / B);
    if (root) printf("# memory estimate: parameters %.3f GiB, gradients %.3f GiB, AdamW moments %.3f GiB, activations %.3f GiB (%.3f GiB with --recompute, %.3f GiB without), scratch %.3f GiB: total %.3f GiB\n",
           gib(mem.params), gib(mem.grads), gib(mem.moments),
           gib(recompute ? mem.acts_full_recompute : mem.acts_full_no_recompute), gib(mem.acts_full_recompute),
           gib(mem.acts_full_no_recompute), gib(mem.scratch), gib(mem.total));
    if (root && ranks > 1)
        printf("# %d data-parallel ranks%s: the estimate is per rank%s\n", ranks, zero ? ", ZeRO-1" : "",
               zero ? "" : " (--zero 1 would shard the AdamW moments)");
    if (root && zero && ranks > 1)
        printf("# ZeRO-1: AdamW moments %.3f GiB per rank instead of %.3f GiB (saves %.3f GiB a rank)\n", gib(mem.moments),
               gib(moments_full), gib(moments_full - mem.moments));
    fflush(stdout);
    char what[160];
    int local = comm_local_size();
    snprintf(what, sizeof what, "%s at B=%ld T=%ld%s%s", cfg.name, B, T, recompute ? " with --recompute" : "",
             local > 1 ? " on every rank of this machine" : "");
    if ((rc = mem_check_fits(mem.total * local, what)) != 0) {
        if (!recompute && mem.total - mem.acts_full_no_recompute + mem.acts_full_recompute < 0.9 * mem_available_bytes())
            err_hint("with --recompute it needs %.1f GiB", gib(mem.total - mem.acts_full_no_recompute + mem.acts_full_recompute));
        return rc;
    }

    machine_info mi;
    machine_probe(&mi);
    blascore_fill(&mi);
    char peak_note[192];
    if (peak <= 0) {
        runner_opts pro;
        runner_defaults(&pro);
        const char *isa = "";
        peak = peak_fma_gflops(mi.threads, &pro, &isa);
        double one = peak;
        peak = comm_sum(peak); /* all ranks measure at once: the job's peak */
        if (ranks > 1)
            snprintf(peak_note, sizeof peak_note, "the fp32 FMA peak measured in this run on all %d ranks at once, %.1f GFLOP/s (%.1f on rank 0: %s, %d threads)",
                     ranks, peak, one, isa, mi.threads);
        else
            snprintf(peak_note, sizeof peak_note, "the fp32 FMA peak measured in this run, %.1f GFLOP/s (%s, %d threads)", peak, isa,
                     mi.threads);
    } else {
        snprintf(peak_note, sizeof peak_note, "--peak-gflops %.1f (given, not measured)", peak);
    }
    char blasd[512];
    blascore_describe(blasd, sizeof blasd);

    record log, sum, brk;
    record_init(&log, step_log_cols, SL_NCOLS);
    record_init(&sum, step_summary_cols, SS_NCOLS);
    record_init(&brk, step_breakdown_cols, SB_NCOLS);
    record_note(&log, "%s, %d cores, %d OpenMP threads, %d OpenBLAS threads, OMP_WAIT_POLICY %s; measured here %s (git %s)",
                mi.cpu_model, mi.cores, mi.threads, mi.blas_threads, mi.omp_wait_policy, mi.date_utc, mi.git_rev);
    record_note(&log, "%s", blasd);
    record_note(&log, "mfu/hfu: against %s", peak_note);
    step_opts so = {.cfg = cfg, .B = (int)B, .T = (int)T, .accum = (int)(G / B), .steps = steps, .lr_warmup = warmup,
                    .discard = discard, .lr = lr, .min_lr = min_lr,
                    .hp = {(float)lr, (float)beta1, (float)beta2, (float)eps, (float)wd, 0.0f}, .clip = (float)clip,
                    .seed = (unsigned long long)seed, .recompute = recompute, .data = data, .save_dir = save,
                    .resume_dir = resume, .init_path = init, .save_every = save_every, .peak_gflops = peak,
                    .peak_note = peak_note, .predict = !no_predict && ranks == 1, .budget_s = budget, .quiet = quiet,
                    .estimate_bytes = mem.total, .rank = rank, .ranks = ranks, .bucket_bytes = bucket_mib * 1048576.0,
                    .zero = (int)zero, .overlap = !no_overlap};
    if (ranks > 1) record_note(&log, "%d data-parallel ranks (%s); the breakdown's prediction is single-process only", ranks, comm_describe());
    rc = step_run(&so, &mi, &log, &sum, &brk);
    if (rc == 0 && root) {
        printf("\n# summary\n");
        record_print(&sum, stdout);
        printf("\n# where a step's time goes\n");
        record_print(&brk, stdout);
        if (csv) rc = record_write_csv(&log, csv, &mi);
        if (rc == 0 && summary_csv) rc = record_write_csv(&sum, summary_csv, &mi);
        if (rc == 0 && breakdown_csv) rc = record_write_csv(&brk, breakdown_csv, &mi);
    }
    record_free(&log);
    record_free(&sum);
    record_free(&brk);
    return rc;
}

int cmd_dataset(int argc, char **argv)
{
    const char *out = NULL;
    const opt_spec specs[] = {
        {"out", OPT_STR, &out, 0, 0, 0, 0, "PREFIX", "build: write PREFIX.bin and PREFIX.idx"},
        {0},
    };
    char *pos[4096];
    int npos = 4096;
    int rc = opts_parse("dataset", "build --out PREFIX FILE... | info PREFIX", specs, argc, argv, 2, pos, &npos);
    if (rc != 0) return rc > 0 ? 0 : rc;
    if (npos < 1) return err_usage("costbench dataset: expected 'build' or 'info'");
    if (strcmp(pos[0], "build") == 0) {
        if (!out) return err_usage("costbench dataset build: needs '--out PREFIX'");
        if (npos < 2) return err_usage("costbench dataset build: needs at least one text file");
        uint64_t n = 0;
        if ((rc = dataset_build(out, pos + 1, npos - 1, &n)) != 0) return rc;
        printf("wrote %s.bin and %s.idx: %d documents, %llu byte-level tokens (uint16)\n", out, out, npos - 1,
               (unsigned long long)n);
        return 0;
    }
    if (strcmp(pos[0], "info") == 0) {
        if (npos != 2) return err_usage("costbench dataset info: expected one PREFIX");
        dataset d;
        if (dataset_open(&d, pos[1]) != 0) return CB_EFAIL;
        int mx = -1;
        for (uint64_t i = 0; i < d.ntokens; i++) {
            int t = dataset_token(&d, i);
            if (t > mx) mx = t;
        }
        printf("%s: %llu sequences, %llu documents, %llu tokens (%s), largest token id %d\n", pos[1],
               (unsigned long long)d.nseq, (unsigned long long)(d.ndoc ? d.ndoc - 1 : 0), (unsigned long long)d.ntokens,
               d.dtype == 8 ? "uint16" : "int32", mx);
        dataset_close(&d);
        return 0;
    }
    return err_usage("costbench dataset: unknown action '%s' (expected build or info)", pos[0]);
}
