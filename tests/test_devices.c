/* The device table (data/devices.csv, report/formats/devices.h) and the instance table built on it
 * (data/hardware.csv): every shipped row loads with a source; a bad cell is one error naming
 * file:line and the column; a node of 8 A100 80GB on 1600 Gbit/s is the hw_row the scaling model
 * takes; overrides leave what they are not given; instances derive their figures from their
 * device and an old hardware.csv without a device column still loads; `costbench devices`. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/err.h"
#include "../report/formats/devices.h"
#include "check.h"

static char g_out[65536], g_err[16384];

static const char g_dev_head[] =
    "device,vendor,workers,fp32_tflops,tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,hbm_gib,"
    "hbm_gb_per_s,link_gb_per_s,scaleup_domain,source\n";
static const char g_dev_toy[] = "toy-a,acme,1,10,20,40,40,80,16,1000,100,8,made up for tests\n"
                                "toy-b,acme,2,5,,50,,,32,,,16,made up for tests\n";

/* dir/name holding head + body; the path into out. */
static int file_make(char *out, size_t n, const char *name, const char *head, const char *body)
{
    char *d = test_tmpdir();
    if (!d) return -1;
    snprintf(out, n, "%s/%s", d, name);
    char text[4096];
    snprintf(text, sizeof text, "%s%s", head, body);
    write_text(out, text);
    return 0;
}

/* devices_load of a toy file with `body`; the error text it printed in g_err. */
static int load_toy(const char *body, dev_table *dt)
{
    char path[256];
    if (file_make(path, sizeof path, "devices.csv", g_dev_head, body) != 0) return -1;
    capture_stderr_begin();
    int rc = devices_load(dt, path);
    snprintf(g_err, sizeof g_err, "%s", capture_stderr_end());
    return rc;
}

