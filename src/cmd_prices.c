/* costbench prices: the known instance prices (data/prices.csv) cheapest first with their age,
 * `prices import`: price rows read from a cloud price catalogue (report/formats/priceimport.h),
 * and `prices update`: the current public catalogues downloaded and imported (report/pricesupdate.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/opts.h"
#include "../common/parse.h"
#include "../report/formats/inputs.h"
#include "../report/formats/priceimport.h"
#include "../report/pricesupdate.h"
#include "commands.h"

/* The help words of --format and --as-of, from the registry of catalogue formats (priceimport.h). */
typedef struct {
    char metavar[256], format[1024], as_of[512];
} format_words;

static void format_help(format_words *w)
{
    char need[256];
    price_formats_join(w->metavar, sizeof w->metavar, "|", "|", 0);
    size_t len = (size_t)snprintf(w->format, sizeof w->format, "the catalogue's format:");
    for (int i = 0; i < price_nformats && len < sizeof w->format; i++)
        len += (size_t)snprintf(w->format + len, sizeof w->format - len, "%s %s: %s", i ? ";" : "",
                                price_formats[i].name, price_formats[i].help);
    price_formats_join(need, sizeof need, ", ", " and ", 1);
    snprintf(w->as_of, sizeof w->as_of, "when the prices were read, YYYY[-MM[-DD]] (required for %s)", need);
}

static int prices_import(int argc, char **argv)
{
    const char *format = NULL, *out = NULL, *instances = NULL, *regions = NULL;
    int replace = 0;
    price_import_opts o = {0};
    format_words w;
    format_help(&w);
    const opt_spec specs[] = {
        {"format", OPT_STR, &format, 0, 0, 0, 0, w.metavar, w.format},
        {"out", OPT_STR, &out, 0, 0, 0, 0, "FILE", "add the rows to this price file (default: CSV on stdout)"},
        {"as-of", OPT_STR, &o.as_of, 0, 0, 0, 0, "DATE", w.as_of},
        {"provider", OPT_STR, &o.provider, 0, 0, 0, 0, "NAME", "the cloud (default: from the format or the path)"},
        {"instances", OPT_STR, &instances, 0, 0, 0, 0, "LIST", "keep only these instance types (comma-separated)"},
        {"regions", OPT_STR, &regions, 0, 0, 0, 0, "LIST", "keep only these regions (comma-separated)"},
        {"replace", OPT_FLAG, &replace, 0, 0, 0, 0, NULL, "replace a conflicting row (kept as a '#' line)"},
        {0},
    };
    char *pos[1];
    int npos = 1;
    int rc = opts_parse("prices import", "FILE --format F [options]", specs, argc, argv, 3, pos, &npos);
    if (rc != 0) return rc > 0 ? 0 : rc;
    if (npos != 1) return err_usage("prices import: expected one catalogue FILE");
    if (!(o.format = price_format_find(format))) {
        char names[256];
        price_formats_join(names, sizeof names, ", ", " or ", 0);
        return err_usage("flag '--format': expected %s, got '%s'", names, format ? format : "");
    }
    char ibuf[4096], rbuf[4096];
    char *inames[256], *rnames[256];
    if (instances && (o.ninstances = parse_word_list(instances, "flag '--instances'", 0, ibuf, sizeof ibuf, inames,
                                                     256)) < 0)
        return CB_EUSAGE;
    if (regions &&
        (o.nregions = parse_word_list(regions, "flag '--regions'", 0, rbuf, sizeof rbuf, rnames, 256)) < 0)
        return CB_EUSAGE;
    o.instances = inames, o.regions = rnames;
    return price_import_file(pos[0], &o, out, replace, stderr);
}

