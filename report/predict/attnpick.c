/* attnpick.c: the attention kernel of a run and its curve (see attnpick.h). */
#include "attnpick.h"

#include <stdio.h>
#include <string.h>

#include "../formats/attncurves.h"
#include "../formats/published.h"

const char *step_attn_kernel(const step_framework *fw, int stated, double sm)
{
    if (stated == PUB_ATTN_MATERIALISED) return "";
    if (stated == PUB_ATTN_CUDNN) return "cudnn";
    if (stated == PUB_ATTN_FLASH) return fw->flash_kernel;
    if (!fw->tiled_attention) return "";
    return sm >= 9.0 ? fw->attn_kernel_sm90 : fw->attn_kernel;
}

int step_attn_stated(const char *flag, int flash)
{
    return !flag ? ATTN_STATED_NONE : flash ? PUB_ATTN_FLASH : PUB_ATTN_MATERIALISED;
}

void step_attn_apply(const dev_table *dt, const step_framework *fw, int stated, hw_row *hw, char *note, size_t n)
{
    if (n) note[0] = '\0';
    hw->attn_kernel[0] = '\0';
    const dev_row *d = dt ? devices_find(dt, hw->accelerator) : NULL;
    if (!d || !dt->kernels) return; /* this machine, or no kernel table: the device's own curve */
    const char *k = step_attn_kernel(fw, stated, attn_table_sm(dt->kernels, d));
    if (!*k) return;
    const attn_curve *c = attn_table_find(dt->kernels, d, k);
    if (!c) {
        snprintf(note, n, "attention: no %s curve for %s in %s: the device's own", k, d->device, dt->kernels->path);
        return;
    }
    hw->attn_eff_max = c->e_max, hw->attn_s_half = c->s_half;
    snprintf(hw->attn_kernel, sizeof hw->attn_kernel, "%s", k);
}

void step_attn_describe(const hw_row *hw, const char *note, char *buf, size_t n)
{
    if (!hw->attn_kernel[0]) snprintf(buf, n, "%s", note);
    else
        snprintf(buf, n, "attention kernel on %s: %s, %.3g s / (s + %g) (data/attention.csv)",
                 hw->accelerator, hw->attn_kernel, hw->attn_eff_max, hw->attn_s_half);
}