static void test_shipped_rows_load(void)
{
    dev_table dt;
    CHECK(devices_load(&dt, NULL) == 0, "data/devices.csv loads");
    const char *need[] = {"v100-sxm2-16gb", "v100-sxm2-32gb", "v100-sxm3-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb",
                          "h100-sxm5-80gb", "h200-sxm5-141gb", "b200", "gb200-nvl72", "mi300x", "trainium1",
                          "trainium2"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        CHECK(devices_find(&dt, need[i]), "device '%s' listed", need[i]);
    for (int i = 0; i < dt.n; i++) {
        const dev_row *d = &dt.rows[i];
        CHECK(strlen(d->source) > 20, "%s: a source", d->device);
        CHECK(d->workers >= 1 && d->scaleup_domain >= 1 && d->hbm_gib > 0, "%s: workers, domain, memory", d->device);
        /* a dense peak of a lower precision is never above a higher one's (sparsity figures would break it) */
        CHECK(!(d->bf16_tflops < d->fp32_tflops) && !(d->fp8_tflops < d->bf16_tflops), "%s: peaks ordered", d->device);
    }
    const dev_row *a = devices_find(&dt, "a100-sxm4-40gb"), *v = devices_find(&dt, "v100-sxm3-32gb");
    const dev_row *t = devices_find(&dt, "trainium1"), *h = devices_find(&dt, "h100-sxm5-80gb");
    if (a && v && t && h) {
        CHECK(a->bf16_tflops == 312 && a->fp16_tflops == 312 && a->tf32_tflops == 156 && a->fp32_tflops == 19.5,
              "A100 peaks");
        CHECK(isnan(a->fp8_tflops) && a->link_gb_per_s == 300 && a->scaleup_domain == 8,
              "A100: no fp8, NVLink 300 each way");
        CHECK(v->fp16_tflops == 125 && isnan(v->bf16_tflops) && isnan(v->tf32_tflops) && v->fp32_tflops == 15.7,
              "V100 peaks");
        CHECK(v->scaleup_domain == 16, "DGX-2's V100: 16 on NVSwitch");
        CHECK(t->bf16_tflops == 190 && t->workers == 2 && t->link_gb_per_s == 192,
              "Trainium1 per chip, 2 NeuronCores, NeuronLink 192 GB/s each way (an assumption: half of AWS's 384)");
        CHECK(h->fp8_tflops == 1979 && h->bf16_tflops == 989.5, "H100 dense = half the sparse figures");
    }
    char list[1024];
    devices_list(&dt, list, sizeof list);
    CHECK(strstr(list, "a100-sxm4-40gb, a100-sxm4-80gb") != NULL, "devices_list: '%s'", list);
    CHECK(devices_find(&dt, "a100") == NULL, "an unknown device: NULL");
    devices_free(&dt);
    devices_free(&dt); /* twice: a no-op */
}

static void test_bad_cells(void)
{
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"toy-a,acme,1,10,20,-40,40,80,16,1000,100,8,src\n", ":2: column 'bf16_tflops'"},
        {"toy-a,acme,1,10,20,fast,40,80,16,1000,100,8,src\n", ":2: column 'bf16_tflops'"},
        {"toy-a,acme,1,10,20,40,40,80,16,1000,100,8,src\ntoy-a,acme,1,10,20,40,40,80,16,1000,100,8,src\n",
         ":3: column 'device': 'toy-a' appears twice (first at line 2)"},
        {"Toy A,acme,1,10,20,40,40,80,16,1000,100,8,src\n", ":2: column 'device': expected a lowercase key"},
        {"toy-a,acme,0,10,20,40,40,80,16,1000,100,8,src\n", ":2: column 'workers'"},
        {"toy-a,acme,1,10,20,40,40,80,,1000,100,8,src\n", ":2: column 'hbm_gib'"},
        {"toy-a,acme,1,10,20,40,40,80,16,1000,100,0,src\n", ":2: column 'scaleup_domain'"},
        {"toy-a,acme,1,10,20,40,40,80,16,1000,100,8,\n", ":2: column 'source'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dev_table dt;
        CHECK(load_toy(cases[i].body, &dt) == CB_EFAIL && dt.rows == NULL, "case %zu refused", i);
        CHECK(strstr(g_err, cases[i].want) && strstr(g_err, "devices.csv") &&
                  strchr(g_err, '\n') == strrchr(g_err, '\n'),
              "case %zu: one line naming file:line and column (%s), got: %s", i, cases[i].want, g_err);
    }
    dev_table dt;
    char path[256];
    file_make(path, sizeof path, "devices.csv", "device,vendor,workers\n", "toy-a,acme,1\n");
    capture_stderr_begin();
    CHECK(devices_load(&dt, path) == CB_EFAIL, "a missing column refused");
    CHECK(strstr(capture_stderr_end(), "fp32_tflops") != NULL, "the missing column named");
}

static void test_hw_from_device(void)
{
    dev_table dt;
    CHECK(devices_load(&dt, NULL) == 0, "data/devices.csv loads");
    if (dt.n == 0) return;
    const dev_row *d = devices_find(&dt, "a100-sxm4-80gb");
    hw_row h;
    if (d) {
        hw_from_device(d, 8, 1600, NAN, &h);
        CHECK(strcmp(h.instance, "8 x a100-sxm4-80gb") == 0 && strcmp(h.accelerator, "a100-sxm4-80gb") == 0,
              "names: %s", h.instance);
        CHECK(h.accelerators == 8 && h.workers == 1, "8 devices, a rank each");
        CHECK(h.bf16_tflops == 312 && h.fp16_tflops == 312 && h.tf32_tflops == 156 && h.fp32_tflops == 19.5 &&
                  isnan(h.fp8_tflops),
              "peaks from the device");
        CHECK(h.mem_gib == 80 && h.mem_gb_per_s == 2039 && h.intra_gb_per_s == 300 && h.scaleup_domain == 8,
              "memory and link");
        CHECK(h.net_gbit_per_s == 1600 && isnan(h.net_latency_us), "network as given");
        CHECK(strcmp(h.source, d->source) == 0, "the device's source");
    }
    const dev_row *t = devices_find(&dt, "trainium1");
    if (t) {
        hw_from_device(t, 16, 800, 20, &h);
        CHECK(h.accelerators * h.workers == 32 && h.intra_gb_per_s == 192 && h.net_latency_us == 20,
              "a trn1 node: 32 ranks");
    }
    devices_free(&dt);
}

