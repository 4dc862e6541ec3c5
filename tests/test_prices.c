/* test_prices.c: `costbench prices import` per catalogue format (tests/catalogs/, small excerpts
 * in the published formats; their prices are illustrative, chosen so each result is worked by
 * hand below), duplicates, conflicts and --replace, malformed catalogues, price ages. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../report/formats/inputs.h"
#include "../report/formats/json.h"
#include "../report/formats/priceimport.h"
#include "check.h"

static char out[16384], err[8192];

static void t_skypilot(void)
{
    const char *a[] = {"prices",   "import",   "tests/catalogs/skypilot-lambda.csv",
                       "--format", "skypilot", "--provider",
                       "lambda",   "--as-of",  "2025-01",
                       NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 0, "exit: %s", err);
    /* line 2 and 3: one row (same price); lines 4 and 5: two regions (no zone column: the same key at
     * two prices would be a conflict) */
    CHECK(
        strstr(
            out,
            "lambda,gpu_8x_h100_sxm5,us-east-1,on_demand,23.92,2025-01,\"tests/catalogs/skypilot-lambda.csv (skypilot, "
            "line 2)\"\n") != NULL,
        "%s", out);
    CHECK(strstr(out, "lambda,gpu_1x_a10,us-west-1,on_demand,0.7,2025-01,\"tests/catalogs/skypilot-lambda.csv "
                      "(skypilot, line 5)\""),
          "%s", out);
    CHECK(strstr(out, "lambda,gpu_1x_a10,us-east-1,on_demand,0.75,"), "%s", out);
    CHECK(strstr(out, "lambda,gpu_1x_a10,us-east-1,spot,0.3,"), "%s", out);
    CHECK(strstr(err, "dropped: the same price repeated (1)"), "%s", err);
    const char *g[] = {
        "prices", "import", "tests/catalogs/skypilot-gcp.csv", "--format", "skypilot", "--provider", "gcp", "--as-of",
        "2025",   NULL};
    CHECK(cli_run(g, out, sizeof out, err, sizeof err) == 0, "exit: %s", err);
    CHECK(strstr(err, "host price only (this cloud prices accelerators apart) (2), accelerator-only row"), "%s", err);
    const char *n[] = {"prices", "import", "tests/catalogs/skypilot-lambda.csv", "--format", "skypilot", "--provider",
                       "x",      NULL};
    CHECK(cli_run(n, out, sizeof out, err, sizeof err) == 2 && strstr(err, "flag '--as-of': required"), "%s", err);
}

/* tests/catalogs/skypilot-gcp-join.csv: real rows of SkyPilot's GCP catalogue (zone f's host price and
 * its 4 x A100 row changed to test the join's match on count). Worked by hand:
 *   a2-highgpu-8g us-central1-a: 5.91582 + 23.47126 (8 x A100, line 7) = 29.38708; spot 2.36604 + 9.1776 = 11.54364
 *   zone b: the same sum (folded); zone f: only a 4 x A100 row there: noted, dropped (never 5.5 alone)
 *   a3-megagpu-8g: no H100-MEGA row: noted, dropped
 *   a3-highgpu-8g europe-west4-b: 9.93306 + 101.88413 = 111.81719; no host SpotPrice: no spot row */
static void t_gcp_join(void)
{
    const char *a[] = {"prices", "import", "tests/catalogs/skypilot-gcp-join.csv", "--format", "skypilot",
                       "--provider", "gcp", "--as-of", "2025", NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 0, "exit: %s", err);
    CHECK(strstr(out, "gcp,a2-highgpu-8g,us-central1,on_demand,29.38708,2025,\"tests/catalogs/skypilot-gcp-join.csv "
                      "(skypilot, lines 2+7: host + 8 x A100)\"\n"),
          "%s", out);
    CHECK(strstr(out, "gcp,a2-highgpu-8g,us-central1,spot,11.54364,"), "%s", out);
    CHECK(strstr(out, "gcp,a3-highgpu-8g,europe-west4,on_demand,111.81719,"), "%s", out);
    CHECK(!strstr(out, "a3-highgpu-8g,europe-west4,spot") && !strstr(out, "a3-megagpu") && !strstr(out, ",5.5,"),
          "%s", out);
    CHECK(strstr(err, "a2-highgpu-8g us-central1 (line 4): no A100 x 8 row for its zone: dropped"), "%s", err);
    CHECK(strstr(err, "a3-megagpu-8g us-central1 (line 5): no H100-MEGA x 8 row"), "%s", err);
    CHECK(strstr(err, "kept 3 price rows (2 zone rows folded"), "%s", err);
}

