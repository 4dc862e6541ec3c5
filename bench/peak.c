#include "peak.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/wait.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/mem.h"
#include "../common/schema.h"
#include "../kernels/matmul.h"
#include "blascore.h"


/* ---------------------------------------------------------------- compute probes
 * 16 independent accumulator chains hide the FMA latency (4-5 cycles) on two ports.
 * FLOPs per iteration: chains * lanes * 2 (a fused multiply-add counts as two). */
enum { CHAINS = 16, FMA_ITERS = 100000 };

/* The probes are compiled optimised and uninstrumented in every build (a sanitizer build at -O1
 * would spill the chains to instrumented memory and report a fraction of the machine's peak). */
#define PROBE __attribute__((optimize("O3"), no_sanitize("address", "undefined")))

PROBE __attribute__((target("avx512f"))) static float fma512(long iters)
{
    __m512 acc[CHAINS];
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
    for (long i = 0; i < iters; i++)
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    __m512 s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm512_add_ps(s, acc[c]);
    return _mm512_reduce_add_ps(s);
}

PROBE __attribute__((target("avx2,fma"))) static float fma256(long iters)
{
    __m256 acc[CHAINS];
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_ps((float)c);
    for (long i = 0; i < iters; i++)
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    __m256 s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm256_add_ps(s, acc[c]);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

/* vdpbf16ps: 16 lanes x 2 bf16 products accumulated in fp32 = 64 FLOP per instruction. */
PROBE __attribute__((target("avx512f,avx512bf16"))) static float bf16dot512(long iters)
{
    __m512 acc[CHAINS];
    const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3380);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
    for (long i = 0; i < iters; i++)
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
    __m512 s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm512_add_ps(s, acc[c]);
    return _mm512_reduce_add_ps(s);
}

/* ---------------------------------------------------------------- AMX tiles
 * TDPBF16PS dst, a, b: dst (16 x 16 fp32) += a (16 rows x 32 bf16) . b (16 rows of 16 bf16 pairs),
 * = 16 * 16 * 32 multiply-adds = 16384 FLOP per instruction. Four independent accumulators
 * (tmm0-3) from two row tiles (tmm4-5) and two column tiles (tmm6-7), the 2x2 blocking of a
 * GEMM kernel, hide the instruction's latency behind its throughput (~16 cycles each on Sapphire
 * Rapids: 1024 FLOP per cycle per core). Intrinsics: GCC 11 and clang 12 onwards. */
#if defined(__x86_64__) && (defined(__clang__) ? __clang_major__ >= 12 : __GNUC__ >= 11)
#define PEAK_AMX 1
#endif
enum { AMX_TILES_PER_ITER = 4, AMX_FLOP_PER_TILE = 16 * 16 * 32 * 2 };

/* The 64-byte LDTILECFG operand, palette 1 (Intel SDM vol. 1, 3.2: palette, start row, reserved
 * to byte 15, bytes per row of tmm0-7 at 16-31, reserved to 47, rows of tmm0-7 at 48-55,
 * reserved to 63; a reserved byte that is not zero faults). */
typedef struct {
    uint8_t palette_id, start_row, reserved0[14];
    uint16_t colsb[8];
    uint8_t reserved1[16];
    uint8_t rows[8];
    uint8_t reserved2[8];
} amx_tilecfg;
_Static_assert(sizeof(amx_tilecfg) == 64, "the tile configuration is 64 bytes");

