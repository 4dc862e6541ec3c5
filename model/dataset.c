#include "dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/files.h"
#include "../common/splitmix.h"

static const unsigned char MAGIC[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
enum { HDR_BYTES = 9 + 8 + 1 + 8 + 8 };

static uint64_t rd64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int32_t rd32(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t s;
    memcpy(&s, &v, 4);
    return s;
}

static int read_file(const char *path, unsigned char **buf, size_t *n)
{
    FILE *f = file_open_read(path);
    if (!f) return CB_EFAIL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return err_msg("'%s': %s", path, strerror(errno));
    }
    *n = (size_t)st.st_size;
    *buf = malloc(*n ? *n : 1);
    if (!*buf) {
        fclose(f);
        return err_msg("'%s': out of memory (%zu bytes)", path, *n);
    }
    if (fread(*buf, 1, *n, f) != *n) {
        fclose(f);
        free(*buf);
        return err_msg("'%s': read error", path);
    }
    fclose(f);
    return 0;
}

/* The header of an .idx held in b (n bytes): dtype, counts, and arrays that fill the file. */
static int parse_idx_header(dataset *d, const unsigned char *b, size_t n, const char *idx)
{
    if (n < HDR_BYTES || memcmp(b, MAGIC, 9) != 0)
        return err_msg("%s: not a Megatron indexed dataset index (expected the 'MMIDIDX' header)", idx);
    uint64_t version = rd64(b + 9);
    if (version != 1) return err_msg("%s: index version %llu, expected 1", idx, (unsigned long long)version);
    d->dtype = b[17];
    if (d->dtype == 8) d->elem = 2;
    else if (d->dtype == 4) d->elem = 4;
    else return err_msg("%s: token dtype code %d, expected 8 (uint16) or 4 (int32)", idx, d->dtype);
    d->nseq = rd64(b + 18);
    d->ndoc = rd64(b + 26);
    /* the arrays must fill the file exactly: checked in 128-bit-safe steps */
    if (d->nseq > (n - HDR_BYTES) / 12 || d->ndoc > (n - HDR_BYTES - 12 * d->nseq) / 8 ||
        HDR_BYTES + 12 * d->nseq + 8 * d->ndoc != n)
        return err_msg(
            "%s: %zu bytes do not hold the %llu sequences and %llu documents its header declares: truncated or corrupt",
            idx, n, (unsigned long long)d->nseq, (unsigned long long)d->ndoc);
    return 0;
}

/* Sizes and pointers must describe consecutive sequences; documents must index them in order.
 * Each sequence's size and token offset into d->seq_sizes and d->seq_start (allocated here: the
 * header's count is bounded by the file's size); the byte count of the tokens into *bytes. */
static int check_idx_arrays(dataset *d, const unsigned char *b, const char *idx, uint64_t *bytes)
{
    const unsigned char *sizes = b + HDR_BYTES, *ptrs = sizes + 4 * d->nseq, *docs = ptrs + 8 * d->nseq;
    d->seq_sizes = malloc(d->nseq ? d->nseq * sizeof *d->seq_sizes : 1);
    d->seq_start = malloc(d->nseq ? d->nseq * sizeof *d->seq_start : 1);
    if (!d->seq_sizes || !d->seq_start)
        return err_msg("%s: out of memory for the sizes and offsets of %llu sequences (%.3f GiB)", idx,
                       (unsigned long long)d->nseq, 12.0 * (double)d->nseq / 1073741824.0);
    uint64_t expect = 0;
    for (uint64_t i = 0; i < d->nseq; i++) {
        int32_t sz = rd32(sizes + 4 * i);
        uint64_t p = rd64(ptrs + 8 * i);
        if (sz < 0 || p != expect)
            return err_msg("%s: sequence %llu: size %d at byte %llu, expected a size >= 0 at byte %llu", idx,
                           (unsigned long long)i, sz, (unsigned long long)p, (unsigned long long)expect);
        d->seq_sizes[i] = sz;
        d->seq_start[i] = expect / d->elem;
        expect += (uint64_t)sz * d->elem;
    }
    uint64_t prev = 0;
    for (uint64_t i = 0; i < d->ndoc; i++) {
        uint64_t v = rd64(docs + 8 * i);
        if (v < prev || v > d->nseq || (i == 0 && v != 0))
            return err_msg("%s: document index %llu: %llu is out of order or beyond %llu sequences", idx,
                           (unsigned long long)i, (unsigned long long)v, (unsigned long long)d->nseq);
        prev = v;
    }
    *bytes = expect;
    return 0;
}

