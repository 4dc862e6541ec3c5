#include "inputs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/machine.h"
#include "../../common/precision.h"
#include "../../common/schema.h"
#include "devices.h"
#include "../../common/files.h"

const char *const src_kind_names[3] = {"measured", "imported", "predicted"};

static const char *const price_options[] = {"on_demand", "reserved_1y", "reserved_3y", "ri_effective", "spot"};

int price_option_valid(const char *option)
{
    for (size_t i = 0; i < sizeof price_options / sizeof price_options[0]; i++)
        if (strcmp(option, price_options[i]) == 0) return 1;
    return 0;
}

/* A required string cell copied into a fixed buffer. */
static int get_str(const table *t, int row, int col, char *dst, size_t n)
{
    const char *s;
    if (table_get_str(t, row, col, &s) != 0) return CB_EFAIL;
    if (strlen(s) >= n)
        return err_msg("%s:%d: column '%s': longer than %zu characters", t->path, t->lines[row], t->header[col], n - 1);
    snprintf(dst, n, "%s", s);
    return 0;
}

/* An optional string cell: "" when the column is absent or the cell empty. */
static void opt_str(const table *t, int row, int col, char *dst, size_t n)
{
    snprintf(dst, n, "%s", col >= 0 ? table_cell(t, row, col) : "");
}

/* Column indexes of a schema's columns in t (-1: absent); a missing required column is an error
 * naming the header's line. */
static int find_cols(const table *t, const schema_col *sc, int n, int *cols)
{
    for (int i = 0; i < n; i++)
        if ((cols[i] = table_col(t, sc[i].col.name, sc[i].required)) < 0 && sc[i].required) return CB_EFAIL;
    return 0;
}

/* A number of column i of schema sc: NaN when the column is absent or the cell empty (optional
 * cells), else checked against the schema's range. */
static int opt_num(const table *t, int row, const int *cols, const schema_col *sc, int i, double *out)
{
    *out = NAN;
    if (cols[i] < 0 || *table_cell(t, row, cols[i]) == '\0') return 0;
    return table_get_double(t, row, cols[i], sc[i].lo, sc[i].hi, out);
}

/* A required number of column i, checked against the schema's range. */
static int req_num(const table *t, int row, const int *cols, const schema_col *sc, int i, double *out)
{
    return table_get_double(t, row, cols[i], sc[i].lo, sc[i].hi, out);
}

/* An integer of column i (required cell), or `dflt` when the column is absent. */
static int get_long(const table *t, int row, const int *cols, const schema_col *sc, int i, long dflt, long *out)
{
    if (cols[i] < 0) {
        *out = dflt;
        return 0;
    }
    return table_get_long(t, row, cols[i], (long)sc[i].lo, (long)sc[i].hi, out);
}

/* ------------------------------------------------------------------ prices */

/* The checks of one string cell of a price row: a value, no surrounding blanks (the loader trims
 * them), shorter than its buffer (n: the buffer's size). */
static int price_str_check(const char *s, size_t n, const char *col, const char *path, int line, const char *key)
{
    if (!*s) return err_msg("%s:%d: %scolumn '%s': expected a value, got an empty cell", path, line, key, col);
    size_t l = strlen(s);
    if (strchr(" \t\r\n", s[0]) || strchr(" \t\r\n", s[l - 1]))
        return err_msg("%s:%d: %scolumn '%s': a value that starts or ends with a blank, got '%.60s'", path, line, key,
                       col, s);
    if (l >= n) return err_msg("%s:%d: %scolumn '%s': longer than %zu characters", path, line, key, col, n - 1);
    return 0;
}

int price_row_check(const price_row *p, const char *path, int with_key)
{
    char key[200] = "";
    if (with_key) snprintf(key, sizeof key, "%.60s %.30s %.20s: as a price row, ", p->instance, p->region, p->option);
    const struct {
        const char *s;
        size_t n;
        int col;
    } str[] = {{p->provider, sizeof p->provider, PR_PROVIDER}, {p->instance, sizeof p->instance, PR_INSTANCE_TYPE},
               {p->region, sizeof p->region, PR_REGION},       {p->option, sizeof p->option, PR_OPTION},
               {p->as_of, sizeof p->as_of, PR_AS_OF},          {p->source, sizeof p->source, PR_SOURCE}};
    for (size_t k = 0; k < sizeof str / sizeof str[0]; k++)
        if (price_str_check(str[k].s, str[k].n, price_schema[str[k].col].col.name, path, p->line, key) != 0)
            return CB_EFAIL;
    if (!price_option_valid(p->option))
        return err_msg("%s:%d: %scolumn 'pricing_option': expected one of %s, got '%s'", path, p->line, key,
                       PRICE_OPTIONS, p->option);
    const schema_col *u = &price_schema[PR_USD_PER_HOUR];
    if (!(p->usd_per_hour >= u->lo && p->usd_per_hour <= u->hi)) /* NaN fails too */
        return err_msg("%s:%d: %scolumn 'usd_per_hour': expected a number from %g to %g, got %.9g", path, p->line, key,
                       u->lo, u->hi, p->usd_per_hour);
    if (price_as_of_check(p->as_of) != 0)
        return err_msg("%s:%d: %scolumn 'as_of': expected YYYY, YYYY-MM or YYYY-MM-DD, got '%s'", path, p->line, key,
                       p->as_of);
    return 0;
}

