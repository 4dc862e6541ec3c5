#include "dp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../common/timer.h"
#include "comm.h"

struct dp_sync_s {
    dp_mode mode;
    int ranks, rank;
    double bucket_bytes;
    int *counts;             /* ZeRO-1: parameters per rank */
    size_t lo, hi;           /* ZeRO-1: this rank's block */
    comm_request *req;       /* overlap: the all-reduces in flight */
    int nreq, cap, failed;
    double comm_s, exposed_s; /* since the last dp_sync_take_times */
};

/* Time since t0, all of it communication the step waits for. */
static void exposed_since(dp_sync *d, double t0)
{
    double dt = timer_now_s() - t0;
    d->comm_s += dt, d->exposed_s += dt;
}

/* ---------------------------------------------------------------- buckets (--no-overlap) */

/* Sum of the gradients over ranks: buckets of `bucket_bytes`, all started, then all waited for. */
static int allreduce_buckets(float *g, size_t n, double bucket_bytes)
{
    size_t per = (size_t)fmax(1024.0, bucket_bytes / sizeof(float));
    size_t nb = (n + per - 1) / per;
    comm_request *req = calloc(nb, sizeof *req);
    if (!req) return err_msg("out of memory");
    int rc = 0;
    size_t started = 0;
    for (size_t b = 0; b < nb && rc == 0; b++, started++) {
        size_t o = b * per, k = n - o < per ? n - o : per;
        rc = comm_iallreduce_sum(g + o, k, &req[b]);
    }
    for (size_t b = 0; b < started; b++) {
        int r = comm_wait(&req[b]);
        if (rc == 0) rc = r;
    }
    free(req);
    return rc;
}

static int reduce_buckets(void *ctx, gpt_model *m, double *loss)
{
    dp_sync *d = ctx;
    double t0 = timer_now_s();
    int rc = allreduce_buckets(m->w.grads, m->w.nparams, d->bucket_bytes);
    *loss = comm_sum(*loss);
    exposed_since(d, t0);
    return rc;
}

/* ---------------------------------------------------------------- overlap */

static void overlap_launch(dp_sync *d, float *p, size_t n)
{
    if (n == 0 || d->failed) return;
    if (d->nreq == d->cap) {
        int cap = d->cap ? 2 * d->cap : 64;
        comm_request *r = realloc(d->req, (size_t)cap * sizeof *r);
        if (!r) {
            d->failed = err_msg("out of memory");
            return;
        }
        d->req = r, d->cap = cap;
    }
    if (comm_iallreduce_sum(p, n, &d->req[d->nreq]) != 0) d->failed = CB_EFAIL;
    else d->nreq++;
}

/* Told by the last backward as gradients become final (gpt.h's gpt_grads_hook). */
static void overlap_on_grads_ready(void *ctx, const gpt_model *m, int layer)
{
    dp_sync *d = ctx;
    double t0 = timer_now_s();
    const int L = m->cfg.L;
    float *g = m->w.grads;
    /* layer L: the model-wide tensors but the embeddings (the output layer, the final norm);
     * layer l: layer l's slice of every per-layer tensor; -1: the embeddings. Empty tensors (tied,
     * no bias) launch nothing. */
    for (int k = 0; k < P_COUNT; k++) {
        const int embedding = param_table[k].role == PARAM_EMBEDDING;
        if (param_per_layer(k) && layer >= 0 && layer < L) {
            size_t per = m->w.sizes[k] / (size_t)L;
            overlap_launch(d, g + m->w.offsets[k] + (size_t)layer * per, per);
        } else if (!param_per_layer(k) && (layer == L ? !embedding : layer < 0 && embedding)) {
            overlap_launch(d, g + m->w.offsets[k], m->w.sizes[k]);
        }
    }
    for (int i = 0; i < d->nreq && !d->failed; i++)
        if (comm_test(&d->req[i]) < 0) d->failed = CB_EFAIL;
    d->comm_s += timer_now_s() - t0;
}

static void overlap_begin(void *ctx, gpt_model *m)
{
    (void)m;
    dp_sync *d = ctx;
    d->nreq = 0, d->failed = 0;
}

static int reduce_overlap(void *ctx, gpt_model *m, double *loss)
{
    (void)m;
    dp_sync *d = ctx;
    double t0 = timer_now_s();
    int rc = d->failed;
    for (int r = 0; r < d->nreq; r++) {
        int w = comm_wait(&d->req[r]);
        if (rc == 0) rc = w;
    }
    d->nreq = 0;
    *loss = comm_sum(*loss);
    exposed_since(d, t0);
    return rc;
}

/* ---------------------------------------------------------------- ZeRO-1 */

static int reduce_zero1(void *ctx, gpt_model *m, double *loss)
{
    dp_sync *d = ctx;
    double t0 = timer_now_s();
    int rc = comm_reduce_scatter_sum_v(m->w.grads, d->counts);
    *loss = comm_sum(*loss);
    exposed_since(d, t0);
    return rc;
}

static double sumsq_zero1(void *ctx, gpt_model *m)
{
    dp_sync *d = ctx;
    return comm_sum(gpt_grad_sumsq(m, d->lo, d->hi));
}

static double sumsq_local(void *ctx, gpt_model *m)
{
    (void)ctx;
    return gpt_grad_sumsq(m, 0, m->w.nparams);
}

static int allgather_zero1(void *ctx, gpt_model *m, size_t *nonfinite)
{
    dp_sync *d = ctx;
    double t0 = timer_now_s();
    *nonfinite = (size_t)comm_sum((double)*nonfinite); /* each rank saw its shard only */
    int rc;
    if (m->w.store == ELEM_BF16) {
        rc = comm_allgather_v_u16(m->w.params_bf16, d->counts);
        gpt_params_changed(m); /* the fp32 copies of the small tensors from the gathered weights */
    } else {
        rc = comm_allgather_v(m->w.params, d->counts);
    }
    exposed_since(d, t0);
    return rc;
}

