/* gpuinfo.c: the plain C of the GPU microbenchmarks (gpu.h): linked into the main build and tested
 * by `make test` on every machine, GPU or not. */
#include "gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../report/formats/devices.h"

const char *const gpu_dtype_names[GPU_NDTYPES] = {"fp32", "tf32", "fp16", "bf16", "fp8"};

int gpu_dtype_parse(const char *name)
{
    for (int i = 0; i < GPU_NDTYPES; i++)
        if (strcmp(name, gpu_dtype_names[i]) == 0) return i;
    return strcmp(name, "e4m3") == 0 ? GPU_FP8 : -1;
}

/* The names NVIDIA's drivers give (cudaDeviceProp.name), matched by the words in them. */
const char *gpu_device_key(const char *name, double mem_gib)
{
    int nvl = strstr(name, "NVL") != NULL, pcie = strstr(name, "PCIe") != NULL;
    if (strstr(name, "GB200")) return "gb200-nvl72";
    if (strstr(name, "B200")) return "b200";
    if (strstr(name, "H200")) return nvl ? "" : "h200-sxm5-141gb";
    if (strstr(name, "H100")) {
        if (nvl) return "h100-nvl-94gb";
        if (pcie) return "h100-pcie-80gb";
        return mem_gib > 85 ? "h100-sxm5-96gb" : "h100-sxm5-80gb";
    }
    if (strstr(name, "A100") && !pcie) {
        if (strstr(name, "80GB")) return "a100-sxm4-80gb";
        if (strstr(name, "40GB")) return "a100-sxm4-40gb";
    }
    if (strstr(name, "A10G")) return "a10g";
    return "";
}

/* Dense FLOP per clock per SM: each data sheet's dense TFLOP/s over its SM count and the boost
 * clock it is quoted at (NVIDIA A100 Tensor Core GPU Architecture, 2020, Table 3: 108 SMs at
 * 1410 MHz, 19.5 / 156 / 312 TFLOP/s fp32 / tf32 / fp16 = 128 / 1024 / 2048; NVIDIA H100 Tensor
 * Core GPU Architecture, 2022, Table 3: H100 SXM5 132 SMs, 989.4 TFLOP/s fp16 dense at 1830 MHz =
 * 4096, tf32 and fp8 half and twice that, fp32 66.9 at 1980 MHz = 256; NVIDIA Blackwell
 * Architecture Technical Brief, 2024: B200 2.25 PFLOP/s dense fp16 from 148 SMs = 8192 a clock at
 * its 1.86 GHz, fp8 twice). */
double gpu_flop_per_clk_sm(int cc_major, int cc_minor, gpu_dtype dt)
{
    static const double sm80[GPU_NDTYPES] = {128, 1024, 2048, 2048, 0};
    static const double sm90[GPU_NDTYPES] = {256, 2048, 4096, 4096, 8192};
    static const double sm100[GPU_NDTYPES] = {256, 4096, 8192, 8192, 16384};
    if (dt < 0 || dt >= GPU_NDTYPES) return 0;
    if (cc_major == 8 && cc_minor == 0) return sm80[dt];
    if (cc_major == 9 && cc_minor == 0) return sm90[dt];
    if (cc_major == 10 && cc_minor == 0) return sm100[dt];
    return 0;
}

double gpu_sheet_tflops(const dev_row *row, gpu_dtype dt)
{
    if (!row) return NAN;
    switch (dt) {
    case GPU_FP32: return row->fp32_tflops;
    case GPU_TF32: return row->tf32_tflops;
    case GPU_FP16: return row->fp16_tflops;
    case GPU_BF16: return row->bf16_tflops;
    default: return row->fp8_tflops;
    }
}

double gpu_clock_peak_tflops(const gpu_dev *d, gpu_dtype dt)
{
    double f = gpu_flop_per_clk_sm(d->cc_major, d->cc_minor, dt);
    if (!(f > 0) || d->sms <= 0 || !(d->sm_clock_mhz > 0)) return NAN;
    return f * d->sms * d->sm_clock_mhz * 1e6 / 1e12;
}

double gpu_clock_mem_gbps(const gpu_dev *d)
{
    if (!(d->mem_clock_mhz > 0) || d->bus_bits <= 0) return NAN;
    return 2.0 * d->mem_clock_mhz * 1e6 * d->bus_bits / 8.0 / 1e9;
}

double gpu_check_tol(gpu_dtype dt)
{
    /* fp32: accumulation order over K up to 65536 (sqrt(K) 2^-24 ~ 2e-5) with margin */
    static const double tol[GPU_NDTYPES] = {1e-4, 5e-3, 2e-3, 1e-2, 1e-2};
    return dt >= 0 && dt < GPU_NDTYPES ? tol[dt] : 0;
}

double gpu_rel_err(const double *out, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i]) || !isfinite(ref[i])) return NAN;
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : NAN;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void gpu_stats(double *x, int n, double *med, double *lo, double *hi, double *cv_pct)
{
    if (n <= 0) {
        *med = *lo = *hi = *cv_pct = NAN;
        return;
    }
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    *med = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
    *lo = x[0], *hi = x[n - 1];
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) mean += x[i] / n;
    for (int i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean) / (n > 1 ? n - 1 : 1);
    *cv_pct = mean > 0 ? 100.0 * sqrt(var) / mean : NAN;
}


