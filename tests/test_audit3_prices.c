/* test_audit3_prices.c: regression tests of the third audit: `costbench prices import` and its --out, plan's costs, prices_load (issue 28: #2 #11 #15 #17 #18). */
#include <stdio.h>
#include <string.h>

#include "../report/formats/inputs.h"
#include "check.h"

static char out[65536], err[8192];

#define PRICE_HEADER "provider,instance_type,region,pricing_option,usd_per_hour,as_of,source\n"
static const char base_prices[] = PRICE_HEADER "aws,p4d.24xlarge,us-east-1,on_demand,32.7726,2024-06,page\n";

/* An AWS offer file: its Publication Date and one on-demand Linux row of `price`. */
static void write_offer(const char *path, const char *date, const char *price)
{
    char text[2048];
    snprintf(text, sizeof text,
             "\"FormatVersion\",\"v1.0\"\n\"Disclaimer\",\"d\"\n\"Publication Date\",\"%s\"\n\"Version\",\"1\"\n"
             "\"OfferCode\",\"AmazonEC2\"\n"
             "\"SKU\",\"OfferTermCode\",\"TermType\",\"Unit\",\"PricePerUnit\",\"Currency\",\"LeaseContractLength\","
             "\"PurchaseOption\",\"OfferingClass\",\"Product Family\",\"Instance Type\",\"Tenancy\",\"Operating System\","
             "\"License Model\",\"CapacityStatus\",\"Pre Installed S/W\",\"Region Code\"\n"
             "\"A\",\"T\",\"OnDemand\",\"Hrs\",\"%s\",\"USD\",\"\",\"\",\"\",\"Compute Instance\",\"p9.xlarge\","
             "\"Shared\",\"Linux\",\"No License required\",\"Used\",\"NA\",\"us-east-1\"\n",
             date, price);
    write_text(path, text);
}

/* An Azure retail document of one Linux VM item. */
static void write_azure(const char *path, const char *type_and_term, double price, const char *region,
                        const char *sku)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"Items\": [\n {\"currencyCode\": \"USD\", \"retailPrice\": %.17g, \"armRegionName\": \"%s\", "
             "\"productName\": \"Virtual Machines ND Series\", \"skuName\": \"ND96\", \"serviceName\": \"Virtual "
             "Machines\", \"unitOfMeasure\": \"1 Hour\", %s, \"armSkuName\": \"%s\"}\n]}\n",
             price, region, type_and_term, sku);
    write_text(path, text);
}

/* Runs `prices import CAT --format F [extra] --out P` on a fresh copy of base_prices: a refused
 * import exits 2 and leaves the file byte for byte; whatever the exit, the file still loads. */
static void import_refused(const char *cat, const char *format, const char *extra, const char *what)
{
    const char *p = test_path("audit3-prices.csv");
    write_text(p, base_prices);
    const char *a[] = {"prices", "import", cat, "--format", format, "--out", p, "--provider", "x",
                       extra ? "--as-of" : NULL, extra, NULL};
    int rc = cli_run(a, out, sizeof out, err, sizeof err);
    char now[4096];
    slurp(p, now, sizeof now);
    CHECK(rc == 2 && count_of(err, "error:") == 1, "%s: exit %d, want 2 and one error: %s", what, rc, err);
    CHECK(strcmp(now, base_prices) == 0, "%s: the price file changed:\n%s", what, now);
    price_table t;
    capture_stderr_begin();
    int lrc = prices_load(&t, p);
    const char *e = capture_stderr_end();
    CHECK(lrc == 0, "%s: the price file no longer loads: %s", what, e);
    if (lrc == 0) prices_free(&t);
}

