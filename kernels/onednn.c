#include "onednn.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "bf16.h"
#include "matmul.h"

/* One cached primitive per (shape, packed) with its memory objects (handles set per call). */
typedef struct {
    onednn_shape s;
    int packed;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, bias, c;
    dnnl_memory_desc_t b_plain; /* B as the caller lays it out */
    dnnl_memory_desc_t b_prim;  /* B as the primitive wants it */
    const char *impl;
    int widened; /* 1: oneDNN has no bf16 matmul at this ISA: widened to fp32 (see widened_exec) */
} entry;

#define MAX_ENTRIES 512

static struct {
    pthread_mutex_t lock;
    int ready; /* 0 not tried, 1 ok, -1 failed */
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    entry e[MAX_ENTRIES];
    int n;
    char err[256];
    char version[32];
    float *wbuf[3]; /* widened_exec's fp32 copies of A and B, and its fp32 C for a bf16 C */
    size_t wcap[3];
} G = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The implementation name of the widened fallback (onednn_impl), as the CSVs and notes print it. */
#define WIDENED_IMPL "costbench:bf16-widened-sgemm"

static int fail(const char *what, dnnl_status_t st)
{
    const char *name = st == dnnl_out_of_memory        ? " (out of memory)"
                       : st == dnnl_invalid_arguments ? " (invalid arguments)"
                       : st == dnnl_unimplemented     ? " (unimplemented: no kernel for this at the ISA in effect)"
                       : st == dnnl_runtime_error     ? " (runtime error)"
                                                      : "";
    snprintf(G.err, sizeof G.err, "%s: oneDNN status %d%s", what, (int)st, name);
    return KERNEL_EBACKEND;
}

#define CHECK(call)                                             \
    do {                                                        \
        dnnl_status_t st_ = (call);                             \
        if (st_ != dnnl_success) return fail(#call, st_);       \
    } while (0)

static int init_locked(void)
{
    if (G.ready == 1) return KERNEL_OK;
    if (G.ready == -1) return KERNEL_EBACKEND;
    G.ready = -1;
    CHECK(dnnl_engine_create(&G.engine, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&G.stream, G.engine, dnnl_stream_default_flags));
    G.ready = 1;
    return KERNEL_OK;
}

const char *onednn_version(void)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(G.version, sizeof G.version, "%d.%d.%d", v->major, v->minor, v->patch);
    return G.version;
}

const char *onednn_isa(void)
{
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "unknown";
    }
}

int onednn_bf16_native(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx;
}

int onednn_bf16_widened(void)
{
    onednn_shape probe = {.ab = ONEDNN_BF16, .c = ONEDNN_F32, .n = 16, .m = 16, .k = 16, .lda = 16, .ldb = 16, .ldc = 16};
    const char *impl = onednn_impl(&probe);
    return impl && strcmp(impl, WIDENED_IMPL) == 0;
}

const char *onednn_last_error(void) { return G.err[0] ? G.err : "no error"; }

static int shape_ok(const onednn_shape *s)
{
    if (s->n <= 0 || s->m <= 0 || s->k <= 0) return 0;
    if ((s->ab != ONEDNN_F32 && s->ab != ONEDNN_BF16) || (s->c != ONEDNN_F32 && s->c != ONEDNN_BF16)) return 0;
    if (s->accumulate && s->c != ONEDNN_F32) return 0;
    /* op(A) is n x k: stored k x n when transposed */
    if (s->lda < (s->trans_a ? s->n : s->k) || s->ldb < (s->trans_b ? s->k : s->m) || s->ldc < s->m) return 0;
    return 1;
}

static dnnl_data_type_t dt(onednn_dtype d) { return d == ONEDNN_BF16 ? dnnl_bf16 : dnnl_f32; }

static int same_shape(const onednn_shape *a, const onednn_shape *b)
{
    return a->ab == b->ab && a->c == b->c && a->trans_a == b->trans_a && a->trans_b == b->trans_b && a->n == b->n &&
           a->m == b->m && a->k == b->k && a->lda == b->lda && a->ldb == b->ldb && a->ldc == b->ldc &&
           !!a->bias == !!b->bias && !!a->accumulate == !!b->accumulate;
}

static int md2(dnnl_memory_desc_t *md, int rows, int cols, dnnl_data_type_t t, int trans, int ld)
{
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {trans ? 1 : ld, trans ? ld : 1};
    CHECK(dnnl_memory_desc_init_by_strides(md, 2, dims, t, strides));
    return KERNEL_OK;
}

