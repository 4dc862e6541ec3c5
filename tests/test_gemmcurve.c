/* A GPU matmul CSV as a device curve of the step model (report/formats/gemmcurve.h; issue 32, the
 * feed). The fixture tests/gemm/synthetic_h100.csv is SYNTHETIC (tests/gemm/README.md): its bf16
 * sweep's e = gflops_median / 989500 GFLOP/s (h100-sxm5-80gb's data-sheet BF16 peak) is a round
 * number at each (k, n), its fp8 sweep 0.50 of the FP8 peak everywhere. Worked by hand:
 *   - the grid: e(k 4096, n 4096) = 643175 / 989500 = 0.65; e(k 1024, n 32768) = 0.60;
 *   - between points, log-linear: k 2048 is halfway from 1024 to 4096 in log, so e(2048, 4096) =
 *     (0.50 + 0.65) / 2 = 0.575; outside, clamped: e(65536, 131072) = e(16384, 32768) = 0.80;
 *   - a GEMM's time without its launch scales by e_cited / e_measured: at n = k = m = 4096 on the
 *     cited figures e = 0.84 x f(4096)^3, f(x) = x / (x + h), h the device's gemm_half_dim;
 *   - fp32 runs stay on the cited figures (the step model's fp32 peak is the CUDA-core one).
 * Refusals name file:line; `--gemm cited` gives today's output byte for byte; a CPU matmul CSV
 * still needs --calibrate; data/gemm/DEVICE.csv is picked up (a temporary data directory). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../report/formats/gemmcurve.h"
#include "../report/predict/stepmodel.h"
#include "check.h"

#define FIXTURE "tests/gemm/synthetic_h100.csv"

static char g_out[262144], g_out2[262144], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

static void test_gemm_grid(void)
{
    dev_table dt = {0};
    gemm_dev_curve *c = malloc(sizeof *c);
    CHECK(c && devices_load(&dt, NULL) == 0, "the device table loads");
    if (!c || dt.n == 0) {
        free(c);
        return;
    }
    CHECK(gemm_dev_curve_load(c, FIXTURE, &dt) == 0, "the synthetic GPU CSV loads");
    const matmul_curve *g = &c->grid[GEMM_BF16], *g8 = &c->grid[GEMM_FP8];
    CHECK(strcmp(c->device, "h100-sxm5-80gb") == 0 && c->peak_gflops[GEMM_BF16] == 989500.0 &&
              c->peak_gflops[GEMM_FP8] == 1979000.0,
          "device %s, peaks %g %g GFLOP/s (data/devices.csv)", c->device, c->peak_gflops[GEMM_BF16],
          c->peak_gflops[GEMM_FP8]);
    CHECK(g->nk == 3 && g->nn == 3 && g->k[0] == 1024 && g->k[2] == 16384 && g->n[2] == 32768, "a 3 x 3 bf16 grid");
    CHECK(fabs(g->e[1][1] - 0.65) < 1e-12 && fabs(g->e[0][2] - 0.60) < 1e-12 && fabs(g->e[2][2] - 0.80) < 1e-12,
          "e per cell = gflops / the data-sheet peak: %.17g %.17g %.17g", g->e[1][1], g->e[0][2], g->e[2][2]);
    CHECK(g8->nk == 3 && fabs(g8->e[2][0] - 0.5) < 1e-12, "fp8 e 0.5 of the FP8 peak: %.17g", g8->e[2][0]);
    CHECK(c->grid[GEMM_FP16].nk == 0 && c->grid[GEMM_TF32].nk == 0, "dtypes not measured: no grid");
    CHECK(strcmp(c->cublaslt, "13.0.2") == 0 && strcmp(c->date, "2026-11-27") == 0, "provenance %s %s", c->cublaslt,
          c->date);
    int variant = 0;
    for (int i = 0; i < c->nnames; i++) variant |= strcmp(c->names[i], "h100-sxm5-96gb") == 0;
    CHECK(variant, "the curve applies to the variant rows of its family (h100-sxm5-96gb)");
    CHECK(fabs(scale_eff(g, 2048, 4096, NULL) - 0.575) < 1e-12, "log-linear between points: %.17g",
          scale_eff(g, 2048, 4096, NULL));
    int clamped = 0;
    CHECK(fabs(scale_eff(g, 65536, 131072, &clamped) - 0.80) < 1e-12 && clamped, "clamped at the edge");
    devices_free(&dt);
    free(c);
}

/* A model of one rank of `device` at precision p on the curves s (NULL: cited). */
static void model_on(scale_model *m, const dev_table *dt, const char *device, train_precision p, const gemm_curves *s)
{
    memset(m, 0, sizeof *m);
    hw_from_device(devices_find(dt, device), 8, NAN, NAN, &m->hw);
    m->precision = p, m->gemm_measured = s, m->tp = m->pp = m->cp = 1;
}

