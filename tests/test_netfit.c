/* test_netfit.c: collective benchmark outputs fitted into network file rows (report/formats/netfit.h,
 * report/netimportrun.c, through `costbench import`) and the rows used by scale and plan (--net-from).
 *
 * The fixtures in tests/logs/ are written as the benchmarks print them, with times built so the
 * fit's answer is known exactly (up to the printed rounding of the times):
 *   nccl_all_reduce_2x8.txt      all_reduce_perf as nccl-tests 2.17 prints it (src/util.cu
 *                                writeDeviceReport: banner, "#  Rank N Group G Pid P on HOST device D
 *                                [dddd:bb:dd] NAME"; writeResultHeader; writeBenchmarkLinePreamble
 *                                "%12li  %12li  %8s  %6s  %6s"; writeBenchmarkLineBody with
 *                                getFloatStr's widths 7, 6, 6; writeResultFooter), 16 ranks on 2
 *                                hosts: time = 20 us + size x 2(16-1)/16 / 40 GB/s, sizes 1 KiB x 4^k
 *                                to 1 GiB (11 rows, lines 26-36), in-place 1% slower
 *   nccl_all_gather_1x8_old.txt  all_gather_perf as the 2019 version prints it (src/common.cu at
 *                                NCCL 2.4: no banner, "#   Rank N Pid P on HOST device D [0xbb] NAME",
 *                                all_gather.cu print_header without redop and root, "error" columns,
 *                                "%7.2f/%7.1f/%7.0f" times), 8 ranks on one host: time = 10 us +
 *                                size x 7/8 / 150 GB/s, sizes 4 KiB x 2^k to 256 MiB (17 rows)
 *   nccl_reduce_scatter_1x4.txt  reduce_scatter_perf with -c 0 ("N/A" in #wrong) and NCCL INFO lines
 *                                among the rows, 4 ranks on one host: time = 15 us + size x 3/4 /
 *                                100 GB/s, 4 KiB x 2^k to 64 MiB (15 rows)
 *   allreduce_2ranks.csv         `costbench allreduce --csv` (common/schema.h allreduce_cols), 2 ranks:
 *                                allreduce 2 us + size x 1 / 5 GB/s, allgather 1 us + size x 1/2 /
 *                                8 GB/s, 1 KiB x 4^k to 16 MiB (8 rows each, lines 2-9 and 10-17) */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/err.h"
#include "../report/formats/netfit.h"
#include "../src/commands.h"
#include "check.h"

#define LOGS "tests/logs/"

static char g_out[65536], g_err[16384];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

/* `costbench import path` with the flags (NULL-terminated, at most 8) in this process, stderr
 * captured into g_err. */
static int import_net(const char *path, const char *const *flags)
{
    char *argv[16] = {"costbench", "import", (char *)path};
    int a = 3;
    for (int i = 0; flags[i] && i < 8; i++) argv[a++] = (char *)flags[i];
    argv[a] = NULL;
    capture_stderr_begin();
    int rc = cmd_import(a, argv);
    snprintf(g_err, sizeof g_err, "%s", capture_stderr_end());
    return rc;
}

/* Imports `log` into a fresh network file (its path into out) and loads it into nt. */
static int import_load(const char *log, const char *const *flags, char *out, size_t n, net_table *nt)
{
    snprintf(out, n, "%s", test_path("net.csv"));
    unlink(out);
    const char *f[12] = {"--out", out};
    int a = 2;
    for (int i = 0; flags[i] && a < 10; i++) f[a++] = flags[i];
    f[a] = NULL;
    int rc = import_net(log, f);
    CHECK(rc == 0, "import %s: rc %d: %s", log, rc, g_err);
    return rc == 0 ? net_table_load(nt, out) : rc;
}

static int close_to(double x, double ref, double rtol) { return fabs(x - ref) <= rtol * fabs(ref); }

/* The row's key, and its latency (to 0.05 us: the fixtures print times to 0.01 us) and bus
 * bandwidth (to 0.1%) against the figures the fixture was built from. */
