/* costbench scale --calibrate: one throughput row of one configuration carried to another by
 * MFU_t = MFU_c x e(K_t, N_t) / e(K_c, N_c). Worked by hand on a made-up instance (8 accelerators
 * of 100 dense BF16 TFLOP/s, one rank each, no memory bandwidth or device link listed) where a
 * one-node step is exactly m x t_mb: the same configuration gives the row back, twice the width
 * scales the MFU by e(2K)/e(K) = (1 + 512/2048) / (1 + 512/4096) = 10/9. --matmul-csv's
 * interpolation on a 2 x 2 grid; bad rows and LINEs give one error line and the exit code. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../report/predict/scale.h"
#include "check.h"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

static const char g_hw[] =
    "instance_type,accelerator,accelerators,workers_per_accelerator,bf16_tflops,fp32_tflops,mem_gib,mem_gb_per_s,"
    "intra_node_gb_per_s,network_gbit_per_s,network_latency_us,source\n"
    "toy.8x,Toy,8,1,100,25,80,,,100,,made up for tests\n";
static const char g_head[] =
    "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n";

typedef struct {
    char dir[64], hw[128], rows[128], csv[128];
} calib_files;

/* A temp dir with the toy hardware table and a throughput file of `rows` (after the header). */
static int files_make(calib_files *f, const char *rows)
{
    char *d = test_tmpdir();
    if (!d) return -1;
    snprintf(f->dir, sizeof f->dir, "%s", d);
    snprintf(f->hw, sizeof f->hw, "%s/hardware.csv", d);
    snprintf(f->rows, sizeof f->rows, "%s/rows.csv", d);
    snprintf(f->csv, sizeof f->csv, "%s/out.csv", d);
    write_text(f->hw, g_hw);
    char text[2048];
    snprintf(text, sizeof text, "%s%s", g_head, rows);
    write_text(f->rows, text);
    return 0;
}

/* costbench scale --calibrate spec on the toy instance, target `model`, tp 8, global batch 64, 1 node. */
static int run_toy(const calib_files *f, const char *spec, const char *model, const char *extra)
{
    const char *args[32] = {"scale", "--calibrate", spec, "--model", model, "--instance", "toy.8x", "--hardware", f->hw,
                            "--usd-per-hour", "10", "--tp", "8", "--seq", "2048", "--global-batch", "64", "--nodes",
                            "1", "--csv", f->csv};
    int a = 21;
    if (extra) args[a++] = "--matmul-csv", args[a++] = extra;
    args[a] = NULL;
    return run(args);
}

static void test_calib_same_config(void)
{
    calib_files f;
    if (files_make(&f, "gpt3-1.3b,8,1,1,toy.8x,2048,64,10\n") != 0) return;
    char spec[160];
    snprintf(spec, sizeof spec, "%s:2", f.rows);
    int rc = run_toy(&f, spec, "gpt3-1.3b", NULL);
    CHECK(rc == 0, "exit %d: %s", rc, g_err);
    double seqs[4], mfu[4];
    CHECK(csv_column(f.csv, "seq_per_s", seqs, 4) == 1 && fabs(seqs[0] / 10.0 - 1) < 1e-8, "the row back: %.17g seq/s",
          seqs[0]);
    double mfu_cal = note_value(g_out, "# calibration gpt3-1.3b", "compute MFU "),
           mfu_t = note_value(g_out, "# target gpt3-1.3b", "compute MFU ");
    /* one node, one replica, nothing but compute: the step's MFU column is the compute MFU */
    CHECK(csv_column(f.csv, "mfu", mfu, 4) == 1 && fabs(mfu[0] / (100 * mfu_cal) - 1) < 1e-8, "mfu %.17g vs %.17g",
          mfu[0], mfu_cal);
    CHECK(mfu_t == mfu_cal && mfu_cal > 0.05 && mfu_cal < 0.5, "MFU carried unchanged: %.17g -> %.17g", mfu_cal, mfu_t);
    double phi = note_value(g_out, "# calibration gpt3-1.3b", " phi "),
           td = note_value(g_out, "# calibration gpt3-1.3b", "t_device ");
    CHECK(fabs(phi * 0.1 / td - 1) < 1e-8, "phi = t_device / t_mb: %.17g vs %.17g / 0.1", phi, td);
    CHECK(strstr(g_out, "# rule: phi = t_device(calibration) / t_mb(calibration)") &&
              strstr(g_out, "f(x) = x / (x + 128)"),
          "the rule and the device model's constants in the output: %s", g_out);
    rm_tree(f.dir);
}