static void test_gemm_step_ratio(void)
{
    dev_table dt = {0};
    gemm_curves s = {0};
    if (devices_load(&dt, NULL) != 0) {
        CHECK(0, "the device table loads");
        return;
    }
    CHECK(gemm_curves_load(&s, &dt, FIXTURE) == 0 && s.n == 1, "the curves: the flag's file");
    op_entry op = {.name = "qkv", .kind = OPK_GEMM, .n = 4096, .k = 4096, .m = 4096, .count = 1};
    op.flops = 2.0 * 4096 * 4096 * 4096;
    scale_model cited, meas;
    model_on(&cited, &dt, "h100-sxm5-80gb", PRECISION_BF16_MIXED, NULL);
    model_on(&meas, &dt, "h100-sxm5-80gb", PRECISION_BF16_MIXED, &s);
    double launch = (cited.hw.launch_us > 0 ? cited.hw.launch_us : STEP_LAUNCH_US) * 1e-6;
    double h = cited.hw.gemm_half_dim > 0 ? cited.hw.gemm_half_dim : STEP_GEMM_HALF_DIM, f = 4096 / (4096 + h);
    double e_cited = cited.hw.gemm_eff * f * f * f;
    double tc = step_op_time(&cited, &op) - launch, tm = step_op_time(&meas, &op) - launch;
    CHECK(fabs(tc / tm - 0.65 / e_cited) < 1e-9, "the GEMM's time scales by e_measured / e_cited: %.17g vs %.17g",
          tc / tm, 0.65 / e_cited);
    CHECK(fabs(tm - op.flops / (0.65 * 989.5e12)) < 1e-15, "on the curve: flops / (e x the BF16 peak): %.17g", tm);
    op.fp8 = 1; /* an fp8 GEMM on the fp8 grid against the FP8 peak */
    meas.fp8 = 1;
    CHECK(fabs(step_op_time(&meas, &op) - launch - op.flops / (0.5 * 1979e12)) < 1e-15, "fp8: e 0.5 of the FP8 peak");
    op.fp8 = 0;
    scale_model v, f32c, f32m;
    model_on(&v, &dt, "h100-sxm5-96gb", PRECISION_BF16_MIXED, &s);
    CHECK(step_op_time(&v, &op) == step_op_time(&meas, &op) && step_device_curve(&v) == &s.c[0],
          "a variant row of the family runs on its curve");
    char vl[1024];
    step_gemm_source(&v, vl, sizeof vl);
    CHECK(strstr(vl, "GEMMs on h100-sxm5-96gb: its family h100-sxm5-80gb's measured curve"), "says so: %s", vl);
    double t16 = step_op_time(&meas, &op);
    s.c[0].grid[GEMM_FP16] = s.c[0].grid[GEMM_BF16], s.c[0].grid[GEMM_BF16].nk = 0; /* only fp16 measured */
    meas.prof.valid = 0;
    step_gemm_source(&meas, vl, sizeof vl);
    CHECK(step_op_time(&meas, &op) == t16 && strstr(vl, "; fp16 e 0.40-0.80"),
          "only fp16 measured: 16-bit GEMMs on it (its peak, 989.5, the same): %s", vl);
    s.c[0].grid[GEMM_BF16] = s.c[0].grid[GEMM_FP16], s.c[0].grid[GEMM_FP16].nk = 0;
    model_on(&f32c, &dt, "h100-sxm5-80gb", PRECISION_FP32, NULL);
    model_on(&f32m, &dt, "h100-sxm5-80gb", PRECISION_FP32, &s);
    CHECK(step_op_time(&f32c, &op) == step_op_time(&f32m, &op) && !step_device_curve(&f32m),
          "fp32 stays on the cited figures");
    char line[1024];
    step_gemm_source(&f32m, line, sizeof line);
    CHECK(strstr(line, "cited figures") && strstr(line, "not used at fp32"), "fp32 says why: %s", line);
    step_gemm_source(&meas, line, sizeof line);
    CHECK(strstr(line, "GEMMs on h100-sxm5-80gb: measured curve " FIXTURE " (NVIDIA H100 80GB HBM3 (synthetic), "
                       "cuBLASLt 13.0.2, 2026-11-27; bf16 e 0.40-0.80 over k 1024-16384, n 1024-32768"),
          "the line: %s", line);
    model_on(&cited, &dt, "a100-sxm4-80gb", PRECISION_BF16_MIXED, &s);
    step_gemm_source(&cited, line, sizeof line);
    CHECK(strcmp(line, "GEMMs on a100-sxm4-80gb: cited figures (gemm_eff 0.91 x shape factors, data/devices.csv)") == 0,
          "another device: %s", line);
    gemm_curves_free(&s);
    devices_free(&dt);
}

