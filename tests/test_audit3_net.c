/* test_audit3_net.c: regression tests of the third audit: network files, nccl-tests tables, validate's
 * refused rows (issue 28: #8, #12's nccl part, #13, #14). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/csvio.h"
#include "check.h"

#define NCCL "tests/logs/nccl_all_reduce_2x8.txt"

static char g_out[1 << 17], g_err[1 << 14];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

/* One error line, naming `want`, and exit 2. */
static void expect_refused(int rc, const char *what, const char *want)
{
    CHECK(rc == 2 && count_of(g_err, "error: ") == 1 && strstr(g_err, want), "%s: exit %d, expected 2 and one error "
          "naming '%s': %s", what, rc, want, g_err);
}

/* The fixture's text edited: each line (each rank line when ranks_only) copied `times` times,
 * then the whole text `pastes` times; written to name; its path. */
static const char *nccl_edited(const char *name, int times, int ranks_only, int pastes)
{
    static char text[16384], out[65536];
    slurp(NCCL, text, sizeof text);
    size_t len = 0;
    for (int p = 0; p < pastes; p++)
        for (const char *l = text; *l;) {
            const char *eol = strchr(l, '\n');
            int n = eol ? (int)(eol - l + 1) : (int)strlen(l);
            int k = ranks_only && !memmem(l, (size_t)n, "Rank", 4) ? 1 : times;
            for (int i = 0; i < k && len + (size_t)n < sizeof out; i++)
                len += (size_t)snprintf(out + len, sizeof out - len, "%.*s", n, l);
            l += n;
        }
    const char *path = test_path(name);
    write_text(path, out);
    return path;
}

/* #8: the rank lines repeated count each rank once (16 ranks, the fixture's 40 GB/s); the whole
 * output pasted twice is refused, naming the second table. */
static void test_nccl_twice(void)
{
    const char *rep = nccl_edited("ranks_twice.txt", 2, 1, 1), *net = test_path("net8.csv");
    const char *a[] = {"import", rep, "--instance", "p4d.24xlarge", "--out", net, NULL};
    remove(net);
    int rc = run(a);
    table t;
    int ok = rc == 0 && table_load(&t, net) == 0;
    CHECK(ok, "rank lines repeated: exit %d: %s", rc, g_err);
    if (ok) {
        int cr = table_col(&t, "ranks", 1), cb = table_col(&t, "busbw_gb_per_s", 1);
        double busbw = strtod(table_cell(&t, 0, cb), NULL);
        CHECK(t.nrows == 1 && strcmp(table_cell(&t, 0, cr), "16") == 0 && fabs(busbw / 40 - 1) < 1e-3,
              "rank lines repeated: 16 ranks and 40 GB/s, got %s ranks and %g GB/s", table_cell(&t, 0, cr), busbw);
        table_free(&t);
    }
    const char *twice = nccl_edited("pasted_twice.txt", 1, 0, 2);
    const char *b[] = {"import", twice, "--instance", "p4d.24xlarge", NULL};
    expect_refused(run(b), "output pasted twice", "pasted_twice.txt:42: a second nccl-tests run");
}

/* #12 (nccl part): a row whose size is nan, inf or -1 is an error naming its line, as a flag's
 * number would be; a line inside the table that is not a row is named in the notes. */
static void test_nccl_numbers(void)
{
    static const char *const bad[3] = {"nan", "inf", "-1"};
    char text[16384], edited[20000];
    slurp(NCCL, text, sizeof text);
    char *row = strstr(text, "     1048576        262144");
    for (int k = 0; k < 3 && row; k++) {
        snprintf(edited, sizeof edited, "%.*s%12s%s", (int)(row - text), text, bad[k], row + 12);
        const char *p = test_path("nccl_badsize.txt");
        write_text(p, edited);
        const char *a[] = {"import", p, "--instance", "p4d.24xlarge", NULL};
        char want[128];
        snprintf(want, sizeof want, "nccl_badsize.txt:31: column 'size': expected a number");
        expect_refused(run(a), bad[k], want);
    }
    if (row) {
        snprintf(edited, sizeof edited, "%.*sgarbage line\n%s", (int)(row - text), text, row);
        const char *p = test_path("nccl_garbage.txt");
        write_text(p, edited);
        const char *a[] = {"import", p, "--instance", "p4d.24xlarge", NULL};
        int rc = run(a);
        CHECK(rc == 0 && strstr(g_out, "1 line inside the table that is not a row left out (line 31)"),
              "a line that is not a row is named: exit %d: %s %s", rc, g_out, g_err);
    }
}