static void t_aws(void)
{
    const char *a[] = {"prices", "import", "tests/catalogs/aws-offer.csv", "--format", "aws-offer", NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 0, "exit: %s", err);
    CHECK(strstr(out, "aws,p4d.24xlarge,us-east-1,on_demand,32.7726,2024-06-20,\"tests/catalogs/aws-offer.csv "
                      "(aws-offer, line 7)\""),
          "%s", out);
    /* No Upfront 19.22 $/h; Partial Upfront 9 $/h + 87600 / (1 x 8760) = 19 $/h: the cheapest */
    CHECK(strstr(out, "aws,p4d.24xlarge,us-east-1,reserved_1y,19,2024-06-20,"), "%s", out);
    CHECK(strstr(err, "dropped: operating system not Linux (1), tenancy not Shared (1), convertible reserved term (1)"),
          "%s", err);
}

static void t_azure(void)
{
    const char *a[] = {
        "prices",     "import", "tests/catalogs/azure-retail.json", "--format", "azure-retail", "--as-of",
        "2025-03-01", NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 0, "exit: %s", err);
    /* as_of: the item's effectiveStartDate, 2021-06-01 (was --as-of's 2025-03-01 before issue 31) */
    CHECK(strstr(out, "azure,Standard_ND96asr_v4,eastus,on_demand,27.197,2021-06-01,\"tests/catalogs/azure-retail.json "
                      "(azure-retail, item 0)\""),
          "%s", out);
    CHECK(strstr(out, "azure,Standard_ND96asr_v4,eastus,spot,8.1591,"), "%s", out);
    /* a reservation's price is for the term: 140160 / (1 x 8760) = 16 $/h */
    CHECK(strstr(out, "azure,Standard_ND96asr_v4,eastus,reserved_1y,16,"), "%s", out);
    CHECK(strstr(err, "dropped: Windows (1), Low Priority (1)"), "%s", err);
}

static void t_merge(void)
{
    const char *path = test_path("prices.csv");
    write_text(path, "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n"
                     "aws,p4d.24xlarge,us-east-1,on_demand,32.7726,2024-06,page\n"
                     "aws,p4d.24xlarge,us-east-1,reserved_1y,20,2024-06,page\n");
    const char *a[] = {"prices", "import", "tests/catalogs/aws-offer.csv", "--format", "aws-offer", "--out",
                       path,     NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 2, "conflict must fail: %s", err);
    CHECK(strstr(err, ":3: p4d.24xlarge us-east-1 reserved_1y is priced 20 $/h; tests/catalogs/aws-offer.csv "
                      "(aws-offer, line 11) "
                      "says 19 $/h"),
          "%s", err);
    const char *r[] = {"prices",    "import", "tests/catalogs/aws-offer.csv", "--format", "aws-offer", "--out", path,
                       "--replace", NULL};
    CHECK(cli_run(r, out, sizeof out, err, sizeof err) == 0, "exit: %s", err);
    CHECK(strstr(err, "duplicate: p4d.24xlarge us-east-1 on_demand 32.7726 $/h"), "%s", err);
    price_table t;
    CHECK(prices_load(&t, path) == 0 && t.n == 2, "reload");
    if (t.n == 2) CHECK(t.rows[1].usd_per_hour == 19 && strcmp(t.rows[1].as_of, "2024-06-20") == 0, "new row");
    prices_free(&t);
}

static void t_malformed(void)
{
    const char *sp = test_path("bad-vms.csv"), *aw = test_path("bad-offer.csv"), *az = test_path("bad.json");
    write_text(sp, "InstanceType,Price,Region\nx,n/a,r\n");
    write_text(aw, "\"FormatVersion\",\"v1.0\"\n\"Disclaimer\",\"d\"\n\"Publication Date\",\"2024-06-20T18:03:39Z\"\n"
                   "\"Version\",\"1\"\n\"OfferCode\",\"AmazonEC2\"\n\"SKU\",\"TermType\"\n\"A\",\"OnDemand\"\n");
    write_text(az, "{\"Items\": [\n {\"currencyCode\": \"USD\",\n");
    const char *a[] = {"prices", "import", sp, "--format", "skypilot", "--provider", "x", "--as-of", "2025", NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 2 && strstr(err, "bad-vms.csv:2: column 'Price'"), "%s", err);
    const char *b[] = {"prices", "import", aw, "--format", "aws-offer", NULL};
    CHECK(cli_run(b, out, sizeof out, err, sizeof err) == 2 && strstr(err, "bad-offer.csv:6:"), "%s", err);
    const char *c[] = {"prices", "import", az, "--format", "azure-retail", "--as-of", "2025", NULL};
    CHECK(cli_run(c, out, sizeof out, err, sizeof err) == 2 && strstr(err, "bad.json:3:") && strstr(err, "truncated"),
          "%s", err);
}

