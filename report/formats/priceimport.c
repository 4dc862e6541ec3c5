#include "priceimport.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/parse.h"
#include "../../common/schema.h"
#include "json.h"
#include "kvconf.h"

#define HOURS_PER_YEAR 8760.0

/* One row being read: where it is, for the row's source and for errors. */
typedef struct pi_ctx {
    const char *path, *format, *provider, *as_of;
    const price_import_opts *o;
    FILE *notes;
    int fold_zones;     /* skypilot: a key seen again is another zone of the region */
    char as_of_buf[24]; /* the date a catalogue states (aws-offer), where as_of points then */
    const char *item_date; /* azure-retail: the item's effectiveStartDate (YYYY-MM-DD): a key seen
                            * again is a price change, the latest date kept */
    char item_name[200];   /* azure-retail: "Items[N] (armSkuName, meterName)" for errors */
} pi_ctx;

static void drop(price_import *pi, const char *reason)
{
    for (int i = 0; i < pi->nreasons; i++)
        if (strcmp(pi->reasons[i], reason) == 0) {
            pi->dropped[i]++;
            return;
        }
    if (pi->nreasons == PI_MAX_REASONS) return;
    snprintf(pi->reasons[pi->nreasons], sizeof pi->reasons[0], "%s", reason);
    pi->dropped[pi->nreasons++] = 1;
}

/* 1 when `word` is one of list[0..n) (n 0: everything passes). */
static int in_list(char *const *list, int n, const char *word)
{
    for (int k = 0; k < n; k++)
        if (strcmp(list[k], word) == 0) return 1;
    return n == 0;
}

/* A price of a key already kept (q) from an item dated c->item_date: the latest effectiveStartDate
 * wins, the other is counted as superseded; the same date at the same price is a repeat, at
 * another price a conflict naming both items. */
static int pi_supersede(price_import *pi, const pi_ctx *c, price_row *q, double usd_per_hour, int line,
                        const char *where)
{
    int cmp = strcmp(c->item_date, q->as_of);
    if (cmp == 0 && q->usd_per_hour == usd_per_hour) return drop(pi, "the same price repeated"), 0;
    if (cmp == 0)
        return err_usage("%s:%d: %s: %s %s %s: %.9g $/h from %s, but %s has %.9g $/h from the same date: two prices "
                         "of one SKU and option",
                         c->path, line, c->item_name, q->instance, q->region, q->option, usd_per_hour, c->item_date,
                         q->source, q->usd_per_hour);
    pi->nsuperseded++;
    if (cmp < 0) return 0; /* older than the price kept */
    q->usd_per_hour = usd_per_hour, q->line = line;
    snprintf(q->as_of, sizeof q->as_of, "%s", c->item_date);
    snprintf(q->source, sizeof q->source, "%s (%s, %s)", c->path, c->format, where);
    return 0;
}

/* Adds one price; `where` is "line N" or "item N". Returns 0 or CB_EUSAGE on a conflict. */
static int pi_add(price_import *pi, const pi_ctx *c, const char *instance, const char *region, const char *option,
                  double usd_per_hour, int line, const char *where)
{
    if (usd_per_hour <= 0) return drop(pi, "price 0 (not offered)"), 0;
    if (!in_list(c->o->instances, c->o->ninstances, instance)) return drop(pi, "not in --instances"), 0;
    if (!in_list(c->o->regions, c->o->nregions, region)) return drop(pi, "not in --regions"), 0;
    for (int i = 0; i < pi->n; i++) {
        price_row *q = &pi->rows[i];
        if (strcmp(q->instance, instance) || strcmp(q->region, region) || strcmp(q->option, option)) continue;
        if (c->item_date) return pi_supersede(pi, c, q, usd_per_hour, line, where);
        if (q->usd_per_hour == usd_per_hour) {
            if (c->fold_zones)
                pi->nfolded++;
            else
                drop(pi, "the same price repeated");
            return 0;
        }
        if (!c->fold_zones)
            return err_usage("%s:%d: %s %s %s: %.9g $/h conflicts with %.9g $/h at %s:%d", c->path, line, instance,
                             region, option, usd_per_hour, q->usd_per_hour, c->path, q->line);
        if (c->notes)
            fprintf(c->notes, "note: %s %s %s: zones priced %.9g (line %d) and %.9g (line %d): the lowest kept\n",
                    instance, region, option, q->usd_per_hour, q->line, usd_per_hour, line);
        pi->nfolded++;
        if (usd_per_hour < q->usd_per_hour) {
            q->usd_per_hour = usd_per_hour;
            q->line = line;
            snprintf(q->source, sizeof q->source, "%s (%s, %s)", c->path, c->format, where);
        }
        return 0;
    }
    if (strlen(instance) >= sizeof pi->rows[0].instance || strlen(region) >= sizeof pi->rows[0].region)
        return err_usage("%s:%d: instance type or region longer than the price table holds", c->path, line);
    if (pi->n == pi->cap) {
        int cap = pi->cap ? 2 * pi->cap : 64;
        price_row *r = realloc(pi->rows, (size_t)cap * sizeof *r);
        if (!r) return err_msg("out of memory");
        pi->rows = r;
        pi->cap = cap;
    }
    price_row *p = &pi->rows[pi->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->provider, sizeof p->provider, "%s", c->provider);
    snprintf(p->instance, sizeof p->instance, "%s", instance);
    snprintf(p->region, sizeof p->region, "%s", region);
    snprintf(p->option, sizeof p->option, "%s", option);
    snprintf(p->as_of, sizeof p->as_of, "%s", c->item_date ? c->item_date : c->as_of);
    snprintf(p->source, sizeof p->source, "%s (%s, %s)", c->path, c->format, where);
    p->usd_per_hour = usd_per_hour;
    p->line = line;
    return 0;
}

