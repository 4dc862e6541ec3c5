/* costbench train and costbench dataset: flags, validation, the memory estimate, then
 * bench/step.c runs the loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/blascore.h"
#include "../bench/calib.h"
#include "../bench/comm.h"
#include "../bench/peak.h"
#include "../bench/step.h"
#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/mem.h"
#include "../common/modelflags.h"
#include "../common/opts.h"
#include "../common/record.h"
#include "../common/schema.h"
#include "../kernels/matmul.h"
#include "../kernels/onednn.h"
#include "../common/presets.h"
#include "../model/dataset.h"
#include "../model/gpt.h"
#include "../model/sampler.h"
#include "commands.h"

static double gib(double b) { return b / 1073741824.0; }

typedef struct {
    const char *model, *csv, *summary_csv, *breakdown_csv, *blas, *data, *save, *resume, *init, *precision, *rounding,
        *sampler;
    train_precision prec;
    sampler_kind sampling;
    model_flags mf; /* --models, the shape overrides, --max-seq-len */
    long B, T, G, steps, warmup, discard, seed, save_every, zero;
    double lr, min_lr, wd, beta1, beta2, eps, clip, peak, budget, bucket_mib;
    int no_overlap, recompute, no_predict, quiet;
} train_flags;

/* --rounding: the full-bf16 precision of that rounding (precision_table's rounding names). */
static int train_parse_rounding(train_flags *f)
{
    if (!precision_full_bf16(f->prec))
        return err_usage("flag '--rounding': applies to --precision bf16 only (this run is %s)",
                         precision_name(f->prec));
    for (int k = 0; k < PRECISION_COUNT; k++) {
        const precision_info *p = precision_info_of((train_precision)k);
        if (p->rounding_name && strcmp(f->rounding, p->rounding_name) == 0) return f->prec = (train_precision)k, 0;
    }
    return err_usage("flag '--rounding': unknown value '%s' (expected stochastic or nearest)", f->rounding);
}

/* --rounding (full bf16 only) and --sampler (Megatron's seed and sequence limits). */
static int train_parse_modes(train_flags *f)
{
    int rc;
    if (f->rounding && (rc = train_parse_rounding(f)) != 0) return rc;
    f->sampling = SAMPLER_MEGATRON;
    if (f->sampler && sampler_parse(f->sampler, &f->sampling) != 0)
        return err_usage("flag '--sampler': unknown value '%s' (expected megatron or random)", f->sampler);
    if (f->data && f->sampling == SAMPLER_MEGATRON && f->seed > 0xffffffffL)
        return err_usage("flag '--seed': %ld is not a Megatron-LM seed (numpy.random.RandomState takes 0..4294967295); "
                         "use a smaller --seed, or --sampler random",
                         f->seed);
    if (f->data && f->sampling == SAMPLER_MEGATRON && f->T < 2)
        return err_usage(
            "flag '--seq': %ld; Megatron-LM's samples need a sequence length of at least 2 (or use --sampler random)",
            f->T);
    return 0;
}