static int create_entry(entry *e, const onednn_shape *s, int packed)
{
    memset(e, 0, sizeof *e);
    e->s = *s;
    e->packed = packed;
    dnnl_memory_desc_t a_md, b_md, c_md, bias_md;
    int rc;
    if ((rc = md2(&a_md, s->n, s->k, dt(s->ab), s->trans_a, s->lda)) != KERNEL_OK) return rc;
    if ((rc = md2(&e->b_plain, s->k, s->m, dt(s->ab), s->trans_b, s->ldb)) != KERNEL_OK) return rc;
    if ((rc = md2(&c_md, s->n, s->m, dt(s->c), 0, s->ldc)) != KERNEL_OK) return rc;
    if ((rc = md2(&bias_md, 1, s->m, dnnl_f32, 0, s->m)) != KERNEL_OK) return rc;
    b_md = e->b_plain;
    if (packed) {
        dnnl_dims_t dims = {s->k, s->m};
        CHECK(dnnl_memory_desc_init_by_tag(&b_md, 2, dims, dt(s->ab), dnnl_format_tag_any));
    }
    dnnl_matmul_desc_t desc;
    CHECK(dnnl_matmul_desc_init(&desc, &a_md, &b_md, s->bias ? &bias_md : NULL, &c_md));
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    if (s->accumulate) {
        CHECK(dnnl_primitive_attr_create(&attr));
        CHECK(dnnl_post_ops_create(&po));
        CHECK(dnnl_post_ops_append_sum(po, 1.0f));
        CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
    }
    dnnl_status_t st = dnnl_primitive_desc_create(&e->pd, &desc, attr, G.engine, NULL);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (st == dnnl_unimplemented && s->ab == ONEDNN_BF16) {
        /* oneDNN 2.6 has no bf16 matmul below AVX-512: the fallback, B read in the caller's layout */
        e->widened = 1;
        e->impl = WIDENED_IMPL;
        e->b_prim = e->b_plain;
        return KERNEL_OK;
    }
    if (st != dnnl_success) return fail("dnnl_primitive_desc_create(matmul)", st);
    CHECK(dnnl_primitive_desc_query(e->pd, dnnl_query_impl_info_str, 0, &e->impl));
    e->b_prim = *dnnl_primitive_desc_query_md(e->pd, dnnl_query_weights_md, 0);
    CHECK(dnnl_primitive_create(&e->prim, e->pd));
    CHECK(dnnl_memory_create(&e->a, &a_md, G.engine, DNNL_MEMORY_NONE));
    CHECK(dnnl_memory_create(&e->b, &e->b_prim, G.engine, DNNL_MEMORY_NONE));
    CHECK(dnnl_memory_create(&e->c, &c_md, G.engine, DNNL_MEMORY_NONE));
    if (s->bias) CHECK(dnnl_memory_create(&e->bias, &bias_md, G.engine, DNNL_MEMORY_NONE));
    return KERNEL_OK;
}

/* The cached entry for (s, packed), created on first use; NULL (error set) on failure. */
static entry *lookup(const onednn_shape *s, int packed)
{
    if (init_locked() != KERNEL_OK) return NULL;
    for (int i = 0; i < G.n; i++)
        if (G.e[i].packed == packed && same_shape(&G.e[i].s, s)) return &G.e[i];
    if (G.n == MAX_ENTRIES) {
        snprintf(G.err, sizeof G.err, "more than %d distinct matmul shapes", MAX_ENTRIES);
        return NULL;
    }
    entry *e = &G.e[G.n];
    if (create_entry(e, s, packed) != KERNEL_OK) return NULL;
    G.n++;
    return e;
}

/* G.wbuf[i] grown to at least n floats; NULL (error set) when out of memory. */
static float *scratch(int i, size_t n)
{
    if (G.wcap[i] >= n) return G.wbuf[i];
    free(G.wbuf[i]);
    G.wbuf[i] = malloc(n * sizeof(float));
    G.wcap[i] = G.wbuf[i] ? n : 0;
    if (!G.wbuf[i]) snprintf(G.err, sizeof G.err, "out of memory for %zu floats of a widened bf16 operand", n);
    return G.wbuf[i];
}

