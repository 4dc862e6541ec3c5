/* attncurves.h: data/attention.csv, the attention kernels' measured curves per device: one row per
 * (device, kernel), attn_eff(s) = attn_eff_max s / (s + attn_s_half) of the device's dense 16-bit
 * peak, causal, forward + backward, s the sequence length the kernel sees. Which kernel a run uses
 * is the framework's (report/predict/attnpick.h); a device with no row for it keeps its own curve
 * (data/devices.csv's attn_eff_max, attn_s_half, else attn_eff).
 *
 * Columns (every one required; report/formats/README.md, "data/attention.csv"):
 *   device          a device row of data/devices.csv (not a variant: a variant takes its family's rows)
 *   kernel          one of attn_kernel_names: triton (flash_attn_triton, the Triton flash kernel),
 *                   flash1, flash2, flash3 (the flash-attn package's generations), cudnn (cuDNN fused
 *                   attention: Transformer Engine's FusedAttention, PyTorch SDPA's cuDNN backend)
 *   sm              the device's CUDA compute capability (9.0: Hopper; 0: not an NVIDIA GPU): what
 *                   Transformer Engine's backend choice reads; the same on every row of a device
 *   attn_eff_max, attn_s_half   the curve
 *   fit_err_pct     the largest relative miss of the curve on the points (tests/test_devicefigs.c checks)
 *   peak_tflops     the dense peak the points are divided by (the data sheet's, as data/devices.csv)
 *   points          the measured fwd+bwd TFLOP/s it is fitted to, "s:tflops" separated by blanks
 *   basis           measured, estimated (measured parts, one part derived: the source says which), or
 *                   assumption (another device's curve: the source says whose)
 *   source          where each number is read (repository, path, commit, figure) and the arithmetic */
#ifndef CB_ATTNCURVES_H
#define CB_ATTNCURVES_H

#include "devices.h"

#define ATTN_POINTS_MAX 12

typedef struct {
    char device[48], kernel[16], basis[16];
    double sm, e_max, s_half, fit_err_pct, peak_tflops;
    int npoints;
    double s[ATTN_POINTS_MAX], tflops[ATTN_POINTS_MAX];
    char source[1024];
    int line;
} attn_curve;

typedef struct attn_table_s {
    char path[4096];
    attn_curve *rows;
    int n;
} attn_table;

/* The kernel vocabulary, for messages: "triton, flash1, flash2, flash3, cudnn". */
extern const char *const attn_kernel_names[];
int attn_kernel_known(const char *kernel);

/* Loads path; every device must be a device row of dt. Every cell checked; one error
 * "file:line: column 'x': ..." and CB_EFAIL on bad input. */
int attn_table_load(attn_table *t, const char *path, const dev_table *dt);
void attn_table_free(attn_table *t);
/* The curve of `kernel` on device d (a variant: its family's), NULL when there is none. */
const attn_curve *attn_table_find(const attn_table *t, const dev_row *d, const char *kernel);
/* The compute capability of device d as the table gives it; 0 when it has no row. */
double attn_table_sm(const attn_table *t, const dev_row *d);

#endif