/* A price cell: a finite number >= 0. */
static int price_cell(const table *t, int row, int col, double *out)
{
    return table_get_double(t, row, col, 0, 1e6, out);
}

/* ------------------------------------------------------------------ skypilot */

/* GCP prices its A2/A3/A4 machine types' host alone; their GPUs are rows of their own (no
 * InstanceType). The GPUs each machine type carries, as SkyPilot's GCP catalogue code maps them
 * (sky/catalog/gcp_catalog.py, _ACC_INSTANCE_TYPE_DICTS). */
static const struct {
    const char *machine, *accelerator;
    int count;
} host_gpus[] = {
    {"a2-highgpu-1g", "A100", 1},       {"a2-highgpu-2g", "A100", 2},       {"a2-highgpu-4g", "A100", 4},
    {"a2-highgpu-8g", "A100", 8},       {"a2-megagpu-16g", "A100", 16},     {"a2-ultragpu-1g", "A100-80GB", 1},
    {"a2-ultragpu-2g", "A100-80GB", 2}, {"a2-ultragpu-4g", "A100-80GB", 4}, {"a2-ultragpu-8g", "A100-80GB", 8},
    {"a3-highgpu-1g", "H100", 1},       {"a3-highgpu-2g", "H100", 2},       {"a3-highgpu-4g", "H100", 4},
    {"a3-highgpu-8g", "H100", 8},       {"a3-megagpu-8g", "H100-MEGA", 8},  {"a3-ultragpu-8g", "H200", 8},
    {"a4-highgpu-8g", "B200", 8},
};

/* Columns of a SkyPilot catalogue; the first three are required. */
enum { SK_INSTANCE, SK_PRICE, SK_REGION, SK_ACC, SK_SPOT, SK_ACC_COUNT, SK_ZONE, SK_NCOLS };
static const char *const sky_cols[SK_NCOLS] = {"InstanceType", "Price",           "Region",          "AcceleratorName",
                                               "SpotPrice",    "AcceleratorCount", "AvailabilityZone"};

/* The accelerator-only row pricing `count` x `acc` in row i's region and zone, or -1. */
static int gpu_row(const table *t, const int *col, int i, const char *acc, int count)
{
    if (col[SK_ACC] < 0 || col[SK_ACC_COUNT] < 0) return -1;
    const char *region = table_cell(t, i, col[SK_REGION]);
    const char *zone = col[SK_ZONE] >= 0 ? table_cell(t, i, col[SK_ZONE]) : "";
    for (int g = 0; g < t->nrows; g++) {
        if (*table_cell(t, g, col[SK_INSTANCE]) || strcasecmp(table_cell(t, g, col[SK_ACC]), acc) != 0) continue;
        if (strcmp(table_cell(t, g, col[SK_REGION]), region) != 0) continue;
        if (col[SK_ZONE] >= 0 && strcmp(table_cell(t, g, col[SK_ZONE]), zone) != 0) continue;
        char *end;
        const char *n = table_cell(t, g, col[SK_ACC_COUNT]);
        double v = strtod(n, &end);
        if (end != n && *end == '\0' && v == count) return g;
    }
    return -1;
}

/* Row i's on-demand and spot prices, each plus GPU row g's (g < 0: none). */
static int skypilot_add(price_import *pi, const pi_ctx *c, const table *t, const int *col, int i, int g,
                        const char *where)
{
    static const int price_col[2] = {SK_PRICE, SK_SPOT};
    static const char *const option[2] = {"on_demand", "spot"};
    for (int k = 0; k < 2; k++) {
        if (col[price_col[k]] < 0) continue;
        const char *cell = table_cell(t, i, col[price_col[k]]);
        const char *gcell = g >= 0 ? table_cell(t, g, col[price_col[k]]) : "-";
        if (!*cell || !*gcell) {
            if (k == 0) drop(pi, "no Price");
            continue;
        }
        double usd, gpu = 0;
        if (price_cell(t, i, col[price_col[k]], &usd) != 0) return CB_EUSAGE;
        if (g >= 0 && price_cell(t, g, col[price_col[k]], &gpu) != 0) return CB_EUSAGE;
        int rc = pi_add(pi, c, table_cell(t, i, col[SK_INSTANCE]), table_cell(t, i, col[SK_REGION]), option[k],
                        usd + gpu, t->lines[i], where);
        if (rc) return rc;
    }
    return 0;
}

static int skypilot_row(price_import *pi, const pi_ctx *c, const table *t, const int *col, int i, int host_only)
{
    char where[96];
    const char *inst = table_cell(t, i, col[SK_INSTANCE]), *region = table_cell(t, i, col[SK_REGION]);
    const char *acc = col[SK_ACC] >= 0 ? table_cell(t, i, col[SK_ACC]) : "";
    snprintf(where, sizeof where, "line %d", t->lines[i]);
    if (!*inst) return drop(pi, "accelerator-only row (priced apart from its host)"), 0;
    if (!*region) return err_usage("%s:%d: column 'Region': empty", c->path, t->lines[i]);
    int g = -1;
    if (host_only && !*acc) {
        int h = -1;
        for (size_t k = 0; k < sizeof host_gpus / sizeof host_gpus[0] && h < 0; k++)
            if (strcmp(host_gpus[k].machine, inst) == 0) h = (int)k;
        if (h >= 0) g = gpu_row(t, col, i, host_gpus[h].accelerator, host_gpus[h].count);
        if (h >= 0 && g < 0 && c->notes)
            fprintf(c->notes, "note: %s %s (line %d): no %s x %d row for its zone: dropped (the host's price alone "
                    "is not the instance's)\n", inst, region, t->lines[i], host_gpus[h].accelerator,
                    host_gpus[h].count);
        if (g < 0) return drop(pi, "host price only (this cloud prices accelerators apart)"), 0;
        snprintf(where, sizeof where, "lines %d+%d: host + %d x %s", t->lines[i], t->lines[g], host_gpus[h].count,
                 host_gpus[h].accelerator);
    }
    return skypilot_add(pi, c, t, col, i, g, where);
}