#ifdef PEAK_AMX
PROBE __attribute__((target("amx-tile,amx-bf16"))) static float amx_bf16(long iters)
{
    _Alignas(64) amx_tilecfg cfg;
    _Alignas(64) uint16_t src[2][16 * 32]; /* bf16 1.0 (rows) and 2^-24 (columns): sums stay small */
    _Alignas(64) float acc[AMX_TILES_PER_ITER][16 * 16];
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16; /* every tile 16 rows x 64 bytes */
    for (int i = 0; i < 16 * 32; i++) src[0][i] = 0x3f80, src[1][i] = 0x3380;
    /* GCC's tile intrinsics are asm statements that name only a pointer (or, for the
     * configuration, its first 8 bytes): make the stores above visible to them first */
    __asm__ volatile("" : : "r"(&cfg), "r"(src) : "memory");
    _tile_loadconfig(&cfg);
    _tile_loadd(4, src[0], 64);
    _tile_loadd(5, src[0], 64);
    _tile_loadd(6, src[1], 64);
    _tile_loadd(7, src[1], 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (long i = 0; i < iters; i++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, acc[0], 64);
    _tile_stored(1, acc[1], 64);
    _tile_stored(2, acc[2], 64);
    _tile_stored(3, acc[3], 64);
    _tile_release();
    return acc[0][0] + acc[1][17] + acc[2][34] + acc[3][255];
}
#endif

/* Linux (5.16+) hands out the 8 KiB tile data state only to a process that asks for it, once,
 * before its first tile instruction (which would otherwise die of SIGILL); the permission is
 * process-wide, so the OpenMP threads share it. Kernel: Documentation/arch/x86/xstate.rst. */
#ifndef ARCH_GET_XCOMP_PERM
#define ARCH_GET_XCOMP_PERM 0x1022
#endif
#ifndef ARCH_REQ_XCOMP_PERM
#define ARCH_REQ_XCOMP_PERM 0x1023
#endif
#define XFEATURE_XTILEDATA 18

/* Whether the AMX probe can run here: the CPU has AMX-TILE and AMX-BF16, this build has the
 * intrinsics and Linux granted the tile state. 0 with the reason in why when not. */
static int amx_usable(char *why, size_t n)
{
    static int state; /* 0 not asked yet, 1 usable, -1 not */
    static char reason[160];
    if (state == 0) {
        state = -1;
        unsigned long perm = 0;
        if (!machine_has_cpu_flag("amx_tile") || !machine_has_cpu_flag("amx_bf16"))
            snprintf(reason, sizeof reason, "this CPU has no AMX (no amx_tile and amx_bf16 in /proc/cpuinfo)");
#ifndef PEAK_AMX
        else snprintf(reason, sizeof reason, "this build's compiler has no AMX intrinsics (GCC 11 or clang 12 needed)");
#else
        else if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
            snprintf(reason, sizeof reason, "Linux refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM: %s)",
                     strerror(errno));
        else if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &perm) != 0 || !(perm & (1ul << XFEATURE_XTILEDATA)))
            snprintf(reason, sizeof reason, "Linux did not grant the AMX tile state (arch_prctl ARCH_GET_XCOMP_PERM)");
        else state = 1;
#endif
    }
    if (why) snprintf(why, n, "%s", reason);
    return state == 1;
}

/* ---------------------------------------------------------------- running the compute probes */

typedef enum { K_FMA512, K_FMA256, K_BF16DOT, K_AMX } probe_kind;

typedef struct {
    int threads;
    probe_kind kind;
    volatile float sink;
} compute_ctx;

static float compute_one(probe_kind k)
{
    switch (k) {
    case K_FMA512: return fma512(FMA_ITERS);
    case K_FMA256: return fma256(FMA_ITERS);
    case K_BF16DOT: return bf16dot512(FMA_ITERS);
#ifdef PEAK_AMX
    case K_AMX: return amx_bf16(FMA_ITERS);
#endif
    default: return 0;
    }
}

static void compute_run(void *p)
{
    compute_ctx *c = p;
    float total = 0;
#pragma omp parallel num_threads(c->threads) reduction(+ : total)
    total += compute_one(c->kind);
    c->sink = total;
}

static double compute_flops_per_call(const compute_ctx *c)
{
    double per_iter = c->kind == K_FMA512    ? CHAINS * 16 * 2
                      : c->kind == K_FMA256  ? CHAINS * 8 * 2
                      : c->kind == K_BF16DOT ? CHAINS * 16 * 2 * 2
                                             : AMX_TILES_PER_ITER * AMX_FLOP_PER_TILE;
    return (double)c->threads * FMA_ITERS * per_iter;
}

static int have_avx512(void) { return __builtin_cpu_supports("avx512f"); }
static int have_bf16(void) { return have_avx512() && machine_has_cpu_flag("avx512_bf16"); }

static const char *probe_name(probe_kind k)
{
    return k == K_BF16DOT ? "bf16_dot" : k == K_AMX ? "amx_bf16" : "fp32_fma";
}
static const char *probe_isa(probe_kind k)
{
    return k == K_FMA512 ? "avx512" : k == K_FMA256 ? "avx2" : k == K_BF16DOT ? "avx512_bf16" : "amx_bf16";
}
static probe_kind fp32_kind(void) { return have_avx512() ? K_FMA512 : K_FMA256; }

