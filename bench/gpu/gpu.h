/* gpu.h: what the GPU microbenchmarks (./costbench-gpu: matmul, rope, peak, test) share. Built with
 * the CUDA toolkit and a C compiler alone (`make gpu`: no Debian package), their CSVs have the
 * columns of the CPU benchmarks' (common/schema.h: mm_cols, rb_cols, peak_cols) followed by the
 * GPU's provenance (gpu_cols below) and the host's (machine_cols), so that the main costbench reads
 * them wherever it runs.
 *
 * The plain C here (bench/gpu/gpuinfo.c) is linked into the main build too and tested by `make
 * test` on every machine: device names to data/devices.csv keys, the dense peaks from clocks and
 * SM counts, the tolerances of the reference checks, the provenance columns. The CUDA side
 * (the .cu files of bench/gpu/ and kernels/cuda/) is built by nvcc alone. */
#ifndef CB_GPU_H
#define CB_GPU_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>

#include "../../common/err.h"
#include "../../common/machine.h"
#include "../../common/record.h"
#include "../../common/schema.h"

/* The precisions of the GPU matmul (the dtype column): fp32 (CUDA cores), tf32 (fp32 operands on
 * the tensor cores), fp16 and bf16 (16-bit operands, fp32 accumulation, 16-bit output), fp8 (e4m3
 * operands with per-tensor scales, fp32 accumulation, bf16 output). */
typedef enum { GPU_FP32, GPU_TF32, GPU_FP16, GPU_BF16, GPU_FP8, GPU_NDTYPES } gpu_dtype;
extern const char *const gpu_dtype_names[GPU_NDTYPES];
/* GPU_x for a name of gpu_dtype_names ("fp8" also as "e4m3"), -1 for anything else. */
int gpu_dtype_parse(const char *name);

/* One device as the CUDA runtime, cuBLASLt and NVML describe it (gpu_open, bench/gpu/gpudev.cu). */
typedef struct {
    int ordinal;
    char name[256];        /* "NVIDIA H100 80GB HBM3" */
    char key[64];          /* data/devices.csv key (gpu_device_key), "" when not recognised */
    int cc_major, cc_minor;
    int sms;
    double sm_clock_mhz;   /* the SM clock the device reports as its maximum */
    double mem_clock_mhz;  /* the memory clock (HBM: data rate / 2) */
    int bus_bits;          /* memory bus width */
    double l2_mib, mem_gib;
    char driver[80];       /* the NVIDIA driver ("580.159.04", from NVML), else the CUDA driver API's ("13.0") */
    char runtime[24];      /* the CUDA runtime ("13.0") */
    char cublaslt[32];     /* cuBLASLt ("13.0.2") */
    char clocks_now[96];   /* "SM 1980 MHz, memory 2619 MHz, 700 W limit" as NVML reads them at start; "" unknown */
} gpu_dev;

/* ---- plain C (gpuinfo.c) */

/* The data/devices.csv key of a device named `name` (cudaDeviceProp.name) with mem_gib of memory:
 * h100-sxm5-80gb, h100-pcie-80gb, h100-nvl-94gb, h200-sxm5-141gb, a100-sxm4-80gb, a100-sxm4-40gb,
 * b200, gb200-nvl72, a10g; "" for a device the table does not hold. */
const char *gpu_device_key(const char *name, double mem_gib);

/* Dense FLOP per clock per SM of the tensor cores (fp32: the CUDA cores' FMA) of compute capability
 * major.minor in dtype, from NVIDIA's architecture white papers (gpuinfo.c cites each); 0 when not
 * known (the peak from clocks is then unknown). */
double gpu_flop_per_clk_sm(int cc_major, int cc_minor, gpu_dtype dt);
struct dev_row_s;
/* The data sheet's dense TFLOP/s of dt in a data/devices.csv row (report/formats/devices.h), per
 * device; NaN when the row is NULL or gives none. */
double gpu_sheet_tflops(const struct dev_row_s *row, gpu_dtype dt);
/* sms x clock x FLOP/clk/SM in TFLOP/s; NaN when the architecture's rate is not known. */
double gpu_clock_peak_tflops(const gpu_dev *d, gpu_dtype dt);
/* The memory bandwidth from the memory clock and bus width (GB/s, HBM's two transfers a clock). */
double gpu_clock_mem_gbps(const gpu_dev *d);

/* The reference check of a benchmark's output against a double-precision reference: the norm-wise
 * relative error ||out - ref|| / ||ref|| over the sampled elements must not exceed this for the
 * dtype (the operands already rounded to it, so only accumulation order and output rounding
 * remain: bf16 output 2^-9 an element, fp16 2^-12, tf32's operands rounded inside the tensor core
 * 2^-11, fp32 accumulation order). A NaN anywhere fails. */
double gpu_check_tol(gpu_dtype dt);
/* ||out - ref|| / ||ref|| over n values (NaN when any value is not finite, or ref is all zero). */
double gpu_rel_err(const double *out, const double *ref, size_t n);

