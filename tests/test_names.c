/* test_names.c: no file refused for a name (issue 30, point 5). A device variant resolves through
 * its family (data/devices.csv's `family` column) with its own figures; an unknown device or
 * instance type is an error of its row, counted in validate's summary, while the rest of the file
 * is predicted; a published `A/B` instance runs on the first of the two the hardware table knows;
 * an unknown framework runs on plain's features and says so; --framework X stays refused. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../report/formats/devices.h"
#include "../report/formats/inputs.h"
#include "../report/formats/published.h"
#include "../report/predict/pubmodel.h"
#include "check.h"

static char g_out[1 << 18], g_err[1 << 15];

/* The variants of data/devices.csv: their own figures, every other one the family's. */
static void test_variants(void)
{
    dev_table dt;
    if (devices_load(&dt, NULL) != 0) {
        CHECK(0, "data/devices.csv does not load");
        return;
    }
    const dev_row *h = devices_find(&dt, "h100-sxm5-80gb"), *a = devices_find(&dt, "a100-sxm4-80gb");
    const char *h96[] = {"h100-sxm5-96gb", "h100-96gb-hbm2e"};
    for (int k = 0; h && k < 2; k++) {
        const dev_row *v = devices_find(&dt, h96[k]);
        CHECK(v && v->hbm_gib == 96 && v->bf16_tflops == h->bf16_tflops && v->fp8_tflops == h->fp8_tflops &&
                  v->hbm_gb_per_s == h->hbm_gb_per_s && v->link_gb_per_s == h->link_gb_per_s &&
                  v->workers == h->workers && v->scaleup_domain == h->scaleup_domain &&
                  !isnan(v->gemm_eff) && v->gemm_eff == h->gemm_eff && strcmp(v->vendor, h->vendor) == 0,
              "%s: 96 GiB, the rest its family's", h96[k]);
        CHECK(v && strcmp(v->family, "h100-sxm5-80gb") == 0 && strcmp(v->own, "hbm_gib 96") == 0, "%s: family '%s' own '%s'",
              h96[k], v ? v->family : "", v ? v->own : "");
        char note[400];
        if (v) devices_family_note(v, note, sizeof note);
        CHECK(v && strstr(note, "resolved through family h100-sxm5-80gb (its own: hbm_gib 96)"), "note '%s'",
              v ? note : "");
    }
    /* H100 NVL, NVIDIA's data sheet: 1,671 BF16 and 3,341 FP8 TFLOPS with sparsity, 94 GB at 3.9 TB/s */
    const dev_row *nvl = devices_find(&dt, "h100-nvl-94gb"), *pcie = devices_find(&dt, "h100-pcie-80gb");
    CHECK(nvl && nvl->bf16_tflops == 1671 / 2.0 && nvl->fp8_tflops == 3341 / 2.0 && nvl->hbm_gib == 94 &&
              nvl->hbm_gb_per_s == 3900 && nvl->scaleup_domain == 2 && h && nvl->gemm_eff == h->gemm_eff,
          "h100-nvl-94gb");
    CHECK(pcie && pcie->bf16_tflops == 1513 / 2.0 && pcie->hbm_gib == 80 && pcie->hbm_gb_per_s == 2000, "h100-pcie-80gb");
    /* a spelling without the form factor: the SXM4 part, every figure its own row's */
    const dev_row *a80 = devices_find(&dt, "a100-80gb");
    CHECK(a80 && a && a80->bf16_tflops == a->bf16_tflops && a80->hbm_gib == a->hbm_gib &&
              a80->hbm_gb_per_s == a->hbm_gb_per_s && a80->node_net_gbps == a->node_net_gbps && !a80->own[0] &&
              strcmp(a80->family, "a100-sxm4-80gb") == 0,
          "a100-80gb is a100-sxm4-80gb");
    CHECK(a && !a->family[0] && devices_find(&dt, "a100") == NULL && devices_find(&dt, "h100-96gb") == NULL,
          "a device row has no family; a name that is neither is unknown");
    devices_free(&dt);
}

