/* bf16 and oneDNN: onednn_gemm against its double-precision reference for every operand type,
 * transpose, epilogue and layout; NaN propagation and refused shapes; `costbench matmul --dtype
 * bf16` on the command line, also with oneDNN capped by DNNL_MAX_CPU_ISA; the bf16 matrix peak. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench/peak.h"
#include "../common/csvio.h"
#include "../common/machine.h"
#include "../kernels/bf16.h"
#include "../kernels/onednn.h"
#include "check.h"

static char g_out[65536], g_err[16384];

static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

/* ---------------------------------------------------------------- onednn_gemm vs its reference */

/* Operands for one shape, with room for its leading dimensions: A, B and C as the shape's types,
 * their absolute values (for the error bound), the bias, and the reference. */
typedef struct {
    onednn_shape s;
    size_t na, nb, nc;
    void *A, *B, *C;
    float *bias, *Af, *Bf; /* fp32 values of A and B (before rounding) */
    double *ref, *mag;
} gemm_case;

static size_t rows_a(const onednn_shape *s) { return (size_t)(s->trans_a ? s->k : s->n); }
static size_t rows_b(const onednn_shape *s) { return (size_t)(s->trans_b ? s->m : s->k); }
static size_t elt(onednn_dtype t) { return t == ONEDNN_BF16 ? 2 : 4; }

static void store(void *base, onednn_dtype t, size_t i, float v)
{
    if (t == ONEDNN_BF16) ((bf16 *)base)[i] = bf16_from_float(v);
    else ((float *)base)[i] = v;
}

static double load(const void *base, onednn_dtype t, size_t i)
{
    return t == ONEDNN_BF16 ? bf16_to_float(((const bf16 *)base)[i]) : ((const float *)base)[i];
}

static int case_init(gemm_case *g, const onednn_shape *s, unsigned seed)
{
    memset(g, 0, sizeof *g);
    g->s = *s;
    g->na = rows_a(s) * (size_t)s->lda, g->nb = rows_b(s) * (size_t)s->ldb, g->nc = (size_t)s->n * s->ldc;
    g->A = malloc(g->na * elt(s->ab)), g->B = malloc(g->nb * elt(s->ab)), g->C = malloc(g->nc * elt(s->c));
    g->Af = malloc(g->na * sizeof(float)), g->Bf = malloc(g->nb * sizeof(float)),
    g->bias = malloc((size_t)s->m * sizeof(float));
    g->ref = malloc(g->nc * sizeof(double)), g->mag = malloc(g->nc * sizeof(double));
    if (!g->A || !g->B || !g->C || !g->Af || !g->Bf || !g->bias || !g->ref || !g->mag) return 0;
    rand_fill(g->Af, g->na, &seed);
    rand_fill(g->Bf, g->nb, &seed);
    rand_fill(g->bias, (size_t)s->m, &seed);
    for (size_t i = 0; i < g->na; i++) store(g->A, s->ab, i, g->Af[i]);
    for (size_t i = 0; i < g->nb; i++) store(g->B, s->ab, i, g->Bf[i]);
    float *c0 = malloc(g->nc * sizeof(float));
    if (!c0) return 0;
    rand_fill(c0, g->nc, &seed);
    for (size_t i = 0; i < g->nc; i++) store(g->C, s->c, i, c0[i]);
    free(c0);
    return 1;
}

static void case_free(gemm_case *g)
{
    free(g->A), free(g->B), free(g->C), free(g->Af), free(g->Bf), free(g->bias), free(g->ref), free(g->mag);
}

/* The reference from the operands as stored (bf16: the rounded inputs) and, for the bound, the
 * same product of absolute values. */
static void case_reference(gemm_case *g)
{
    const onednn_shape *s = &g->s;
    for (size_t i = 0; i < g->nc; i++) g->ref[i] = load(g->C, s->c, i);
    onednn_gemm_ref(s, g->A, g->B, g->bias, g->ref);
    void *Aa = malloc(g->na * elt(s->ab)), *Ba = malloc(g->nb * elt(s->ab));
    float *bias_a = malloc((size_t)s->m * sizeof(float));
    if (!Aa || !Ba || !bias_a) {
        CHECK(0, "out of memory");
        free(Aa), free(Ba), free(bias_a);
        return;
    }
    for (size_t i = 0; i < g->na; i++) store(Aa, s->ab, i, (float)fabs(load(g->A, s->ab, i)));
    for (size_t i = 0; i < g->nb; i++) store(Ba, s->ab, i, (float)fabs(load(g->B, s->ab, i)));
    for (int j = 0; j < s->m; j++) bias_a[j] = fabsf(g->bias[j]);
    for (size_t i = 0; i < g->nc; i++) g->mag[i] = fabs(load(g->C, s->c, i));
    onednn_gemm_ref(s, Aa, Ba, bias_a, g->mag); /* |C|'s old values count only when accumulating */
    free(Aa), free(Ba), free(bias_a);
}

