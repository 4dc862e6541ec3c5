#include "inputs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/machine.h"

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

/* An optional number: NaN when the column is absent or the cell empty, else checked. */
static int opt_num(const table *t, int row, int col, double lo, double hi, double *out)
{
    *out = NAN;
    if (col < 0 || *table_cell(t, row, col) == '\0') return 0;
    return table_get_double(t, row, col, lo, hi, out);
}

static int find_cols(const table *t, const char *const *names, int *cols, int n, int required)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        cols[i] = table_col(t, names[i], required);
        if (cols[i] < 0 && required) rc = CB_EFAIL;
        if (rc) break;
    }
    return rc;
}

/* ------------------------------------------------------------------ prices */

int prices_load(price_table *pt, const char *path)
{
    memset(pt, 0, sizeof *pt);
    snprintf(pt->path, sizeof pt->path, "%s", path);
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    static const char *const names[] = {"provider", "instance_type", "region", "pricing_option", "usd_per_hour", "as_of", "source"};
    enum { PROV, INST, REGION, OPTION, USD, ASOF, SOURCE, NCOL };
    int col[NCOL], rc = find_cols(&t, names, col, NCOL, 1);
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no prices", path);
    if (rc == 0 && !(pt->rows = calloc((size_t)t.nrows, sizeof *pt->rows))) rc = err_msg("out of memory");
    for (int i = 0; rc == 0 && i < t.nrows; i++) {
        price_row *p = &pt->rows[i];
        p->line = t.lines[i];
        if ((rc = get_str(&t, i, col[PROV], p->provider, sizeof p->provider)) != 0) break;
        if ((rc = get_str(&t, i, col[INST], p->instance, sizeof p->instance)) != 0) break;
        if ((rc = get_str(&t, i, col[REGION], p->region, sizeof p->region)) != 0) break;
        if ((rc = get_str(&t, i, col[OPTION], p->option, sizeof p->option)) != 0) break;
        if (!price_option_valid(p->option)) {
            rc = err_msg("%s:%d: column 'pricing_option': expected one of %s, got '%s'", path, p->line, PRICE_OPTIONS, p->option);
            break;
        }
        /* a price of 0 or less would make tokens/$ infinite or negative */
        if ((rc = table_get_double(&t, i, col[USD], 1e-6, 1e6, &p->usd_per_hour)) != 0) break;
        if ((rc = get_str(&t, i, col[ASOF], p->as_of, sizeof p->as_of)) != 0) break;
        if ((rc = get_str(&t, i, col[SOURCE], p->source, sizeof p->source)) != 0) break;
        for (int j = 0; j < i; j++) {
            const price_row *q = &pt->rows[j];
            if (strcmp(q->instance, p->instance) == 0 && strcmp(q->region, p->region) == 0 && strcmp(q->option, p->option) == 0) {
                rc = err_msg("%s:%d: %s %s %s is already priced at line %d", path, p->line, p->instance, p->region, p->option,
                             q->line);
                break;
            }
        }
        pt->n = i + 1;
    }
    table_free(&t);
    if (rc) prices_free(pt);
    return rc ? CB_EFAIL : 0;
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
        err_usage("%s: no '%s' price for %s%s%s (it has: %s)", t->path, option, instance, region ? " in " : "", region ? region : "",
                  options);
    } else {
        err_usage("%s: %s %s is priced in several regions (%s): choose one with --region", t->path, instance, option, regions);
    }
    return NULL;
}

/* ------------------------------------------------------------------ hardware */