static const char g_nethead[] = "collective,scope,node_type,ranks,nodes,ranks_per_node,latency_us,busbw_gb_per_s,"
                                "busbw_max_gb_per_s,sizes,min_bytes,max_bytes,r2,source,as_of\n";

/* A network file of the header and `rows`; scale --net-from it; the exit status. */
static int scale_net(const char *rows)
{
    char text[4096];
    snprintf(text, sizeof text, "%s%s", g_nethead, rows);
    const char *net = test_path("net13.csv");
    write_text(net, text);
    const char *a[] = {"scale", "--model", "pythia-1b", "--instance", "p4d.24xlarge", "--nodes", "2,4",
                       "--global-batch", "512", "--net-from", net, NULL};
    return run(a);
}

#define NETROW(ranks, nodes, per, lat, bw, as_of)                                                                     \
    "all_reduce,inter,p4d.24xlarge," ranks "," nodes "," per "," lat "," bw ",39.98,11,1024,1073741824,0.99999,"      \
    "nccl-tests all_reduce_perf in x.txt:26-36," as_of "\n"

/* #13: the loader refuses what cannot be a measurement: a date that does not exist, the same row
 * twice, ranks that are not nodes x ranks per node, a bus bandwidth or latency no network has;
 * --scope inter on one host is an error naming the flag. */
static void test_netfile_rules(void)
{
    CHECK(scale_net(NETROW("16", "2", "8", "20", "40", "2026-11-24")) == 0, "a good row: %s", g_err);
    expect_refused(scale_net(NETROW("16", "2", "8", "20", "40", "2024-13-45")), "as_of", "net13.csv:2: column 'as_of'");
    expect_refused(scale_net(NETROW("16", "2", "8", "20", "40", "abcdefghij")), "as_of", "net13.csv:2: column 'as_of'");
    expect_refused(scale_net(NETROW("16", "2", "8", "20", "40", "2026-11-24") NETROW("16", "2", "8", "25", "30",
                                                                                    "2026-11-25")),
                   "duplicate", "net13.csv:3: the same collective, scope, node type and ranks as line 2");
    expect_refused(scale_net(NETROW("16", "2", "4", "20", "40", "2026-11-24")), "ranks",
                   "net13.csv:2: column 'ranks': 16, but nodes x ranks_per_node is 2 x 4 = 8");
    expect_refused(scale_net(NETROW("16", "2", "8", "20", "1e-9", "2026-11-24")), "busbw",
                   "net13.csv:2: column 'busbw_gb_per_s'");
    expect_refused(scale_net(NETROW("16", "2", "8", "1e9", "40", "2026-11-24")), "latency",
                   "net13.csv:2: column 'latency_us'");
    const char *one = "tests/logs/nccl_all_gather_1x8_old.txt", *net = test_path("net13b.csv");
    remove(net);
    const char *a[] = {"import", one, "--scope", "inter", "--out", net, NULL};
    expect_refused(run(a), "--scope inter on one host", "flag '--scope': inter, but");
    FILE *f = fopen(net, "r");
    CHECK(!f, "nothing written");
    if (f) fclose(f);
    /* the importer checks its rows with the loader's rule: a costbench CSV's impossible date */
    const char *csv = test_path("ar_baddate.csv");
    write_text(csv, "op,ranks,size_bytes,count,time_us_median,check,date_utc\n"
                    "allreduce,2,1024,256,2.2048,ok,2024-13-45T11:28:51Z\n"
                    "allreduce,2,4096,1024,2.8192,ok,2024-13-45T11:28:51Z\n");
    const char *b[] = {"import", csv, "--out", net, NULL};
    expect_refused(run(b), "a costbench CSV's date", "column 'as_of'");
    f = fopen(net, "r");
    CHECK(!f, "nothing written for a row the loader would refuse");
    if (f) fclose(f);
}

