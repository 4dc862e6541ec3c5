#include "safetensors.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../kernels/bf16.h"
#include "../common/files.h"

/* ---------------------------------------------------------------- a small JSON reader */

typedef struct {
    const char *s, *end, *path, *start;
    int failed;
} jp;

static void ws(jp *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\n' || *p->s == '\r' || *p->s == '\t')) p->s++;
}

static int jfail(jp *p, const char *what)
{
    if (!p->failed)
        err_msg("%s: malformed safetensors header: %s at header byte %ld", p->path, what, (long)(p->s - p->start));
    p->failed = 1;
    return -1;
}

static int expect(jp *p, char c)
{
    ws(p);
    if (p->s >= p->end || *p->s != c) return jfail(p, "unexpected character");
    p->s++;
    return 0;
}

/* A JSON string into a new buffer (escapes \" \\ \/ \n \t \uXXXX for ASCII only). */
static char *jstring(jp *p)
{
    ws(p);
    if (p->s >= p->end || *p->s != '"') {
        jfail(p, "expected a string");
        return NULL;
    }
    p->s++;
    size_t cap = 64, n = 0;
    char *out = malloc(cap);
    while (out && p->s < p->end && *p->s != '"') {
        char c = *p->s++;
        if (c == '\\') {
            if (p->s >= p->end) break;
            char e = *p->s++;
            if (e == 'n') c = '\n';
            else if (e == 't') c = '\t';
            else if (e == 'u') {
                if (p->end - p->s < 4) break;
                char hex[5] = {p->s[0], p->s[1], p->s[2], p->s[3], 0};
                c = (char)strtol(hex, NULL, 16);
                p->s += 4;
            } else c = e;
        }
        if (n + 2 > cap) {
            cap *= 2;
            char *o2 = realloc(out, cap);
            if (!o2) {
                free(out);
                out = NULL;
                break;
            }
            out = o2;
        }
        out[n++] = c;
    }
    if (!out || p->s >= p->end) {
        free(out);
        jfail(p, "unterminated string");
        return NULL;
    }
    p->s++;
    out[n] = '\0';
    return out;
}

static int juint(jp *p, uint64_t *v)
{
    ws(p);
    if (p->s >= p->end || *p->s < '0' || *p->s > '9') return jfail(p, "expected a non-negative integer");
    uint64_t x = 0;
    while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
        if (x > (UINT64_MAX - 9) / 10) return jfail(p, "integer too large");
        x = x * 10 + (uint64_t)(*p->s++ - '0');
    }
    *v = x;
    return 0;
}

static int juint_array(jp *p, uint64_t *v, int cap, int *n)
{
    if (expect(p, '[') != 0) return -1;
    *n = 0;
    ws(p);
    if (p->s < p->end && *p->s == ']') {
        p->s++;
        return 0;
    }
    for (;;) {
        if (*n == cap) return jfail(p, "too many dimensions");
        if (juint(p, &v[(*n)++]) != 0) return -1;
        ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        return expect(p, ']');
    }
}

static int parse_tensor(jp *p, st_tensor *t)
{
    if (expect(p, '{') != 0) return -1;
    int have = 0;
    for (;;) {
        char *key = jstring(p);
        if (!key || expect(p, ':') != 0) {
            free(key);
            return -1;
        }
        int bit = !strcmp(key, "dtype") ? 1 : !strcmp(key, "shape") ? 2 : !strcmp(key, "data_offsets") ? 4 : 0;
        if (bit && (have & bit)) {
            free(key);
            return jfail(p, "a tensor field given twice");
        }
        if (strcmp(key, "dtype") == 0) {
            char *v = jstring(p);
            if (!v) { free(key); return -1; }
            /* too long for any dtype: kept as "?" so that the check below calls it unknown */
            snprintf(t->dtype, sizeof t->dtype, "%s", strlen(v) < sizeof t->dtype ? v : "?");
            free(v);
            have |= 1;
        } else if (strcmp(key, "shape") == 0) {
            uint64_t dims[ST_MAX_DIMS];
            if (juint_array(p, dims, ST_MAX_DIMS, &t->ndim) != 0) { free(key); return -1; }
            for (int i = 0; i < t->ndim; i++) t->shape[i] = (int64_t)dims[i];
            have |= 2;
        } else if (strcmp(key, "data_offsets") == 0) {
            uint64_t o[2];
            int n;
            if (juint_array(p, o, 2, &n) != 0 || n != 2) {
                free(key);
                return jfail(p, "data_offsets needs two numbers");
            }
            t->begin = o[0], t->end = o[1];
            have |= 4;
        } else {
            free(key);
            return jfail(p, "unknown tensor field");
        }
        free(key);
        ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (expect(p, '}') != 0) return -1;
        return have == 7 ? 0 : jfail(p, "tensor entry lacks dtype, shape or data_offsets");
    }
}

