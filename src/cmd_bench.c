/* The benchmark subcommands: flags, validation, then bench/ does the work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/blascore.h"
#include "../bench/matmul_bench.h"
#include "../bench/peak.h"
#include "../bench/rope_bench.h"
#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/mem.h"
#include "../common/opts.h"
#include "../common/parse.h"
#include "../common/record.h"
#include "../common/schema.h"
#include "../kernels/onednn.h"
#include "../kernels/rope.h"
#include "../common/presets.h"
#include "../report/charts.h"
#include "commands.h"
#include "../common/files.h"

/* Flags every benchmark shares. */
typedef struct {
    const char *csv, *blas_core;
    double min_time;
    long min_samples;
    char min_time_help[64], min_samples_help[64]; /* with this command's defaults */
} common_flags;

#define COMMON_SPECS(cf)                                                                                           \
    CSV_FLAG_SPEC(&(cf).csv, "also write the results as CSV (- for stdout)"),                                     \
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
    record_note(rec,
                "%s, %d cores, %d OpenMP threads, %d OpenBLAS threads, OMP_WAIT_POLICY %s; measured here %s (git %s)",
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
        {"array-mib", OPT_DOUBLE, &array_mib, 0, 0, 1, 1 << 20, "MIB",
         "copy/triad array size (default 4x LLC, >= 256)"},
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

/* GFLOP/s curves of the rows, one per K (and dtype/backend), each precision's peak as a line. */
static int matmul_plot(const char *path, const record *rec, const machine_info *m, const mm_peaks *peaks,
                       int transformer)
{
    chart_mm_point *pts = calloc((size_t)(rec->nrows ? rec->nrows : 1), sizeof *pts);
    char (*variant)[32] = calloc((size_t)(rec->nrows ? rec->nrows : 1), sizeof *variant);
    if (!pts || !variant) {
        free(pts), free(variant);
        return err_msg("out of memory");
    }
    int ran[MM_NDTYPES] = {0}, onednn = 0;
    for (int i = 0; i < rec->nrows; i++) {
        const double *row = rec->num + (size_t)i * rec->ncols;
        char *const *str = rec->str + (size_t)i * rec->ncols;
        snprintf(variant[i], sizeof variant[i], "%s %s", str[MM_DTYPE], str[MM_BACKEND]);
        ran[strcmp(str[MM_DTYPE], "bf16") == 0]++;
        onednn |= strcmp(str[MM_BACKEND], "onednn") == 0;
        pts[i] = (chart_mm_point){str[MM_PHASE], variant[i], row[MM_N], row[MM_K], row[MM_M], row[MM_GF_MED]};
    }
    char labels[MM_NDTYPES][64], sub[300];
    chart_ref refs[MM_NDTYPES];
    int nrefs = 0;
    for (int d = 0; d < MM_NDTYPES; d++) {
        if (!ran[d]) continue;
        snprintf(labels[d], sizeof labels[d], "%s peak %.0f GFLOP/s", d == MM_FP32 ? "fp32 FMA" : "bf16 matrix",
                 peaks->gflops[d]);
        refs[nrefs++] = (chart_ref){labels[d], peaks->gflops[d]};
    }
    int l = snprintf(sub, sizeof sub, "measured %.10s on %.48s, OpenBLAS %s, %d threads", m->date_utc, m->cpu_model,
                     m->blas_core, m->blas_threads);
    if (onednn) snprintf(sub + l, sizeof sub - (size_t)l, ", oneDNN %s at %s", onednn_version(), onednn_isa());
    int rc = chart_matmul(path, pts, rec->nrows, transformer, refs, nrefs, sub);
    free(pts), free(variant);
    return rc;
}

typedef struct {
    common_flags cf;
    opt_list nl, kl;
    const char *shapes, *model, *plot, *dtype_s, *backend_s, *peak_s;
    long B, T; /* 0: not given */
    double budget;
    int transformer;
    model_config cfg;
    int ndtypes;
    mm_dtype dtypes[MM_NDTYPES]; /* --dtype, in its order */
    mm_backend backend;          /* fp32's */
    mm_peaks peaks;              /* given (--peak-gflops) per dtype; NaN: measure */
} matmul_flags;

/* --dtype LIST, --backend and --peak-gflops G[,G] (one per --dtype entry). */
static int matmul_parse_precision(matmul_flags *f)
{
    char buf[256], *w[8];
    int n = parse_word_list(f->dtype_s, "flag '--dtype'", 0, buf, sizeof buf, w, 8);
    if (n < 0) return n;
    f->ndtypes = 0;
    for (int i = 0; i < n; i++) {
        int d = strcmp(w[i], "fp32") == 0 ? MM_FP32 : strcmp(w[i], "bf16") == 0 ? MM_BF16 : -1;
        if (d < 0) return err_usage("flag '--dtype': expected fp32, bf16 or fp32,bf16, got '%s'", w[i]);
        if (f->ndtypes == MM_NDTYPES) return err_usage("flag '--dtype': at most %d dtypes", MM_NDTYPES);
        f->dtypes[f->ndtypes++] = (mm_dtype)d;
    }
    const char *b = f->backend_s ? f->backend_s : "openblas";
    if (strcmp(b, "openblas") != 0 && strcmp(b, "onednn") != 0)
        return err_usage("flag '--backend': expected openblas or onednn, got '%s'", b);
    f->backend = strcmp(b, "onednn") == 0 ? MM_ONEDNN : MM_OPENBLAS;
    if (f->backend_s && f->backend == MM_OPENBLAS && !(f->ndtypes > 1 || f->dtypes[0] == MM_FP32))
        return err_usage("flag '--backend openblas': OpenBLAS has no bf16 matmul; bf16 always runs on oneDNN "
                         "(--backend chooses fp32's)");
    for (int d = 0; d < MM_NDTYPES; d++) f->peaks.gflops[d] = NAN;
    if (!f->peak_s) return 0;
    n = parse_word_list(f->peak_s, "flag '--peak-gflops'", PARSE_REPEATS, buf, sizeof buf, w, 8);
    if (n < 0) return n;
    if (n != f->ndtypes)
        return err_usage(
            "flag '--peak-gflops': %d value%s for %d dtype%s; expected one per --dtype entry, in its order", n,
            n == 1 ? "" : "s", f->ndtypes, f->ndtypes == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        int rc = parse_double(w[i], 1, 1e9, "flag '--peak-gflops'", &f->peaks.gflops[f->dtypes[i]]);
        if (rc != 0) return rc;
    }
    return 0;
}

static int matmul_parse(matmul_flags *f, int argc, char **argv)
{
    *f = (matmul_flags){.nl = {{512, 1024, 2048, 4096, 8192, 16384}, 6},
                        .kl = {{768, 1024, 2048, 2560, 4096, 5120, 6144}, 7},
                        .budget = 150,
                        .dtype_s = "fp32"};
    common_defaults(&f->cf, 0.1, 3);
    const opt_spec specs[] = {
        COMMON_SPECS(f->cf),
        {"n", OPT_LONG_LIST, &f->nl, 1, 1 << 20, 0, 0, "LIST", "tokens per device N (default 512,...,16384)"},
        {"k", OPT_LONG_LIST, &f->kl, 1, 131072, 0, 0, "LIST", "model widths K (default 768,...,6144)"},
        {"shapes", OPT_STR, &f->shapes, 0, 0, 0, 0, "sweep|transformer",
         "the N x K sweep, or one training step's matmuls"},
        {"model", OPT_STR, &f->model, 0, 0, 0, 0, "PRESET", "preset for --shapes transformer (data/models.csv)"},
        SHAPE_FLAG_SPECS(&f->B, "1; --shapes transformer", &f->T, "the preset's, <= 2048; --shapes transformer"),
        {"dtype", OPT_STR, &f->dtype_s, 0, 0, 0, 0, "LIST",
         "fp32, bf16 (bf16 inputs, fp32 accumulation and output, on oneDNN) or fp32,bf16 (default fp32)"},
        {"backend", OPT_STR, &f->backend_s, 0, 0, 0, 0, "openblas|onednn",
         "library for fp32 (default openblas; bf16 is always onednn)"},
        {"budget-s", OPT_DOUBLE, &f->budget, 0, 0, 1, 86400, "S",
         "skip shapes that would exceed this time (default 150)"},
        {"peak-gflops", OPT_STR, &f->peak_s, 0, 0, 0, 0, "G[,G]",
         "peak for pct_of_peak, one per --dtype entry (default: measured now, fp32 FMA / bf16 matrix)"},
        {"plot", OPT_STR, &f->plot, 0, 0, 0, 0, "FILE.png", "draw GFLOP/s against N, one line per K (and dtype)"},
        {0},
    };
    int rc = opts_parse("matmul", "[options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 1 : rc;
    if ((rc = matmul_parse_precision(f)) != 0) return rc;
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
    if (f->T > f->cfg.max_T)
        return err_usage("flag '--seq': %ld exceeds %s's max_seq_len %d", f->T, f->cfg.name, f->cfg.max_T);
    if (f->B * f->T > (1L << 22))
        return err_usage("flags '--micro-batch' x '--seq': %ld tokens is more than 4194304", f->B * f->T);
    return 0;
}

/* The shapes to time (allocated): each shape once per --dtype entry, in turn; checked against
 * BLAS indexing and this machine's memory. */
static int matmul_shapes(const matmul_flags *f, mm_shape **out, int *n)
{
    int cap = f->transformer ? mm_shapes_transformer_count() : f->nl.n * f->kl.n;
    mm_shape *base = calloc((size_t)cap, sizeof *base), *sh = calloc((size_t)cap * (size_t)f->ndtypes, sizeof *sh);
    *out = sh;
    if (!base || !sh) {
        free(base);
        return err_msg("out of memory");
    }
    int nb = f->transformer ? mm_shapes_transformer(base, cap, &f->cfg, (int)f->B, (int)f->T)
                            : mm_shapes_sweep(base, cap, f->nl.v, f->nl.n, f->kl.v, f->kl.n);
    *n = 0;
    if (nb < 0) {
        free(base);
        return CB_EFAIL;
    }
    for (int i = 0; i < nb; i++)
        for (int d = 0; d < f->ndtypes; d++) {
            sh[*n] = base[i];
            mm_shapes_set_dtype(&sh[(*n)++], 1, f->dtypes[d], f->backend);
        }
    free(base);
    long nmax = 0, kmax = 0;
    for (int i = 0; i < *n; i++) {
        /* OpenBLAS and oneDNN's dimensions here are int: every operand must have fewer than 2^31 elements */
        double big = fmax((double)sh[i].n * sh[i].k, fmax((double)sh[i].k * sh[i].m, (double)sh[i].n * sh[i].m));
        if (big > 2147483647.0)
            return err_usage(
                "shape n=%d k=%d m=%d: an operand exceeds 2^31-1 elements, the largest matrix BLAS indexes", sh[i].n,
                sh[i].k, sh[i].m);
        nmax = sh[i].n > nmax ? sh[i].n : nmax, kmax = sh[i].k > kmax ? sh[i].k : kmax;
    }
    char what[160];
    if (f->transformer) snprintf(what, sizeof what, "matmul shapes of %.47s at B=%ld T=%ld", f->model, f->B, f->T);
    else snprintf(what, sizeof what, "matmul sweep up to N=%ld K=%ld", nmax, kmax);
    return mem_check_fits(mm_shapes_bytes(sh, *n), what);
}

/* The peak of every precision a row will run in (a concurrent shape runs in fp32 whatever its
 * dtype): given (--peak-gflops: nothing is measured), or measured now; a note for each. */
static int matmul_peaks(matmul_flags *f, const mm_shape *sh, int nsh, const machine_info *m, record *rec)
{
    int need[MM_NDTYPES] = {0};
    for (int i = 0; i < nsh; i++) need[sh[i].concurrent ? MM_FP32 : sh[i].dtype]++;
    for (int d = 0; d < MM_NDTYPES; d++) {
        const char *rows = d == MM_FP32 ? "fp32" : "bf16";
        if (!need[d]) continue;
        if (isfinite(f->peaks.gflops[d])) {
            record_note(rec, "pct_of_peak (%s rows): against --peak-gflops %.1f (given, not measured in this run)",
                        rows, f->peaks.gflops[d]);
            continue;
        }
        if (f->peak_s) {
            record_note(rec, "pct_of_peak (%s rows, the attention products): empty; --peak-gflops gave no %s peak",
                        rows, rows);
            continue;
        }
        runner_opts pro;
        runner_defaults(&pro);
        char which[160];
        int rc = d == MM_FP32 ? peak_fp32_fma(&pro, m->threads, &f->peaks.gflops[d], which, sizeof which)
                              : peak_bf16_matrix(&pro, m->threads, &f->peaks.gflops[d], which, sizeof which);
        if (rc != 0) return rc;
        record_note(rec, "pct_of_peak (%s rows): against the %s measured in this run: %.1f GFLOP/s, %s", rows,
                    d == MM_FP32 ? "fp32 FMA peak" : "bf16 matrix peak", f->peaks.gflops[d], which);
    }
    return 0;
}

static void matmul_notes(record *rec, const matmul_flags *f, const machine_info *m)
{
    add_machine_notes(rec, m);
    if (f->transformer) {
        char arch[256];
        model_describe(&f->cfg, arch, sizeof arch);
        record_note(rec, "%s: %s; micro-batch %ld x seq %ld = %ld tokens; count = calls per training step", f->cfg.name,
                    arch, f->B, f->T, f->B * f->T);
    } else
        record_note(rec, "Y (n x m) = X (n x k) @ W^T, W (m x k), m = k: the linear layer's forward product");
    for (int d = 0; d < f->ndtypes; d++)
        if (f->dtypes[d] == MM_BF16)
            record_note(rec, "bf16: bf16 X and W, fp32 accumulation and fp32 Y (the precision of a bf16 "
                             "mixed-precision step's linear layers), on oneDNN");
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
    record rec;
    record_init(&rec, mm_cols, MM_NCOLS);
    record_csv_only(&rec, MM_ISA);
    matmul_notes(&rec, &f, &m);
    if ((rc = matmul_peaks(&f, sh, nsh, &m, &rec)) == 0) rc = mm_run_peaks(sh, nsh, &ro, f.budget, &f.peaks, &rec);
    if (rc == 0) rc = finish(&rec, &f.cf, &m);
    if (rc == 0 && f.plot) {
        rc = matmul_plot(f.plot, &rec, &m, &f.peaks, f.transformer);
        if (rc == 0) fprintf(stderr, "wrote %s\n", f.plot);
    }
    record_free(&rec);
    free(sh);
    return rc;
}

/* ------------------------------------------------------------------ rope */

/* The rope table's notes: the copy bandwidth (measured now unless given), the bytes model and the
 * cache state; returns the bytes to read before each timed call (0: warm). */
static double rope_notes(record *rec, const machine_info *mi, double *copy_gbps, const char *cache, const char *dtype,
                         int dt)
{
    if (*copy_gbps <= 0) {
        runner_opts co;
        runner_defaults(&co);
        co.min_samples = 3;
        double bytes = peak_default_array_bytes(mi);
        *copy_gbps = peak_copy_gbps(mi->threads, bytes, &co);
        record_note(
            rec, "pct_of_copy_bw: against copy bandwidth measured in this run: %.2f GB/s (%d threads, %.0f MiB arrays)",
            *copy_gbps, mi->threads, bytes / 1048576);
    } else {
        record_note(rec, "pct_of_copy_bw: against --copy-gbps %.2f (given, not measured in this run)", *copy_gbps);
    }
    record_note(
        rec,
        "bytes_per_token: what each variant reads and writes (model in kernels/rope.c), q and k in %s (%d bytes an "
        "element), tables fp32; the variants were checked to agree, forward and backward, before timing",
        dtype, dt == RB_BF16 ? 2 : 4);
    double flush = 0;
    if (strcmp(cache, "cold") == 0) {
        flush = 2.0 * mi->llc_bytes;
        if (flush < 64.0 * 1048576) flush = 64.0 * 1048576;
        record_note(rec,
                    "cache cold: before every timed call a %.0f MiB buffer is read (untimed), so the call's data comes "
                    "from memory as in the copy probe; --cache warm times back-to-back calls",
                    flush / 1048576);
    } else {
        record_note(
            rec,
            "cache warm: back-to-back calls; data that fits the %.0f MiB last-level cache stays there between calls",
            mi->llc_bytes / 1048576);
    }
    record_note(rec, "an in-place update has no write-allocate traffic (a copy's store has one), so an in-place "
                     "variant can exceed 100%% of copy bandwidth");
    return flush;
}

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
        SEQ_FLAG_SPEC(&T, "min(tokens, 2048)"),
        {"copy-gbps", OPT_DOUBLE, &copy_gbps, 0, 0, 0, 1e6, "G",
         "copy bandwidth for pct_of_copy_bw (default: measured now)"},
        {0},
    };
    int rc = opts_parse("rope", "[options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    char buf[1024];
    char *names[32];
    int nm = parse_word_list(models, "flag '--model'", 0, buf, sizeof buf, names, 32);
    if (nm < 0) return nm;
    model_config cfgs[32];
    for (int i = 0; i < nm; i++) {
        if ((rc = model_preset_find(names[i], &cfgs[i])) != 0) return rc;
        if (model_rotary_dims(&cfgs[i]) == 0)
            return err_usage("flag '--model': '%s' has no rotary embedding (rotary_pct %g)", cfgs[i].name,
                             cfgs[i].rotary_pct);
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
    double flush = rope_notes(&rec, &m, &copy_gbps, cache, dtype, dt);
    for (int i = 0; i < nm && rc == 0; i++)
        rc = rope_bench_run(&cfgs[i], (int)tokens, (int)T, (rb_dtype)dt, &ro, copy_gbps, flush, &rec);
    if (rc == 0) rc = finish(&rec, &cf, &m);
    record_free(&rec);
    return rc;
}

/* ------------------------------------------------------------------ models */

/* Columns are only ever added (at the end): scripts read them by name and position. */
enum {
    ML_NAME, ML_LAYERS, ML_D_MODEL, ML_HEADS, ML_HEAD_DIM, ML_VOCAB, ML_ROTARY_DIMS, ML_POS_EMB, ML_PARALLEL_RESIDUAL,
    ML_TIED_EMBEDDINGS, ML_PARAMS_M, ML_NON_EMBEDDING_PARAMS_M, ML_FAMILY, ML_KV_HEADS, ML_FFN, ML_NORM, ML_MLP,
    ML_GFLOP_PER_TOKEN, ML_SOURCE, ML_NCOLS
};
static const rec_col model_cols[ML_NCOLS] = {
    [ML_NAME] = {"name", "", REC_STR, 0},
    [ML_LAYERS] = {"layers", "", REC_NUM, 0},
    [ML_D_MODEL] = {"d_model", "", REC_NUM, 0},
    [ML_HEADS] = {"heads", "", REC_NUM, 0},
    [ML_HEAD_DIM] = {"head_dim", "", REC_NUM, 0},
    [ML_VOCAB] = {"vocab", "", REC_NUM, 0},
    [ML_ROTARY_DIMS] = {"rotary_dims", "", REC_NUM, 0},
    [ML_POS_EMB] = {"pos_emb", "", REC_STR, 0},
    [ML_PARALLEL_RESIDUAL] = {"parallel_residual", "", REC_STR, 0},
    [ML_TIED_EMBEDDINGS] = {"tied_embeddings", "", REC_STR, 0},
    [ML_PARAMS_M] = {"params_m", "M", REC_NUM, 1},
    [ML_NON_EMBEDDING_PARAMS_M] = {"non_embedding_params_m", "M", REC_NUM, 1},
    [ML_FAMILY] = {"family", "", REC_STR, 0},
    [ML_KV_HEADS] = {"kv_heads", "", REC_NUM, 0},
    [ML_FFN] = {"ffn", "", REC_NUM, 0},
    [ML_NORM] = {"norm", "", REC_STR, 0},
    [ML_MLP] = {"mlp", "", REC_STR, 0},
    [ML_GFLOP_PER_TOKEN] = {"gflop_per_token", "GFLOP", REC_NUM, 2},
    [ML_SOURCE] = {"source", "", REC_STR, 0},
};
enum { MODELS_FLOPS_T = 2048 }; /* the sequence length of the gflop_per_token column */

/* One preset's row; the architecture choices in data/models.csv's spelling (common/schema.h). */
static void models_row(record *rec, int row, const model_config *c)
{
    record_str(rec, row, ML_NAME, c->name);
    record_num(rec, row, ML_LAYERS, c->L);
    record_num(rec, row, ML_D_MODEL, c->C);
    record_num(rec, row, ML_HEADS, c->NH);
    record_num(rec, row, ML_HEAD_DIM, c->HS);
    record_num(rec, row, ML_VOCAB, c->V);
    record_num(rec, row, ML_ROTARY_DIMS, model_rotary_dims(c));
    record_str(rec, row, ML_POS_EMB, model_pos_embs[c->pos]);
    record_str(rec, row, ML_PARALLEL_RESIDUAL, c->parallel_residual ? "true" : "false");
    record_str(rec, row, ML_TIED_EMBEDDINGS, c->tied_embeddings ? "true" : "false");
    record_num(rec, row, ML_PARAMS_M, model_params_total(c) / 1e6);
    record_num(rec, row, ML_NON_EMBEDDING_PARAMS_M, model_params_non_embedding(c) / 1e6);
    record_str(rec, row, ML_FAMILY, c->family);
    record_num(rec, row, ML_KV_HEADS, model_kv_heads(c));
    record_num(rec, row, ML_FFN, model_ffn(c));
    record_str(rec, row, ML_NORM, model_norms[c->norm]);
    record_str(rec, row, ML_MLP, model_mlps[c->mlp]);
    record_num(rec, row, ML_GFLOP_PER_TOKEN, model_flops_per_token(c, MODELS_FLOPS_T) / 1e9);
    record_str(rec, row, ML_SOURCE, c->source);
}

int cmd_models(int argc, char **argv)
{
    const char *csv = NULL;
    const opt_spec specs[] = {
        CSV_FLAG_SPEC(&csv, "also write the list as CSV"),
        {0},
    };
    int rc = opts_parse("models", "[options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    char path[CB_PATH_MAX];
    if ((rc = machine_data_file(path, sizeof path, "models.csv")) != 0) return rc;
    model_config *all;
    int n;
    if (model_presets_load(path, &all, &n) != 0) return CB_EFAIL;
    record rec;
    record_init(&rec, model_cols, ML_NCOLS);
    record_note(
        &rec,
        "from %s; params: embeddings (+ learned positions) + L layers (norms, QKV with grouped-query K/V, "
        "attention output, MLP: 2 matrices, or 3 for SwiGLU, and the biases each architecture has) + final norm "
        "+ output layer (untied, + bias for GPT-J); non-embedding: the L layers",
        path);
    record_note(&rec, "gflop_per_token: training FLOPs per token at seq_len T = %d: 6 N + 12 L C T (PaLM appendix B; "
                      "N = every matmul weight incl. the output layer)", MODELS_FLOPS_T);
    for (int i = 0; i < n; i++) {
        int row = record_add_row(&rec);
        if (row < 0) break;
        models_row(&rec, row, &all[i]);
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