/* A family must be a device above that is not itself a variant: one error naming file:line. */
static void test_family_errors(void)
{
    static const char head[] = "device,vendor,workers,fp32_tflops,tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,"
                               "hbm_gib,hbm_gb_per_s,link_gb_per_s,scaleup_domain,source,family\n"
                               "toy-a,acme,1,10,20,40,40,80,16,1000,100,8,made up,\n";
    const struct {
        const char *rows, *want;
    } cases[] = {
        {"toy-b,,,,,,,,32,,,,made up,toy-z\n", ":3: column 'family': expected a device listed above"},
        {"toy-b,,,,,,,,32,,,,made up,toy-a\ntoy-c,,,,,,,,64,,,,made up,toy-b\n", ":4: column 'family'"},
        {"toy-b,,,,,,,,x,,,,made up,toy-a\n", ":3: column 'hbm_gib'"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[1024];
        const char *path = test_path("devices_family.csv");
        snprintf(text, sizeof text, "%s%s", head, cases[k].rows);
        write_text(path, text);
        dev_table dt;
        capture_stderr_begin();
        int rc = devices_load(&dt, path);
        const char *err = capture_stderr_end();
        CHECK(rc != 0 && strstr(err, cases[k].want) && count_lines(err) == 1, "case %zu: rc %d '%s'", k, rc, err);
    }
    /* a variant with its own memory, the rest the family's; an empty family cell: a device row */
    char text[1024];
    const char *path = test_path("devices_family.csv");
    snprintf(text, sizeof text, "%stoy-b,,,,,,,,32,,,,made up,toy-a\n", head);
    write_text(path, text);
    dev_table dt;
    CHECK(devices_load(&dt, path) == 0 && dt.n == 2, "a variant loads");
    const dev_row *b = dt.n == 2 ? &dt.rows[1] : NULL;
    CHECK(b && b->hbm_gib == 32 && b->bf16_tflops == 40 && b->hbm_gb_per_s == 1000 && b->workers == 1 &&
              b->scaleup_domain == 8 && strcmp(b->vendor, "acme") == 0 && strcmp(b->source, "made up") == 0 &&
              !dt.rows[0].family[0],
          "toy-b through toy-a");
    devices_free(&dt);
}

/* The published-runs header and the rows of the tests below. */
static const char g_head[] = "id,source,framework,device,devices,devices_per_node,node_net_gbps,instance_type,model,"
                             "arch,layers,d_model,heads,kv_heads,ffn_dim,vocab,params,tied_embeddings,seq_len,"
                             "global_batch,micro_batch,tp,pp,dp,cp,vp,sequence_parallel,sharding,recompute,"
                             "precision,metric,value,flop_convention,peak_tflops,seq_per_s,notes\n";

/* A 1.3B GPT at TP 2 x PP 2, micro-batch 2, global batch 256, on `devices` of `device` (8 a node),
 * `framework`, at `value` seq/s: row `id`. */
static void gpt_row(char *buf, size_t n, const char *id, const char *framework, const char *device, int devices,
                    double value)
{
    size_t k = strlen(buf);
    snprintf(buf + k, n - k,
             "%s,test,%s,%s,%d,8,800,,gpt-1.3b,gpt,24,2048,16,,,50257,,,2048,256,2,2,2,%d,,,,zero1,none,bf16-mixed,"
             "seq_per_s,%g,,,,\n",
             id, framework, device, devices, devices / 4, value);
}

/* Pythia-6.9B on `devices` Trainium chips of `instance` (16 a node, NeuronCores counted), as
 * trn1_table1.csv's rows. */
static void trn_row(char *buf, size_t n, const char *id, const char *instance, int devices, double value)
{
    size_t k = strlen(buf);
    snprintf(buf + k, n - k,
             "%s,test,neuron-nemo,trainium1,%d,16,,%s,Pythia-6.9B,neox,32,4096,32,,16384,50257,,false,2048,256,,8,1,"
             "%d,,,,,,bf16,seq_per_s,%g,,,,\n",
             id, devices, instance, devices / 4, value);
}

/* The cell of column `name` in the row whose id is `id` of the CSV at path ("" when none). */
static const char *csv_cell(const char *path, const char *id, const char *name)
{
    static char buf[1024];
    table t;
    buf[0] = '\0';
    if (table_load(&t, path) != 0) return buf;
    int ci = table_col(&t, "id", 0), cf = table_col(&t, "file", 0), cn = table_col(&t, name, 0);
    for (int r = 0; cn >= 0 && r < t.nrows; r++)
        if ((ci >= 0 && strcmp(table_cell(&t, r, ci), id) == 0) ||
            (ci < 0 && cf >= 0 && strstr(table_cell(&t, r, cf), id)))
            snprintf(buf, sizeof buf, "%s", table_cell(&t, r, cn));
    table_free(&t);
    return buf;
}

/* One file with a row on an unknown device, one on a 96 GB H100 variant, one on a spelling of the
 * A100, one of an unknown framework: validated, exit 0, the good rows predicted, the bad one named
 * and counted, every resolution said in its row's note. */
static void test_validate_rows(void)
{
    char text[8192];
    snprintf(text, sizeof text, "%s", g_head);
    gpt_row(text, sizeof text, "a1", "megatron-lm", "a100-sxm4-80gb", 32, 200);
    gpt_row(text, sizeof text, "a2", "megatron-lm", "a100-80gb", 64, 390);
    gpt_row(text, sizeof text, "a3", "megatron-lm", "h100-96gb-hbm2e", 32, 450);
    gpt_row(text, sizeof text, "a4", "megatron-lm", "tpu-v9", 32, 300);
    gpt_row(text, sizeof text, "a5", "megatron-xyz", "a100-sxm4-80gb", 32, 195);
    const char *pub = test_path("names_gpt.csv"), *rows = test_path("names_rows.csv"), *sum = test_path("names_sum.csv");
    write_text(pub, text);
    const char *args[] = {"validate", pub, "--csv", rows, "--summary-csv", sum, NULL};
    int rc = cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "validate with an unknown device: rc %d, %s", rc, g_err);
    const char *ids[] = {"a2", "a3", "a5"};
    for (int k = 0; k < 3; k++)
        CHECK(*csv_cell(rows, ids[k], "predicted_seq_per_s"), "%s predicted", ids[k]);
    CHECK(!*csv_cell(rows, "a4", "predicted_seq_per_s"), "a4 not predicted");
    CHECK(strncmp(csv_cell(rows, "a4", "note"), "column 'device': unknown device 'tpu-v9' (known: ", 48) == 0,
          "a4's note: '%s'", csv_cell(rows, "a4", "note"));
    CHECK(strstr(csv_cell(rows, "a3", "note"),
                 "device 'h100-96gb-hbm2e' resolved through family h100-sxm5-80gb (its own: hbm_gib 96)") != NULL,
          "a3's note: '%s'", csv_cell(rows, "a3", "note"));
    CHECK(strstr(csv_cell(rows, "a2", "note"), "resolved through family a100-sxm4-80gb (every figure the family's)"),
          "a2's note: '%s'", csv_cell(rows, "a2", "note"));
    CHECK(strstr(csv_cell(rows, "a5", "note"), "unknown framework 'megatron-xyz': plain's features assumed"),
          "a5's note: '%s'", csv_cell(rows, "a5", "note"));
    CHECK(!*csv_cell(rows, "a1", "note"), "a1: every name known as written, no note");
    CHECK(strcmp(csv_cell(sum, "names_gpt", "unknown_names"), "1") == 0 &&
              strcmp(csv_cell(sum, "names_gpt", "refused"), "0") == 0 &&
              strcmp(csv_cell(sum, "names_gpt", "predicted"), "3") == 0,
          "summary: unknown_names '%s', refused '%s', predicted '%s'", csv_cell(sum, "names_gpt", "unknown_names"),
          csv_cell(sum, "names_gpt", "refused"), csv_cell(sum, "names_gpt", "predicted"));
    /* the first row on an unknown device: the calibration is the first row on a known one */
    snprintf(text, sizeof text, "%s", g_head);
    gpt_row(text, sizeof text, "b0", "megatron-lm", "tpu-v9", 32, 300);
    gpt_row(text, sizeof text, "b1", "megatron-lm", "a100-sxm4-80gb", 32, 200);
    gpt_row(text, sizeof text, "b2", "megatron-lm", "a100-sxm4-80gb", 64, 390);
    write_text(pub, text);
    rc = cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0 && strcmp(csv_cell(rows, "b1", "calibration"), "true") == 0 &&
              *csv_cell(rows, "b2", "predicted_seq_per_s"),
          "calibrated on b1: rc %d, '%s'", rc, csv_cell(rows, "b1", "calibration"));
}