/* FNV-1a of a row's key (instance, region, option). */
static unsigned long long price_key_hash(const price_row *p)
{
    unsigned long long h = 1469598103934665603ULL;
    const char *parts[3] = {p->instance, p->region, p->option};
    for (int k = 0; k < 3; k++)
        for (const unsigned char *c = (const unsigned char *)parts[k];; c++) {
            h = (h ^ *c) * 1099511628211ULL;
            if (!*c) break; /* the NUL separates the parts: "a","bc" is not "ab","c" */
        }
    return h;
}

static int price_same_key(const price_row *a, const price_row *b)
{
    return strcmp(a->instance, b->instance) == 0 && strcmp(a->region, b->region) == 0 &&
           strcmp(a->option, b->option) == 0;
}

/* An error naming the first row that repeats an earlier row's key (open addressing over a table
 * of twice the rows, so that a file of 700k rows is checked in one pass). Returns 0 or CB_EFAIL. */
static int prices_unique(const price_table *pt)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)pt->n) cap *= 2;
    int *slot = malloc(cap * sizeof *slot);
    if (!slot) return err_msg("out of memory");
    memset(slot, -1, cap * sizeof *slot);
    int rc = 0;
    for (int i = 0; rc == 0 && i < pt->n; i++) {
        const price_row *p = &pt->rows[i];
        size_t k = (size_t)price_key_hash(p) & (cap - 1);
        while (slot[k] >= 0 && !price_same_key(&pt->rows[slot[k]], p)) k = (k + 1) & (cap - 1);
        if (slot[k] >= 0)
            rc = err_msg("%s:%d: %s %s %s is already priced at line %d", pt->path, p->line, p->instance, p->region,
                         p->option, pt->rows[slot[k]].line);
        slot[k] = i;
    }
    free(slot);
    return rc;
}

/* Row i of a price file into p: every cell read, then the schema's rules (price_row_check). */
static int price_row_read(const table *t, int i, const int *col, price_row *p)
{
    int rc;
    p->line = t->lines[i];
    if ((rc = get_str(t, i, col[PR_PROVIDER], p->provider, sizeof p->provider)) != 0) return rc;
    if ((rc = get_str(t, i, col[PR_INSTANCE_TYPE], p->instance, sizeof p->instance)) != 0) return rc;
    if ((rc = get_str(t, i, col[PR_REGION], p->region, sizeof p->region)) != 0) return rc;
    if ((rc = get_str(t, i, col[PR_OPTION], p->option, sizeof p->option)) != 0) return rc;
    if ((rc = req_num(t, i, col, price_schema, PR_USD_PER_HOUR, &p->usd_per_hour)) != 0) return rc;
    if ((rc = get_str(t, i, col[PR_AS_OF], p->as_of, sizeof p->as_of)) != 0) return rc;
    if ((rc = get_str(t, i, col[PR_SOURCE], p->source, sizeof p->source)) != 0) return rc;
    return price_row_check(p, t->path, 0);
}

static int prices_from_table(price_table *pt, table *t, int allow_empty)
{
    memset(pt, 0, sizeof *pt);
    snprintf(pt->path, sizeof pt->path, "%s", t->path);
    int col[PR_NCOLS], rc = find_cols(t, price_schema, PR_NCOLS, col);
    if (rc == 0 && t->nrows == 0 && !allow_empty) rc = err_msg("%s: no prices", t->path);
    if (rc == 0 && !(pt->rows = calloc((size_t)t->nrows + 1, sizeof *pt->rows))) rc = err_msg("out of memory");
    for (int i = 0; rc == 0 && i < t->nrows; i++)
        if ((rc = price_row_read(t, i, col, &pt->rows[i])) == 0) pt->n = i + 1;
    if (rc == 0) rc = prices_unique(pt);
    if (rc) prices_free(pt);
    return rc ? CB_EFAIL : 0;
}