static void check_row(const net_row *r, const char *coll, const char *scope, const char *node, int ranks, int nodes,
                      double lat_us, double busbw)
{
    CHECK(strcmp(r->collective, coll) == 0 && strcmp(r->scope, scope) == 0 && strcmp(r->node_type, node) == 0,
          "row %s %s '%s', expected %s %s '%s'", r->collective, r->scope, r->node_type, coll, scope, node);
    CHECK(r->ranks == ranks && r->nodes == nodes && r->ranks_per_node == ranks / nodes, "ranks %d nodes %d per node %d",
          r->ranks, r->nodes, r->ranks_per_node);
    CHECK(fabs(r->latency_us - lat_us) < 0.05, "latency %.6g us, expected %g", r->latency_us, lat_us);
    CHECK(close_to(r->busbw_gb_per_s, busbw, 1e-3), "busbw %.6g GB/s, expected %g", r->busbw_gb_per_s, busbw);
}

static void test_netfit_detect(void)
{
    static const char *const files[4] = {LOGS "nccl_all_reduce_2x8.txt", LOGS "nccl_all_gather_1x8_old.txt",
                                         LOGS "nccl_reduce_scatter_1x4.txt", LOGS "allreduce_2ranks.csv"};
    static const int want[4] = {NETFIT_NCCL, NETFIT_NCCL, NETFIT_NCCL, NETFIT_COSTBENCH};
    for (int i = 0; i < 4; i++) {
        text_lines t;
        CHECK(text_lines_load(&t, files[i]) == 0, "load %s", files[i]);
        CHECK(netfit_detect(&t) == want[i], "%s detected as %d, expected %d", files[i], netfit_detect(&t), want[i]);
        text_lines_free(&t);
    }
    const char *p = test_path("plain.txt");
    write_text(p, "iteration 10/ 100 | elapsed time per iteration (ms): 512.3\n");
    text_lines t;
    CHECK(text_lines_load(&t, p) == 0, "load plain");
    CHECK(netfit_detect(&t) == NETFIT_NONE, "a training log is neither");
    text_lines_free(&t);
}

/* 16 ranks on 2 hosts: across nodes; 20 us and 40 GB/s; the largest size's busbw 2^30 x 1.875 /
 * (20e-6 + 2^30 x 1.875 / 40e9) = 39.984 GB/s; the model's hop latency 20 / min(2, 2) = 10 us. */
static void test_netfit_all_reduce_inter(void)
{
    char out[4096];
    net_table nt;
    const char *flags[] = {"--instance", "p4d.24xlarge", NULL};
    if (import_load(LOGS "nccl_all_reduce_2x8.txt", flags, out, sizeof out, &nt) != 0) return;
    CHECK(nt.n == 1, "one row, got %d", nt.n);
    const net_row *r = &nt.rows[0];
    check_row(r, "all_reduce", "inter", "p4d.24xlarge", 16, 2, 20, 40);
    CHECK(close_to(r->busbw_max_gb_per_s, 39.984, 1e-4), "largest busbw %.6g, expected 39.984", r->busbw_max_gb_per_s);
    CHECK(r->sizes == 11 && r->min_bytes == 1024 && close_to(r->max_bytes, 1073741824.0, 1e-8), "sizes %d %g..%g",
          r->sizes, r->min_bytes, r->max_bytes);
    CHECK(r->r2 > 0.99999, "R^2 %g", r->r2);
    CHECK(strcmp(r->source, "nccl-tests all_reduce_perf in " LOGS "nccl_all_reduce_2x8.txt:26-36") == 0, "source %s",
          r->source);
    CHECK(fabs(netfit_hop_latency_us(r->latency_us, r->nodes) - 10) < 0.05, "hop latency");
    char text[8192];
    slurp(out, text, sizeof text);
    CHECK(strstr(text, "(collective from the banner, line 2), 16 ranks on 2 hosts") &&
              strstr(text, "net_gbit_per_s 320 (busbw x 8, net_eff 1), latency 10 us a hop"),
          "the file's # lines say where it came from and what the model takes: %s", text);
    net_table_free(&nt);
}

