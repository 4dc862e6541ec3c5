/* stepconfig.c: the configuration's derived sizes (see stepconfig.h). */
#include "stepconfig.h"

/* Context-parallel degree (0 in a model made before the field: 1). */
static long cp_of(const scale_model *s) { return s->cp > 1 ? s->cp : 1; }
double scale_recompute_share(const scale_model *s)
{
    if (!s->recompute) return 0;
    return s->recompute_share > 0 && s->recompute_share < 1 ? s->recompute_share : 1.0;
}

long scale_replica_ranks(const scale_model *s) { return (long)s->tp * s->pp * cp_of(s); }

double scale_dense_tflops(const scale_model *s)
{
    return precision_info_of(s->precision)->fp32_peak ? s->hw.fp32_tflops : s->hw.bf16_tflops;
}

double scale_peak_blend(const scale_model *s)
{
    if (!s->fp8 || !(s->hw.fp8_tflops > 0) || !(s->hw.bf16_tflops > 0)) return 1.0;
    /* the share its step profile counted (an fp8 run is only built by pub_scale_model, which fills it) */
    double x = s->prof.valid ? s->prof.fp8_flops_share : 0.0, r = s->hw.fp8_tflops / s->hw.bf16_tflops;
    return 1.0 / ((1.0 - x) + x / r);
}

double scale_peak_per_instance(const scale_model *s)
{
    return scale_dense_tflops(s) * 1e12 * s->hw.accelerators * scale_peak_blend(s);
}
