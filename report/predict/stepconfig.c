/* stepconfig.c: the configuration's derived sizes (see stepconfig.h). */
#include "stepconfig.h"

/* Context-parallel degree (0 in a model made before the field: 1). */
static long cp_of(const scale_model *s) { return s->cp > 1 ? s->cp : 1; }
long scale_replica_ranks(const scale_model *s) { return (long)s->tp * s->pp * cp_of(s); }

double scale_dense_tflops(const scale_model *s)
{
    return precision_info_of(s->precision)->fp32_peak ? s->hw.fp32_tflops : s->hw.bf16_tflops;
}

double scale_peak_per_instance(const scale_model *s) { return scale_dense_tflops(s) * 1e12 * s->hw.accelerators; }