static void t_json_depth(void)
{
    char deep[200];
    memset(deep, '[', sizeof deep);
    json_val v;
    capture_stderr_begin();
    int rc = json_parse(deep, sizeof deep, "deep.json", &v);
    const char *e = capture_stderr_end();
    CHECK(rc != 0 && strstr(e, "deeper than 64"), "%s", e);
    const char *ok = "{\"a\": [1, 2.5e1, \"\\u00e9\"]}";
    CHECK(json_parse(ok, strlen(ok), "ok.json", &v) == 0 && v.n == 1, "parse");
    if (v.n == 1) CHECK(v.items[0].n == 3 && v.items[0].items[1].number == 25, "values");
    json_free(&v);
}

static void t_age(void)
{
    price_row p = {.as_of = "2024-01-01"};
    struct tm tm = {.tm_year = 125, .tm_mon = 0, .tm_mday = 1, .tm_hour = 12};
    CHECK(fabs(price_age_days(&p, (long)timegm(&tm)) - 366) < 1e-9, "2024 is a leap year: 366 days");
    CHECK(price_as_of_check("2024") == 0 && price_as_of_check("2024-06") == 0, "periods");
    CHECK(price_as_of_check("2023-02-29") != 0 && price_as_of_check("June 2024") != 0, "bad dates");
    char buf[32];
    price_age_text(800, buf, sizeof buf);
    CHECK(strcmp(buf, "2.2 years") == 0, "%s", buf);
    const char *path = test_path("old.csv");
    write_text(path, "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n"
                     "aws,b,r,on_demand,2,2020,s\naws,a,r,on_demand,1,2020-05,s\n");
    const char *a[] = {"prices", "--prices", path, NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 0, "%s", err);
    const char *pa = strstr(out, "\na "), *pb = strstr(out, "\nb ");
    CHECK(pa && pb && pa < pb && strstr(out, "[!] >1y old"), "cheapest first, stale mark: %s", out);
    write_text(path, "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\naws,a,r,on_demand,1,"
                     "May 2020,s\n");
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 2 && strstr(err, "old.csv:2: column 'as_of'"), "%s", err);
}

/* Every report that uses a price older than a year says so: scale and trajectory (and report,
 * through the same price note) mark a price of 2020 STALE and leave this month's alone. */
static void t_stale_reports(void)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char text[1024];
    snprintf(text, sizeof text,
             "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n"
             "aws,p4d.24xlarge,us-east-1,on_demand,32.7726,2020-01,old page\n"
             "aws,p4de.24xlarge,us-east-1,on_demand,40.96575,%04d-%02d,this month's page\n",
             tm.tm_year + 1900, tm.tm_mon + 1);
    write_text(test_path("stale.csv"), text);
    const char *old[] = {"scale", "--model", "pythia-1b", "--instance", "p4d.24xlarge", "--nodes", "1",
                         "--global-batch", "64", "--prices", test_path("stale.csv"), NULL};
    int rc = cli_run(old, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "(2020-01, old page); STALE: ") && strstr(out, "older than a year"), "%d %s%s", rc,
          out, err);
    const char *fresh[] = {"scale", "--model", "pythia-1b", "--instance", "p4de.24xlarge", "--nodes", "1",
                           "--global-batch", "64", "--prices", test_path("stale.csv"), NULL};
    rc = cli_run(fresh, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "this month's page)") && !strstr(out, "STALE"), "%d %s%s", rc, out, err);
}

/* plan --per-instance over one instance of each of three clouds (prices imported from the
 * catalogues of data/catalogs): one row each, naming its cloud, its price's source and age. */
