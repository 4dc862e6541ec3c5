#include "step.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/mem.h"
#include "../common/stats.h"
#include "../common/timer.h"
#include "../kernels/rope.h"
#include "../model/checkpoint.h"
#include "../model/dataset.h"
#include "../model/gpt.h"
#include "../kernels/adamw.h"
#include "comm.h"
#include "matmul_bench.h"
#include "peak.h"

const rec_col step_log_cols[SL_NCOLS] = {
    {"step", "", REC_NUM, 0},        {"loss", "nats", REC_NUM, 4},       {"grad_norm", "", REC_NUM, 4},
    {"lr", "", REC_NUM, 7},          {"ms", "ms", REC_NUM, 1},           {"tokens_per_s", "tok/s", REC_NUM, 1},
    {"seq_per_s", "seq/s", REC_NUM, 3}, {"mfu", "%", REC_NUM, 1},        {"hfu", "%", REC_NUM, 1},
    {"comm_ms", "ms", REC_NUM, 1},   {"exposed_comm_ms", "ms", REC_NUM, 1},
};

const rec_col step_summary_cols[SS_NCOLS] = {
    {"model", "", REC_STR, 0},          {"tensor_parallel", "", REC_NUM, 0}, {"pipeline_parallel", "", REC_NUM, 0},
    {"instances", "", REC_NUM, 0},      {"instance_type", "", REC_STR, 0},   {"seq_len", "", REC_NUM, 0},
    {"global_batch", "seq", REC_NUM, 0}, {"micro_batch", "seq", REC_NUM, 0}, {"steps_timed", "", REC_NUM, 0},
    {"seq_per_s", "seq/s", REC_NUM, 3}, {"seq_per_s_min", "seq/s", REC_NUM, 3}, {"seq_per_s_max", "seq/s", REC_NUM, 3},
    {"tokens_per_s", "tok/s", REC_NUM, 1}, {"step_ms", "ms", REC_NUM, 1},   {"mfu", "%", REC_NUM, 1},
    {"hfu", "%", REC_NUM, 1},           {"peak_gflops", "GFLOP/s", REC_NUM, 1}, {"recompute", "", REC_NUM, 0},
    {"peak_rss_gib", "GiB", REC_NUM, 3}, {"estimate_gib", "GiB", REC_NUM, 3}, {"source", "", REC_STR, 0},
    {"ranks", "", REC_NUM, 0},          {"compute_ms", "ms", REC_NUM, 1},    {"comm_ms", "ms", REC_NUM, 1},
    {"exposed_comm_ms", "ms", REC_NUM, 1},
};

const rec_col step_breakdown_cols[SB_NCOLS] = {
    {"kind", "", REC_STR, 0},        {"ms_per_step", "ms", REC_NUM, 1}, {"pct_of_step", "%", REC_NUM, 1},
    {"predicted_ms", "ms", REC_NUM, 1}, {"gap_pct", "%", REC_NUM, 1},   {"prediction", "", REC_STR, 0},
};

double step_lr(const step_opts *o, long s)
{
    if (s < o->lr_warmup) return o->lr * (double)(s + 1) / (double)o->lr_warmup;
    long span = o->steps - o->lr_warmup;
    double progress = span > 1 ? (double)(s - o->lr_warmup) / (double)(span - 1) : 1.0;
    if (progress > 1) progress = 1;
    return o->min_lr + 0.5 * (o->lr - o->min_lr) * (1.0 + cos(M_PI * progress));
}

/* ---------------------------------------------------------------- the prediction (the feed) */

typedef struct {
    float *qkv;
    rope_shape s;
    rope_tables *tb;
} rope_ctx;

static void rope_fb(void *p)
{
    rope_ctx *c = p;
    rope_forward_fused(c->qkv, &c->s, c->tb);
    rope_backward_fused(c->qkv, &c->s, c->tb);
}

/* Predicted ms per optimizer step for each kind; how[] says where each figure comes from. Runs
 * before the model is allocated, so that its buffers do not add to the run's peak memory. */