/* #2: no accepted import leaves a price file that prices_load refuses. */
static void t_import_rows_checked(void)
{
    const char *sp = test_path("a3-vms.csv"), *aw = test_path("a3-offer.csv"), *az = test_path("a3-azure.json");
    write_text(sp, "InstanceType,Price,Region\nx1,0.0000005,r1\n");
    import_refused(sp, "skypilot", "2025", "skypilot 5e-7 $/h");
    write_offer(aw, "2024-06-20T18:03:39Z", "0.0000005");
    import_refused(aw, "aws-offer", NULL, "aws 5e-7 $/h");
    write_offer(aw, "2024-13-45T00:00:00Z", "1.5");
    import_refused(aw, "aws-offer", NULL, "aws Publication Date 2024-13-45");
    CHECK(strstr(err, "a3-offer.csv:3:"), "names the date's line: %s", err);
    write_offer(aw, "abcdefghijT00:00:00Z", "1.5");
    import_refused(aw, "aws-offer", NULL, "aws Publication Date abcdefghij");
    write_azure(az, "\"type\": \"Reservation\", \"reservationTerm\": \"3 Years\"", 0.0001, "eastus", "Standard_ND96");
    import_refused(az, "azure-retail", "2025", "azure 3-year reservation of $0.0001");
    write_azure(az, "\"type\": \"Consumption\"", 2e6, "eastus", "Standard_ND96");
    import_refused(az, "azure-retail", "2025", "azure 2e6 $/h");
    write_azure(az, "\"type\": \"Consumption\"", 3, "", "Standard_ND96");
    import_refused(az, "azure-retail", "2025", "azure empty armRegionName");
    write_azure(az, "\"type\": \"Consumption\"", 3, "eastus", "");
    import_refused(az, "azure-retail", "2025", "azure empty armSkuName");

    /* the same catalogue imported twice: its price as the file holds it (%.9g), a duplicate, not a
     * conflict of 0.04695586 with 0.04695586 */
    const char *twice = test_path("audit3-twice.csv");
    write_azure(az, "\"type\": \"Reservation\", \"reservationTerm\": \"3 Years\"", 1234, "eastus", "Standard_ND96");
    const char *t2[] = {"prices", "import", az, "--format", "azure-retail", "--as-of", "2025", "--out", twice, NULL};
    int rc2 = cli_run(t2, out, sizeof out, err, sizeof err);
    rc2 = rc2 ? rc2 : cli_run(t2, out, sizeof out, err, sizeof err);
    CHECK(rc2 == 0 && strstr(err, "duplicate: Standard_ND96 eastus reserved_3y 0.04695586 $/h"), "again: %d %s", rc2,
          err);

    /* --replace of a row whose quoted source spans two lines: the whole record becomes '#' lines */
    const char *p = test_path("audit3-multiline.csv");
    write_text(p, PRICE_HEADER "x,x1,r1,on_demand,2,2024,\"a page\nits second line\"\nx,x2,r1,on_demand,3,2024,s\n");
    write_text(sp, "InstanceType,Price,Region\nx1,2.5,r1\n");
    const char *r[] = {"prices", "import", sp, "--format", "skypilot", "--provider", "x", "--as-of", "2025",
                       "--out", p, "--replace", NULL};
    int rc = cli_run(r, out, sizeof out, err, sizeof err);
    price_table t;
    capture_stderr_begin();
    int lrc = prices_load(&t, p);
    const char *e = capture_stderr_end();
    CHECK(rc == 0 && lrc == 0, "--replace of a two-line row: exit %d, load %d: %s%s", rc, lrc, err, e);
    if (lrc == 0) {
        CHECK(t.n == 2 && t.rows[1].usd_per_hour == 2.5, "rows %d", t.n);
        prices_free(&t);
    }
}

/* #11: without a zone column two rows of one key at two prices are a conflict, not folded. */
static void t_skypilot_no_zone_conflict(void)
{
    const char *sp = test_path("a3-nozone.csv");
    write_text(sp, "InstanceType,Price,Region\ngpu_1x_a10,0.75,us-east-1\ngpu_1x_a10,0.70,us-east-1\n");
    const char *a[] = {"prices", "import", sp, "--format", "skypilot", "--provider", "lambda", "--as-of", "2025",
                       NULL};
    int rc = cli_run(a, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "a3-nozone.csv:3: gpu_1x_a10 us-east-1 on_demand: 0.7 $/h conflicts with 0.75 $/h"),
          "exit %d: %s", rc, err);
    write_text(sp, "InstanceType,Price,Region,AvailabilityZone\ngpu_1x_a10,0.75,us-east-1,a\n"
                   "gpu_1x_a10,0.70,us-east-1,b\n");
    rc = cli_run(a, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, ",gpu_1x_a10,us-east-1,on_demand,0.7,"), "zones still folded: %d %s%s", rc, out, err);
}

/* #15: at the least price a plan's cost is printed with significant digits, never as 0. */
static void t_plan_small_cost(void)
{
    const char *p = test_path("a3-cheap.csv");
    write_text(p, PRICE_HEADER "aws,p4d.24xlarge,us-east-1,on_demand,0.000001,2026,cheap\n");
    const char *a[] = {"plan", "--model", "llama2-7b", "--tokens", "1B", "--deadline-days", "30", "--instances",
                       "p4d.24xlarge", "--prices", p, NULL};
    int rc = cli_run(a, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "exit %d: %s", rc, err);
    const char *h = strstr(out, "cost_usd");
    const char *row = h ? strstr(h, "\n   1 ") : NULL;
    CHECK(row != NULL, "no first row:\n%s", out);
    if (!row) return;
    /* the cost_usd cell: right-aligned under the header's word, so read from the header's column */
    const char *hl = h;
    while (hl > out && hl[-1] != '\n') hl--;
    size_t col = (size_t)(h - hl);
    char cell[32] = "";
    sscanf(row + 1 + col, "%31s", cell);
    CHECK(cell[0] && strcmp(cell, "0") != 0 && strspn(cell, "0.") != strlen(cell), "cost_usd '%s':\n%s", cell, out);
    CHECK(!strstr(out, "$0 ") && !strstr(out, "$0.00 ") && !strstr(out, "$0,"), "a zero dollar figure:\n%s", out);
}