/* A published run whose layers do not split evenly over pp x vp stages (Megatron-Core's uneven
 * pipelines, Llama 3.1 405B's 126 layers over 8 x 4): the file loads; on a framework with no
 * documented split the row is not predicted and says why, the others are. */
static void test_uneven_pipeline(void)
{
    char text[8192];
    snprintf(text, sizeof text, "%s", g_head);
    gpt_row(text, sizeof text, "e1", "megatron-lm", "a100-sxm4-80gb", 32, 200);
    size_t k = strlen(text);
    snprintf(text + k, sizeof text - k,
             "u1,test,megatron-lm,a100-sxm4-80gb,32,8,800,,gpt-1.3b,gpt,24,2048,16,,,50257,,,2048,256,2,2,2,8,,5,,"
             "zero1,none,bf16-mixed,seq_per_s,200,,,,\n");
    gpt_row(text, sizeof text, "e2", "megatron-lm", "a100-sxm4-80gb", 64, 390);
    /* Megatron-Bridge documents its split (frameworks.h: the embedding and the loss as layers): 22 + 2
     * over pp 2 x vp 3 loads and is predicted; 23 + 2 does not split either: not predicted */
    k = strlen(text);
    snprintf(text + k, sizeof text - k,
             "b1,test,megatron-bridge,a100-sxm4-80gb,32,8,800,,gpt-1.3b,gpt,22,2048,16,,,50257,,,2048,256,2,2,2,8,,3,,"
             "zero1,none,bf16-mixed,seq_per_s,200,,,,\n"
             "b2,test,megatron-bridge,a100-sxm4-80gb,32,8,800,,gpt-1.3b,gpt,23,2048,16,,,50257,,,2048,256,2,2,2,8,,3,,"
             "zero1,none,bf16-mixed,seq_per_s,200,,,,\n");
    const char *pub = test_path("names_uneven.csv"), *rows = test_path("names_uneven_rows.csv");
    write_text(pub, text);
    const char *args[] = {"validate", pub, "--csv", rows, NULL};
    int rc = cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "validate with an uneven pipeline row: rc %d, %s", rc, g_err);
    CHECK(*csv_cell(rows, "e2", "predicted_seq_per_s") && !*csv_cell(rows, "u1", "predicted_seq_per_s"),
          "e2 predicted, u1 not");
    CHECK(strstr(csv_cell(rows, "u1", "note"), "24 layers do not split evenly into pp 2 x vp 5 stages"),
          "u1's note: '%s'", csv_cell(rows, "u1", "note"));
    CHECK(*csv_cell(rows, "b1", "predicted_seq_per_s") && !*csv_cell(rows, "b2", "predicted_seq_per_s") &&
              strstr(csv_cell(rows, "b2", "note"), "23 layers do not split evenly into pp 2 x vp 3 stages"),
          "b1 predicted, b2 not: '%s'", csv_cell(rows, "b2", "note"));
}

