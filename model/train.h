/* train.h: the training loop, the one place that owns it: micro-batches and gradient
 * accumulation, the gradient-synchronisation hook, clipping, the learning-rate schedule, the
 * AdamW update, the checkpoint cadence, and starting (fresh, --init or --resume). It neither
 * times nor prints: an observer is told when each step begins and ends, and measures and reports
 * what it wants. Data parallelism and precision plug in as small pieces (train_sync), not as
 * branches here.
 *
 * Per step s (0-based) of A = accum micro-batches over all ranks: this rank runs global
 * micro-batches [rank A/N, (rank+1) A/N) (so the data do not depend on the rank count; the
 * megatron sampler gives global micro-batch mb of step s the samples s B A + mb B + b, b < B), each
 * forward and backward with the gradients scaled by 1/A; the sync sums them over ranks; the loss
 * and the gradient norm must be finite (else the run stops before the update and before any
 * save, saying where the first non-finite value is); the gradients are clipped to `clip` and
 * AdamW steps at train_lr(s); the weights it writes must be finite (else the run stops before
 * the step's checkpoint, naming the first tensor holding one); a checkpoint is saved every
 * `save_every` steps and at the last. */
#ifndef CB_TRAIN_H
#define CB_TRAIN_H

#include "checkpoint.h"
#include "dataset.h"
#include "gpt.h"
#include "sampler.h"

typedef struct {
    int B, T, accum;           /* micro-batch, sequence length, micro-batches per step over all ranks */
    long steps;                /* the run ends after this many steps */
    long warmup;               /* linear learning-rate warm-up steps */
    double lr, min_lr;         /* peak and final learning rate (cosine decay) */
    adamw_params hp;           /* lr is set per step */
    float clip;                /* global gradient-norm clipping (0: off) */
    unsigned long long seed;
    const dataset *data;       /* the training tokens (NULL: synthetic tokens) */
    sampler_kind sampling;     /* --sampler: the order the caller builds `sampler` in (bench/step.c) */
    const sampler *sampler;    /* the order of data's samples, built for steps x B x accum samples and T;
                                * NULL with data: the random order of dataset_batch */
    const char *init_path;     /* start from these weights */
    const char *resume_dir;    /* or continue this run */
    const char *save_dir;      /* NULL: no checkpoints */
    long save_every;
    int rank, ranks;
} train_opts;

/* Gradient synchronisation over data-parallel ranks. Every hook may be NULL (one process). */
typedef struct {
    void *ctx;
    /* before the last local micro-batch's backward */
    void (*before_last_backward)(void *ctx, gpt_model *m);
    /* the last local micro-batch's backward tells it as gradients become final (gpt_grads_hook:
     * e.g. to start their all-reduces) */
    void (*grads_ready)(void *ctx, const gpt_model *m, int layer);
    /* after the last backward: the gradients summed over ranks (or this rank's shard of the
     * sum), *loss summed over ranks */
    int (*reduce)(void *ctx, gpt_model *m, double *loss);
    /* the sum over all ranks of the squared gradients this rank holds */
    double (*grad_sumsq)(void *ctx, gpt_model *m);
    /* after the update: every rank's parameters equal, and *nonfinite (in: the count of weights
     * this rank's update left non-finite) the sum over ranks, so that all ranks stop together */
    int (*after_update)(void *ctx, gpt_model *m, size_t *nonfinite);
    /* a checkpoint of the whole model (moment shards gathered), written by rank 0 */
    int (*save)(void *ctx, gpt_model *m, const char *dir, const ckpt_state *st);
} train_sync;

typedef struct {
    long step;        /* 1-based */
    double loss, grad_norm, lr;
} train_step_result;

/* Told as the loop goes; the place for timing and reporting. Either hook may be NULL. */
typedef struct {
    void *ctx;
    void (*step_begin)(void *ctx, long step);
    /* after the update of the step (before its checkpoint, whose time is not the step's); non-zero
     * stops the run with that code */
    int (*step_end)(void *ctx, const train_step_result *r);
} train_observer;

/* Learning rate at 0-based step s: linear warm-up over `warmup` steps, then cosine decay to
 * min_lr at the last step. */
double train_lr(const train_opts *o, long s);
/* Initial weights (seeded), then --init's weights or --resume's checkpoint; the first step to run
 * into *start. Returns 0, CB_EFAIL or CB_EUSAGE. */
int train_start(gpt_model *m, const train_opts *o, long *start, uint64_t *run_id);
/* Steps [start, o->steps). Returns 0, CB_EFAIL (a step failed, or diverged) or an observer's code. */
int train_run(gpt_model *m, const train_opts *o, const train_sync *sync, const train_observer *obs, long start,
              uint64_t run_id);

#endif
