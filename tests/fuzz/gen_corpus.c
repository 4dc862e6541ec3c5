/* gen_corpus.c: writes the seed corpora of the fuzz harnesses, deterministically:
 *   OUT/csv/          heads of the DATA tables, quoted multi-line cells, comments, typed cells, and
 *                     near-valid files (field count, quotes, header, NUL byte)
 *   OUT/safetensors/  tiny F32/F16/BF16 files with __metadata__, one written by st_write(), and
 *                     near-valid ones (offsets, dtype, dims, header length, JSON)
 *   OUT/idx/          .idx/.bin pairs (one written by dataset_build()) in fuzz_idx's format:
 *                     u32 little-endian .idx length, the .idx, then the .bin
 *   OUT/ckpt/         checkpoint steps in fuzz_ckpt's format (fuzz_ckpt.h), their metadata written
 *                     by ckpt_meta_write() and their files by st_write(): valid ones (fp32, full
 *                     bf16) and ones each resume check refuses or flags (a negative exp_avg_sq, a
 *                     finite exp_avg of 3e38, adam_t 2147483647, another layers, another run,
 *                     another batch, an older checkpoint's keys)
 *   OUT/logs/         the training logs, configs and collective-benchmark outputs of LOGS
 *                     (tests/logs/) and the price catalogues of CATALOGS (tests/catalogs/), one
 *                     seed each, and each log joined to its config (fuzz_io.h's "@@config@@"),
 *                     for fuzz_logs
 *   OUT/import_out/   the files of LOGS and the joined logs, for fuzz_import_out
 *   OUT/prices_out/   the catalogues of CATALOGS, for fuzz_prices_out
 * Usage: gen_corpus OUT DATA LOGS CATALOGS   (make fuzz-corpus: OUT = tests/fuzz/corpus, DATA =
 * data, LOGS = tests/logs, CATALOGS = tests/catalogs). Files already in OUT that it does not write
 * (inputs fuzzing found, regression inputs) stay.
 * Exits 0, or 1 after an "error:" line. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../model/dataset.h"
#include "../../model/safetensors.h"
#include "../../kernels/bf16.h"
#include "fuzz_ckpt.h"
#include "fuzz_io.h"
#include "../../common/files.h"

static const char *out_dir;

static void die(const char *what, const char *path)
{
    fprintf(stderr, "error: gen_corpus: %s '%s': %s\n", what, path, strerror(errno));
    exit(1);
}

static void path_in(char *buf, size_t n, const char *sub, const char *name)
{
    if (snprintf(buf, n, "%s/%s/%s", out_dir, sub, name) >= (int)n) {
        fprintf(stderr, "error: gen_corpus: path too long: '%s/%s/%s'\n", out_dir, sub, name);
        exit(1);
    }
}

static void put(const char *sub, const char *name, const void *data, size_t n)
{
    char path[CB_PATH_MAX];
    path_in(path, sizeof path, sub, name);
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot write", path);
    if (fwrite(data, 1, n, f) != n || fclose(f) != 0) die("cannot write", path);
}

static void put_str(const char *sub, const char *name, const char *s)
{
    put(sub, name, s, strlen(s));
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot read", path);
    size_t cap = 4096;
    unsigned char *b = malloc(cap);
    *n = 0;
    size_t k;
    while (b && (k = fread(b + *n, 1, cap - *n, f)) > 0) {
        *n += k;
        if (*n == cap) b = realloc(b, cap *= 2);
    }
    if (!b || ferror(f)) die("cannot read", path);
    fclose(f);
    return b;
}

static void make_dir(const char *sub)
{
    char path[CB_PATH_MAX];
    path_in(path, sizeof path, sub, "");
    if (mkdir(path, 0755) != 0 && errno != EEXIST) die("cannot create", path);
}

/* ---------------------------------------------------------------- csv */

