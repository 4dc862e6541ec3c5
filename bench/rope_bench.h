/* rope_bench.h: the three rotary variants (reference, zero_freq, fused), forward and
 * backward, on a preset's shapes, in fp32 or bf16; checks they agree on every run, then times
 * them. */
#ifndef CB_ROPE_BENCH_H
#define CB_ROPE_BENCH_H

#include "../common/record.h"
#include "../common/presets.h"
#include "../common/schema.h"
#include "runner.h"


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