static int read_skypilot(price_import *pi, pi_ctx *c)
{
    table t;
    if (table_load(&t, c->path) != 0) return CB_EUSAGE;
    int col[SK_NCOLS], rc = 0, host_only = 0;
    for (int k = 0; k < SK_NCOLS && rc == 0; k++)
        if ((col[k] = table_col(&t, sky_cols[k], k < 3)) < 0 && k < 3) rc = CB_EUSAGE;
    /* A catalogue with accelerator-only rows (no InstanceType) prices GPUs apart from the host:
     * its instance rows without an accelerator are the host's price alone, joined to the GPU row
     * of the same zone where the machine type names its GPUs. */
    for (int i = 0; rc == 0 && i < t.nrows; i++)
        if (!*table_cell(&t, i, col[SK_INSTANCE])) host_only = 1;
    c->fold_zones = col[SK_ZONE] >= 0; /* without zones, two prices of one key are a conflict */
    for (int i = 0; rc == 0 && i < t.nrows; i++) {
        pi->nread++;
        rc = skypilot_row(pi, c, &t, col, i, host_only);
    }
    table_free(&t);
    return rc;
}

/* ------------------------------------------------------------------ aws-offer */

enum {
    AW_SKU,
    AW_TERMCODE,
    AW_TERMTYPE,
    AW_UNIT,
    AW_PRICE,
    AW_CURRENCY,
    AW_LEASE,
    AW_PURCHASE,
    AW_CLASS,
    AW_FAMILY,
    AW_INSTANCE,
    AW_TENANCY,
    AW_OS,
    AW_LICENSE,
    AW_CAPACITY,
    AW_SW,
    AW_REGION,
    AW_NCOLS
};
static const char *const aws_cols[AW_NCOLS] = {"SKU",
                                               "OfferTermCode",
                                               "TermType",
                                               "Unit",
                                               "PricePerUnit",
                                               "Currency",
                                               "LeaseContractLength",
                                               "PurchaseOption",
                                               "OfferingClass",
                                               "Product Family",
                                               "Instance Type",
                                               "Tenancy",
                                               "Operating System",
                                               "License Model",
                                               "CapacityStatus",
                                               "Pre Installed S/W",
                                               "Region Code"};
/* The product filter: column, the value kept, the reason a row is dropped. */
static const struct {
    int col;
    const char *keep, *why;
} aws_keep[] = {
    {AW_FAMILY, "Compute Instance", "not a compute instance"},
    {AW_OS, "Linux", "operating system not Linux"},
    {AW_TENANCY, "Shared", "tenancy not Shared"},
    {AW_SW, "NA", "pre-installed software"},
    {AW_CAPACITY, "Used", "capacity status not Used (reservation bookkeeping)"},
    {AW_LICENSE, "No License required", "license model not 'No License required'"},
    {AW_CURRENCY, "USD", "currency not USD"},
};

/* One reserved term (SKU + offer term code) being assembled from its hourly and upfront rows. */
typedef struct {
    char sku[32], term[32], instance[64], region[32], purchase[32];
    int years, line;
    double hourly, upfront;
    int have_hourly;
} aws_term;

typedef struct {
    aws_term *v;
    int n, cap;
} aws_terms;

/* The metadata rows before the header: "Publication Date","2024-...T..Z" gives as_of (a real
 * date, price_as_of_check). One error for an empty file, lines ending in CR alone, a file without
 * "FormatVersion" first, or a missing or malformed date. */
static int aws_metadata(pi_ctx *c, char *as_of, size_t n)
{
    text_lines tl;
    if (text_lines_load(&tl, c->path) != 0) return CB_EUSAGE;
    static const char key[] = "\"Publication Date\",\"";
    int rc = 1; /* 1: no date yet */
    if (tl.n == 0)
        rc = err_usage("%s: empty file: expected an AWS offer file (\"FormatVersion\" first)", c->path);
    else if (strchr(tl.line[0], '\r'))
        rc = err_usage("%s:1: lines end in CR alone (old Mac line endings): convert them to LF", c->path);
    else if (strncmp(tl.line[0], "\"FormatVersion\"", 15) != 0)
        rc = err_usage("%s:1: not an AWS offer file: expected \"FormatVersion\" first, got '%.40s'", c->path,
                       tl.line[0]);
    for (int i = 0; rc > 0 && i < tl.n && i < 5; i++) {
        const char *s = tl.line[i];
        if (strncmp(s, key, sizeof key - 1) != 0) continue;
        s += sizeof key - 1;
        size_t l = strcspn(s, "T\"");
        if (l == 10 && l < n) snprintf(as_of, n, "%.10s", s);
        if (l != 10 || l >= n || price_as_of_check(as_of) != 0)
            rc = err_usage("%s:%d: Publication Date: expected a date YYYY-MM-DDT..., got '%.*s'", c->path, i + 1,
                           (int)(strcspn(s, "\"") < 30 ? strcspn(s, "\"") : 30), s);
        else
            rc = 0;
    }
    if (rc > 0) rc = err_usage("%s: no \"Publication Date\" among the first 5 rows", c->path);
    text_lines_free(&tl);
    return rc;
}