static void test_calib_double_width(void)
{
    calib_files f;
    if (files_make(&f, "gpt3-1.3b,8,1,1,toy.8x,2048,64,10\n") != 0) return;
    int rc = run_toy(&f, f.rows, "gpt3-6.7b", NULL); /* the file's only row, without :LINE */
    CHECK(rc == 0, "exit %d: %s", rc, g_err);
    double mfu_cal = note_value(g_out, "# calibration gpt3-1.3b", "compute MFU "),
           mfu_t = note_value(g_out, "# target gpt3-6.7b", "compute MFU ");
    /* the framework efficiency carries unchanged; the target's time is its own device time over it */
    double phi_c = note_value(g_out, "# calibration", " phi "), phi_t = note_value(g_out, "# target", " phi ");
    double td_t = note_value(g_out, "# target", "t_device "), tmb_t = note_value(g_out, "# target", "t_mb ");
    CHECK(phi_c == phi_t && phi_c > 0, "phi carried: %.17g -> %.17g", phi_c, phi_t);
    CHECK(fabs(tmb_t * phi_t / td_t - 1) < 1e-8, "t_mb = t_device / phi: %.17g vs %.17g / %.17g", tmb_t, td_t, phi_t);
    /* a wider model's GEMMs are wider: a higher compute MFU, by less than the width's own e(2K) / e(K) bound of 2 */
    CHECK(mfu_t > mfu_cal && mfu_t < 2 * mfu_cal, "MFU rises with the width: %.17g -> %.17g", mfu_cal, mfu_t);
    double mfu[4];
    CHECK(csv_column(f.csv, "mfu", mfu, 4) == 1 && fabs(mfu[0] / (100 * mfu_t) - 1) < 1e-8,
          "target mfu column %.17g vs %.17g", mfu[0], mfu_t);
    rm_tree(f.dir);
}

/* A 2 x 2 grid: K 2048, 4096 x N 128, 512; between them log-linear, outside clamped. */
static void test_calib_matmul_csv(void)
{
    char *d = test_tmpdir(), path[128];
    if (!d) return;
    snprintf(path, sizeof path, "%s/mm.csv", d);
    write_text(
        path,
        "op,n,k,m,pct_of_peak\nqkv,128,2048,6144,40\nqkv,512,2048,6144,50\nqkv,128,4096,12288,60\nmlp,512,4096,16384,"
        "70\nqkv,512,4096,12288,90\n");
    scale_eff_curve c;
    CHECK(matmul_curve_load(&c, path) == 0 && c.nk == 2 && c.nn == 2, "loaded a 2 x 2 grid");
    int cl = 0;
    CHECK(fabs(scale_eff(&c, 2048, 256, &cl) - 45) < 1e-12 && !cl, "e(2048, 256) = 45 (log-middle of 40 and 50)");
    CHECK(fabs(scale_eff(&c, 4096, 256, &cl) - 70) < 1e-12 && !cl, "e(4096, 256): the mean 80 at N 512, so 70");
    CHECK(fabs(scale_eff(&c, sqrt(2048.0 * 4096.0), 128, &cl) - 50) < 1e-9 && !cl, "log-middle in K");
    CHECK(fabs(scale_eff(&c, 16384, 4096, &cl) - 80) < 1e-12 && cl, "clamped above, and says so");
    write_text(path, "n,k,gflops_median\n128,2048,1\n512,4096,2\n");
    capture_stderr_begin();
    int rc = matmul_curve_load(&c, path);
    const char *e = capture_stderr_end();
    CHECK(rc == CB_EFAIL && strstr(e, "no row for k 2048, n 512"), "a grid with a hole is refused: %s", e);
    rm_tree(d);
}