/* |C - ref| <= k 2^-23 sum|a b| (+ half a bf16 ulp of |ref| for a bf16 C) + 1e-6 over the n x m
 * block; prints the worst element and the max abs/rel errors when it fails. Returns 1 when close. */
static int gemm_close(const char *what, const gemm_case *g, const void *C)
{
    const onednn_shape *s = &g->s;
    double max_abs = 0, max_rel = 0, worst_excess = -INFINITY;
    int bad = 0, wi = 0, wj = 0;
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < s->m; j++) {
            size_t x = (size_t)i * s->ldc + j;
            double got = load(C, s->c, x), r = g->ref[x], e = fabs(got - r);
            double tol = s->k * 0x1p-23 * g->mag[x] + (s->c == ONEDNN_BF16 ? 0x1p-8 * fabs(r) : 0) + 1e-6;
            max_abs = fmax(max_abs, e);
            if (r != 0) max_rel = fmax(max_rel, e / fabs(r));
            if (!(e <= tol) && (!isfinite(got) || e - tol > worst_excess))
                worst_excess = isfinite(got) ? e - tol : INFINITY, wi = i, wj = j;
            bad += !(e <= tol);
        }
    if (bad)
        printf("    %s: %d of %d elements beyond k 2^-23 sum|ab|; worst C[%d][%d] = %.9g vs %.9g; max abs %.3e, max "
               "rel %.3e\n",
               what, bad, s->n * s->m, wi, wj, load(C, s->c, (size_t)wi * s->ldc + wj),
               g->ref[(size_t)wi * s->ldc + wj], max_abs, max_rel);
    return bad == 0;
}

/* Every element of C outside the n x m block (the leading-dimension padding) kept its value. */
static int padding_kept(const gemm_case *g, const void *C, const void *C0)
{
    const onednn_shape *s = &g->s;
    for (int i = 0; i < s->n; i++)
        for (int j = s->m; j < s->ldc; j++) {
            size_t x = (size_t)i * s->ldc + j;
            if (memcmp((const char *)C + x * elt(s->c), (const char *)C0 + x * elt(s->c), elt(s->c)) != 0) return 0;
        }
    return 1;
}

static void describe(char *buf, size_t n, const onednn_shape *s, const char *how)
{
    snprintf(buf, n, "%s %s->%s n=%d m=%d k=%d ta=%d tb=%d lda=%d ldb=%d ldc=%d bias=%d acc=%d", how,
             s->ab == ONEDNN_BF16 ? "bf16" : "fp32", s->c == ONEDNN_BF16 ? "bf16" : "fp32", s->n, s->m, s->k,
             s->trans_a, s->trans_b, s->lda, s->ldb, s->ldc, s->bias, s->accumulate);
}

/* One shape through onednn_gemm (packed = 0) or onednn_pack + onednn_gemm_packed (packed = 1). */
static void check_shape(const onednn_shape *s, int packed, unsigned seed)
{
    gemm_case g;
    char what[200];
    describe(what, sizeof what, s, packed ? "packed" : "plain");
    if (!case_init(&g, s, seed)) {
        CHECK(0, "%s: out of memory", what);
        case_free(&g);
        return;
    }
    case_reference(&g);
    void *C0 = malloc(g.nc * elt(s->c));
    if (C0) memcpy(C0, g.C, g.nc * elt(s->c));
    int rc;
    if (packed) {
        onednn_packed p = {0};
        rc = onednn_pack(&p, s, g.B);
        if (rc == KERNEL_OK) rc = onednn_gemm_packed(s, g.A, &p, g.bias, g.C);
        onednn_packed_free(&p);
    } else {
        rc = onednn_gemm(s, g.A, g.B, g.bias, g.C);
    }
    CHECK(rc == KERNEL_OK, "%s: returned %d (%s)", what, rc, onednn_last_error());
    if (rc == KERNEL_OK) {
        CHECK(gemm_close(what, &g, g.C), "%s: beyond the reference's bound", what);
        CHECK(!C0 || padding_kept(&g, g.C, C0), "%s: wrote C's padding beyond m", what);
    }
    free(C0);
    case_free(&g);
}

