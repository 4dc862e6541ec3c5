/* rope_bench.h: the three rotary variants (reference, zero_freq, fused), forward and
 * backward, on a preset's shapes; checks they agree on every run, then times them. */
#ifndef CB_ROPE_BENCH_H
#define CB_ROPE_BENCH_H

#include "../common/record.h"
#include "../common/presets.h"
#include "runner.h"

enum { RB_MODEL, RB_VARIANT, RB_DIR, RB_CACHE, RB_TOKENS, RB_HEADS, RB_HS, RB_R, RB_NS_MED, RB_NS_MIN, RB_NS_MAX, RB_CV,
       RB_BYTES, RB_GBPS, RB_PCT_BW, RB_SPEEDUP, RB_NCOLS };
extern const rec_col rb_cols[RB_NCOLS];

/* Bytes of the buffers one model's run needs. */
double rope_bench_bytes(const model_config *cfg, int tokens);
/* One model at `tokens` tokens (B = tokens / T). copy_gbps for pct_of_copy_bw. With flush_bytes > 0
 * every timed call starts from a cold cache: a buffer that large is read (untimed) before it. */
int rope_bench_run(const model_config *cfg, int tokens, int T, const runner_opts *ro, double copy_gbps,
                   double flush_bytes, record *rec);

#endif
