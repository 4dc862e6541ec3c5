/* stepconfig.h: one training configuration on one device, the value the step model times
 * (stepmodel.h) and the node-count arithmetic scales (scale.h): the model, the device's row of the
 * hardware table, the layout (tp, pp, cp, micro-batch, ZeRO stage, precision, recomputation), the
 * framework's overlaps and the free parameters a fit adjusts. Both of those headers include this
 * one and neither includes the other's file. */
#ifndef CB_STEPCONFIG_H
#define CB_STEPCONFIG_H

#include "../../common/precision.h"
#include "../../common/presets.h"
#include "../formats/inputs.h"

struct scale_eff_curve_s; /* report/predict/effcurve.h */

typedef struct {
    model_config cfg;
    hw_row hw;
    int tp, pp, interleave;
    long seq, micro_batch;
    long global_batch;      /* strong scaling: fixed global batch (0 for weak) */
    long batch_per_replica; /* weak scaling: fixed batch per data-parallel replica (0 for strong) */
    int zero;               /* 0..3 */
    train_precision precision;
    int recompute;
    int attn_flash;         /* tiled (flash) attention or selective recomputation: no (s x s) scores kept */
    double bucket_bytes;
    int sp, cp;             /* sequence parallelism; context-parallel degree (1: none) */
    int selective;          /* selective recomputation: the attention core recomputed */
    int fp8;                /* the GEMMs in fp8 against the device's FP8 peak (the rest as the precision says) */
    int hybrid;             /* FSDP hybrid sharding: ZeRO-3 inside a node (zero 2 across nodes) */
    /* framework features (report/predict/stepmodel.h's step_framework): what overlaps what */
    int grad_overlap, gather_prefetch, tp_overlap;
    const struct scale_eff_curve_s *gemm_curve; /* a measured GEMM efficiency curve of the device; NULL: its rule */
    double step_overhead_s; /* a fixed cost per optimizer step (a joint calibration's second parameter; 0 else) */
    /* the free parameters */
    double t_mb_s;       /* compute time of one micro-batch through one pipeline stage */
    double net_eff;      /* achieved share of the network's line rate */
    double latency_s;    /* per ring hop; 0 when unknown */
    double overlap;      /* 0..1 */
} scale_model;

/* Ranks of one data-parallel replica: tp x pp x cp. */
long scale_replica_ranks(const scale_model *s);
/* The dense peak per accelerator, TFLOP/s, the run's precision computes at (common/precision.h:
 * FP32 for fp32, else BF16). */
double scale_dense_tflops(const scale_model *s);
/* The peak the model's MFU is against, FLOP/s per instance (NaN when unknown). */
double scale_peak_per_instance(const scale_model *s);

#endif
