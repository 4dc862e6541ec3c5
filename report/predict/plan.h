/* plan.h: the cheapest training configuration that meets a deadline (`costbench plan`).
 *
 * The search runs over instance type x node count (plan_node_counts) x TP (every degree that
 * splits the model, common/oplist.h's op_tp_splits: it divides the heads and the MLP width, and
 * the kv heads divide by it or it by them; up to the node's scale-up domain, plan_tp_max) x
 * sequence parallelism (off, and on when TP > 1) x PP 1,2,4,8 x virtual stages (1, 2, 4; more
 * than 1 only when PP > 1 and PP x stages divide the layers) x precision (the precisions the
 * device's frameworks train in: plan_precisions) x recomputation (off, full) x micro-batch 1,2,4,8,
 * then ZeRO stage 0,1,3; each layout is the step model of
 * report/predict/scale.h at a fixed global batch, with the framework features of one framework
 * (report/predict/frameworks.h: step_framework), priced once per pricing option. The compute time of a
 * micro-batch through a stage depends on neither the node count nor the ZeRO stage: it is found
 * once per layout of the other dimensions, from the data-sheet peak at an assumed MFU, or from a
 * calibration (report/predict/calibration.h: calib_fit_carry, then calib_t_mb, the rule costbench scale
 * uses). A layout is invalid when it cannot be built (TP past the scale-up domain of a node or not
 * dividing its ranks, PP not dividing the layers, ranks not a multiple of TP x PP, the global
 * batch not splitting into replicas x micro-batches, or interleaved stages with a micro-batch
 * count that is not a multiple of PP, as Megatron-LM requires; or no compute time: no peak of its
 * precision, or a calibration carried above 100% of the peak); it is refused when its memory
 * estimate per rank exceeds the rank's memory. Time to train = tokens / tokens per second, plus the
 * expected cost of failures when an MTBF is given (plan_failure_time); cost = time x nodes x price
 * per instance-hour. */
#ifndef CB_PLAN_H
#define CB_PLAN_H

#include "../../common/presets.h"
#include "calibration.h"
#include "../formats/devices.h"
#include "../formats/inputs.h"
#include "scale.h"
#include "stepmodel.h"

#define PLAN_MAX_INSTANCES 32
#define PLAN_MAX_OFFERS 8
#define PLAN_MAX_NODE_COUNTS 128

/* One instance type and the prices it is offered at (one per pricing option). */
typedef struct {
    hw_row hw;
    int noffers;
    char option[PLAN_MAX_OFFERS][24];
    double usd_per_hour[PLAN_MAX_OFFERS]; /* per instance */
    char price_source[PLAN_MAX_OFFERS][300]; /* as_of, source */
    char price_from[PLAN_MAX_OFFERS][256];   /* the price row's source (plan's price_source column) */
    char provider[PLAN_MAX_OFFERS][32];      /* the price row's cloud */
    double price_age_days[PLAN_MAX_OFFERS];  /* days since its as_of (report/formats/inputs.h price_age_days) */
    char as_of[PLAN_MAX_OFFERS][24];         /* the price row's as_of */
    /* what the device's frameworks train in (plan_instance_device): full bf16 with stochastic
     * rounding, fp8 GEMMs */
    int stochastic_rounding, fp8;
} plan_instance;

/* One precision searched: a training precision, and whether the GEMMs run in fp8 (the step
 * model's fp8: transformer-block GEMMs at the device's FP8 peak, the rest as bf16-mixed). */
typedef struct {
    train_precision prec;
    int fp8;
} plan_prec;
enum { PLAN_MAX_PRECS = 3 };

/* What an instance's device trains in, from its data/devices.csv row (NULL: a hardware row that
 * names no device: no stochastic rounding known, fp8 where the row has an FP8 peak):
 * stochastic_rounding from the device's column (1 only when true); fp8 where the device has a
 * dense FP8 peak and its frameworks train in fp8: every GPU framework does (Transformer Engine's
 * Linear layers: Megatron-Core --fp8-format, NeMo fp8, llm-foundry amp_fp8, torchtitan float8),
 * AWS Neuron's do not (neuronx-nemo-megatron trains bf16 with stochastic rounding, no fp8;
 * neuronx-distributed's training scripts run mixed precision, no fp8 recipe: Trainium's cFP8
 * peak is not offered). */
void plan_instance_device(plan_instance *pi, const dev_row *d);
/* The precisions searched on an instance, into out (PLAN_MAX_PRECS): fp32 alone without a BF16
 * peak; else bf16-mixed (every GPU framework's default: fp32 master weights), fp8 where
 * pi->fp8, full bf16 with stochastic rounding (bf16-sr) where pi->stochastic_rounding. fp32 is
 * never searched where a BF16 peak exists. Returns the count. */