/* Median, minimum and maximum of n samples (sorted in place); the coefficient of variation in %. */
void gpu_stats(double *x, int n, double *med, double *lo, double *hi, double *cv_pct);

/* The GPU's provenance columns, after a benchmark's own columns and before the host's
 * (machine_cols): device (data/devices.csv key), gpu_name, compute_capability, sm_count,
 * sm_clock_mhz, mem_clock_mhz, l2_mib, gpu_mem_gib, driver, cuda_runtime, cublaslt, clocks_at_start. */
enum { GC_DEVICE, GC_NAME, GC_CC, GC_SMS, GC_SM_CLOCK, GC_MEM_CLOCK, GC_L2, GC_MEM, GC_DRIVER, GC_RUNTIME, GC_CUBLASLT,
       GC_CLOCKS_NOW, GC_NCOLS };
extern const rec_col gpu_cols[GC_NCOLS];
/* A benchmark's columns followed by gpu_cols into out (cap entries). Returns the count, or -1. */
int gpu_cols_join(rec_col *out, int cap, const rec_col *own, int nown);

/* The GPU matmul table: mm_cols, then peak_gflops (the dense peak pct_of_peak is against) and
 * peak_source (the data sheet's, data/devices.csv, or the clocks'), then gpu_cols. */
enum { GM_PEAK = MM_NCOLS, GM_PEAK_SRC, GM_NOWN, GM_NCOLS = GM_NOWN + GC_NCOLS };
extern const rec_col gpu_matmul_cols[GM_NCOLS];
/* The GPU peak table: peak_cols, then datasheet (data/devices.csv's figure of the probe: GB/s or
 * GFLOP/s), pct_of_datasheet, clocks_figure (the same from the clocks: gpu_clock_mem_gbps,
 * gpu_clock_peak_tflops) and source, then gpu_cols. */
enum { GP_SHEET = PK_NCOLS, GP_PCT_SHEET, GP_CLOCKS, GP_SOURCE, GP_NOWN, GP_NCOLS = GP_NOWN + GC_NCOLS };
extern const rec_col gpu_peak_cols[GP_NCOLS];
/* Fills gpu_cols (starting at column `first` of row `row`) from d, and hides them from the human
 * table (they stay in the CSV). */
void gpu_cols_fill(record *r, int row, int first, const gpu_dev *d);
/* The host's provenance: machine_probe's (CPU model, cores, build flags and revision, date), no
 * BLAS; cflags, when given, in place of the build's. */
void gpu_machine_info(machine_info *m, const char *cflags);
/* One line on stdout before a benchmark's table: "# GPU: NVIDIA H100 80GB HBM3 (h100-sxm5-80gb),
 * sm_90, 132 SMs at 1980 MHz, 50 MiB L2, 79.1 GiB; driver ..., CUDA ..., cuBLASLt ...". */
void gpu_note(record *r, const gpu_dev *d);

/* ---- CUDA side (gpudev.cu) */

/* Opens device 0 (or $CUDA_VISIBLE_DEVICES' first). Returns 0; CB_EUSAGE when there is none (the
 * driver missing, no device), the runtime's reason in why (printed by the caller); CB_EFAIL after
 * one error line when the device is there but cannot be read. */
int gpu_open(gpu_dev *d, char *why, size_t nwhy);

/* The HBM copy bandwidth as the copy probes of `costbench-gpu peak` measure it (bytes read + bytes
 * written over time, arrays far past L2), GB/s (median): the faster of the copy kernel (16-byte
 * loads) and cudaMemcpy, the bandwidth memory-bound kernels are measured against (rope's
 * pct_of_copy_bw). Returns 0 or CB_EFAIL. */
int gpu_copy_gbps(const gpu_dev *d, double *gbps);

/* The largest-GEMM probe of `peak`: a size x size x size product in dt through cuBLASLt as `matmul`
 * runs it (autotuned, checked first), GFLOP/s median, min, max and the algorithm. Returns 0 or
 * CB_EFAIL. */
int gpu_gemm_probe(const gpu_dev *d, gpu_dtype dt, int size, double gflops[3], char *impl, size_t n);

/* ---- the subcommands: each parses its own flags (argv[0] is its name) and returns the exit
 * status (0, or CB_EUSAGE / CB_EFAIL after one error line) */
int gpu_matmul_main(const gpu_dev *d, int argc, char **argv); /* bench/gpu/matmul_gpu.cu */
int gpu_rope_main(const gpu_dev *d, int argc, char **argv);   /* bench/gpu/rope_gpu.cu */
int gpu_peak_main(const gpu_dev *d, int argc, char **argv);   /* bench/gpu/peak_gpu.cu */
/* The kernel checks of `costbench-gpu test` (make test-gpu): each check prints "ok NAME" or "FAIL
 * NAME: why" on stdout; returns the number of failed checks, adding the passed ones to *passed. */
int gpu_matmul_selftest(const gpu_dev *d, int *passed);
int gpu_rope_selftest(const gpu_dev *d, int *passed);
int gpu_peak_selftest(const gpu_dev *d, int *passed);

#ifdef __cplusplus
}
#endif

#endif