static void test_overrides(void)
{
    hw_row h = {.net_gbit_per_s = 400, .intra_gb_per_s = 300, .net_latency_us = NAN};
    hw_overrides none = {NAN, NAN, NAN};
    hw_apply_overrides(&h, &none);
    CHECK(h.net_gbit_per_s == 400 && h.intra_gb_per_s == 300 && isnan(h.net_latency_us), "NaN leaves every figure");
    hw_overrides net = {1600, NAN, 5};
    hw_apply_overrides(&h, &net);
    CHECK(h.net_gbit_per_s == 1600 && h.intra_gb_per_s == 300 && h.net_latency_us == 5,
          "given figures replace, the rest stay");
    hw_overrides intra = {NAN, 150, NAN};
    hw_apply_overrides(&h, &intra);
    CHECK(h.net_gbit_per_s == 1600 && h.intra_gb_per_s == 150 && h.net_latency_us == 5, "the link alone");
}

static const char g_hw_head[] = "instance_type,device,accelerators,network_gbit_per_s,network_latency_us,source\n";
static const char g_hw_old_head[] =
    "instance_type,accelerator,accelerators,workers_per_accelerator,bf16_tflops,fp32_tflops,"
    "mem_gib,mem_gb_per_s,intra_node_gb_per_s,network_gbit_per_s,network_latency_us,source\n";

static void test_hardware_derives(void)
{
    hw_table ht;
    CHECK(hardware_load(&ht, "data/hardware.csv") == 0, "data/hardware.csv loads");
    const hw_row *p4d = hardware_find(&ht, "p4d.24xlarge"), *trn1 = hardware_find(&ht, "trn1.32xlarge");
    const hw_row *dgx = hardware_find(&ht, "dgx-a100-80gb"), *dgx2 = hardware_find(&ht, "dgx-2"),
                 *h100 = hardware_find(&ht, "dgx-h100");
    CHECK(p4d && trn1 && dgx && dgx2 && h100 && hardware_find(&ht, "trn2.48xlarge"),
          "instances and on-premise nodes listed");
    if (p4d && trn1 && dgx && dgx2 && h100) {
        CHECK(strcmp(p4d->accelerator, "a100-sxm4-40gb") == 0 && p4d->accelerators == 8 && p4d->bf16_tflops == 312 &&
                  p4d->mem_gib == 40 && p4d->intra_gb_per_s == 300 && p4d->net_gbit_per_s == 400 &&
                  p4d->tf32_tflops == 156,
              "p4d.24xlarge: 8 x the A100 40GB row on 400 Gbit/s");
        CHECK(trn1->workers == 2 && trn1->accelerators == 16 && trn1->bf16_tflops == 190 && trn1->fp32_tflops == 47.5 &&
                  trn1->mem_gb_per_s == 880.5 && trn1->intra_gb_per_s == 192,
              "trn1.32xlarge: Table 1's figures, from trainium1");
        CHECK(dgx->net_gbit_per_s == 1600 && dgx->mem_gib == 80 && h100->net_gbit_per_s == 3200 &&
                  h100->fp8_tflops == 1979,
              "DGX A100 8 x 200 Gb/s, DGX H100 8 x 400 Gb/s");
        CHECK(dgx2->accelerators == 16 && dgx2->scaleup_domain == 16 && dgx2->net_gbit_per_s == 800,
              "DGX-2: 16 V100 on 8 x 100 Gb/s");
    }
    hardware_free(&ht);

    dev_table dt;
    char dpath[256], hpath[256];
    file_make(dpath, sizeof dpath, "devices.csv", g_dev_head, g_dev_toy);
    CHECK(devices_load(&dt, dpath) == 0, "toy devices load");
    file_make(hpath, sizeof hpath, "hardware.csv",
              "instance_type,device,accelerator,accelerators,mem_gib,network_gbit_per_s,network_latency_us,source\n",
              "n1,toy-a,,4,,100,3,node of toy-a\nn2,toy-b,,8,,200,,node of toy-b\nown,,Own,2,24,50,,its own figures\n");
    CHECK(hardware_load_dev(&ht, hpath, &dt) == 0 && ht.n == 3, "a mixed file loads");
    if (ht.n == 3) {
        const hw_row *a = &ht.rows[0], *b = &ht.rows[1], *o = &ht.rows[2];
        CHECK(strcmp(a->instance, "n1") == 0 && a->accelerators == 4 && a->bf16_tflops == 40 && a->fp8_tflops == 80 &&
                  a->intra_gb_per_s == 100 && a->net_latency_us == 3 && strcmp(a->source, "node of toy-a") == 0 &&
                  a->line == 2,
              "n1 derives from toy-a");
        CHECK(b->workers == 2 && isnan(b->tf32_tflops) && isnan(b->mem_gb_per_s) && b->scaleup_domain == 16,
              "n2 from toy-b");
        CHECK(strcmp(o->accelerator, "Own") == 0 && o->workers == 1 && o->mem_gib == 24 && isnan(o->bf16_tflops) &&
                  isnan(o->fp16_tflops) && o->scaleup_domain == 0,
              "a row with no device keeps its own figures");
    }
    hardware_free(&ht);
    devices_free(&dt);
}

