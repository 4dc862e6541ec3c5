/* published.h: published training runs as an input (the schema of data/reference/published/SCHEMA.md:
 * what ran and how fast, in the unit the source uses), and the FLOP conventions sources count in.
 *
 * Column names are the schema's, exactly; column order is free; `#` lines are comments; an empty
 * cell is "not published". Every cell is checked when a file loads: a bad one is one error
 * "file:line: column 'x': expected ..., got '...'" (exit 2 at the command). */
#ifndef CB_PUBLISHED_H
#define CB_PUBLISHED_H

#include <stddef.h>

#include "../../common/presets.h"
#include "devices.h"

typedef enum {
    PUB_SEQ_PER_S,
    PUB_TOKENS_PER_S,
    PUB_TOKENS_PER_S_PER_DEVICE,
    PUB_TFLOPS_PER_DEVICE,
    PUB_MFU_PCT,
    PUB_STEP_TIME_S
} pub_metric;
extern const char *const pub_metric_names[6]; /* the schema's spellings: seq_per_s, tokens_per_s, ... */
/* The schema's precision values: bf16-mixed, fp16-mixed, fp8, fp32, bf16 (full bf16). */
enum { PUB_NPRECISIONS = 5 };
extern const char *const pub_precision_names[PUB_NPRECISIONS];

/* Whose FLOP count a tflops_per_device or mfu_pct figure is in (see flops_per_seq). */
typedef enum { FLOPS_NONE, FLOPS_MEGATRON_2021, FLOPS_MEGATRON_CORE, FLOPS_LLM_FOUNDRY, FLOPS_PALM } flop_convention;
extern const char *const flop_convention_names[5]; /* "", megatron-2021, megatron-core, llm-foundry, palm */

/* The optional framework columns (SCHEMA.md): overlap, a list of these joined by '+' ("none": nothing
 * overlapped), as bits; attention, one of pub_attention_names. */
enum { PUB_OVERLAP_GRAD = 1, PUB_OVERLAP_PARAM = 2, PUB_OVERLAP_TP = 4, PUB_NOVERLAPS = 3 };
extern const char *const pub_overlap_names[PUB_NOVERLAPS]; /* grad_reduce, param_gather, tp_comm */
typedef enum { PUB_ATTN_FLASH, PUB_ATTN_CUDNN, PUB_ATTN_MATERIALISED, PUB_NATTN } pub_attention;
extern const char *const pub_attention_names[PUB_NATTN]; /* flash, cudnn, materialised */
/* The optional fp8_recipe column (an fp8 row's scaling: SCHEMA.md): one of pub_fp8_recipe_names. */
typedef enum { PUB_FP8_DELAYED, PUB_FP8_CURRENT, PUB_FP8_MXFP8, PUB_NFP8_RECIPES } pub_fp8_recipe;
extern const char *const pub_fp8_recipe_names[PUB_NFP8_RECIPES]; /* delayed, current, mxfp8 */

typedef enum { SHARD_NONE, SHARD_ZERO1, SHARD_ZERO2, SHARD_ZERO3, SHARD_HYBRID } pub_sharding;
typedef enum { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL } pub_recompute;

typedef struct {
    char id[64], framework[32], device[48], instance[64], model[64], arch[16], precision[16];
    char source[512];
    long devices, devices_per_node;
    double node_net_gbps;                             /* NaN: not published */
    int layers, d_model, heads, kv_heads, ffn_dim, vocab; /* kv_heads = heads, ffn_dim = 4 d_model when empty */
    double params;                                    /* as published; NaN: not published */
    int tied_embeddings;                              /* 1, 0; -1: not published */
    long seq_len, global_batch, micro_batch;          /* micro_batch 0: not published */
    int tp, pp, dp, cp, vp;                           /* cp, vp 1 when empty */
    int sequence_parallel;                            /* 1, 0; -1: not published */
    pub_sharding sharding;                            /* none when empty */
    pub_recompute recompute;                          /* none when empty */
    int recompute_layers;                             /* full recompute of that many layers of each (virtual)
                                                       * pipeline stage (Megatron's --recompute-method block
                                                       * --recompute-num-layers); 0: not published (all) */
    pub_metric metric;
    double value;
    flop_convention convention;                       /* FLOPS_NONE unless the metric needs one */
    double peak_tflops;                               /* NaN: not published (mfu_pct needs it) */
    double seq_per_s_column;                          /* the file's seq_per_s cell; NaN when empty */
    double seq_per_s;                                 /* metric and value converted (published_seq_per_s) */
    char framework_version[32];                       /* "": the framework's default era */
    int overlap;                                      /* PUB_OVERLAP_* bits; -1: not published (the defaults) */
    int attention;                                    /* pub_attention; -1: not published (the default) */
    int compile;                                      /* 1, 0; -1: not published */
    int fp8_recipe;                                   /* pub_fp8_recipe; -1: not published (delayed) */
    char unknown[512]; /* "column 'device': unknown device 'x' (known: ...)": the row loads, is not predicted; "" */
    int line;
} pub_row;

