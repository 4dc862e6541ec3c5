/* Rotary embedding: the properties (norm kept, position 0 and rotary_pct 0 identity, q.k depends
 * on m - n only), the rotary dims, the bytes model, NaN through the bf16 variants, and `costbench
 * rope --dtype bf16`. The variants against the definition and finite differences, in fp32 and
 * bf16, are the registry's (tests/test_ops_rope.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../kernels/rope.h"
#include "check.h"
#include "../common/files.h"

typedef struct {
    rope_shape s;
    float *tables;
    rope_tables tb;
} rope_env;

static void env_init(rope_env *e, int B, int T, int NH, int HS, int r)
{
    e->s = (rope_shape){.B = B, .T = T, .NH = NH, .HS = HS, .r = r};
    e->tables = malloc(sizeof(float) * (rope_tables_floats(T, r, HS) + 1));
    rope_tables_init(&e->tb, e->tables, T, r, HS, 10000.0);
}

static size_t nqkv(const rope_shape *s) { return (size_t)s->B * s->T * 3 * s->NH * s->HS; }
static size_t nout(const rope_shape *s) { return (size_t)s->B * s->T * s->NH * s->HS; }
static size_t qkv_index(const rope_shape *s, int b, int t, int h, int w, int d)
{
    return (((size_t)b * s->T + t) * s->NH + h) * 3 * s->HS + (size_t)w * s->HS + d;
}
static size_t out_index(const rope_shape *s, int b, int t, int h, int d)
{
    return (((size_t)b * s->NH + h) * s->T + t) * s->HS + d;
}

static void test_rope_rotary_dims(void)
{
    CHECK(rope_rotary_dims(128, 0.25) == 32, "pythia-6.9b: r = %d", rope_rotary_dims(128, 0.25));
    CHECK(rope_rotary_dims(96, 0.25) == 24, "neox-20b: r = %d", rope_rotary_dims(96, 0.25));
    CHECK(rope_rotary_dims(80, 0.25) == 20, "pythia-2.8b: r = %d", rope_rotary_dims(80, 0.25));
    CHECK(rope_rotary_dims(64, 0.0) == 0, "rotary_pct 0: r = %d", rope_rotary_dims(64, 0.0));
}

static void test_rope_properties(void)
{
    rope_env e;
    const int T = 16, HS = 96, r = 24;
    env_init(&e, 1, T, 1, HS, r);
    size_t nq = nqkv(&e.s);
    float *qkv = malloc(sizeof(float) * nq), *orig = malloc(sizeof(float) * nq);
    unsigned st = 99;
    float qv[96], kv[96];
    rand_fill(qv, HS, &st);
    rand_fill(kv, HS, &st);
    /* the same q and k vectors at every position */
    for (int t = 0; t < T; t++) {
        memcpy(qkv + qkv_index(&e.s, 0, t, 0, 0, 0), qv, sizeof qv);
        memcpy(qkv + qkv_index(&e.s, 0, t, 0, 1, 0), kv, sizeof kv);
        memset(qkv + qkv_index(&e.s, 0, t, 0, 2, 0), 0, sizeof qv);
    }
    memcpy(orig, qkv, sizeof(float) * nq);
    rope_forward_fused(qkv, &e.s, &e.tb);
    /* position 0 is the identity */
    for (int d = 0; d < HS; d++) CHECK(qkv[d] == orig[d], "position 0 changed dim %d", d);
    /* norms are kept */
    for (int t = 0; t < T; t++) {
        double n0 = 0, n1 = 0;
        for (int d = 0; d < HS; d++) {
            double a = orig[qkv_index(&e.s, 0, t, 0, 0, d)], b = qkv[qkv_index(&e.s, 0, t, 0, 0, d)];
            n0 += a * a, n1 += b * b;
        }
        CHECK(fabs(sqrt(n1) - sqrt(n0)) < 1e-5 * sqrt(n0), "position %d: norm %.9g became %.9g", t, sqrt(n0), sqrt(n1));
    }
    /* q_m . k_n depends only on m - n */
    for (int delta = 0; delta < 4; delta++) {
        double first = NAN;
        for (int n = 0; n + delta < T; n++) {
            int m = n + delta;
            double dot = 0;
            for (int d = 0; d < HS; d++)
                dot += (double)qkv[qkv_index(&e.s, 0, m, 0, 0, d)] * qkv[qkv_index(&e.s, 0, n, 0, 1, d)];
            if (n == 0) first = dot;
            else
                CHECK(fabs(dot - first) < 1e-4 * (1 + fabs(first)), "m - n = %d: q.k %.9g at n=%d vs %.9g at n=0",
                      delta, dot, n, first);
        }
    }
    free(e.tables);
    /* rotary_pct 0: every variant is the identity */
    env_init(&e, 1, T, 1, HS, 0);
    float *q = malloc(sizeof(float) * nout(&e.s)), *k = malloc(sizeof(float) * nout(&e.s));
    float *scratch = malloc(sizeof(float) * (rope_ref_scratch_floats(&e.s) + 1));
    memcpy(qkv, orig, sizeof(float) * nq);
    rope_forward_fused(qkv, &e.s, &e.tb);
    CHECK(memcmp(qkv, orig, sizeof(float) * nq) == 0, "rotary_pct 0: fused changed the input");
    rope_forward_zero_freq(q, k, orig, &e.s, &e.tb);
    CHECK(memcmp(q, qv, sizeof qv) == 0 && memcmp(k + (size_t)(T - 1) * HS, kv, sizeof kv) == 0,
          "rotary_pct 0: zero_freq is not the identity");
    rope_forward_ref(q, k, orig, &e.s, &e.tb, scratch);
    CHECK(memcmp(q + (size_t)(T - 1) * HS, qv, sizeof qv) == 0 && memcmp(k, kv, sizeof kv) == 0,
          "rotary_pct 0: reference is not the identity");
    free(q), free(k), free(scratch), free(qkv), free(orig), free(e.tables);
}