/* hardware_load_dev of head + body against the toy devices: the error it printed in g_err. */
static int hw_bad(const char *head, const char *body)
{
    dev_table dt;
    hw_table ht;
    char dpath[256], hpath[256];
    file_make(dpath, sizeof dpath, "devices.csv", g_dev_head, g_dev_toy);
    file_make(hpath, sizeof hpath, "hardware.csv", head, body);
    if (devices_load(&dt, dpath) != 0) return 0;
    capture_stderr_begin();
    int rc = hardware_load_dev(&ht, hpath, &dt);
    snprintf(g_err, sizeof g_err, "%s", capture_stderr_end());
    devices_free(&dt);
    return rc;
}

static void test_hardware_bad(void)
{
    static const char both_head[] = "instance_type,device,accelerator,accelerators,bf16_tflops,mem_gib,network_gbit_"
                                    "per_s,network_latency_us,source\n";
    CHECK(hw_bad(g_hw_head, "n1,toy-z,4,100,,x\n") == CB_EFAIL &&
              strstr(g_err, "hardware.csv:2: column 'device': unknown device 'toy-z'") && strstr(g_err, "toy-a, toy-b"),
          "an unknown device names the known ones: %s", g_err);
    CHECK(hw_bad(both_head, "n1,toy-a,,4,40,,100,,x\n") == CB_EFAIL &&
              strstr(g_err, "hardware.csv:2: column 'bf16_tflops': the device 'toy-a' defines it (") &&
              strstr(g_err, "devices.csv:2)"),
          "a figure the device defines is refused, naming both: %s", g_err);
    CHECK(hw_bad(g_hw_head, "n1,,4,100,,x\n") == CB_EFAIL && strstr(g_err, "hardware.csv:2: column 'device': empty"),
          "no device and no own figures: %s", g_err);
    CHECK(hw_bad(g_hw_head, "n1,toy-a,0,100,,x\n") == CB_EFAIL &&
              strstr(g_err, "hardware.csv:2: column 'accelerators'"),
          "accelerators checked: %s", g_err);
    CHECK(hw_bad(g_hw_head, "n1,toy-a,4,100,,x\nn1,toy-b,4,100,,y\n") == CB_EFAIL &&
              strstr(g_err, "'n1' appears twice"),
          "a repeated instance type: %s", g_err);
    CHECK(hw_bad("instance_type,accelerator,accelerators,network_gbit_per_s,network_latency_us,source\n",
                 "n1,X,4,100,,x\n") == CB_EFAIL &&
              strstr(g_err, "workers_per_accelerator"),
          "an old-format file must have the old columns: %s", g_err);
}

