/* attnpick.h: which attention kernel a run uses, and its curve on the run's device.
 *
 * The kernel: what the run states (a published row's `attention` column: cudnn; flash = the
 * framework era's flash kernel, step_framework.flash_kernel; materialised = no tiled kernel), else the
 * era's default by the device's compute capability (attn_kernel before 9.0, attn_kernel_sm90 from
 * it: Transformer Engine and PyTorch SDPA prefer cuDNN fused attention on Hopper and later;
 * report/predict/frameworks.c cites each). Its curve: the device's row for that kernel in
 * data/attention.csv (report/formats/attncurves.h); a device with no row for it, or an era that
 * names none (""), keeps the device's own curve (data/devices.csv), and the note says so.
 * Materialised attention is not a curve: the step model times its two products at the GEMM figure
 * and its scores' traffic as memory (report/predict/stepmodel.h). */
#ifndef CB_ATTNPICK_H
#define CB_ATTNPICK_H

#include <stddef.h>

#include "../formats/devices.h"
#include "frameworks.h"

enum { ATTN_STATED_NONE = -1 }; /* else report/formats/published.h's pub_attention */

/* What an --attention flag states (NULL: nothing, the framework's kernel; else flash or full, as
 * `flash` says): ATTN_STATED_NONE or report/formats/published.h's pub_attention. */
int step_attn_stated(const char *flag, int flash);
/* The kernel name ("" for materialised attention or the device's own curve). */
const char *step_attn_kernel(const step_framework *fw, int stated, double sm);
/* Sets hw's attention curve to the kernel's on its device (hw->accelerator, a key of dt) and
 * hw->attn_kernel to its name; note (n bytes) gets "" or one line naming a kernel the device has no
 * curve for (its own kept). */
void step_attn_apply(const dev_table *dt, const step_framework *fw, int stated, hw_row *hw, char *note, size_t n);
/* "attention kernel on h100-sxm5-80gb: cudnn, 0.522 s / (s + 675) (data/attention.csv)" into buf for a
 * hw that step_attn_apply gave a kernel's curve, else `note` (its line: "" or the kernel it lacks). */
void step_attn_describe(const hw_row *hw, const char *note, char *buf, size_t n);

#endif
