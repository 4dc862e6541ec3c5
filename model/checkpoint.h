/* checkpoint.h: model weights as safetensors with Hugging Face GPT-NeoX tensor names and shapes
 * (so Pythia checkpoints load with --init, and ours load in Hugging Face), plus the optimizer
 * state and loop position for --resume.
 *
 * DIR/step-NNNNNNNN/model.safetensors      weights, F32 (BF16 in full bf16); metadata: the model's
 *                                          configuration, precision, step, run id (ckpt_meta.h)
 * DIR/step-NNNNNNNN/optimizer.safetensors  exp_avg/<name>, exp_avg_sq/<name> (F32, or BF16 in full
 *                                          bf16: the state exactly as held); metadata: the same,
 *                                          AdamW step, seed, batch shape
 * DIR/latest                               the name of the newest complete step directory
 * A step directory is written under a temporary name (step-N.tmp.PID) and renamed when complete,
 * and `latest` is replaced atomically after it: a kill at any moment leaves the previous
 * checkpoint usable. A save holds an exclusive flock on DIR/save.lock.PID while any of its
 * temporaries exist. What a killed save leaves behind (step-N.tmp.PID and step-N.old.PID
 * directories and latest.tmp.PID, one "note:" line on stderr each; save.lock.PID) is removed by the
 * next save into DIR and by ckpt_clean, when they can take that lock (its writer is gone, whatever
 * became of its PID); a live save's are left alone. Only the exact names costbench writes are
 * deleted: in a step directory model.safetensors, optimizer.safetensors and their NAME.tmp.PID
 * temporaries; a step directory holding anything else stays whole (a warning says so once).
 * Resuming checks that the checkpoint was written for this run's model, that the weights, the
 * optimizer state and `latest` name the same step of the same run (the run id is drawn when a run
 * starts and kept across resumes), and that its AdamW state can be run (ckpt_meta.h). */
#ifndef CB_CHECKPOINT_H
#define CB_CHECKPOINT_H

#include <stdint.h>

#include "ckpt_meta.h"
#include "gpt.h"

/* Writes the weights of m and the given AdamW moments (m->w.nparams elements each: the full ones,
 * whether or not m holds a ZeRO shard; floats, or bf16 values in a full-bf16 model) as step
 * st->step of DIR. Moments beyond AdamW's bound for st's betas (ckpt_moment_bound: the last
 * update moved a weight by more than the learning rate allows) are refused before anything is
 * written, naming the tensor and the element. Returns 0 or CB_EFAIL. */
int ckpt_save(const gpt_model *m, const void *exp_avg, const void *exp_avg_sq, const char *dir, const ckpt_state *st);
/* ckpt_save with the moments m holds (all of them: no ZeRO shard). */
int ckpt_save_own(const gpt_model *m, const char *dir, const ckpt_state *st);
/* Removes what killed saves left in DIR (see above); a missing DIR is fine. */
void ckpt_clean(const char *dir);
/* Weights only (fine-tuning from a Hugging Face or costbench file; F32, F16 or BF16 tensors,
 * rounded to nearest where the model holds bf16); non-finite values refused. */
int ckpt_load_weights(gpt_model *m, const char *path);
/* Weights, optimizer state and loop position from DIR/latest; checks, each file's before its
 * tensors are read, that m's configuration and the run's shape (expect: B, T, accum, seed) are the
 * checkpoint's (else CB_EUSAGE), that its parts belong together and that its AdamW step count and
 * moments are possible (second moments >= 0; first moments within the bound of expect's betas,
 * ckpt_moment_bound; else CB_EFAIL); a change of precision is said in one warning. */
int ckpt_resume(gpt_model *m, const char *dir, const ckpt_state *expect, ckpt_state *got);
/* A fresh run id (nonzero). */
uint64_t ckpt_new_run_id(void);

#endif