/* The 2019 format: no banner, no redop column: all_gather from the columns; 8 ranks on one host:
 * inside a node, the node type the device the rank lines name. */
static void test_netfit_all_gather_old(void)
{
    char out[4096];
    net_table nt;
    const char *flags[] = {NULL};
    if (import_load(LOGS "nccl_all_gather_1x8_old.txt", flags, out, sizeof out, &nt) != 0) return;
    const net_row *r = &nt.rows[0];
    CHECK(nt.n == 1, "one row, got %d", nt.n);
    check_row(r, "all_gather", "intra", "A100-SXM4-80GB", 8, 1, 10, 150);
    CHECK(r->sizes == 17 && r->min_bytes == 4096 && r->max_bytes == 268435456, "sizes %d", r->sizes);
    char text[8192];
    slurp(out, text, sizeof text);
    CHECK(strstr(text, "collective from the columns: no redop"), "says how the collective was known: %s", text);
    net_table_free(&nt);
}

static void test_netfit_reduce_scatter_intra(void)
{
    char out[4096];
    net_table nt;
    const char *flags[] = {NULL};
    if (import_load(LOGS "nccl_reduce_scatter_1x4.txt", flags, out, sizeof out, &nt) != 0) return;
    const net_row *r = &nt.rows[0];
    CHECK(nt.n == 1, "one row, got %d", nt.n);
    check_row(r, "reduce_scatter", "intra", "NVIDIA H100 80GB HBM3", 4, 1, 15, 100);
    CHECK(r->sizes == 15, "15 sizes, got %d", r->sizes);
    net_table_free(&nt);
}

/* Both ops of the CSV, on "this machine", dated by its date_utc column. */
static void test_netfit_costbench_csv(void)
{
    char out[4096];
    net_table nt;
    const char *flags[] = {NULL};
    if (import_load(LOGS "allreduce_2ranks.csv", flags, out, sizeof out, &nt) != 0) return;
    CHECK(nt.n == 2, "two rows, got %d", nt.n);
    if (nt.n != 2) {
        net_table_free(&nt);
        return;
    }
    const net_row *a = &nt.rows[0], *g = &nt.rows[1];
    CHECK(strcmp(a->collective, "all_reduce") == 0 && strcmp(a->scope, "intra") == 0 &&
              strcmp(a->node_type, "this machine") == 0 && a->ranks == 2 && strcmp(a->as_of, "2026-11-24") == 0,
          "all_reduce row %s %s %s %d %s", a->collective, a->scope, a->node_type, a->ranks, a->as_of);
    CHECK(close_to(a->latency_us, 2, 1e-6) && close_to(a->busbw_gb_per_s, 5, 1e-6), "all_reduce %.9g us %.9g GB/s",
          a->latency_us, a->busbw_gb_per_s);
    CHECK(strcmp(g->collective, "all_gather") == 0 && close_to(g->latency_us, 1, 1e-6) &&
              close_to(g->busbw_gb_per_s, 8, 1e-6),
          "all_gather %s %.9g us %.9g GB/s", g->collective, g->latency_us, g->busbw_gb_per_s);
    CHECK(strstr(a->source, "allreduce_2ranks.csv:2-9") && strstr(g->source, "allreduce_2ranks.csv:10-17"),
          "sources %s / %s", a->source, g->source);
    net_table_free(&nt);
}

/* The fixture's text with line `lineno` (1-based) replaced by `with` (NULL: cut there, keeping
 * `keep` characters of it). */
