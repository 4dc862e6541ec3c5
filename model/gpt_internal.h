/* gpt_internal.h: what model/gpt.c (forward, backward) and model/gpt_state.c (parameters,
 * gradients, optimizer state) share; not for other modules. */
#ifndef CB_GPT_INTERNAL_H
#define CB_GPT_INTERNAL_H

#include "../common/timer.h"
#include "gpt.h"

/* A void kernel call, timed under `kind` in the model's profile. */
#define TIMED(m, kind, stmt)                           \
    do {                                               \
        double t0_ = timer_now_s();                    \
        stmt;                                          \
        (m)->prof.kind_s[kind] += timer_now_s() - t0_; \
    } while (0)

/* The parameter, gradient and AdamW slabs of m (sizes and offsets set) for its precision, with
 * the pointer tables p, g and ph. Returns 0 or CB_EFAIL. */
int gpt_state_alloc(gpt_model *m);
void gpt_state_free(gpt_model *m);
/* Floats of the fp32 parameter slab: every tensor (fp32, bf16-mixed), or the small ones only
 * (full bf16). */
size_t gpt_state_fp32_floats(const size_t *sizes, train_precision prec);

#endif
