/* inputs.h: the tables the report and the scaling model read: instance prices (data/prices.csv),
 * accelerator specs per instance type (data/hardware.csv) and throughput rows (the summary CSV
 * `costbench train` writes, imported measurements such as data/reference/trn1_table1.csv, and
 * the predictions `costbench scale` writes; the same columns, so they mix).
 * Every loader checks every cell and reports "file:line: column 'x': ..." on bad input. */
#ifndef CB_INPUTS_H
#define CB_INPUTS_H

#include <stddef.h>

typedef struct {
    char provider[32], instance[64], region[32], option[24], as_of[24];
    char source[256];
    double usd_per_hour; /* per instance */
    int line;
} price_row;

typedef struct {
    char path[4096];
    price_row *rows;
    int n;
} price_table;

/* The pricing options a prices.csv row may name. */
int price_option_valid(const char *option);
#define PRICE_OPTIONS "on_demand, reserved_1y, reserved_3y, ri_effective, spot"

/* Loads path: every cell read and checked by price_row_check, and no key (instance, region,
 * option) twice; at least one row. Returns 0 or CB_EFAIL after one error naming file:line. */
int prices_load(price_table *t, const char *path);
/* The same, a file of the header alone read as no rows (a file that prices import adds to). */
int prices_load_or_empty(price_table *t, const char *path);
/* The same for text in memory, named `name` in messages (the file it is about to become). */
int prices_load_text(price_table *t, const char *name, const char *text, size_t len);
/* The rules of the price schema for one row, the loader's and prices import's alike: every string
 * a value without surrounding blanks that fits its column, a known pricing option, usd_per_hour
 * within common/schema.h's range, as_of by price_as_of_check. `with_key`: the error names the
 * row's instance, region and option (a row read from a catalogue, at p->line of `path`).
 * Returns 0 or CB_EFAIL after one error. */
int price_row_check(const price_row *p, const char *path, int with_key);
/* ---- price ages */
/* 0 when as_of reads YYYY, YYYY-MM or YYYY-MM-DD (a real date), else -1. */
int price_as_of_check(const char *as_of);
/* Days from the start of the row's as_of period (YYYY: 1 January; YYYY-MM: the 1st) to `now`
 * (seconds since the epoch): the most the price can have aged. */
double price_age_days(const price_row *p, long now);
/* "12 days", "7 months", "2.3 years". */
void price_age_text(double days, char *buf, size_t n);
/* A price older than this many days is reported as stale by every report that uses it. */
#define PRICE_STALE_DAYS 365.0
/* "; STALE: 23 months old (as of 2025), older than a year" into buf when p is stale (now:
 * time(NULL)), else "": appended to every note a report prints about the price it uses. */
void price_stale_suffix(const price_row *p, char *buf, size_t n);
/* Prints "warning: <what> uses a price older than a year: ..." when p is stale (now: time(NULL)). */
void price_warn_stale(const price_row *p, const char *what);
void prices_free(price_table *t);
/* The row for (instance, option) in `region` (NULL: the only region listed, or an error naming
 * the regions). Returns the row or NULL after printing an error. */
const price_row *prices_find(const price_table *t, const char *instance, const char *option, const char *region);

typedef struct {
    char instance[64], accelerator[48]; /* accelerator: the device key of data/devices.csv when the row names one */
    int accelerators, workers;      /* per instance; ranks per accelerator */
    double bf16_tflops, fp32_tflops; /* dense, per accelerator; NaN when unknown */
    double fp16_tflops, fp8_tflops, tf32_tflops; /* dense, per accelerator, from the device; NaN: none or unknown */
    double mem_gib, mem_gb_per_s;    /* per accelerator */
    double intra_gb_per_s;           /* device-to-device link per accelerator, one direction; NaN when unknown */
    int scaleup_domain;              /* accelerators sharing that link (the device's); 0: unknown */
    double gemm_eff, attn_eff, mem_eff,
        launch_us;                   /* the device's step-model figures; NaN: report/predict/stepmodel.h's defaults */
    double fp8_gemm_eff, attn_eff_max, attn_s_half, link_eff, link_latency_us,
        gemm_half_dim;               /* the device's kernel figures (report/formats/devices.h); NaN: defaults */
    char attn_kernel[16];            /* the attention kernel whose curve attn_eff_max/attn_s_half hold
                                      * (report/formats/attncurves.h); "": the device's own curve */
    double net_gbit_per_s;           /* instance network: the measured bus bandwidth x 8 where one is given */
    double net_line_gbit_per_s;      /* its line rate (network_gbit_per_s) */
    double net_latency_us;           /* NaN when unknown */
    char source[256];
    char net_source[512];            /* the measurement's source; "": the line rate */
    int line;
} hw_row;