static const char *fixture_edit(const char *name, int lineno, const char *with, size_t keep)
{
    static char text[16384];
    slurp(LOGS "nccl_all_reduce_2x8.txt", text, sizeof text);
    char *p = text;
    for (int i = 1; i < lineno && p; i++) p = strchr(p, '\n'), p = p ? p + 1 : NULL;
    if (!p) return NULL;
    char *eol = strchr(p, '\n');
    static char edited[16384];
    if (with) snprintf(edited, sizeof edited, "%.*s%s%s", (int)(p - text), text, with, eol ? eol : "");
    else snprintf(edited, sizeof edited, "%.*s", (int)(p - text + (ptrdiff_t)keep), text);
    const char *path = test_path(name);
    write_text(path, edited);
    return path;
}

static void expect_error(const char *path, const char *const *flags, const char *want)
{
    int rc = import_net(path, flags);
    CHECK(rc == CB_EUSAGE, "%s: rc %d, expected CB_EUSAGE", path, rc);
    CHECK(count_of(g_err, "error: ") == 1 && strstr(g_err, want), "%s: one error naming '%s': %s", path, want, g_err);
}

static void test_netfit_malformed(void)
{
    const char *none[] = {NULL};
    const char *bad = fixture_edit("bad_row.txt", 30,
                                   "     1048576        262144     float     sum      -1    x.yz  "
                                   "  1.00    1.00       0    70.7   14.83   27.81       0",
                                   0);
    if (bad) expect_error(bad, none, "bad_row.txt:30: column 'time': expected a number");
    const char *cut = fixture_edit("cut.txt", 32, NULL, 40);
    if (cut) expect_error(cut, none, "cut.txt:32: the table's row ends after 3 of its 13 columns");
    const char *plain = test_path("plain2.txt");
    write_text(plain, "hello\nworld\n");
    /* neither a collective benchmark nor a log: `costbench import` says so, naming line 1 */
    expect_error(plain, none,
                 "plain2.txt:1: no step line of Megatron-LM, Megatron-DeepSpeed, NeMo, torchtitan, Composer / "
                 "llm-foundry or costbench train, and no nccl-tests or `costbench allreduce` table");
    const char *csv = test_path("badcheck.csv");
    write_text(csv, "op,ranks,size_bytes,count,time_us_median,time_us_min,time_us_max,algbw_gbps,busbw_gbps,check\n"
                    "allreduce,2,1024,256,2.2,2.1,2.3,0.4,0.4,ok\n"
                    "allreduce,2,4096,1024,2.8,2.7,2.9,1.4,1.4,wrong at 3\n");
    expect_error(csv, none, "badcheck.csv:3: column 'check'");
}

static void test_netfit_flags(void)
{
    const char *inst[] = {"--instance", "p9.nosuch", NULL};
    expect_error(LOGS "nccl_all_reduce_2x8.txt", inst, "flag '--instance': unknown instance type 'p9.nosuch'");
    const char *coll[] = {"--collective", "all_gather", NULL};
    expect_error(LOGS "nccl_all_reduce_2x8.txt", coll,
                 "flag '--collective': all_gather, but " LOGS "nccl_all_reduce_2x8.txt:2 says all_reduce_perf");
    const char *scope[] = {"--scope", "rack", NULL};
    expect_error(LOGS "nccl_all_reduce_2x8.txt", scope, "flag '--scope': expected intra or inter");
}

/* --out appends to a network file; the same collective, scope, node type and ranks again is a
 * conflict naming both (the file unchanged); a file of another kind is never overwritten. */
