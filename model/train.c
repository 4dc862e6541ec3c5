#include "train.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/err.h"

double train_lr(const train_opts *o, long s)
{
    if (s < o->warmup) return o->lr * (double)(s + 1) / (double)o->warmup;
    long span = o->steps - o->warmup;
    double progress = span > 1 ? (double)(s - o->warmup) / (double)(span - 1) : 1.0;
    if (progress > 1) progress = 1;
    return o->min_lr + 0.5 * (o->lr - o->min_lr) * (1.0 + cos(M_PI * progress));
}

int train_start(gpt_model *m, const train_opts *o, long *start, uint64_t *run_id)
{
    gpt_init_weights(m, o->seed);
    *start = 0;
    *run_id = ckpt_new_run_id();
    if (o->resume_dir) {
        ckpt_state want = {0, o->seed, o->B, o->T, o->accum, 0, o->hp.beta1, o->hp.beta2}, got;
        int rc = ckpt_resume(m, o->resume_dir, &want, &got);
        if (rc != 0) return rc;
        if (got.step >= o->steps)
            return err_usage("--resume %s: the checkpoint is at step %ld, and --steps is %ld: nothing to do",
                             o->resume_dir, got.step, o->steps);
        *start = got.step;
        *run_id = got.run_id;
    } else if (o->init_path && ckpt_load_weights(m, o->init_path) != 0) {
        return CB_EFAIL;
    }
    if (o->save_dir && o->rank == 0) ckpt_clean(o->save_dir);
    return 0;
}

/* This rank's micro-batches of step s: forward and backward of each, gradients scaled by 1/A. */
static int micro_batches(gpt_model *m, const train_opts *o, const train_sync *sync, long s, double *loss)
{
    const int per_rank = o->accum / o->ranks, first = o->rank * per_rank;
    const float scale = 1.0f / (float)o->accum;
    /* the last micro-batch's backward tells the sync as gradients become final */
    const gpt_grads_hook hook = {sync ? sync->grads_ready : NULL, sync ? sync->ctx : NULL};
    *loss = 0;
    for (int mb = first; mb < first + per_rank; mb++) {
        int rc = 0;
        if (o->sampler) rc = sampler_batch(o->sampler, s, mb, o->B, o->B * o->accum, m->inputs, m->targets, m->cfg.V);
        else if (o->data) rc = dataset_batch(o->data, o->seed, s, mb, m->inputs, m->targets, o->B, o->T, m->cfg.V);
        else synthetic_batch(o->seed, s, mb, m->inputs, m->targets, o->B, o->T, m->cfg.V);
        if (rc != 0) return CB_EFAIL;
        double l;
        if (gpt_forward(m, scale, &l) != 0) return CB_EFAIL;
        *loss += l / o->accum;
        const int last = mb == first + per_rank - 1;
        if (last && sync && sync->before_last_backward) sync->before_last_backward(sync->ctx, m);
        if (gpt_backward(m, scale, last && hook.ready ? &hook : NULL) != 0) return CB_EFAIL;
    }
    return 0;
}

/* The file or directory the weights came from while no update has run since they were loaded
 * (step s is the first of this run), else NULL. */
static const char *loaded_from(const train_opts *o, long s, long start)
{
    if (s != start) return NULL;
    return o->resume_dir ? o->resume_dir : o->init_path;
}

/* A non-finite loss or gradient norm ends the run before the update: say where it came from
 * (fresh: loaded_from). */
static int diverged(const gpt_model *m, long step, double loss, double gnorm, const char *fresh)
{
    char where[320];
    int found = gpt_find_nonfinite(m, where, sizeof where);
    err_msg("step %ld: the %s is not finite (loss %g, gradient norm %g)%s%s; stopped before the update, nothing "
            "saved",
            step, isfinite(loss) ? "gradient norm" : "loss", loss, gnorm, found ? ": first non-finite value in " : "",
            found ? where : "");
    if (found && strncmp(where, "parameter", 9) == 0)
        err_hint("a non-finite weight: check the files given to --init or --resume");
    else if (fresh)
        err_hint("no update has run since the weights were loaded: the weights of '%s' overflow the forward; check "
                "that file", fresh);
    else
        err_hint("the run diverged: a lower --lr, a longer --warmup-steps or --grad-clip keeps it finite");
    return CB_EFAIL;
}

/* The update left non-finite weights (after finite gradients): the run ends before this step's
 * checkpoint, naming the first tensor holding one (fresh: loaded_from). */
static int update_overflowed(const gpt_model *m, long step, size_t bad, const char *fresh)
{
    char where[320];
    if (!gpt_find_nonfinite(m, where, sizeof where))
        snprintf(where, sizeof where, "a parameter this rank does not hold");
    err_msg("step %ld: the AdamW update left %zu weight%s non-finite, the first in %s; stopped, nothing saved",
            step, bad, bad == 1 ? "" : "s", where);
    if (fresh)
        err_hint("the gradients were finite and this is the first update since '%s' was loaded: its optimizer state "
                "overflows it; check that checkpoint",
                 fresh);
    else
        err_hint("the gradients were finite: the update overflowed; a lower --lr or --grad-clip keeps it finite");
    return CB_EFAIL;
}

static int save_step(gpt_model *m, const train_opts *o, const train_sync *sync, long done, uint64_t run_id)
{
    ckpt_state st = {done, o->seed, o->B, o->T, o->accum, run_id, o->hp.beta1, o->hp.beta2};
    if (sync && sync->save) return sync->save(sync->ctx, m, o->save_dir, &st);
    return o->rank == 0 ? ckpt_save_own(m, o->save_dir, &st) : 0;
}

/* One optimizer step s (the first of this run: start). */
static int one_step(gpt_model *m, const train_opts *o, const train_sync *sync, long s, long start, train_step_result *r)
{
    double loss;
    gpt_zero_grad(m);
    if (micro_batches(m, o, sync, s, &loss) != 0) return CB_EFAIL;
    if (sync && sync->reduce && sync->reduce(sync->ctx, m, &loss) != 0) return CB_EFAIL;
    double sumsq = sync && sync->grad_sumsq ? sync->grad_sumsq(sync->ctx, m) : gpt_grad_sumsq(m, 0, m->w.nparams);
    *r = (train_step_result){s + 1, loss, sqrt(sumsq), train_lr(o, s)};
    if (!isfinite(r->loss) || !isfinite(r->grad_norm))
        return diverged(m, s + 1, r->loss, r->grad_norm, loaded_from(o, s, start));
    adamw_params hp = o->hp;
    hp.lr = (float)r->lr;
    size_t bad = gpt_update(m, &hp, r->grad_norm, o->clip);
    if (sync && sync->after_update && sync->after_update(sync->ctx, m, &bad) != 0) return CB_EFAIL;
    if (bad) return update_overflowed(m, s + 1, bad, loaded_from(o, s, start));
    return 0;
}

int train_run(gpt_model *m, const train_opts *o, const train_sync *sync, const train_observer *obs, long start,
              uint64_t run_id)
{
    for (long s = start; s < o->steps; s++) {
        if (obs && obs->step_begin) obs->step_begin(obs->ctx, s + 1);
        train_step_result r;
        if (one_step(m, o, sync, s, start, &r) != 0) return CB_EFAIL;
        int rc = obs && obs->step_end ? obs->step_end(obs->ctx, &r) : 0;
        if (rc != 0) return rc;
        int due = o->save_dir && ((o->save_every > 0 && (s + 1) % o->save_every == 0) || s + 1 == o->steps);
        if (due && save_step(m, o, sync, s + 1, run_id) != 0) return CB_EFAIL;
    }
    return 0;
}