static int predict_kinds(const step_opts *o, double pred[8], char how[8][160])
{
    const model_config *c = &o->cfg;
    gpt_mem mem;
    gpt_estimate(c, o->B, o->T, o->recompute, &mem);
    const double nparams = mem.params / 4;
    const int rdims = c->learned_pos ? 0 : rope_rotary_dims(c->HS, c->rotary_pct);
    const double BT = (double)o->B * o->T, C = c->C, L = c->L, V = c->V, acc = o->accum;
    for (int k = 0; k < 8; k++) pred[k] = NAN, how[k][0] = '\0';
    /* matmuls: every shape of one micro-step, measured now as `costbench matmul --shapes transformer` does */
    static mm_shape sh[4096];
    int n = mm_shapes_transformer(sh, 4096, c, o->B, o->T);
    if (n < 0) return err_msg("internal: too many matmul shapes at T=%d", o->T);
    record r;
    record_init(&r, mm_cols, MM_NCOLS);
    runner_opts ro;
    runner_defaults(&ro);
    ro.min_samples = 3, ro.min_time_s = 0.05;
    fprintf(stderr, "costbench train: measuring the step's %d matmul shapes and the rotary kernel for the prediction\n", n);
    if (mm_run(sh, n, &ro, o->budget_s, o->peak_gflops, &r) != 0) {
        record_free(&r);
        return CB_EFAIL;
    }
    double mm = 0, att = 0;
    int measured = r.nrows;
    for (int i = 0; i < r.nrows; i++) {
        const char *op = r.str[(size_t)i * r.ncols + MM_OP];
        double ms = r.num[(size_t)i * r.ncols + MM_STEP_MS];
        if (strncmp(op, "attn_", 5) == 0) att += ms;
        else mm += ms;
    }
    record_free(&r);
    if (measured < n) snprintf(how[K_MATMUL], 160, "incomplete: %d of %d shapes measured within --budget-s", measured, n);
    /* rotary: the fused kernel at this shape, forward + backward, as `costbench rope` times it */
    double rope_ms = 0;
    if (rdims > 0) {
        rope_tables tb;
        float *store = mem_alloc(rope_tables_floats(o->T, rdims, c->HS), sizeof(float), "rotary tables");
        rope_ctx rc = {mem_alloc((size_t)BT * 3 * C, sizeof(float), "rotary buffer"), {o->B, o->T, c->NH, c->HS, rdims}, &tb};
        if (!rc.qkv || !store) {
            free(rc.qkv), free(store);
            return CB_EFAIL;
        }
        rope_tables_init(&tb, store, o->T, rdims, c->HS, c->rotary_base);
        runner_fill(rc.qkv, (size_t)BT * 3 * C, 3u);
        bench_case bc = {"rope", rope_fb, NULL, NULL};
        runner_result rr;
        int bad = runner_run(&ro, &bc, &rc, &rr);
        free(rc.qkv), free(store);
        if (bad) return CB_EFAIL;
        rope_ms = rr.s.median * 1e3 * L;
    }
    /* memory-bound kernels: the bytes they must move at the copy bandwidth measured now */
    runner_opts co;
    runner_defaults(&co);
    co.min_samples = 3;
    double gbps = peak_copy_gbps(omp_get_max_threads(), 256.0 * 1048576, &co);
    double bw = gbps * 1e9 / 1e3; /* bytes per ms */
    double att_soft = L * (double)o->B * c->NH * o->T * o->T * (8.0 /* softmax: read S, write P */ + 12.0 /* dS */);
    double ln = (2 * L + 1) * BT * C * (8.0 + 16.0);
    double gelu = L * BT * 4 * C * (8.0 + 12.0);
    double xent = BT * V * (8.0 + 8.0);
    double other = L * BT * C * (c->parallel_residual ? 16.0 : 24.0) + BT * C * 8.0 * 2; /* residual adds, embedding */
    double opt_bytes = nparams * (28.0 + 4.0 + 4.0); /* AdamW, norm, zeroing */
    pred[K_MATMUL] = acc * mm;
    pred[K_ATTENTION] = acc * (att + att_soft / bw);
    pred[K_ROTARY] = acc * rope_ms;
    pred[K_LAYERNORM] = acc * ln / bw;
    pred[K_GELU] = acc * gelu / bw;
    pred[K_XENT] = acc * xent / bw;
    pred[K_OPTIMIZER] = opt_bytes / bw;
    pred[K_OTHER] = acc * other / bw;
    if (!how[K_MATMUL][0]) snprintf(how[K_MATMUL], 160, "costbench matmul: %d shapes measured now", n);
    snprintf(how[K_ATTENTION], 160, "costbench matmul attention shapes + softmax bytes at %.1f GB/s copy", gbps);
    if (rdims > 0) snprintf(how[K_ROTARY], 160, "costbench rope: fused forward+backward measured now");
    else snprintf(how[K_ROTARY], 160, "no rotary embedding");
    for (int k = K_LAYERNORM; k <= K_OTHER; k++)
        if (k != K_ROTARY) snprintf(how[k], 160, "bytes moved at %.1f GB/s copy bandwidth (lower bound)", gbps);
    return 0;
}