static int prices_update(int argc, char **argv)
{
    prices_update_opts o = {0};
    long pages = 0;
    const opt_spec specs[] = {
        {"cloud", OPT_STR, &o.cloud, 0, 0, 0, 0, "aws|azure|gcp|lambda", "only this cloud (default: all four)"},
        {"region", OPT_STR, &o.region, 0, 0, 0, 0, "R",
         "with --cloud: the region (default us-east-1, eastus, us-central1, us-east-1)"},
        {"source", OPT_STR, &o.source, 0, 0, 0, 0, "skypilot|vendor",
         "SkyPilot's hosted catalogue, or the vendor's price list (aws: the region's EC2 offer file, GBs; azure: "
         "the Retail Prices API); default vendor for azure, skypilot for the others"},
        {"out", OPT_STR, &o.out, 0, 0, 0, 0, "FILE", "the price file updated (default data/prices.csv)"},
        {"url-base", OPT_STR, &o.url_base, 0, 0, 0, 0, "URL",
         "fetch from this base instead of the public hosts (default $COSTBENCH_PRICES_URL; a mirror, a test server)"},
        HARDWARE_FLAG_SPEC(&o.hw_path),
        {"all-instances", OPT_FLAG, &o.all_instances, 0, 0, 0, 0, NULL,
         "keep every instance type (default: those of the hardware table)"},
        {"max-pages", OPT_LONG, &pages, 1, 100000, 0, 0, "N", "Azure: read at most N pages (default 200)"},
        {0},
    };
    int rc = opts_parse("prices update", "[--cloud C] [--region R] [options]", specs, argc, argv, 3, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    o.max_pages = (int)pages;
    return prices_update_run(&o);
}

typedef struct {
    const price_row *p;
    double per_acc; /* $/accelerator-hour, NaN when the hardware table does not know the instance */
    int accelerators;
} listed;

static int by_price(const void *a, const void *b)
{
    double x = ((const listed *)a)->p->usd_per_hour, y = ((const listed *)b)->p->usd_per_hour;
    return (x > y) - (x < y);
}

static void prices_print(const listed *v, int n)
{
    long now = (long)time(NULL);
    int stale = 0;
    printf("%-28s %-6s %-16s %-12s %12s %10s %-10s %-12s %s\n", "instance_type", "cloud", "region", "option",
           "usd_per_hour", "usd/acc-h", "as_of", "age", "source");
    for (int i = 0; i < n; i++) {
        const price_row *p = v[i].p;
        char age[32], acc[24] = "-";
        double days = price_age_days(p, now);
        price_age_text(days, age, sizeof age);
        if (isfinite(v[i].per_acc)) snprintf(acc, sizeof acc, "%.4g", v[i].per_acc);
        printf("%-28s %-6s %-16s %-12s %12.6g %10s %-10s %-12s %s%s\n", p->instance, p->provider, p->region, p->option,
               p->usd_per_hour, acc, p->as_of, age, p->source, days > PRICE_STALE_DAYS ? "  [!] >1y old" : "");
        stale += days > PRICE_STALE_DAYS;
    }
    if (stale) err_hint("%d of these prices are over a year old: 'costbench prices update' downloads the current ones", stale);
}

/* --pricing: the options (count into *n), each a pricing option prices.csv may name. */
static int pricing_words(const char *s, char *buf, size_t bufsz, char **words, int cap, int *n)
{
    *n = 0;
    if (!s) return 0;
    int k = parse_word_list(s, "flag '--pricing'", 0, buf, bufsz, words, cap);
    if (k < 0) return CB_EUSAGE;
    for (int i = 0; i < k; i++)
        if (!price_option_valid(words[i]))
            return err_usage("flag '--pricing': expected %s, got '%s'", PRICE_OPTIONS, words[i]);
    *n = k;
    return 0;
}

/* 1 when option is one of words[0..n) (n 0: every option). */
static int option_listed(char *const *words, int n, const char *option)
{
    for (int i = 0; i < n; i++)
        if (strcmp(words[i], option) == 0) return 1;
    return n == 0;
}

int cmd_prices(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[2], "import") == 0) return prices_import(argc, argv);
    if (argc >= 3 && strcmp(argv[2], "update") == 0) return prices_update(argc, argv);
    const char *instance = NULL, *pricing = NULL, *region = NULL, *prices = NULL, *hw = NULL, *csv = NULL;
    const opt_spec specs[] = {
        {"instance", OPT_STR, &instance, 0, 0, 0, 0, "TYPE", "only this instance type"},
        {"pricing", OPT_STR, &pricing, 0, 0, 0, 0, "LIST", "only these pricing options (" PRICE_OPTIONS ")"},
        REGION_FLAG_SPEC(&region),
        PRICING_FLAG_SPECS(&prices, &hw),
        {"csv", OPT_STR, &csv, 0, 0, 0, 0, "FILE", "also write the listed rows as a price CSV"},
        {0},
    };
    int rc = opts_parse("prices", "[options] | import FILE --format F [options] | update [options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    char pbuf[256], *options[8];
    int nopt;
    if (pricing_words(pricing, pbuf, sizeof pbuf, options, 8, &nopt) != 0) return CB_EUSAGE;
    price_table pt;
    hw_table ht;
    if (data_tables_load(prices, hw, &pt, &ht) != 0) return CB_EUSAGE;
    listed *v = calloc((size_t)pt.n + 1, sizeof *v);
    int n = 0;
    rc = v ? 0 : err_msg("out of memory");
    for (int i = 0; rc == 0 && i < pt.n; i++) {
        const price_row *p = &pt.rows[i];
        if ((instance && strcmp(p->instance, instance)) || (region && strcmp(p->region, region))) continue;
        if (!option_listed(options, nopt, p->option)) continue;
        const hw_row *h = hardware_find(&ht, p->instance);
        v[n] = (listed){p, h && h->accelerators > 0 ? p->usd_per_hour / h->accelerators : NAN, h ? h->accelerators : 0};
        n++;
    }
    if (rc == 0 && n == 0) rc = err_usage("no prices match in %s", pt.path);
    if (rc == 0) {
        qsort(v, (size_t)n, sizeof *v, by_price);
        prices_print(v, n);
    }
    if (rc == 0 && csv) {
        price_import pi = {.n = n};
        pi.rows = calloc((size_t)n, sizeof *pi.rows);
        for (int i = 0; pi.rows && i < n; i++) pi.rows[i] = *v[i].p;
        rc = pi.rows ? price_import_write(&pi, csv) : err_msg("out of memory");
        free(pi.rows);
    }
    free(v);
    prices_free(&pt);
    hardware_free(&ht);
    return rc;
}