/* The fixture with line `line` (1: the header) replaced by `with` (NULL: dropped), into path. */
static void fixture_edit(const char *path, int line, const char *with)
{
    static char text[65536], out[65536];
    slurp(FIXTURE, text, sizeof text);
    out[0] = '\0';
    int l = 1;
    for (char *p = text, *nl; *p; p = nl + 1, l++) {
        nl = strchr(p, '\n');
        if (!nl) break;
        if (l != line) strncat(out, p, (size_t)(nl - p + 1));
        else if (with) strcat(strcat(out, with), "\n");
    }
    write_text(path, out);
}

/* Line `line` of the fixture with its `col`-th comma-separated cell (0-based) set to v. */
static void cell_set(int line, int col, const char *v, char *buf, size_t n)
{
    static char text[65536];
    slurp(FIXTURE, text, sizeof text);
    char *p = text;
    for (int l = 1; l < line; l++) p = strchr(p, '\n') + 1;
    char *end = strchr(p, '\n'), *c = p;
    for (int i = 0; i < col; i++) c = strchr(c, ',') + 1;
    char *ce = strchr(c, ',');
    snprintf(buf, n, "%.*s%s%.*s", (int)(c - p), p, v, (int)(end - ce), ce);
}

static void refused(const char *path, const char *want, const char *what)
{
    const char *a[] = {"scale", "--model", "llama2-7b", "--instance", "p5.48xlarge", "--global-batch", "512",
                       "--matmul-csv", path, NULL};
    int rc = run(a);
    CHECK(rc == 2 && strstr(g_err, want) && count_of(g_err, "error:") == 1, "%s: exit %d, want '%s': %s", what, rc,
          want, g_err);
}

static void test_gemm_refusals(void)
{
    char *d = test_tmpdir(), path[256], want[640], line[2048];
    if (!d) return;
    snprintf(path, sizeof path, "%s/gpu.csv", d);
    enum { C_GF = 6, C_DTYPE = 13, C_DEVICE = 20 };
    cell_set(2, C_DEVICE, "nosuch-gpu", line, sizeof line), fixture_edit(path, 2, line);
    snprintf(want, sizeof want, "%s:2: column 'device': 'nosuch-gpu' is not a device of", path);
    refused(path, want, "a device not in data/devices.csv");
    cell_set(5, C_DEVICE, "a100-sxm4-80gb", line, sizeof line), fixture_edit(path, 5, line);
    snprintf(want, sizeof want, "%s:5: column 'device': 'a100-sxm4-80gb' after 'h100-sxm5-80gb'", path);
    refused(path, want, "two devices in one file");
    cell_set(3, C_DTYPE, "int8", line, sizeof line), fixture_edit(path, 3, line);
    snprintf(want, sizeof want, "%s:3: column 'dtype': expected fp32, tf32, fp16, bf16 or fp8, got 'int8'", path);
    refused(path, want, "an unknown dtype");
    fixture_edit(path, 6, NULL); /* k 4096, n 4096 dropped */
    snprintf(want, sizeof want, "%s:2: bf16 sweep: no row for k 4096, n 4096", path);
    refused(path, want, "a grid with a missing cell");
    cell_set(4, C_GF, "1000000", line, sizeof line), fixture_edit(path, 4, line);
    snprintf(want, sizeof want, "%s:4: column 'gflops_median': 1000000 GFLOP/s is 1.011 of h100-sxm5-80gb's", path);
    refused(path, want, "e > 1");
    rm_tree(d);
}

