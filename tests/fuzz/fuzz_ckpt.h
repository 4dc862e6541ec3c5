/* fuzz_ckpt.h: the run the fuzz_ckpt harness checks its checkpoints against, shared with
 * gen_corpus.c, which writes the seeds for it: the tiny model of the checkpoint tests (pythia-14m
 * with 2 layers and a 512-token vocabulary), resumed from step 3 with micro-batch 1, seq 64 and
 * seed 1234.
 *
 * An input is one checkpoint step: u32 little-endian length of model.safetensors, its bytes, then
 * optimizer.safetensors's bytes (the rest). */
#ifndef CB_FUZZ_CKPT_H
#define CB_FUZZ_CKPT_H

#include "../../model/ckpt_meta.h"

#define FUZZ_CKPT_LATEST 3L /* the step 'latest' names */

static inline model_config fuzz_ckpt_config(void)
{
    return (model_config){.name = "pythia-14m-custom", .family = "pythia", .L = 2, .C = 128, .NH = 4, .HS = 32,
                          .V = 512, .max_T = 2048, .rotary_pct = 0.25, .rotary_base = 10000, .parallel_residual = 1,
                          .pos = POS_ROTARY};
}

/* The run's position and shape (expect of ckpt_meta_check_optimizer) and the checkpoint's. */
static inline ckpt_state fuzz_ckpt_state(void)
{
    return (ckpt_state){FUZZ_CKPT_LATEST, 1234, 1, 64, 1, 0x5eed0c057be4c4ULL, 0.9f, 0.95f};
}

#endif