/* The probe bf16 matrix products peak at on this machine: AMX tiles, else AVX512_BF16, else none
 * (the fp32 FMA: bf16 products then run as fp32); why: the reason AMX is not it. */
static probe_kind bf16_kind(char *why, size_t n)
{
    if (amx_usable(why, n)) return K_AMX;
    return have_bf16() ? K_BF16DOT : fp32_kind();
}

/* Compute probes sample for >= 20 ms each over >= 1 s: with 1 ms samples, preemption and frequency
 * steps on a shared machine spread single samples by +-20%, while the sgemm calls they are
 * compared with last 10 ms to seconds. */
static runner_opts compute_opts(const runner_opts *ro)
{
    runner_opts o = *ro;
    if (o.min_sample_s < 0.02) o.min_sample_s = 0.02;
    if (o.min_samples < 10) o.min_samples = 10;
    if (o.min_time_s < 1.0) o.min_time_s = 1.0; /* a median over a second, not a lucky instant */
    return o;
}

static int compute_measure(const runner_opts *ro, probe_kind k, int threads, runner_result *r, double *flops)
{
    compute_ctx c = {.threads = threads, .kind = k};
    bench_case bc = {probe_name(k), compute_run, NULL, NULL};
    runner_opts co = compute_opts(ro);
    *flops = compute_flops_per_call(&c);
    return runner_run(&co, &bc, &c, r);
}

/* One probe's median at `threads`, and its description for `which`. */
static int peak_of(const runner_opts *ro, probe_kind k, int threads, const char *extra, double *gflops, char *which,
                   size_t n)
{
    runner_result r;
    double flops;
    *gflops = NAN;
    if (compute_measure(ro, k, threads, &r, &flops) != 0) return err_msg("the %s peak probe failed", probe_name(k));
    *gflops = flops / r.s.median / 1e9;
    if (which)
        snprintf(which, n, "%s (%s, %d thread%s%s)", probe_name(k), k == K_AMX ? "AMX TDPBF16PS" : probe_isa(k),
                 threads, threads == 1 ? "" : "s", extra);
    return 0;
}

int peak_fp32_fma(const runner_opts *ro, int threads, double *gflops, char *which, size_t n)
{
    return peak_of(ro, fp32_kind(), threads, "", gflops, which, n);
}

int peak_bf16_matrix(const runner_opts *ro, int threads, double *gflops, char *which, size_t n)
{
    probe_kind k = bf16_kind(NULL, 0);
    return peak_of(ro, k, threads,
                   k == K_BF16DOT || k == K_AMX ? "" : "; no bf16 instructions: bf16 runs at the fp32 rate", gflops,
                   which, n);
}

double peak_fma_gflops(int threads, const runner_opts *ro, const char **isa)
{
    double g;
    if (isa) *isa = probe_isa(fp32_kind());
    return peak_fp32_fma(ro, threads, &g, NULL, 0) == 0 ? g : NAN;
}

/* ---------------------------------------------------------------- memory probes (STREAM)
 * Bytes counted as STREAM does: copy 16 B per element (read 8, write 8), triad 24 B.
 * Loops are kept as loops (no memcpy with non-temporal stores) so the figure is the
 * bandwidth ordinary loads and stores reach, as in the kernels compared against it. */
typedef struct {
    double *a, *b, *c;
    size_t n;
    int threads;
} stream_ctx;

__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void copy_run(void *p)
{
    stream_ctx *s = p;
    double *restrict a = s->a;
    const double *restrict b = s->b;
    long n = (long)s->n;
#pragma omp parallel for schedule(static) num_threads(s->threads)
    for (long i = 0; i < n; i++) a[i] = b[i];
}

static void triad_run(void *p)
{
    stream_ctx *s = p;
    double *restrict a = s->a;
    const double *restrict b = s->b, *restrict c = s->c;
    const double q = 3.0;
    long n = (long)s->n;
#pragma omp parallel for schedule(static) num_threads(s->threads)
    for (long i = 0; i < n; i++) a[i] = b[i] + q * c[i];
}

static int stream_alloc(stream_ctx *s, double array_bytes, int arrays)
{
    s->n = (size_t)(array_bytes / sizeof(double));
    s->a = mem_alloc(s->n, sizeof(double), "stream array a");
    s->b = mem_alloc(s->n, sizeof(double), "stream array b");
    s->c = arrays > 2 ? mem_alloc(s->n, sizeof(double), "stream array c") : NULL;
    if (!s->a || !s->b || (arrays > 2 && !s->c)) return CB_EFAIL;
    long n = (long)s->n;
    /* first touch by the threads that use the pages */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        s->a[i] = 0.0;
        s->b[i] = 1.0;
        if (s->c) s->c[i] = 2.0;
    }
    return 0;
}