/* The schema's columns in its order (pub_cols[PUB_COL_x]): the loader checks them, the writer of an
 * imported row (logs/logrow.h) writes them; required columns must be in the header with non-empty
 * cells; lo, hi: the range of a number column (0, 0: not a number). */
enum { PUB_COL_ID, PUB_COL_SOURCE, PUB_COL_FRAMEWORK, PUB_COL_DEVICE, PUB_COL_DEVICES, PUB_COL_PER_NODE,
       PUB_COL_NET, PUB_COL_INSTANCE, PUB_COL_MODEL, PUB_COL_ARCH, PUB_COL_LAYERS, PUB_COL_D_MODEL, PUB_COL_HEADS,
       PUB_COL_KV_HEADS, PUB_COL_FFN, PUB_COL_VOCAB, PUB_COL_PARAMS, PUB_COL_TIED, PUB_COL_SEQ_LEN,
       PUB_COL_GLOBAL_BATCH, PUB_COL_MICRO_BATCH, PUB_COL_TP, PUB_COL_PP, PUB_COL_DP, PUB_COL_CP, PUB_COL_VP,
       PUB_COL_SEQ_PAR, PUB_COL_SHARDING, PUB_COL_RECOMPUTE, PUB_COL_PRECISION, PUB_COL_METRIC, PUB_COL_VALUE,
       PUB_COL_CONVENTION, PUB_COL_PEAK, PUB_COL_SEQ_PER_S, PUB_COL_FW_VERSION, PUB_COL_OVERLAP, PUB_COL_ATTENTION,
       PUB_COL_COMPILE, PUB_COL_FP8_RECIPE, PUB_COL_RECOMPUTE_LAYERS, PUB_COL_NOTES, PUB_NCOLS };
typedef struct {
    const char *name;
    int required;
    double lo, hi;
} pub_col;
extern const pub_col pub_cols[PUB_NCOLS];

typedef struct {
    char path[4096];
    pub_row *rows;
    int n;
} pub_table;

/* 1 when the CSV at path has the schema's header (columns id, metric and value at least), 0 when
 * it has another header, CB_EFAIL (error printed) when it cannot be read. */
int published_is_schema(const char *path);
/* Loads path: every cell checked, the device looked up in dt ("this machine", CB_THIS_MACHINE, is a
 * run measured here, one device per rank, and needs peak_tflops; a device dt does not know, not
 * even as a variant of a family, is an error of that row alone, not of the file: the row loads with
 * the reason in r->unknown, "column 'device': unknown device 'x' (known: ...)", its layout not
 * checked against workers per device, and is not predicted), ids unique, the layout consistent (tp x pp x
 * dp x cp = devices x the device's workers: a Trainium chip runs 2 NeuronCore ranks; whole nodes or
 * part of one; global_batch a multiple of dp x micro_batch), and seq_per_s computed from
 * metric and value; a seq_per_s cell the file gives must agree with it within 0.5% (else the
 * conversion or the file is wrong: one error naming both). Returns 0 or CB_EUSAGE. */
int published_load(pub_table *t, const char *path, const dev_table *dt);
/* The same for the text in memory (len bytes) of the file `shown` (import --out checking the whole
 * file it is about to write): every message names `shown` and the line a row has there; a file
 * about to be written is checked strictly: an unknown device is an error of the file, as before. */
int published_load_text(pub_table *t, const char *shown, const char *text, size_t len, const dev_table *dt);
/* One row given as cells (cells[c]: column c of pub_cols, "" when empty), checked as published_load
 * checks a row of the file `shown` at line `line` (every cell, the device known to dt: an unknown one
 * is an error here, a row about to be written; the rules between
 * cells, seq_per_s from metric and value) and loaded into r. Returns 0 or CB_EUSAGE after one error
 * naming shown:line and the column. */
int published_row_check(const char *const *cells, const char *shown, int line, const dev_table *dt, pub_row *r);
void published_free(pub_table *t);
/* The row with that id, NULL when none (no error printed). */
const pub_row *published_find(const pub_table *t, const char *id);

/* The row's model as a model_config (its arch's architecture: gpt, neox, llama, mpt, gptj; its
 * shape; name = the row's model). Returns 0 or CB_EUSAGE after one error naming the row. */
int published_config(const pub_row *r, const char *path, model_config *cfg);

/* FLOPs of one sequence of seq tokens, forward and backward, as `convention` counts them, for
 * model cfg (params: the published parameter count, NaN to count it from cfg), with recompute
 * where the convention counts the recomputed forward:
 *   megatron-2021  96 B s l h^2 (1 + s/(6h) + V/(16 l h)) / B   (counts the recomputed forward)
 *   megatron-core  72 B s l h^2 (1 + s/(6h) + V/(12 l h)) / B   (no recompute)
 *   llm-foundry    6 x params x s + attention                  (llm-foundry's own MFU count)
 *   palm           (6 N + 12 l h s) x s, N the non-embedding matmul parameters incl. the output layer
 * Implemented once (published.c); every figure in any convention goes through it. */
double flops_per_seq(flop_convention convention, const model_config *cfg, double params, long seq);
/* The row's metric and value as sequences per second over the whole run. */
double published_seq_per_s(const pub_row *r, const model_config *cfg);

#endif