static const char g_pubhead[] = "id,source,framework,device,devices,devices_per_node,node_net_gbps,instance_type,model,"
                                "arch,layers,d_model,heads,kv_heads,ffn_dim,vocab,params,tied_embeddings,seq_len,"
                                "global_batch,micro_batch,tp,pp,dp,cp,vp,sequence_parallel,sharding,recompute,"
                                "precision,metric,value,flop_convention,peak_tflops,seq_per_s,notes\n";
#define PUBROW(id, sps)                                                                                                \
    id ",made up for tests,megatron-lm,a100-sxm4-80gb,32,8,800,,gpt-1.3b,gpt,24,2048,16,,,50304,,false,2048,256,2," \
       "2,2,8,,1,false,zero1,none,bf16-mixed,seq_per_s," sps ",,," sps ",\n"

/* #14: a published row that implies 4,400% MFU: `scale --calibrate` refuses it, and validate
 * refuses it with the same reason (no prediction, no naive figure) and counts it. */
static void test_validate_refuses_impossible(void)
{
    const char *pub = test_path("pub14.csv"), *csv = test_path("val14.csv"), *sum = test_path("sum14.csv");
    char text[4096];
    snprintf(text, sizeof text, "%s%s%s", g_pubhead, PUBROW("orig", "150"), PUBROW("hot", "24000"));
    write_text(pub, text);
    char spec[512];
    snprintf(spec, sizeof spec, "%s:hot", pub);
    const char *s[] = {"scale", "--calibrate", spec, "--model", "gpt3-1.3b", "--instance", "p4d.24xlarge", "--nodes",
                       "4", "--global-batch", "256", NULL};
    int rc = run(s);
    const char *why = strstr(g_err, "pub14.csv:3: ");
    char reason[512] = "";
    if (why) snprintf(reason, sizeof reason, "%.*s", (int)strcspn(why + 13, "\n"), why + 13);
    CHECK(rc == 2 && strstr(reason, "seq/s of gpt-1.3b") && strstr(reason, "impossible"),
          "scale --calibrate refuses it: %d %s", rc, g_err);
    const char *v[] = {"validate", pub, "--csv", csv, "--summary-csv", sum, NULL};
    rc = run(v);
    table t;
    int ok = rc == 0 && table_load(&t, csv) == 0;
    CHECK(ok, "validate: exit %d: %s", rc, g_err);
    if (!ok) return;
    int cp = table_col(&t, "predicted_seq_per_s", 1), cn = table_col(&t, "note", 1), ci = table_col(&t, "id", 1),
        cv = table_col(&t, "naive_seq_per_s", 1);
    for (int i = 0; i < t.nrows; i++) {
        if (strcmp(table_cell(&t, i, ci), "hot") != 0) continue;
        CHECK(*table_cell(&t, i, cp) == '\0' && *table_cell(&t, i, cv) == '\0',
              "validate: the row is not scored: predicted '%s', naive '%s'", table_cell(&t, i, cp),
              table_cell(&t, i, cv));
        CHECK(reason[0] && strstr(table_cell(&t, i, cn), "refused: ") && strstr(table_cell(&t, i, cn), reason),
              "validate: the note gives scale's reason '%s': '%s'", reason, table_cell(&t, i, cn));
    }
    table_free(&t);
    double refused[2] = {0};
    CHECK(csv_column(sum, "refused", refused, 2) == 1 && refused[0] == 1, "the summary counts it: %g", refused[0]);
}

const test_case tests_audit3_net[] = {
    {"audit3 net: #8 nccl-tests rank lines repeated count once; the output pasted twice is refused", test_nccl_twice},
    {"audit3 net: #12 nccl rows of nan, inf or -1 are errors; other lines in the table are named", test_nccl_numbers},
    {"audit3 net: #13 network files: as_of, duplicates, ranks, ranges; --scope inter on one host",
     test_netfile_rules},
    {"audit3 net: #14 validate refuses an impossible published row as scale --calibrate does, and counts it",
     test_validate_refuses_impossible},
    {NULL, NULL},
};
