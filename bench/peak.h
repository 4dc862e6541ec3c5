/* peak.h: this machine's limits: fp32 FMA and AVX512_BF16 dot-product rates from independent
 * register chains, STREAM-style copy and triad bandwidth, and sgemm under each OpenBLAS kernel. */
#ifndef CB_PEAK_H
#define CB_PEAK_H

#include "../common/machine.h"
#include "../common/record.h"
#include "runner.h"

typedef struct {
    double array_mib;   /* per array for copy/triad; 0: 4x the last-level cache, at least 256 MiB */
    int skip_sgemm;     /* do not spawn the per-kernel sgemm probes */
    char **argv0;       /* this program's argv (for child probes) */
} peak_opts;

/* Columns of the peak table. */
enum { PK_PROBE, PK_THREADS, PK_ISA, PK_BLAS, PK_GF_MED, PK_GF_MIN, PK_GF_MAX, PK_GB_MED, PK_GB_MIN, PK_GB_MAX,
       PK_CV, PK_PCT, PK_MIB, PK_NCOLS };
extern const rec_col peak_cols[PK_NCOLS];

int peak_run(const peak_opts *o, const runner_opts *ro, record *rec, machine_info *m);

/* Quick in-run FMA peak (all threads) for other benchmarks' pct_of_peak; GFLOP/s median. */
double peak_fma_gflops(int threads, const runner_opts *ro, const char **isa);
/* Quick in-run copy bandwidth (all threads), GB/s median, over arrays of array_bytes each. */
double peak_copy_gbps(int threads, double array_bytes, const runner_opts *ro);
/* Default STREAM array size for this machine (bytes per array). */
double peak_default_array_bytes(const machine_info *m);

#endif