/* One error line starting "error: " (and `want` in it) and the exit code. */
static void expect_error(int rc, int want_rc, const char *want, const char *what)
{
    CHECK(rc == want_rc, "%s: exit %d, expected %d: %s", what, rc, want_rc, g_err);
    const char *nl = strchr(g_err, '\n');
    CHECK(strncmp(g_err, "error: ", 7) == 0 && (!nl || !strstr(nl + 1, "error: ")), "%s: one error line: %s", what,
          g_err);
    CHECK(strstr(g_err, want) != NULL, "%s: '%s' in %s", what, want, g_err);
}

static void test_calib_bad_input(void)
{
    calib_files f;
    if (files_make(&f, "gpt3-1.3b,8,1,1,toy.8x,2048,64,10\nnosuch-model,8,1,1,toy.8x,2048,64,10\n"
                       "gpt3-1.3b,8,1,1,toy.9x,2048,64,10\n") != 0)
        return;
    char spec[160];
    snprintf(spec, sizeof spec, "%s:3", f.rows);
    expect_error(run_toy(&f, spec, "gpt3-1.3b", NULL), 2, ":3: column 'model': unknown model preset 'nosuch-model'",
                 "unknown model");
    CHECK(strstr(g_err, "hint: `costbench models`") != NULL, "hint names the command: %s", g_err);
    snprintf(spec, sizeof spec, "%s:4", f.rows);
    expect_error(run_toy(&f, spec, "gpt3-1.3b", NULL), 2, ":4: column 'instance_type': unknown instance type 'toy.9x'",
                 "unknown instance");
    snprintf(spec, sizeof spec, "%s:1", f.rows);
    expect_error(run_toy(&f, spec, "gpt3-1.3b", NULL), 2, "rows.csv:1: not a data row (data rows: lines 2, 3, 4)",
                 "LINE the header");
    expect_error(run_toy(&f, f.rows, "gpt3-1.3b", NULL), 2, "has 3 data rows (lines 2, 3, 4); name one as",
                 "no LINE, 3 rows");
    write_text(f.rows,
               "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n"
               "gpt3-1.3b,8,1,1,toy.8x,2048,64,fast\n");
    snprintf(spec, sizeof spec, "%s:2", f.rows);
    expect_error(run_toy(&f, spec, "gpt3-1.3b", NULL), 2, "rows.csv:2: column 'seq_per_s'", "unparseable row");
    expect_error(run_toy(&f, "/nonexistent/rows.csv:2", "gpt3-1.3b", NULL), 2, "/nonexistent/rows.csv",
                 "unreadable file");
    rm_tree(f.dir);
}

/* --d-model overrides the preset as train does: the target is the wider model (its device time
 * about 4x, its MFU higher); a config model_config_check refuses names the flag (exit 2). */
static void test_calib_overrides(void)
{
    calib_files f;
    if (files_make(&f, "gpt3-1.3b,8,1,1,toy.8x,2048,64,10\n") != 0) return;
    const char *args[] = {"scale", "--calibrate", f.rows, "--model", "gpt3-1.3b", "--d-model", "4096", "--instance",
                          "toy.8x", "--hardware", f.hw, "--usd-per-hour", "10", "--tp", "8", "--seq", "2048",
                          "--global-batch", "64", "--nodes", "1", NULL};
    int rc = run(args);
    CHECK(rc == 0, "exit %d: %s", rc, g_err);
    double mfu_cal = note_value(g_out, "# calibration gpt3-1.3b", "compute MFU "),
           mfu_t = note_value(g_out, "# target gpt3-1.3b-custom", "compute MFU ");
    double td = note_value(g_out, "# target gpt3-1.3b-custom", "t_device "),
           td_c = note_value(g_out, "# calibration gpt3-1.3b", "t_device ");
    /* the target is the overridden model: twice the width, about four times the GEMM work per layer */
    CHECK(td > 3 * td_c && mfu_t > mfu_cal, "--d-model 4096: t_device %.17g vs %.17g, MFU %.17g -> %.17g", td, td_c,
          mfu_cal, mfu_t);
    const char *bad[] = {"scale", "--model", "llama2-7b", "--kv-heads", "5", "--instance", "p5.48xlarge",
                         "--global-batch", "64", NULL};
    expect_error(run(bad), 2, "flags '--heads' / '--kv-heads'", "--kv-heads 5 of 32 heads");
    rm_tree(f.dir);
}