static int prices_load_file(price_table *pt, const char *path, int allow_empty)
{
    table t;
    memset(pt, 0, sizeof *pt);
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int rc = prices_from_table(pt, &t, allow_empty);
    table_free(&t);
    return rc;
}

int prices_load(price_table *pt, const char *path)
{
    return prices_load_file(pt, path, 0);
}

int prices_load_or_empty(price_table *pt, const char *path)
{
    return prices_load_file(pt, path, 1);
}

int prices_load_text(price_table *pt, const char *name, const char *text, size_t len)
{
    table t;
    memset(pt, 0, sizeof *pt);
    if (table_load_text(&t, name, text, len) != 0) return CB_EFAIL;
    int rc = prices_from_table(pt, &t, 0);
    table_free(&t);
    return rc;
}

/* as_of's year, month and day (month and day 1 when not given). Returns 0 or -1. */
static int as_of_parse(const char *s, int *y, int *m, int *d)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    char tail;
    *m = *d = 1;
    size_t n = strlen(s);
    int ok = (n == 4 && sscanf(s, "%4d%c", y, &tail) == 1) || (n == 7 && sscanf(s, "%4d-%2d%c", y, m, &tail) == 2) ||
             (n == 10 && sscanf(s, "%4d-%2d-%2d%c", y, m, d, &tail) == 3);
    for (size_t i = 0; ok && i < n; i++)
        if (!(s[i] >= '0' && s[i] <= '9') && !(s[i] == '-' && (i == 4 || i == 7))) ok = 0;
    if (!ok || *y < 1990 || *y > 2200 || *m < 1 || *m > 12 || *d < 1 || *d > mdays[*m - 1]) return -1;
    if (*m == 2 && *d == 29 && !((*y % 4 == 0 && *y % 100 != 0) || *y % 400 == 0)) return -1;
    return 0;
}

int price_as_of_check(const char *as_of)
{
    int y, m, d;
    return as_of_parse(as_of, &y, &m, &d);
}

double price_age_days(const price_row *p, long now)
{
    int y, m, d;
    if (as_of_parse(p->as_of, &y, &m, &d) != 0) return NAN;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d, .tm_hour = 12};
    time_t t = timegm(&tm);
    return ((double)now - (double)t) / 86400.0;
}

void price_age_text(double days, char *buf, size_t n)
{
    if (!isfinite(days)) snprintf(buf, n, "unknown");
    else if (days < 0) snprintf(buf, n, "future date");
    else if (days < 60) snprintf(buf, n, "%.0f days", days);
    else if (days < 730) snprintf(buf, n, "%.0f months", days / 30.44);
    else snprintf(buf, n, "%.1f years", days / 365.25);
}

void price_stale_suffix(const price_row *p, char *buf, size_t n)
{
    double days = price_age_days(p, (long)time(NULL));
    buf[0] = '\0';
    if (!(days > PRICE_STALE_DAYS)) return;
    char age[32];
    price_age_text(days, age, sizeof age);
    snprintf(buf, n, "; STALE: %s old (as of %.23s), older than a year", age, p->as_of);
}

void price_warn_stale(const price_row *p, const char *what)
{
    double days = price_age_days(p, (long)time(NULL));
    if (!(days > PRICE_STALE_DAYS)) return;
    char age[32];
    price_age_text(days, age, sizeof age);
    err_warn("%s uses a price older than a year: %s %s %s %.9g $/h as of %s (%s old; %s)", what, p->instance,
             p->region, p->option, p->usd_per_hour, p->as_of, age, p->source);
}

void prices_free(price_table *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}

const price_row *prices_find(const price_table *t, const char *instance, const char *option, const char *region)
{
    const price_row *found = NULL;
    int known = 0, nfound = 0;
    char regions[512] = "", options[256] = "";
    for (int i = 0; i < t->n; i++) {
        const price_row *p = &t->rows[i];
        if (strcmp(p->instance, instance) != 0) continue;
        known = 1;
        if (!strstr(options, p->option)) {
            size_t l = strlen(options);
            snprintf(options + l, sizeof options - l, "%s%s", l ? ", " : "", p->option);
        }
        if (strcmp(p->option, option) != 0) continue;
        if (region && strcmp(p->region, region) != 0) continue;
        size_t l = strlen(regions);
        snprintf(regions + l, sizeof regions - l, "%s%s", l ? ", " : "", p->region);
        found = p;
        nfound++;
    }
    if (nfound == 1) return found;
    if (!known) {
        err_usage("unknown instance type '%s' (not in %s)", instance, t->path);
        char list[2048] = "";
        for (int i = 0; i < t->n; i++) {
            if (strstr(list, t->rows[i].instance)) continue;
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", t->rows[i].instance);
        }
        err_hint("priced instance types: %s", list);
    } else if (nfound == 0) {
        err_usage("%s: no '%s' price for %s%s%s (it has: %s)", t->path, option, instance, region ? " in " : "",
                  region ? region : "", options);
    } else {
        err_usage("%s: %s %s is priced in several regions (%s): choose one with --region", t->path, instance, option,
                  regions);
    }
    return NULL;
}

