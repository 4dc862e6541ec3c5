/* The GPU microbenchmarks' plain C, on every machine (no GPU needed): device names to data/devices.csv
 * keys, the dense peaks from clocks against the data sheets, the reference checks' tolerances and
 * error measure, the CSV columns, libcsv's subset for the build without Debian packages, the
 * tensor-parallel shape lists. The kernels themselves: `make test-gpu` (costbench-gpu test). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../bench/gpu/gpu.h"
#include "../bench/mmshapes.h"
#include "../common/csvio.h"
#include "../common/schema.h"
#include "../report/formats/devices.h"
#include "check.h"

static void test_device_keys(void)
{
    static const struct {
        const char *name;
        double gib;
        const char *key;
    } cases[] = {
        {"NVIDIA H100 80GB HBM3", 79.1, "h100-sxm5-80gb"}, {"NVIDIA H100 PCIe", 79.6, "h100-pcie-80gb"},
        {"NVIDIA H100 NVL", 93.1, "h100-nvl-94gb"},        {"NVIDIA H200", 139.8, "h200-sxm5-141gb"},
        {"NVIDIA A100-SXM4-80GB", 79.2, "a100-sxm4-80gb"}, {"NVIDIA A100-SXM4-40GB", 39.4, "a100-sxm4-40gb"},
        {"NVIDIA B200", 178.4, "b200"},                    {"NVIDIA GB200", 184.0, "gb200-nvl72"},
        {"NVIDIA A10G", 22.0, "a10g"},                     {"NVIDIA GeForce RTX 4090", 23.6, ""},
        {"NVIDIA H200 NVL", 139.8, ""},                    {"NVIDIA A100 80GB PCIe", 79.2, ""},
    };
    dev_table t;
    CHECK(devices_load(&t, NULL) == 0, "data/devices.csv loads");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *k = gpu_device_key(cases[i].name, cases[i].gib);
        CHECK(strcmp(k, cases[i].key) == 0, "%s: key '%s', expected '%s'", cases[i].name, k, cases[i].key);
        CHECK(!*k || devices_find(&t, k), "%s: '%s' is a row of data/devices.csv", cases[i].name, k);
    }
    devices_free(&t);
}

/* The peak from the clocks at the clock each data sheet quotes reproduces the sheet's dense figure. */
static void test_clock_peaks(void)
{
    dev_table t;
    CHECK(devices_load(&t, NULL) == 0, "data/devices.csv loads");
    static const struct {
        const char *key;
        int maj, min, sms;
        double mhz_tensor, mhz_fp32;
    } g[] = {{"a100-sxm4-80gb", 8, 0, 108, 1410, 1410}, {"h100-sxm5-80gb", 9, 0, 132, 1830, 1980}};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        const dev_row *r = devices_find(&t, g[i].key);
        if (!r) {
            CHECK(0, "%s in data/devices.csv", g[i].key);
            continue;
        }
        gpu_dev d = {.cc_major = g[i].maj, .cc_minor = g[i].min, .sms = g[i].sms, .sm_clock_mhz = g[i].mhz_tensor};
        double sheet[GPU_NDTYPES] = {r->fp32_tflops, r->tf32_tflops, r->fp16_tflops, r->bf16_tflops, r->fp8_tflops};
        for (int dt = GPU_TF32; dt < GPU_NDTYPES; dt++) {
            double p = gpu_clock_peak_tflops(&d, dt);
            if (!(sheet[dt] > 0)) {
                CHECK(isnan(p), "%s %s: no fp8 on the sheet, none from clocks (%g)", g[i].key, gpu_dtype_names[dt], p);
                continue;
            }
            CHECK(fabs(p / sheet[dt] - 1) < 0.002, "%s %s: %.1f from clocks, %.1f on the sheet", g[i].key,
                  gpu_dtype_names[dt], p, sheet[dt]);
        }
        d.sm_clock_mhz = g[i].mhz_fp32;
        double p32 = gpu_clock_peak_tflops(&d, GPU_FP32);
        CHECK(fabs(p32 / r->fp32_tflops - 1) < 0.01, "%s fp32: %.2f from clocks, %.2f on the sheet", g[i].key, p32,
              r->fp32_tflops);
    }
    devices_free(&t);
    gpu_dev unknown = {.cc_major = 7, .cc_minor = 5, .sms = 40, .sm_clock_mhz = 1590};
    CHECK(isnan(gpu_clock_peak_tflops(&unknown, GPU_BF16)), "an architecture without a cited rate: no peak");
    gpu_dev h100 = {.mem_clock_mhz = 2619, .bus_bits = 5120};
    CHECK(fabs(gpu_clock_mem_gbps(&h100) - 3352.3) < 0.1, "H100 HBM3: 2 x 2619 MHz x 5120 bits = 3352 GB/s, got %.1f",
          gpu_clock_mem_gbps(&h100));
}