/* A reserved row's part of its term: the "Hrs" row (hourly) or the "Quantity" row (upfront fee). */
static int aws_reserved(aws_terms *ts, const pi_ctx *c, const table *t, const int *col, int i, double usd)
{
    const char *sku = table_cell(t, i, col[AW_SKU]), *code = table_cell(t, i, col[AW_TERMCODE]);
    const char *lease = table_cell(t, i, col[AW_LEASE]), *unit = table_cell(t, i, col[AW_UNIT]);
    aws_term *term = NULL;
    for (int k = 0; k < ts->n && !term; k++)
        if (strcmp(ts->v[k].sku, sku) == 0 && strcmp(ts->v[k].term, code) == 0) term = &ts->v[k];
    if (!term) {
        int years = strcmp(lease, "1yr") == 0 ? 1 : strcmp(lease, "3yr") == 0 ? 3 : 0;
        if (!years)
            return err_usage("%s:%d: column 'LeaseContractLength': expected 1yr or 3yr, got '%s'", c->path, t->lines[i],
                             lease);
        if (ts->n == ts->cap) {
            int cap = ts->cap ? 2 * ts->cap : 32;
            aws_term *v = realloc(ts->v, (size_t)cap * sizeof *v);
            if (!v) return err_msg("out of memory");
            ts->v = v;
            ts->cap = cap;
        }
        term = &ts->v[ts->n++];
        memset(term, 0, sizeof *term);
        snprintf(term->sku, sizeof term->sku, "%s", sku);
        snprintf(term->term, sizeof term->term, "%s", code);
        snprintf(term->instance, sizeof term->instance, "%s", table_cell(t, i, col[AW_INSTANCE]));
        snprintf(term->region, sizeof term->region, "%s", table_cell(t, i, col[AW_REGION]));
        snprintf(term->purchase, sizeof term->purchase, "%s", table_cell(t, i, col[AW_PURCHASE]));
        term->years = years;
    }
    if (strcmp(unit, "Hrs") == 0) {
        term->hourly = usd;
        term->have_hourly = 1;
        term->line = t->lines[i];
    } else if (strcmp(unit, "Quantity") == 0) {
        term->upfront = usd;
        if (!term->line) term->line = t->lines[i];
    } else {
        return err_usage("%s:%d: column 'Unit': expected Hrs or Quantity for a Reserved term, got '%s'", c->path,
                         t->lines[i], unit);
    }
    return 0;
}

/* One offer row: filtered, then an on-demand price or a part of a reserved term. */
static int aws_row(price_import *pi, const pi_ctx *c, const table *t, const int *col, int i, aws_terms *ts)
{
    for (size_t k = 0; k < sizeof aws_keep / sizeof aws_keep[0]; k++)
        if (strcmp(table_cell(t, i, col[aws_keep[k].col]), aws_keep[k].keep) != 0) return drop(pi, aws_keep[k].why), 0;
    const char *type = table_cell(t, i, col[AW_TERMTYPE]), *inst = table_cell(t, i, col[AW_INSTANCE]);
    double usd;
    if (!*inst || !*table_cell(t, i, col[AW_REGION]))
        return err_usage("%s:%d: a compute instance row without 'Instance Type' or 'Region Code'", c->path,
                         t->lines[i]);
    if (price_cell(t, i, col[AW_PRICE], &usd) != 0) return CB_EUSAGE;
    if (strcmp(type, "OnDemand") == 0) {
        if (strcmp(table_cell(t, i, col[AW_UNIT]), "Hrs") != 0) return drop(pi, "on-demand row not per hour"), 0;
        char where[32];
        snprintf(where, sizeof where, "line %d", t->lines[i]);
        return pi_add(pi, c, inst, table_cell(t, i, col[AW_REGION]), "on_demand", usd, t->lines[i], where);
    }
    if (strcmp(type, "Reserved") != 0)
        return err_usage("%s:%d: column 'TermType': expected OnDemand or Reserved, got '%s'", c->path, t->lines[i],
                         type);
    if (strcmp(table_cell(t, i, col[AW_CLASS]), "standard") != 0) return drop(pi, "convertible reserved term"), 0;
    return aws_reserved(ts, c, t, col, i, usd);
}

/* hourly + upfront / (years x 8760): the upfront fee spread over the term's hours. */
static double term_eff(const aws_term *a)
{
    return a->hourly + a->upfront / (a->years * HOURS_PER_YEAR);
}

/* The reserved terms: per (instance, region, years) the cheapest effective hourly rate becomes
 * the row; the other purchase options are noted. */
static int aws_reserved_rows(price_import *pi, const pi_ctx *c, const aws_terms *ts)
{
    for (int k = 0; k < ts->n; k++) {
        const aws_term *a = &ts->v[k];
        if (!a->have_hourly)
            return err_usage("%s:%d: reserved term %s.%s has an upfront fee but no hourly (Hrs) row", c->path, a->line,
                             a->sku, a->term);
    }
    for (int k = 0; k < ts->n; k++) {
        const aws_term *a = &ts->v[k], *best = a;
        double eff = term_eff(a), best_eff = eff;
        for (int j = 0; j < ts->n; j++) {
            const aws_term *b = &ts->v[j];
            if (strcmp(b->instance, a->instance) || strcmp(b->region, a->region) || b->years != a->years) continue;
            double e = term_eff(b);
            if (e < best_eff || (e == best_eff && j < (int)(best - ts->v))) best = b, best_eff = e;
        }
        if (c->notes)
            fprintf(c->notes, "note: %s %s reserved %dy %s: %.9g $/h + %.9g upfront = %.9g $/h effective (line %d)%s\n",
                    a->instance, a->region, a->years, a->purchase, a->hourly, a->upfront, eff, a->line,
                    best == a ? ": kept (the cheapest)" : "");
        if (best != a) continue;
        char where[32];
        snprintf(where, sizeof where, "line %d", a->line);
        int rc =
            pi_add(pi, c, a->instance, a->region, a->years == 1 ? "reserved_1y" : "reserved_3y", eff, a->line, where);
        if (rc) return rc;
    }
    return 0;
}