static void test_netfit_append(void)
{
    char out[4096], before[16384], after[16384];
    net_table nt;
    const char *flags[] = {"--instance", "p4d.24xlarge", NULL};
    if (import_load(LOGS "nccl_all_reduce_2x8.txt", flags, out, sizeof out, &nt) != 0) return;
    net_table_free(&nt);
    const char *f2[] = {"--out", out, "--instance", "p4d.24xlarge", NULL};
    CHECK(import_net(LOGS "nccl_reduce_scatter_1x4.txt", f2) == 0, "append: %s", g_err);
    CHECK(net_table_load(&nt, out) == 0 && nt.n == 2, "two rows after the append");
    net_table_free(&nt);
    slurp(out, before, sizeof before);
    expect_error(LOGS "nccl_all_reduce_2x8.txt", f2,
                 "net.csv:7: already has all_reduce inter p4d.24xlarge at 16 ranks");
    slurp(out, after, sizeof after);
    CHECK(strcmp(before, after) == 0, "a conflict leaves the file as it was");
    const char *other = test_path("prices_like.csv");
    write_text(other, "provider,instance_type\naws,p4d.24xlarge\n");
    const char *f3[] = {"--out", other, NULL};
    expect_error(LOGS "nccl_all_reduce_2x8.txt", f3, "not a network file");
    slurp(other, after, sizeof after);
    CHECK(strcmp(after, "provider,instance_type\naws,p4d.24xlarge\n") == 0, "the other file is untouched");
}

/* Runs scale of pythia-1b on p4d.24xlarge at 2 and 4 nodes with the extra flags, its CSV to csv. */
static int run_scale(const char *csv, const char *a, const char *b, const char *c, const char *d)
{
    const char *args[24] = {"scale", "--model", "pythia-1b", "--instance", "p4d.24xlarge", "--nodes", "2,4",
                            "--global-batch", "512", "--csv", csv, a, b, c, d, NULL};
    return run(args);
}

/* --net-from sets the network as the flags --net-gbps (busbw x 8) and --latency-us (the per-hop
 * latency) would: the two predictions are the same, and differ from the data sheet's. */
static void test_netfit_scale(void)
{
    char net[4096];
    net_table nt;
    const char *flags[] = {"--instance", "p4d.24xlarge", NULL};
    if (import_load(LOGS "nccl_all_reduce_2x8.txt", flags, net, sizeof net, &nt) != 0) return;
    char gbps[64], lat[64];
    snprintf(gbps, sizeof gbps, "%.17g", nt.rows[0].busbw_gb_per_s * 8);
    snprintf(lat, sizeof lat, "%.17g", netfit_hop_latency_us(nt.rows[0].latency_us, nt.rows[0].nodes));
    net_table_free(&nt);
    char c0[4096], c1[4096], c2[4096];
    snprintf(c0, sizeof c0, "%s", test_path("sheet.csv"));
    snprintf(c1, sizeof c1, "%s", test_path("measured.csv"));
    snprintf(c2, sizeof c2, "%s", test_path("flags.csv"));
    CHECK(run_scale(c0, NULL, NULL, NULL, NULL) == 0, "scale: %s", g_err);
    CHECK(run_scale(c1, "--net-from", net, NULL, NULL) == 0, "scale --net-from: %s", g_err);
    CHECK(strstr(g_out, "# network: measured (") &&
              strstr(g_out, "nccl-tests all_reduce_perf on 16 ranks over 2 nodes of p4d.24xlarge): 40 GB/s bus "
                            "bandwidth, 20 us latency (10 us a hop), in place of the hardware table's 400 Gbit/s"),
          "the # network line: %s", g_out);
    CHECK(run_scale(c2, "--net-gbps", gbps, "--latency-us", lat) == 0, "scale --net-gbps: %s", g_err);
    double s0[4], s1[4], s2[4];
    int n0 = csv_column(c0, "dp_comm_s", s0, 4), n1 = csv_column(c1, "dp_comm_s", s1, 4),
        n2 = csv_column(c2, "dp_comm_s", s2, 4);
    CHECK(n0 == 2 && n1 == 2 && n2 == 2, "rows %d %d %d", n0, n1, n2);
    for (int i = 0; i < 2 && n1 == 2 && n2 == 2 && n0 == 2; i++) {
        CHECK(s1[i] == s2[i], "--net-from %.9g s = the flags' %.9g s", s1[i], s2[i]);
        CHECK(s1[i] > s0[i], "320 Gbit/s measured is slower than the 400 of the data sheet: %.9g vs %.9g", s1[i],
              s0[i]);
    }
}

