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

struct matmul_curve_s; /* report/formats/matmulcsv.h (effcurve.h calls it scale_eff_curve) */
struct gemm_curves_s;  /* report/formats/gemmcurve.h: the measured device curves */
struct gemm_dev_curve_s;

typedef struct {
    double gemm_s, attn_s, mem_s, tp_s, pp_s;   /* one micro-batch through the slowest stage, phi = 1 */
    double pp_net_s;                              /* its pipeline sends were the stages on other nodes (line rate) */
    double pp_sends;                              /* how many sends (network hops) that is */
    double cp_s;                                  /* ring attention's K/V sends (context parallelism) */
    double bwd_s;                                 /* of which the backward (what gradient reduction can hide under) */
    double layer_s;                               /* one layer's compute (a ZeRO-3 gather's hiding unit) */
    int gemm_clamped; /* 1: a GEMM's K or N lies outside the measured curve (s->gemm_curve): e at its edge */
} step_parts;

/* What a configuration's step depends on (the fields of scale_model the operation list and its
 * times read): a profile holds the key it was computed for. */
typedef struct {
    model_config cfg;
    hw_row hw;
    int tp, pp, interleave, cp, sp, recompute, selective, attn_flash, fp8, fp8_recipe, tp_overlap, tp_bwd_overlap;
    int pp_uneven, pp_first_layers, pp_last_layers;
    double recompute_share; /* scale_recompute_share */
    long seq, micro_batch;
    train_precision precision;
    const struct matmul_curve_s *gemm_curve;
    const struct gemm_dev_curve_s *gemm_device; /* the measured device curve its GEMMs run on (NULL: none) */
} step_key;

/* The step of one configuration as a value: the operation list (common/oplist.h) timed once on the
 * device (report/predict/stepmodel.c), read by the node-count arithmetic (report/predict/scale.c),
 * the fits and calibration, plan and validate. Per rank, per micro-batch unless it says. */
typedef struct {
    step_key key;
    int valid;
    step_parts parts;        /* the slowest stage's compute (phi = 1) */
    double t_device_s;       /* its GEMMs + attention + memory-bound ops; NaN when the device's peak is unknown */
    double tp_per_mb_s;      /* exposed tensor-parallel collectives */
    double pp_link_per_mb_s; /* pipeline sends over the scale-up link (the stages on one node) */
    double pp_net_per_mb_s;  /* the same sends across nodes, at the network's line rate (read at net_eff) */
    double pp_sends;         /* sends a micro-batch: each a network hop's latency across nodes */
    double cp_per_mb_s;      /* ring attention's K/V sends not hidden under the attention they feed */
    int cp_over_net;         /* 1: a context-parallel group spans nodes (its sends run at net_eff too) */
    double grad_bytes;       /* per step: the list's grad_sync entry, the gradients a rank holds (any ZeRO stage) */
    double gather_bytes;     /* per micro-batch under ZeRO-3/FSDP: the weights one replica gathers in the forward
                              * and again in the backward (the list's param_gather entries, every stage, its tp
                              * ranks) */
    double optimizer_bytes;  /* per step: the list's optimizer entry, AdamW's traffic on the rank's parameters
                              * before ZeRO shards it (common/precision.h's adamw_traffic_bytes) */
    double step_mem_bytes;   /* per step, not sharded: the list's other once-a-step memory traffic (fp8_cast of
                              * the weights) */
    double fp8_flops_share;  /* the share of a stage's GEMM and attention FLOPs at the FP8 peak (fp8 rows) */
    /* memory per rank before ZeRO shards it (scale.c divides each by the replicas its stage shards over) */
    double weight_bytes;     /* the weights a rank holds: one forward's gathers of a replica over its tp x pp ranks */
    double state_bytes;      /* the optimizer state (common/precision.h's precision_optimizer_bytes per parameter) */
    double act_bytes;        /* the activations a rank keeps, L layers' worth */
    /* FLOPs a token (common/presets.h's counts) */
    double model_flops_per_token;    /* model FLOPs (PaLM: 6 N + 12 L C T) */
    double hw_flops_per_token;       /* hardware FLOPs: the recomputed forward included */
} step_profile;