static int read_aws(price_import *pi, pi_ctx *c)
{
    if (aws_metadata(c, c->as_of_buf, sizeof c->as_of_buf) != 0) return CB_EUSAGE;
    if (!c->o->as_of) c->as_of = c->as_of_buf;
    table t;
    if (table_load_skip(&t, c->path, 5) != 0) return CB_EUSAGE;
    int col[AW_NCOLS], rc = 0;
    for (int k = 0; k < AW_NCOLS && rc == 0; k++)
        if ((col[k] = table_col(&t, aws_cols[k], 1)) < 0) rc = CB_EUSAGE;
    aws_terms ts = {0};
    for (int i = 0; rc == 0 && i < t.nrows; i++) {
        pi->nread++;
        rc = aws_row(pi, c, &t, col, i, &ts);
    }
    if (rc == 0) rc = aws_reserved_rows(pi, c, &ts);
    free(ts.v);
    table_free(&t);
    return rc;
}

/* ------------------------------------------------------------------ azure-retail */

static const char *const az_fields[] = {"currencyCode", "retailPrice",   "armRegionName", "productName", "skuName",
                                        "serviceName",  "unitOfMeasure", "type",          "armSkuName"};

/* Product names of the Virtual Machines service that price no VM hour: (a word of productName, the
 * reason counted). */
static const char *const az_not_vm[][2] = {
    {"Cloud Services", "Cloud Services (not a VM price)"}, {"CloudServices", "Cloud Services (not a VM price)"},
    {"Dedicated Host", "Dedicated Host (not a VM price)"}, {"DedicatedHost", "Dedicated Host (not a VM price)"},
};

/* 1 when `word` stands in s as a word of its own (not inside another: "Win" in "Srs Win", not in
 * "Twin"). */
static int has_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(s, word); p; p = strstr(p + 1, word)) {
        int before = p == s || !isalnum((unsigned char)p[-1]), after = !isalnum((unsigned char)p[n]);
        if (before && after) return 1;
    }
    return 0;
}

/* A Windows price: "Windows" or "Win" as a word in the product, meter or SKU name. */
static int azure_windows(const json_val *it)
{
    static const char *const fields[] = {"productName", "meterName", "skuName"};
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        const char *v = json_get_str(it, fields[k]);
        if (v && (has_word(v, "Windows") || has_word(v, "Win"))) return 1;
    }
    return 0;
}

/* The option of a kept item, or NULL after counting why it is dropped. */
static const char *azure_option(price_import *pi, const json_val *it, int *years)
{
    const char *type = json_get_str(it, "type"), *sku = json_get_str(it, "skuName");
    const char *product = json_get_str(it, "productName");
    *years = 0;
    if (strcmp(json_get_str(it, "serviceName"), "Virtual Machines") != 0)
        return drop(pi, "not a virtual machine"), NULL;
    for (size_t k = 0; k < sizeof az_not_vm / sizeof az_not_vm[0]; k++)
        if (strstr(product, az_not_vm[k][0])) return drop(pi, az_not_vm[k][1]), NULL;
    if (azure_windows(it)) return drop(pi, "Windows"), NULL;
    if (strstr(sku, "Low Priority")) return drop(pi, "Low Priority"), NULL;
    if (strcmp(json_get_str(it, "currencyCode"), "USD") != 0) return drop(pi, "currency not USD"), NULL;
    if (strcmp(json_get_str(it, "unitOfMeasure"), "1 Hour") != 0) return drop(pi, "unit not '1 Hour'"), NULL;
    if (strcmp(type, "DevTestConsumption") == 0) return drop(pi, "DevTestConsumption"), NULL;
    if (strcmp(type, "Consumption") == 0) return strstr(sku, "Spot") ? "spot" : "on_demand";
    if (strcmp(type, "Reservation") != 0) return drop(pi, "type not Consumption or Reservation"), NULL;
    const char *term = json_get_str(it, "reservationTerm");
    *years = !term ? 0 : strcmp(term, "1 Year") == 0 ? 1 : strcmp(term, "3 Years") == 0 ? 3 : 0;
    if (!*years) return drop(pi, "reservation term not 1 Year or 3 Years"), NULL;
    return *years == 1 ? "reserved_1y" : "reserved_3y";
}

/* The item's date (effectiveStartDate's YYYY-MM-DD, else --as-of) into date; its name into c. */
static int azure_item_date(pi_ctx *c, const json_val *it, int index, char *date, size_t n)
{
    const char *start = json_get_str(it, "effectiveStartDate"), *meter = json_get_str(it, "meterName");
    snprintf(c->item_name, sizeof c->item_name, "Items[%d] (%.64s, meterName '%.64s')", index,
             json_get_str(it, "armSkuName"), meter ? meter : "");
    if (!start && !c->o->as_of)
        return err_usage("%s:%d: %s: no 'effectiveStartDate' and no --as-of: the price's date is unknown", c->path,
                         it->line, c->item_name);
    snprintf(date, n, "%.10s", start ? start : c->o->as_of);
    if (start && (strlen(date) != 10 || price_as_of_check(date) != 0))
        return err_usage("%s:%d: %s: 'effectiveStartDate': expected YYYY-MM-DD..., got '%.40s'", c->path, it->line,
                         c->item_name, start);
    return 0;
}