/* Rank 0 writes the checkpoint with every rank's moment shard gathered to it. */
static int save_zero1(void *ctx, gpt_model *m, const char *dir, const ckpt_state *st)
{
    dp_sync *d = ctx;
    const int full = m->w.store == ELEM_BF16;
    const size_t elem = elem_size(m->w.store);
    int rc = 0;
    void *fm = NULL, *fv = NULL;
    if (d->rank == 0) {
        fm = mem_alloc(m->w.nparams, elem, "AdamW first moments (gathered for the checkpoint)");
        fv = mem_alloc(m->w.nparams, elem, "AdamW second moments (gathered for the checkpoint)");
        if (!fm || !fv) rc = CB_EFAIL;
    }
    /* every rank takes part in the gathers, whatever happened on rank 0 */
    if (comm_max(rc ? 1 : 0) > 0) rc = CB_EFAIL;
    if (rc == 0) rc = full ? comm_gather_v_u16(m->w.m, fm, d->counts) : comm_gather_v(m->w.m, fm, d->counts);
    if (rc == 0) rc = full ? comm_gather_v_u16(m->w.v, fv, d->counts) : comm_gather_v(m->w.v, fv, d->counts);
    if (rc == 0 && d->rank == 0) rc = ckpt_save(m, fm, fv, dir, st);
    free(fm);
    free(fv);
    return rc;
}

static int save_root(void *ctx, gpt_model *m, const char *dir, const ckpt_state *st)
{
    const dp_sync *d = ctx;
    return d->rank == 0 ? ckpt_save_own(m, dir, st) : 0;
}

/* Rank r's block: [r per, (r+1) per) of the parameters, per a multiple of the tensor alignment. */
static int zero1_shard(dp_sync *d, gpt_model *m)
{
    d->counts = calloc((size_t)d->ranks, sizeof *d->counts);
    if (!d->counts) return err_msg("out of memory");
    size_t per = mem_round_floats((m->w.nparams + (size_t)d->ranks - 1) / (size_t)d->ranks);
    for (int r = 0; r < d->ranks; r++) {
        size_t a = (size_t)r * per < m->w.nparams ? (size_t)r * per : m->w.nparams;
        size_t b = a + per < m->w.nparams ? a + per : m->w.nparams;
        d->counts[r] = (int)(b - a);
        if (r == d->rank) d->lo = a, d->hi = b;
    }
    return gpt_shard_moments(m, d->lo, d->hi);
}

/* ---------------------------------------------------------------- set-up */

dp_sync *dp_sync_new(dp_mode mode, double bucket_bytes, gpt_model *m, train_sync *hooks)
{
    memset(hooks, 0, sizeof *hooks);
    dp_sync *d = calloc(1, sizeof *d);
    if (!d) {
        err_msg("out of memory");
        return NULL;
    }
    d->mode = mode, d->bucket_bytes = bucket_bytes, d->ranks = comm_size(), d->rank = comm_rank();
    if (d->ranks == 1) return d; /* one process: nothing to synchronise */
    if (mode == DP_ZERO1 && zero1_shard(d, m) != 0) {
        dp_sync_free(d);
        return NULL;
    }
    hooks->ctx = d;
    hooks->before_last_backward = mode == DP_OVERLAP ? overlap_begin : NULL;
    hooks->grads_ready = mode == DP_OVERLAP ? overlap_on_grads_ready : NULL;
    hooks->reduce = mode == DP_ZERO1 ? reduce_zero1 : mode == DP_OVERLAP ? reduce_overlap : reduce_buckets;
    hooks->grad_sumsq = mode == DP_ZERO1 ? sumsq_zero1 : sumsq_local;
    hooks->after_update = mode == DP_ZERO1 ? allgather_zero1 : NULL;
    hooks->save = mode == DP_ZERO1 ? save_zero1 : save_root;
    return d;
}

void dp_sync_free(dp_sync *d)
{
    if (!d) return;
    for (int i = 0; i < d->nreq; i++) comm_wait(&d->req[i]);
    free(d->req);
    free(d->counts);
    free(d);
}

void dp_sync_take_times(dp_sync *d, double *comm_s, double *exposed_s)
{
    *comm_s = d->comm_s, *exposed_s = d->exposed_s;
    d->comm_s = d->exposed_s = 0;
}

void dp_sync_describe(const dp_sync *d, char *buf, size_t n)
{
    if (d->ranks == 1) snprintf(buf, n, "one process: no gradient synchronisation");
    else if (d->mode == DP_ZERO1)
        snprintf(buf, n, "%d data-parallel ranks (%s), ZeRO-1: gradients reduce-scattered, each rank updates its 1/%d "
                "of the params and AdamW moments, params all-gathered; all exposed",
                 d->ranks, comm_describe(), d->ranks);
    else if (d->mode == DP_OVERLAP)
        snprintf(buf, n, "%d data-parallel ranks (%s); each tensor slice's all-reduce starts during the last backward "
                "as soon as its gradient is final; comm_ms: time in MPI calls, exposed_comm_ms: the wait after the "
                "backward",
                 d->ranks, comm_describe());
    else
        snprintf(buf, n, "%d data-parallel ranks (%s); gradients all-reduced in %.0f MiB buckets after the last "
                "backward (--no-overlap): all exposed",
                 d->ranks, comm_describe(), d->bucket_bytes / 1048576.0);
}
