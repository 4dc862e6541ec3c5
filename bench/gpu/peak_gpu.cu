// peak_gpu.cu: `costbench-gpu peak`: the device's own ceilings next to data/devices.csv's data-sheet
// figures: HBM copy and triad bandwidth (16-byte loads, arrays far past L2; and cudaMemcpy), the
// L2-resident copy, the dense matrix peak of each precision from the clocks and SM count and as the
// largest GEMM measures it (gpu_gemm_probe). Columns: costbench peak's (common/schema.h peak_cols),
// then datasheet, pct_of_datasheet, clocks_figure and source, then the GPU's and host's provenance.
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

extern "C" { // the project's C headers
#include "../../common/opts.h"
#include "../../common/schema.h"
#include "../../report/formats/devices.h"
}
#include "../../kernels/cuda/cudautil.cuh"
#include "gpu.h"

namespace {

enum { PG_SHEET = GP_SHEET, PG_PCT_SHEET = GP_PCT_SHEET, PG_CLOCKS = GP_CLOCKS, PG_SOURCE = GP_SOURCE, PG_NOWN = GP_NOWN };

// 16-byte elements, four independent loads in flight per thread before the first store.
__global__ void copy_kernel(int4 *__restrict__ dst, const int4 *__restrict__ src, size_t n)
{
    size_t st = (size_t)gridDim.x * blockDim.x, i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + 3 * st < n; i += 4 * st) {
        int4 a = src[i], b = src[i + st], c = src[i + 2 * st], d = src[i + 3 * st];
        dst[i] = a, dst[i + st] = b, dst[i + 2 * st] = c, dst[i + 3 * st] = d;
    }
    for (; i < n; i += st) dst[i] = src[i];
}

__device__ inline float4 axpy4(float4 x, float s, float4 y)
{
    return make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
}

__global__ void triad_kernel(float4 *__restrict__ a, const float4 *__restrict__ b, const float4 *__restrict__ c,
                             float s, size_t n)
{
    size_t st = (size_t)gridDim.x * blockDim.x, i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + st < n; i += 2 * st) {
        float4 x0 = b[i], y0 = c[i], x1 = b[i + st], y1 = c[i + st];
        a[i] = axpy4(x0, s, y0), a[i + st] = axpy4(x1, s, y1);
    }
    for (; i < n; i += st) a[i] = axpy4(b[i], s, c[i]);
}

enum probe_kind { P_COPY, P_TRIAD, P_MEMCPY };

struct bw_probe {
    probe_kind kind;
    size_t bytes; // per array
    void *a, *b, *c;
    int grid;
};

int bw_call(const bw_probe &p)
{
    size_t n16 = p.bytes / 16;
    if (p.kind == P_COPY) copy_kernel<<<p.grid, 256>>>((int4 *)p.a, (const int4 *)p.b, n16);
    else if (p.kind == P_TRIAD) triad_kernel<<<p.grid, 256>>>((float4 *)p.a, (const float4 *)p.b, (const float4 *)p.c, 3.0f, n16);
    else GPU_CK(cudaMemcpyAsync(p.a, p.b, p.bytes, cudaMemcpyDeviceToDevice));
    GPU_CK(cudaGetLastError());
    return 0;
}

// GB/s (bytes read + written) median, min, max over `samples` samples of `reps` calls; the
// arrays filled first (never timed on memory nothing wrote) and the copy checked.
int bw_measure(const gpu_dev *d, probe_kind kind, size_t bytes, int reps, int samples, double gbps[3], double *cv)
{
    bw_probe p = {kind, bytes, NULL, NULL, NULL, d->sms * 8};
    GPU_CK(cudaMalloc(&p.a, bytes));
    GPU_CK(cudaMalloc(&p.b, bytes));
    GPU_CK(cudaMalloc(&p.c, bytes));
    int rc = gpu_fill<float>((float *)p.b, bytes / 4, 7, 1.0f) || gpu_fill<float>((float *)p.c, bytes / 4, 8, 1.0f);
    double ms[64], moved = (kind == P_TRIAD ? 3.0 : 2.0) * (double)bytes;
    if (rc == 0) rc = bw_call(p); // warm-up, and the value checked below
    float got = 0;
    if (rc == 0 && kind != P_TRIAD && cudaMemcpy(&got, (float *)p.a + 12345 % (bytes / 4), 4, cudaMemcpyDeviceToHost) == cudaSuccess &&
        got != gpu_elem<float>::from(gpu_hash_val(7, 12345 % (bytes / 4))))
        rc = err_msg("peak: the %s probe copied %g where %g was written", kind == P_COPY ? "copy" : "memcpy", got,
                     gpu_hash_val(7, 12345 % (bytes / 4)));
    for (int i = 0; i < samples && rc == 0; i++) rc = gpu_time_ms([&] { return bw_call(p); }, reps, &ms[i]);
    cudaFree(p.a), cudaFree(p.b), cudaFree(p.c);
    if (rc != 0) return rc;
    double med, lo, hi;
    gpu_stats(ms, samples, &med, &lo, &hi, cv);
    gbps[0] = moved / med / 1e6, gbps[1] = moved / hi / 1e6, gbps[2] = moved / lo / 1e6;
    return 0;
}