static int azure_item(price_import *pi, pi_ctx *c, const json_val *it, int index)
{
    if (it->kind != JSON_OBJECT) return err_usage("%s:%d: Items[%d]: expected an object", c->path, it->line, index);
    for (size_t k = 0; k < sizeof az_fields / sizeof az_fields[0]; k++) {
        const json_val *f = json_get(it, az_fields[k]);
        json_kind want = k == 1 ? JSON_NUMBER : JSON_STRING;
        if (!f || f->kind != want)
            return err_usage("%s:%d: Items[%d]: '%s' %s", c->path, it->line, index, az_fields[k],
                             f ? (want == JSON_NUMBER ? "is not a number" : "is not a string") : "is missing");
    }
    int years;
    const char *option = azure_option(pi, it, &years);
    if (!option) return 0;
    double usd = json_get(it, "retailPrice")->number;
    if (usd < 0) return err_usage("%s:%d: Items[%d]: negative 'retailPrice'", c->path, it->line, index);
    if (years) usd /= years * HOURS_PER_YEAR; /* a reservation's price is for the whole term */
    char where[32], date[24];
    snprintf(where, sizeof where, "item %d", index);
    if (azure_item_date(c, it, index, date, sizeof date) != 0) return CB_EUSAGE;
    c->item_date = date;
    int rc = pi_add(pi, c, json_get_str(it, "armSkuName"), json_get_str(it, "armRegionName"), option, usd, it->line,
                    where);
    c->item_date = NULL;
    return rc;
}

/* The items: the answer's 'Items' array, or a saved list of items (a top-level array, as scripts
 * that follow NextPageLink write the pages' items); a NextPageLink set says this is one page. */
static int read_azure(price_import *pi, pi_ctx *c)
{
    json_val doc;
    if (json_load(c->path, &doc) != 0) return CB_EUSAGE;
    const json_val *items = doc.kind == JSON_ARRAY ? &doc : json_get(&doc, "Items");
    int rc = 0;
    if (!items || items->kind != JSON_ARRAY)
        rc = err_usage("%s:%d: not an Azure retail prices document: no 'Items' array (nor a list of items)", c->path,
                       doc.line);
    const char *next = doc.kind == JSON_OBJECT ? json_get_str(&doc, "NextPageLink") : NULL;
    if (rc == 0 && next && *next) {
        pi->next_page = 1;
        if (c->notes)
            fprintf(c->notes, "note: %s is one page of a longer answer (NextPageLink %.200s): only its %d items are "
                    "read (`prices update` follows the links)\n", c->path, next, items->n);
    }
    for (int i = 0; rc == 0 && i < items->n; i++) {
        pi->nread++;
        rc = azure_item(pi, c, &items->items[i], i);
    }
    json_free(&doc);
    return rc;
}

/* ------------------------------------------------------------------ reading */

/* What a provider name may hold (--provider, or the directory of a catalogue path). */
#define PROVIDER_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."

/* The cloud of a SkyPilot catalogue path: the directory holding vms.csv, when it is a name of
 * PROVIDER_CHARS that fits n. */
static int provider_from_path(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path || strcmp(slash + 1, "vms.csv") != 0) return CB_EUSAGE;
    const char *start = slash - 1;
    while (start > path && start[-1] != '/') start--;
    size_t l = (size_t)(slash - start);
    if (l == 0 || l >= n || strspn(start, PROVIDER_CHARS) < l) return CB_EUSAGE;
    memcpy(out, start, l);
    out[l] = '\0';
    return 0;
}

/* ------------------------------------------------------------------ the formats */

/* The registry: one row per catalogue format (adding a format = its reader above + a row here). */
const price_format price_formats[] = {
    {"skypilot", "SkyPilot's catalogue of one cloud (<cloud>/vms.csv)", NULL, "", read_skypilot},
    {"aws-offer", "the AWS Price List offer file of AmazonEC2 as CSV", "aws", NULL, read_aws},
    {"azure-retail", "the Azure Retail Prices API's JSON", "azure", NULL, read_azure},
};
const int price_nformats = (int)(sizeof price_formats / sizeof price_formats[0]);

const price_format *price_format_find(const char *name)
{
    for (int i = 0; name && i < price_nformats; i++)
        if (strcmp(name, price_formats[i].name) == 0) return &price_formats[i];
    return NULL;
}

void price_formats_join(char *buf, size_t n, const char *sep, const char *last, int need_as_of)
{
    int k = 0, total = 0;
    for (int i = 0; i < price_nformats; i++) total += !need_as_of || price_formats[i].as_of_why;
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < price_nformats && len < n; i++) {
        if (need_as_of && !price_formats[i].as_of_why) continue;
        const char *s = k == 0 ? "" : k == total - 1 ? last : sep;
        len += (size_t)snprintf(buf + len, n - len, "%s%s", s, price_formats[i].name);
        k++;
    }
}

/* ------------------------------------------------------------------ reading */