int plan_precisions(const plan_instance *pi, plan_prec *out);
/* "bf16-mixed", "fp8" (bf16-mixed with fp8 GEMMs: the precision column's fp8), "bf16-sr", ... */
const char *plan_prec_name(train_precision prec, int fp8);

typedef struct {
    model_config cfg;
    long seq, global_batch, max_nodes;
    double tokens;       /* to train on */
    double mfu;          /* without a calibration: the assumed share of the data-sheet peak, 0..1 (--mfu) */
    /* without a calibration and --mfu: the framework's default efficiency (report/predict/fweff.h:
     * t_mb = t_device / phi) and its spread, every candidate's band; phi 0: the assumed mfu */
    double phi, phi_band_pct;
    /* the framework features of every candidate (report/predict/frameworks.h; NULL: step_framework_default)
     * and its attention: tiled (flash: causal FLOPs, no s x s scores kept) or materialised */
    const step_framework *fw;
    int attn_flash;
    /* --calibrate: each candidate's compute time is calib_t_mb at the efficiency calib_fit_carry
     * carries to it from this fit (eff: a measured GEMM curve, NULL or nk 0: the device's rule);
     * NULL: the assumed mfu */
    const calib_fit *cal;
    const scale_eff_curve *eff;
    const struct gemm_curves_s *gemm; /* the measured device curves (report/formats/gemmcurve.h; NULL: none) */
    double deadline_s;
    double budget_usd;   /* 0: none */
    double mtbf_s;       /* per instance; 0: failures not modelled */
    double ckpt_s, restart_s;
    plan_instance inst[PLAN_MAX_INSTANCES];
    int ninst;
} plan_inputs;

/* Why a layout was not evaluated. */
enum { PLAN_BAD_TP_RANKS, PLAN_BAD_PP_LAYERS, PLAN_BAD_RANKS, PLAN_BAD_BATCH, PLAN_BAD_COMPUTE, PLAN_NBAD };
extern const char *const plan_bad_names[PLAN_NBAD];

/* A feasible layout at one price. */
typedef struct {
    int inst, offer;
    long nodes;
    int tp, pp, vp, sp, zero, micro_batch, recompute;
    train_precision prec;
    int fp8;             /* the GEMMs in fp8 (prec bf16-mixed) */
    scale_point pt;
    double usd_per_hour; /* per instance */
    double train_s;      /* wall-clock time to train, failures included */
    double cost_usd;
    double tau_s;        /* checkpoint interval (NaN: failures not modelled) */
    double lost_pct;     /* share of train_s lost to checkpoints, rework and restarts */
    int meets_deadline, within_budget;
} plan_cand;

typedef struct {
    plan_cand *c; /* cost ascending; ties: faster, then the simpler layout (bf16-mixed before fp8 and bf16-sr) */
    int n, cap;
    long layouts;           /* layouts searched (before pricing) */
    long bad[PLAN_NBAD];    /* invalid layouts by reason */
    long oom;               /* refused: memory per rank over the rank's memory */
    long endless;           /* failures more often than checkpoints can keep up with */
    /* with a calibration: layouts the carry puts above 100% of the peak (counted as
     * PLAN_BAD_COMPUTE too), the largest share of the peak it reached there (of the hardware
     * FLOPs' and the GEMMs', 0..) and the carry's reason; layouts whose GEMM shapes lie outside a
     * measured curve */
    long over_peak, eff_clamped;
    double over_peak_eff;
    char over_peak_why[1024];
    long too_slow, over_budget, ok; /* priced candidates */
} plan_result;

/* The node counts searched up to max_nodes, ascending, into out (cap entries): every count up to
 * 16, then four per octave (round(16 x 2^(k/4)): 19, 23, 27, 32, 38, 45, 54, 64, ...), and every
 * power of two. Returns the count. */
int plan_node_counts(long max_nodes, long *out, int cap);
/* The largest TP degree of an instance type: its ranks, at most those of its scale-up domain
 * (scaleup_domain x ranks per device; an unknown domain: the node). */
int plan_tp_max(const hw_row *hw);

/* Compute time of one micro-batch through one stage for a candidate: the one place it comes from
 * (the data-sheet peak at the assumed MFU, or the calibration carried by calib_fit_carry and
 * calib_t_mb). NaN when unknown, or when the carry refuses (above 100% of the peak). */
double plan_t_mb_s(const scale_model *s, const plan_inputs *in);
/* The step model of a candidate (its compute time included), as the search evaluated it. */
void plan_cand_model(const plan_inputs *in, const plan_cand *c, scale_model *s);
/* How sure a candidate's time and cost are, with a calibration: the band, +- percent
 * (calib_band_pct) into *band_pct, and its case against the calibration (calib_case_of: what
 * changed into why; CALIB_NEAR: not extrapolated). Without one: NaN and CALIB_NEAR, why empty. */
calib_case plan_cand_case(const plan_inputs *in, const plan_cand *c, double *band_pct, char *why, size_t n);

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
