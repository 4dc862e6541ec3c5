/* fuzz_safetensors.c: libFuzzer harness of the safetensors reader (model/safetensors.c).
 *
 * Each input is written to a scratch file and opened with st_open(); a file that opens is then
 * read back: st_meta() on every metadata key and on a missing one, st_find() on every tensor,
 * and every F32, F16 or BF16 tensor of at most MAX_ELEMS elements is read with st_read_f32()
 * and st_read_bf16() with its own shape (and once with a wrong shape and a missing name, the error paths), then
 * st_close(). Rejected inputs print one "error:" line each, so run with -close_fd_mask=2.
 * Besides the sanitizers, the harness aborts when st_open accepts a tensor whose bytes do not
 * match its shape and dtype exactly, or lie outside the data section: safetensors.h promises
 * that every offset and size is validated against the file.
 *
 *   make fuzz / make fuzz-explore    every harness (see Makefile)
 *   build-fuzz/fuzz_safetensors -close_fd_mask=2 -max_len=16384 \
 *       -dict=tests/fuzz/safetensors.dict DIR                      fuzz with corpus DIR
 *   build-fuzz/fuzz_safetensors FILE   replay one input (a crash reproducer), errors shown
 *
 * Seeds: tests/fuzz/corpus/safetensors/ (written by tests/fuzz/gen_corpus.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../model/safetensors.h"
#include "fuzz_io.h"

#define MAX_ELEMS (16u << 20) /* larger tensors are not read (the 16 KiB inputs cannot hold them) */

static int st_path = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init(*argc, *argv);
    st_path = fuzz_tmp_new("safetensors");
    return 0;
}

static __attribute__((noreturn)) void broken(const st_file *f, const st_tensor *t, const char *what)
{
    fuzz_fail("st_open accepted '%s' but tensor '%s' (%s, %d dims, data_offsets [%llu, %llu]) %s", f->path, t->name,
              t->dtype, t->ndim, (unsigned long long)t->begin, (unsigned long long)t->end, what);
}

static uint64_t dtype_bytes(const char *d)
{
    static const struct { const char *name; uint64_t bytes; } tab[] = {
        {"F64", 8}, {"I64", 8}, {"U64", 8}, {"F32", 4}, {"I32", 4}, {"U32", 4}, {"F16", 2},
        {"BF16", 2}, {"I16", 2}, {"U16", 2}, {"I8", 1}, {"U8", 1}, {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(d, tab[i].name) == 0) return tab[i].bytes;
    return 0;
}

/* The true element count, or 0 with *overflow set when it does not fit 64 bits. A dim above
 * INT64_MAX reads back negative: harmless when another dim is 0, an overflow otherwise. */
static uint64_t elem_count(const st_tensor *t, int *overflow)
{
    uint64_t count = 1;
    *overflow = 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] == 0) return 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0 || __builtin_mul_overflow(count, (uint64_t)t->shape[i], &count)) {
            *overflow = 1;
            return 0;
        }
    }
    return count;
}

/* What st_open promises for a tensor it accepted. Returns the element count. */
static uint64_t check_tensor(const st_file *f, const st_tensor *t)
{
    if (t->ndim < 0 || t->ndim > ST_MAX_DIMS) broken(f, t, "has an impossible number of dims");
    if (t->begin > t->end || t->end > f->data_bytes) broken(f, t, "lies outside the data section");
    uint64_t eb = dtype_bytes(t->dtype), bytes;
    if (eb == 0) broken(f, t, "has an unknown dtype");
    int overflow;
    uint64_t count = elem_count(t, &overflow);
    if (overflow || __builtin_mul_overflow(count, eb, &bytes)) broken(f, t, "has a shape whose size overflows 64 bits");
    if (bytes != t->end - t->begin) broken(f, t, "holds a different number of bytes than its shape needs");
    if (!st_find(f, t->name)) broken(f, t, "is not found by its name");
    return count;
}

static void read_tensor(const st_file *f, const st_tensor *t, uint64_t count)
{
    if (strcmp(t->dtype, "F32") != 0 && strcmp(t->dtype, "F16") != 0 && strcmp(t->dtype, "BF16") != 0) return;
    if (count > MAX_ELEMS) return;
    float *out = malloc(count ? count * sizeof *out : 1);
    if (!out) abort();
    (void)st_read_f32(f, t->name, out, t->shape, t->ndim);
    (void)st_read_bf16(f, t->name, (uint16_t *)out, t->shape, t->ndim);
    /* another shape with no more elements (one more dim of 1, or all dims 0), so that even a
     * duplicate name whose first tensor has that shape cannot write past `out` */
    int64_t wrong[ST_MAX_DIMS] = {0};
    int ndim = t->ndim;
    if (ndim < ST_MAX_DIMS) {
        memcpy(wrong, t->shape, sizeof wrong);
        wrong[ndim++] = 1;
    }
    (void)st_read_f32(f, t->name, out, wrong, ndim);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_tmp_write(st_path, data, size);
    st_file f;
    if (st_open(&f, fuzz_tmp_path(st_path)) == 0) {
        for (int i = 0; i < f.nmeta; i++)
            if (!st_meta(&f, f.meta_keys[i])) fuzz_fail("st_meta does not find metadata key '%s'", f.meta_keys[i]);
        (void)st_meta(&f, "costbench-fuzz: no such key");
        for (int i = 0; i < f.n; i++) read_tensor(&f, &f.t[i], check_tensor(&f, &f.t[i]));
        float x;
        (void)st_read_f32(&f, "costbench-fuzz: no such tensor", &x, NULL, 0);
        st_close(&f);
        st_close(NULL);
    }
    fuzz_input_done();
    return 0;
}
