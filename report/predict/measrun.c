/* measrun.c: a measured run as the step model (see measrun.h). */
#include "measrun.h"

#include <math.h>
#include <string.h>

#include "stepmodel.h"

void meas_run_init(meas_run *r, const scale_model *defaults)
{
    memset(r, 0, sizeof *r);
    r->precision = defaults->precision, r->fp8 = defaults->fp8;
    r->cp = defaults->cp, r->sp = defaults->sp;
    r->zero = defaults->zero, r->hybrid = defaults->hybrid;
    r->recompute = defaults->recompute, r->selective = defaults->selective, r->attn_flash = defaults->attn_flash;
    r->grad_overlap = defaults->grad_overlap, r->gather_prefetch = defaults->gather_prefetch;
    r->tp_overlap = defaults->tp_overlap;
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
}

void meas_run_model(const meas_run *r, const scale_model *defaults, double latency_us, scale_model *s)
{
    *s = *defaults;
    s->cfg = r->cfg, s->hw = r->hw;
    s->precision = r->precision, s->fp8 = r->fp8;
    s->tp = r->tp, s->pp = r->pp, s->interleave = r->vp > 1 ? r->vp : 1, s->cp = r->cp, s->sp = r->sp;
    s->seq = r->seq, s->micro_batch = r->micro_batch > 0 ? r->micro_batch : 1;
    s->global_batch = r->global_batch, s->batch_per_replica = 0;
    s->zero = r->zero, s->hybrid = r->hybrid;
    s->recompute = r->recompute, s->selective = r->selective, s->attn_flash = r->attn_flash;
    s->grad_overlap = r->grad_overlap, s->gather_prefetch = r->gather_prefetch, s->tp_overlap = r->tp_overlap;
    s->latency_s = latency_us >= 0                  ? latency_us * 1e-6
                   : isfinite(r->hw.net_latency_us) ? r->hw.net_latency_us * 1e-6
                                                    : STEP_NET_LATENCY_US * 1e-6;
}

void meas_run_point(const meas_run *r, const scale_model *defaults, double latency_us, calib_fit *fc)
{
    meas_run_model(r, defaults, latency_us, &fc->cal);
    fc->nodes = r->nodes, fc->seq_per_s = r->seq_per_s;
}
