/* plan.h: the cheapest training configuration that meets a deadline (`costbench plan`).
 *
 * The search runs over instance type x node count (powers of two) x TP x PP x ZeRO stage x
 * micro-batch x recomputation x precision, each layout evaluated by the step model of
 * report/scale.h at a fixed global batch, then priced once per pricing option. A layout is
 * invalid when it cannot be built (TP past the ranks of a node or not dividing the heads, PP not
 * dividing the layers, ranks not a multiple of TP x PP, the global batch not splitting into
 * replicas x micro-batches); it is refused when its memory estimate per rank exceeds the rank's
 * memory. Time to train = tokens / tokens per second, plus the expected cost of failures when an
 * MTBF is given (plan_failure_time); cost = time x nodes x price per instance-hour. */
#ifndef CB_PLAN_H
#define CB_PLAN_H

#include "../common/presets.h"
#include "inputs.h"
#include "scale.h"

#define PLAN_MAX_INSTANCES 32
#define PLAN_MAX_OFFERS 8

/* One instance type and the prices it is offered at (one per pricing option). */
typedef struct {
    hw_row hw;
    int noffers;
    char option[PLAN_MAX_OFFERS][24];
    double usd_per_hour[PLAN_MAX_OFFERS]; /* per instance */
    char price_source[PLAN_MAX_OFFERS][300]; /* as_of, source */
} plan_instance;

typedef struct {
    model_config cfg;
    long seq, global_batch, max_nodes;
    double tokens;       /* to train on */
    double mfu;          /* assumed share of the data-sheet peak, 0..1 (plan_t_mb_s) */
    /* --calibrate: a calibration's compute efficiency in hardware FLOPs (its HFU: the recomputed
     * forward counted, so that a row with recomputation carries to one without) and its matmul
     * efficiency, carried to each candidate (report/scale.h's rule: HFU = mfu_cal x e(K, N) /
     * e_cal; the field keeps its name); calibrated 0: the assumed mfu */
    int attn_full;       /* memory: keep the s x s attention scores (--attention full); default tiled (flash) */
    int calibrated;
    double mfu_cal, e_cal;
    const scale_eff_curve *eff;
    double deadline_s;
    double budget_usd;   /* 0: none */
    double mtbf_s;       /* per instance; 0: failures not modelled */
    double ckpt_s, restart_s;
    plan_instance inst[PLAN_MAX_INSTANCES];
    int ninst;
} plan_inputs;

/* Why a layout was not evaluated. */
enum { PLAN_BAD_TP_RANKS, PLAN_BAD_TP_HEADS, PLAN_BAD_PP_LAYERS, PLAN_BAD_RANKS, PLAN_BAD_BATCH, PLAN_BAD_COMPUTE, PLAN_NBAD };
extern const char *const plan_bad_names[PLAN_NBAD];

/* A feasible layout at one price. */
typedef struct {
    int inst, offer;
    long nodes;
    int tp, pp, zero, micro_batch, recompute;
    scale_precision prec;
    scale_point pt;
    double usd_per_hour; /* per instance */
    double train_s;      /* wall-clock time to train, failures included */
    double cost_usd;
    double tau_s;        /* checkpoint interval (NaN: failures not modelled) */
    double lost_pct;     /* share of train_s lost to checkpoints, rework and restarts */
    int meets_deadline, within_budget;
} plan_cand;

typedef struct {
    plan_cand *c; /* cost ascending; ties: faster, then the simpler layout */
    int n, cap;
    long layouts;           /* layouts searched (before pricing) */
    long bad[PLAN_NBAD];    /* invalid layouts by reason */
    long oom;               /* refused: memory per rank over the rank's memory */
    long endless;           /* failures more often than checkpoints can keep up with */
    /* --calibrate: layouts the rule carries above 100% MFU (counted as PLAN_BAD_COMPUTE too; the
     * largest such MFU, 0..1, and its K and N) and layouts whose K or N lies outside the curve */
    long over_peak, eff_clamped;
    double over_peak_mfu, over_peak_k, over_peak_n;
    long too_slow, over_budget, ok; /* priced candidates */
} plan_result;

/* Compute time of one micro-batch through one stage for a candidate: the one place it comes from
 * (the data-sheet peak at the assumed MFU, or the calibration carried by plan_carry_mfu). NaN when
 * unknown, or when the calibration would be carried above 100% of the peak. */
double plan_t_mb_s(const scale_model *s, const plan_inputs *in);
/* The calibration's compute efficiency (HFU) carried to a candidate, mfu_cal x e(K, N) / e_cal, unbounded
 * (*clamped set when K or N lies outside the curve's range; may be NULL). */
double plan_carry_mfu(const scale_model *s, const plan_inputs *in, int *clamped);

/* Expected wall-clock time of a job of `work_s` failure-free seconds whose whole job fails every
 * mtbf_job_s seconds on average, checkpointing every tau = sqrt(2 ckpt_s mtbf_job_s) seconds
 * (Young 1974, "A first order approximation to the optimum checkpoint interval"; Daly 2006, "A
 * higher order estimate of the optimum checkpoint interval for restart dumps", whose first-order
 * term this is): overhead share ckpt_s / tau (writing checkpoints) + tau / (2 mtbf) (work redone
 * after a failure, half an interval on average) + restart_s / mtbf (restarts, one per failure).
 * Returns work_s x (1 + overhead), INFINITY when the overhead reaches 1 (never finishes); tau in
 * *tau_s. */
double plan_failure_time(double work_s, double mtbf_job_s, double ckpt_s, double restart_s, double *tau_s);

/* Runs the search. Returns 0 or CB_EFAIL (out of memory). */
int plan_search(const plan_inputs *in, plan_result *res);
void plan_result_free(plan_result *res);
/* Indices of res->c on the cost/time Pareto frontier (no candidate both faster and cheaper), by
 * time ascending, into idx (res->n entries): over all candidates (inst < 0) or those of one
 * instance type at one price. Returns the count. */
int plan_pareto(const plan_result *res, int inst, int offer, int *idx);
/* Whether two candidates are the same offer at the same node count with the same time and cost
 * (layouts the model cannot tell apart). */
int plan_same_result(const plan_cand *a, const plan_cand *b);
/* The fastest candidate, among those within the budget when `within_budget`; -1 when none. */
int plan_fastest(const plan_result *res, int within_budget);

#endif