/* ---------------------------------------------------------------- the loop */

static double median_of(const double *x, int n)
{
    if (n <= 0) return NAN;
    double *y = malloc((size_t)n * sizeof *y);
    if (!y) return NAN;
    memcpy(y, x, (size_t)n * sizeof *y);
    stats_summary s;
    stats_summarize(y, n, &s);
    free(y);
    return s.median;
}

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

/* Overlap: during the last local micro-batch's backward, each tensor slice's all-reduce starts as
 * soon as its gradient is final (the output layer first, then layer L-1 .. 0, the embeddings
 * last), and the requests in flight are given progress at every layer. */
typedef struct {
    comm_request *req;
    int n, cap, failed;
    double mpi_s; /* time inside MPI calls during the backward */
} overlap_ctx;

static void overlap_launch(overlap_ctx *c, float *p, size_t n)
{
    if (n == 0 || c->failed) return;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        comm_request *r = realloc(c->req, (size_t)cap * sizeof *r);
        if (!r) {
            c->failed = err_msg("out of memory");
            return;
        }
        c->req = r, c->cap = cap;
    }
    if (comm_iallreduce_sum(p, n, &c->req[c->n]) != 0) c->failed = CB_EFAIL;
    else c->n++;
}

static void overlap_on_grads_ready(void *ctx, const gpt_model *m, int layer)
{
    overlap_ctx *c = ctx;
    double t0 = timer_now_s();
    const int L = m->cfg.L;
    float *g = m->grads;
    if (layer == L) {
        overlap_launch(c, g + m->offsets[P_UNEMBED], m->sizes[P_UNEMBED]); /* empty when tied to wte */
        overlap_launch(c, g + m->offsets[P_LNFW], m->sizes[P_LNFW]);
        overlap_launch(c, g + m->offsets[P_LNFB], m->sizes[P_LNFB]);
    } else if (layer >= 0) {
        static const int kinds[] = {P_LN1W, P_LN1B, P_QKVW, P_QKVB, P_ATTPROJW, P_ATTPROJB,
                                    P_LN2W, P_LN2B, P_FCW,  P_FCB,  P_FCPROJW,  P_FCPROJB};
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            size_t per = m->sizes[kinds[i]] / (size_t)L;
            overlap_launch(c, g + m->offsets[kinds[i]] + (size_t)layer * per, per);
        }
    } else {
        overlap_launch(c, g + m->offsets[P_WTE], m->sizes[P_WTE]);
        overlap_launch(c, g + m->offsets[P_WPE], m->sizes[P_WPE]);
    }
    for (int i = 0; i < c->n && !c->failed; i++)
        if (comm_test(&c->req[i]) < 0) c->failed = CB_EFAIL;
    c->mpi_s += timer_now_s() - t0;
}

/* Rank 0 writes the checkpoint; with ZeRO-1 the moment shards are gathered to it first, so a
 * checkpoint is the same file whatever the rank count (it resumes on any). */