/* ------------------------------------------------------------------ hardware */

/* The per-accelerator columns: a row that names a device leaves them to data/devices.csv. */
static const int hw_device_cols[] = {HW_ACCELERATOR, HW_WORKERS,      HW_BF16_TFLOPS,   HW_FP32_TFLOPS,
                                     HW_MEM_GIB,     HW_MEM_GB_PER_S, HW_INTRA_GB_PER_S};
enum { HW_NDEVICE_COLS = sizeof hw_device_cols / sizeof hw_device_cols[0] };

/* The row's measured network (network_busbw_gbit_per_s, network_source), where it gives one: the
 * network the step model takes in place of the line rate; a measurement must cite its source. */
static int hardware_net_measured(const table *t, int i, const int *col, hw_row *h)
{
    double busbw;
    h->net_line_gbit_per_s = h->net_gbit_per_s, h->net_source[0] = '\0';
    int rc = opt_num(t, i, col, hw_schema, HW_NETWORK_BUSBW_GBIT_PER_S, &busbw);
    if (rc == 0 && col[HW_NETWORK_SOURCE] >= 0 && *table_cell(t, i, col[HW_NETWORK_SOURCE]))
        rc = get_str(t, i, col[HW_NETWORK_SOURCE], h->net_source, sizeof h->net_source);
    if (rc != 0 || isnan(busbw)) return rc;
    if (!h->net_source[0])
        return err_msg("%s:%d: column 'network_source': empty, but 'network_busbw_gbit_per_s' gives a measurement "
                       "(cite it)",
                       t->path, t->lines[i]);
    h->net_gbit_per_s = busbw;
    return 0;
}

/* A row that gives its own per-accelerator figures (no device). */
static int hardware_row(const table *t, int i, const int *col, hw_row *h)
{
    int rc = 0;
    h->line = t->lines[i];
    h->fp16_tflops = h->fp8_tflops = h->tf32_tflops = NAN;
    h->gemm_eff = h->attn_eff = h->mem_eff = h->launch_us = NAN;
    h->fp8_gemm_eff = h->attn_eff_max = h->attn_s_half = h->link_eff = h->link_latency_us = NAN;
    h->gemm_half_dim = NAN;
    if (rc == 0) rc = get_str(t, i, col[HW_INSTANCE_TYPE], h->instance, sizeof h->instance);
    for (int k = 0; rc == 0 && k < 2; k++) {
        int c = k == 0 ? HW_ACCELERATOR : HW_MEM_GIB;
        if (col[c] < 0)
            rc = err_msg("%s:%d: column 'device': empty, and the file has no column '%s' for the row's own figures",
                         t->path, h->line, hw_schema[c].col.name);
    }
    if (rc == 0) rc = get_str(t, i, col[HW_ACCELERATOR], h->accelerator, sizeof h->accelerator);
    long n;
    if (rc == 0 && (rc = get_long(t, i, col, hw_schema, HW_ACCELERATORS, 1, &n)) == 0) h->accelerators = (int)n;
    if (rc == 0 && (rc = get_long(t, i, col, hw_schema, HW_WORKERS, 1, &n)) == 0) h->workers = (int)n;
    if (rc == 0) rc = opt_num(t, i, col, hw_schema, HW_BF16_TFLOPS, &h->bf16_tflops);
    if (rc == 0) rc = opt_num(t, i, col, hw_schema, HW_FP32_TFLOPS, &h->fp32_tflops);
    if (rc == 0) rc = req_num(t, i, col, hw_schema, HW_MEM_GIB, &h->mem_gib);
    if (rc == 0) rc = opt_num(t, i, col, hw_schema, HW_MEM_GB_PER_S, &h->mem_gb_per_s);
    if (rc == 0) rc = opt_num(t, i, col, hw_schema, HW_INTRA_GB_PER_S, &h->intra_gb_per_s);
    if (rc == 0) rc = req_num(t, i, col, hw_schema, HW_NETWORK_GBIT_PER_S, &h->net_gbit_per_s);
    if (rc == 0) rc = opt_num(t, i, col, hw_schema, HW_NETWORK_LATENCY_US, &h->net_latency_us);
    if (rc == 0) rc = get_str(t, i, col[HW_SOURCE], h->source, sizeof h->source);
    if (rc == 0) rc = hardware_net_measured(t, i, col, h);
    return rc;
}