#define GPU_COLS                                                                                            \
    {"device", "", REC_STR, 0}, {"gpu_name", "", REC_STR, 0}, {"compute_capability", "", REC_STR, 0},            \
        {"sm_count", "", REC_NUM, 0}, {"sm_clock_mhz", "MHz", REC_NUM, 0}, {"mem_clock_mhz", "MHz", REC_NUM, 0},  \
        {"l2_mib", "MiB", REC_NUM, 1}, {"gpu_mem_gib", "GiB", REC_NUM, 1}, {"driver", "", REC_STR, 0},           \
        {"cuda_runtime", "", REC_STR, 0}, {"cublaslt", "", REC_STR, 0}, {"clocks_at_start", "", REC_STR, 0}

/* In the order of GC_x; tests/test_gpu.c checks the two tables below against mm_cols and peak_cols. */
const rec_col gpu_cols[GC_NCOLS] = {GPU_COLS};

const rec_col gpu_matmul_cols[GM_NCOLS] = {
    /* mm_cols (common/schema.c), in its order */
    {"op", "", REC_STR, 0}, {"phase", "", REC_STR, 0}, {"n", "", REC_NUM, 0}, {"k", "", REC_NUM, 0},
    {"m", "", REC_NUM, 0}, {"count", "per step", REC_NUM, 0}, {"gflops_median", "GFLOP/s", REC_NUM, 1},
    {"gflops_min", "GFLOP/s", REC_NUM, 1}, {"gflops_max", "GFLOP/s", REC_NUM, 1}, {"cv_pct", "%", REC_NUM, 1},
    {"ms_median", "ms", REC_NUM, 3}, {"pct_of_peak", "%", REC_NUM, 1}, {"step_ms", "ms", REC_NUM, 2},
    {"dtype", "", REC_STR, 0}, {"backend", "", REC_STR, 0}, {"impl", "", REC_STR, 0}, {"isa", "", REC_STR, 0},
    {"pack_ms", "ms", REC_NUM, 3},
    {"peak_gflops", "GFLOP/s", REC_NUM, 1}, {"peak_source", "", REC_STR, 0}, GPU_COLS};

const rec_col gpu_peak_cols[GP_NCOLS] = {
    /* peak_cols (common/schema.c), in its order */
    {"probe", "", REC_STR, 0}, {"threads", "", REC_NUM, 0}, {"isa", "", REC_STR, 0}, {"sgemm_core", "", REC_STR, 0},
    {"gflops_median", "GFLOP/s", REC_NUM, 1}, {"gflops_min", "GFLOP/s", REC_NUM, 1},
    {"gflops_max", "GFLOP/s", REC_NUM, 1}, {"gbps_median", "GB/s", REC_NUM, 2}, {"gbps_min", "GB/s", REC_NUM, 2},
    {"gbps_max", "GB/s", REC_NUM, 2}, {"cv_pct", "%", REC_NUM, 1}, {"pct_of_fma_peak", "%", REC_NUM, 1},
    {"array_mib", "MiB", REC_NUM, 0}, {"mfu_peak", "", REC_STR, 0},
    {"datasheet", "", REC_NUM, 1}, {"pct_of_datasheet", "%", REC_NUM, 1}, {"clocks_figure", "", REC_NUM, 1},
    {"source", "", REC_STR, 0}, GPU_COLS};

int gpu_cols_join(rec_col *out, int cap, const rec_col *own, int nown)
{
    if (nown + GC_NCOLS > cap) return -1;
    memcpy(out, own, (size_t)nown * sizeof *own);
    memcpy(out + nown, gpu_cols, sizeof gpu_cols);
    return nown + GC_NCOLS;
}

void gpu_cols_fill(record *r, int row, int first, const gpu_dev *d)
{
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
    record_str(r, row, first + GC_DEVICE, d->key);
    record_str(r, row, first + GC_NAME, d->name);
    record_str(r, row, first + GC_CC, cc);
    record_num(r, row, first + GC_SMS, d->sms);
    record_num(r, row, first + GC_SM_CLOCK, d->sm_clock_mhz);
    record_num(r, row, first + GC_MEM_CLOCK, d->mem_clock_mhz);
    record_num(r, row, first + GC_L2, d->l2_mib);
    record_num(r, row, first + GC_MEM, d->mem_gib);
    record_str(r, row, first + GC_DRIVER, d->driver);
    record_str(r, row, first + GC_RUNTIME, d->runtime);
    record_str(r, row, first + GC_CUBLASLT, d->cublaslt);
    record_str(r, row, first + GC_CLOCKS_NOW, d->clocks_now);
    for (int c = 0; c < GC_NCOLS; c++) record_csv_only(r, first + c);
}

void gpu_machine_info(machine_info *m, const char *cflags)
{
    machine_probe(m); /* CPU, cores, build and date; one thread without OpenMP */
    snprintf(m->blas_core, sizeof m->blas_core, "none"); /* the host side of the GPU benchmarks has no BLAS */
    snprintf(m->blas_core_choice, sizeof m->blas_core_choice, "none");
    if (cflags && *cflags) snprintf(m->cflags, sizeof m->cflags, "%s", cflags);
}

void gpu_note(record *r, const gpu_dev *d)
{
    record_note(r, "GPU: %s (%s), sm_%d%d, %d SMs at %.0f MHz, %.0f MiB L2, %.1f GiB; driver %s, CUDA %s, cuBLASLt %s%s%s",
                d->name, *d->key ? d->key : "not in data/devices.csv", d->cc_major, d->cc_minor, d->sms, d->sm_clock_mhz,
                d->l2_mib, d->mem_gib, d->driver, d->runtime, d->cublaslt, *d->clocks_now ? "; at start: " : "",
                d->clocks_now);
}