static onednn_shape shape(onednn_dtype ab, onednn_dtype c, int ta, int tb, int n, int m, int k, int pad)
{
    onednn_shape s = {.ab = ab, .c = c, .trans_a = ta, .trans_b = tb, .n = n, .m = m, .k = k};
    s.lda = (ta ? n : k) + pad, s.ldb = (tb ? k : m) + pad, s.ldc = m + pad;
    return s;
}

static void test_onednn_gemm_matches_reference(void)
{
    const onednn_dtype types[2] = {ONEDNN_F32, ONEDNN_BF16};
    unsigned seed = 11;
    for (int t = 0; t < 2; t++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                /* odd sizes, minimal leading dimensions, plain product */
                onednn_shape s = shape(types[t], ONEDNN_F32, ta, tb, 17, 33, 65, 0);
                check_shape(&s, 0, seed++);
                /* leading dimensions larger than the minimum, bias */
                s = shape(types[t], ONEDNN_F32, ta, tb, 17, 33, 65, 7);
                s.bias = 1;
                check_shape(&s, 0, seed++);
                /* accumulate into C, with bias */
                s.accumulate = 1;
                check_shape(&s, 0, seed++);
                /* a bf16 result (bias applied in fp32 before rounding); from fp32 operands oneDNN
                 * 2.6 has no kernel: refused as the backend's limit, never a wrong result */
                s = shape(types[t], ONEDNN_BF16, ta, tb, 17, 33, 65, 3);
                s.bias = 1;
                if (types[t] == ONEDNN_BF16 || onednn_impl(&s)) check_shape(&s, 0, seed++);
                else CHECK(strstr(onednn_last_error(), "unimplemented"), "fp32 -> bf16: %s", onednn_last_error());
            }
    /* a product long enough for the accumulation order to matter */
    onednn_shape s = shape(ONEDNN_BF16, ONEDNN_F32, 0, 1, 64, 96, 2048, 0);
    check_shape(&s, 0, seed++);
    onednn_shape s2 = shape(ONEDNN_BF16, ONEDNN_F32, 0, 1, 17, 33, 65, 0);
    CHECK(onednn_impl(&s2) != NULL, "onednn_impl: NULL (%s)", onednn_last_error());
    CHECK(onednn_impl_packed(&s2) != NULL, "onednn_impl_packed: NULL (%s)", onednn_last_error());
}

static void test_onednn_packed_matches_reference(void)
{
    const onednn_dtype types[2] = {ONEDNN_F32, ONEDNN_BF16};
    unsigned seed = 101;
    for (int t = 0; t < 2; t++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                onednn_shape s = shape(types[t], ONEDNN_F32, ta, tb, 17, 33, 65, tb ? 5 : 0);
                check_shape(&s, 1, seed++);
                s = shape(types[t], ONEDNN_F32, ta, tb, 64, 256, 128, 0);
                s.bias = 1;
                check_shape(&s, 1, seed++);
            }
    /* a packed buffer reused for the same shape picks up B's new values */
    onednn_shape s = shape(ONEDNN_BF16, ONEDNN_F32, 0, 1, 32, 64, 64, 0);
    gemm_case g;
    if (!case_init(&g, &s, 7)) {
        CHECK(0, "out of memory");
        case_free(&g);
        return;
    }
    onednn_packed p = {0};
    int rc = onednn_pack(&p, &s, g.B);
    for (size_t i = 0; i < g.nb; i++) ((bf16 *)g.B)[i] = bf16_from_float(-2.0f * g.Bf[i]);
    case_reference(&g);
    if (rc == KERNEL_OK) rc = onednn_pack(&p, &s, g.B);
    if (rc == KERNEL_OK) rc = onednn_gemm_packed(&s, g.A, &p, NULL, g.C);
    CHECK(rc == KERNEL_OK, "repack: returned %d (%s)", rc, onednn_last_error());
    CHECK(rc != KERNEL_OK || gemm_close("repacked B", &g, g.C), "a repacked B gave the old B's product");
    onednn_packed_free(&p);
    onednn_packed_free(&p); /* twice, and on a zeroed struct: harmless */
    case_free(&g);
}

/* The comparator fails a product with one perturbed element. */
static void test_onednn_comparator_catches_an_error(void)
{
    onednn_shape s = shape(ONEDNN_BF16, ONEDNN_F32, 0, 0, 17, 33, 65, 0);
    gemm_case g;
    if (!case_init(&g, &s, 5)) {
        CHECK(0, "out of memory");
        case_free(&g);
        return;
    }
    case_reference(&g);
    CHECK(onednn_gemm(&s, g.A, g.B, NULL, g.C) == KERNEL_OK, "gemm failed: %s", onednn_last_error());
    CHECK(gemm_close("unperturbed", &g, g.C), "the unperturbed product fails");
    ((float *)g.C)[5 * s.ldc + 7] += 1e-3f * (float)(1.0 + g.mag[5 * s.ldc + 7]);
    printf("    (a failure report is expected next)\n");
    CHECK(!gemm_close("perturbed", &g, g.C), "a product with an error of 1e-3 x sum|ab| passed the comparator");
    case_free(&g);
}