// Arrays far past L2: 8 x L2 each, at least 512 MiB.
size_t hbm_bytes(const gpu_dev *d)
{
    size_t b = (size_t)(d->l2_mib * 8 * 1048576.0);
    return b < (512u << 20) ? (512u << 20) : b;
}

struct pg_sheet {
    const dev_row *row;
    dev_table t;
};

int add(record *rec, const gpu_dev *d, const char *probe, const char *isa)
{
    int r = record_add_row(rec);
    if (r < 0) return r;
    record_str(rec, r, PK_PROBE, probe), record_str(rec, r, PK_ISA, isa);
    gpu_cols_fill(rec, r, PG_NOWN, d);
    return r;
}

int bw_rows(record *rec, const gpu_dev *d, const dev_row *sheet)
{
    static const char *const names[3] = {"copy", "triad", "memcpy"};
    size_t big = hbm_bytes(d), l2 = (size_t)(d->l2_mib * 1048576.0 / 4) & ~(size_t)4095;
    for (int k = 0; k < 4; k++) {
        probe_kind kind = k == 3 ? P_COPY : (probe_kind)k;
        size_t bytes = k == 3 ? l2 : big;
        double g[3], cv;
        if (bw_measure(d, kind, bytes, k == 3 ? 200 : 5, 15, g, &cv) != 0) return CB_EFAIL;
        int r = add(rec, d, k == 3 ? "copy_l2" : names[k], k == 2 ? "cudaMemcpy" : "16-byte loads");
        if (r < 0) return r;
        record_num(rec, r, PK_GB_MED, g[0]), record_num(rec, r, PK_GB_MIN, g[1]), record_num(rec, r, PK_GB_MAX, g[2]);
        record_num(rec, r, PK_CV, cv), record_num(rec, r, PK_MIB, bytes / 1048576.0);
        if (k == 3) {
            record_str(rec, r, PG_SOURCE, "arrays of a quarter of L2 each: L2-resident");
            continue;
        }
        double hbm = sheet ? sheet->hbm_gb_per_s : NAN;
        record_num(rec, r, PG_SHEET, hbm), record_num(rec, r, PG_PCT_SHEET, 100 * g[0] / hbm);
        record_num(rec, r, PG_CLOCKS, gpu_clock_mem_gbps(d));
        record_str(rec, r, PG_SOURCE, "GB/s read + written; datasheet: data/devices.csv hbm_gb_per_s; clocks_figure: "
                                      "2 x memory clock x bus width");
    }
    return 0;
}

int gemm_rows(record *rec, const gpu_dev *d, const dev_row *sheet, int size)
{
    int fp8 = d->cc_major > 8 || (d->cc_major == 8 && d->cc_minor >= 9), failed = 0;
    for (int dt = 0; dt < GPU_NDTYPES; dt++) {
        if (dt == GPU_FP8 && !fp8) continue;
        double g[3];
        char impl[160], probe[32], isa[16];
        /* a precision that fails (its error line printed) leaves the others' rows; the run fails */
        if (gpu_gemm_probe(d, (gpu_dtype)dt, size, g, impl, sizeof impl) != 0) {
            failed = CB_EFAIL;
            continue;
        }
        snprintf(probe, sizeof probe, "gemm_%s_%d", gpu_dtype_names[dt], size);
        snprintf(isa, sizeof isa, "sm_%d%d", d->cc_major, d->cc_minor);
        int r = add(rec, d, probe, isa);
        if (r < 0) return r;
        double s = gpu_sheet_tflops(sheet, (gpu_dtype)dt);
        double clk = gpu_clock_peak_tflops(d, (gpu_dtype)dt) * 1e3;
        record_num(rec, r, PK_GF_MED, g[0]), record_num(rec, r, PK_GF_MIN, g[1]), record_num(rec, r, PK_GF_MAX, g[2]);
        record_num(rec, r, PK_PCT, 100 * g[0] / clk), record_str(rec, r, PK_MFU_PEAK, gpu_dtype_names[dt]);
        record_num(rec, r, PG_SHEET, s * 1e3), record_num(rec, r, PG_PCT_SHEET, 100 * g[0] / (s * 1e3));
        record_num(rec, r, PG_CLOCKS, clk), record_str(rec, r, PG_SOURCE, impl);
        record_str(rec, r, PK_BLAS, "cublaslt");
    }
    return failed;
}