/* A temporary data directory: a copy of data/ with the fixture as data/gemm/h100-sxm5-80gb.csv. */
/* A copy of data/ whose data/gemm/ holds the synthetic curve (with), or no curve (the figures
 * without any: what --gemm cited must reproduce). */
static int data_curve_copy(char *dir, size_t n, char *env, size_t en, int with)
{
    char *d = test_tmpdir(), cmd[1024];
    if (!d) return -1;
    snprintf(dir, n, "%s", d);
    if (with)
        snprintf(cmd, sizeof cmd, "cp -r data/. %s/ && mkdir -p %s/gemm && cp " FIXTURE " %s/gemm/h100-sxm5-80gb.csv", d,
                 d, d);
    else
        snprintf(cmd, sizeof cmd, "cp -r data/. %s/ && rm -f %s/gemm/*.csv", d, d);
    const char *sh[] = {"sh", "-c", cmd, NULL};
    int rc = cmd_run(sh, NULL, 0, NULL, 0);
    CHECK(rc == 0, "cannot prepare %s", d);
    snprintf(env, en, "COSTBENCH_DATA=%s", d);
    return rc;
}

static int data_with_curve(char *dir, size_t n, char *env, size_t en) { return data_curve_copy(dir, n, env, en, 1); }

/* `costbench ARGS` with env (NULL: none) into out. */
static int run_env(const char *env, const char *const *args, char *out, size_t on)
{
    const char *a[48];
    int k = 0;
    if (env) a[k++] = "env", a[k++] = env;
    a[k++] = g_costbench;
    for (int i = 0; args[i] && k < 47; i++) a[k++] = args[i];
    a[k] = NULL;
    return cmd_run(a, out, on, g_err, sizeof g_err);
}

static void test_gemm_validate(void)
{
    char dir[256], env[300], dir0[256], env0[300];
    if (data_with_curve(dir, sizeof dir, env, sizeof env) != 0 || data_curve_copy(dir0, sizeof dir0, env0, sizeof env0, 0))
        return;
    const char *base[] = {"validate", "data/reference/published/megatron_bridge_25.09.csv",
                          "data/reference/published/megatron_bridge_25.11.csv", "--calibrate", "none", NULL};
    const char *cited[] = {"validate", "data/reference/published/megatron_bridge_25.09.csv",
                           "data/reference/published/megatron_bridge_25.11.csv", "--calibrate", "none", "--gemm",
                           "cited", NULL};
    int rc0 = run_env(env0, base, g_out, sizeof g_out), rc1 = run_env(env, base, g_out2, sizeof g_out2);
    CHECK(rc0 == 0 && rc1 == 0, "exit %d %d: %s", rc0, rc1, g_err);
    CHECK(strstr(g_out2, "# GEMMs on h100-sxm5-80gb: measured curve data/gemm/h100-sxm5-80gb.csv (NVIDIA H100 80GB "
                         "HBM3 (synthetic), cuBLASLt 13.0.2, 2026-11-27; bf16 e 0.40-0.80") &&
              strstr(g_out2, "GEMMs on the measured curve of h100-sxm5-80gb") && !strstr(g_out, "measured curve"),
          "data/gemm/ picked up; the line and each H100 row's note say so: %.2000s", g_out2);
    CHECK(strcmp(g_out, g_out2) != 0, "the H100 rows' predictions change on the curve");
    int rc2 = run_env(env, cited, g_out2, sizeof g_out2);
    CHECK(rc2 == 0 && strcmp(g_out, g_out2) == 0, "--gemm cited gives the output without a curve exactly (exit %d)", rc2);
    rc2 = run_env(NULL, cited, g_out2, sizeof g_out2);
    CHECK(rc2 == 0 && strcmp(g_out, g_out2) == 0, "... and so on the shipped tables (exit %d)", rc2);
    rm_tree(dir), rm_tree(dir0);
}