static void test_checks(void)
{
    CHECK(gpu_check_tol(GPU_FP32) < gpu_check_tol(GPU_FP16) && gpu_check_tol(GPU_FP16) < gpu_check_tol(GPU_TF32) &&
              gpu_check_tol(GPU_TF32) < gpu_check_tol(GPU_BF16) && gpu_check_tol(GPU_BF16) <= gpu_check_tol(GPU_FP8),
          "tolerances rise with the rounding of each precision");
    /* bf16 output rounding, 2^-9 relative an element at worst: well inside bf16's tolerance */
    double ref[4] = {1, -2, 3, 0.5}, out[4];
    for (int i = 0; i < 4; i++) out[i] = ref[i] * (1 + (i % 2 ? -1 : 1) * 0x1p-9);
    double e = gpu_rel_err(out, ref, 4);
    CHECK(e > 0 && e <= 0x1p-9 + 1e-12 && e < gpu_check_tol(GPU_BF16), "rounding error %.3g", e);
    out[2] = NAN;
    CHECK(isnan(gpu_rel_err(out, ref, 4)), "a NaN output fails the check");
    double zero[2] = {0, 0};
    CHECK(isnan(gpu_rel_err(zero, zero, 2)), "an all-zero reference checks nothing: NaN");
    CHECK(gpu_dtype_parse("bf16") == GPU_BF16 && gpu_dtype_parse("e4m3") == GPU_FP8 && gpu_dtype_parse("int8") < 0,
          "dtype names");
    double x[5] = {5, 1, 4, 2, 3}, med, lo, hi, cv;
    gpu_stats(x, 5, &med, &lo, &hi, &cv);
    CHECK(med == 3 && lo == 1 && hi == 5 && fabs(cv - 52.7046) < 1e-3, "stats: %g %g %g %g", med, lo, hi, cv);
}

/* The GPU tables start with the CPU tables' columns, in order: readers of `costbench matmul` and
 * `peak` CSVs read them unchanged; the GPU's provenance follows. */
static void test_columns(void)
{
    for (int c = 0; c < MM_NCOLS; c++)
        CHECK(strcmp(gpu_matmul_cols[c].name, mm_cols[c].name) == 0 && gpu_matmul_cols[c].kind == mm_cols[c].kind,
              "matmul column %d: %s, expected %s", c, gpu_matmul_cols[c].name, mm_cols[c].name);
    for (int c = 0; c < PK_NCOLS; c++)
        CHECK(strcmp(gpu_peak_cols[c].name, peak_cols[c].name) == 0, "peak column %d: %s, expected %s", c,
              gpu_peak_cols[c].name, peak_cols[c].name);
    for (int c = 0; c < GC_NCOLS; c++)
        CHECK(strcmp(gpu_matmul_cols[GM_NOWN + c].name, gpu_cols[c].name) == 0 &&
                  strcmp(gpu_peak_cols[GP_NOWN + c].name, gpu_cols[c].name) == 0,
              "provenance column %d: %s", c, gpu_cols[c].name);
    CHECK(strcmp(gpu_matmul_cols[GM_PEAK].name, "peak_gflops") == 0 && strcmp(gpu_cols[GC_DEVICE].name, "device") == 0,
          "peak_gflops and device");
    /* a row written as costbench-gpu writes it reads back by name */
    record r;
    CHECK(record_init(&r, gpu_matmul_cols, GM_NCOLS) == 0, "record");
    int row = record_add_row(&r);
    record_str(&r, row, MM_OP, "linear"), record_num(&r, row, MM_N, 4096), record_num(&r, row, MM_K, 8192);
    record_num(&r, row, MM_M, 8192), record_num(&r, row, MM_GF_MED, 701234.5), record_str(&r, row, MM_DTYPE, "bf16");
    gpu_dev d = {.name = "NVIDIA H100 80GB HBM3", .key = "h100-sxm5-80gb", .cc_major = 9, .sms = 132,
                 .sm_clock_mhz = 1980, .driver = "580.159.04", .runtime = "13.0", .cublaslt = "13.0.2"};
    gpu_cols_fill(&r, row, GM_NOWN, &d);
    machine_info m;
    gpu_machine_info(&m, "nvcc -O3");
    const char *path = test_path("gpu_matmul.csv");
    CHECK(record_write_csv(&r, path, &m) == 0, "written");
    record_free(&r);
    table t;
    CHECK(table_load(&t, path) == 0, "read back");
    int cd = table_col(&t, "device", 1), cg = table_col(&t, "gflops_median", 1), cc = table_col(&t, "cflags", 1);
    CHECK(cd >= 0 && strcmp(table_cell(&t, 0, cd), "h100-sxm5-80gb") == 0, "device column");
    CHECK(cg >= 0 && strcmp(table_cell(&t, 0, cg), "701234.5") == 0, "gflops_median");
    CHECK(cc >= 0 && strcmp(table_cell(&t, 0, cc), "nvcc -O3") == 0, "the host's provenance last");
    table_free(&t);
}