static void stream_free(stream_ctx *s)
{
    free(s->a);
    free(s->b);
    free(s->c);
}

double peak_default_array_bytes(const machine_info *m)
{
    double b = 4.0 * m->llc_bytes;
    if (b < 256.0 * 1048576) b = 256.0 * 1048576;
    double cap = m->mem_total_bytes / 8;
    if (cap > 0 && b > cap) b = cap;
    return b;
}

double peak_copy_gbps(int threads, double array_bytes, const runner_opts *ro)
{
    stream_ctx s = {.threads = threads};
    if (stream_alloc(&s, array_bytes, 2) != 0) {
        stream_free(&s);
        return NAN;
    }
    bench_case bc = {"copy", copy_run, NULL, NULL};
    runner_result r;
    double g = NAN;
    if (runner_run(ro, &bc, &s, &r) == 0) g = 16.0 * (double)s.n / r.s.median / 1e9;
    stream_free(&s);
    return g;
}

/* ---------------------------------------------------------------- sgemm per OpenBLAS kernel */

/* Runs `costbench matmul --n 4096 --k 2048 --blas-core CORE` in a child with the user's
 * environment and reads its CSV. Returns GFLOP/s (median, min, max) and the kernel it used. */
static int sgemm_child(char **argv0, const char *core, double gf[3], char *used, size_t usedsz)
{
    char tmp[] = "/tmp/costbench-sgemm-XXXXXX";
    int fd = mkstemp(tmp);
    if (fd < 0) return err_msg("cannot create a temporary file: %s", strerror(errno));
    close(fd);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        unlink(tmp);
        return err_msg("fork failed: %s", strerror(errno));
    }
    if (pid == 0) {
        blascore_restore_env();
        const char *args[] = {argv0[0], "matmul", "--n", "4096", "--k", "2048", "--blas-core", core,
                              "--csv", tmp, "--peak-gflops", "1", "--min-time", "0.5", NULL};
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
        execv("/proc/self/exe", (char **)args);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        unlink(tmp);
        return err_msg("sgemm probe with --blas-core %s failed (status %d)", core, status);
    }
    table t;
    int rc = table_load(&t, tmp);
    unlink(tmp);
    if (rc != 0) return CB_EFAIL;
    int c0 = table_col(&t, mm_cols[MM_GF_MED].name, 1), c1 = table_col(&t, mm_cols[MM_GF_MIN].name, 1),
        c2 = table_col(&t, mm_cols[MM_GF_MAX].name, 1), cb = table_col(&t, machine_cols[MC_BLAS_CORE], 1);
    if (c0 < 0 || c1 < 0 || c2 < 0 || cb < 0 || t.nrows < 1 || table_get_double(&t, 0, c0, 0, 1e9, &gf[0]) != 0 ||
        table_get_double(&t, 0, c1, 0, 1e9, &gf[1]) != 0 || table_get_double(&t, 0, c2, 0, 1e9, &gf[2]) != 0) {
        table_free(&t);
        return CB_EFAIL;
    }
    snprintf(used, usedsz, "%s", table_cell(&t, 0, cb));
    table_free(&t);
    return 0;
}

/* ---------------------------------------------------------------- the peak command */

static void add_compute_row(record *rec, const char *probe, const char *isa, int threads, const runner_result *r,
                            double flops)
{
    int row = record_add_row(rec);
    if (row < 0) return;
    record_str(rec, row, PK_PROBE, probe);
    record_num(rec, row, PK_THREADS, threads);
    record_str(rec, row, PK_ISA, isa);
    record_num(rec, row, PK_GF_MED, flops / r->s.median / 1e9);
    record_num(rec, row, PK_GF_MIN, flops / r->s.max / 1e9);
    record_num(rec, row, PK_GF_MAX, flops / r->s.min / 1e9);
    record_num(rec, row, PK_CV, r->s.cv_pct);
}

/* What the compute probes found, for the closing notes and pct_of_fma_peak. */
typedef struct {
    double fma_all;        /* fp32_fma at all threads, GFLOP/s */
    double bf16_all;       /* the bf16 matrix peak at all threads */
    char bf16_which[160];  /* its description */
} compute_peaks;

