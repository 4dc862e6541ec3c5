/* step.h: the training-step benchmark behind `costbench train`: the loop (gradient accumulation,
 * clipping, AdamW with warm-up and cosine decay, checkpoints), per-step measurements, the
 * summary (median seq/s and tokens/s after discarded warm-up steps, MFU and HFU against a stated
 * peak, peak RSS next to the estimate) and the breakdown of a step's time by operation kind next
 * to what the microbenchmarks predict for the same shapes. */
#ifndef CB_STEP_H
#define CB_STEP_H

#include "../common/machine.h"
#include "../common/record.h"
#include "../kernels/adamw.h"
#include "../common/presets.h"
#include "runner.h"

typedef struct {
    model_config cfg;
    int B, T, accum;
    long steps, lr_warmup, discard;
    double lr, min_lr;
    adamw_params hp; /* lr is set per step */
    float clip;
    unsigned long long seed;
    int recompute;
    const char *data, *save_dir, *resume_dir, *init_path;
    long save_every;
    double peak_gflops;    /* fp32 FMA peak for MFU */
    const char *peak_note; /* where the peak came from */
    int predict;           /* measure the microbenchmarks for the breakdown's prediction */
    double budget_s;       /* for the prediction's matmul measurements */
    int quiet;             /* no per-step lines on stdout */
    double estimate_bytes; /* printed memory estimate, for the RSS comparison */
    int rank, ranks;       /* data parallel: this process's rank of `ranks` (bench/comm.h) */
    double bucket_bytes;   /* gradient all-reduce bucket */
    int zero;              /* 1: ZeRO-1, AdamW moments sharded over the ranks */
    int overlap;           /* all-reduce each gradient slice during the last backward */
} step_opts;

enum { SL_STEP, SL_LOSS, SL_GNORM, SL_LR, SL_MS, SL_TOKS, SL_SEQS, SL_MFU, SL_HFU, SL_COMM, SL_EXPOSED, SL_NCOLS };
extern const rec_col step_log_cols[SL_NCOLS];
enum { SS_MODEL, SS_TP, SS_PP, SS_INSTANCES, SS_INSTANCE, SS_SEQ, SS_GBATCH, SS_MBATCH, SS_STEPS, SS_SEQS, SS_SEQS_MIN,
       SS_SEQS_MAX, SS_TOKS, SS_STEP_MS, SS_MFU, SS_HFU, SS_PEAK, SS_RECOMPUTE, SS_RSS, SS_EST, SS_SOURCE, SS_RANKS, SS_COMPUTE_MS, SS_COMM_MS, SS_EXPOSED_MS, SS_NCOLS };
extern const rec_col step_summary_cols[SS_NCOLS];
enum { SB_KIND, SB_MS, SB_PCT, SB_PRED, SB_GAP, SB_HOW, SB_NCOLS };
extern const rec_col step_breakdown_cols[SB_NCOLS];

/* Runs the loop. With ranks > 1 (under mpirun) every rank runs its share of each step's
 * micro-batches (rank r takes global micro-batches r*A/N .. (r+1)*A/N - 1, so that the data are the
 * same for any rank count), the gradients are summed over ranks in buckets, and every rank applies
 * the same AdamW step; only rank 0 prints and saves. The log, summary and breakdown records must be initialised with the columns
 * above. Returns 0, CB_EFAIL or CB_EUSAGE. */
int step_run(const step_opts *o, machine_info *mi, record *log, record *summary, record *breakdown);
/* Learning rate at 0-based step s: linear warm-up over lr_warmup steps, then cosine decay to
 * min_lr at the last step. */
double step_lr(const step_opts *o, long s);

#endif