static int import_context(pi_ctx *c, const char *path, const price_import_opts *o, char *prov, size_t n)
{
    memset(c, 0, sizeof *c);
    c->path = path;
    c->format = o->format->name;
    c->o = o;
    c->as_of = o->as_of;
    c->provider = o->provider ? o->provider : o->format->provider;
    size_t pl = o->provider ? strlen(o->provider) : 1;
    if (o->provider && (pl == 0 || pl >= sizeof ((price_row *)0)->provider ||
                        strspn(o->provider, PROVIDER_CHARS) != pl))
        return err_usage("flag '--provider': expected a name of 1 to %zu letters, digits, '-', '_' or '.', got "
                         "'%.60s'",
                         sizeof ((price_row *)0)->provider - 1, o->provider);
    if (access(path, R_OK) != 0) return err_usage("%s: cannot open: %s", path, strerror(errno));
    if (!c->provider && provider_from_path(path, prov, n) == 0) c->provider = prov;
    if (!c->provider)
        return err_usage("%s: which cloud? give --provider (a SkyPilot catalogue path names it: .../aws/vms.csv)",
                         path);
    if (o->format->as_of_why && !o->as_of)
        return err_usage("flag '--as-of': required for --format %s: the catalogue does not say when its prices were "
                         "read%s",
                         c->format, o->format->as_of_why);
    return 0;
}

int price_import_read(price_import *pi, const char *path, const price_import_opts *o, FILE *notes)
{
    memset(pi, 0, sizeof *pi);
    pi_ctx c;
    char prov[32];
    int rc = import_context(&c, path, o, prov, sizeof prov);
    c.notes = notes;
    if (rc == 0 && o->as_of && price_as_of_check(o->as_of) != 0)
        rc = err_usage("flag '--as-of': expected YYYY, YYYY-MM or YYYY-MM-DD, got '%s'", o->as_of);
    if (rc == 0) rc = o->format->read(pi, &c);
    for (int i = 0; rc == 0 && i < pi->n; i++) {
        /* the price as the file will hold it (%.9g), so that importing it again finds a duplicate,
         * then what the price file will hold, by its own rules */
        char num[32];
        snprintf(num, sizeof num, "%.9g", pi->rows[i].usd_per_hour);
        pi->rows[i].usd_per_hour = strtod(num, NULL);
        if (price_row_check(&pi->rows[i], path, 1) != 0) rc = CB_EUSAGE;
    }
    if (rc) price_import_free(pi);
    return rc ? CB_EUSAGE : 0;
}

void price_import_free(price_import *pi)
{
    free(pi->rows);
    memset(pi, 0, sizeof *pi);
}

void price_import_summary(const price_import *pi, FILE *f)
{
    fprintf(f, "read %d rows; kept %d price rows", pi->nread, pi->n);
    if (pi->nfolded) fprintf(f, " (%d zone rows folded into their region's row)", pi->nfolded);
    if (pi->nsuperseded)
        fprintf(f, "; superseded: %d (a price of the same SKU, region and option with an earlier effectiveStartDate)",
                pi->nsuperseded);
    if (pi->next_page) fprintf(f, "; one page of a longer answer (NextPageLink set)");
    fprintf(f, "; dropped: ");
    if (!pi->nreasons) fprintf(f, "none");
    for (int i = 0; i < pi->nreasons; i++) fprintf(f, "%s%s (%d)", i ? ", " : "", pi->reasons[i], pi->dropped[i]);
    fprintf(f, "\n");
}

/* ------------------------------------------------------------------ writing */

static void write_row(csv_writer *w, const price_row *p)
{
    csvw_str(w, p->provider);
    csvw_str(w, p->instance);
    csvw_str(w, p->region);
    csvw_str(w, p->option);
    csvw_num(w, p->usd_per_hour);
    csvw_str(w, p->as_of);
    csvw_str(w, p->source);
    csvw_endrow(w);
}

int price_import_write(const price_import *pi, const char *path)
{
    csv_writer w;
    if (csvw_open(&w, path) != 0) return CB_EFAIL;
    for (int c = 0; c < PR_NCOLS; c++) csvw_str(&w, price_schema[c].col.name);
    csvw_endrow(&w);
    for (int i = 0; i < pi->n; i++) write_row(&w, &pi->rows[i]);
    if (w.to_stdout) return fflush(stdout) == 0 ? 0 : CB_EFAIL;
    return csvw_commit(&w);
}

/* Per new row: -1 new, -2 a duplicate, else the index of the old row it replaces. Returns the
 * number of conflicts (each reported unless `replace`). */
static int merge_plan(const price_import *pi, const price_table *old, int replace, int *fate, FILE *report)
{
    int conflicts = 0;
    for (int i = 0; i < pi->n; i++) {
        const price_row *p = &pi->rows[i];
        fate[i] = -1;
        for (int j = 0; j < old->n; j++) {
            const price_row *q = &old->rows[j];
            if (strcmp(p->instance, q->instance) || strcmp(p->region, q->region) || strcmp(p->option, q->option))
                continue;
            int refresh = replace == PI_MERGE_REFRESH && strcmp(p->as_of, q->as_of) != 0;
            if (p->usd_per_hour == q->usd_per_hour && !refresh) {
                fprintf(report, "duplicate: %s %s %s %.9g $/h is already %s:%d: not added\n", p->instance, p->region,
                        p->option, p->usd_per_hour, old->path, q->line);
                fate[i] = -2;
            } else if (refresh && p->usd_per_hour == q->usd_per_hour) {
                fprintf(report, "refreshed: %s:%d %s %s %s %.9g $/h (as of %s) confirmed as of %s by %s\n", old->path,
                        q->line, p->instance, p->region, p->option, q->usd_per_hour, q->as_of, p->as_of, p->source);
                fate[i] = j;
            } else if (replace) {
                fprintf(report, "replaced: %s:%d %s %s %s %.9g $/h by %.9g $/h from %s\n", old->path, q->line,
                        p->instance, p->region, p->option, q->usd_per_hour, p->usd_per_hour, p->source);
                fate[i] = j;
            } else {
                err_usage("%s:%d: %s %s %s is priced %.9g $/h; %s says %.9g $/h (give --replace to take the new "
                          "price)",
                          old->path, q->line, p->instance, p->region, p->option, q->usd_per_hour, p->source,
                          p->usd_per_hour);
                conflicts++;
            }
            break;
        }
    }
    return conflicts;
}