/* --global-batch as a list: one batch per node count, each row of the CSV at its own batch, the
 * compare rows matched at their node count's batch; a list of another length is a usage error. */
static void test_scale_batch_list(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char csv[600];
    snprintf(csv, sizeof csv, "%s/s.csv", dir);
    const char *ok[] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4",
                        "--nodes", "4,8,16", "--global-batch", "16384,16384,8192", "--base-nodes", "4",
                        "--base-seq-per-s", "13.6", "--compare", "data/reference/trn1_table1.csv", "--csv", csv, NULL};
    CHECK(run(ok) == 0, "batch list: %s", g_err);
    double gb[4], meas[4];
    CHECK(csv_column(csv, "global_batch", gb, 4) == 3 && gb[0] == 16384 && gb[1] == 16384 && gb[2] == 8192,
          "global_batch column: %g %g %g", gb[0], gb[1], gb[2]);
    /* Table 1 has 8 nodes at 16384 (26.8 seq/s) and 16 nodes only at 16384: matched at 8, not at 16 */
    CHECK(csv_column(csv, "measured_seq_per_s", meas, 4) == 3 && meas[1] == 26.8 && !(meas[2] > 0),
          "measured column: %g %g", meas[1], meas[2]);
    const char *bad[] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--nodes", "4,8",
                         "--global-batch", "1,2,3", "--base-nodes", "4", "--base-seq-per-s", "13.6", NULL};
    expect_error(run(bad), 2, "flag '--global-batch': 3 values for 2 node counts", "a batch list of the wrong length");
    rm_tree(dir);
}

/* The memory model's attention term by hand: neox-20b, seq 2048, micro-batch 1, TP 8: tiled
 * (flash) attention or selective recomputation drop 5 a s / (h t) = 5 x 64 x 2048 / (6144 x 8)
 * = 13.33 s b h bytes a layer, 44 x 2048 x 6144 x 13.33 bytes = 6.875 GiB per rank. */
static void test_scale_attention_memory(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    double mem[3][2];
    const char *modes[3][2] = {{"--attention", "full"}, {"--attention", "flash"}, {"--selective-recompute", NULL}};
    for (int i = 0; i < 3; i++) {
        char csv[600];
        snprintf(csv, sizeof csv, "%s/m%d.csv", dir, i);
        const char *a[] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp", "8", "--pp", "4",
                           "--global-batch", "16384", "--nodes", "4", "--base-nodes", "4", "--base-seq-per-s", "13.6",
                           "--csv", csv, modes[i][0], modes[i][1], NULL};
        CHECK(run(a) == 0 && csv_column(csv, "mem_per_rank_gib", mem[i], 2) == 1, "%s: %s", modes[i][0], g_err);
    }
    double want = 44.0 * 2048 * 6144 * (5.0 * 64 * 2048 / (6144.0 * 8)) / 1073741824.0;
    CHECK(fabs(mem[0][0] - mem[1][0] - want) < 0.01 && mem[1][0] == mem[2][0],
          "memory full %.4f, flash %.4f, selective %.4f GiB; want a %.4f GiB drop", mem[0][0], mem[1][0], mem[2][0],
          want);
    const char *bad[] = {"scale", "--model", "neox-20b", "--instance", "trn1.32xlarge", "--global-batch", "16384",
                         "--attention", "sparse", NULL};
    expect_error(run(bad), 2, "flag '--attention': expected full or flash", "--attention sparse");
    rm_tree(dir);
}

const test_case tests_calib[] = {
    {"scale: --attention flash and --selective-recompute drop the s x s scores from memory (worked by hand)",
     test_scale_attention_memory},
    {"scale: --global-batch per node count; a list of another length is refused", test_scale_batch_list},
    {"calibrate: the same configuration gives the row back; its compute MFU is the mfu column (to the CSV's 9 digits)",
     test_calib_same_config},
    {"calibrate: twice the width carries phi unchanged; the target takes its own device time over it",
     test_calib_double_width},
    {"calibrate: --matmul-csv interpolates log-linearly on its grid and clamps outside", test_calib_matmul_csv},
    {"calibrate: bad rows, LINEs and files give one error line and the exit code", test_calib_bad_input},
    {"calibrate: --d-model overrides the target's preset; a bad override names its flag", test_calib_overrides},
    {NULL, NULL},
};