/* A row naming a device of dt: `accelerators` of it on the row's network (hw_from_device), the
 * per-accelerator cells left empty. */
static int hardware_row_dev(const table *t, int i, const int *col, const dev_table *dt, hw_row *h)
{
    const char *name = table_cell(t, i, col[HW_DEVICE]);
    const dev_row *d = devices_find(dt, name);
    if (!d) {
        char list[1024];
        devices_list(dt, list, sizeof list);
        return err_msg("%s:%d: column 'device': unknown device '%.60s' (%s lists: %s)", t->path, t->lines[i], name,
                       dt->path, list);
    }
    for (int k = 0; k < HW_NDEVICE_COLS; k++) {
        int c = col[hw_device_cols[k]];
        if (c >= 0 && *table_cell(t, i, c))
            return err_msg("%s:%d: column '%s': the device '%s' defines it (%s:%d); leave the cell empty", t->path,
                           t->lines[i], t->header[c], d->device, dt->path, d->line);
    }
    long n;
    double net, lat;
    char instance[sizeof h->instance], source[sizeof h->source];
    int rc = get_str(t, i, col[HW_INSTANCE_TYPE], instance, sizeof instance);
    if (rc == 0) rc = get_long(t, i, col, hw_schema, HW_ACCELERATORS, 1, &n);
    if (rc == 0) rc = req_num(t, i, col, hw_schema, HW_NETWORK_GBIT_PER_S, &net);
    if (rc == 0) rc = opt_num(t, i, col, hw_schema, HW_NETWORK_LATENCY_US, &lat);
    if (rc == 0) rc = get_str(t, i, col[HW_SOURCE], source, sizeof source);
    if (rc != 0) return rc;
    hw_from_device(d, (int)n, net, lat, h);
    snprintf(h->instance, sizeof h->instance, "%s", instance);
    snprintf(h->source, sizeof h->source, "%s", source);
    h->line = t->lines[i];
    return hardware_net_measured(t, i, col, h);
}

/* The columns of t (a file without the device column must have every column of the format
 * before data/devices.csv); *need_dev: some row names a device. */
static int hardware_cols(const table *t, int *col, int *need_dev)
{
    if (find_cols(t, hw_schema, HW_NCOLS, col) != 0) return CB_EFAIL;
    *need_dev = 0;
    if (col[HW_DEVICE] < 0) {
        for (int i = 0; i <= HW_SOURCE; i++) /* the measured network's columns stay optional */
            if (i != HW_DEVICE && col[i] < 0 && table_col(t, hw_schema[i].col.name, 1) < 0) return CB_EFAIL;
        return 0;
    }
    for (int i = 0; i < t->nrows; i++) *need_dev |= *table_cell(t, i, col[HW_DEVICE]) != '\0';
    return 0;
}

int hardware_load_dev(hw_table *ht, const char *path, const dev_table *dt)
{
    memset(ht, 0, sizeof *ht);
    snprintf(ht->path, sizeof ht->path, "%s", path);
    table t;
    dev_table own = {0};
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int col[HW_NCOLS], need_dev = 0, rc = hardware_cols(&t, col, &need_dev);
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no instance types", path);
    if (rc == 0 && need_dev && !dt) rc = devices_load(&own, NULL), dt = &own;
    if (rc == 0 && !(ht->rows = calloc((size_t)t.nrows, sizeof *ht->rows))) rc = err_msg("out of memory");
    for (int i = 0; rc == 0 && i < t.nrows; i++) {
        hw_row *h = &ht->rows[i];
        int dev = col[HW_DEVICE] >= 0 && *table_cell(&t, i, col[HW_DEVICE]);
        if ((rc = dev ? hardware_row_dev(&t, i, col, dt, h) : hardware_row(&t, i, col, h)) != 0) break;
        for (int j = 0; j < i && rc == 0; j++)
            if (strcmp(ht->rows[j].instance, h->instance) == 0)
                rc = err_msg("%s:%d: column 'instance_type': '%s' appears twice (first at line %d)", path, h->line,
                             h->instance, ht->rows[j].line);
        ht->n = i + 1;
    }
    table_free(&t);
    devices_free(&own);
    if (rc) hardware_free(ht);
    return rc ? CB_EFAIL : 0;
}