const char SYNOPSIS[] = "[options]";

} // namespace

// The faster of the copy kernel and cudaMemcpy: the larger denominator, so a memory-bound kernel's
// share of it is never flattered.
extern "C" int gpu_copy_gbps(const gpu_dev *d, double *gbps)
{
    double g[3], m[3], cv;
    if (bw_measure(d, P_COPY, hbm_bytes(d), 5, 9, g, &cv) != 0 || bw_measure(d, P_MEMCPY, hbm_bytes(d), 5, 9, m, &cv) != 0)
        return CB_EFAIL;
    *gbps = g[0] > m[0] ? g[0] : m[0];
    return 0;
}

extern "C" int gpu_peak_main(const gpu_dev *d, int argc, char **argv)
{
    const char *csv = NULL;
    long size = 8192;
    const opt_spec specs[] = {
        {"csv", OPT_STR, &csv, 0, 0, 0, 0, "FILE", "also write the results as CSV (- for stdout)"},
        {"gemm-size", OPT_LONG, &size, 256, 32768, 0, 0, "N", "the matrix-peak probe's N x N x N product (default 8192)"},
        {NULL, OPT_FLAG, NULL, 0, 0, 0, 0, NULL, NULL}};
    int rc = opts_parse("costbench-gpu peak", SYNOPSIS, specs, argc, argv, 1, NULL, NULL);
    if (rc != 0) return rc == 1 ? 0 : rc;
    record rec;
    if (record_init(&rec, gpu_peak_cols, GP_NCOLS) != 0) return CB_EFAIL;
    record_csv_only(&rec, PK_THREADS), record_csv_only(&rec, PK_BLAS), record_csv_only(&rec, PG_SOURCE);
    pg_sheet sh = {NULL, {}};
    if (*d->key && devices_load(&sh.t, NULL) == 0) sh.row = devices_find(&sh.t, d->key);
    rc = bw_rows(&rec, d, sh.row);
    if (rc == 0) rc = gemm_rows(&rec, d, sh.row, (int)size);
    if (rec.nrows > 0) { /* what was measured is shown and written even when a probe failed */
        gpu_note(&rec, d);
        record_note(&rec, "L2 %.0f MiB; datasheet: %s; pct_of_fma_peak: of the dense peak from the clocks "
                          "(clocks_figure: SMs x max SM clock x FLOP/clk/SM)",
                    d->l2_mib, sh.row ? "data/devices.csv's row of this device" : "none (device not in data/devices.csv)");
        record_print(&rec, stdout);
        machine_info m;
        gpu_machine_info(&m, NULL);
        if (csv && record_write_csv(&rec, csv, &m) != 0) rc = CB_EFAIL;
    }
    devices_free(&sh.t);
    record_free(&rec);
    return rc;
}

// The copy and triad kernels write what they should (every element of a small array).
extern "C" int gpu_peak_selftest(const gpu_dev *d, int *passed)
{
    (void)d;
    const size_t n = (1u << 20) + 16; // not a multiple of the grid's stride
    float *a = NULL, *b = NULL, *c = NULL;
    static float ha[(1u << 20) + 16];
    int bad = 0;
    if (cudaMalloc(&a, n * 4) || cudaMalloc(&b, n * 4) || cudaMalloc(&c, n * 4) || gpu_fill<float>(b, n, 3, 1.0f) ||
        gpu_fill<float>(c, n, 4, 1.0f))
        bad = 1;
    triad_kernel<<<64, 256>>>((float4 *)a, (const float4 *)b, (const float4 *)c, 3.0f, n / 4);
    if (!bad && (cudaDeviceSynchronize() != cudaSuccess || cudaMemcpy(ha, a, n * 4, cudaMemcpyDeviceToHost)))
        bad = 1;
    for (size_t i = 0; !bad && i < n; i++)
        if (fabsf(ha[i] - (gpu_hash_val(3, i) + 3.0f * gpu_hash_val(4, i))) > 1e-6f) bad = 1; // FMA or not
    copy_kernel<<<64, 256>>>((int4 *)a, (const int4 *)c, n / 4);
    if (!bad && (cudaDeviceSynchronize() != cudaSuccess || cudaMemcpy(ha, a, n * 4, cudaMemcpyDeviceToHost)))
        bad = 1;
    for (size_t i = 0; !bad && i < n; i++)
        if (ha[i] != gpu_hash_val(4, i)) bad = 1;
    cudaFree(a), cudaFree(b), cudaFree(c);
    printf("%s peak: the copy and triad kernels write every element as the host computes it\n", bad ? "FAIL" : "ok");
    bad ? 0 : (*passed)++;
    return bad;
}
