/* scale.h: a model of one training step across node counts (`costbench scale`).
 *
 * Per step, for n instances of D ranks each (accelerators x workers), a replica of M = TP x PP x
 * CP ranks, R = n D / M data-parallel replicas, m micro-batches of b sequences per replica:
 *   compute   m x t_mb                               t_mb: one micro-batch through the slowest stage
 *   bubble    (PP - 1) / v x t_mb                    1F1B: fraction (p-1)/m, interleaved (p-1)/(v m)
 *   TP, PP    the exposed collectives and sends of one micro-batch, per micro-batch
 *             (the step profile's, step_comm_of: report/predict/stepmodel.h, the shared operation list
 *             timed once per configuration; DP, gather and optimizer bytes below come from it too)
 *   DP        gradient all-reduce once per step: hierarchical, a ring 2(r-1)/r of a rank's bytes
 *             over the device link among a node's r replicas, then 2(k-1)/k of the gradient bytes
 *             a node holds over its network, plus min(2(k-1), 2 log2 k) hops x latency per bucket
 *             (NCCL's rings and trees); ZeRO-1/2 move the same bytes (reduce-scatter + all-gather),
 *             ZeRO-3 adds an all-gather of the parameters in every micro-batch's forward and
 *             backward (Rajbhandari et al. 2020), hybrid sharding those gathers over the device
 *             links; a link whose speed is unknown (NaN) carries no modelled time
 *   overlap   what the framework hides (stepmodel.h): the gradient reduction under the last
 *             micro-batch's backward (2/3 t_mb) but for one layer's bucket, or --overlap's share
 *             of it; ZeRO-3 gathers prefetched under every micro-batch's compute but for one layer's
 *   optimizer AdamW streams its state once per step at the device's memory bandwidth
 *   overhead  a fixed cost per step (0 unless a joint calibration fits one)
 * t_mb comes from measured points (a base point, or a least-squares fit to several, each free
 * parameter held inside its valid range), from a calibration carried by the step model
 * (report/predict/calibration.h: t_device / phi), or from the data-sheet peak times an assumed MFU. A
 * calibration counts only when the model then reproduces every one of its points within a stated
 * tolerance (scale_fit_verify): a model whose communication alone outlasts the measured step, or
 * a fit pinned at a parameter's edge, cannot, and says why. Memory per rank: weights, gradients
 * and AdamW state per precision and ZeRO stage, plus activations (Korthikanti et al. 2022, s b h
 * (10 + 24/t + 5 a s/(h t)) bytes per layer in 16-bit, 2 s b h with full recomputation, s b h (10 +
 * 24/t) with tiled (flash) attention or selective recomputation, which keep no s x s scores; with
 * sequence parallelism the 10 (and the recomputed 2) split over t; L layers' worth on the first
 * stage). */
#ifndef CB_SCALE_H
#define CB_SCALE_H

#include <stddef.h>

#include "../../common/precision.h"
#include "../../common/presets.h"
#include "../formats/inputs.h"
#include "effcurve.h"
#include "stepconfig.h"

/* Whether a throughput row's precision (a precision column's value, common/precision.h) is the
 * modelled one: the same storage per parameter (precision_table), so bf16-sr and bf16-nearest
 * (and "bf16", which files of older costbench versions wrote for bf16-nearest and published rows
 * write for full bf16 of either rounding) stand for each other: the rounding changes no number
 * of the model; fp16-mixed is bf16-mixed; fp8 is none of them; a row that does not say ("") is
 * taken for any. */
int scale_precision_matches(train_precision p, const char *precision);
/* The step model has one 16-bit peak slot (hw->bf16_tflops): a run in fp16-mixed runs against
 * the device's FP16 peak there (V100: 125, no BF16), where the device has one; every other
 * precision leaves the slot as it is. */
void scale_hw_for_precision(hw_row *hw, const char *precision);

/* Free parameters of the model (what a fit may adjust). */
enum { SP_COMPUTE, SP_BANDWIDTH, SP_LATENCY, SP_OVERLAP, SP_COUNT };
extern const char *const scale_param_names[SP_COUNT];


typedef struct {
    long nodes, replicas, global_batch, micro_batches;
    double step_s, compute_s, bubble_s, tp_s, dp_s, exposed_s, optimizer_s;
    double seq_per_s, tokens_per_s, mfu_pct, mem_gib, mem_avail_gib;
} scale_point;

/* Whether n nodes make a valid layout (ranks divisible into replicas, batch into micro-batches).
 * Returns 0, or CB_EUSAGE after printing why, naming `flag`. */