int hardware_load(hw_table *ht, const char *path)
{
    memset(ht, 0, sizeof *ht);
    snprintf(ht->path, sizeof ht->path, "%s", path);
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    static const char *const names[] = {"instance_type", "accelerator", "accelerators", "workers_per_accelerator", "bf16_tflops",
                                        "fp32_tflops", "mem_gib", "mem_gb_per_s", "intra_node_gb_per_s", "network_gbit_per_s",
                                        "network_latency_us", "source"};
    enum { INST, ACC, NACC, WORKERS, BF16, FP32, MEM, MEMBW, INTRA, NET, LAT, SOURCE, NCOL };
    int col[NCOL], rc = find_cols(&t, names, col, NCOL, 1);
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no instance types", path);
    if (rc == 0 && !(ht->rows = calloc((size_t)t.nrows, sizeof *ht->rows))) rc = err_msg("out of memory");
    for (int i = 0; rc == 0 && i < t.nrows; i++) {
        hw_row *h = &ht->rows[i];
        long v;
        h->line = t.lines[i];
        if ((rc = get_str(&t, i, col[INST], h->instance, sizeof h->instance)) != 0) break;
        if ((rc = get_str(&t, i, col[ACC], h->accelerator, sizeof h->accelerator)) != 0) break;
        if ((rc = table_get_long(&t, i, col[NACC], 1, 4096, &v)) != 0) break;
        h->accelerators = (int)v;
        if ((rc = table_get_long(&t, i, col[WORKERS], 1, 64, &v)) != 0) break;
        h->workers = (int)v;
        if ((rc = opt_num(&t, i, col[BF16], 1e-3, 1e6, &h->bf16_tflops)) != 0) break;
        if ((rc = opt_num(&t, i, col[FP32], 1e-3, 1e6, &h->fp32_tflops)) != 0) break;
        if ((rc = table_get_double(&t, i, col[MEM], 1e-3, 1e6, &h->mem_gib)) != 0) break;
        if ((rc = opt_num(&t, i, col[MEMBW], 1e-3, 1e6, &h->mem_gb_per_s)) != 0) break;
        if ((rc = opt_num(&t, i, col[INTRA], 1e-3, 1e6, &h->intra_gb_per_s)) != 0) break;
        if ((rc = table_get_double(&t, i, col[NET], 1e-3, 1e6, &h->net_gbit_per_s)) != 0) break;
        if ((rc = opt_num(&t, i, col[LAT], 0, 1e6, &h->net_latency_us)) != 0) break;
        if ((rc = get_str(&t, i, col[SOURCE], h->source, sizeof h->source)) != 0) break;
        for (int j = 0; j < i; j++)
            if (strcmp(ht->rows[j].instance, h->instance) == 0) {
                rc = err_msg("%s:%d: column 'instance_type': '%s' appears twice (first at line %d)", path, h->line, h->instance,
                             ht->rows[j].line);
                break;
            }
        ht->n = i + 1;
    }
    table_free(&t);
    if (rc) hardware_free(ht);
    return rc ? CB_EFAIL : 0;
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
    char p1[4200], p2[4200];
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

static int same_key(const tput_row *a, const tput_row *b)
{
    return a->kind == b->kind && strcmp(a->model, b->model) == 0 && a->tp == b->tp && a->pp == b->pp &&
           a->instances == b->instances && a->ranks == b->ranks && strcmp(a->instance, b->instance) == 0 && a->seq_len == b->seq_len &&
           a->global_batch == b->global_batch;
}

static int get_long_col(const table *t, int row, int col, long lo, long hi, long dflt, long *out)
{
    if (col < 0) {
        *out = dflt;
        return 0;
    }
    return table_get_long(t, row, col, lo, hi, out);
}

int throughput_load(tput_set *set, const char *path)
{
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    enum { MODEL, INST, SEQ, GBATCH, SEQS, TP, PP, MBATCH, SEQS_MIN, SEQS_MAX, USD, TPU, MFU, PEAK, SOURCE, CPU, DATE, RANKS, NCOL };
    static const char *const names[NCOL] = {"model", "instance_type", "seq_len", "global_batch", "seq_per_s", "tensor_parallel",
                                           "pipeline_parallel", "micro_batch", "seq_per_s_min", "seq_per_s_max", "usd_per_hour",
                                           "tokens_per_usd", "mfu", "peak_gflops", "source", "cpu_model", "date_utc", "ranks"};
    int col[NCOL], rc = find_cols(&t, names, col, SEQS + 1, 1);
    for (int i = SEQS + 1; i < NCOL; i++) col[i] = table_col(&t, names[i], 0);
    /* Table 1's name is `instances`; the scaling model's is `nodes`: either will do */
    int col_inst = table_col(&t, "instances", 0);
    if (col_inst < 0) col_inst = table_col(&t, "nodes", 0);
    if (rc == 0 && col_inst < 0) rc = err_msg("%s:1: missing column 'instances' (or 'nodes')", path);
    if (rc == 0 && t.nrows == 0) rc = err_msg("%s: no throughput rows", path);
    if (rc == 0 && set->n + t.nrows > set->cap) {
        int cap = set->n + t.nrows + 16;
        tput_row *r = realloc(set->rows, (size_t)cap * sizeof *r);
        if (!r) rc = err_msg("out of memory");
        else set->rows = r, set->cap = cap;
    }
    int first = set->n;
    for (int i = 0; rc == 0 && i < t.nrows; i++) {
        tput_row *r = &set->rows[set->n];
        memset(r, 0, sizeof *r);
        snprintf(r->file, sizeof r->file, "%s", path);
        r->line = t.lines[i];
        long v;
        if ((rc = get_str(&t, i, col[MODEL], r->model, sizeof r->model)) != 0) break;
        if ((rc = get_str(&t, i, col[INST], r->instance, sizeof r->instance)) != 0) break;
        if ((rc = table_get_long(&t, i, col_inst, 1, 1000000, &r->instances)) != 0) break;
        if ((rc = table_get_long(&t, i, col[SEQ], 1, 1 << 24, &r->seq_len)) != 0) break;
        if ((rc = table_get_long(&t, i, col[GBATCH], 1, 1L << 40, &r->global_batch)) != 0) break;
        if ((rc = table_get_double(&t, i, col[SEQS], 1e-12, 1e15, &r->seq_per_s)) != 0) break;
        if ((rc = get_long_col(&t, i, col[TP], 1, 1 << 20, 1, &v)) != 0) break;
        r->tp = (int)v;
        if ((rc = get_long_col(&t, i, col[PP], 1, 1 << 20, 1, &v)) != 0) break;
        r->pp = (int)v;
        if ((rc = get_long_col(&t, i, col[RANKS], 1, 1 << 24, 1, &r->ranks)) != 0) break;
        if (col[MBATCH] >= 0 && *table_cell(&t, i, col[MBATCH])) {
            if ((rc = table_get_long(&t, i, col[MBATCH], 1, r->global_batch, &r->micro_batch)) != 0) break;
        }
        if ((rc = opt_num(&t, i, col[SEQS_MIN], 0, 1e15, &r->seq_per_s_min)) != 0) break;
        if ((rc = opt_num(&t, i, col[SEQS_MAX], 0, 1e15, &r->seq_per_s_max)) != 0) break;
        if ((rc = opt_num(&t, i, col[USD], 1e-9, 1e9, &r->usd_per_hour)) != 0) break;
        if ((rc = opt_num(&t, i, col[TPU], 0, 1e18, &r->tokens_per_usd)) != 0) break;
        if ((rc = opt_num(&t, i, col[MFU], 0, 1000, &r->mfu)) != 0) break;
        if ((rc = opt_num(&t, i, col[PEAK], 1e-9, 1e12, &r->peak_gflops)) != 0) break;
        opt_str(&t, i, col[SOURCE], r->source, sizeof r->source);
        opt_str(&t, i, col[CPU], r->cpu_model, sizeof r->cpu_model);
        opt_str(&t, i, col[DATE], r->date, sizeof r->date);
        if (strncmp(r->source, "measured", 8) == 0) r->kind = SRC_MEASURED;
        else if (strncmp(r->source, "predicted", 9) == 0) r->kind = SRC_PREDICTED;
        else r->kind = SRC_IMPORTED;
        if (!r->source[0]) snprintf(r->source, sizeof r->source, "imported from %s", path);
        for (int j = 0; j < set->n; j++)
            if (same_key(&set->rows[j], r)) {
                const tput_row *q = &set->rows[j];
                rc = err_msg("%s:%d: duplicates %s:%d (same model, parallelism, instances, instance type, seq_len and global_batch)",
                             path, r->line, q->file, q->line);
                break;
            }
        if (rc) break;
        set->n++;
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