static void test_netfit_scale_errors(void)
{
    char net[4096];
    net_table nt;
    const char *flags[] = {"--instance", "p4d.24xlarge", NULL};
    if (import_load(LOGS "nccl_all_reduce_2x8.txt", flags, net, sizeof net, &nt) != 0) return;
    net_table_free(&nt);
    const char *c = test_path("x.csv");
    int rc = run_scale(c, "--net-from", net, "--net-gbps", "100");
    CHECK(rc == 2 && strstr(g_err, "flag '--net-from': give it alone, not with '--net-gbps'"), "conflict: %d %s", rc,
          g_err);
    const char *args[] = {"scale", "--model", "pythia-1b", "--instance", "p5.48xlarge", "--nodes", "2",
                          "--global-batch", "512", "--net-from", net, NULL};
    rc = run(args);
    CHECK(rc == 2 && count_of(g_err, "error: ") == 1 &&
              strstr(g_err, "no all_reduce row for node type 'p5.48xlarge' (it has: p4d.24xlarge)") &&
              strstr(g_err, net),
          "unknown node type: %d %s", rc, g_err);
}

/* plan: the candidates the file measured get its network, the others are named. */
static void test_netfit_plan(void)
{
    char net[4096];
    net_table nt;
    const char *flags[] = {"--instance", "p4d.24xlarge", NULL};
    if (import_load(LOGS "nccl_all_reduce_2x8.txt", flags, net, sizeof net, &nt) != 0) return;
    net_table_free(&nt);
    const char *args[] = {"plan",        "--model", "pythia-1b", "--tokens",   "10B", "--deadline-days",
                          "30",          "--instances", "p4d.24xlarge,p5.48xlarge", "--max-nodes", "8",
                          "--net-from", net,         NULL};
    int rc = run(args);
    CHECK(rc == 0, "plan --net-from: %d %s", rc, g_err);
    CHECK(strstr(g_out, "# p4d.24xlarge: network: measured (") &&
              strstr(g_out, "in place of the hardware table's 400 Gbit/s") &&
              strstr(g_out, "for: p5.48xlarge (the hardware table's)"),
          "plan notes: %s", g_out);
}

/* A calibration row on an instance the network file measured reads the measured network in plan
 * as in scale: both carry the same framework efficiency phi (plan used to calibrate on the
 * hardware table's network and predict on the measured one). */
static void test_netfit_plan_calibrated(void)
{
    char net[4096], cal[4096];
    net_table nt;
    const char *flags[] = {"--instance", "p4d.24xlarge", NULL};
    if (import_load(LOGS "nccl_all_reduce_2x8.txt", flags, net, sizeof net, &nt) != 0) return;
    net_table_free(&nt);
    snprintf(cal, sizeof cal, "%s", test_path("cal.csv"));
    write_text(cal, "model,instances,instance_type,seq_len,global_batch,seq_per_s,precision\n"
                    "pythia-1b,2,p4d.24xlarge,2048,512,140,bf16-mixed\n");
    char spec[4200];
    snprintf(spec, sizeof spec, "%s:2", cal);
    const char *sc[] = {"scale", "--calibrate", spec, "--model", "pythia-1b", "--instance", "p4d.24xlarge", "--nodes",
                        "2", "--seq", "2048", "--global-batch", "512", "--net-from", net, NULL};
    CHECK(run(sc) == 0, "scale: %s", g_err);
    const char *p = strstr(g_out, "# calibration pythia-1b: t_device ");
    double phi_scale = p && strstr(p, " phi ") ? atof(strstr(p, " phi ") + 5) : NAN;
    const char *pl[] = {"plan", "--model", "pythia-1b", "--tokens", "10B", "--deadline-days", "30", "--instances",
                        "p4d.24xlarge", "--calibrate", spec, "--seq", "2048", "--global-batch", "512", "--net-from",
                        net, NULL};
    CHECK(run(pl) == 0, "plan: %s", g_err);
    p = strstr(g_out, "its framework efficiency ");
    double phi_plan = p ? atof(p + 25) : NAN;
    CHECK(fabs(phi_plan - phi_scale) < 1e-3 * phi_scale, "phi: plan %g, scale %g", phi_plan, phi_scale);
}