/* A measured network in place of the line rate: data/hardware.csv's trn1.32xlarge from AWS's nccom-test
 * example (64 ranks on 2 instances, fp32 all-reduce: 1 GiB in 41,806 us, 8 B in 520 us), the
 * arithmetic redone; a measurement without its source is refused; --net-gbps replaces both. */
static void test_hardware_measured_net(void)
{
    double busbw = 2.0 * 63 / 64 * 1073741824.0 / 41.806e-3 * 8 / 1e9, hop_us = 520.0 / 2; /* 2 inter-node hops */
    CHECK(fabs(busbw - 404.5) < 0.05, "nccom-test 2 x 32: busbw x 8 = %.2f Gbit/s", busbw);
    hw_table ht;
    CHECK(hardware_load(&ht, "data/hardware.csv") == 0, "data/hardware.csv loads");
    const hw_row *t = hardware_find(&ht, "trn1.32xlarge"), *tn = hardware_find(&ht, "trn1n.32xlarge");
    CHECK(t && t->net_gbit_per_s == 404.5 && t->net_line_gbit_per_s == 800 && t->net_latency_us == hop_us &&
              strstr(t->net_source, "nccom-test.rst:217-253") && strstr(t->net_source, "trn1 or trn1n: not stated"),
          "trn1.32xlarge: the measured 404.5 Gbit/s and 260 us a hop in place of 800 Gbit/s, cited");
    CHECK(tn && tn->net_gbit_per_s == 1600 && tn->net_line_gbit_per_s == 1600 && tn->net_source[0] == '\0',
          "trn1n.32xlarge: no measurement of its own, its line rate");
    if (t) {
        hw_row h = *t;
        hw_overrides net = {1000, NAN, NAN};
        hw_apply_overrides(&h, &net);
        CHECK(h.net_gbit_per_s == 1000 && h.net_line_gbit_per_s == 1000 && h.net_source[0] == '\0',
              "--net-gbps replaces the measurement too");
    }
    hardware_free(&ht);
    static const char head[] = "instance_type,device,accelerators,network_gbit_per_s,network_latency_us,source,"
                               "network_busbw_gbit_per_s,network_source\n";
    CHECK(hw_bad(head, "n1,toy-a,4,100,,x,40,\n") == CB_EFAIL &&
              strstr(g_err, "hardware.csv:2: column 'network_source': empty, but 'network_busbw_gbit_per_s'"),
          "a measurement without its source: %s", g_err);
    CHECK(hw_bad(head, "n1,toy-a,4,100,,x,-1,somewhere\n") == CB_EFAIL &&
              strstr(g_err, "hardware.csv:2: column 'network_busbw_gbit_per_s'"),
          "a bad measured figure names its column: %s", g_err);
}

static void test_hardware_old_format(void)
{
    hw_table ht;
    char path[256];
    file_make(path, sizeof path, "hardware.csv", g_hw_old_head,
              "p4d.24xlarge,A100-SXM4-40GB,8,1,312,19.5,40,1555,600,400,,an old copy\n");
    CHECK(hardware_load(&ht, path) == 0 && ht.n == 1, "a hardware.csv without a device column loads");
    if (ht.n == 1) {
        const hw_row *h = &ht.rows[0];
        CHECK(strcmp(h->accelerator, "A100-SXM4-40GB") == 0 && h->bf16_tflops == 312 && h->intra_gb_per_s == 600 &&
                  h->mem_gb_per_s == 1555 && isnan(h->fp8_tflops) && isnan(h->tf32_tflops) && h->scaleup_domain == 0,
              "with its own figures, the device's left unknown");
    }
    hardware_free(&ht);
}