int scale_check(const scale_model *s, long nodes, const char *flag);
/* The same check without a message: what stops n nodes from making a valid layout. */
typedef enum {
    SCALE_LAYOUT_OK,
    SCALE_LAYOUT_NODES,
    SCALE_LAYOUT_RANKS,
    SCALE_LAYOUT_BATCH,
    SCALE_LAYOUT_PER_REPLICA
} scale_layout_issue;
scale_layout_issue scale_layout(const scale_model *s, long nodes);
/* What scale_layout finds wrong at `nodes`, as a phrase into buf ("at 2 nodes the global batch 63
 * does not split into ..."); returns the issue (SCALE_LAYOUT_OK: buf empty). */
scale_layout_issue scale_layout_describe(const scale_model *s, long nodes, char *buf, size_t n);
/* Evaluates the model at n nodes (after scale_check). */
void scale_eval(const scale_model *s, long nodes, scale_point *p);
/* t_mb from the data-sheet dense peak (BF16, or FP32 for fp32 training) at the given MFU (0..1).
 * NaN when the hardware's peak is unknown. */
#define SCALE_ASSUMED_MFU_PCT 40.0 /* scale's and plan's --mfu when not given: an assumption, said so */
double scale_t_mb_from_peak(const scale_model *s, double mfu);

/* Calibration points: measured (nodes, seq/s) and where each came from. */
#define SCALE_MAX_POINTS 256
typedef struct {
    long nodes[SCALE_MAX_POINTS];
    double seq_per_s[SCALE_MAX_POINTS];
    const char *src[SCALE_MAX_POINTS]; /* a flag ("--base-seq-per-s") or a file path (not owned) */
    int line[SCALE_MAX_POINTS];        /* line of the file; 0 for a flag */
    int n;
} scale_points;

/* "flag '--base-seq-per-s'" or "file:line", for messages. */
void scale_points_where(const scale_points *pts, int i, char *buf, size_t n);

typedef struct {
    int fitted[SP_COUNT];        /* 1: adjusted by the fit */
    int undetermined[SP_COUNT];  /* 1: asked for, but the points cannot tell it (kept fixed) */
    int at_bound[SP_COUNT];      /* 1: fitted, but it ran into the edge of its valid range */
    double value[SP_COUNT], se_rel[SP_COUNT]; /* fitted values; relative standard error (NaN: exact) */
    double lo[SP_COUNT], hi[SP_COUNT];        /* valid range of each parameter (see scale_param_range) */
    double rms_err_pct;
    double resid_pct[SCALE_MAX_POINTS]; /* model / measured - 1 at each point, in % */
    int worst;                          /* the point with the largest |resid_pct| */
    int npoints, nfitted;
} scale_fit;

/* Valid range of free parameter `which` in its own units: compute no faster than the data-sheet
 * peak (hardware FLOPs at 100%: lo; 0 when the peak is unknown), network efficiency at most 1 (the
 * line rate), latency at least 0, overlap 0..1. A fit never leaves it. */
void scale_param_range(const scale_model *s, int which, double *lo, double *hi);

/* Fits the parameters in `want` (SP_* flags, 1 each) to the measured points, compute always among
 * them, each within its scale_param_range. Parameters the points cannot determine (changing them
 * by e^1 moves no prediction by 1%) stay at their prior values and are marked. More parameters
 * than points: the later ones are dropped. Fills the residual of every point. Returns 0 or
 * CB_EFAIL. A returned fit may still miss its points: check it with scale_fit_verify. */
int scale_fit_points(scale_model *s, const int *want, const scale_points *pts, scale_fit *fit);

/* Whether the calibrated model reproduces every point within tol_pct: evaluates it at each point
 * (fit->resid_pct, worst and rms_err_pct rewritten) and compares |model / measured - 1|.
 * Returns 0, or CB_EFAIL after one error line naming the worst point (nodes, measured and model
 * seq/s, error) and `hint:` lines: the likely cause when it can tell (the modelled communication
 * or optimizer time alone exceeds the measured step time; a parameter at its bound; too few
 * parameters for the points' shape) and, for several points, every residual. */
int scale_fit_verify(const scale_model *s, scale_fit *fit, const scale_points *pts, double tol_pct);

/* "4 nodes -0.4%, 8 nodes +1.0%, ..." (as much as fits in buf, then "... (N more)"). */
void scale_fit_residual_list(const scale_fit *fit, const scale_points *pts, char *buf, size_t n);

/* ------------------------------------------------------------------ the matmul efficiency curve
 * (report/predict/effcurve.h): K and N of a model's matmuls, what validate ranks calibration rows' nearness by. */
/* K and N of a model's matmuls (see above). */
double scale_eff_k(const scale_model *s);
double scale_eff_n(const scale_model *s);
/* Model FLOPs (hardware = 0) or hardware FLOPs (with the recomputed forward) of one micro-batch
 * through one stage; and the dense peak of the stage's tp ranks, FLOP/s (NaN when unknown). */
double scale_stage_flops(const scale_model *s, int hardware);
double scale_stage_peak(const scale_model *s);
/* The implied compute MFU (0..1) of s->t_mb_s. */
double scale_compute_mfu(const scale_model *s);

#endif
