/* checkpoint.h: model weights as safetensors with Hugging Face GPT-NeoX tensor names and shapes
 * (so Pythia checkpoints load with --init, and ours load in Hugging Face), plus the optimizer
 * state and loop position for --resume.
 *
 * DIR/step-NNNNNNNN/model.safetensors      weights, F32
 * DIR/step-NNNNNNNN/optimizer.safetensors  exp_avg/<name>, exp_avg_sq/<name>; metadata: step,
 *                                          AdamW step, seed, batch shape, model shape
 * DIR/latest                               the name of the newest complete step directory
 * A step directory is written under a temporary name and renamed when complete, and `latest`
 * is replaced atomically after it: a kill at any moment leaves the previous checkpoint usable. */
#ifndef CB_CHECKPOINT_H
#define CB_CHECKPOINT_H

#include "gpt.h"

typedef struct {
    long step;              /* steps completed */
    unsigned long long seed;
    int B, T, accum;
} ckpt_state;

int ckpt_save(const gpt_model *m, const char *dir, const ckpt_state *st);
/* Weights only (fine-tuning from a Hugging Face or costbench file). */
int ckpt_load_weights(gpt_model *m, const char *path);
/* Weights, optimizer state and loop position from DIR/latest; checks that the run's shape
 * (expect: B, T, accum, seed) matches the checkpoint's. */
int ckpt_resume(gpt_model *m, const char *dir, const ckpt_state *expect, ckpt_state *got);

#endif
