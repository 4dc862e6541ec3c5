/* dp.h: data-parallel gradient synchronisation for the training loop (model/train.h's
 * train_sync), over the communication module (bench/comm.h):
 *   DP_BUCKETS  after the last backward, the gradients are all-reduced in buckets of
 *               `bucket_bytes`, all in flight at once (--no-overlap)
 *   DP_OVERLAP  during the last local micro-batch's backward, each tensor slice's all-reduce starts
 *               as soon as its gradient is final (the output layer first, then layer L-1 .. 0, the
 *               embeddings last), with progress given at every layer; the step waits for the rest
 *   DP_ZERO1    ZeRO-1: rank r keeps the AdamW moments of its block of the parameters only; the
 *               gradients are reduce-scattered, each rank updates its block, the parameters are
 *               all-gathered; checkpoints gather the moments to rank 0, so a checkpoint is the same
 *               file whatever the rank count
 * It measures the time spent communicating (comm) and the part of it the step waits for
 * (exposed), per step. */
#ifndef CB_DP_H
#define CB_DP_H

#include "../model/train.h"

typedef enum { DP_BUCKETS, DP_OVERLAP, DP_ZERO1 } dp_mode;

typedef struct dp_sync_s dp_sync;

/* Sets up `mode` for model m on comm_size() ranks (ZeRO-1 shards m's moments here) and fills
 * *hooks. Returns NULL (error printed) on failure. One rank: no hooks, nothing to measure. */
dp_sync *dp_sync_new(dp_mode mode, double bucket_bytes, gpt_model *m, train_sync *hooks);
void dp_sync_free(dp_sync *d);
/* Seconds communicating and seconds the step waited for communication since the last call. */
void dp_sync_take_times(dp_sync *d, double *comm_s, double *exposed_s);
/* One sentence for result notes: the strategy, the ranks, the library. */
void dp_sync_describe(const dp_sync *d, char *buf, size_t n);

#endif