/* Real nccl-tests outputs (tests/logs/README.md: sources and the hand arithmetic of each figure).
 * The rank count from the table's busbw / algbw where the rank list is elided or absent, the nodes
 * from --instance's accelerators per node; busbw the plateau's median, latency the small sizes'. */
static void test_netfit_real_outputs(void)
{
    static const struct {
        const char *file, *instance, *scope;
        int ranks, nodes;
        double busbw, latency_us;
    } want[] = {
        {"nccl-tests_2022_coreweave-a100-mpijob-5of32-ranks-elided.txt", "p4d.24xlarge", "inter", 32, 4, 157.745, 0},
        {"nccl-tests_2023_coreweave-h100-64-mpijob-ranklist-elided.txt", "p5.48xlarge", "inter", 96, 12, 383.23, 0},
        {"nccl-tests_2024_awsome-eks-2xp5-tagoutput-rows-elided.txt", "p5.48xlarge", "inter", 16, 2, 437.79, 0},
        {"nccl-tests_2025_awsome-batch-tagoutput-full-table.txt", "p5.48xlarge", "intra", 8, 1, 480.69, 16.745},
        {"nccl-tests_2025_awsome-topology-16node-rows-elided.txt", "p5en.48xlarge", "inter", 128, 16, 370.53, 167.3},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char path[512], out[4096];
        net_table nt;
        snprintf(path, sizeof path, LOGS "%s", want[i].file);
        const char *flags[] = {"--instance", want[i].instance, NULL};
        if (import_load(path, flags, out, sizeof out, &nt) != 0) continue;
        const net_row *r = &nt.rows[0];
        CHECK(nt.n == 1 && strcmp(r->collective, "all_reduce") == 0 && strcmp(r->scope, want[i].scope) == 0 &&
                  r->ranks == want[i].ranks && r->nodes == want[i].nodes,
              "%s: %s %s %d ranks %d nodes, expected all_reduce %s %d %d", want[i].file, r->collective, r->scope,
              r->ranks, r->nodes, want[i].scope, want[i].ranks, want[i].nodes);
        CHECK(close_to(r->busbw_gb_per_s, want[i].busbw, 1e-3), "%s: busbw %.6g, expected %g", want[i].file,
              r->busbw_gb_per_s, want[i].busbw);
        CHECK(fabs(r->latency_us - want[i].latency_us) < 0.05, "%s: latency %.6g us, expected %g", want[i].file,
              r->latency_us, want[i].latency_us);
        net_table_free(&nt);
    }
    /* the full table: the plateau honoured (480.69 against 483.05 measured; the 1/t^2 least squares
     * gave 413.1, 14.5% under) */
    char out[4096], text[8192];
    net_table nt;
    const char *f[] = {"--instance", "p5.48xlarge", NULL};
    if (import_load(LOGS "nccl-tests_2025_awsome-batch-tagoutput-full-table.txt", f, out, sizeof out, &nt) == 0) {
        CHECK(nt.rows[0].busbw_gb_per_s > 0.99 * nt.rows[0].busbw_max_gb_per_s, "busbw %g against the plateau %g",
              nt.rows[0].busbw_gb_per_s, nt.rows[0].busbw_max_gb_per_s);
        slurp(out, text, sizeof text);
        CHECK(strstr(text, "8 ranks from the table's busbw / algbw 1.7500") &&
                  strstr(text, "'mpirun --tag-output' tags read off every line") &&
                  strstr(text, "latency 16.75 us (median over the 17 latency-bound sizes"),
              "the # lines say where ranks, busbw and latency came from: %s", text);
        net_table_free(&nt);
    }
}