/* Tensor parallelism t: QKV and MLP-up columns and the logits' vocabulary split by t, attention-out
 * and MLP-down rows (their k) split by t; the tokens (n) stay. */
static void test_tp_shapes(void)
{
    model_config c;
    CHECK(model_preset_find("llama2-7b", &c) == 0, "preset");
    mm_shape one[32], two[32];
    int n1 = mm_shapes_transformer_tp(one, 32, &c, 1, 4096, 1), n2 = mm_shapes_transformer_tp(two, 32, &c, 1, 4096, 2);
    CHECK(n1 == 15 && n2 == 15, "15 GEMMs each: %d %d", n1, n2);
    for (int i = 0; i < n1 && i < n2; i++) {
        double f1 = 2.0 * one[i].n * one[i].k * one[i].m, f2 = 2.0 * two[i].n * two[i].k * two[i].m;
        CHECK(fabs(f2 / f1 - 0.5) < 1e-9, "%s %s: a rank does half the FLOPs (%g / %g)", one[i].op, one[i].phase, f2, f1);
    }
    capture_stderr_begin();
    int bad = mm_shapes_transformer_tp(two, 32, &c, 1, 4096, 3);
    const char *err = capture_stderr_end();
    CHECK(bad < 0 && strstr(err, "tensor parallelism 3"), "tp 3 does not split 32 heads: %s", err);
}

/* csvmini.h (the GPU build's CSV parser) and libcsv (everyone else's) read the same files alike:
 * fed through table_load_text here (libcsv), and through csvmini in tests/test_csvmini.c's twin. */
int csvmini_rows(const char *text, char *out, size_t n); /* tests/csvmini_run.c */

static void test_csvmini(void)
{
    static const char *const inputs[] = {
        "a,b,c\n1,2,3\n",
        "a,b\r\n\"x, y\",\"he said \"\"hi\"\"\"\r\n",
        "a,b\n  1 , two words  \n\n\n3,4",
        "a\n\"multi\nline\"\n",
        "a,b\n\"\",\n",
        "a,b\n1,2\"x\n",        /* a quote inside an unquoted field */
        "a,b\n\"open,2\n",      /* an unterminated quoted field */
        "a,b\n\"x\"y,2\n",      /* text after a closing quote */
        "a,b\n \"q\" ,2\n",     /* blanks around a quoted field */
        "a\rb\r",               /* CR line ends */
    };
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        char mini[512], lib[512] = "";
        int rm = csvmini_rows(inputs[i], mini, sizeof mini);
        table t;
        capture_stderr_begin();
        int rl = table_load_text(&t, "in.csv", inputs[i], strlen(inputs[i]));
        capture_stderr_end();
        if (rl == 0) {
            size_t k = 0;
            for (int c = 0; c < t.ncols; c++) k += (size_t)snprintf(lib + k, sizeof lib - k, "[%s]", t.header[c]);
            k += (size_t)snprintf(lib + k, sizeof lib - k, "|");
            for (int r = 0; r < t.nrows; r++) {
                for (int c = 0; c < t.ncols; c++)
                    k += (size_t)snprintf(lib + k, sizeof lib - k, "[%s]", table_cell(&t, r, c));
                k += (size_t)snprintf(lib + k, sizeof lib - k, "|");
            }
            table_free(&t);
        }
        CHECK((rm == 0) == (rl == 0), "input %zu: csvmini %s, libcsv %s", i, rm == 0 ? "reads it" : "refuses it",
              rl == 0 ? "reads it" : "refuses it");
        CHECK(rm != 0 || rl != 0 || strcmp(mini, lib) == 0, "input %zu: csvmini %s, libcsv %s", i, mini, lib);
    }
}

const test_case tests_gpu[] = {
    {"gpu: device names map to data/devices.csv keys", test_device_keys},
    {"gpu: dense peaks from clocks x SMs x FLOP/clk reproduce the data sheets (A100, H100)", test_clock_peaks},
    {"gpu: reference-check tolerances, the error measure (NaN fails), sample statistics", test_checks},
    {"gpu: the GPU tables' columns begin with the CPU tables', the provenance after, read back by name", test_columns},
    {"gpu: --shapes transformer --tp: a rank's GEMMs do 1/tp of the FLOPs", test_tp_shapes},
    {"gpu: csvmini.h (the GPU build's CSV parser) reads and refuses what libcsv does", test_csvmini},
    {0},
};