static int save_checkpoint(gpt_model *m, const step_opts *o, const ckpt_state *st, const int *counts)
{
    int rc = 0;
    if (!counts) return o->rank == 0 ? ckpt_save(m, o->save_dir, st) : 0;
    float *fm = NULL, *fv = NULL;
    if (o->rank == 0) {
        fm = mem_alloc(m->nparams + 16, sizeof(float), "AdamW first moments (gathered for the checkpoint)");
        fv = mem_alloc(m->nparams + 16, sizeof(float), "AdamW second moments (gathered for the checkpoint)");
        if (!fm || !fv) rc = CB_EFAIL;
    }
    /* every rank takes part in the gathers, whatever happened on rank 0 */
    if (comm_max(rc ? 1 : 0) > 0) rc = CB_EFAIL;
    if (rc == 0) rc = comm_gather_v(m->m, fm, counts);
    if (rc == 0) rc = comm_gather_v(m->v, fv, counts);
    if (rc == 0 && o->rank == 0) {
        float *sm = m->m, *sv = m->v;
        size_t slo = m->mom_lo, shi = m->mom_hi;
        m->m = fm, m->v = fv, m->mom_lo = 0, m->mom_hi = m->nparams;
        rc = ckpt_save(m, o->save_dir, st);
        m->m = sm, m->v = sv, m->mom_lo = slo, m->mom_hi = shi;
    }
    free(fm);
    free(fv);
    return rc;
}