static int parse_meta(jp *p, st_file *f)
{
    if (expect(p, '{') != 0) return -1;
    ws(p);
    if (p->s < p->end && *p->s == '}') {
        p->s++;
        return 0;
    }
    for (;;) {
        char *k = jstring(p);
        if (!k || expect(p, ':') != 0) { free(k); return -1; }
        for (int i = 0; i < f->nmeta; i++)
            if (strcmp(f->meta_keys[i], k) == 0) {
                free(k);
                return jfail(p, "a metadata key given twice");
            }
        char *v = jstring(p);
        if (!v) { free(k); return -1; }
        char **nk = realloc(f->meta_keys, (size_t)(f->nmeta + 1) * sizeof *nk);
        if (nk) f->meta_keys = nk;
        char **nv = realloc(f->meta_vals, (size_t)(f->nmeta + 1) * sizeof *nv);
        if (nv) f->meta_vals = nv;
        if (!nk || !nv) { free(k), free(v); return jfail(p, "out of memory"); }
        f->meta_keys[f->nmeta] = k, f->meta_vals[f->nmeta] = v, f->nmeta++;
        ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        return expect(p, '}');
    }
}

static size_t dtype_bytes(const char *d)
{
    if (!strcmp(d, "F32") || !strcmp(d, "I32") || !strcmp(d, "U32")) return 4;
    if (!strcmp(d, "F16") || !strcmp(d, "BF16") || !strcmp(d, "I16") || !strcmp(d, "U16")) return 2;
    if (!strcmp(d, "F64") || !strcmp(d, "I64") || !strcmp(d, "U64")) return 8;
    if (!strcmp(d, "BOOL") || !strcmp(d, "U8") || !strcmp(d, "I8") || !strcmp(d, "F8_E4M3") || !strcmp(d, "F8_E5M2"))
        return 1;
    return 0;
}