static void test_gemm_plan(void)
{
    const char *base[] = {"plan", "--model", "llama2-7b", "--tokens", "100B", "--deadline-days", "30", "--instances",
                          "p5.48xlarge", "--max-nodes", "16", NULL};
    const char *meas[] = {"plan", "--model", "llama2-7b", "--tokens", "100B", "--deadline-days", "30", "--instances",
                          "p5.48xlarge", "--max-nodes", "16", "--matmul-csv", FIXTURE, NULL};
    const char *cited[] = {"plan", "--model", "llama2-7b", "--tokens", "100B", "--deadline-days", "30", "--instances",
                           "p5.48xlarge", "--max-nodes", "16", "--gemm", "cited", NULL};
    char dir0[256], env0[300];
    if (data_curve_copy(dir0, sizeof dir0, env0, sizeof env0, 0) != 0) return;
    int rc0 = run_env(env0, base, g_out, sizeof g_out), rc1 = run_env(env0, meas, g_out2, sizeof g_out2);
    CHECK(rc0 == 0 && rc1 == 0, "exit %d %d: %s", rc0, rc1, g_err);
    CHECK(strstr(g_out2, "# GEMMs on h100-sxm5-80gb: measured curve " FIXTURE) &&
              strstr(g_out, "# GEMMs on h100-sxm5-80gb: cited figures (gemm_eff 0.84 x shape factors"),
          "plan says which, per device: %.3000s", g_out2);
    CHECK(strcmp(g_out, g_out2) != 0, "the plan's figures change on the curve");
    char csv[256];
    snprintf(csv, sizeof csv, "%s", test_path("plan.csv"));
    const char *meas_csv[] = {"plan", "--model", "llama2-7b", "--tokens", "100B", "--deadline-days", "30",
                              "--instances", "p5.48xlarge", "--max-nodes", "16", "--matmul-csv", FIXTURE, "--csv", csv,
                              NULL};
    CHECK(run_env(NULL, meas_csv, g_out2, sizeof g_out2) == 0, "plan --csv: %s", g_err);
    static char text[65536];
    slurp(csv, text, sizeof text);
    CHECK(strstr(text, "GEMMs on the measured curve of h100-sxm5-80gb"), "the why column says so: %.1000s", text);
    int rc2 = run_env(env0, cited, g_out2, sizeof g_out2);
    CHECK(rc2 == 0 && strcmp(g_out, g_out2) == 0, "--gemm cited is the plan without a curve exactly (exit %d)", rc2);
    /* and on the shipped tables (their curve left out): the same but for the tables' directory */
    rc2 = run_env(NULL, cited, g_out2, sizeof g_out2);
    const char *a = strstr(g_out, "# GEMMs on"), *b = strstr(g_out2, "# GEMMs on");
    CHECK(rc2 == 0 && a && b && strcmp(a, b) == 0, "--gemm cited on the shipped tables (exit %d)", rc2);
    rm_tree(dir0);
}

static void test_gemm_flags(void)
{
    char *d = test_tmpdir(), cpu[256], bad[640];
    if (!d) return;
    snprintf(cpu, sizeof cpu, "%s/cpu.csv", d);
    write_text(cpu, "op,phase,n,k,m,gflops_median,pct_of_peak,dtype\nlinear,fwd,512,512,512,100,50,fp32\n");
    const char *a[] = {"scale", "--model", "llama2-7b", "--instance", "p5.48xlarge", "--global-batch", "512",
                       "--matmul-csv", cpu, NULL};
    int rc = run(a);
    CHECK(rc == 2 && strstr(g_err, "flag '--matmul-csv' needs '--calibrate' for a CPU matmul CSV"),
          "a CPU matmul CSV keeps needing --calibrate: exit %d: %s", rc, g_err);
    const char *p[] = {"plan", "--model", "llama2-7b", "--tokens", "100B", "--deadline-days", "30", "--matmul-csv",
                       cpu, NULL};
    rc = run(p);
    CHECK(rc == 2 && strstr(g_err, "needs '--calibrate'"), "plan too: exit %d: %s", rc, g_err);
    const char *g[] = {"scale", "--model", "llama2-7b", "--instance", "p5.48xlarge", "--global-batch", "512",
                       "--gemm", "guessed", NULL};
    rc = run(g);
    CHECK(rc == 2 && strstr(g_err, "flag '--gemm': expected measured or cited, got 'guessed'"), "exit %d: %s", rc,
          g_err);
    const char *both[] = {"scale", "--model", "llama2-7b", "--instance", "p5.48xlarge", "--global-batch", "512",
                          "--gemm", "cited", "--matmul-csv", FIXTURE, NULL};
    rc = run(both);
    CHECK(rc == 2 && strstr(g_err, "flag '--gemm': 'cited' leaves out the measured curve"), "exit %d: %s", rc, g_err);
    /* a shipped file whose rows are another device's than its name */
    char dir[256], env[300];
    if (data_with_curve(dir, sizeof dir, env, sizeof env) == 0) {
        snprintf(bad, sizeof bad, "mv %s/gemm/h100-sxm5-80gb.csv %s/gemm/a100-sxm4-80gb.csv", dir, dir);
        const char *sh[] = {"sh", "-c", bad, NULL};
        CHECK(cmd_run(sh, NULL, 0, NULL, 0) == 0, "mv");
        const char *s[] = {"scale", "--model", "llama2-7b", "--instance", "p5.48xlarge", "--global-batch", "512", NULL};
        rc = run_env(env, s, g_out, sizeof g_out);
        CHECK(rc == 1 && strstr(g_err, "its rows are on 'h100-sxm5-80gb', its name says 'a100-sxm4-80gb'"),
              "a misnamed data/gemm file: exit %d: %s", rc, g_err);
        rm_tree(dir);
    }
    rm_tree(d);
}