static void t_plan_clouds(void)
{
    const char *args[] = {"plan", "--model", "llama2-7b", "--tokens", "140B", "--deadline-days", "30",
                          "--instances", "p5en.48xlarge,a3-highgpu-8g,Standard_ND96isr_H100_v5", "--per-instance",
                          NULL};
    int rc = cli_run(args, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "exit %d: %s", rc, err);
    static const char *const want[] = {"a3-highgpu-8g             gcp", "p5en.48xlarge             aws",
                                       "Standard_ND96isr_H100_v5  azure", "data/catalogs/gcp/vms.csv (skypilot, lines",
                                       "data/catalogs/aws/vms.csv (skypilot, line", "data/catalogs/azure/vms.csv"};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) CHECK(strstr(out, want[k]), "no '%s':\n%s", want[k], out);
    CHECK(strstr(out, "\n   4  ") == NULL, "one row per instance:\n%s", out);
}

/* The registry of catalogue formats: every row complete, found by its name, and `prices import`'s
 * --format error and help name every format of it (nothing else lists them). */
static void t_format_registry(void)
{
    char refused[sizeof err];
    const char *a[] = {"prices", "import", "tests/catalogs/aws-offer.csv", "--format", "nope", NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 2 && strstr(err, "flag '--format': expected skypilot, "
                                                                          "aws-offer or azure-retail, got 'nope'"),
          "%s", err);
    snprintf(refused, sizeof refused, "%s", err);
    const char *h[] = {"prices", "import", "--help", NULL};
    int rc = cli_run(h, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "--format skypilot|aws-offer|azure-retail") &&
              strstr(out, "(required for skypilot)"), /* azure-retail: was required; its items are dated */
          "help: rc %d, %s", rc, out);
    CHECK(price_nformats >= 3, "%d formats", price_nformats);
    for (int i = 0; i < price_nformats; i++) {
        const price_format *f = &price_formats[i];
        CHECK(f->name && *f->name && f->help && *f->help && f->read && price_format_find(f->name) == f,
              "format %d incomplete or not found by its name", i);
        CHECK(strstr(refused, f->name) && strstr(out, f->help), "%s: not in the error or the help", f->name);
    }
    CHECK(price_format_find("nope") == NULL && price_format_find(NULL) == NULL, "an unknown name is found");
}


/* The price row of (instance, region, option) in t, or NULL. */
static const price_row *row_of(const price_table *t, const char *inst, const char *region, const char *option)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].instance, inst) && !strcmp(t->rows[i].region, region) &&
            !strcmp(t->rows[i].option, option))
            return &t->rows[i];
    return NULL;
}

/* A real answer's 1,000 items saved as a list (tests/logs/README.md: source and the counts by hand):
 * no --as-of (each row dated by its item), non-VM services, Cloud Services and Dedicated Host
 * products, Windows and Low Priority dropped and counted; a "Series Linux" product kept. */
static void t_azure_real(void)
{
    const char *path = test_path("azure-real.csv");
    remove(path);
    const char *a[] = {"prices", "import", "tests/catalogs/azure-retail_2026-08-22_carbonandfinch-1000items.json",
                       "--format", "azure-retail", "--out", path, NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 0, "exit: %s", err);
    CHECK(strstr(err, "read 1000 rows; kept 240 price rows; dropped: Windows (372), not a virtual machine (318), Low "
                      "Priority (46), Cloud Services (not a VM price) (9), Dedicated Host (not a VM price) (15)"),
          "%s", err);
    price_table t;
    if (prices_load(&t, path) != 0) return;
    CHECK(t.n == 240, "%d rows", t.n);
    const price_row *od = row_of(&t, "Standard_NC48ads_A100_v4", "eastus2", "on_demand");
    const price_row *r1 = row_of(&t, "Standard_NC48ads_A100_v4", "eastus2", "reserved_1y");
    const price_row *r3 = row_of(&t, "Standard_NC48ads_A100_v4", "eastus2", "reserved_3y");
    const price_row *sp = row_of(&t, "Standard_ND96ams_A100_v4", "switzerlandwest", "spot");
    CHECK(od && od->usd_per_hour == 7.346 && !strcmp(od->as_of, "2022-06-01"), "NC48ads on demand");
    /* 42066 / 8760 = 4.80205479; 71642 / (3 x 8760) = 2.7261035 */
    CHECK(r1 && fabs(r1->usd_per_hour - 4.80205479) < 1e-8 && r3 && fabs(r3->usd_per_hour - 2.7261035) < 1e-8,
          "NC48ads reservations");
    CHECK(sp && sp->usd_per_hour == 15.83894 && !strcmp(sp->as_of, "2025-06-01"), "ND96ams spot");
    prices_free(&t);
}

