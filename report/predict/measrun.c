/* measrun.c: a measured run as the step model (see measrun.h). */
#include "measrun.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/oplist.h"
#include "stepmodel.h"

void meas_run_init(meas_run *r, const scale_model *defaults)
{
    memset(r, 0, sizeof *r);
    r->precision = defaults->precision, r->fp8 = defaults->fp8, r->fp8_recipe = defaults->fp8_recipe;
    r->cp = defaults->cp, r->sp = defaults->sp;
    r->zero = defaults->zero, r->hybrid = defaults->hybrid;
    r->recompute = defaults->recompute, r->selective = defaults->selective, r->attn_flash = defaults->attn_flash;
    r->recompute_share = defaults->recompute_share;
    r->grad_overlap = defaults->grad_overlap, r->gather_prefetch = defaults->gather_prefetch;
    r->tp_overlap = defaults->tp_overlap, r->tp_bwd_overlap = defaults->tp_bwd_overlap;
    r->seq_per_s = NAN;
}

void meas_run_sharding(meas_run *r, pub_sharding sharding)
{
    static const int zero_of[5] = {
        [SHARD_NONE] = 0, [SHARD_ZERO1] = 1, [SHARD_ZERO2] = 2, [SHARD_ZERO3] = 3, [SHARD_HYBRID] = 2};
    r->zero = zero_of[sharding];
    r->hybrid = sharding == SHARD_HYBRID;
}

void meas_run_recompute(meas_run *r, pub_recompute recompute)
{
    r->recompute = recompute == RECOMPUTE_FULL;
    r->selective = recompute == RECOMPUTE_SELECTIVE;
    r->recompute_share = 0; /* every layer */
}

/* tp and pp against the model's shape and one node. */
static int check_split(const scale_model *s, const meas_run_columns *col, char *why, size_t n)
{
    const model_config *c = &s->cfg;
    long D = (long)s->hw.accelerators * (s->hw.workers > 0 ? s->hw.workers : 1);
    if (s->tp < 1 || c->NH % s->tp != 0)
        return snprintf(why, n, "column '%s': tp %d does not divide %s's %d heads", col->tp, s->tp, c->name, c->NH),
               CB_EUSAGE;
    if (!op_tp_splits(c, s->tp))
        return snprintf(why, n, "column '%s': tp %d does not split %s's %d key/value heads or its MLP width %d",
                        col->tp, s->tp, c->name, model_kv_heads(c), model_ffn(c)),
               CB_EUSAGE;
    if (s->tp > D)
        return snprintf(why, n,
                        "column '%s': tp %d exceeds the %ld ranks of one %s (tensor parallelism stays inside a node)",
                        col->tp, s->tp, D, s->hw.instance),
               CB_EUSAGE;
    if (s->pp > c->L)
        return snprintf(why, n, "column '%s': pp %d exceeds %s's %d layers", col->pp, s->pp, c->name, c->L),
               CB_EUSAGE;
    return 0;
}

int meas_run_check(const meas_run *r, const scale_model *s, const meas_run_columns *col, const char *precision,
                   char *why, size_t n)
{
    int rc = check_split(s, col, why, n);
    if (rc != 0) return rc;
    char lay[512];
    scale_layout_issue li = scale_layout_describe(s, r->nodes, lay, sizeof lay);
    if (li != SCALE_LAYOUT_OK)
        return snprintf(why, n, "column '%s': %s",
                        li == SCALE_LAYOUT_BATCH   ? (r->micro_batch > 0 ? col->micro_batch : col->global_batch)
                        : li == SCALE_LAYOUT_RANKS ? col->ranks
                                                   : col->nodes,
                        lay),
               CB_EUSAGE;
    const int fp16 = strcmp(precision, PRECISION_NAME_FP16_MIXED) == 0;
    if (!(scale_dense_tflops(s) > 0))
        return snprintf(why, n, "column '%s': %s has no dense %s peak to run %s against", col->peak, s->hw.instance,
                        fp16 ? "FP16" : precision_info_of(s->precision)->peak_name,
                        *precision ? precision : precision_info_of(s->precision)->name),
               CB_EUSAGE;
    return 0;
}

void meas_run_model(const meas_run *r, const scale_model *defaults, double latency_us, scale_model *s)
{
    *s = *defaults;
    s->cfg = r->cfg, s->hw = r->hw;
    s->precision = r->precision, s->fp8 = r->fp8, s->fp8_recipe = r->fp8_recipe;
    s->tp = r->tp, s->pp = r->pp, s->interleave = r->vp > 1 ? r->vp : 1, s->cp = r->cp, s->sp = r->sp;
    s->pp_uneven = r->pp_uneven, s->pp_first_layers = r->pp_first_layers, s->pp_last_layers = r->pp_last_layers;
    s->seq = r->seq, s->micro_batch = r->micro_batch > 0 ? r->micro_batch : 1;
    s->global_batch = r->global_batch, s->batch_per_replica = 0;
    s->zero = r->zero, s->hybrid = r->hybrid;
    s->recompute = r->recompute, s->selective = r->selective, s->attn_flash = r->attn_flash;
    s->recompute_share = r->recompute_share;
    s->grad_overlap = r->grad_overlap, s->gather_prefetch = r->gather_prefetch, s->tp_overlap = r->tp_overlap;
    s->tp_bwd_overlap = r->tp_bwd_overlap;
    s->latency_s = latency_us >= 0                  ? latency_us * 1e-6
                   : isfinite(r->hw.net_latency_us) ? r->hw.net_latency_us * 1e-6
                                                    : STEP_NET_LATENCY_US * 1e-6;
}

void meas_run_point(const meas_run *r, const scale_model *defaults, double latency_us, calib_fit *fc)
{
    meas_run_model(r, defaults, latency_us, &fc->cal);
    fc->nodes = r->nodes, fc->seq_per_s = r->seq_per_s;
}