/* A published "A/B" instance: the first of the two the hardware table knows, the note saying which
 * and how the other differs; neither known: an error of that row, counted. */
static void test_instance_pairs(void)
{
    char text[8192];
    snprintf(text, sizeof text, "%s", g_head);
    trn_row(text, sizeof text, "t1", "trn1.32xlarge", 16, 10.4);
    trn_row(text, sizeof text, "t2", "trn1.32xlarge/trn1n.32xlarge", 64, 35.8);
    trn_row(text, sizeof text, "t3", "trn1x.32xlarge/trn1n.32xlarge", 64, 35.8);
    trn_row(text, sizeof text, "t4", "foo.1/bar.2", 64, 35.8);
    const char *pub = test_path("names_trn.csv"), *rows = test_path("names_trows.csv"), *sum = test_path("names_tsum.csv");
    write_text(pub, text);
    const char *args[] = {"validate", pub, "--csv", rows, "--summary-csv", sum, NULL};
    int rc = cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0, "validate with A/B instances: rc %d, %s", rc, g_err);
    CHECK(*csv_cell(rows, "t2", "predicted_seq_per_s") && *csv_cell(rows, "t3", "predicted_seq_per_s") &&
              !*csv_cell(rows, "t4", "predicted_seq_per_s"),
          "t2, t3 predicted, t4 not");
    CHECK(strstr(csv_cell(rows, "t2", "note"), "instance 'trn1.32xlarge/trn1n.32xlarge': trn1.32xlarge used "
                                               "(trn1n.32xlarge differs: network 1600 Gbit/s against 404.5 (measured"),
          "t2's note: '%s'", csv_cell(rows, "t2", "note"));
    CHECK(strstr(csv_cell(rows, "t3", "note"), "trn1n.32xlarge used (trn1x.32xlarge unknown)"), "t3's note: '%s'",
          csv_cell(rows, "t3", "note"));
    CHECK(strstr(csv_cell(rows, "t4", "note"), "column 'instance_type': unknown instance type 'foo.1/bar.2'"),
          "t4's note: '%s'", csv_cell(rows, "t4", "note"));
    CHECK(strcmp(csv_cell(sum, "names_trn", "unknown_names"), "1") == 0, "summary: unknown_names '%s'",
          csv_cell(sum, "names_trn", "unknown_names"));
}

