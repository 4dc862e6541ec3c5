/* rope_bench.h: the three rotary variants (reference, zero_freq, fused), forward and
 * backward, on a preset's shapes, in fp32 or bf16; checks they agree on every run, then times
 * them. */
#ifndef CB_ROPE_BENCH_H
#define CB_ROPE_BENCH_H

#include "../common/record.h"
#include "../common/presets.h"
#include "runner.h"

enum { RB_MODEL, RB_VARIANT, RB_DIR, RB_CACHE, RB_DTYPE, RB_TOKENS, RB_HEADS, RB_HS, RB_R, RB_NS_MED, RB_NS_MIN,
       RB_NS_MAX, RB_CV, RB_BYTES, RB_GBPS, RB_PCT_BW, RB_SPEEDUP, RB_NCOLS };
extern const rec_col rb_cols[RB_NCOLS];

/* The element type of q and k (and their gradients): fp32, or bf16 with fp32 arithmetic. */
typedef enum { RB_FP32, RB_BF16 } rb_dtype;
/* "fp32" or "bf16" (the dtype column and the --dtype flag). */
const char *rope_bench_dtype_name(rb_dtype dt);
/* RB_FP32 or RB_BF16 for "fp32" / "bf16"; -1 for anything else. */
int rope_bench_dtype_parse(const char *name);

/* Bytes of the buffers one model's run needs. */
double rope_bench_bytes(const model_config *cfg, int tokens, rb_dtype dt);
/* One model at `tokens` tokens (B = tokens / T) in dtype dt. copy_gbps for pct_of_copy_bw. With
 * flush_bytes > 0 every timed call starts from a cold cache: a buffer that large is read
 * (untimed) before it. */
int rope_bench_run(const model_config *cfg, int tokens, int T, rb_dtype dt, const runner_opts *ro, double copy_gbps,
                   double flush_bytes, record *rec);

#endif
