/* step.h: the training-step benchmark behind `costbench train`: runs the training loop
 * (model/train.h) and measures it as an observer: per-step time, throughput, MFU and HFU, the
 * time each operation kind took (the model's own profile) and the communication of data-parallel
 * runs; then the summary (median seq/s and tokens/s after discarded warm-up steps, MFU and HFU
 * against the stated peak, peak RSS next to the estimate) and the breakdown of a step's time by
 * kind next to what the calibration's microbenchmarks predict (bench/calib.h). Everything it
 * reports goes through the record module. */
#ifndef CB_STEP_H
#define CB_STEP_H

#include "../common/machine.h"
#include "../common/presets.h"
#include "../common/record.h"
#include "../common/schema.h"
#include "../model/train.h"
#include "calib.h"
#include "dp.h"

typedef struct {
    model_config cfg;
    train_opts train;      /* the loop's options (B, T, accum, steps, schedule, data, checkpoints, rank) */
    const char *data_path; /* --data PREFIX (opened by step_run), or NULL */
    int recompute;
    train_precision prec;
    long discard;          /* steps left out of the summary */
    int quiet;             /* no per-step lines on stdout */
    double estimate_bytes; /* printed memory estimate, for the RSS comparison */
    dp_mode dp;            /* gradient synchronisation under mpirun */
    double bucket_bytes;
    const char *log_csv;   /* --csv FILE: the per-step log written as it grows (record_log), or NULL */
} step_opts;

/* The per-step log's columns: step_log_cols (common/schema.h). */
enum { SB_KIND, SB_MS, SB_PCT, SB_PRED, SB_GAP, SB_HOW, SB_NCOLS };
extern const rec_col step_breakdown_cols[SB_NCOLS];

typedef struct {
    record log;       /* one row per step */
    record summary;   /* one row: the throughput format (common/schema.h) */
    record breakdown; /* one row per kind, then the step */
} step_records;

int step_records_init(step_records *r);
void step_records_free(step_records *r);

/* Runs the loop with the calibration `cal` measured beforehand, filling the records (rank 0
 * prints the per-step lines unless quiet). Returns 0, CB_EFAIL or CB_EUSAGE. */
int step_run(const step_opts *o, const calib *cal, const machine_info *mi, step_records *rec);

#endif