/* equal, or both NaN */
static int same(double x, double y) { return x == y || (isnan(x) && isnan(y)); }

static void test_command(void)
{
    const char *list[] = {"devices", NULL};
    CHECK(cli_run(list, g_out, sizeof g_out, g_err, sizeof g_err) == 0, "costbench devices runs: %s", g_err);
    CHECK(strstr(g_out, "a100-sxm4-80gb") && strstr(g_out, "bf16_tflops") && strstr(g_out, "scaleup_domain") &&
              strstr(g_out, "AWS Neuron docs"),
          "lists devices, peaks, domain and sources");
    char *d = test_tmpdir();
    if (!d) return;
    char csv[256], bad[256];
    snprintf(csv, sizeof csv, "%s/devices_out.csv", d);
    const char *w[] = {"devices", "--csv", csv, NULL};
    CHECK(cli_run(w, g_out, sizeof g_out, g_err, sizeof g_err) == 0, "--csv: %s", g_err);
    dev_table a, b;
    CHECK(devices_load(&a, NULL) == 0 && devices_load(&b, csv) == 0 && a.n == b.n,
          "its CSV reads back as a device table");
    for (int i = 0; i < a.n && i < b.n; i++) {
        const dev_row *x = &a.rows[i], *y = &b.rows[i];
        CHECK(!strcmp(x->device, y->device) && !strcmp(x->source, y->source) && x->workers == y->workers &&
                  x->scaleup_domain == y->scaleup_domain && same(x->fp32_tflops, y->fp32_tflops) &&
                  same(x->tf32_tflops, y->tf32_tflops) && same(x->bf16_tflops, y->bf16_tflops) &&
                  same(x->fp16_tflops, y->fp16_tflops) && same(x->fp8_tflops, y->fp8_tflops) &&
                  same(x->hbm_gib, y->hbm_gib) && same(x->hbm_gb_per_s, y->hbm_gb_per_s) &&
                  same(x->link_gb_per_s, y->link_gb_per_s),
              "%s round-trips", x->device);
    }
    devices_free(&a);
    devices_free(&b);
    file_make(bad, sizeof bad, "devices.csv", g_dev_head, "toy-a,acme,1,10,20,-1,40,80,16,1000,100,8,src\n");
    const char *e[] = {"devices", "--devices", bad, NULL};
    CHECK(cli_run(e, g_out, sizeof g_out, g_err, sizeof g_err) == 2 &&
              strstr(g_err, "devices.csv:2: column 'bf16_tflops'"),
          "a bad table: exit 2, file:line and column: %s", g_err);
}

const test_case tests_devices[] = {
    {"devices: every row of data/devices.csv loads, with its source and the data sheets' dense peaks",
     test_shipped_rows_load},
    {"devices: a bad cell, a missing column or a repeated device is one error naming file:line and the column",
     test_bad_cells},
    {"devices: hw_from_device, 8 x a100-sxm4-80gb on 1600 Gbit/s, and a trn1 node", test_hw_from_device},
    {"devices: hw_apply_overrides changes only the figures it is given (NaN leaves them)", test_overrides},
    {"devices: hardware.csv rows take their figures from their device; a row without one keeps its own",
     test_hardware_derives},
    {"devices: a bad hardware.csv row (unknown device, a figure the device defines, no figures) is one error",
     test_hardware_bad},
    {"devices: a measured network (network_busbw_gbit_per_s, cited) in place of the line rate; trn1.32xlarge's "
     "from nccom-test",
     test_hardware_measured_net},
    {"devices: an old-format hardware.csv (no device column) still loads with its own figures",
     test_hardware_old_format},
    {"devices: costbench devices lists the table; --csv reads back; a bad --devices file exits 2 naming file:line",
     test_command},
    {0},
};