/* The comment lines, the header and the first 3 records of DATA/<name>. */
static void csv_head(const char *data_dir, const char *name, const char *seed)
{
    char path[CB_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", data_dir, name);
    size_t n;
    unsigned char *b = slurp(path, &n);
    size_t end = 0;
    int rows = 0;
    while (end < n && rows < 4) {
        int comment = b[end] == '#';
        while (end < n && b[end] != '\n') end++;
        if (end < n) end++;
        if (!comment) rows++;
    }
    put("csv", seed, b, end);
    free(b);
}

static void gen_csv(const char *data_dir)
{
    make_dir("csv");
    csv_head(data_dir, "blas_cores.csv", "head_blas_cores.csv");
    csv_head(data_dir, "hardware.csv", "head_hardware.csv");
    csv_head(data_dir, "models.csv", "head_models.csv");
    csv_head(data_dir, "prices.csv", "head_prices.csv");
    csv_head(data_dir, "reference/trn1_table1.csv", "head_trn1_table1.csv");
    put_str("csv", "quoted_multiline.csv",
            "# a comment before the header\n"
            "name,note,value,flag\n"
            "\"multi\nline\",plain,1.5,true\n"
            "# a comment between records\n"
            "\"say \"\"hi\"\"\",\"a, comma\",-2,no\n"
            "\"a cell with\n# a line that looks like a comment\n\",x,3,1\n"
            "\n"
            " spaced , \"  padded  \" ,1e3,YES\n"
            "last,\"\",0,0\n");
    put_str("csv", "typed_cells.csv",
            "long,double,bool,str\n"
            "9223372036854775807,1e308,true,a\n"
            "-9223372036854775808,-1e-320,FALSE,b\n"
            "9223372036854775808,1e309,maybe,\n"
            " 42 ,nan,yes,\" \"\n"
            "0x10,inf,no,c\n"
            "1.5,-0,0,d\n"
            ",,,\n");
    put_str("csv", "crlf.csv", "a,b\r\n1,2\r\n\"x\r\ny\",3\r\n");
    put_str("csv", "header_only.csv", "# only a header\nsingle\n");
    put_str("csv", "bad_field_count.csv", "a,b,c\n1,2,3\n4,5\n");
    put_str("csv", "bad_unterminated.csv", "a,b\n1,\"open\n2,3\n");
    put_str("csv", "bad_quote_in_field.csv", "a,b\n1,x\"y\n");
    put_str("csv", "bad_duplicate_header.csv", "a,b,a\n1,2,3\n");
    put_str("csv", "bad_empty_name.csv", "a, ,c\n1,2,3\n");
    put_str("csv", "bad_only_comments.csv", "# nothing\n# else\n\n");
    put("csv", "bad_nul.csv", "a,b\n1,\0\n", 8);
}

/* ---------------------------------------------------------------- safetensors */

/* 8-byte little-endian header length, the JSON header, then n data bytes. */
static void st_raw(const char *name, const char *json, const void *data, size_t n)
{
    size_t h = strlen(json);
    unsigned char *b = malloc(8 + h + n + 1);
    if (!b) die("out of memory for", name);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, json, h);
    if (n) memcpy(b + 8 + h, data, n);
    put("safetensors", name, b, 8 + h + n);
    free(b);
}