int hardware_load(hw_table *ht, const char *path)
{
    return hardware_load_dev(ht, path, NULL);
}

void hardware_free(hw_table *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}

const hw_row *hardware_find(const hw_table *t, const char *instance)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].instance, instance) == 0) return &t->rows[i];
    return NULL;
}

int data_tables_load(const char *prices_path, const char *hw_path, price_table *pt, hw_table *ht)
{
    char p1[CB_PATH_MAX], p2[CB_PATH_MAX];
    if (machine_data_file(p1, sizeof p1, "prices.csv") != 0 || machine_data_file(p2, sizeof p2, "hardware.csv") != 0)
        return CB_EFAIL;
    if (prices_load(pt, prices_path ? prices_path : p1) != 0) return CB_EFAIL;
    if (hardware_load(ht, hw_path ? hw_path : p2) != 0) {
        prices_free(pt);
        return CB_EFAIL;
    }
    return 0;
}

/* ------------------------------------------------------------------ throughput */

int tput_same_config(const tput_row *a, const tput_row *b)
{
    return a->micro_batch == b->micro_batch && a->recompute == b->recompute && a->sharding == b->sharding &&
           a->vp == b->vp && a->sequence_parallel == b->sequence_parallel && a->attention == b->attention &&
           strcmp(a->device, b->device) == 0;
}

/* Equal, or one of them not stated (`none`). */
static int agree(long a, long b, long none) { return a == b || a == none || b == none; }

int tput_config_compatible(const tput_row *a, const tput_row *b)
{
    return agree(a->micro_batch, b->micro_batch, 0) && agree(a->recompute, b->recompute, TPUT_NOT_STATED) &&
           agree(a->sharding, b->sharding, TPUT_NOT_STATED) && a->vp == b->vp &&
           agree(a->sequence_parallel, b->sequence_parallel, TPUT_NOT_STATED) &&
           agree(a->attention, b->attention, TPUT_NOT_STATED) &&
           (strcmp(a->device, b->device) == 0 || !a->device[0] || !b->device[0]);
}

void tput_config_describe(const tput_row *r, char *buf, size_t n)
{
    size_t l = 0;
    buf[0] = '\0';
#define ADD(...) (l < n ? (l += (size_t)snprintf(buf + l, n - l, __VA_ARGS__)) : l)
    if (r->micro_batch > 0) ADD("%smicro-batch %ld", l ? ", " : "", r->micro_batch);
    if (r->recompute != TPUT_NOT_STATED) ADD("%srecompute %s", l ? ", " : "", tput_recomputes[r->recompute]);
    if (r->sharding != TPUT_NOT_STATED)
        ADD("%s%s", l ? ", " : "", r->sharding ? tput_shardings[r->sharding] : "no sharding");
    if (r->vp > 1) ADD("%svp %d", l ? ", " : "", r->vp);
    if (r->sequence_parallel != TPUT_NOT_STATED)
        ADD("%s%ssequence parallel", l ? ", " : "", r->sequence_parallel ? "" : "no ");
    if (r->attention != TPUT_NOT_STATED) ADD("%s%s attention", l ? ", " : "", tput_attentions[r->attention]);
    if (r->device[0]) ADD("%s%s", l ? ", " : "", r->device);
#undef ADD
}

static int same_key(const tput_row *a, const tput_row *b)
{
    return a->kind == b->kind && strcmp(a->model, b->model) == 0 && a->tp == b->tp && a->pp == b->pp &&
           a->instances == b->instances && a->ranks == b->ranks && strcmp(a->instance, b->instance) == 0 &&
           a->seq_len == b->seq_len && a->global_batch == b->global_batch && strcmp(a->precision, b->precision) == 0 &&
           tput_same_config(a, b);
}

/* "a, b, c" of n names into buf. */
static void names_list(const char *const *names, int n, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int k = 0; k < n; k++) snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", k ? ", " : "", names[k]);
}

/* A word cell of row i: *out the index of its value in names[0..n), or TPUT_NOT_STATED when the
 * column is absent or the cell empty; `legacy` (may be NULL) names what else the column accepts,
 * already mapped by the caller. */
static int get_choice(const table *t, int i, int col, const char *const *names, int n, const char *legacy, int *out)
{
    const char *s = col >= 0 ? table_cell(t, i, col) : "";
    *out = TPUT_NOT_STATED;
    if (!*s) return 0;
    for (int k = 0; k < n; k++)
        if (strcmp(s, names[k]) == 0) {
            *out = k;
            return 0;
        }
    char list[160];
    names_list(names, n, list, sizeof list);
    return err_msg("%s:%d: column '%s': expected one of %s%s, or empty, got '%.60s'", t->path, t->lines[i],
                   t->header[col], list, legacy ? legacy : "", s);
}

