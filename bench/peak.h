/* peak.h: this machine's limits: fp32 FMA and AVX512_BF16 dot-product rates from independent
 * register chains, the AMX TDPBF16PS tile rate (where the CPU has AMX), STREAM-style copy and
 * triad bandwidth, and sgemm under each OpenBLAS kernel.
 *
 * The matrix peaks MFU is measured against, one per precision: fp32, the FMA chains (AVX-512,
 * else AVX2); bf16, the AMX tiles where the CPU has them and Linux grants the tile state, else
 * the AVX512_BF16 chains, else (no bf16 instructions: bf16 products run as fp32) the fp32 FMA. */
#ifndef CB_PEAK_H
#define CB_PEAK_H

#include <stddef.h>

#include "../common/machine.h"
#include "../common/record.h"
#include "../common/schema.h"
#include "runner.h"

typedef struct {
    double array_mib;   /* per array for copy/triad; 0: 4x the last-level cache, at least 256 MiB */
    int skip_sgemm;     /* do not spawn the per-kernel sgemm probes */
    char **argv0;       /* this program's argv (for child probes) */
} peak_opts;

/* Columns of the peak table: peak_cols (common/schema.h). */

int peak_run(const peak_opts *o, const runner_opts *ro, record *rec, machine_info *m);

/* The fp32 and the bf16 matrix peak at `threads` OpenMP threads, GFLOP/s (median), each
 * measuring only its own probe, sampled as `costbench peak` samples (ro raised to at least 10
 * samples of 20 ms over 1 s). `which` receives what was measured, e.g. "fp32_fma (avx512, 2
 * threads)", "bf16_dot (avx512_bf16, 2 threads)", "amx_bf16 (AMX TDPBF16PS, 2 threads)".
 * Return 0, or CB_EFAIL (error printed; *gflops NaN). */
int peak_fp32_fma(const runner_opts *ro, int threads, double *gflops, char *which, size_t n);
int peak_bf16_matrix(const runner_opts *ro, int threads, double *gflops, char *which, size_t n);
/* peak_fp32_fma's GFLOP/s (NaN on failure) and its ISA ("avx512" or "avx2"). */
double peak_fma_gflops(int threads, const runner_opts *ro, const char **isa);
/* Quick in-run copy bandwidth (all threads), GB/s median, over arrays of array_bytes each. */
double peak_copy_gbps(int threads, double array_bytes, const runner_opts *ro);
/* Default STREAM array size for this machine (bytes per array). */
double peak_default_array_bytes(const machine_info *m);

#endif
