/* costbench report: throughput CSVs priced into a Table-1-style report directory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cliflags.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/opts.h"
#include "../common/parse.h"
#include "../report/formats/inputs.h"
#include "../report/report.h"
#include "commands.h"
#include "../common/files.h"

/* Repeatable flags (--throughput, --bench, --log) are collected before the option parser sees
 * the rest. */
static int take_repeated(int *argc, char **argv, const char *flag, const char **out, int cap, int *n)
{
    size_t fl = strlen(flag);
    int w = 2;
    for (int i = 2; i < *argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) == 0 && strncmp(a + 2, flag, fl) == 0 && (a[2 + fl] == '\0' || a[2 + fl] == '=')) {
            const char *v = a[2 + fl] == '=' ? a + 3 + fl : (i + 1 < *argc ? argv[++i] : NULL);
            if (!v || !*v) return err_usage("flag '--%s' needs a value", flag);
            if (*n == cap) return err_usage("flag '--%s': at most %d files", flag, cap);
            for (int j = 0; j < *n; j++)
                if (strcmp(out[j], v) == 0) return err_usage("flag '--%s': '%s' given twice", flag, v);
            out[(*n)++] = v;
            continue;
        }
        argv[w++] = argv[i];
    }
    *argc = w;
    return 0;
}

/* The pricing list and the token budget into o. */
static int report_options(report_opts *o, const char *pricing, char *pbuf, size_t pn, const char *tokens_s)
{
    char *words[REPORT_MAX_PRICING];
    int np = parse_word_list(pricing, "flag '--pricing'", 0, pbuf, pn, words, REPORT_MAX_PRICING);
    if (np < 0) return np;
    for (int i = 0; i < np; i++) {
        if (strcmp(words[i], "auto") != 0 && !price_option_valid(words[i]))
            return err_usage("flag '--pricing': expected auto or one of %s, got '%s'", PRICE_OPTIONS, words[i]);
        o->pricing[i] = words[i];
    }
    o->npricing = np;
    o->tokens_budget = NAN;
    if (tokens_s) {
        long t;
        if (parse_long(tokens_s, 1, 1000000000000000L, 1, "flag '--tokens'", &t) != 0) return CB_EUSAGE;
        o->tokens_budget = (double)t;
    }
    return 0;
}

/* Loads the tables and the throughput files, prices every row, writes the report. */
static int report_run(const char *const *tput, int ntput, const char *prices_path, const char *hw_path, const char *out,
                      const report_opts *o, const report_extras *x)
{
    price_table pt;
    hw_table ht;
    tput_set set = {0};
    report_row *rows = NULL;
    int nrows = 0, rc = 0;
    if (data_tables_load(prices_path, hw_path, &pt, &ht) != 0) return CB_EFAIL;
    if (o->instance && !hardware_find(&ht, o->instance)) {
        int priced = 0;
        for (int i = 0; i < pt.n; i++) priced |= strcmp(pt.rows[i].instance, o->instance) == 0;
        if (!priced)
            rc = err_usage("flag '--instance': unknown instance type '%s' (not in %s or %s)", o->instance, pt.path,
                           ht.path);
    }
    for (int i = 0; i < ntput && rc == 0; i++) rc = throughput_load(&set, tput[i]);
    if (rc == 0) rc = report_compute(&set, &pt, &ht, o, &rows, &nrows);
    if (rc == 0) rc = report_write(out, rows, nrows, o, x);
    if (rc == 0) fprintf(stderr, "wrote %s/report.md, %s/report.csv\n", out, out);
    free(rows);
    throughput_free(&set);
    prices_free(&pt);
    hardware_free(&ht);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    const char *tput[64], *pricing = "auto", *out = "costbench-report", *prices_path = NULL, *hw_path = NULL;
    const char *tokens_s = NULL, *models_path = NULL;
    int ntput = 0, rc;
    double usd = 0;
    report_extras x;
    report_opts o;
    memset(&x, 0, sizeof x);
    memset(&o, 0, sizeof o);
    if ((rc = take_repeated(&argc, argv, "throughput", tput, 64, &ntput)) != 0) return rc;
    if ((rc = take_repeated(&argc, argv, "bench", x.bench, 16, &x.nbench)) != 0) return rc;
    if ((rc = take_repeated(&argc, argv, "log", x.logs, 16, &x.nlogs)) != 0) return rc;
    const opt_spec specs[] = {
        {"throughput", OPT_STR, NULL, 0, 0, 0, 0, "FILE",
         "throughput CSV (train --summary-csv, imported, scale --csv); repeatable"},
        {"bench", OPT_STR, NULL, 0, 0, 0, 0, "FILE", "matmul or rope CSV to tabulate (and plot); repeatable"},
        {"log", OPT_STR, NULL, 0, 0, 0, 0, "FILE",
         "per-step training log (train --csv) for the loss and grad-norm plots; repeatable"},
        {"pricing", OPT_STR, &pricing, 0, 0, 0, 0, "LIST",
         "auto (a row's own price, else on_demand) or " PRICE_OPTIONS "; several side by side"},
        REGION_FLAG_SPEC(&o.region),
        {"instance", OPT_STR, &o.instance, 0, 0, 0, 0, "TYPE",
         "instance type to price rows measured on 'this machine' as"},
        {"usd-per-hour", OPT_DOUBLE, &usd, 0, 0, 1e-9, 1e9, "USD",
         "or their price per instance-hour (a run of R ranks pays R times it)"},
        {"tokens", OPT_STR, &tokens_s, 0, 0, 0, 0, "N",
         "token budget for time and cost to train, e.g. 300B (default 20 per parameter)"},
        {"out", OPT_STR, &out, 0, 0, 0, 0, "DIR",
         "output directory (default costbench-report; replaced only if costbench wrote it)"},
        PRICING_FLAG_SPECS(&prices_path, &hw_path),
        {"models", OPT_STR, &models_path, 0, 0, 0, 0, "FILE", "model presets (default data/models.csv)"},
        {0},
    };
    rc = opts_parse("report", "--throughput FILE [--throughput FILE ...] [options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    if (ntput == 0)
        return err_usage(
            "flag '--throughput' is required (e.g. data/reference/trn1_table1.csv, or train --summary-csv output)");
    char pbuf[512], p3[CB_PATH_MAX];
    if ((rc = report_options(&o, pricing, pbuf, sizeof pbuf, tokens_s)) != 0) return rc;
    o.usd_per_hour = usd > 0 ? usd : NAN;
    if ((rc = machine_data_file(p3, sizeof p3, "models.csv")) != 0) return rc;
    o.models_path = models_path ? models_path : p3;
    return report_run(tput, ntput, prices_path, hw_path, out, &o, &x);
}