/* The precision cell of row i: a precision column's value (precision_column_valid) as the file
 * spells it, or empty (also when the column is absent). */
static int get_precision(const table *t, int i, int col, char *dst, size_t n)
{
    const char *s = col >= 0 ? table_cell(t, i, col) : "";
    *dst = '\0';
    if (!*s) return 0;
    if (precision_column_valid(s)) return snprintf(dst, n, "%s", s), 0;
    return err_msg("%s:%d: column '%s': expected one of %s, or empty, got '%.60s'", t->path, t->lines[i],
                   t->header[col], precision_column_names_text(), s);
}

/* The device cell of row i: "" (absent, empty) or a key as data/devices.csv spells it (the table
 * itself is not read here: a throughput file stands on its own). */
static int get_device(const table *t, int i, int col, char *dst, size_t n)
{
    const char *s = col >= 0 ? table_cell(t, i, col) : "";
    *dst = '\0';
    if (!*s) return 0;
    size_t len = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-._");
    if (len != strlen(s) || len >= n || !strchr("abcdefghijklmnopqrstuvwxyz0123456789", s[0]))
        return err_msg("%s:%d: column '%s': expected a device key of at most %zu lowercase letters, digits, '-', '.' "
                       "and '_' (a100-sxm4-80gb), or empty, got '%.60s'",
                       t->path, t->lines[i], t->header[col], n - 1, s);
    snprintf(dst, n, "%s", s);
    return 0;
}

/* The configuration columns of row i (absent or empty: not stated; vp: 1). */
static int tput_config_read(const table *t, int i, const int *col, tput_row *r)
{
    const int c = col[TP_RECOMPUTE];
    const char *rcell = c >= 0 ? table_cell(t, i, c) : "";
    int rc = 0;
    if (strcmp(rcell, "0") == 0 || strcmp(rcell, "1") == 0) /* older train summaries: the --recompute flag */
        r->recompute = rcell[0] == '1' ? TPUT_RECOMPUTE_FULL : TPUT_RECOMPUTE_NONE;
    else
        rc = get_choice(t, i, c, tput_recomputes, TPUT_NRECOMPUTES, " (0 and 1: none and full)", &r->recompute);
    if (rc == 0) rc = get_choice(t, i, col[TP_SHARDING], tput_shardings, TPUT_NSHARDINGS, NULL, &r->sharding);
    if (rc == 0) rc = get_choice(t, i, col[TP_ATTENTION], tput_attentions, TPUT_NATTENTIONS, NULL, &r->attention);
    r->sequence_parallel = TPUT_NOT_STATED;
    if (rc == 0 && col[TP_SEQUENCE_PARALLEL] >= 0 && *table_cell(t, i, col[TP_SEQUENCE_PARALLEL]))
        rc = table_get_bool(t, i, col[TP_SEQUENCE_PARALLEL], &r->sequence_parallel);
    long vp = 1;
    if (rc == 0 && col[TP_VP] >= 0 && *table_cell(t, i, col[TP_VP]))
        rc = table_get_long(t, i, col[TP_VP], (long)tput_schema[TP_VP].lo, (long)tput_schema[TP_VP].hi, &vp);
    r->vp = (int)vp;
    if (rc == 0 && vp > 1 && r->pp == 1)
        rc = err_msg("%s:%d: column '%s': %ld virtual stages per device need a pipeline (pipeline_parallel > 1)",
                     t->path, t->lines[i], t->header[col[TP_VP]], vp);
    if (rc == 0) rc = get_device(t, i, col[TP_DEVICE], r->device, sizeof r->device);
    return rc;
}

