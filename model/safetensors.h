/* safetensors.h: reading and writing the safetensors format (8-byte little-endian header
 * length, a JSON header mapping tensor names to {dtype, shape, data_offsets}, then the data),
 * so that Hugging Face checkpoints load and ours load in Hugging Face. Reading validates every
 * offset and size against the file and refuses what Python's reader refuses: a key (tensor name,
 * metadata key, tensor field) given twice, tensors sharing bytes or leaving bytes unclaimed, an
 * unknown dtype, a directory or other non-file. F32, F16 and BF16 tensors are read as fp32. */
#ifndef CB_SAFETENSORS_H
#define CB_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 4

typedef struct {
    char *name;
    char dtype[8];
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    uint64_t begin, end; /* byte offsets into the data section */
} st_tensor;

typedef struct {
    char *path;
    unsigned char *data; /* the data section (a private copy of the file's) */
    uint64_t data_bytes;
    st_tensor *t;
    int n;
    char **meta_keys, **meta_vals;
    int nmeta;
} st_file;

int st_open(st_file *f, const char *path);
void st_close(st_file *f);
const st_tensor *st_find(const st_file *f, const char *name);
const char *st_meta(const st_file *f, const char *key);
/* Reads tensor `name` into out (count floats), checking the shape (ndim dims); a NaN or infinity
 * in it is an error naming the file and the tensor. */
int st_read_f32(const st_file *f, const char *name, float *out, const int64_t *shape, int ndim);
/* The same into bf16 values: BF16 tensors exactly, F32 and F16 ones rounded to nearest even. */
int st_read_bf16(const st_file *f, const char *name, uint16_t *out, const int64_t *shape, int ndim);

typedef struct {
    const char *name;
    const void *data; /* fp32, or bf16 when bf16 is set */
    int bf16;         /* written as a BF16 tensor */
    int ndim;
    int64_t shape[ST_MAX_DIMS];
} st_out;

/* Writes F32 and BF16 tensors and string metadata to `path` atomically (temporary file, fsync, rename). */
int st_write(const char *path, const st_out *t, int n, const char *const *meta_kv, int nmeta);

#endif