/* Price changes, one-line JSON, a page of a longer answer, Windows spelled "Srs Win" (items written
 * in the answer's shape, the fields the reader uses). */
static void t_azure_changes(void)
{
#define AZ_ITEM(sku, meter, product, price, date)                                                                     \
    "{\"currencyCode\":\"USD\",\"retailPrice\":" price ",\"armRegionName\":\"eastus\",\"effectiveStartDate\":\"" date \
    "T00:00:00Z\",\"meterName\":\"" meter "\",\"productName\":\"" product "\",\"skuName\":\"" meter                      \
    "\",\"serviceName\":\"Virtual Machines\",\"unitOfMeasure\":\"1 Hour\",\"type\":\"Consumption\",\"armSkuName\":\"" sku "\"}"
    const char *j = test_path("az-changes.json");
    write_text(j, "{\"Items\":[" AZ_ITEM("Standard_X8", "X8", "Virtual Machines X Series", "10", "2024-01-01") ","
                  AZ_ITEM("Standard_X8", "X8", "Virtual Machines X Series", "8", "2025-06-01") ","
                  AZ_ITEM("Standard_X8", "X8", "Virtual Machines X Series", "12", "2023-01-01") ","
                  AZ_ITEM("Standard_X8", "X8", "Virtual Machines X Srs Win", "14", "2025-06-01") ","
                  AZ_ITEM("Standard_X8", "X8", "X Series Cloud Services", "9", "2025-06-01") "],"
                  "\"NextPageLink\":\"https://prices.azure.com:443/api/retail/prices?$skip=1000\",\"Count\":5}");
    const char *a[] = {"prices", "import", j, "--format", "azure-retail", NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 0, "exit: %s", err);
    CHECK(strstr(out, "azure,Standard_X8,eastus,on_demand,8,2025-06-01,") && !strstr(out, ",10,") &&
              !strstr(out, ",12,") && !strstr(out, ",14,"),
          "the latest price kept: %s", out);
    CHECK(strstr(err, "kept 1 price rows; superseded: 2 (a price of the same SKU, region and option with an earlier "
                      "effectiveStartDate); one page of a longer answer (NextPageLink set); dropped: Windows (1), "
                      "Cloud Services (not a VM price) (1)") &&
              strstr(err, "az-changes.json is one page of a longer answer (NextPageLink https://prices.azure.com"),
          "%s", err);
    /* the same date at two prices: one error at file:1 naming the item */
    write_text(j, "{\"Items\":[" AZ_ITEM("Standard_X8", "X8", "Virtual Machines X Series", "10", "2024-01-01") ","
                  AZ_ITEM("Standard_X8", "X8 v2", "Virtual Machines X Series Linux", "11", "2024-01-01") "]}");
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 2 && count_of(err, "error:") == 1 &&
              strstr(err, "az-changes.json:1: Items[1] (Standard_X8, meterName 'X8 v2'): Standard_X8 eastus "
                          "on_demand: 11 $/h from 2024-01-01, but ") &&
              strstr(err, "(azure-retail, item 0) has 10 $/h from the same date"),
          "%s", err);
#undef AZ_ITEM
}

const test_case tests_prices[] = {
    {"prices: the catalogue format registry feeds import's check, help and errors", t_format_registry},
    {"prices: plan --per-instance ranks three clouds, each price's source and age", t_plan_clouds},
    {"prices: scale marks a price older than a year", t_stale_reports},
    {"prices: skypilot catalogue: a repeated row dropped, as-of required", t_skypilot},
    {"prices: skypilot gcp: host + GPU row of the same zone, a host without its GPUs dropped", t_gcp_join},
    {"prices: aws offer file: filters, reserved effective rate", t_aws},
    {"prices: azure retail json: Windows and low priority dropped, reservation per hour", t_azure},
    {"prices: azure retail, a real answer's 1000 items: non-VM, Cloud Services, Windows dropped and counted", t_azure_real},
    {"prices: azure retail: price changes keep the latest date, pages noted, Srs Win is Windows", t_azure_changes},
    {"prices: --out: duplicate reported, conflict refused, --replace", t_merge},
    {"prices: malformed catalogues name file:line", t_malformed},
    {"prices: json reader: depth bound and values", t_json_depth},
    {"prices: ages, stale mark, listing cheapest first, bad as_of", t_age},
    {NULL, NULL},
};