/* One tensor entry's dtype, element count and byte range, against the data section. */
static int check_tensor(const st_file *f, const st_tensor *t)
{
    size_t eb = dtype_bytes(t->dtype);
    if (eb == 0) return err_msg("%s: tensor '%s': unknown dtype '%s'", f->path, t->name, t->dtype);
    uint64_t count = 1;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t d = (uint64_t)t->shape[i];
        if (d != 0 && count > UINT64_MAX / d / eb)
            return err_msg("%s: tensor '%s': its shape overflows 64 bits", f->path, t->name);
        count *= d;
    }
    if (t->end < t->begin || t->end > f->data_bytes || t->end - t->begin != count * eb)
        return err_msg("%s: tensor '%s' (%s, %llu elements) has data_offsets [%llu, %llu] that do not fit its size or "
                       "the file's %llu data bytes",
                       f->path, t->name, t->dtype, (unsigned long long)count, (unsigned long long)t->begin,
                       (unsigned long long)t->end, (unsigned long long)f->data_bytes);
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* The tensors must tile the data section exactly, as the safetensors format requires: no two
 * share bytes, no gaps, nothing after the last (Python's reader refuses the same files). */
static int check_layout(const st_file *f)
{
    const st_tensor **o = malloc((size_t)(f->n ? f->n : 1) * sizeof *o);
    if (!o) return err_msg("out of memory");
    for (int i = 0; i < f->n; i++) o[i] = &f->t[i];
    qsort(o, (size_t)f->n, sizeof *o, by_offset);
    uint64_t at = 0;
    int rc = 0;
    for (int i = 0; i < f->n && rc == 0; i++) {
        if (o[i]->begin < at)
            rc = err_msg("%s: tensors '%s' and '%s' share data bytes (offsets %llu..%llu)", f->path, o[i - 1]->name,
                         o[i]->name, (unsigned long long)o[i]->begin, (unsigned long long)at);
        else if (o[i]->begin > at)
            rc = err_msg("%s: bytes %llu..%llu of the data belong to no tensor (before '%s')", f->path,
                         (unsigned long long)at, (unsigned long long)o[i]->begin, o[i]->name);
        at = o[i]->end;
    }
    if (rc == 0 && at != f->data_bytes)
        rc = err_msg("%s: the tensors end at byte %llu of %llu data bytes: trailing bytes belong to no tensor", f->path,
                     (unsigned long long)at, (unsigned long long)f->data_bytes);
    free(o);
    return rc;
}

/* One "name": {...} entry of the header: the metadata (once) or a new tensor (a name once). */
static int parse_entry(jp *p, st_file *f, int *have_meta)
{
    char *key = jstring(p);
    if (!key || expect(p, ':') != 0) {
        free(key);
        return -1;
    }
    if (strcmp(key, "__metadata__") == 0) {
        free(key);
        if ((*have_meta)++) return jfail(p, "'__metadata__' given twice");
        return parse_meta(p, f);
    }
    if (st_find(f, key)) {
        err_msg("%s: tensor '%s' appears twice in the header", f->path, key);
        free(key);
        p->failed = 1;
        return -1;
    }
    st_tensor *nt = realloc(f->t, (size_t)(f->n + 1) * sizeof *nt);
    if (!nt) {
        free(key);
        return jfail(p, "out of memory");
    }
    f->t = nt;
    st_tensor *t = &f->t[f->n++];
    memset(t, 0, sizeof *t);
    t->name = key;
    if (parse_tensor(p, t) != 0) return -1;
    return check_tensor(f, t) == 0 ? 0 : (p->failed = 1, -1);
}

static int parse_header(st_file *f, const char *hdr, uint64_t hlen)
{
    jp p = {hdr, hdr + hlen, f->path, hdr, 0};
    if (expect(&p, '{') != 0) return CB_EFAIL;
    ws(&p);
    int first = 1, have_meta = 0;
    while (!(p.s < p.end && *p.s == '}')) {
        if (!first && expect(&p, ',') != 0) return CB_EFAIL;
        first = 0;
        if (parse_entry(&p, f, &have_meta) != 0) return CB_EFAIL;
        ws(&p);
    }
    return check_layout(f);
}

int st_open(st_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    FILE *fp = f->path ? file_open_read(path) : NULL;
    if (!fp) {
        st_close(f);
        return CB_EFAIL;
    }
    unsigned char h8[8];
    struct stat st;
    long size = fstat(fileno(fp), &st) == 0 ? (long)st.st_size : -1;
    int rc = CB_EFAIL;
    char *hdr = NULL;
    if (size < 8 || fread(h8, 1, 8, fp) != 8) {
        err_msg("%s: %ld bytes: too short for a safetensors file", path, size);
        goto out;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | h8[i];
    if (hlen < 2 || hlen > 100u * 1024 * 1024 || hlen > (uint64_t)size - 8) {
        err_msg("%s: header length %llu does not fit a %ld-byte file: truncated or not safetensors", path,
                (unsigned long long)hlen, size);
        goto out;
    }
    hdr = malloc(hlen);
    f->data_bytes = (uint64_t)size - 8 - hlen;
    f->data = malloc(f->data_bytes ? f->data_bytes : 1);
    if (!hdr || !f->data || fread(hdr, 1, hlen, fp) != hlen || fread(f->data, 1, f->data_bytes, fp) != f->data_bytes) {
        err_msg("%s: read error or out of memory", path);
        goto out;
    }
    rc = parse_header(f, hdr, hlen);
out:
    free(hdr);
    fclose(fp);
    if (rc != 0) st_close(f);
    return rc;
}

void st_close(st_file *f)
{
    if (!f) return;
    for (int i = 0; i < f->n; i++) free(f->t[i].name);
    for (int i = 0; i < f->nmeta; i++) free(f->meta_keys[i]), free(f->meta_vals[i]);
    free(f->t), free(f->meta_keys), free(f->meta_vals), free(f->data), free(f->path);
    memset(f, 0, sizeof *f);
}

const st_tensor *st_find(const st_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    return NULL;
}

const char *st_meta(const st_file *f, const char *key)
{
    for (int i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_vals[i];
    return NULL;
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) bits = sign;
        else { /* subnormal */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) man <<= 1, exp--;
            bits = sign | exp << 23 | (man & 0x3ff) << 13;
        }
    } else if (exp == 31) bits = sign | 0x7f800000u | man << 13;
    else bits = sign | (exp + 127 - 15) << 23 | man << 13;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Tensor `name` of f with exactly this shape (else one error line); its element count. */
static const st_tensor *tensor_shaped(const st_file *f, const char *name, const int64_t *shape, int ndim, size_t *count)
{
    const st_tensor *t = st_find(f, name);
    if (!t) {
        err_msg("%s: no tensor '%s'", f->path, name);
        return NULL;
    }
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char want[96] = "", got[96] = "";
        for (int i = 0; i < ndim; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "," : "", (long long)shape[i]);
        for (int i = 0; i < t->ndim; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? "," : "", (long long)t->shape[i]);
        err_msg("%s: tensor '%s' has shape [%s], the model needs [%s]", f->path, name, got, want);
        return NULL;
    }
    *count = 1;
    for (int i = 0; i < ndim; i++) *count *= (size_t)shape[i];
    if (strcmp(t->dtype, "F32") && strcmp(t->dtype, "BF16") && strcmp(t->dtype, "F16")) {
        err_msg("%s: tensor '%s' is %s; costbench reads F32, F16 and BF16", f->path, name, t->dtype);
        return NULL;
    }
    return t;
}