/* What the elided outputs need and what they refuse: no --instance, the nodes are unknown (the
 * GB200 excerpt shows rank 71 alone: 72 ranks, its nodes not said); the tagged output with
 * --collective is nccl-tests, not a training log; the 5 visible rank lines are not 5 ranks. */
static void test_netfit_real_refusals(void)
{
    const char *none[] = {NULL};
    expect_error(LOGS "nccl-tests_2025_coreweave-gb200-nvl72-last-rank-only.txt", none,
                 "72 ranks, but the rank lines do not list them all (1 shown; the rank lines list 1 ranks numbered up "
                 "to 71: 72 ranks from the table's busbw / algbw 1.97");
    expect_error(LOGS "nccl-tests_2022_coreweave-a100-mpijob-5of32-ranks-elided.txt", none,
                 "32 ranks, but the rank lines do not list them all (5 shown; the rank list is elided at line 17");
    char out[4096];
    net_table nt;
    const char *coll[] = {"--collective", "all_reduce", "--instance", "p5.48xlarge", NULL};
    if (import_load(LOGS "nccl-tests_2024_awsome-eks-2xp5-tagoutput-rows-elided.txt", coll, out, sizeof out, &nt) == 0) {
        CHECK(nt.n == 1 && nt.rows[0].ranks == 16 && nt.rows[0].nodes == 2, "tagged output with --collective");
        net_table_free(&nt);
    }
    const char *plain = test_path("ratio.txt");
    const char *hdr = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
                      "algbw   busbw #wrong\n";
    char text[2048];
    /* 0.97 / 0.50 within their printed digits: 0.965 / 0.505 .. 0.975 / 0.495 = 1.911 .. 1.970, n = 2 / (2 - r)
     * = 22.5 .. 66.4: 23 to 66 ranks, not decided */
    snprintf(text, sizeof text, "%s     1048576        262144     float     sum      -1   2000.0    0.50    0.97      0 "
                                "  2000.0    0.50    0.97      0\n", hdr);
    write_text(plain, text);
    const char *inst[] = {"--instance", "p4d.24xlarge", NULL};
    expect_error(plain, inst, "allows 23 to 66 ranks for all_reduce: the number of ranks is not decided");
    /* rank 40 shown, the ratio says 32: no count fits both */
    snprintf(text, sizeof text, "# nThread 1 nGpus 1\n#  Rank 40 Group  0 Pid 1 on h-a device  0 [0x01] X\n...\n%s"
                                "  2147483648     536870912     float     sum      -1    26476   81.11  157.15      0"
                                "    26677   80.50  155.97      0\n", hdr);
    write_text(plain, text);
    expect_error(plain, inst, "allows no count of at least the highest rank seen");
}

const test_case tests_netfit[] = {
    {"netfit: a calibration on a measured instance reads the measured network (plan as scale)",
     test_netfit_plan_calibrated},
    {"netfit: detect nccl-tests, costbench CSV, neither", test_netfit_detect},
    {"netfit: all_reduce_perf across 2 nodes of 8", test_netfit_all_reduce_inter},
    {"netfit: all_gather_perf, 2019 format, inside a node", test_netfit_all_gather_old},
    {"netfit: reduce_scatter_perf inside a node, N/A and NCCL INFO lines", test_netfit_reduce_scatter_intra},
    {"netfit: costbench allreduce CSV", test_netfit_costbench_csv},
    {"netfit: malformed outputs name their line", test_netfit_malformed},
    {"netfit: bad flags", test_netfit_flags},
    {"netfit: --out appends, conflicts and other files refused", test_netfit_append},
    {"netfit: scale --net-from as the model says", test_netfit_scale},
    {"netfit: scale --net-from errors", test_netfit_scale_errors},
    {"netfit: plan --net-from", test_netfit_plan},
    {"netfit: real nccl-tests outputs: ranks from busbw / algbw, nodes from --instance, the plateau", test_netfit_real_outputs},
    {"netfit: real nccl-tests outputs: what is refused and why", test_netfit_real_refusals},
    {NULL, NULL},
};
