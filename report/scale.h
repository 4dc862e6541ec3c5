/* scale.h: a model of one training step across node counts (`costbench scale`).
 *
 * Per step, for n instances of D ranks each (accelerators x workers), a replica of M = TP x PP
 * ranks, R = n D / M data-parallel replicas, m micro-batches of b sequences per replica:
 *   compute   m x t_mb                               t_mb: one micro-batch through one stage
 *   bubble    (PP - 1) / v x t_mb                    1F1B: fraction (p-1)/m, interleaved (p-1)/(v m)
 *   TP        (4 + 2 recompute) x L/PP all-reduces of b s C activations per micro-batch inside a
 *             node, ring 2(t-1)/t over the device link (Megatron-LM; part of t_mb when measured)
 *   DP        gradient all-reduce once per step: hierarchical, ring 2(k-1)/k of the gradient bytes
 *             a node holds over its network, plus 2(k-1) x latency per bucket (nccl-tests' ring);
 *             ZeRO-1/2 move the same bytes (reduce-scatter + all-gather), ZeRO-3 adds an all-gather
 *             of the parameters in every micro-batch's forward and backward (Rajbhandari et al. 2020)
 *   overlap   the all-reduce hides under a fraction of the last micro-batch's backward (2/3 t_mb)
 *   optimizer AdamW streams its state once per step at the device's memory bandwidth
 * t_mb comes from measured points (a base point, or a least-squares fit to several) or from the
 * data-sheet peak times an assumed MFU. Memory per rank: weights, gradients and AdamW state per
 * precision and ZeRO stage, plus activations (Korthikanti et al. 2022, s b h (10 + 24/t + 5 a s/(h t))
 * bytes per layer in 16-bit, 2 s b h with full recomputation, L layers' worth on the first stage). */
#ifndef CB_SCALE_H
#define CB_SCALE_H

#include "../common/presets.h"
#include "inputs.h"

typedef enum { PREC_FP32, PREC_MIXED, PREC_BF16 } scale_precision;
extern const char *const scale_precision_names[3];

/* Free parameters of the model (what a fit may adjust). */
enum { SP_COMPUTE, SP_BANDWIDTH, SP_LATENCY, SP_OVERLAP, SP_COUNT };
extern const char *const scale_param_names[SP_COUNT];

typedef struct {
    model_config cfg;
    hw_row hw;
    int tp, pp, interleave;
    long seq, micro_batch;
    long global_batch;      /* strong scaling: fixed global batch (0 for weak) */
    long batch_per_replica; /* weak scaling: fixed batch per data-parallel replica (0 for strong) */
    int zero;               /* 0..3 */
    scale_precision precision;
    int recompute;
    double bucket_bytes;
    /* the free parameters */
    double t_mb_s;       /* compute time of one micro-batch through one pipeline stage */
    double net_eff;      /* achieved share of the network's line rate */
    double latency_s;    /* per ring hop; 0 when unknown */
    double overlap;      /* 0..1 */
} scale_model;

typedef struct {
    long nodes, replicas, global_batch, micro_batches;
    double step_s, compute_s, bubble_s, tp_s, dp_s, exposed_s, optimizer_s;
    double seq_per_s, tokens_per_s, mfu_pct, mem_gib, mem_avail_gib;
} scale_point;

/* Whether n nodes make a valid layout (ranks divisible into replicas, batch into micro-batches).
 * Returns 0, or CB_EUSAGE after printing why, naming `flag`. */
int scale_check(const scale_model *s, long nodes, const char *flag);
/* Evaluates the model at n nodes (after scale_check). */
void scale_eval(const scale_model *s, long nodes, scale_point *p);
/* t_mb from the data-sheet dense peak (BF16, or FP32 for fp32 training) at the given MFU (0..1).
 * NaN when the hardware's peak is unknown. */
double scale_t_mb_from_peak(const scale_model *s, double mfu);
/* The peak the model's MFU is against, FLOP/s per instance (NaN when unknown). */
double scale_peak_per_instance(const scale_model *s);

typedef struct {
    int fitted[SP_COUNT];        /* 1: adjusted by the fit */
    int undetermined[SP_COUNT];  /* 1: asked for, but the points cannot tell it (kept fixed) */
    double value[SP_COUNT], se_rel[SP_COUNT]; /* fitted values; relative standard error (NaN: exact) */
    double rms_err_pct;
    int npoints;
} scale_fit;

/* Fits the parameters in `want` (SP_* flags, 1 each) to measured (nodes, seq/s) points, compute
 * always among them. Parameters the points cannot determine (changing them by e^1 moves no
 * prediction by 1%) stay at their prior values and are marked. More parameters than points: the
 * later ones are dropped. Returns 0 or CB_EFAIL. */
int scale_fit_points(scale_model *s, const int *want, const long *nodes, const double *seq_per_s, int n, scale_fit *fit);

#endif
