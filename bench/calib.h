/* calib.h: the training benchmark's calibration, the one place that measures what the
 * prediction and MFU need, before the model is allocated (so that its buffers do not add to the
 * run's peak memory): the peak of the run's precision (the fp32 FMA peak, or the bf16 matrix peak:
 * AMX tiles where the CPU has them, else AVX512_BF16; on every rank at once: the job's peak), and, for the
 * breakdown's prediction, every matmul shape of one micro-step (as `costbench matmul --shapes
 * transformer` times them, its attention products aside), the tiled attention kernel and the
 * fused rotary kernel at the step's shape (as `costbench rope`), and the copy bandwidth at which
 * the memory-bound kernels' bytes are priced. */
#ifndef CB_CALIB_H
#define CB_CALIB_H

#include "../common/presets.h"
#include "../model/gpt.h"

typedef struct {
    const model_config *cfg;
    int B, T, accum;       /* micro-batch, sequence, micro-batches per optimizer step */
    double peak_gflops;    /* > 0: given (--peak-gflops), not measured */
    int predict;           /* measure the microbenchmarks behind the per-kind prediction */
    double budget_s;       /* for the prediction's matmul shapes */
    int threads;           /* OpenMP threads of this process */
    train_precision prec;  /* the peak (fp32 FMA or the bf16 matrix peak) and the microbenchmarks' precision */
} calib_opts;

typedef struct {
    double peak_gflops;    /* MFU's denominator, all ranks */
    char peak_note[320];   /* which peak, measured or given, on what */
    double pred_ms[GPT_KIND_COUNT]; /* per optimizer step; NaN: not predicted */
    char how[GPT_KIND_COUNT][160];  /* where each prediction comes from */
} calib;

/* Returns 0 or CB_EFAIL. Under mpirun every rank must call it (the peak is summed over ranks). */
int calib_measure(const calib_opts *o, calib *c);

#endif