static void test_rope_bytes_model(void)
{
    rope_shape s = {.B = 1, .T = 1, .NH = 32, .HS = 128, .r = 32};
    /* fused: q and k, r floats read and written per head, plus r table floats per token */
    double f = rope_bytes_per_token(&s, 2, 0);
    CHECK(f == 4.0 * 2 * (32 * 2 * 32 + 32), "fused bytes per token %.0f", f);
    CHECK(rope_bytes_per_token(&s, 0, 0) > 4 * f, "the reference moves less than 4x the fused bytes");
}

/* ---------------------------------------------------------------- bf16 */

static void narrow_all(bf16 *h, const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++) h[i] = bf16_from_float(f[i]);
}

typedef struct {
    size_t nq, no;
    float *f;
    bf16 *x, *h, *qh, *kh, *scratch;
} bf_bufs;

static void bf_alloc(bf_bufs *u, const rope_shape *s)
{
    u->nq = nqkv(s), u->no = nout(s);
    u->f = malloc(u->nq * sizeof(float));
    u->x = malloc(u->nq * sizeof(bf16)), u->h = malloc(u->nq * sizeof(bf16));
    u->qh = malloc(u->no * sizeof(bf16)), u->kh = malloc(u->no * sizeof(bf16));
    u->scratch = malloc((rope_ref_scratch_floats(s) + 1) * sizeof(bf16));
}

static void bf_free(bf_bufs *u) { free(u->f), free(u->x), free(u->h), free(u->qh), free(u->kh), free(u->scratch); }

static int bf16_has_nan(const bf16 *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isnan(bf16_to_float(x[i]))) return 1;
    return 0;
}

static void test_rope_bf16_nan(void)
{
    rope_env e;
    env_init(&e, 1, 6, 2, 32, 8);
    bf_bufs u;
    bf_alloc(&u, &e.s);
    unsigned st = 3;
    rand_fill(u.f, u.nq, &st);
    narrow_all(u.x, u.f, u.nq);
    /* a NaN q element of token 3, head 0, in the rotated dims */
    size_t at = qkv_index(&e.s, 0, 3, 0, 0, 1);
    u.x[at] = bf16_from_float(NAN);
    memcpy(u.h, u.x, u.nq * sizeof(bf16));
    rope_forward_fused_bf16(u.h, &e.s, &e.tb);
    CHECK(bf16_has_nan(u.h + qkv_index(&e.s, 0, 3, 0, 0, 0), 8) && !bf16_has_nan(u.h, qkv_index(&e.s, 0, 3, 0, 0, 0)),
          "bf16 fused forward: the NaN did not reach its pair alone");
    rope_forward_zero_freq_bf16(u.qh, u.kh, u.x, &e.s, &e.tb);
    CHECK(bf16_has_nan(u.qh, u.no), "bf16 zero_freq forward hid a NaN");
    rope_forward_ref_bf16(u.qh, u.kh, u.x, &e.s, &e.tb, u.scratch);
    CHECK(bf16_has_nan(u.qh, u.no), "bf16 reference forward hid a NaN");
    rope_backward_fused_bf16(u.h, &e.s, &e.tb);
    CHECK(bf16_has_nan(u.h, u.nq), "bf16 fused backward hid a NaN");
    bf16 *dq = calloc(u.no, sizeof(bf16)), *dk = calloc(u.no, sizeof(bf16));
    dk[out_index(&e.s, 0, 2, 1, 5)] = bf16_from_float(NAN);
    rope_backward_zero_freq_bf16(u.h, dq, dk, &e.s, &e.tb);
    CHECK(bf16_has_nan(u.h, u.nq), "bf16 zero_freq backward hid a NaN");
    rope_backward_ref_bf16(u.h, dq, dk, &e.s, &e.tb, u.scratch);
    CHECK(bf16_has_nan(u.h, u.nq), "bf16 reference backward hid a NaN");
    free(dq), free(dk);
    bf_free(&u);
    free(e.tables);
}