/* #17: duplicates found by key (instance, region, option) wherever they are, and only those. */
static void t_prices_duplicates(void)
{
    const char *p = test_path("a3-dups.csv");
    char text[65536];
    size_t l = (size_t)snprintf(text, sizeof text, PRICE_HEADER);
    for (int i = 0; i < 300; i++)
        l += (size_t)snprintf(text + l, sizeof text - l, "x,i%d,r,on_demand,1,2025,s\nx,i%d,r,spot,1,2025,s\n"
                              "x,i%d,r2,on_demand,1,2025,s\n", i, i, i);
    write_text(p, text);
    price_table t;
    capture_stderr_begin();
    int rc = prices_load(&t, p);
    const char *e = capture_stderr_end();
    CHECK(rc == 0 && t.n == 900, "no duplicates: %s", e);
    if (rc == 0) prices_free(&t);
    snprintf(text + l, sizeof text - l, "x,i7,r2,on_demand,2,2025,s\n");
    write_text(p, text);
    capture_stderr_begin();
    rc = prices_load(&t, p);
    e = capture_stderr_end();
    CHECK(rc != 0 && strstr(e, "a3-dups.csv:902: i7 r2 on_demand is already priced at line 25") &&
              count_of(e, "error:") == 1,
          "%s", e);
}

/* #18: one clear error line each; a header-only price file takes rows. */
static void t_messages(void)
{
    const char *aw = test_path("a3-empty-offer.csv"), *p = test_path("a3-header-only.csv");
    write_text(aw, "");
    const char *a[] = {"prices", "import", aw, "--format", "aws-offer", NULL};
    int rc = cli_run(a, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && count_of(err, "error:") == 1 && strstr(err, "a3-empty-offer.csv"), "empty offer: %d %s", rc, err);
    write_offer(aw, "", "1.5");
    rc = cli_run(a, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && count_of(err, "error:") == 1 && strstr(err, "a3-empty-offer.csv:3:"), "empty date: %d %s", rc,
          err);
    const char *cr = test_path("a3-cr.csv");
    write_text(cr, "InstanceType,Price,Region\rx1,1.5,r1\r");
    const char *c[] = {"prices", "import", cr, "--format", "skypilot", "--provider", "x", "--as-of", "2025", NULL};
    rc = cli_run(c, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && count_of(err, "error:") == 1 && strstr(err, "a3-cr.csv:1: lines end in CR alone"),
          "CR-only: %d %s%s", rc, out, err);
    write_text(cr, "# prices\r" PRICE_HEADER "x,a,r,on_demand,1,2025,s\r");
    const char *l[] = {"prices", "--prices", cr, NULL};
    rc = cli_run(l, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && !strstr(err, "empty file") && strstr(err, "a3-cr.csv:1: lines end in CR alone"),
          "CR-only price file: %d %s", rc, err);
    write_text(p, PRICE_HEADER);
    const char *h[] = {"prices", "import", "tests/catalogs/aws-offer.csv", "--format", "aws-offer", "--out", p, NULL};
    rc = cli_run(h, out, sizeof out, err, sizeof err);
    price_table t;
    CHECK(rc == 0 && prices_load(&t, p) == 0 && t.n == 2, "header-only file: %d %s", rc, err);
    if (rc == 0) prices_free(&t);
    const char *v[] = {"prices", "import", "tests/catalogs/aws-offer.csv", "--format", "aws-offer", "--provider",
                       "a-provider-name-of-32-characters", NULL};
    rc = cli_run(v, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "flag '--provider'") && !strstr(out, "a-provider-name-of-32-character,"),
          "long provider: %d %s", rc, err);
    const char *az = test_path("a3-dupkey.json");
    write_text(az, "{\"Items\": [], \"Items\": [1]}\n");
    const char *j[] = {"prices", "import", az, "--format", "azure-retail", "--as-of", "2025", NULL};
    rc = cli_run(j, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "a3-dupkey.json:1:") && strstr(err, "'Items'"), "duplicate key: %d %s", rc, err);
}

const test_case tests_audit3_prices[] = {
    {"audit3 prices: #2 prices import --out never leaves a file prices_load refuses", t_import_rows_checked},
    {"audit3 prices: #11 skypilot rows without a zone at two prices are a conflict", t_skypilot_no_zone_conflict},
    {"audit3 prices: #15 plan prints a cost at the least price with significant digits", t_plan_small_cost},
    {"audit3 prices: #17 prices_load finds duplicates by key", t_prices_duplicates},
    {"audit3 prices: #18 one error per bad catalogue, header-only file, --provider length, duplicate JSON key",
     t_messages},
    {NULL, NULL},
};