typedef struct {
    model_config cfg;
    hw_row hw;
    int tp, pp, interleave;
    /* an uneven pipeline (Megatron-Core's num_layers_in_first_pipeline_stage /
     * num_layers_in_last_pipeline_stage, or its account_for_embedding/loss_in_pipeline_split,
     * frameworks.h): pp_uneven 1, the first and the last stage hold pp_first_layers and
     * pp_last_layers layers (over their vp chunks), the pp - 2 others (L - first - last) / (pp - 2)
     * each; pp_uneven 0: every stage L / pp */
    int pp_uneven, pp_first_layers, pp_last_layers;
    long seq, micro_batch;
    long global_batch;      /* strong scaling: fixed global batch (0 for weak) */
    long batch_per_replica; /* weak scaling: fixed batch per data-parallel replica (0 for strong) */
    int zero;               /* 0..3 */
    train_precision precision;
    int recompute;
    double recompute_share; /* full recompute of a share of each stage's layers (Megatron-Core's --recompute-method
                             * block, --recompute-num-layers N of a (virtual) stage's L / (pp vp): N / (L / (pp vp)));
                             * 0 or 1: all of them (scale_recompute_share reads it) */
    int attn_flash;         /* tiled (flash) attention or selective recomputation: no (s x s) scores kept */
    double bucket_bytes;
    int sp, cp;             /* sequence parallelism; context-parallel degree (1: none) */
    int selective;          /* selective recomputation: the attention core recomputed */
    int fp8;                /* the GEMMs in fp8 against the device's FP8 peak (the rest as the precision says) */
    int fp8_recipe;         /* op_fp8_recipe (common/oplist.h): the casts' traffic; 0 delayed scaling */
    int hybrid;             /* FSDP hybrid sharding: ZeRO-3 inside a node (zero 2 across nodes) */
    /* framework features (report/predict/frameworks.h: step_framework): what overlaps what */
    int grad_overlap, gather_prefetch, tp_overlap;
    int tp_bwd_overlap;     /* the backward TP collectives of the column-parallel layers under their weight
                             * gradient (Megatron / TE Linear's async dgrad all-reduce or reduce-scatter) */
    const struct matmul_curve_s *gemm_curve; /* a measured GEMM efficiency curve of the device; NULL: its rule */
    const struct gemm_curves_s *gemm_measured; /* the measured device curves (data/gemm/, a GPU --matmul-csv): the
                                                * one of hw's device, when there is one, times its GEMMs (stepmodel.h);
                                                * NULL: the cited figures (--gemm cited) */
    double step_overhead_s; /* a fixed cost per optimizer step (a joint calibration's second parameter; 0 else) */
    /* the free parameters */
    double t_mb_s;       /* compute time of one micro-batch through one pipeline stage */
    double net_eff;      /* achieved share of the network's line rate */
    double latency_s;    /* per ring hop; 0 when unknown */
    double overlap;      /* 0..1 */
    step_profile prof;   /* the step, once computed (report/predict/stepmodel.h's step_profile_fill) */
} scale_model;

/* The share of a stage's layers the backward recomputes in full: 0 without full recompute,
 * s->recompute_share when it is inside (0, 1), else 1 (all). */
double scale_recompute_share(const scale_model *s);
/* Ranks of one data-parallel replica: tp x pp x cp. */
long scale_replica_ranks(const scale_model *s);
/* The dense peak per accelerator, TFLOP/s, the run's precision computes at (common/precision.h:
 * FP32 for fp32, else BF16). */
double scale_dense_tflops(const scale_model *s);
/* The peak an fp8 run's FLOPs run against, as a factor of its 16-bit peak: the FP8 peak for the
 * block Linear layers' share x of the hardware FLOPs (step_profile.fp8_flops_share) and the BF16
 * peak for the rest (the output layer, attention), blended so that every FLOP at 100% of its own
 * peak takes the same time: 1 / ((1 - x) + x BF16 / FP8). 1 for a run that is not fp8. */
double scale_peak_blend(const scale_model *s);
/* The peak the model's MFU and every peak check (the calibration's compute floor, the <= 100%
 * checks, the throughput rule) are against, FLOP/s per instance (NaN when unknown): the dense peak
 * of the precision, x scale_peak_blend for an fp8 run. */
double scale_peak_per_instance(const scale_model *s);

#endif