/* Maps the first `bytes` of the .bin (which must hold them). */
static int map_bin(dataset *d, const char *bin, uint64_t bytes)
{
    int fd = open(bin, O_RDONLY);
    if (fd < 0) return err_msg("cannot open '%s': %s", bin, strerror(errno));
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) rc = err_msg("'%s': %s", bin, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = err_msg("'%s' is %s, expected a file", bin, S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
    else if (bytes > (uint64_t)st.st_size)
        rc = err_msg("%s: %lld bytes, but the index describes %llu bytes of tokens: truncated", bin,
                     (long long)st.st_size, (unsigned long long)bytes);
    if (rc == 0 && bytes > 0) {
        void *map = mmap(NULL, (size_t)bytes, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) rc = err_msg("'%s': cannot map: %s", bin, strerror(errno));
        else d->bin = map;
    }
    close(fd);
    return rc;
}

int dataset_open(dataset *d, const char *prefix)
{
    memset(d, 0, sizeof *d);
    d->max_token = -1;
    char idx[1100], bin[1100];
    if (path_fmt(d->prefix, sizeof d->prefix, "%s", prefix) != 0 || path_fmt(idx, sizeof idx, "%s.idx", prefix) != 0 ||
        path_fmt(bin, sizeof bin, "%s.bin", prefix) != 0)
        return CB_EFAIL;
    unsigned char *b = NULL;
    size_t n = 0;
    uint64_t bytes = 0;
    if (read_file(idx, &b, &n) != 0) return CB_EFAIL;
    int rc = parse_idx_header(d, b, n, idx);
    if (rc == 0) rc = check_idx_arrays(d, b, idx, &bytes);
    if (rc == 0) rc = map_bin(d, bin, bytes);
    free(b);
    if (rc != 0) {
        dataset_close(d);
        return CB_EFAIL;
    }
    d->ntokens = bytes / d->elem;
    d->bin_bytes = (size_t)bytes;
    return 0;
}

void dataset_close(dataset *d)
{
    if (!d) return;
    if (d->bin) munmap((void *)d->bin, d->bin_bytes);
    free(d->seq_sizes);
    free(d->seq_start);
    memset(d, 0, sizeof *d);
}

static unsigned long long mix(unsigned long long x) { return splitmix64_hash(x); }

static unsigned long long draw(unsigned long long seed, long step, int micro, long i)
{
    return mix(mix(mix(seed) ^ (unsigned long long)step) ^ ((unsigned long long)micro << 32 | 0x5bd1e995ULL)) ^
           mix((unsigned long long)i);
}

int dataset_batch(const dataset *d, unsigned long long seed, long step, int micro, int *inputs, int *targets, int B,
                  int T, int V)
{
    if (d->ntokens < (uint64_t)T + 1)
        return err_msg("%s: %llu tokens, fewer than one window of %d", d->prefix, (unsigned long long)d->ntokens,
                       T + 1);
    uint64_t nwin = d->ntokens - (uint64_t)T;
    for (int b = 0; b < B; b++) {
        uint64_t start = draw(seed, step, micro, b) % nwin;
        for (int t = 0; t <= T; t++) {
            int tok = dataset_token(d, start + (uint64_t)t);
            if (tok < 0 || tok >= V)
                return err_msg("%s.bin: token %d at position %llu is outside the model's vocabulary (0..%d)", d->prefix,
                               tok, (unsigned long long)(start + (uint64_t)t), V - 1);
            if (t < T) inputs[b * T + t] = tok;
            if (t > 0) targets[b * T + t - 1] = tok;
        }
    }
    return 0;
}

void synthetic_batch(unsigned long long seed, long step, int micro, int *inputs, int *targets, int B, int T, int V)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t <= T; t++) {
            int tok = (int)(draw(seed ^ 0xabcdefULL, step, micro, (long)b * (T + 1) + t) % (unsigned long long)V);
            if (t < T) inputs[b * T + t] = tok;
            if (t > 0) targets[b * T + t - 1] = tok;
        }
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Appends one text file's bytes to the .bin as uint16 tokens; its token count into *n. The first
 * error ends it (one message, never one per chunk). */
