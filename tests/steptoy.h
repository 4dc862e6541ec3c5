/* steptoy.h: the step model's toy of the step-model tests (tests/util.c). */
#ifndef CB_TESTS_STEPTOY_H
#define CB_TESTS_STEPTOY_H

#include "../report/predict/stepmodel.h"

/* A made-up device: 100 TFLOP/s BF16 and 1000 GB/s per accelerator, 8 per node, a 100 GB/s link,
 * gemm_eff 0.5, attn_eff 0.25, mem_eff 0.5, no launch cost; a 2-layer toy model (its step not
 * filled: the tests change it first). */
void test_toy_step(scale_model *s);
/* The op of that name and phase in ops[0..n) (NULL: none). */
const op_entry *test_find_op(const op_entry *ops, int n, const char *name, const char *phase);

#endif
