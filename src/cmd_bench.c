/* The benchmark subcommands: flags, validation, then bench/ does the work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/blascore.h"
#include "../bench/matmul_bench.h"
#include "../bench/peak.h"
#include "../bench/rope_bench.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/mem.h"
#include "../common/opts.h"
#include "../common/parse.h"
#include "../common/record.h"
#include "../kernels/rope.h"
#include "../common/presets.h"
#include "../report/charts.h"
#include "commands.h"

/* Flags every benchmark shares. */
typedef struct {
    const char *csv, *blas_core;
    double min_time;
    long min_samples;
    char min_time_help[64], min_samples_help[64]; /* with this command's defaults */
} common_flags;

#define COMMON_SPECS(cf)                                                                                           \
    {"csv", OPT_STR, &(cf).csv, 0, 0, 0, 0, "FILE", "also write the results as CSV (- for stdout)"},               \
    {"blas-core", OPT_STR, &(cf).blas_core, 0, 0, 0, 0, "auto|env|NAME",                                          \
     "OpenBLAS kernel: auto = best for this CPU (default), env = as the environment sets it"},                     \
    {"min-time", OPT_DOUBLE, &(cf).min_time, 0, 0, 0.001, 600, "S", (cf).min_time_help},                       \
    {"min-samples", OPT_LONG, &(cf).min_samples, 1, 10000, 0, 0, "N", (cf).min_samples_help}

static void common_defaults(common_flags *cf, double min_time, long min_samples)
{
    cf->csv = NULL;
    cf->blas_core = "auto";
    cf->min_time = min_time;
    cf->min_samples = min_samples;
    snprintf(cf->min_time_help, sizeof cf->min_time_help, "minimum timed seconds per case (default %g)", min_time);
    snprintf(cf->min_samples_help, sizeof cf->min_samples_help, "minimum samples per case (default %ld)", min_samples);
}

static int bench_setup(const common_flags *cf, char **argv, machine_info *m, runner_opts *ro)
{
    int rc = blascore_select(cf->blas_core, argv);
    if (rc != 0) return rc;
    machine_probe(m);
    blascore_fill(m, cf->blas_core);
    runner_defaults(ro);
    ro->min_time_s = cf->min_time;
    ro->min_samples = (int)cf->min_samples;
    return 0;
}

static void add_machine_notes(record *rec, const machine_info *m)
{
    char blas[512];
    blascore_describe(m, blas, sizeof blas);
    record_note(rec, "%s, %d cores, %d OpenMP threads, %d OpenBLAS threads, OMP_WAIT_POLICY %s; measured here %s (git %s)",
                m->cpu_model, m->cores, m->threads, m->blas_threads, m->omp_wait_policy, m->date_utc, m->git_rev);
    record_note(rec, "%s", blas);
}

static int finish(record *rec, const common_flags *cf, const machine_info *m)
{
    record_print(rec, stdout);
    int rc = 0;
    if (cf->csv) rc = record_write_csv(rec, cf->csv, m);
    return rc;
}

/* ------------------------------------------------------------------ peak */