/* fp32_fma, bf16_dot (AVX512_BF16) and amx_bf16 (AMX) at 1 and all threads, each where the CPU
 * has it (a note says why a probe was skipped); the all-thread row of each precision's matrix
 * peak is marked in mfu_peak. */
static int compute_probes(const runner_opts *ro, record *rec, int nthreads, compute_peaks *pk)
{
    int counts[2] = {1, nthreads}, ncounts = nthreads > 1 ? 2 : 1;
    char why_amx[160];
    const probe_kind bf16 = bf16_kind(why_amx, sizeof why_amx), kinds[3] = {fp32_kind(), K_BF16DOT, K_AMX};
    for (int ki = 0; ki < 3; ki++) {
        probe_kind k = kinds[ki];
        if (k == K_BF16DOT && !have_bf16()) {
            record_note(rec, "bf16_dot: this CPU has no AVX512_BF16; probe skipped");
            continue;
        }
        if (k == K_AMX && bf16 != K_AMX) {
            record_note(rec, "amx_bf16: %s; probe skipped", why_amx);
            continue;
        }
        double one = NAN;
        for (int ci = 0; ci < ncounts; ci++) {
            runner_result r;
            double flops;
            if (compute_measure(ro, k, counts[ci], &r, &flops) != 0) return CB_EFAIL;
            add_compute_row(rec, probe_name(k), probe_isa(k), counts[ci], &r, flops);
            double g = flops / r.s.median / 1e9;
            if (counts[ci] == 1) one = g;
            if (counts[ci] != nthreads) continue;
            int row = rec->nrows - 1;
            if (nthreads > 1 && g < one)
                record_note(rec,
                            "warning: %s at %d threads, %.1f GFLOP/s, is below its 1-thread rate %.1f: other processes "
                            "were using the cores, so this peak is wrong; rerun on an idle machine",
                            probe_name(k), nthreads, g, one);
            if (ki == 0) pk->fma_all = g;
            if (k == bf16) {
                pk->bf16_all = g;
                snprintf(pk->bf16_which, sizeof pk->bf16_which, "%s (%s, %d thread%s)", probe_name(k),
                         k == K_AMX ? "AMX TDPBF16PS" : probe_isa(k), nthreads, nthreads == 1 ? "" : "s");
            }
            record_str(rec, row, PK_MFU_PEAK, ki == 0 && k == bf16 ? "fp32 and bf16" : ki == 0 ? "fp32" : "bf16");
        }
    }
    if (bf16 == K_AMX || bf16 == K_BF16DOT)
        record_note(rec, "bf16 matrix peak (bf16 MFU's denominator, mfu_peak = bf16): %s, %.1f GFLOP/s", pk->bf16_which,
                    pk->bf16_all);
    else
        record_note(rec,
                    "bf16 matrix peak: none; without bf16 instructions bf16 products run as fp32, so bf16 MFU is "
                    "against %s, %.1f GFLOP/s",
                    pk->bf16_which, pk->bf16_all);
    return 0;
}

/* STREAM copy and triad at 1 and all threads over arrays of `bytes` each. */
static int memory_probes(const runner_opts *ro, record *rec, int nthreads, double bytes, const machine_info *m)
{
    int counts[2] = {1, nthreads}, ncounts = nthreads > 1 ? 2 : 1;
    if (mem_check_fits(3 * bytes, "the copy/triad arrays") != 0) return CB_EUSAGE;
    stream_ctx s = {0};
    int rc = stream_alloc(&s, bytes, 3);
    for (int probe = 0; rc == 0 && probe < 2; probe++)
        for (int ci = 0; rc == 0 && ci < ncounts; ci++) {
            s.threads = counts[ci];
            bench_case bc = {probe == 0 ? "copy" : "triad", probe == 0 ? copy_run : triad_run, NULL, NULL};
            runner_result r;
            if ((rc = runner_run(ro, &bc, &s, &r)) != 0) break;
            double moved = (probe == 0 ? 16.0 : 24.0) * (double)s.n;
            int row = record_add_row(rec);
            if (row < 0) break;
            record_str(rec, row, PK_PROBE, bc.name);
            const double v[][2] = {{PK_THREADS, counts[ci]}, {PK_GB_MED, moved / r.s.median / 1e9},
                                   {PK_GB_MIN, moved / r.s.max / 1e9}, {PK_GB_MAX, moved / r.s.min / 1e9},
                                   {PK_CV, r.s.cv_pct}, {PK_MIB, (double)s.n * 8 / 1048576.0}};
            for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) record_num(rec, row, (int)v[i][0], v[i][1]);
        }
    if (rc == 0)
        record_note(
            rec,
            "copy/triad: STREAM byte counts (16 and 24 B per element), %.0f MiB per array (last-level cache %.0f MiB)",
            (double)s.n * 8 / 1048576.0, m->llc_bytes / 1048576.0);
    stream_free(&s);
    return rc;
}