static void gen_safetensors(void)
{
    make_dir("safetensors");
    static const float f32[6] = {0.0f, 1.0f, -2.5f, 3.25e-3f, 1e30f, -0.0f};
    /* BF16 and F16 as little-endian bytes: 1, -2, +inf, NaN; F16 adds subnormals, -0 and max */
    static const unsigned char bf16[8] = {0x80, 0x3f, 0x00, 0xc0, 0x80, 0x7f, 0xc0, 0x7f};
    static const unsigned char f16[16] = {0x00, 0x3c, 0x01, 0x00, 0xff, 0x03, 0x00, 0x7c,
                                          0x00, 0x7e, 0x00, 0x80, 0xff, 0x7b, 0x00, 0xc0};
    st_raw("f32_meta.safetensors",
           "{\"__metadata__\":{\"format\":\"pt\",\"step\":\"3\"},"
           "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}",
           f32, sizeof f32);
    st_raw("bf16.safetensors", "{\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}", bf16, sizeof bf16);
    st_raw("f16.safetensors",
           "{\"__metadata__\":{},\"h\":{\"dtype\":\"F16\",\"shape\":[2,1,4],\"data_offsets\":[0,16]}}  ", f16,
           sizeof f16);
    unsigned char mixed[24 + 16 + 8 + 8 + 4];
    memcpy(mixed, f32, 24);
    memcpy(mixed + 24, f16, 16);
    memcpy(mixed + 40, bf16, 8);
    memcpy(mixed + 48, "\x01\x00\x00\x00\xff\xff\xff\xff", 8);
    memcpy(mixed + 56, "\x01\x02\x03\x04", 4);
    st_raw("mixed_dtypes.safetensors",
           "{ \"a\\\"b\\\\c\\u0041\\n\" : {\"shape\":[3,2],\"dtype\":\"F32\",\"data_offsets\":[0,24]},\n"
           "  \"h\":{\"dtype\":\"F16\",\"shape\":[8],\"data_offsets\":[24,40]},\n"
           "  \"s\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[40,42]},\n"
           "  \"empty\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[42,42]},\n"
           "  \"i\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[48,56]},\n"
           "  \"u\":{\"dtype\":\"U8\",\"shape\":[1,1,2,2],\"data_offsets\":[56,60]},\n"
           "  \"__metadata__\":{\"k\":\"v\\u0020w\",\"\":\"\"}}",
           mixed, sizeof mixed);
    /* one written by the project's own writer */
    static const float wte[8] = {0.5f, -0.5f, 1, 2, 3, 4, 5, 6}, bias[3] = {0.125f, 0, -1};
    st_out t[2] = {{.name = "wte", .data = wte, .ndim = 2, .shape = {4, 2}},
                   {.name = "h.0.ln_1.bias", .data = bias, .ndim = 1, .shape = {3}}};
    const char *meta[] = {"format", "pt", "seq", "8"};
    char path[CB_PATH_MAX];
    path_in(path, sizeof path, "safetensors", "st_write.safetensors");
    if (st_write(path, t, 2, meta, 2) != 0) exit(1);
    /* near-valid */
    const char *w = "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":";
    char json[512];
    snprintf(json, sizeof json, "{%s[0,24]}}", w);
    st_raw("bad_truncated_data.safetensors", json, f32, 20);
    snprintf(json, sizeof json, "{%s[0,20]}}", w);
    st_raw("bad_offsets_size.safetensors", json, f32, sizeof f32);
    snprintf(json, sizeof json, "{%s[4,28]}}", w);
    st_raw("bad_offsets_past_end.safetensors", json, f32, sizeof f32);
    /* shapes whose element count wraps around 64 bits to match the offsets (found by reading the
     * parser: it accepted both before it checked the multiplication) */
    st_raw("bad_shape_overflow_f32.safetensors",
           "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", f32, 0);
    st_raw("bad_shape_overflow_bf16.safetensors",
           "{\"w\":{\"dtype\":\"BF16\",\"shape\":[2,4611686018427387905],\"data_offsets\":[0,4]}}", f32, 4);
    st_raw("bad_dtype.safetensors", "{\"w\":{\"dtype\":\"F12\",\"shape\":[6],\"data_offsets\":[0,6]}}", f32, 6);
    st_raw("bad_five_dims.safetensors", "{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,4],\"data_offsets\":[0,4]}}", f32,
           4);
    st_raw("bad_no_offsets.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", f32, 4);
    st_raw("bad_unterminated.safetensors", "{\"w\":{\"dtype\":\"F32", f32, 4);
    st_raw("bad_unknown_field.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}",
           f32, 4);
    unsigned char big_hlen[8 + 4] = {0xff, 0xff, 0xff, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    put("safetensors", "bad_header_length.safetensors", big_hlen, sizeof big_hlen);
}

/* ---------------------------------------------------------------- idx */

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* fuzz_idx's input: u32 .idx length, the .idx, the .bin. `idx_len_field` is what the length
 * field says (normally idx_n). */
static void idx_pack(const char *name, const unsigned char *idx, size_t idx_n, uint32_t idx_len_field,
                     const unsigned char *bin, size_t bin_n)
{
    unsigned char *b = malloc(4 + idx_n + bin_n + 1);
    if (!b) die("out of memory for", name);
    put32(b, idx_len_field);
    memcpy(b + 4, idx, idx_n);
    if (bin_n) memcpy(b + 4 + idx_n, bin, bin_n);
    put("idx", name, b, 4 + idx_n + bin_n);
    free(b);
}

/* An index of `nseq` sequences of sizes[] tokens, contiguous, `ndoc` documents 0, 1, ... */
static size_t idx_make(unsigned char *b, int dtype, const int32_t *sizes, int nseq, int ndoc)
{
    memcpy(b, "MMIDIDX\0\0", 9);
    put64(b + 9, 1);
    b[17] = (unsigned char)dtype;
    put64(b + 18, (uint64_t)nseq);
    put64(b + 26, (uint64_t)ndoc);
    size_t at = 34;
    for (int i = 0; i < nseq; i++, at += 4) put32(b + at, (uint32_t)sizes[i]);
    uint64_t off = 0;
    for (int i = 0; i < nseq; i++, at += 8) {
        put64(b + at, off);
        off += (uint64_t)sizes[i] * (dtype == 8 ? 2 : 4);
    }
    for (int i = 0; i < ndoc; i++, at += 8) put64(b + at, (uint64_t)(i < nseq ? i : nseq));
    return at;
}

/* A dataset written by dataset_build() from three small documents (one empty). */
static void idx_built(void)
{
    char dir[] = "/tmp/costbench-gen-corpus-XXXXXX";
    if (!mkdtemp(dir)) die("cannot create", dir);
    static const char *docs[] = {"hello, world\n", "", "costbench: tokens per dollar\n"};
    char paths[3][64], *files[3], prefix[64], idx_path[80], bin_path[80];
    for (int i = 0; i < 3; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/doc%d.txt", dir, i);
        FILE *f = fopen(paths[i], "wb");
        if (!f || fputs(docs[i], f) < 0 || fclose(f) != 0) die("cannot write", paths[i]);
        files[i] = paths[i];
    }
    snprintf(prefix, sizeof prefix, "%s/text", dir);
    if (dataset_build(prefix, files, 3, NULL) != 0) exit(1);
    snprintf(idx_path, sizeof idx_path, "%s.idx", prefix);
    snprintf(bin_path, sizeof bin_path, "%s.bin", prefix);
    size_t ni, nb;
    unsigned char *idx = slurp(idx_path, &ni), *bin = slurp(bin_path, &nb);
    idx_pack("built_uint16.idxbin", idx, ni, (uint32_t)ni, bin, nb);
    unsigned char extra[4096];
    memcpy(extra, bin, nb);
    memset(extra + nb, 0x7f, 6); /* trailing bytes after the last sequence are allowed */
    idx_pack("built_bin_longer.idxbin", idx, ni, (uint32_t)ni, extra, nb + 6);
    idx_pack("bad_built_bin_short.idxbin", idx, ni, (uint32_t)ni, bin, nb - 2);
    idx_pack("bad_length_field_past_end.idxbin", idx, ni, 0xffffffffu, bin, nb);
    free(idx), free(bin);
    for (int i = 0; i < 3; i++) unlink(paths[i]);
    unlink(idx_path), unlink(bin_path), rmdir(dir);
}

static void gen_idx(void)
{
    make_dir("idx");
    idx_built();
    unsigned char idx[256], bin[64];
    /* int32 tokens, one negative and one past any small vocabulary */
    static const int32_t sizes32[] = {5, 3};
    static const int32_t tok32[] = {1, 2, 3, 70000, 5, -1, 0, 9};
    memcpy(bin, tok32, sizeof tok32);
    size_t n = idx_make(idx, 4, sizes32, 2, 3);
    idx_pack("int32.idxbin", idx, n, (uint32_t)n, bin, sizeof tok32);
    /* uint16 tokens, 12 of them in one sequence */
    static const int32_t sizes16[] = {12};
    for (int i = 0; i < 24; i++) bin[i] = (unsigned char)(i % 2 ? 0 : 17 * i);
    n = idx_make(idx, 8, sizes16, 1, 2);
    idx_pack("uint16.idxbin", idx, n, (uint32_t)n, bin, 24);
    n = idx_make(idx, 8, NULL, 0, 1);
    idx_pack("empty.idxbin", idx, n, (uint32_t)n, NULL, 0);
    /* near-valid */
    n = idx_make(idx, 8, sizes16, 1, 2);
    idx[9] = 2;
    idx_pack("bad_version.idxbin", idx, n, (uint32_t)n, bin, 24);
    n = idx_make(idx, 8, sizes16, 1, 2);
    idx[17] = 5;
    idx_pack("bad_dtype.idxbin", idx, n, (uint32_t)n, bin, 24);
    n = idx_make(idx, 4, sizes32, 2, 3);
    idx[34 + 8 + 8] = 4; /* second pointer: 4 bytes off */
    idx_pack("bad_pointer.idxbin", idx, n, (uint32_t)n, bin, sizeof tok32);
    n = idx_make(idx, 4, sizes32, 2, 3);
    put64(idx + n - 16, 2), put64(idx + n - 8, 1); /* documents out of order */
    idx_pack("bad_doc_order.idxbin", idx, n, (uint32_t)n, bin, sizeof tok32);
    n = idx_make(idx, 4, sizes32, 2, 3);
    put32(idx + 34, 0xfffffffbu); /* size -5 */
    idx_pack("bad_negative_size.idxbin", idx, n, (uint32_t)n, bin, sizeof tok32);
    n = idx_make(idx, 8, sizes16, 1, 2);
    idx_pack("bad_idx_trailing_byte.idxbin", idx, n + 1, (uint32_t)n + 1, bin, 24);
    n = idx_make(idx, 8, sizes16, 1, 2);
    idx_pack("bad_idx_truncated.idxbin", idx, n - 3, (uint32_t)n - 3, bin, 24);
    memcpy(idx, "MMIDIDY\0\0", 9);
    idx_pack("bad_magic.idxbin", idx, n, (uint32_t)n, bin, 24);
}

/* ---------------------------------------------------------------- ckpt */

/* Sets metadata `key` of ml to `value` (NULL: removes it). */
static void meta_set(ckpt_meta *ml, const char *key, const char *value)
{
    for (int i = 0; i < ml->n; i++) {
        if (strcmp(ml->kv[2 * i], key) != 0) continue;
        if (value) {
            ml->kv[2 * i + 1] = value;
        } else {
            memmove(&ml->kv[2 * i], &ml->kv[2 * i + 2], (size_t)(ml->n - i - 1) * 2 * sizeof ml->kv[0]);
            ml->n--;
        }
        return;
    }
}

/* Keeps only the keys an older costbench wrote. */
static void meta_old(ckpt_meta *ml)
{
    static const char *const old[] = {"format", "costbench_model", "layers", "d_model", "heads", "vocab", "rotary_pct",
                                      "parallel_residual", "tied_embeddings", "precision", "step", "run_id", "adam_t",
                                      "seed", "micro_batch", "seq", "accum"};
    for (int i = ml->n - 1; i >= 0; i--) {
        int keep = 0;
        for (size_t k = 0; k < sizeof old / sizeof old[0]; k++) keep |= strcmp(ml->kv[2 * i], old[k]) == 0;
        if (!keep) meta_set(ml, ml->kv[2 * i], NULL);
    }
}

/* What a seed changes in the valid checkpoint. */
typedef struct {
    const char *name;
    int full_bf16;               /* every tensor BF16, precision bf16 */
    const char *key, *value;     /* set in both files' metadata (NULL: none) */
    const char *opt_key, *opt_value; /* set in the optimizer file's only */
    int old;                     /* an older costbench's keys */
    float sq0, m0;               /* element 0 of exp_avg_sq, exp_avg (0: as generated) */
} ckpt_seed;

static void st_tmp_write(const char *path, const st_out *t, int n, const ckpt_meta *ml)
{
    if (st_write(path, t, n, ml->kv, ml->n) != 0) exit(1);
}

/* A two-tensor model (an F32 matrix, a BF16 vector) and its moments, packed as fuzz_ckpt reads. */
static void ckpt_step(const char *dir, const ckpt_seed *sd)
{
    float w[8 * 4], m[8 * 4], v[8 * 4];
    uint16_t b[4], mb[4], vb[4], wb[8 * 4], m16[8 * 4], v16[8 * 4];
    for (int i = 0; i < 32; i++)
        w[i] = 0.01f * (float)(i - 16), m[i] = 1e-3f * (float)(i % 5 - 2), v[i] = 1e-6f * (float)(i % 3);
    if (sd->sq0 != 0) v[0] = sd->sq0;
    if (sd->m0 != 0) m[0] = sd->m0;
    for (int i = 0; i < 32; i++)
        wb[i] = bf16_from_float(w[i]), m16[i] = bf16_from_float(m[i]), v16[i] = bf16_from_float(v[i]);
    for (int i = 0; i < 4; i++)
        b[i] = bf16_from_float(0.5f * (float)i), mb[i] = bf16_from_float(-1e-3f), vb[i] = bf16_from_float(4e-6f);
    const int fb = sd->full_bf16;
    const char *wn = "gpt_neox.embed_in.weight", *bn = "gpt_neox.final_layer_norm.bias";
    st_out mt[2] = {{.name = wn, .data = fb ? (const void *)wb : w, .bf16 = fb, .ndim = 2, .shape = {8, 4}},
                    {.name = bn, .data = b, .bf16 = 1, .ndim = 1, .shape = {4}}};
    st_out ot[4] = {
        {.name = "exp_avg/gpt_neox.embed_in.weight",
         .data = fb ? (const void *)m16 : m,
         .bf16 = fb,
         .ndim = 2,
         .shape = {8, 4}},
        {.name = "exp_avg/gpt_neox.final_layer_norm.bias", .data = mb, .bf16 = 1, .ndim = 1, .shape = {4}},
        {.name = "exp_avg_sq/gpt_neox.embed_in.weight",
         .data = fb ? (const void *)v16 : v,
         .bf16 = fb,
         .ndim = 2,
         .shape = {8, 4}},
        {.name = "exp_avg_sq/gpt_neox.final_layer_norm.bias", .data = vb, .bf16 = 1, .ndim = 1, .shape = {4}}};
    const model_config c = fuzz_ckpt_config();
    const ckpt_state st = fuzz_ckpt_state();
    ckpt_meta mm, om;
    ckpt_meta_write(&mm, &c, fb ? "bf16" : "fp32", &st, 0, 0);
    ckpt_meta_write(&om, &c, fb ? "bf16" : "fp32", &st, 1, (int)st.step);
    if (sd->key) meta_set(&mm, sd->key, sd->value), meta_set(&om, sd->key, sd->value);
    if (sd->opt_key) meta_set(&om, sd->opt_key, sd->opt_value);
    if (sd->old) meta_old(&mm), meta_old(&om);
    char mp[512], op[512];
    snprintf(mp, sizeof mp, "%s/model.safetensors", dir);
    snprintf(op, sizeof op, "%s/optimizer.safetensors", dir);
    st_tmp_write(mp, mt, 2, &mm);
    st_tmp_write(op, ot, 4, &om);
    size_t nm, no;
    unsigned char *mbytes = slurp(mp, &nm), *obytes = slurp(op, &no), *pack = malloc(4 + nm + no);
    if (!pack) die("out of memory for", sd->name);
    put32(pack, (uint32_t)nm);
    memcpy(pack + 4, mbytes, nm);
    memcpy(pack + 4 + nm, obytes, no);
    put("ckpt", sd->name, pack, 4 + nm + no);
    free(mbytes), free(obytes), free(pack);
    unlink(mp), unlink(op);
}

static void gen_ckpt(void)
{
    make_dir("ckpt");
    char dir[] = "/tmp/costbench-gen-corpus-XXXXXX";
    if (!mkdtemp(dir)) die("cannot create", dir);
    static const ckpt_seed seeds[] = {
        {.name = "valid_fp32.ckpt"},
        {.name = "valid_bf16.ckpt", .full_bf16 = 1},
        {.name = "older_keys.ckpt", .old = 1},
        {.name = "bad_negative_exp_avg_sq.ckpt", .sq0 = -1.0f},
        {.name = "bad_negative_exp_avg_sq_bf16.ckpt", .full_bf16 = 1, .sq0 = -1.0f},
        {.name = "finite_exp_avg_3e38.ckpt", .m0 = 3e38f},
        {.name = "bad_adam_t_int_max.ckpt", .opt_key = "adam_t", .opt_value = "2147483647"},
        {.name = "bad_layers.ckpt", .key = "layers", .value = "1"},
        {.name = "bad_kv_heads.ckpt", .key = "kv_heads", .value = "2"},
        {.name = "bad_run_id.ckpt", .opt_key = "run_id", .opt_value = "00000000000000ff"},
        {.name = "bad_micro_batch.ckpt", .opt_key = "micro_batch", .opt_value = "2"},
        {.name = "bad_step.ckpt", .opt_key = "step", .opt_value = "2"},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) ckpt_step(dir, &seeds[i]);
    rmdir(dir);
}

/* ---------------------------------------------------------------- logs */

/* Every file of logs_dir into OUT/sub, as it is (sorted by name: the corpus is deterministic; the
 * directories' file names are distinct). */
static void gen_files(const char *sub, const char *logs_dir)
{
    make_dir(sub);
    struct dirent **names;
    int n = scandir(logs_dir, &names, NULL, alphasort);
    if (n < 0) die("cannot list", logs_dir);
    for (int i = 0; i < n; i++) {
        char path[CB_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", logs_dir, names[i]->d_name);
        struct stat st;
        if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            size_t len;
            unsigned char *b = slurp(path, &len);
            put(sub, names[i]->d_name, b, len);
            free(b);
        }
        free(names[i]);
    }
    free(names);
}

/* Each log of logs_dir that has a config there, the two joined as one input ("LOG+config") into
 * OUT/sub: the parsers read the config as `import --config` gives it. */
static void gen_joined(const char *sub, const char *logs_dir)
{
    static const char *const pairs[][2] = {
        {"torchtitan_llama3_8b.log", "torchtitan_llama3_8b.toml"},
        {"torchtitan_llama2_7b_wps.log", "torchtitan_llama2_7b_old.toml"},
        {"composer_mpt7b.log", "composer_mpt7b.yaml"},
        {"nemo_excerpt.log", "nemo_run.yaml"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char path[2][CB_PATH_MAX], name[CB_PATH_MAX];
        size_t len[2];
        unsigned char *b[2];
        for (int k = 0; k < 2; k++) {
            snprintf(path[k], sizeof path[k], "%s/%s", logs_dir, pairs[i][k]);
            b[k] = slurp(path[k], &len[k]);
        }
        const char *sep = &FUZZ_CONFIG_SEP[1]; /* the log's own last newline precedes it */
        size_t ns = strlen(sep), n = len[0] + ns + len[1];
        unsigned char *joined = malloc(n);
        if (!joined) die("out of memory joining", path[0]);
        memcpy(joined, b[0], len[0]);
        memcpy(joined + len[0], sep, ns);
        memcpy(joined + len[0] + ns, b[1], len[1]);
        snprintf(name, sizeof name, "%s+config", pairs[i][0]);
        put(sub, name, joined, n);
        free(joined), free(b[0]), free(b[1]);
    }
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: gen_corpus OUT DATA LOGS CATALOGS\n");
        return 2;
    }
    out_dir = argv[1];
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) die("cannot create", out_dir);
    gen_csv(argv[2]);
    gen_safetensors();
    gen_idx();
    gen_ckpt();
    gen_files("logs", argv[3]);
    gen_files("logs", argv[4]);
    gen_joined("logs", argv[3]);
    gen_files("import_out", argv[3]);
    gen_joined("import_out", argv[3]);
    gen_files("prices_out", argv[4]);
    return 0;
}