/* scale says which figures and when a GEMM falls outside the grid (n = seq 512 < 1024); devices lists the curve. */
static void test_gemm_scale_devices(void)
{
    const char *a[] = {"scale", "--model", "llama2-7b", "--instance", "p5.48xlarge", "--seq", "512", "--global-batch",
                       "512", "--matmul-csv", FIXTURE, NULL};
    int rc = run(a);
    CHECK(rc == 0 && strstr(g_out, "# GEMMs on h100-sxm5-80gb: measured curve " FIXTURE) &&
              strstr(g_out, "# some GEMMs' k or n lie outside the measured curve's grid"),
          "scale: the line and the clamp: exit %d: %.2000s %s", rc, g_out, g_err);
    const char *b[] = {"scale", "--model", "llama2-7b", "--instance", "p4d.24xlarge", "--global-batch", "512",
                       "--matmul-csv", FIXTURE, NULL};
    rc = run(b);
    CHECK(rc == 0 && strstr(g_out, "# GEMMs on a100-sxm4-40gb: cited figures (gemm_eff 0.91 x shape factors"),
          "another device keeps the cited figures: exit %d: %.2000s %s", rc, g_out, g_err);
    char dir[256], env[300];
    if (data_with_curve(dir, sizeof dir, env, sizeof env) != 0) return;
    const char *dv[] = {"devices", NULL};
    rc = run_env(env, dv, g_out, sizeof g_out);
    CHECK(rc == 0 && strstr(g_out, "# h100-sxm5-80gb: measured GEMM curve data/gemm/h100-sxm5-80gb.csv (NVIDIA H100 "
                                   "80GB HBM3 (synthetic), bf16, fp8)"),
          "devices lists the measured curve: exit %d: %s", rc, g_err);
    rc = run_env(NULL, dv, g_out, sizeof g_out);
    CHECK(rc == 0 && strstr(g_out, "# h100-sxm5-80gb: measured GEMM curve data/gemm/h100-sxm5-80gb.csv (NVIDIA H100 "
                                   "80GB HBM3, tf32, fp16, bf16, fp8)"),
          "the shipped H100 curve (measured by costbench-gpu) listed: %.1500s", g_out);
    rm_tree(dir);
}

const test_case tests_gemmcurve[] = {
    {"gemm curve: a synthetic GPU matmul CSV into a grid, e = gflops / the data-sheet peak (worked by hand)",
     test_gemm_grid},
    {"gemm curve: a GEMM's time scales by the curve's e against the cited figures; fp8 on its grid; fp32 cited",
     test_gemm_step_ratio},
    {"gemm curve: refusals name file:line (unknown device, two devices, dtype, missing cell, e > 1)",
     test_gemm_refusals},
    {"gemm curve: validate picks up data/gemm/, each H100 row says so; --gemm cited is today's output exactly",
     test_gemm_validate},
    {"gemm curve: plan on an H100 with and without the curve, the why column; --gemm cited is today's plan",
     test_gemm_plan},
    {"gemm curve: a CPU matmul CSV keeps needing --calibrate; --gemm's values; a misnamed data/gemm file",
     test_gemm_flags},
    {"gemm curve: scale says which figures per device and when a GEMM falls outside; devices lists the curve",
     test_gemm_scale_devices},
    {NULL, NULL},
};