int step_run(const step_opts *o, machine_info *mi, record *log, record *summary, record *breakdown)
{
    const model_config *c = &o->cfg;
    gpt_model m;
    dataset ds;
    int have_ds = 0, rc = 0;
    double *step_ms = NULL, (*kind_ms)[8] = NULL, *comm_ms = NULL, *exposed_ms = NULL;
    int *counts = NULL; /* ZeRO-1: parameters per rank */
    size_t lo = 0, hi = 0;
    const int root = o->rank == 0;
    double pred[8] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    char how[8][160] = {{0}};
    if (o->predict && (rc = predict_kinds(o, pred, how)) != 0) return rc;
    if (gpt_init(&m, c, o->B, o->T, o->recompute) != 0) return CB_EFAIL;
    if (o->data) {
        if (dataset_open(&ds, o->data) != 0) {
            gpt_free(&m);
            return CB_EFAIL;
        }
        have_ds = 1;
    }
    gpt_init_weights(&m, o->seed);
    long start = 0;
    ckpt_state want = {0, o->seed, o->B, o->T, o->accum};
    if (o->resume_dir) {
        ckpt_state got;
        if ((rc = ckpt_resume(&m, o->resume_dir, &want, &got)) != 0) goto out;
        start = got.step;
        if (root) fprintf(stderr, "costbench train: resumed from %s at step %ld\n", o->resume_dir, start);
        if (start >= o->steps) {
            rc = err_usage("--resume %s: the checkpoint is at step %ld, and --steps is %ld: nothing to do", o->resume_dir,
                           start, o->steps);
            goto out;
        }
    } else if (o->init_path) {
        if ((rc = ckpt_load_weights(&m, o->init_path)) != 0) goto out;
        if (root) fprintf(stderr, "costbench train: weights from %s\n", o->init_path);
    }

    /* ZeRO-1: rank r keeps the AdamW moments of params [displ_r, displ_r + counts_r) only: the
     * gradients are reduce-scattered, each rank updates its block, the params are all-gathered */
    hi = m.nparams;
    if (o->zero && o->ranks > 1) {
        counts = calloc((size_t)o->ranks, sizeof *counts);
        if (!counts) {
            rc = err_msg("out of memory");
            goto out;
        }
        size_t per = (m.nparams + (size_t)o->ranks - 1) / (size_t)o->ranks;
        per = (per + 15) / 16 * 16;
        for (int r = 0; r < o->ranks; r++) {
            size_t a = (size_t)r * per < m.nparams ? (size_t)r * per : m.nparams;
            size_t b = a + per < m.nparams ? a + per : m.nparams;
            counts[r] = (int)(b - a);
            if (r == o->rank) lo = a, hi = b;
        }
        if ((rc = gpt_shard_moments(&m, lo, hi)) != 0) goto out;
    }
    const double tokens_per_step = (double)o->B * o->T * o->accum;
    const double mflops = model_flops_per_token(c, o->T), hflops = model_hardware_flops_per_token(c, o->T, o->recompute);
    long nsteps = o->steps - start;
    step_ms = calloc((size_t)nsteps, sizeof *step_ms);
    kind_ms = calloc((size_t)nsteps, sizeof *kind_ms);
    comm_ms = calloc((size_t)nsteps, sizeof *comm_ms);
    exposed_ms = calloc((size_t)nsteps, sizeof *exposed_ms);
    if (!step_ms || !kind_ms || !comm_ms || !exposed_ms) {
        rc = err_msg("out of memory");
        goto out;
    }
    if (!o->quiet && root) {
        for (int i = 0; i < log->nnotes; i++) printf("# %s\n", log->notes[i]);
        printf("%4s  %8s  %9s  %10s  %8s  %12s  %9s  %5s  %5s\n", "step", "loss", "grad_norm", "lr", "ms", "tokens_per_s",
               "seq_per_s", "mfu", "hfu");
        printf("%4s  %8s  %9s  %10s  %8s  %12s  %9s  %5s  %5s\n", "", "[nats]", "", "", "[ms]", "[tok/s]", "[seq/s]", "[%]",
               "[%]");
        fflush(stdout);
    }
    for (long s = start; s < o->steps; s++) {
        memset(m.t_kind, 0, sizeof m.t_kind);
        double t0 = timer_now_s();
        gpt_zero_grad(&m);
        double loss = 0;
        const int per_rank = o->accum / o->ranks, mb0 = o->rank * per_rank;
        const int overlap = o->ranks > 1 && !counts && o->overlap;
        overlap_ctx ov = {0};
        for (int mi_ = mb0; mi_ < mb0 + per_rank; mi_++) {
            if (overlap && mi_ == mb0 + per_rank - 1) m.grads_ready = overlap_on_grads_ready, m.grads_ready_ctx = &ov;
            if (have_ds) {
                if ((rc = dataset_batch(&ds, o->seed, s, mi_, m.inputs, m.targets, o->B, o->T, c->V)) != 0) goto out;
            } else {
                synthetic_batch(o->seed, s, mi_, m.inputs, m.targets, o->B, o->T, c->V);
            }
            loss += gpt_forward(&m) / o->accum;
            gpt_backward(&m, 1.0f / (float)o->accum);
        }
        m.grads_ready = NULL;
        /* data parallel: the gradients (already scaled by 1/A) summed over ranks, in buckets that
         * are all in flight at once; the loss too. Exposed = the time the step waits for it. */
        double c0 = timer_now_s();
        if (counts) {
            if ((rc = comm_reduce_scatter_sum_v(m.grads, counts)) != 0) goto out;
        } else if (overlap) {
            for (int r = 0; r < ov.n; r++) {
                int w = comm_wait(&ov.req[r]);
                if (rc == 0) rc = w;
            }
            free(ov.req);
            if (rc == 0 && ov.failed) rc = ov.failed;
            if (rc) goto out;
        } else if (o->ranks > 1) {
            if ((rc = allreduce_buckets(m.grads, m.nparams, o->bucket_bytes)) != 0) goto out;
        }
        if (o->ranks > 1) loss = comm_sum(loss);
        double exposed_s = timer_now_s() - c0;
        double comm_s = exposed_s + ov.mpi_s;
        double gn0 = timer_now_s();
        double gnorm = counts ? sqrt(comm_sum(grad_sumsq(m.grads + lo, hi - lo))) : gpt_grad_norm(&m);
        m.t_kind[K_OPTIMIZER] += timer_now_s() - gn0;
        adamw_params hp = o->hp;
        double lr = step_lr(o, s);
        hp.lr = (float)lr;
        gpt_update(&m, &hp, gnorm, o->clip);
        if (counts) {
            double a0 = timer_now_s();
            if ((rc = comm_allgather_v(m.params, counts)) != 0) goto out;
            comm_s += timer_now_s() - a0;
            exposed_s += timer_now_s() - a0;
        }
        double dt = timer_now_s() - t0;
        if (!isfinite(loss)) {
            rc = err_msg("step %ld: the loss is %g (diverged); lower --lr", s + 1, loss);
            goto out;
        }
        long i = s - start;
        step_ms[i] = dt * 1e3;
        double attributed = 0;
        for (int k = 0; k < 8; k++) attributed += m.t_kind[k];
        m.t_kind[K_OTHER] += dt - attributed - comm_s; /* loop overhead, data */
        comm_ms[i] = comm_s * 1e3;
        exposed_ms[i] = exposed_s * 1e3;
        for (int k = 0; k < 8; k++) kind_ms[i][k] = m.t_kind[k] * 1e3;
        int row = record_add_row(log);
        if (row < 0) {
            rc = CB_EFAIL;
            goto out;
        }
        double tps = tokens_per_step / dt;
        record_num(log, row, SL_STEP, (double)(s + 1));
        record_num(log, row, SL_LOSS, loss);
        record_num(log, row, SL_GNORM, gnorm);
        record_num(log, row, SL_LR, lr);
        record_num(log, row, SL_MS, dt * 1e3);
        record_num(log, row, SL_TOKS, tps);
        record_num(log, row, SL_SEQS, tps / o->T);
        record_num(log, row, SL_MFU, 100.0 * mflops * tps / (o->peak_gflops * 1e9));
        record_num(log, row, SL_HFU, 100.0 * hflops * tps / (o->peak_gflops * 1e9));
        record_num(log, row, SL_COMM, comm_s * 1e3);
        record_num(log, row, SL_EXPOSED, exposed_s * 1e3);
        if (!o->quiet && root) {
            printf("%4ld  %8.4f  %9.4f  %10.3e  %8.1f  %12.1f  %9.3f  %5.1f  %5.1f\n", s + 1, loss, gnorm, lr, dt * 1e3, tps,
                   tps / o->T, 100.0 * mflops * tps / (o->peak_gflops * 1e9), 100.0 * hflops * tps / (o->peak_gflops * 1e9));
            fflush(stdout);
        }
        if (o->save_dir && ((o->save_every > 0 && (s + 1) % o->save_every == 0) || s + 1 == o->steps)) {
            ckpt_state st = {s + 1, o->seed, o->B, o->T, o->accum};
            if ((rc = save_checkpoint(&m, o, &st, counts)) != 0) goto out;
        }
    }
    /* summary over the steps after the discarded warm-up ones */
    long first = o->discard < nsteps ? o->discard : 0;
    int nt = (int)(nsteps - first);
    double *sps = malloc((size_t)nt * sizeof *sps);
    if (!sps) {
        rc = err_msg("out of memory");
        goto out;
    }
    for (int i = 0; i < nt; i++) sps[i] = tokens_per_step / o->T / (step_ms[first + i] / 1e3);
    stats_summary ss;
    stats_summarize(sps, nt, &ss);
    free(sps);
    double med_ms = median_of(step_ms + first, nt);
    int row = record_add_row(summary);
    if (row < 0) {
        rc = CB_EFAIL;
        goto out;
    }
    double rss = mem_peak_rss_bytes();
    record_str(summary, row, SS_MODEL, c->name);
    record_num(summary, row, SS_TP, 1);
    record_num(summary, row, SS_PP, 1);
    record_num(summary, row, SS_INSTANCES, 1);
    record_str(summary, row, SS_INSTANCE, CB_THIS_MACHINE);
    record_num(summary, row, SS_SEQ, o->T);
    record_num(summary, row, SS_GBATCH, o->B * o->accum);
    record_num(summary, row, SS_MBATCH, o->B);
    record_num(summary, row, SS_STEPS, nt);
    record_num(summary, row, SS_SEQS, ss.median);
    record_num(summary, row, SS_SEQS_MIN, ss.min);
    record_num(summary, row, SS_SEQS_MAX, ss.max);
    record_num(summary, row, SS_TOKS, ss.median * o->T);
    record_num(summary, row, SS_STEP_MS, med_ms);
    record_num(summary, row, SS_MFU, 100.0 * mflops * ss.median * o->T / (o->peak_gflops * 1e9));
    record_num(summary, row, SS_HFU, 100.0 * hflops * ss.median * o->T / (o->peak_gflops * 1e9));
    record_num(summary, row, SS_PEAK, o->peak_gflops);
    record_num(summary, row, SS_RECOMPUTE, o->recompute);
    record_num(summary, row, SS_RSS, rss / 1073741824.0);
    record_num(summary, row, SS_EST, o->estimate_bytes / 1073741824.0);
    char src[256];
    snprintf(src, sizeof src, "measured here %s", mi->date_utc);
    record_str(summary, row, SS_SOURCE, src);
    double med_comm = median_of(comm_ms + first, nt), med_exposed = median_of(exposed_ms + first, nt);
    record_num(summary, row, SS_RANKS, o->ranks);
    record_num(summary, row, SS_COMPUTE_MS, med_ms - med_comm);
    record_num(summary, row, SS_COMM_MS, med_comm);
    record_num(summary, row, SS_EXPOSED_MS, med_exposed);
    if (o->ranks > 1 && counts)
        record_note(summary, "%d data-parallel ranks (%s), ZeRO-1: gradients reduce-scattered, each rank updates its 1/%d of the params and AdamW moments, params all-gathered; all exposed (median %.1f ms a step)",
                    o->ranks, comm_describe(), o->ranks, med_comm);
    else if (o->ranks > 1 && o->overlap)
        record_note(summary, "%d data-parallel ranks (%s); each tensor slice's all-reduce starts during the last backward as soon as its gradient is final; comm_ms: time in MPI calls (median %.1f ms), exposed_comm_ms: the wait after the backward (median %.1f ms)",
                    o->ranks, comm_describe(), med_comm, med_exposed);
    else if (o->ranks > 1)
        record_note(summary, "%d data-parallel ranks (%s); gradients all-reduced in %.0f MiB buckets after the last backward (--no-overlap): all exposed (median %.1f ms a step)",
                    o->ranks, comm_describe(), o->bucket_bytes / 1048576.0, med_comm);
    record_note(summary, "median of %d steps after discarding %ld; MFU = %.0f model FLOPs/token (6N + 12 L C T, PaLM appendix B) x tokens/s / %s",
                nt, first, mflops, o->peak_note);
    record_note(summary, "peak RSS %.3f GiB = %.2fx the printed estimate of %.3f GiB", rss / 1073741824.0,
                rss / o->estimate_bytes, o->estimate_bytes / 1073741824.0);
    /* breakdown by kind */
    double tot_meas = 0, tot_pred = 0;
    int pred_complete = 1;
    double *col = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *col);
    if (!col) {
        rc = err_msg("out of memory");
        goto out;
    }
    for (int k = 0; k < 8; k++) {
        for (int i = 0; i < nt; i++) col[i] = kind_ms[first + i][k];
        double ms = median_of(col, nt);
        int r2 = record_add_row(breakdown);
        if (r2 < 0) break;
        record_str(breakdown, r2, SB_KIND, gpt_kind_names[k]);
        record_num(breakdown, r2, SB_MS, ms);
        record_num(breakdown, r2, SB_PCT, 100.0 * ms / med_ms);
        record_num(breakdown, r2, SB_PRED, pred[k]);
        record_num(breakdown, r2, SB_GAP, isfinite(pred[k]) && pred[k] > 0 ? 100.0 * (ms - pred[k]) / pred[k] : NAN);
        record_str(breakdown, r2, SB_HOW, how[k][0] ? how[k] : "not predicted (--no-predict)");
        tot_meas += ms;
        if (isfinite(pred[k])) tot_pred += pred[k];
        else pred_complete = 0;
    }
    free(col);
    if (o->ranks > 1) {
        double cm = median_of(exposed_ms + first, nt);
        int r4 = record_add_row(breakdown);
        if (r4 >= 0) {
            record_str(breakdown, r4, SB_KIND, "comm_exposed");
            record_num(breakdown, r4, SB_MS, cm);
            record_num(breakdown, r4, SB_PCT, 100.0 * cm / med_ms);
            record_str(breakdown, r4, SB_HOW, "gradient all-reduce the step waits for (measured)");
        }
        pred_complete = 0;
    }
    int r3 = record_add_row(breakdown);
    if (r3 >= 0) {
        record_str(breakdown, r3, SB_KIND, "step");
        record_num(breakdown, r3, SB_MS, med_ms);
        record_num(breakdown, r3, SB_PCT, 100.0);
        if (pred_complete) {
            record_num(breakdown, r3, SB_PRED, tot_pred);
            record_num(breakdown, r3, SB_GAP, 100.0 * (med_ms - tot_pred) / tot_pred);
            record_str(breakdown, r3, SB_HOW, "sum of the predictions above");
        }
    }
    (void)tot_meas;
    record_note(breakdown, "ms_per_step: median over the timed steps of each kind's time; predicted_ms: what the microbenchmarks measured in this run predict for the same shapes");
out:
    free(step_ms);
    free(kind_ms);
    free(comm_ms);
    free(exposed_ms);
    free(counts);
    if (have_ds) dataset_close(&ds);
    gpt_free(&m);
    return rc;
}
