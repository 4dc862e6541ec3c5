/* measrun.h: a measured run (a throughput row of `costbench train`/bench, or a published run) as
 * the step model of report/predict/scale.h: the one path from "what the run states" to its
 * configuration and its calibration point. Two adapters fill a meas_run, each checking only what it
 * alone reads and naming its own columns: calib_row.c (a throughput row: the model preset,
 * tp/pp/seq/batch, the settings it does not state from the target's) and pubmodel.c (a published
 * row: every field, the framework's features). Both state sharding and recomputation by the same
 * rule (meas_run_sharding, meas_run_recompute); meas_run_model makes the configuration and
 * meas_run_check checks its layout and peak the same way for both. */
#ifndef CB_MEASRUN_H
#define CB_MEASRUN_H

#include <stddef.h>

#include "../formats/published.h"
#include "calibration.h"
#include "scale.h"

typedef struct {
    model_config cfg;            /* the preset the row names, or the published shape */
    hw_row hw;                   /* one node: peaks in the run's precision, the flags' link overrides applied */
    train_precision precision;   /* the model's precision slot (fp16-mixed: the 16-bit slot at the FP16 peak) */
    int fp8;                     /* the GEMMs at the FP8 peak */
    int fp8_recipe;              /* op_fp8_recipe (common/oplist.h): delayed, current, mxfp8 */
    int tp, pp, vp, cp, sp;      /* vp <= 1: no interleaving; cp >= 1 */
    int pp_uneven, pp_first_layers, pp_last_layers; /* an uneven pipeline (stepconfig.h); pp_uneven 0: even */
    long seq, micro_batch;       /* micro_batch <= 0: not stated, 1 */
    long global_batch;           /* the run's global batch (strong scaling) */
    int zero, hybrid;            /* ZeRO stage; FSDP hybrid sharding */
    int recompute, selective;    /* full; selective (the attention core again) */
    double recompute_share;      /* full recompute of that share of a stage's layers; 0: all (stepconfig.h) */
    int attn_flash;              /* no s x s scores kept (tiled attention, or selective recomputation) */
    int grad_overlap, gather_prefetch, tp_overlap; /* what the framework overlaps */
    int tp_bwd_overlap;          /* the backward TP collectives under the wgrad GEMMs (frameworks.h) */
    long nodes;                  /* the nodes it ran on */
    double seq_per_s;            /* its measured throughput */
} meas_run;

/* A run that states nothing yet: the settings a row may leave unstated (precision, fp8, cp, sp,
 * ZeRO, hybrid, recomputation, attention, overlaps) as `defaults` has them. */
void meas_run_init(meas_run *r, const scale_model *defaults);

/* The sharding a run states (the published-runs schema's names; a throughput row's sharding
 * column spells them alike): none, zero1, zero2, zero3 that ZeRO stage; hybrid (FSDP
 * HYBRID_SHARD) ZeRO stage 2 and `hybrid`: ZeRO-3 inside a node (its weight gathers over the
 * device links, per micro-batch), a gradient all-reduce's bytes across nodes (scale.c). */
void meas_run_sharding(meas_run *r, pub_sharding sharding);

/* The recomputation a run states: full every forward op again (of every layer: recompute_share 0,
 * which an adapter sets after it when the run states fewer); selective the attention core
 * again (and no s x s scores kept, whatever the kernel: report/predict/stepmodel.c); none neither.
 * The attention kernel (attn_flash) is not the recomputation's to set: the run's framework or its
 * attention column says it. */
void meas_run_recompute(meas_run *r, pub_recompute recompute);

/* The columns of a row's schema that meas_run_check's errors name. */
typedef struct {
    const char *tp, *pp;              /* tensor and pipeline parallelism */
    const char *micro_batch;          /* a batch that does not split, when the row states a micro-batch */
    const char *global_batch;         /* ... when it does not */
    const char *ranks;                /* ranks that are not a multiple of a replica's */
    const char *nodes;                /* no nodes */
    const char *peak;                 /* what names the device whose dense peak is missing */
} meas_run_columns;

/* The run's configuration s (meas_run_model) checked as both kinds of row are: tp dividing the
 * heads and splitting the key/value heads and the MLP (common/oplist.h's op_tp_splits), tp inside
 * one node, pp at most the layers, its nodes' layout and batch (scale_layout), and a dense peak for
 * its precision (`precision`: the row's text, "" when it states none: the model's precision's
 * name; fp16-mixed runs against the FP16 peak). Returns 0, or CB_EUSAGE with "column 'NAME': ..."
 * in why (nothing printed: the caller leads it with the row's FILE:LINE). */
int meas_run_check(const meas_run *r, const scale_model *s, const meas_run_columns *col, const char *precision,
                   char *why, size_t n);

/* The run's configuration: `defaults` for what a run never states (buckets, network efficiency,
 * overlap), the run's fields for the rest; latency --latency-us (latency_us >= 0), else the
 * hardware's, else STEP_NET_LATENCY_US. Checks nothing (meas_run_check and the adapters do). */
void meas_run_model(const meas_run *r, const scale_model *defaults, double latency_us, scale_model *s);

/* The run as a calibration point (report/predict/calibration.h's calib_fit): its configuration
 * (meas_run_model) in fc->cal, its nodes and its seq/s; the fit itself is calib_fit_point's. */
void meas_run_point(const meas_run *r, const scale_model *defaults, double latency_us, calib_fit *fc);

#endif