/* The number of lines (from line l, 0-based) that the record starting there spans: up to the
 * line where its quotes balance (a quoted cell may hold line breaks). */
static int record_span(const text_lines *tl, int l)
{
    int quotes = 0, k = l;
    do {
        for (const char *c = tl->line[k]; *c; c++) quotes += *c == '"';
    } while (quotes % 2 && ++k < tl->n);
    return (k < tl->n ? k : tl->n - 1) - l + 1;
}

/* The old file's lines (tl; NULL: a new file, the header), each replaced record as '#' lines
 * saying what replaced it (by[j]: the source replacing old row j, or NULL), then the new rows
 * that are not duplicates (fate[i] != -2). */
static void merge_text(FILE *f, const price_import *pi, const int *fate, const price_table *old,
                       const text_lines *tl, const char *const *by)
{
    csv_writer w = {.f = f}; /* the one writer's cell rules, into memory */
    if (!tl) {
        for (int c = 0; c < PR_NCOLS; c++) csvw_str(&w, price_schema[c].col.name);
        csvw_endrow(&w);
    }
    for (int l = 0, j = 0; tl && l < tl->n; l++) {
        while (j < old->n && old->rows[j].line < l + 1) j++;
        if (j < old->n && old->rows[j].line == l + 1 && by[j]) {
            int span = record_span(tl, l);
            fprintf(f, "# replaced by %s: %s\n", by[j], tl->line[l]);
            for (int k = 1; k < span; k++) fprintf(f, "# %s\n", tl->line[l + k]);
            l += span - 1;
            continue;
        }
        fprintf(f, "%s\n", tl->line[l]);
    }
    for (int i = 0; i < pi->n; i++)
        if (fate[i] != -2) write_row(&w, &pi->rows[i]);
}

/* Loads the merged text back as the price file `out` will be (errors name `out`) and expects
 * `want` rows; then writes it to `out` (temporary file and rename). Returns 0, CB_EUSAGE or
 * CB_EFAIL; `out` is untouched unless all went well. */
static int merge_commit(const char *text, size_t len, const char *out, int want)
{
    price_table back;
    if (prices_load_text(&back, out, text, len) != 0)
        return err_usage("%s: the merged price file would not load (above): nothing written", out);
    int n = back.n;
    prices_free(&back);
    if (n != want)
        return err_usage("%s: the merged price file would read back %d rows, not %d: nothing written", out, n, want);
    csv_writer w;
    if (csvw_open(&w, out) != 0) return CB_EFAIL;
    if (len) fwrite(text, 1, len, w.f);
    return csvw_commit(&w);
}

/* The merged text of old (tl: its lines, NULL for a new file) and pi's rows by their fates, into
 * *text; *want: the rows it holds. Returns 0 or CB_EFAIL. */
static int merge_build(const price_import *pi, const int *fate, const price_table *old, const text_lines *tl,
                       char **text, size_t *len, int *want)
{
    const char **by = calloc((size_t)old->n + 1, sizeof *by);
    if (!by) return err_msg("out of memory");
    *want = old->n;
    for (int i = 0; i < pi->n; i++) {
        if (fate[i] >= 0) by[fate[i]] = pi->rows[i].source; /* the old row goes, the new one comes */
        *want += fate[i] == -1;
    }
    FILE *f = open_memstream(text, len);
    int rc = f ? 0 : err_msg("out of memory");
    if (f) {
        merge_text(f, pi, fate, old, tl, by);
        if (fclose(f) != 0) rc = err_msg("out of memory");
    }
    free(by);
    return rc;
}

int price_import_merge(const price_import *pi, const char *out, int replace, FILE *report)
{
    if (pi->n == 0) return err_usage("%s: no price rows to add (every catalogue row was dropped): nothing written", out);
    int exists = access(out, F_OK) == 0, rc = 0, want = 0;
    price_table old = {0};
    text_lines tl = {0};
    if (exists && prices_load_or_empty(&old, out) != 0) return CB_EUSAGE;
    if (exists && text_lines_load(&tl, out) != 0) rc = CB_EFAIL;
    int *fate = malloc((size_t)pi->n * sizeof *fate);
    if (rc == 0 && !fate) rc = err_msg("out of memory");
    if (rc == 0 && merge_plan(pi, &old, replace, fate, report) > 0) rc = CB_EUSAGE;
    char *text = NULL;
    size_t len = 0;
    if (rc == 0) rc = merge_build(pi, fate, &old, exists ? &tl : NULL, &text, &len, &want);
    if (rc == 0) rc = merge_commit(text, len, out, want);
    free(text);
    free(fate);
    text_lines_free(&tl);
    prices_free(&old);
    return rc;
}

int price_import_file(const char *catalogue, const price_import_opts *o, const char *out, int replace, FILE *notes)
{
    price_import pi;
    if (price_import_read(&pi, catalogue, o, notes) != 0) return CB_EUSAGE;
    if (notes) price_import_summary(&pi, notes);
    int rc = out ? price_import_merge(&pi, out, replace, notes ? notes : stderr) : price_import_write(&pi, "-");
    price_import_free(&pi);
    return rc;
}