/* Element i of tensor t (F32, BF16 or F16) as a float (exact). */
static float elem_f32(const st_file *f, const st_tensor *t, size_t i)
{
    const unsigned char *src = f->data + t->begin;
    uint32_t bits;
    float x;
    switch (t->dtype[0] == 'F' && t->dtype[1] == '3' ? 4 : t->dtype[0] == 'B' ? 2 : 1) {
    case 4: memcpy(&x, src + 4 * i, 4); return x;
    case 2:
        bits = (uint32_t)(src[2 * i] | src[2 * i + 1] << 8) << 16;
        memcpy(&x, &bits, 4);
        return x;
    default: return half_to_float((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
    }
}

static int nonfinite_error(const st_file *f, const char *name, size_t bad, size_t count, size_t first, double v)
{
    return err_msg("%s: tensor '%s': %zu of %zu values are not finite (the first, element %zu, is %g)", f->path, name,
                   bad, count, first, v);
}

int st_read_f32(const st_file *f, const char *name, float *out, const int64_t *shape, int ndim)
{
    size_t count;
    const st_tensor *t = tensor_shaped(f, name, shape, ndim, &count);
    if (!t) return CB_EFAIL;
    if (!strcmp(t->dtype, "F32")) memcpy(out, f->data + t->begin, count * 4);
    else
        for (size_t i = 0; i < count; i++) out[i] = elem_f32(f, t, i);
    size_t bad = 0, first = 0;
    for (size_t i = count; i-- > 0;)
        if (!isfinite(out[i])) bad++, first = i;
    return bad ? nonfinite_error(f, name, bad, count, first, out[first]) : 0;
}

int st_read_bf16(const st_file *f, const char *name, uint16_t *out, const int64_t *shape, int ndim)
{
    size_t count;
    const st_tensor *t = tensor_shaped(f, name, shape, ndim, &count);
    if (!t) return CB_EFAIL;
    if (!strcmp(t->dtype, "BF16")) memcpy(out, f->data + t->begin, count * 2);
    else
        for (size_t i = 0; i < count; i++) out[i] = bf16_from_float(elem_f32(f, t, i));
    size_t bad = 0, first = 0;
    for (size_t i = count; i-- > 0;)
        if ((out[i] & 0x7f80u) == 0x7f80u) bad++, first = i;
    return bad ? nonfinite_error(f, name, bad, count, first, bf16_to_float(out[first])) : 0;
}

static void jput_str(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

int st_write(const char *path, const st_out *t, int n, const char *const *meta_kv, int nmeta)
{
    char *hdr = NULL;
    size_t hlen = 0;
    FILE *m = open_memstream(&hdr, &hlen);
    if (!m) return err_msg("out of memory");
    fputc('{', m);
    if (nmeta > 0) {
        fputs("\"__metadata__\":{", m);
        for (int i = 0; i < nmeta; i++) {
            if (i) fputc(',', m);
            jput_str(m, meta_kv[2 * i]);
            fputc(':', m);
            jput_str(m, meta_kv[2 * i + 1]);
        }
        fputc('}', m);
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        uint64_t count = 1;
        for (int d = 0; d < t[i].ndim; d++) count *= (uint64_t)t[i].shape[d];
        if (nmeta > 0 || i) fputc(',', m);
        jput_str(m, t[i].name);
        fprintf(m, ":{\"dtype\":\"%s\",\"shape\":[", t[i].bf16 ? "BF16" : "F32");
        for (int d = 0; d < t[i].ndim; d++) fprintf(m, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
        uint64_t bytes = (t[i].bf16 ? 2 : 4) * count;
        fprintf(m, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + bytes));
        off += bytes;
    }
    fputc('}', m);
    fclose(m);
    while (hlen % 8) { /* pad with spaces so that the data starts 8-byte aligned */
        char *h2 = realloc(hdr, hlen + 1);
        if (!h2) { free(hdr); return err_msg("out of memory"); }
        hdr = h2;
        hdr[hlen++] = ' ';
    }
    char tmp[CB_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        free(hdr);
        return err_msg("cannot write '%s': %s", path, strerror(errno));
    }
    unsigned char h8[8];
    for (int i = 0; i < 8; i++) h8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    fwrite(h8, 1, 8, fp);
    fwrite(hdr, 1, hlen, fp);
    free(hdr);
    for (int i = 0; i < n; i++) {
        size_t count = 1;
        for (int d = 0; d < t[i].ndim; d++) count *= (size_t)t[i].shape[d];
        fwrite(t[i].data, t[i].bf16 ? 2 : 4, count, fp);
    }
    int bad = ferror(fp);
    if (fclose(fp) != 0 || bad) {
        unlink(tmp);
        return err_msg("cannot write '%s': %s", path, strerror(errno));
    }
    return file_commit(tmp, path);
}