/* A stored (rows x cols) bf16 block with row stride ld, widened exactly into dst (same stride). */
static void widen(float *dst, const bf16 *src, int rows, int cols, int ld)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * (size_t)cols > 65536)
    for (int r = 0; r < rows; r++) bf16_to_floats(dst + (size_t)r * ld, src + (size_t)r * ld, (size_t)cols);
}

/* The product where oneDNN 2.6 has no bf16 kernel (its ISA below AVX-512): both bf16 operands
 * widened to fp32, which is exact, and multiplied by OpenBLAS's sgemm (matmul_gemm); the bias and
 * the accumulation in fp32, a bf16 C rounded to nearest even from the fp32 result. The products of
 * two bf16 values are exact in fp32, so this computes what a bf16 kernel does up to the order of the
 * fp32 sums; its speed is sgemm's plus the two widenings, which onednn_impl names. */
static int widened_exec(const entry *e, const bf16 *A, const bf16 *B, const float *bias, void *C)
{
    const onednn_shape *s = &e->s;
    int ra = s->trans_a ? s->k : s->n, ca = s->trans_a ? s->n : s->k;
    int rb = s->trans_b ? s->m : s->k, cb = s->trans_b ? s->k : s->m;
    float *a = scratch(0, (size_t)ra * s->lda), *b = scratch(1, (size_t)rb * s->ldb);
    float *c = s->c == ONEDNN_F32 ? C : scratch(2, (size_t)s->n * s->m);
    if (!a || !b || !c) return KERNEL_EBACKEND;
    int ldc = s->c == ONEDNN_F32 ? s->ldc : s->m;
    widen(a, A, ra, ca, s->lda);
    widen(b, B, rb, cb, s->ldb);
    int rc = matmul_gemm(s->trans_a, s->trans_b, s->n, s->m, s->k, 1.0f, a, s->lda, b, s->ldb,
                         s->accumulate ? 1.0f : 0.0f, c, ldc);
    if (rc != KERNEL_OK) return rc;
    if (s->bias)
        for (int i = 0; i < s->n; i++)
            for (int j = 0; j < s->m; j++) c[(size_t)i * ldc + j] += bias[j];
    if (s->c == ONEDNN_BF16) bf16_from_floats_2d(C, (size_t)s->ldc, c, (size_t)ldc, s->n, s->m);
    return KERNEL_OK;
}

static int execute(entry *e, const void *A, const void *B, const float *bias, void *C)
{
    if (e->widened) return widened_exec(e, A, B, bias, C);
    CHECK(dnnl_memory_set_data_handle(e->a, (void *)(uintptr_t)A));
    CHECK(dnnl_memory_set_data_handle(e->b, (void *)(uintptr_t)B));
    CHECK(dnnl_memory_set_data_handle(e->c, C));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->c}, {0, NULL}};
    int nargs = 3;
    if (e->s.bias) {
        CHECK(dnnl_memory_set_data_handle(e->bias, (void *)(uintptr_t)bias));
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, e->bias};
    }
    CHECK(dnnl_primitive_execute(e->prim, G.stream, nargs, args));
    CHECK(dnnl_stream_wait(G.stream));
    return KERNEL_OK;
}

int onednn_gemm(const onednn_shape *s, const void *A, const void *B, const float *bias, void *C)
{
    if (!s || !A || !B || !C || (s->bias && !bias) || !shape_ok(s)) return KERNEL_EDIM;
    pthread_mutex_lock(&G.lock);
    entry *e = lookup(s, 0);
    int rc = e ? execute(e, A, B, bias, C) : KERNEL_EBACKEND;
    pthread_mutex_unlock(&G.lock);
    return rc;
}

static const char *impl_of(const onednn_shape *s, int packed)
{
    if (!s || !shape_ok(s)) return NULL;
    pthread_mutex_lock(&G.lock);
    entry *e = lookup(s, packed);
    pthread_mutex_unlock(&G.lock);
    return e ? e->impl : NULL;
}

const char *onednn_impl(const onednn_shape *s) { return impl_of(s, 0); }
const char *onednn_impl_packed(const onednn_shape *s) { return impl_of(s, 1); }