/* Row i of a throughput file into r; every cell checked by the throughput schema. */
static int tput_row_read(const table *t, int i, const int *col, tput_row *r)
{
    const schema_col *sc = tput_schema;
    long v;
    int rc = 0;
    r->line = t->lines[i];
    if (rc == 0) rc = get_str(t, i, col[TP_MODEL], r->model, sizeof r->model);
    if (rc == 0) rc = get_str(t, i, col[TP_INSTANCE_TYPE], r->instance, sizeof r->instance);
    if (rc == 0) rc = get_long(t, i, col, sc, TP_INSTANCES, 1, &r->instances);
    if (rc == 0) rc = get_long(t, i, col, sc, TP_SEQ_LEN, 1, &r->seq_len);
    if (rc == 0) rc = get_long(t, i, col, sc, TP_GLOBAL_BATCH, 1, &r->global_batch);
    if (rc == 0) rc = req_num(t, i, col, sc, TP_SEQ_PER_S, &r->seq_per_s);
    if (rc == 0 && (rc = get_long(t, i, col, sc, TP_TP, 1, &v)) == 0) r->tp = (int)v;
    if (rc == 0 && (rc = get_long(t, i, col, sc, TP_PP, 1, &v)) == 0) r->pp = (int)v;
    if (rc == 0) rc = get_long(t, i, col, sc, TP_RANKS, 1, &r->ranks);
    if (rc == 0 && col[TP_MICRO_BATCH] >= 0 && *table_cell(t, i, col[TP_MICRO_BATCH]))
        rc = table_get_long(t, i, col[TP_MICRO_BATCH], 1, r->global_batch, &r->micro_batch);
    if (rc == 0) rc = opt_num(t, i, col, sc, TP_SEQ_PER_S_MIN, &r->seq_per_s_min);
    if (rc == 0) rc = opt_num(t, i, col, sc, TP_SEQ_PER_S_MAX, &r->seq_per_s_max);
    if (rc == 0) rc = opt_num(t, i, col, sc, TP_USD_PER_HOUR, &r->usd_per_hour);
    if (rc == 0) rc = opt_num(t, i, col, sc, TP_TOKENS_PER_USD, &r->tokens_per_usd);
    if (rc == 0) rc = opt_num(t, i, col, sc, TP_MFU, &r->mfu);
    if (rc == 0) rc = opt_num(t, i, col, sc, TP_PEAK_GFLOPS, &r->peak_gflops);
    if (rc == 0) rc = get_precision(t, i, col[TP_PRECISION], r->precision, sizeof r->precision);
    if (rc == 0) rc = tput_config_read(t, i, col, r);
    return rc;
}

/* The provenance of a row: its source column, and the machine columns of rows measured here. */
static void tput_row_source(const table *t, int i, const int *col, const int *mc, tput_row *r, const char *path)
{
    opt_str(t, i, col[TP_SOURCE], r->source, sizeof r->source);
    opt_str(t, i, mc[0], r->cpu_model, sizeof r->cpu_model);
    opt_str(t, i, mc[1], r->date, sizeof r->date);
    if (strncmp(r->source, "measured", 8) == 0) r->kind = SRC_MEASURED;
    else if (strncmp(r->source, "predicted", 9) == 0) r->kind = SRC_PREDICTED;
    else r->kind = SRC_IMPORTED;
    if (!r->source[0]) snprintf(r->source, sizeof r->source, "imported from %.200s", path);
}

static int tput_reserve(tput_set *set, int more)
{
    if (set->n + more <= set->cap) return 0;
    int cap = set->n + more + 16;
    tput_row *r = realloc(set->rows, (size_t)cap * sizeof *r);
    if (!r) return err_msg("out of memory");
    set->rows = r, set->cap = cap;
    return 0;
}

int throughput_load(tput_set *set, const char *path)
{
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int col[TP_NCOLS], rc = find_cols(&t, tput_schema, TP_NCOLS, col);
    int mc[2] = {table_col(&t, machine_cols[MC_CPU_MODEL], 0), table_col(&t, machine_cols[MC_DATE_UTC], 0)};
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no throughput rows", path);
    if (rc == 0) rc = tput_reserve(set, t.nrows);
    int first = set->n;
    for (int i = 0; rc == 0 && i < t.nrows; i++) {
        tput_row *r = &set->rows[set->n];
        memset(r, 0, sizeof *r);
        snprintf(r->file, sizeof r->file, "%s", path);
        if ((rc = tput_row_read(&t, i, col, r)) != 0) break;
        tput_row_source(&t, i, col, mc, r, path);
        for (int j = 0; j < set->n && rc == 0; j++)
            if (same_key(&set->rows[j], r))
                rc = err_msg("%s:%d: duplicates %s:%d (same model, parallelism, instances, ranks, instance type, "
                             "seq_len, global_batch, precision and configuration: micro_batch, recompute, sharding, "
                             "vp, sequence_parallel, attention, device)",
                             path, r->line, set->rows[j].file, set->rows[j].line);
        if (rc == 0) set->n++;
    }
    table_free(&t);
    if (rc) set->n = first; /* nothing of a bad file is kept */
    return rc ? CB_EFAIL : 0;
}

void throughput_free(tput_set *set)
{
    free(set->rows);
    memset(set, 0, sizeof *set);
}