typedef struct {
    char path[4096];
    hw_row *rows;
    int n;
} hw_table;

/* Loads path. A file with a `device` column takes each named device's figures from
 * data/devices.csv (machine_data_file), loaded only then; hardware_load_dev takes them from dt
 * instead (NULL: the same default). Every cell checked; a row naming a device must leave the
 * per-accelerator cells empty (the device defines them once). */
int hardware_load(hw_table *t, const char *path);
struct dev_table_s;
int hardware_load_dev(hw_table *t, const char *path, const struct dev_table_s *dt);
void hardware_free(hw_table *t);
/* NULL when the instance type is not listed (no error printed). */
const hw_row *hardware_find(const hw_table *t, const char *instance);

/* Loads the price and hardware tables: the given paths, or data/prices.csv and data/hardware.csv
 * (machine_data_file()) for NULL. Returns 0 (both loaded) or CB_EFAIL (neither). */
int data_tables_load(const char *prices_path, const char *hw_path, price_table *pt, hw_table *ht);

typedef enum { SRC_MEASURED, SRC_IMPORTED, SRC_PREDICTED } src_kind;
extern const char *const src_kind_names[3];

/* One throughput row. Optional columns read as NaN (numbers) or "" (strings) when absent. */
typedef struct {
    char model[48], instance[64];
    int tp, pp;
    long instances, seq_len, global_batch, micro_batch; /* micro_batch 0: unknown */
    long ranks;            /* processes of a data-parallel run on these instances (1 when not given) */
    double seq_per_s, seq_per_s_min, seq_per_s_max;
    double usd_per_hour;   /* total for all instances, as imported (NaN: not given) */
    double tokens_per_usd; /* as imported (NaN: not given) */
    double mfu, peak_gflops; /* measured here: MFU against this machine's measured peak of its precision */
    char precision[16];    /* a precision column's value (common/precision.h), or "" when the file does not say */
    /* the configuration columns (common/schema.h); absent or empty: not stated */
    int recompute;         /* tput_recompute, or TPUT_NOT_STATED */
    int sharding;          /* tput_sharding, or TPUT_NOT_STATED */
    int vp;                /* virtual pipeline stages per device; 1 (plain 1F1B) when not stated */
    int sequence_parallel; /* 1, 0, or TPUT_NOT_STATED */
    int attention;         /* tput_attention, or TPUT_NOT_STATED */
    char device[48];       /* a data/devices.csv key, or "" */
    src_kind kind;
    char source[256], cpu_model[128], date[32];
    char file[4096];
    int line;
} tput_row;

typedef struct {
    tput_row *rows;
    int n, cap;
} tput_set;

/* Appends the rows of `path` to `set`. Columns and their valid ranges: the throughput schema of
 * common/schema.h (required: model, instances, instance_type, seq_len, global_batch, seq_per_s;
 * the rest optional; precision a precision column's value or empty; the configuration columns as
 * TPUT_RECOMPUTE ... TPUT_DEVICE describe them, vp > 1 only with pipeline_parallel > 1). A row
 * that repeats the key (model, parallelism, instances, ranks, instance type, sequence length,
 * global batch, precision and the configuration: tput_same_config) of an earlier row of the same
 * kind is an error: one machine's fp32 and bf16-mixed rows are two rows, and so are runs with and
 * without recomputation. Returns 0 or CB_EFAIL. */
int throughput_load(tput_set *set, const char *path);
void throughput_free(tput_set *set);
/* 1 when two rows state the same configuration columns (micro_batch, recompute, sharding, vp,
 * sequence_parallel, attention, device; "not stated" equals only "not stated"), else 0. */
int tput_same_config(const tput_row *a, const tput_row *b);
/* 1 when no configuration column both rows state differs (vp always stated), else 0: an imported
 * row that says nothing of recomputation and a prediction without it may be one series. */
int tput_config_compatible(const tput_row *a, const tput_row *b);
/* The configuration columns a row states, for labels: "micro-batch 4, recompute full, zero1, vp 2,
 * sequence parallel, flash attention, a100-sxm4-80gb" ("" when it states none). */
void tput_config_describe(const tput_row *r, char *buf, size_t n);

#endif