static int train_parse(train_flags *f, int argc, char **argv)
{
    *f = (train_flags){.model = "pythia-70m", .blas = "auto", .precision = "fp32", .B = 4, .T = 512, .steps = 20,
                       .warmup = -1, .discard = 2, .seed = 1234, .lr = 6e-4, .min_lr = -1, .wd = 0.1, .beta1 = 0.9,
                       .beta2 = 0.95, .eps = 1e-8, .clip = 1.0, .budget = 60, .bucket_mib = 25};
    const opt_spec specs[] = {
        {"model", OPT_STR, &f->model, 0, 0, 0, 0, "PRESET", "model preset of --models (default pythia-70m)"},
        MODEL_FLAG_SPECS(&f->mf),
        SHAPE_FLAG_SPECS(&f->B, "4", &f->T, "512"),
        {"global-batch", OPT_LONG, &f->G, 1, CB_MAX_GLOBAL_BATCH, 0, 0, "G",
         "sequences per optimizer step, a multiple of B (default B)"},
        {"steps", OPT_LONG, &f->steps, 1, 100000000, 0, 0, "N", "optimizer steps (default 20)"},
        {"lr", OPT_DOUBLE, &f->lr, 0, 0, 0, 10, "LR", "peak learning rate (default 6e-4)"},
        {"min-lr", OPT_DOUBLE, &f->min_lr, 0, 0, 0, 10, "LR",
         "final learning rate of the cosine decay (default lr/10)"},
        {"warmup-steps", OPT_LONG, &f->warmup, 0, 100000000, 0, 0, "N",
         "linear learning-rate warm-up (default steps/10)"},
        {"weight-decay", OPT_DOUBLE, &f->wd, 0, 0, 0, 10, "WD",
         "AdamW decoupled weight decay on matrices (default 0.1)"},
        {"beta1", OPT_DOUBLE, &f->beta1, 0, 0, 0, 0.999999, "B1", "AdamW beta1 (default 0.9)"},
        {"beta2", OPT_DOUBLE, &f->beta2, 0, 0, 0, 0.999999, "B2", "AdamW beta2 (default 0.95)"},
        {"eps", OPT_DOUBLE, &f->eps, 0, 0, 1e-30, 1, "EPS", "AdamW epsilon (default 1e-8)"},
        {"grad-clip", OPT_DOUBLE, &f->clip, 0, 0, 0, 1e6, "NORM", "clip the global gradient norm (0: off; default 1)"},
        {"seed", OPT_LONG, &f->seed, 0, 1L << 62, 0, 0, "S", "initialisation and data sampling seed (default 1234)"},
        PRECISION_FLAG_SPEC(&f->precision, "fp32"),
        {"rounding", OPT_STR, &f->rounding, 0, 0, 0, 0, "stochastic|nearest",
         "with full bf16: how the update is written back to bf16: stochastic (bf16-sr; the default of --precision "
         "bf16: unbiased, from a hash of element, step and --seed, so independent of threads and ranks) or nearest "
         "(bf16-nearest: round to nearest even)"},
        {"recompute", OPT_FLAG, &f->recompute, 0, 0, 0, 0, NULL,
         "activation checkpointing: keep layer inputs, recompute the rest"},
        {"data", OPT_STR, &f->data, 0, 0, 0, 0, "PREFIX",
         "Megatron indexed dataset PREFIX.bin/.idx (default: synthetic tokens)"},
        {"sampler", OPT_STR, &f->sampler, 0, 0, 0, 0, "megatron|random",
         "order of --data's samples: megatron (default), Megatron-LM core_v0.19.0 GPTDataset's shuffled epochs for "
         "--steps x --global-batch samples and --seed; random, windows of the token stream at hashed positions"},
        {"init", OPT_STR, &f->init, 0, 0, 0, 0, "FILE",
         "start from these weights (safetensors, Hugging Face GPT-NeoX names)"},
        {"save", OPT_STR, &f->save, 0, 0, 0, 0, "DIR",
         "write checkpoints to DIR (every --save-every steps and at the end)"},
        {"save-every", OPT_LONG, &f->save_every, 1, 100000000, 0, 0, "N", "checkpoint interval in steps"},
        {"resume", OPT_STR, &f->resume, 0, 0, 0, 0, "DIR", "continue from DIR's latest checkpoint"},
        {"discard-steps", OPT_LONG, &f->discard, 0, 1000000, 0, 0, "N", "steps left out of the summary (default 2)"},
        {"peak-gflops", OPT_DOUBLE, &f->peak, 0, 0, 1, 1e9, "G",
         "peak for MFU: fp32, or bf16 with the bf16 precisions (default: measured now)"},
        {"no-predict", OPT_FLAG, &f->no_predict, 0, 0, 0, 0, NULL,
         "skip the microbenchmarks behind the breakdown's prediction"},
        {"budget-s", OPT_DOUBLE, &f->budget, 0, 0, 1, 86400, "S",
         "time for the prediction's matmul measurements (default 60)"},
        CSV_FLAG_SPEC(&f->csv, "per-step log as CSV"),
        {"summary-csv", OPT_STR, &f->summary_csv, 0, 0, 0, 0, "FILE",
         "the summary row as CSV (the throughput format of costbench report)"},
        {"breakdown-csv", OPT_STR, &f->breakdown_csv, 0, 0, 0, 0, "FILE", "the time breakdown as CSV"},
        {"blas-core", OPT_STR, &f->blas, 0, 0, 0, 0, "auto|env|NAME", "OpenBLAS kernel (default auto)"},
        {"quiet", OPT_FLAG, &f->quiet, 0, 0, 0, 0, NULL, "no per-step lines"},
        {"zero", OPT_LONG, &f->zero, 0, 1, 0, 0, "0|1",
         "under mpirun: 1 shards the AdamW moments over the ranks (ZeRO-1)"},
        {"no-overlap", OPT_FLAG, &f->no_overlap, 0, 0, 0, 0, NULL,
         "under mpirun: all-reduce after the backward, in --bucket-mib buckets"},
        BUCKET_FLAG_SPEC(&f->bucket_mib),
        {0},
    };
    int rc = opts_parse("train", "[options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 1 : rc;
    if ((rc = precision_parse_flag("--precision", f->precision, &f->prec)) != 0) return rc;
    if ((rc = train_parse_modes(f)) != 0) return rc;
    if (f->warmup < 0) f->warmup = f->steps / 10;
    if (f->min_lr < 0) f->min_lr = f->lr / 10;
    if (f->G == 0) f->G = f->B;
    if (f->save_every && !f->save) return err_usage("flag '--save-every' needs '--save DIR'");
    if (f->resume && f->init) return err_usage("flags '--resume' and '--init' exclude each other");
    return 0;
}

/* Every matrix BLAS sees must have fewer than 2^31 elements: name the flag that makes one too big. */
static int check_blas_sizes(const model_config *c, long B, long T)
{
    const double lim = 2147483647.0, C = c->C, V = c->V, BT = (double)B * T, FC = model_mlp_in_rows(c);
    if (FC * C > lim)
        return err_usage("flag '--d-model' (or '--ffn'): the MLP's first weight (%.0f x %d) exceeds 2^31-1 elements, "
                         "the largest matrix BLAS indexes",
                         FC, c->C);
    if (V * C > lim)
        return err_usage("flags '--vocab' x '--d-model': the embedding (%d x %d) exceeds 2^31-1 elements, the largest "
                         "matrix BLAS indexes",
                         c->V, c->C);
    if (BT * V > lim || BT * FC > lim)
        return err_usage(
            "flags '--micro-batch' x '--seq': the logits (%.0f x %d) or the MLP activations (%.0f x %.0f) exceed "
            "2^31-1 elements, the largest matrix BLAS indexes; use a smaller --micro-batch with --global-batch",
            BT, c->V, BT, FC);
    return 0;
}

/* The preset with its overrides, checked against the sizes of this run. */
static int train_config(const train_flags *f, model_config *cfg)
{
    int rc = model_flags_config(&f->mf, f->model, cfg);
    if (rc == 0) rc = model_flags_seq_check(&f->mf, cfg, f->T);
    if (rc != 0) return rc;
    if (f->G % f->B != 0)
        return err_usage("flag '--global-batch': %ld is not a multiple of --micro-batch %ld", f->G, f->B);
    if (f->G / f->B > CB_MAX_ACCUM)
        return err_usage("flag '--global-batch': %ld sequences of %ld per micro-batch is %ld micro-batches a step, "
                         "more than %ld; raise --micro-batch",
                         f->G, f->B, f->G / f->B, (long)CB_MAX_ACCUM);
    if (f->B * f->T > (1L << 24))
        return err_usage("flags '--micro-batch' x '--seq': %ld tokens per micro-batch is too many", f->B * f->T);
    return check_blas_sizes(cfg, f->B, f->T);
}

/* The bytes of the Megatron sampler's indices for --data (0 without, or with --sampler random),
 * from the counts of the dataset's index (opened here, before anything large is allocated). */
static int train_data_index(const train_flags *f, double *bytes)
{
    *bytes = 0;
    if (!f->data || f->sampling != SAMPLER_MEGATRON) return 0;
    dataset d;
    if (dataset_open(&d, f->data) != 0) return CB_EFAIL;
    const uint64_t num_samples = (uint64_t)f->steps * (uint64_t)f->G;
    int rc = sampler_index_bytes(f->sampling, &d, (int)f->T, num_samples, (unsigned long long)f->seed, bytes);
    dataset_close(&d);
    return rc;
}

/* The memory estimate, printed before anything is allocated, and refused when it does not fit;
 * each rank builds its own sampler indices, so they count per rank. */
static int train_memory(const train_flags *f, const model_config *cfg, int ranks, gpt_mem *mem)
{
    double index_bytes;
    if (train_data_index(f, &index_bytes) != 0) return CB_EFAIL;
    gpt_estimate(cfg, (int)f->B, (int)f->T, f->recompute, f->prec, mem);
    mem->total += index_bytes;
    double moments_full = mem->moments;
    if (f->zero && ranks > 1) { /* ZeRO-1: each rank holds 1/N of the moments */
        mem->moments /= ranks;
        mem->total -= moments_full - mem->moments;
    }
    if (comm_rank() == 0) {
        char arch[256];
        model_describe(cfg, arch, sizeof arch);
        printf("# %s: %s; micro-batch %ld x seq %ld, global batch %ld (%ld accumulation steps)\n", cfg->name, arch,
               f->B, f->T, f->G, f->G / f->B);
        char wh[64] = "", ix[64] = "";
        if (mem->weights_bf16 > 0)
            snprintf(wh, sizeof wh, ", packed bf16 weight copies %.3f GiB", gib(mem->weights_bf16));
        if (f->data && f->sampling == SAMPLER_MEGATRON)
            snprintf(ix, sizeof ix, ", Megatron sample index %.3f GiB", gib(index_bytes));
        printf("# memory estimate (%s): parameters %.3f GiB, gradients %.3f GiB, AdamW moments %.3f GiB%s, activations "
               "%.3f GiB (%.3f GiB with --recompute, %.3f GiB without), scratch %.3f GiB%s: total %.3f GiB\n",
               precision_name(f->prec), gib(mem->params), gib(mem->grads), gib(mem->moments), wh,
               gib(f->recompute ? mem->acts_full_recompute : mem->acts_full_no_recompute),
               gib(mem->acts_full_recompute), gib(mem->acts_full_no_recompute), gib(mem->scratch), ix, gib(mem->total));
        if (ranks > 1)
            printf("# %d data-parallel ranks%s: the estimate is per rank%s\n", ranks, f->zero ? ", ZeRO-1" : "",
                   f->zero ? "" : " (--zero 1 would shard the AdamW moments)");
        if (f->zero && ranks > 1)
            printf("# ZeRO-1: AdamW moments %.3f GiB per rank instead of %.3f GiB (saves %.3f GiB a rank)\n",
                   gib(mem->moments), gib(moments_full), gib(moments_full - mem->moments));
        fflush(stdout);
    }
    char what[240], ixw[80] = "";
    int local = comm_local_size();
    if (index_bytes >= 0.01 * mem->total)
        snprintf(ixw, sizeof ixw, " with a Megatron sample index of %.1f GiB", gib(index_bytes));
    snprintf(what, sizeof what, "%s at B=%ld T=%ld in %s%s%s%s", cfg->name, f->B, f->T, precision_name(f->prec),
             f->recompute ? " with --recompute" : "", ixw,
             local > 1 ? " on every rank of this machine" : "");
    int rc = mem_check_fits(mem->total * local, what);
    double with_rc = mem->total - mem->acts_full_no_recompute + mem->acts_full_recompute;
    if (rc != 0 && !f->recompute && with_rc < 0.9 * mem_available_bytes())
        err_hint("with --recompute it needs %.1f GiB", gib(with_rc));
    return rc;
}

static void train_step_opts(const train_flags *f, const model_config *cfg, double estimate, step_opts *so)
{
    const int ranks = comm_size();
    *so = (step_opts){.cfg = *cfg,
                      .data_path = f->data,
                      .recompute = f->recompute,
                      .prec = f->prec,
                      .discard = f->discard,
                      .quiet = f->quiet,
                      .estimate_bytes = estimate,
                      .bucket_bytes = f->bucket_mib * 1048576.0,
                      .log_csv = f->csv && strcmp(f->csv, "-") != 0 ? f->csv : NULL,
                      .dp = f->zero         ? DP_ZERO1
                            : f->no_overlap ? DP_BUCKETS
                                            : DP_OVERLAP};
    so->train = (train_opts){.B = (int)f->B, .T = (int)f->T, .accum = (int)(f->G / f->B), .steps = f->steps,
                             .warmup = f->warmup, .lr = f->lr, .min_lr = f->min_lr,
                             .hp = {(float)f->lr, (float)f->beta1, (float)f->beta2, (float)f->eps, (float)f->wd, 0.0f},
                             .clip = (float)f->clip, .seed = (unsigned long long)f->seed, .sampling = f->sampling,
                             .init_path = f->init, .resume_dir = f->resume, .save_dir = f->save,
                             .save_every = f->save_every, .rank = comm_rank(), .ranks = ranks};
}

/* Rank 0: the tables on stdout and the CSV files asked for. */
static int train_outputs(const train_flags *f, step_records *r, const machine_info *mi)
{
    if (comm_rank() != 0) return 0;
    printf("\n# summary\n");
    record_print(&r->summary, stdout);
    printf("\n# where a step's time goes\n");
    record_print(&r->breakdown, stdout);
    int rc = 0;
    if (f->csv && strcmp(f->csv, "-") == 0) rc = record_write_csv(&r->log, f->csv, mi); /* a file: as it grew */
    if (rc == 0 && f->summary_csv) rc = record_write_csv(&r->summary, f->summary_csv, mi);
    if (rc == 0 && f->breakdown_csv) rc = record_write_csv(&r->breakdown, f->breakdown_csv, mi);
    return rc;
}

/* The kernel oneDNN runs a bf16 product with here (NULL: none at the ISA in effect). */
static const char *bf16_kernel(void)
{
    onednn_shape s = {ONEDNN_BF16, ONEDNN_F32, 0, 1, 64, 64, 64, 64, 64, 64, 0, 0};
    return onednn_impl(&s);
}

static void train_log_notes(record *log, record *summary, const machine_info *mi, const calib *cal, int ranks,
                            train_precision prec)
{
    char blasd[512];
    blascore_describe(mi, blasd, sizeof blasd);
    record_note(
        log, "%s, %d cores, %d OpenMP threads, %d OpenBLAS threads, OMP_WAIT_POLICY %s; measured here %s (git %s)",
        mi->cpu_model, mi->cores, mi->threads, mi->blas_threads, mi->omp_wait_policy, mi->date_utc, mi->git_rev);
    if (gpt_prec_act(prec) == ELEM_BF16) {
        const char *impl = bf16_kernel();
        char note[512];
        const precision_info *pi = precision_info_of(prec);
        snprintf(note, sizeof note, "precision %s: bf16 products by oneDNN %s, ISA %s (kernel %s%s)%s%s",
                 precision_name(prec), onednn_version(), onednn_isa(), impl ? impl : "unavailable",
                 onednn_bf16_native()   ? ""
                 : onednn_bf16_widened() ? "; no bf16 matmul at this CPU level: bf16 widened to fp32 for OpenBLAS's "
                                           "sgemm (the same products, sgemm's speed)"
                                         : "; no bf16 instructions at this CPU level: emulated by oneDNN in fp32",
                 pi->weights_bf16 ? "; full bf16: weights, gradients and AdamW moments in bf16, updates " : "",
                 pi->rounding == ROUNDING_STOCHASTIC ? "stochastically rounded (seeded by --seed)"
                 : pi->rounding == ROUNDING_NEAREST  ? "rounded to nearest"
                                                     : "");
        record_note(log, "%s", note);
        record_note(summary, "%s", note);
    }
    record_note(log, "%s%s",
                gpt_prec_act(prec) == ELEM_BF16 ? "fp32 products (none in the step; the microbenchmarks): " : "",
                blasd);
    record_note(log, "mfu/hfu: against %s", cal->peak_note);
    if (ranks > 1)
        record_note(log, "%d data-parallel ranks (%s); the breakdown's prediction is single-process only", ranks,
                    comm_describe());
}

int cmd_train(int argc, char **argv)
{
    train_flags f;
    model_config cfg;
    int rc = train_parse(&f, argc, argv);
    if (rc != 0) return rc > 0 ? 0 : rc;
    if ((rc = train_config(&f, &cfg)) != 0) return rc;
    if (gpt_prec_act(f.prec) == ELEM_BF16) { /* before anything is measured: can oneDNN run bf16 products here? */
        if (!bf16_kernel())
            return err_msg("flag '--precision %s': oneDNN %s has no bf16 matmul at ISA %s here (%s)", f.precision,
                           onednn_version(), onednn_isa(), onednn_last_error());
    }
    if ((rc = blascore_select(f.blas, argv)) != 0) return rc; /* may re-exec: before any output, before MPI starts */
    if (comm_init(NULL, NULL) != 0) return CB_EFAIL;
    const int ranks = comm_size();
    if (f.G % (f.B * ranks) != 0)
        return err_usage("flag '--global-batch': %ld is not a multiple of --micro-batch %ld x %d ranks", f.G, f.B,
                         ranks);
    gpt_mem mem;
    if ((rc = train_memory(&f, &cfg, ranks, &mem)) != 0) return rc;
    machine_info mi;
    machine_probe(&mi);
    blascore_fill(&mi, f.blas);
    calib cal;
    calib_opts co = {&cfg,     (int)f.B,   (int)f.T, (int)(f.G / f.B), f.peak, !f.no_predict && ranks == 1,
                     f.budget, mi.threads, f.prec};
    if ((rc = calib_measure(&co, &cal)) != 0) return rc;
    step_opts so;
    train_step_opts(&f, &cfg, mem.total, &so);
    step_records rec;
    step_records_init(&rec);
    train_log_notes(&rec.log, &rec.summary, &mi, &cal, ranks, f.prec);
    rc = step_run(&so, &cal, &mi, &rec);
    if (rc == 0) rc = train_outputs(&f, &rec, &mi);
    step_records_free(&rec);
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