int cmd_peak(int argc, char **argv)
{
    common_flags cf;
    common_defaults(&cf, 0.3, 5);
    double array_mib = 0;
    int no_sgemm = 0;
    const opt_spec specs[] = {
        COMMON_SPECS(cf),
        {"array-mib", OPT_DOUBLE, &array_mib, 0, 0, 1, 1 << 20, "MIB", "copy/triad array size (default 4x LLC, >= 256)"},
        {"no-sgemm", OPT_FLAG, &no_sgemm, 0, 0, 0, 0, NULL, "skip the sgemm probes under each OpenBLAS kernel"},
        {0},
    };
    int rc = opts_parse("peak", "[options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    machine_info m;
    runner_opts ro;
    if ((rc = bench_setup(&cf, argv, &m, &ro)) != 0) return rc;
    record rec;
    record_init(&rec, peak_cols, PK_NCOLS);
    add_machine_notes(&rec, &m);
    peak_opts po = {.array_mib = array_mib, .skip_sgemm = no_sgemm, .argv0 = argv};
    rc = peak_run(&po, &ro, &rec, &m);
    if (rc == 0) rc = finish(&rec, &cf, &m);
    record_free(&rec);
    return rc;
}

/* ------------------------------------------------------------------ matmul */

static int matmul_plot(const char *path, const record *rec, const machine_info *m, double peak, int transformer)
{
    chart_mm_point *pts = calloc((size_t)(rec->nrows ? rec->nrows : 1), sizeof *pts);
    if (!pts) return err_msg("out of memory");
    for (int i = 0; i < rec->nrows; i++) {
        const double *row = rec->num + (size_t)i * rec->ncols;
        pts[i] = (chart_mm_point){rec->str[(size_t)i * rec->ncols + MM_PHASE], row[MM_N], row[MM_K], row[MM_M], row[MM_GF_MED]};
    }
    char sub[256];
    snprintf(sub, sizeof sub, "measured %.10s on %.48s, OpenBLAS %s, %d threads", m->date_utc, m->cpu_model, m->blas_core,
             m->blas_threads);
    int rc = chart_matmul(path, pts, rec->nrows, transformer, peak > 0 ? peak : NAN, sub);
    free(pts);
    return rc;
}

typedef struct {
    common_flags cf;
    opt_list nl, kl;
    const char *shapes, *model, *plot;
    long B, T; /* 0: not given */
    double budget, peak_gf;
    int transformer;
    model_config cfg;
} matmul_flags;

static int matmul_parse(matmul_flags *f, int argc, char **argv)
{
    *f = (matmul_flags){.nl = {{512, 1024, 2048, 4096, 8192, 16384}, 6}, .kl = {{768, 1024, 2048, 2560, 4096, 5120, 6144}, 7},
                        .budget = 150};
    common_defaults(&f->cf, 0.1, 3);
    const opt_spec specs[] = {
        COMMON_SPECS(f->cf),
        {"n", OPT_LONG_LIST, &f->nl, 1, 1 << 20, 0, 0, "LIST", "tokens per device N (default 512,...,16384)"},
        {"k", OPT_LONG_LIST, &f->kl, 1, 131072, 0, 0, "LIST", "model widths K (default 768,...,6144)"},
        {"shapes", OPT_STR, &f->shapes, 0, 0, 0, 0, "sweep|transformer", "the N x K sweep, or one training step's matmuls"},
        {"model", OPT_STR, &f->model, 0, 0, 0, 0, "PRESET", "preset for --shapes transformer (data/models.csv)"},
        {"micro-batch", OPT_LONG, &f->B, 1, 65536, 0, 0, "B", "sequences per micro-batch (transformer; default 1)"},
        {"seq", OPT_LONG, &f->T, 1, 1 << 20, 0, 0, "T", "sequence length (transformer; default the preset's, <= 2048)"},
        {"budget-s", OPT_DOUBLE, &f->budget, 0, 0, 1, 86400, "S", "skip shapes that would exceed this time (default 150)"},
        {"peak-gflops", OPT_DOUBLE, &f->peak_gf, 0, 0, 1, 1e9, "G", "FMA peak for pct_of_peak (default: measured now)"},
        {"plot", OPT_STR, &f->plot, 0, 0, 0, 0, "FILE.png", "draw GFLOP/s against N, one line per K"},
        {0},
    };
    int rc = opts_parse("matmul", "[options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 1 : rc;
    if (f->shapes && strcmp(f->shapes, "transformer") != 0 && strcmp(f->shapes, "sweep") != 0)
        return err_usage("flag '--shapes': expected sweep or transformer, got '%s'", f->shapes);
    f->transformer = f->shapes ? strcmp(f->shapes, "transformer") == 0 : f->model != NULL;
    if (f->transformer && !f->model) return err_usage("flag '--shapes transformer' needs '--model PRESET'");
    if (!f->transformer && (f->B || f->T))
        return err_usage("flags '--micro-batch' and '--seq' go with '--shapes transformer --model PRESET'");
    if (f->plot && (!strstr(f->plot, ".png") && !strstr(f->plot, ".svg")))
        return err_usage("flag '--plot': expected a file name ending in .png or .svg, got '%s'", f->plot);
    if (!f->transformer) return 0;
    if ((rc = model_preset_find(f->model, &f->cfg)) != 0) return rc;
    if (f->B == 0) f->B = 1;
    if (f->T == 0) f->T = f->cfg.max_T < 2048 ? f->cfg.max_T : 2048;
    if (f->T > f->cfg.max_T) return err_usage("flag '--seq': %ld exceeds %s's max_seq_len %d", f->T, f->cfg.name, f->cfg.max_T);
    if (f->B * f->T > (1L << 22)) return err_usage("flags '--micro-batch' x '--seq': %ld tokens is more than 4194304", f->B * f->T);
    return 0;
}

/* The shapes to time (allocated), checked against BLAS indexing and this machine's memory. */
static int matmul_shapes(const matmul_flags *f, mm_shape **out, int *n)
{
    int cap = f->transformer ? mm_shapes_transformer_count((int)f->T) : f->nl.n * f->kl.n;
    mm_shape *sh = calloc((size_t)cap, sizeof *sh);
    if (!sh) return err_msg("out of memory");
    *out = sh;
    *n = f->transformer ? mm_shapes_transformer(sh, cap, &f->cfg, (int)f->B, (int)f->T)
                        : mm_shapes_sweep(sh, cap, f->nl.v, f->nl.n, f->kl.v, f->kl.n);
    long nmax = 0, kmax = 0;
    for (int i = 0; i < *n; i++) {
        /* OpenBLAS takes int dimensions: every operand must have fewer than 2^31 elements */
        double big = fmax((double)sh[i].n * sh[i].k, fmax((double)sh[i].k * sh[i].m, (double)sh[i].n * sh[i].m));
        if (big > 2147483647.0)
            return err_usage("shape n=%d k=%d m=%d: an operand exceeds 2^31-1 elements, the largest matrix BLAS indexes",
                             sh[i].n, sh[i].k, sh[i].m);
        nmax = sh[i].n > nmax ? sh[i].n : nmax, kmax = sh[i].k > kmax ? sh[i].k : kmax;
    }
    char what[160];
    if (f->transformer) snprintf(what, sizeof what, "matmul shapes of %.47s at B=%ld T=%ld", f->model, f->B, f->T);
    else snprintf(what, sizeof what, "matmul sweep up to N=%ld K=%ld", nmax, kmax);
    return mem_check_fits(mm_shapes_bytes(sh, *n), what);
}

static void matmul_notes(record *rec, const matmul_flags *f, const machine_info *m, int measured_peak, const char *isa)
{
    add_machine_notes(rec, m);
    if (measured_peak)
        record_note(rec, "pct_of_peak: against the fp32 FMA peak measured in this run: %.1f GFLOP/s (%s, %d threads)",
                    f->peak_gf, isa, m->threads);
    else
        record_note(rec, "pct_of_peak: against --peak-gflops %.1f (given, not measured in this run)", f->peak_gf);
    if (f->transformer)
        record_note(rec, "%s: L=%d C=%d heads=%d V=%d, micro-batch %ld x seq %ld = %ld tokens; count = calls per training step",
                    f->cfg.name, f->cfg.L, f->cfg.C, f->cfg.NH, f->cfg.V, f->B, f->T, f->B * f->T);
    else
        record_note(rec, "Y (n x m) = X (n x k) @ W^T, W (m x k), m = k: the linear layer's forward product");
}

int cmd_matmul(int argc, char **argv)
{
    matmul_flags f;
    int rc = matmul_parse(&f, argc, argv), nsh = 0;
    if (rc != 0) return rc > 0 ? 0 : rc;
    mm_shape *sh = NULL;
    machine_info m;
    runner_opts ro;
    if ((rc = matmul_shapes(&f, &sh, &nsh)) != 0 || (rc = bench_setup(&f.cf, argv, &m, &ro)) != 0) {
        free(sh);
        return rc;
    }
    const char *isa = "";
    int measured_peak = f.peak_gf <= 0;
    if (measured_peak) {
        runner_opts pro;
        runner_defaults(&pro);
        f.peak_gf = peak_fma_gflops(m.threads, &pro, &isa);
    }
    record rec;
    record_init(&rec, mm_cols, MM_NCOLS);
    matmul_notes(&rec, &f, &m, measured_peak, isa);
    rc = mm_run(sh, nsh, &ro, f.budget, f.peak_gf, &rec);
    if (rc == 0) rc = finish(&rec, &f.cf, &m);
    if (rc == 0 && f.plot) {
        rc = matmul_plot(f.plot, &rec, &m, f.peak_gf, f.transformer);
        if (rc == 0) fprintf(stderr, "wrote %s\n", f.plot);
    }
    record_free(&rec);
    free(sh);
    return rc;
}

/* ------------------------------------------------------------------ rope */

int cmd_rope(int argc, char **argv)
{
    common_flags cf;
    common_defaults(&cf, 0.2, 5);
    const char *models = "pythia-160m,pythia-6.9b,neox-20b";
    long tokens = 8192, T = 0;
    double copy_gbps = 0;
    const char *cache = "cold", *dtype = "fp32";
    const opt_spec specs[] = {
        COMMON_SPECS(cf),
        {"dtype", OPT_STR, &dtype, 0, 0, 0, 0, "fp32|bf16",
         "element type of q and k and their gradients (bf16: fp32 arithmetic, results rounded; default fp32)"},
        {"cache", OPT_STR, &cache, 0, 0, 0, 0, "cold|warm",
         "cold: every timed call starts with the caches flushed (default); warm: back-to-back calls"},
        {"model", OPT_STR, &models, 0, 0, 0, 0, "LIST", "presets (default pythia-160m,pythia-6.9b,neox-20b)"},
        {"tokens", OPT_LONG, &tokens, 1, 1 << 24, 0, 0, "N", "tokens per call, B x T (default 8192)"},
        {"seq", OPT_LONG, &T, 1, 1 << 20, 0, 0, "T", "sequence length (default min(tokens, 2048))"},
        {"copy-gbps", OPT_DOUBLE, &copy_gbps, 0, 0, 0, 1e6, "G", "copy bandwidth for pct_of_copy_bw (default: measured now)"},
        {0},
    };
    int rc = opts_parse("rope", "[options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    char buf[1024];
    char *names[32];
    int nm = parse_word_list(models, "flag '--model'", buf, sizeof buf, names, 32);
    if (nm < 0) return nm;
    model_config cfgs[32];
    for (int i = 0; i < nm; i++) {
        if ((rc = model_preset_find(names[i], &cfgs[i])) != 0) return rc;
        if (cfgs[i].rotary_pct <= 0 || rope_rotary_dims(cfgs[i].HS, cfgs[i].rotary_pct) == 0)
            return err_usage("flag '--model': '%s' has no rotary embedding (rotary_pct %g)", cfgs[i].name, cfgs[i].rotary_pct);
    }
    if (strcmp(cache, "cold") != 0 && strcmp(cache, "warm") != 0)
        return err_usage("flag '--cache': expected cold or warm, got '%s'", cache);
    int dt = rope_bench_dtype_parse(dtype);
    if (dt < 0) return err_usage("flag '--dtype': expected fp32 or bf16, got '%s'", dtype);
    if (T == 0) T = tokens < 2048 ? tokens : 2048;
    if (T > tokens) return err_usage("flag '--seq': %ld is more than --tokens %ld", T, tokens);
    if (tokens % T != 0) return err_usage("flag '--tokens': %ld is not a multiple of --seq %ld", tokens, T);
    for (int i = 0; i < nm; i++) {
        char what[128];
        snprintf(what, sizeof what, "rope on %.47s at %ld tokens in %s", cfgs[i].name, tokens, dtype);
        if ((rc = mem_check_fits(rope_bench_bytes(&cfgs[i], (int)tokens, (rb_dtype)dt), what)) != 0) return rc;
    }
    machine_info m;
    runner_opts ro;
    if ((rc = bench_setup(&cf, argv, &m, &ro)) != 0) return rc;
    record rec;
    record_init(&rec, rb_cols, RB_NCOLS);
    add_machine_notes(&rec, &m);
    if (copy_gbps <= 0) {
        runner_opts co;
        runner_defaults(&co);
        co.min_samples = 3;
        double bytes = peak_default_array_bytes(&m);
        copy_gbps = peak_copy_gbps(m.threads, bytes, &co);
        record_note(&rec, "pct_of_copy_bw: against copy bandwidth measured in this run: %.2f GB/s (%d threads, %.0f MiB arrays)",
                    copy_gbps, m.threads, bytes / 1048576);
    } else {
        record_note(&rec, "pct_of_copy_bw: against --copy-gbps %.2f (given, not measured in this run)", copy_gbps);
    }
    record_note(&rec, "bytes_per_token: what each variant reads and writes (model in kernels/rope.c), q and k in %s (%d bytes an element), tables fp32; the variants were checked to agree, forward and backward, before timing",
                dtype, dt == RB_BF16 ? 2 : 4);
    double flush = 0;
    if (strcmp(cache, "cold") == 0) {
        flush = 2.0 * m.llc_bytes;
        if (flush < 64.0 * 1048576) flush = 64.0 * 1048576;
        record_note(&rec, "cache cold: before every timed call a %.0f MiB buffer is read (untimed), so the call's data comes from memory as in the copy probe; --cache warm times back-to-back calls",
                    flush / 1048576);
    } else {
        record_note(&rec, "cache warm: back-to-back calls; data that fits the %.0f MiB last-level cache stays there between calls",
                    m.llc_bytes / 1048576);
    }
    record_note(&rec, "an in-place update has no write-allocate traffic (a copy's store has one), so an in-place variant can exceed 100%% of copy bandwidth");
    for (int i = 0; i < nm && rc == 0; i++)
        rc = rope_bench_run(&cfgs[i], (int)tokens, (int)T, (rb_dtype)dt, &ro, copy_gbps, flush, &rec);
    if (rc == 0) rc = finish(&rec, &cf, &m);
    record_free(&rec);
    return rc;
}

/* ------------------------------------------------------------------ models */

static const rec_col model_cols[] = {
    {"name", "", REC_STR, 0},        {"layers", "", REC_NUM, 0},        {"d_model", "", REC_NUM, 0},
    {"heads", "", REC_NUM, 0},       {"head_dim", "", REC_NUM, 0},      {"vocab", "", REC_NUM, 0},
    {"rotary_dims", "", REC_NUM, 0}, {"pos_emb", "", REC_STR, 0},       {"parallel_residual", "", REC_STR, 0},
    {"tied_embeddings", "", REC_STR, 0}, {"params_m", "M", REC_NUM, 1}, {"non_embedding_params_m", "M", REC_NUM, 1},
};

int cmd_models(int argc, char **argv)
{
    const char *csv = NULL;
    const opt_spec specs[] = {
        {"csv", OPT_STR, &csv, 0, 0, 0, 0, "FILE", "also write the list as CSV"},
        {0},
    };
    int rc = opts_parse("models", "[options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    char path[4200];
    if ((rc = machine_data_file(path, sizeof path, "models.csv")) != 0) return rc;
    model_config *all;
    int n;
    if (model_presets_load(path, &all, &n) != 0) return CB_EFAIL;
    record rec;
    record_init(&rec, model_cols, (int)(sizeof model_cols / sizeof model_cols[0]));
    record_note(&rec, "from %s; params: embeddings + L x (12 C^2 + 13 C) + final LayerNorm + unembedding (untied)", path);
    for (int i = 0; i < n; i++) {
        const model_config *c = &all[i];
        int row = record_add_row(&rec);
        if (row < 0) break;
        record_str(&rec, row, 0, c->name);
        record_num(&rec, row, 1, c->L);
        record_num(&rec, row, 2, c->C);
        record_num(&rec, row, 3, c->NH);
        record_num(&rec, row, 4, c->HS);
        record_num(&rec, row, 5, c->V);
        record_num(&rec, row, 6, c->learned_pos ? 0 : rope_rotary_dims(c->HS, c->rotary_pct));
        record_str(&rec, row, 7, c->learned_pos ? "learned" : "rotary");
        record_str(&rec, row, 8, c->parallel_residual ? "true" : "false");
        record_str(&rec, row, 9, c->tied_embeddings ? "true" : "false");
        record_num(&rec, row, 10, model_params_total(c) / 1e6);
        record_num(&rec, row, 11, model_params_non_embedding(c) / 1e6);
    }
    free(all);
    record_print(&rec, stdout);
    if (csv) {
        machine_info m;
        machine_probe(&m);
        rc = record_write_csv(&rec, csv, &m);
    }
    record_free(&rec);
    return rc;
}