static void test_onednn_nan_propagates(void)
{
    const onednn_dtype types[2] = {ONEDNN_F32, ONEDNN_BF16};
    for (int t = 0; t < 2; t++)
        for (int packed = 0; packed < 2; packed++) {
            onednn_shape s = shape(types[t], ONEDNN_F32, 0, 1, 8, 32, 64, 0);
            gemm_case g;
            if (!case_init(&g, &s, 3)) {
                CHECK(0, "out of memory");
                case_free(&g);
                return;
            }
            store(g.A, s.ab, 3 * (size_t)s.lda + 17, NAN);
            onednn_packed p = {0};
            int rc = packed ? onednn_pack(&p, &s, g.B) : KERNEL_OK;
            if (rc == KERNEL_OK)
                rc = packed ? onednn_gemm_packed(&s, g.A, &p, NULL, g.C) : onednn_gemm(&s, g.A, g.B, NULL, g.C);
            onednn_packed_free(&p);
            CHECK(rc == KERNEL_OK, "NaN case: returned %d (%s)", rc, onednn_last_error());
            int row_nan = 1, others_finite = 1;
            for (int i = 0; i < s.n; i++)
                for (int j = 0; j < s.m; j++) {
                    float v = ((float *)g.C)[(size_t)i * s.ldc + j];
                    if (i == 3) row_nan &= isnan(v);
                    else others_finite &= isfinite(v);
                }
            CHECK(row_nan, "%s %s: a NaN in A[3][17] did not reach every element of C's row 3", t ? "bf16" : "fp32",
                  packed ? "packed" : "plain");
            CHECK(others_finite, "%s %s: rows without the NaN are not finite", t ? "bf16" : "fp32",
                  packed ? "packed" : "plain");
            case_free(&g);
        }
}

static void test_onednn_bad_shapes(void)
{
    float A[64] = {0}, B[64] = {0}, C[64], bias[8] = {0};
    onednn_shape good = shape(ONEDNN_F32, ONEDNN_F32, 0, 0, 4, 4, 4, 0);
    onednn_shape bad[9];
    for (int i = 0; i < 9; i++) bad[i] = good;
    bad[0].n = 0;
    bad[1].m = -3;
    bad[2].k = 0;
    bad[3].lda = 3;            /* op(A) is 4 x 4: lda >= 4 */
    bad[4].ldb = 2;
    bad[5].ldc = 3;
    bad[6].trans_a = 1, bad[6].n = 8, bad[6].lda = 4; /* A stored k x n: lda >= n */
    bad[7].c = ONEDNN_BF16, bad[7].accumulate = 1;    /* accumulation into a bf16 C is refused */
    bad[8].ab = (onednn_dtype)7;
    for (int i = 0; i < 9; i++) {
        for (int j = 0; j < 64; j++) C[j] = 42.0f;
        CHECK(onednn_gemm(&bad[i], A, B, NULL, C) == KERNEL_EDIM, "bad shape %d: not KERNEL_EDIM", i);
        onednn_packed p = {0};
        CHECK(onednn_pack(&p, &bad[i], B) == KERNEL_EDIM, "bad shape %d: onednn_pack not KERNEL_EDIM", i);
        CHECK(onednn_gemm_packed(&bad[i], A, &p, NULL, C) == KERNEL_EDIM,
              "bad shape %d: onednn_gemm_packed not KERNEL_EDIM", i);
        CHECK(onednn_impl(&bad[i]) == NULL, "bad shape %d: onednn_impl named a kernel", i);
        int kept = 1;
        for (int j = 0; j < 64; j++) kept &= C[j] == 42.0f;
        CHECK(kept, "bad shape %d: C was written", i);
    }
    CHECK(onednn_gemm(&good, NULL, B, NULL, C) == KERNEL_EDIM, "NULL A accepted");
    CHECK(onednn_gemm(&good, A, NULL, NULL, C) == KERNEL_EDIM, "NULL B accepted");
    CHECK(onednn_gemm(&good, A, B, NULL, NULL) == KERNEL_EDIM, "NULL C accepted");
    onednn_shape with_bias = good;
    with_bias.bias = 1;
    CHECK(onednn_gemm(&with_bias, A, B, NULL, C) == KERNEL_EDIM, "a bias shape without a bias accepted");
    CHECK(onednn_gemm(&with_bias, A, B, bias, C) == KERNEL_OK, "the good shape failed: %s", onednn_last_error());
    onednn_packed p = {0};
    onednn_shape other = good;
    other.m = 8, other.ldb = 8, other.ldc = 8;
    CHECK(onednn_pack(&p, &good, B) == KERNEL_OK, "pack failed: %s", onednn_last_error());
    CHECK(onednn_gemm_packed(&other, A, &p, NULL, C) == KERNEL_EDIM, "a B packed for another shape accepted");
    onednn_packed_free(&p);
}