/* pub_names_resolve on rows as the loader gives them; a framework the user types is refused. */
static void test_resolve(void)
{
    dev_table dt;
    hw_table ht;
    if (devices_load(&dt, NULL) != 0 || hardware_load(&ht, "data/hardware.csv") != 0) {
        CHECK(0, "the data tables do not load");
        return;
    }
    const pub_model_env env = {&ht, &dt, NULL, -1};
    pub_row r = {.framework = "nemo", .device = "h100-nvl-94gb"};
    char note[1024];
    CHECK(pub_names_resolve(&r, &env, note, sizeof note) == 0 &&
              strstr(note, "device 'h100-nvl-94gb' resolved through family h100-sxm5-80gb (its own: ") &&
              !strstr(note, "framework"),
          "nvl: '%s'", note);
    snprintf(r.device, sizeof r.device, "a100-sxm4-80gb");
    snprintf(r.framework, sizeof r.framework, "megatron"); /* an alias of megatron-lm: known */
    CHECK(pub_names_resolve(&r, &env, note, sizeof note) == 0 && !note[0], "known as written: '%s'", note);
    snprintf(r.unknown, sizeof r.unknown, "column 'device': unknown device 'x' (known: a)");
    CHECK(pub_names_resolve(&r, &env, note, sizeof note) == CB_EUSAGE && strcmp(note, r.unknown) == 0, "unknown: '%s'",
          note);
    hardware_free(&ht);
    devices_free(&dt);
    const char *scale[] = {"scale", "--model", "gpt3-1.3b", "--instance", "p4d.24xlarge", "--global-batch", "512",
                           "--framework", "xyz", NULL};
    int rc = cli_run(scale, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 2 && strstr(g_err, "flag '--framework': expected one of plain,") && strstr(g_err, "got 'xyz'"),
          "scale --framework xyz: rc %d, %s", rc, g_err);
}

const test_case tests_names[] = {
    {"names device variants", test_variants},
    {"names device family errors", test_family_errors},
    {"names validate unknown device row", test_validate_rows},
    {"names validate A/B instance", test_instance_pairs},
    {"names resolve and framework flag", test_resolve},
    {"names: a run whose layers do not split evenly over its pipeline stages loads; predicted by its framework's "
     "documented split, else not, saying why",
     test_uneven_pipeline},
    {0},
};