static int append_document(FILE *fb, const char *bin, const char *file, uint64_t *n)
{
    FILE *f = file_open_read(file);
    if (!f) return CB_EFAIL;
    unsigned char buf[65536];
    uint16_t tok[65536];
    size_t k;
    int rc = 0;
    *n = 0;
    while (rc == 0 && (k = fread(buf, 1, sizeof buf, f)) > 0) {
        for (size_t j = 0; j < k; j++) tok[j] = buf[j]; /* byte-level tokens, little-endian uint16 */
        if (fwrite(tok, 2, k, fb) != k) rc = err_msg("cannot write '%s': %s", bin, strerror(errno));
        *n += k;
    }
    if (rc == 0 && ferror(f)) rc = err_msg("'%s': read error", file);
    fclose(f);
    if (rc == 0 && *n > INT32_MAX)
        rc = err_msg("'%s': %llu bytes; a document holds at most 2^31-1 tokens", file, (unsigned long long)*n);
    return rc;
}

static int write_idx(const char *tidx, const char *idx, const int32_t *sizes, int nfiles)
{
    FILE *fi = fopen(tidx, "wb");
    if (!fi) return err_msg("cannot write '%s': %s", idx, strerror(errno));
    unsigned char h[HDR_BYTES];
    memcpy(h, MAGIC, 9);
    put64(h + 9, 1);
    h[17] = 8; /* uint16 */
    put64(h + 18, (uint64_t)nfiles);
    put64(h + 26, (uint64_t)nfiles + 1);
    fwrite(h, 1, sizeof h, fi);
    for (int i = 0; i < nfiles; i++) {
        unsigned char b4[4];
        uint32_t u = (uint32_t)sizes[i];
        for (int j = 0; j < 4; j++) b4[j] = (unsigned char)(u >> (8 * j));
        fwrite(b4, 1, 4, fi);
    }
    unsigned char p[8];
    uint64_t off = 0;
    for (int i = 0; i < nfiles; i++) {
        put64(p, off);
        fwrite(p, 1, 8, fi);
        off += 2 * (uint64_t)sizes[i];
    }
    for (int i = 0; i <= nfiles; i++) { /* one document per sequence */
        put64(p, (uint64_t)i);
        fwrite(p, 1, 8, fi);
    }
    if (ferror(fi) | (fclose(fi) != 0)) return err_msg("cannot write '%s': %s", idx, strerror(errno));
    return 0;
}

int dataset_build(const char *prefix, char **files, int nfiles, uint64_t *ntokens_out)
{
    char bin[1100], idx[1100];
    file_out ob, oi;
    if (path_fmt(bin, sizeof bin, "%s.bin", prefix) != 0 || path_fmt(idx, sizeof idx, "%s.idx", prefix) != 0)
        return CB_EFAIL;
    if (file_out_begin(&ob, bin) != 0) return CB_EFAIL;
    if (file_out_begin(&oi, idx) != 0) {
        file_out_abort(&ob);
        return CB_EFAIL;
    }
    FILE *fb = fopen(ob.tmp, "wb");
    int32_t *sizes = calloc((size_t)nfiles, sizeof *sizes);
    int rc = !fb ? err_msg("cannot write '%s': %s", ob.path, strerror(errno)) : sizes ? 0 : err_msg("out of memory");
    uint64_t total = 0;
    for (int i = 0; i < nfiles && rc == 0; i++) {
        uint64_t n = 0;
        rc = append_document(fb, bin, files[i], &n);
        sizes[i] = (int32_t)n;
        total += n;
    }
    if (fb && (fclose(fb) != 0) && rc == 0) rc = err_msg("cannot write '%s': %s", bin, strerror(errno));
    if (rc == 0) rc = write_idx(oi.tmp, idx, sizes, nfiles);
    free(sizes);
    if (rc == 0) rc = file_out_commit(&ob);
    if (rc == 0) rc = file_out_commit(&oi);
    file_out_abort(&ob);
    file_out_abort(&oi);
    if (rc != 0) return CB_EFAIL;
    if (ntokens_out) *ntokens_out = total;
    return 0;
}