/* sgemm under the environment's kernel and under the best kernel for this CPU, each in a child. */
static int sgemm_probes(const peak_opts *o, record *rec, int nthreads, double fma_all)
{
    char best[32] = "", orig[128], used[2][64] = {"", ""};
    double gf[2][3] = {{NAN, NAN, NAN}, {NAN, NAN, NAN}};
    if (blascore_best(best, sizeof best) != 0) return CB_EFAIL;
    blascore_env_orig(orig, sizeof orig);
    if (sgemm_child(o->argv0, "env", gf[0], used[0], sizeof used[0]) != 0) return CB_EFAIL;
    if (best[0] && sgemm_child(o->argv0, best, gf[1], used[1], sizeof used[1]) != 0) return CB_EFAIL;
    for (int k = 0; k < 2; k++) {
        if (!isfinite(gf[k][0])) continue;
        int row = record_add_row(rec);
        if (row < 0) break;
        record_str(rec, row, PK_PROBE, k == 0 ? "sgemm_env" : "sgemm_best");
        record_str(rec, row, PK_BLAS, used[k]);
        const double v[][2] = {{PK_THREADS, nthreads}, {PK_GF_MED, gf[k][0]}, {PK_GF_MIN, gf[k][1]},
                               {PK_GF_MAX, gf[k][2]}, {PK_PCT, 100.0 * gf[k][0] / fma_all}};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) record_num(rec, row, (int)v[i][0], v[i][1]);
    }
    if (*orig) record_note(rec, "OPENBLAS_CORETYPE=%s in the environment forces OpenBLAS's %s kernels", orig, used[0]);
    else record_note(rec, "OPENBLAS_CORETYPE is not set: OpenBLAS detects this CPU as %s", used[0]);
    if (best[0] && isfinite(gf[1][0]) && strcasecmp(used[0], used[1]) != 0)
        record_note(rec,
                    "sgemm 4096x2048x2048: %.0f GFLOP/s with %s vs %.0f GFLOP/s with %s, the best kernel for this CPU "
                    "(%.2fx); the benchmarks use %s by default (--blas-core auto)",
                    gf[0][0], used[0], gf[1][0], best, gf[1][0] / gf[0][0], best);
    else if (best[0])
        record_note(rec, "sgemm 4096x2048x2048: the environment's kernel %s is already the best for this CPU", used[0]);
    return 0;
}

int peak_run(const peak_opts *o, const runner_opts *ro, record *rec, machine_info *m)
{
    int nthreads = m->threads, rc;
    compute_peaks pk = {NAN, NAN, ""};
    if ((rc = compute_probes(ro, rec, nthreads, &pk)) != 0) return rc;
    double bytes = o->array_mib > 0 ? o->array_mib * 1048576.0 : peak_default_array_bytes(m);
    if ((rc = memory_probes(ro, rec, nthreads, bytes, m)) != 0) return rc;
    if (!o->skip_sgemm && (rc = sgemm_probes(o, rec, nthreads, pk.fma_all)) != 0) return rc;
    for (int i = 0; i < rec->nrows; i++) {
        const char *p = rec->str[(size_t)i * rec->ncols + PK_PROBE];
        if (p && (strcmp(p, "fp32_fma") == 0 || strcmp(p, "bf16_dot") == 0 || strcmp(p, "amx_bf16") == 0))
            record_num(rec, i, PK_PCT, 100.0 * rec->num[(size_t)i * rec->ncols + PK_GF_MED] / pk.fma_all);
    }
    record_note(rec,
                "pct_of_fma_peak: against fp32_fma at %d threads, %.1f GFLOP/s, measured in this run (fp32 MFU's "
                "denominator, mfu_peak = fp32)",
                nthreads, pk.fma_all);
    return 0;
}