static int reorder(const dnnl_memory_desc_t *from, const void *src, const dnnl_memory_desc_t *to, void *dst)
{
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t ms, md;
    CHECK(dnnl_reorder_primitive_desc_create(&pd, from, G.engine, to, G.engine, NULL));
    dnnl_status_t st = dnnl_primitive_create(&prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) return fail("dnnl_primitive_create(reorder)", st);
    CHECK(dnnl_memory_create(&ms, from, G.engine, (void *)(uintptr_t)src));
    CHECK(dnnl_memory_create(&md, to, G.engine, dst));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, md}};
    st = dnnl_primitive_execute(prim, G.stream, 2, args);
    if (st == dnnl_success) st = dnnl_stream_wait(G.stream);
    dnnl_memory_destroy(ms);
    dnnl_memory_destroy(md);
    dnnl_primitive_destroy(prim);
    return st == dnnl_success ? KERNEL_OK : fail("reorder", st);
}

/* Reorders B into p for the primitive of shape s: from bf16 in the caller's layout (read in place
 * instead when that is the layout the primitive wants), or from fp32 (from_f32: one reorder
 * converts and lays out). */
static int pack(onednn_packed *p, const onednn_shape *s, const void *B, int from_f32)
{
    pthread_mutex_lock(&G.lock);
    int rc = KERNEL_EBACKEND;
    entry *e = lookup(s, 1);
    if (!e) goto out;
    if (p->data && !same_shape(&p->shape, s)) onednn_packed_free(p);
    p->shape = *s;
    p->blocked = !dnnl_memory_desc_equal(&e->b_plain, &e->b_prim);
    p->plain = p->blocked || from_f32 ? NULL : B;
    if (p->plain) {
        rc = KERNEL_OK;
        goto out;
    }
    if (!p->data) {
        p->bytes = dnnl_memory_desc_get_size(&e->b_prim);
        p->data = aligned_alloc(64, (p->bytes + 63) / 64 * 64);
        if (!p->data) {
            snprintf(G.err, sizeof G.err, "out of memory for %zu bytes of packed weights", p->bytes);
            goto out;
        }
    }
    dnnl_memory_desc_t from = e->b_plain;
    if (from_f32 && (rc = md2(&from, s->k, s->m, dnnl_f32, s->trans_b, s->ldb)) != KERNEL_OK) goto out;
    rc = reorder(&from, B, &e->b_prim, p->data);
out:
    pthread_mutex_unlock(&G.lock);
    return rc;
}

int onednn_pack(onednn_packed *p, const onednn_shape *s, const void *B)
{
    if (!p || !s || !B || !shape_ok(s)) return KERNEL_EDIM;
    return pack(p, s, B, 0);
}

int onednn_pack_f32(onednn_packed *p, const onednn_shape *s, const float *B)
{
    if (!p || !s || !B || !shape_ok(s) || s->ab != ONEDNN_BF16) return KERNEL_EDIM;
    return pack(p, s, B, 1);
}

int onednn_gemm_packed(const onednn_shape *s, const void *A, const onednn_packed *p, const float *bias, void *C)
{
    if (!s || !A || !p || !C || (s->bias && !bias) || !shape_ok(s) || !same_shape(&p->shape, s)) return KERNEL_EDIM;
    if (!p->blocked && p->plain) return onednn_gemm(s, A, p->plain, bias, C);
    pthread_mutex_lock(&G.lock);
    entry *e = lookup(s, 1);
    int rc = e ? execute(e, A, p->data, bias, C) : KERNEL_EBACKEND;
    pthread_mutex_unlock(&G.lock);
    return rc;
}

void onednn_packed_free(onednn_packed *p)
{
    if (!p) return;
    free(p->data);
    memset(p, 0, sizeof *p);
}

static double load(const void *base, onednn_dtype t, size_t i)
{
    return t == ONEDNN_BF16 ? (double)bf16_to_float(((const bf16 *)base)[i]) : (double)((const float *)base)[i];
}

void onednn_gemm_ref(const onednn_shape *s, const void *A, const void *B, const float *bias, double *C)
{
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < s->m; j++) {
            double acc = 0;
            for (int p = 0; p < s->k; p++) {
                size_t ia = s->trans_a ? (size_t)p * s->lda + i : (size_t)i * s->lda + p;
                size_t ib = s->trans_b ? (size_t)j * s->ldb + p : (size_t)p * s->ldb + j;
                acc += load(A, s->ab, ia) * load(B, s->ab, ib);
            }
            if (s->bias) acc += bias[j];
            C[(size_t)i * s->ldc + j] = s->accumulate ? C[(size_t)i * s->ldc + j] + acc : acc;
        }
}
