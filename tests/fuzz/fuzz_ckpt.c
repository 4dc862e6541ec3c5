/* fuzz_ckpt.c: libFuzzer harness of the checks --resume makes of a checkpoint (model/ckpt_meta.c).
 *
 * Each input (fuzz_ckpt.h: a length-prefixed model.safetensors, then optimizer.safetensors) is
 * split into two scratch files, opened with st_open() and passed through the resume path's
 * validation for the run of fuzz_ckpt.h: ckpt_meta_check_weights() on the weights' metadata (the
 * model's configuration compared key by key, the step against 'latest'), then
 * ckpt_meta_check_optimizer() on the optimizer's (configuration, parts, batch shape and seed,
 * adam_t), then every exp_avg/ and exp_avg_sq/ tensor of at most MAX_ELEMS elements read with
 * ckpt_meta_read_tensor() as floats and as bf16 values (the moment checks). The optimizer file is
 * checked even when the weights' metadata was refused (against the position the seeds record),
 * and its moments are read even when its metadata was refused, so that each check is reached.
 * Rejected inputs print one "error:" line each, so run with -close_fd_mask=2.
 * Besides the sanitizers, the harness aborts when a check accepts what it promises to refuse:
 * another number of layers, a position that is not the latest step's, parts of two steps or runs, another batch shape
 * or seed, an adam_t that is not the step, a non-finite moment or a negative second moment.
 *
 *   make fuzz / make fuzz-explore    every harness (see Makefile)
 *   build-fuzz/fuzz_ckpt -close_fd_mask=2 -max_len=8192 -dict=tests/fuzz/ckpt.dict DIR
 *   build-fuzz/fuzz_ckpt FILE        replay one input (a crash reproducer), errors shown
 *
 * Seeds: tests/fuzz/corpus/ckpt/ (written by tests/fuzz/gen_corpus.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_ckpt.h"
#include "fuzz_io.h"

#define MAX_ELEMS (1u << 20) /* larger tensors are not read (the 8 KiB inputs cannot hold them) */

static int model_file = -1, opt_file = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init(*argc, *argv);
    model_file = fuzz_tmp_new("model");
    opt_file = fuzz_tmp_new("optimizer");
    return 0;
}

/* Reads a moment tensor both ways; what a read accepts is finite, and a second moment's >= 0. */
static void read_moment(const st_file *f, const st_tensor *t)
{
    uint64_t count = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) return;
        if (t->shape[i] && count > MAX_ELEMS / (uint64_t)t->shape[i]) return;
        count *= (uint64_t)t->shape[i];
    }
    if (count > MAX_ELEMS) return;
    const int second = strncmp(t->name, CKPT_EXP_AVG_SQ, strlen(CKPT_EXP_AVG_SQ)) == 0;
    float *x = malloc(count ? count * sizeof *x : 1);
    if (!x) abort();
    if (ckpt_meta_read_tensor(f, t->name, x, t->shape, t->ndim, 0) == 0)
        for (uint64_t i = 0; i < count; i++)
            if (!isfinite(x[i]) || (second && x[i] < 0))
                fuzz_fail("ckpt_meta_read_tensor accepted '%s' of %s with element %llu = %g", t->name, f->path,
                          (unsigned long long)i, x[i]);
    uint16_t *h = (uint16_t *)x;
    if (ckpt_meta_read_tensor(f, t->name, h, t->shape, t->ndim, 1) == 0)
        for (uint64_t i = 0; i < count; i++)
            if ((h[i] & 0x7f80u) == 0x7f80u || (second && (h[i] & 0x8000u) && (h[i] & 0x7fffu)))
                fuzz_fail("ckpt_meta_read_tensor (bf16) accepted '%s' of %s with element %llu = 0x%04x", t->name,
                          f->path, (unsigned long long)i, h[i]);
    free(x);
}

static void check_optimizer(const st_file *f, const model_config *c, const ckpt_state *w)
{
    const ckpt_state want = fuzz_ckpt_state();
    ckpt_state got;
    int adam_t = -1;
    if (ckpt_meta_check_optimizer(f, c, "fuzz", w, &want, &got, &adam_t) == 0) {
        if (got.step != w->step || got.run_id != w->run_id)
            fuzz_fail("ckpt_meta_check_optimizer accepted step %ld of run %llx after the weights' step %ld of run %llx",
                      got.step, (unsigned long long)got.run_id, w->step, (unsigned long long)w->run_id);
        if (got.B != want.B || got.T != want.T || got.accum != want.accum || got.seed != want.seed)
            fuzz_fail("ckpt_meta_check_optimizer accepted batch %d x %d x %d, seed %llu", got.B, got.T, got.accum,
                      got.seed);
        if ((long)adam_t != got.step)
            fuzz_fail("ckpt_meta_check_optimizer accepted adam_t %d at step %ld", adam_t, got.step);
    }
    for (int i = 0; i < f->n; i++)
        if (strncmp(f->t[i].name, CKPT_EXP_AVG, strlen(CKPT_EXP_AVG)) == 0 ||
            strncmp(f->t[i].name, CKPT_EXP_AVG_SQ, strlen(CKPT_EXP_AVG_SQ)) == 0)
            read_moment(f, &f->t[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    uint32_t len = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
    size_t model_bytes = len < size - 4 ? len : size - 4;
    fuzz_tmp_write(model_file, data + 4, model_bytes);
    fuzz_tmp_write(opt_file, data + 4 + model_bytes, size - 4 - model_bytes);
    const model_config c = fuzz_ckpt_config();
    ckpt_state w = fuzz_ckpt_state();
    st_file f;
    if (st_open(&f, fuzz_tmp_path(model_file)) == 0) {
        ckpt_state got = {0};
        if (ckpt_meta_check_weights(&f, &c, "fuzz", FUZZ_CKPT_LATEST, &got) == 0) {
            if (got.step != FUZZ_CKPT_LATEST)
                fuzz_fail("ckpt_meta_check_weights accepted step %ld when 'latest' names %ld", got.step,
                          FUZZ_CKPT_LATEST);
            const char *layers = st_meta(&f, "layers");
            if (layers && strcmp(layers, "2") != 0)
                fuzz_fail("ckpt_meta_check_weights accepted layers '%s' for 2", layers);
            w = got;
        }
        st_close(&f);
    }
    if (st_open(&f, fuzz_tmp_path(opt_file)) == 0) {
        check_optimizer(&f, &c, &w);
        st_close(&f);
    }
    fuzz_input_done();
    return 0;
}