static void test_rope_bytes_model_dtype(void)
{
    rope_shape s = {.B = 1, .T = 1, .NH = 32, .HS = 128, .r = 32};
    for (int v = 0; v < 3; v++)
        for (int d = 0; d < 2; d++)
            CHECK(rope_bytes_per_token_dtype(&s, v, d, 4) == rope_bytes_per_token(&s, v, d),
                  "variant %d: fp32 bytes differ", v);
    /* bf16 fused: 2-byte q/k elements, the r fp32 table floats unchanged */
    double f = rope_bytes_per_token_dtype(&s, 2, 0, 2);
    CHECK(f == 2.0 * (2 * 32 * 2 * 32 + 4 * 32), "bf16 fused bytes per token %.0f", f);
}

/* costbench rope --dtype bf16 on a tiny shape: every row says bf16, the bytes follow the dtype;
 * a dtype it does not know is a usage error. */
static void test_rope_bf16_cli(void)
{
    static char out[65536], err[16384];
    char *dir = test_tmpdir();
    if (!dir) return;
    char csv[CB_PATH_MAX];
    snprintf(csv, sizeof csv, "%s/rope.csv", dir);
    const char *args[] = {
        "rope", "--dtype",       "bf16", "--model",     "pythia-14m", "--tokens", "256",  "--seq", "128", "--min-time",
        "0.01", "--min-samples", "2",    "--copy-gbps", "10",         "--cache",  "warm", "--csv", csv,   NULL};
    int rc = cli_run(args, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "rope --dtype bf16: exit %d: %s", rc, err);
    table t;
    if (rc == 0 && table_load(&t, csv) == 0) {
        int cd = table_col(&t, "dtype", 1), cv = table_col(&t, "variant", 1), cb = table_col(&t, "bytes_per_token", 1);
        CHECK(t.nrows == 6, "rows %d, expected 6", t.nrows);
        for (int i = 0; cd >= 0 && cv >= 0 && cb >= 0 && i < t.nrows; i++) {
            CHECK(strcmp(table_cell(&t, i, cd), "bf16") == 0, "row %d: dtype '%s'", i, table_cell(&t, i, cd));
            /* pythia-14m: 4 heads, r 8: fused 2 x (2 bytes x 4 x 2r + 4 bytes x r) = 320 */
            if (strcmp(table_cell(&t, i, cv), "fused") == 0)
                CHECK(strtod(table_cell(&t, i, cb), NULL) == 320.0, "fused bytes_per_token %s, expected 320",
                      table_cell(&t, i, cb));
        }
        table_free(&t);
    } else {
        CHECK(0, "rope --dtype bf16 wrote no readable CSV");
    }
    CHECK(strstr(out, "bf16") && strstr(out, "agree"), "the table does not say bf16 and that the variants agree: %s",
          out);
    const char *bad[] = {"rope", "--dtype", "fp16", NULL};
    rc = cli_run(bad, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "flag '--dtype': expected fp32 or bf16, got 'fp16'"), "--dtype fp16: exit %d: %s", rc,
          err);
    unlink(csv);
    rmdir(dir);
}

const test_case tests_rope[] = {
    {"rope: rotary dims from rotary_pct", test_rope_rotary_dims},
    {"rope: norm kept, position 0 identity, q.k depends on m - n, rotary_pct 0 identity", test_rope_properties},
    {"rope: bytes model", test_rope_bytes_model},
    {"rope bf16: NaN propagates through every variant, forward and backward", test_rope_bf16_nan},
    {"rope bf16: bytes model follows the element size", test_rope_bytes_model_dtype},
    {"rope bf16: costbench rope --dtype bf16 on a tiny shape, a bad --dtype", test_rope_bf16_cli},
    {NULL, NULL},
};