/* ---------------------------------------------------------------- costbench matmul --dtype bf16 */

/* Loads csv and checks that every row has the column values given (NULL: any non-empty value). */
static int csv_rows(table *t, const char *csv)
{
    if (table_load(t, csv) != 0) return 0;
    const char *cols[] = {"dtype", "backend", "impl", "isa", "pack_ms", "pct_of_peak", "gflops_median", NULL};
    for (int i = 0; cols[i]; i++)
        if (table_col(t, cols[i], 0) < 0) {
            printf("    %s: no column '%s'\n", csv, cols[i]);
            table_free(t);
            return 0;
        }
    return 1;
}

static const char *cell(const table *t, int row, const char *col) { return table_cell(t, row, table_col(t, col, 0)); }

/* The tiny sweep of these tests: 2 shapes, a millisecond of sampling each, peaks given. */
#define TINY_SWEEP "matmul", "--n", "32,48", "--k", "64", "--min-time", "0.005", "--min-samples", "2"

static void test_bf16_matmul_cli_columns(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char csv[128], png[128];
    snprintf(csv, sizeof csv, "%s/mm.csv", dir);
    snprintf(png, sizeof png, "%s/mm.png", dir);
    const char *args[] = {TINY_SWEEP, "--dtype", "bf16", "--peak-gflops", "1000", "--csv", csv, NULL};
    int rc = run(args);
    CHECK(rc == 0, "matmul --dtype bf16: exit %d: %s", rc, g_err);
    CHECK(strstr(g_out, "oneDNN ") && strstr(g_out, " at ISA "), "no oneDNN ISA line: %s", g_out);
    CHECK(strstr(g_out, "once per optimizer step"), "no line on the weights' reorder: %s", g_out);
    table t;
    if (csv_rows(&t, csv)) {
        CHECK(t.nrows == 2, "rows %d, expected 2", t.nrows);
        for (int i = 0; i < t.nrows; i++) {
            CHECK(strcmp(cell(&t, i, "dtype"), "bf16") == 0 && strcmp(cell(&t, i, "backend"), "onednn") == 0,
                  "row %d: dtype '%s' backend '%s'", i, cell(&t, i, "dtype"), cell(&t, i, "backend"));
            CHECK(*cell(&t, i, "impl") && *cell(&t, i, "isa"), "row %d: impl '%s' isa '%s'", i, cell(&t, i, "impl"),
                  cell(&t, i, "isa"));
            double pct = strtod(cell(&t, i, "pct_of_peak"), NULL), pack = strtod(cell(&t, i, "pack_ms"), NULL);
            CHECK(isfinite(pct) && pct > 0, "row %d: pct_of_peak '%s'", i, cell(&t, i, "pct_of_peak"));
            CHECK(isfinite(pack) && pack > 0, "row %d: pack_ms '%s'", i, cell(&t, i, "pack_ms"));
        }
        table_free(&t);
    } else {
        CHECK(0, "bf16 matmul CSV missing or without its columns");
    }
    /* both dtypes, each against its own peak, and a plot of both */
    const char *both[] = {TINY_SWEEP, "--dtype", "fp32,bf16", "--peak-gflops", "500,1000", "--csv", csv,
                          "--plot",   png,       NULL};
    rc = run(both);
    CHECK(rc == 0, "matmul --dtype fp32,bf16: exit %d: %s", rc, g_err);
    CHECK(strstr(g_out, "pct_of_peak (fp32 rows): against --peak-gflops 500.0") &&
              strstr(g_out, "pct_of_peak (bf16 rows): against --peak-gflops 1000.0"),
          "the peaks of each precision are not named: %s", g_out);
    if (csv_rows(&t, csv)) {
        CHECK(t.nrows == 4, "rows %d, expected 4", t.nrows);
        for (int i = 0; i < t.nrows; i++) {
            int bf = strcmp(cell(&t, i, "dtype"), "bf16") == 0;
            double gf = strtod(cell(&t, i, "gflops_median"), NULL), pct = strtod(cell(&t, i, "pct_of_peak"), NULL);
            CHECK(fabs(pct - 100.0 * gf / (bf ? 1000 : 500)) <= 1e-6 * pct,
                  "row %d: pct_of_peak %g not against its dtype's peak", i, pct);
            CHECK(bf || (strcmp(cell(&t, i, "backend"), "openblas") == 0 &&
                         strcmp(cell(&t, i, "impl"), "cblas_sgemm") == 0 && *cell(&t, i, "pack_ms") == '\0'),
                  "fp32 row %d: backend '%s' impl '%s' pack_ms '%s'", i, cell(&t, i, "backend"), cell(&t, i, "impl"),
                  cell(&t, i, "pack_ms"));
        }
        table_free(&t);
    }
    char sig[8] = {0};
    FILE *f = fopen(png, "rb");
    if (f) {
        CHECK(fread(sig, 1, 8, f) == 8, "short PNG");
        fclose(f);
    }
    CHECK(memcmp(sig, "\x89PNG\r\n\x1a\n", 8) == 0, "no PNG written at %s", png);
    rm_tree(dir);
}

static void test_bf16_matmul_cli_refuses(void)
{
    static const struct {
        const char *args[8];
        const char *expect;
    } cases[] = {
        {{"matmul", "--dtype", "bf16", "--backend", "openblas"}, "OpenBLAS has no bf16 matmul"},
        {{"matmul", "--dtype", "fp16"}, "flag '--dtype': expected fp32, bf16"},
        {{"matmul", "--dtype", "bf16,bf16"}, "given twice"},
        {{"matmul", "--backend", "cuda"}, "flag '--backend': expected openblas or onednn"},
        {{"matmul", "--dtype", "fp32,bf16", "--peak-gflops", "500"}, "one per --dtype entry"},
        {{"matmul", "--dtype", "bf16", "--peak-gflops", "0.5"}, "flag '--peak-gflops'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run(cases[i].args);
        CHECK(rc == 2, "case %zu: exit %d, expected 2 (stderr: %s)", i, rc, g_err);
        int lines = 0;
        for (const char *p = g_err; *p; p++) lines += *p == '\n';
        CHECK(strncmp(g_err, "error: ", 7) == 0 && strstr(g_err, cases[i].expect) && lines == 1,
              "case %zu: expected one error line with '%s': %s", i, cases[i].expect, g_err);
    }
}

/* The tiny bf16 sweep under DNNL_MAX_CPU_ISA=cap: exit status, stdout and the CSV's isa/impl. */
static int capped_run(const char *cap, const char *csv, char *isa, char *impl, size_t n)
{
    const char *args[] = {TINY_SWEEP, "--dtype", "bf16", "--peak-gflops", "1000", "--csv", csv, NULL};
    setenv("DNNL_MAX_CPU_ISA", cap, 1);
    unlink(csv);
    int rc = run(args);
    unsetenv("DNNL_MAX_CPU_ISA");
    *isa = *impl = '\0';
    table t;
    if (rc == 0 && table_load(&t, csv) == 0) {
        if (t.nrows > 0 && table_col(&t, "isa", 0) >= 0) {
            snprintf(isa, n, "%s", cell(&t, 0, "isa"));
            snprintf(impl, n, "%s", cell(&t, 0, "impl"));
        }
        table_free(&t);
    }
    return rc;
}

static void test_bf16_matmul_capped_isa(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char csv[128], isa[64], impl[64];
    snprintf(csv, sizeof csv, "%s/mm.csv", dir);
    int avx512 = machine_has_cpu_flag("avx512f") && machine_has_cpu_flag("avx512bw");
    /* AVX512_CORE_BF16: vdpbf16ps kernels (or lower where the CPU lacks them), never AMX */
    int rc = capped_run("AVX512_CORE_BF16", csv, isa, impl, sizeof isa);
    if (avx512) {
        CHECK(rc == 0, "DNNL_MAX_CPU_ISA=AVX512_CORE_BF16: exit %d: %s", rc, g_err);
        CHECK(*isa && !strstr(isa, "amx") && !strstr(impl, "amx"), "capped at AVX512_CORE_BF16 but isa '%s' impl '%s'",
              isa, impl);
        CHECK(strstr(g_out, "DNNL_MAX_CPU_ISA=AVX512_CORE_BF16 caps it"), "the cap is not named: %s", g_out);
        CHECK(!machine_has_cpu_flag("avx512_bf16") || strcmp(isa, "avx512_core_bf16") == 0,
              "isa '%s' on a CPU with AVX512_BF16", isa);
    }
    /* AVX512_CORE: no bf16 instructions; oneDNN 2.6 still runs bf16 (gemm:jit, converting to
     * fp32), and the output says the rows measure that emulation */
    rc = capped_run("AVX512_CORE", csv, isa, impl, sizeof isa);
    if (avx512) {
        CHECK(rc == 0, "DNNL_MAX_CPU_ISA=AVX512_CORE: exit %d: %s", rc, g_err);
        CHECK(strcmp(isa, "avx512_core") == 0 && !strstr(impl, "amx") && !strstr(impl, "bf16"),
              "AVX512_CORE: isa '%s' impl '%s'", isa, impl);
        CHECK(strstr(g_out, "bf16 without bf16 instructions"), "the emulation is not said: %s", g_out);
    }
    /* AVX2: oneDNN 2.6 has no bf16 matmul there; the rows run on costbench's widened fallback
     * (bf16 widened to fp32, OpenBLAS sgemm), which the impl column and a # line name */
    rc = capped_run("AVX2", csv, isa, impl, sizeof isa);
    CHECK(rc == 0, "DNNL_MAX_CPU_ISA=AVX2: exit %d: %s", rc, g_err);
    CHECK(strcmp(isa, "avx2") == 0 && strcmp(impl, "costbench:bf16-widened-sgemm") == 0, "AVX2: isa '%s' impl '%s'",
          isa, impl);
    CHECK(strstr(g_out, "bf16 without bf16 instructions") && strstr(g_out, "widens bf16 to fp32"),
          "AVX2: the widened emulation is not said: %s", g_out);
    CHECK(getenv("DNNL_MAX_CPU_ISA") == NULL, "DNNL_MAX_CPU_ISA left set");
    rm_tree(dir);
}

static void test_bf16_matmul_transformer_shapes(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char csv[128];
    snprintf(csv, sizeof csv, "%s/tr.csv", dir);
    const char *args[] = {"matmul", "--model", "pythia-14m", "--seq", "64", "--min-time", "0.005", "--min-samples", "2",
                          "--dtype", "bf16", "--peak-gflops", "1000", "--csv", csv, NULL};
    int rc = run(args);
    CHECK(rc == 0, "matmul --shapes transformer --dtype bf16: exit %d: %s", rc, g_err);
    CHECK(strstr(g_out, "one training step's matmuls in bf16"), "no bf16 step total: %s", g_out);
    CHECK(strstr(g_out, "weight reorders:") && strstr(g_out, "per optimizer step"), "no reorder total: %s", g_out);
    table t;
    if (csv_rows(&t, csv)) {
        CHECK(t.nrows == 15, "rows %d, expected 15", t.nrows);
        for (int i = 0; i < t.nrows; i++) {
            const char *op = cell(&t, i, "op"), *phase = cell(&t, i, "phase");
            int attn = strncmp(op, "attn_", 5) == 0 && strcmp(op, "attn_out") != 0,
                weight = !attn && strcmp(phase, "bwd_weight") != 0;
            CHECK(strcmp(cell(&t, i, "dtype"), attn ? "fp32" : "bf16") == 0 &&
                      strcmp(cell(&t, i, "backend"), attn ? "openblas" : "onednn") == 0,
                  "%s %s: dtype '%s' backend '%s'", op, phase, cell(&t, i, "dtype"), cell(&t, i, "backend"));
            CHECK((*cell(&t, i, "pack_ms") != '\0') == weight, "%s %s: pack_ms '%s' (a weight B: %d)", op, phase,
                  cell(&t, i, "pack_ms"), weight);
            CHECK(attn == (*cell(&t, i, "pct_of_peak") == '\0'),
                  "%s %s: pct_of_peak '%s' (only the bf16 peak was given)", op, phase, cell(&t, i, "pct_of_peak"));
        }
        table_free(&t);
    } else {
        CHECK(0, "transformer CSV missing or without its columns");
    }
    rm_tree(dir);
}

/* ---------------------------------------------------------------- the bf16 matrix peak */

static void test_bf16_peak_names_its_probe(void)
{
    char *dir = test_tmpdir();
    if (!dir) return;
    char csv[128];
    snprintf(csv, sizeof csv, "%s/peak.csv", dir);
    const char *args[] = {"peak", "--no-sgemm", "--array-mib", "8", "--min-time", "0.01", "--csv", csv, NULL};
    int rc = run(args);
    CHECK(rc == 0, "peak: exit %d: %s", rc, g_err);
    int amx = machine_has_cpu_flag("amx_tile") && machine_has_cpu_flag("amx_bf16");
    if (!amx)
        CHECK(strstr(g_out, "amx_bf16: this CPU has no AMX") && strstr(g_out, "probe skipped"),
              "no note of the skipped AMX probe: %s", g_out);
    const char *line = strstr(g_out, "# bf16 matrix peak");
    CHECK(line != NULL, "the bf16 matrix peak is not named: %s", g_out);
    table t;
    if (table_load(&t, csv) == 0) {
        int pc = table_col(&t, "probe", 0), mc = table_col(&t, "mfu_peak", 0), found = 0;
        for (int i = 0; pc >= 0 && mc >= 0 && i < t.nrows; i++) {
            if (!strstr(table_cell(&t, i, mc), "bf16")) continue;
            found++;
            const char *probe = table_cell(&t, i, pc);
            /* "...: bf16_dot (avx512_bf16, ..." or, on a CPU without bf16 instructions,
             * "...: none; ... against fp32_fma (avx512, ..." */
            char want[64], want_none[64];
            snprintf(want, sizeof want, ": %s (", probe);
            snprintf(want_none, sizeof want_none, "against %s (", probe);
            int named = line && (strstr(line, want) || (strstr(line, ": none;") && strstr(line, want_none)));
            CHECK(named, "the # line does not name the bf16 probe '%s'", probe);
            CHECK(strcmp(probe, machine_has_cpu_flag("avx512_bf16") ? "bf16_dot" : "fp32_fma") == 0 ||
                      (amx && strcmp(probe, "amx_bf16") == 0),
                  "bf16 matrix peak from probe '%s' on this CPU", probe);
        }
        CHECK(found == 1, "%d rows marked as the bf16 matrix peak, expected 1", found);
        table_free(&t);
    } else {
        CHECK(0, "peak CSV missing");
    }
    rm_tree(dir);
}

static void test_bf16_peak_api(void)
{
    runner_opts ro;
    runner_defaults(&ro);
    ro.min_time_s = 0.01, ro.min_samples = 1;
    double g = NAN;
    char which[160] = "";
    CHECK(peak_bf16_matrix(&ro, 1, &g, which, sizeof which) == 0, "peak_bf16_matrix failed");
    CHECK(isfinite(g) && g > 0, "bf16 matrix peak %g", g);
    /* AMX where Linux grants the tile state (else AVX512_BF16), AVX512_BF16, or the fp32 FMA */
    int amx = machine_has_cpu_flag("amx_tile") && machine_has_cpu_flag("amx_bf16");
    int dot = machine_has_cpu_flag("avx512_bf16");
    int ok = amx && strncmp(which, "amx_bf16 (AMX TDPBF16PS, 1 thread)", 34) == 0;
    ok |= dot && strncmp(which, "bf16_dot (avx512_bf16, 1 thread)", 32) == 0;
    ok |= !dot && strncmp(which, "fp32_fma (", 10) == 0 && strstr(which, "no bf16 instructions");
    CHECK(ok, "which '%s' on this CPU (amx %d, avx512_bf16 %d)", which, amx, dot);
}

const test_case tests_bf16[] = {
    {"onednn: gemm matches its double reference (fp32 and bf16 operands, every transpose, bias, accumulate, bf16 "
     "output, padded leading dimensions, odd sizes)",
     test_onednn_gemm_matches_reference},
    {"onednn: packed weights match the reference; a repacked B is used", test_onednn_packed_matches_reference},
    {"onednn: the comparator fails a perturbed product", test_onednn_comparator_catches_an_error},
    {"onednn: a NaN in A propagates to its row of C (bf16 and fp32, plain and packed)", test_onednn_nan_propagates},
    {"onednn: bad shapes return KERNEL_EDIM and write nothing", test_onednn_bad_shapes},
    {"bf16: matmul --dtype bf16 writes dtype, backend, impl, pack_ms and pct_of_peak; fp32,bf16 each against its peak",
     test_bf16_matmul_cli_columns},
    {"bf16: matmul refuses --dtype bf16 --backend openblas and bad precision flags with one error line",
     test_bf16_matmul_cli_refuses},
    {"bf16: matmul under DNNL_MAX_CPU_ISA runs without AMX, emulates at AVX512_CORE, says what it cannot do at AVX2",
     test_bf16_matmul_capped_isa},
    {"bf16: transformer shapes in bf16 (attention in fp32 sgemm, weights packed)", test_bf16_matmul_transformer_shapes},
    {"bf16: peak names the bf16 matrix peak and notes a skipped AMX probe", test_bf16_peak_names_its_probe},
    {"bf16: peak_bf16_matrix measures the probe this CPU's bf16 peaks at", test_bf16_peak_api},
    {NULL, NULL},
};
