/* bf16 tiled attention: attention.c's loops with bf16 operands. Every product reads words of
 * two bf16 values along its sum (attn_tile.h), so each operand is packed once where it is
 * reused: per block of queries in the forward (Q^T), per tile (K, the pairs of V rows, P);
 * per query head in the backward (Q and dO both along the rows and in pairs of rows), per block
 * of keys (K^T, V^T, pairs of K rows; again for each query head of a group), per tile (P and dS
 * in pairs of rows, dS along the rows). Softmax statistics, the output accumulator and the gradients (accumulated in
 * dqkv) stay fp32. */
#include "attention.h"

#include <math.h>
#include <string.h>

#include <omp.h>

#include "attn_tile.h"

static size_t up16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Words of one packed row: HS values in pairs, or HS pairs padded to whole 16-word vectors. */
static int half_words(int HS) { return (HS + 1) / 2; }
static int pair_words(int HS) { return (int)up16((size_t)HS); }

/* Rows of q or k are products' A operands where they lie (words of two values) when each row
 * holds whole words: HS even and the tensor 4-byte aligned. */
static int rows_in_place(const bf16 *qkv, int HS) { return HS % 2 == 0 && (uintptr_t)qkv % 4 == 0; }

/* One block of queries [i0, i0 + nq) of query head h of batch b against keys [0, i0 + nq) of its
 * kv head. */
static void forward_block(bf16 *out, float *lse, const bf16 *qkv, const attn_geom *g, int b, int h, int i, int native)
{
    const int T = g->T, HS = g->HS, C3 = g->C3, C = g->C, i0 = i * ATTN_TILE,
              nq = T - i0 < ATTN_TILE ? T - i0 : ATTN_TILE;
    const int D2 = half_words(HS), HP = pair_words(HS);
    const float scale = g->scale, slope = g->alibi ? g->alibi[h] : 0.0f;
    const float ss = g->alibi ? 1.0f : scale; /* the softmax's scale of st: 1 once ALiBi has scaled it */
    const bf16 *q = qkv + ((size_t)b * T + i0) * C3 + attn_q_off(g, h);
    const bf16 *k = qkv + (size_t)b * T * C3 + attn_k_off(g, h / g->G), *v = k + HS;
    const int in_place = rows_in_place(qkv, HS); /* K read as words where it is */
    uint32_t qt[D2 * ATTN_TILE], kb[in_place ? 1 : ATTN_TILE * D2], vp[ATTN_TILE / 2 * HP],
        pp[ATTN_TILE / 2 * ATTN_TILE];
    float st[ATTN_TILE * ATTN_TILE], o[ATTN_TILE * HS], m[ATTN_TILE], l[ATTN_TILE], alpha[ATTN_TILE];
    attn_tile_pairs_t_bf16(qt, ATTN_TILE, q, C3, nq, HS);
    for (int r = 0; r < ATTN_TILE; r++) m[r] = -INFINITY, l[r] = 0.0f;
    for (int j = 0; j <= i; j++) {
        const int j0 = j * ATTN_TILE, nk = T - j0 < ATTN_TILE ? T - j0 : ATTN_TILE, diag = j == i;
        const void *ka = k + (size_t)j0 * C3;
        ptrdiff_t kas = C3 / 2;
        if (!in_place) {
            attn_tile_rows_bf16(kb, D2, k + (size_t)j0 * C3, C3, nk, HS);
            ka = kb, kas = D2;
        }
        attn_tile_pairs_bf16(vp, HP, v + (size_t)j0 * C3, C3, nk, HS);
        /* st (nk x nq) = K_j Q_i^T; P in place; P^T's rows paired (the keys) for P V */
        attn_tile_gemm_bf16(st, ATTN_TILE, 0, ka, kas, 1, qt, ATTN_TILE, nk, nq, HS, diag ? TRI_N_FROM_ROW : TRI_NONE,
                            native);
        if (g->alibi) attn_tile_alibi(st, ATTN_TILE, nk, nq, 1, diag, scale, slope, i0 - j0);
        attn_tile_softmax_cols_pairs(st, ATTN_TILE, nk, nq, diag, ss, m, l, alpha, pp, ATTN_TILE, native);
        if (j > 0) attn_tile_scale_rows(o, HS, nq, HS, alpha);
        attn_tile_gemm_bf16(o, HS, j > 0, pp, 1, ATTN_TILE, vp, HP, nq, HS, nk, diag ? TRI_K_UPTO_ROW : TRI_NONE,
                            native);
    }
    bf16 *ob = out + ((size_t)b * T + i0) * C + (size_t)h * HS;
    float *lb = lse + ((size_t)b * g->NH + h) * T + i0;
    for (int r = 0; r < nq; r++) {
        for (int d = 0; d < HS; d++) ob[(size_t)r * C + d] = bf16_from_float(o[r * HS + d] / l[r]);
        lb[r] = m[r] + logf(l[r]);
    }
}

typedef struct {
    bf16 *out;
    float *lse;
    const bf16 *qkv;
    int native;
} bf16_forward;

static void forward_task(const void *ctx, const attn_geom *g, int b, int h, int i)
{
    const bf16_forward *f = ctx;
    forward_block(f->out, f->lse, f->qkv, g, b, h, i, f->native);
}

static void forward_all(bf16 *out, float *lse, const bf16 *qkv, const attn_shape *s, int native)
{
    const attn_geom g = attn_geom_of(s);
    const bf16_forward f = {out, lse, qkv, native};
    attn_forward_blocks(&g, forward_task, &f);
}

/* The queries' side of the backward's tiles (Q and dO, along the rows and in pairs of rows) is
 * packed once per head when its 2 HS T floats stay within the scratch's budget (a few blocks
 * times T: HS <= ATTN_TILE), else per tile, again for each block of keys (about 8% slower at
 * HS = 64, T = 2048; the products grow with HS, the packing does not). */
static int per_head(int HS) { return HS <= ATTN_TILE; }

/* One thread's backward scratch (uint32_t words are packed bf16 pairs): D (T); the queries'
 * side, Q and dO along the rows (R x D2) and in pairs of rows (R/2 x HP), R = T or ATTN_TILE (above);
 * per block of keys: K^T and V^T (D2 x ATTN_TILE), pairs of K rows (ATTN_TILE/2 x HP); per tile: S and dP
 * (ATTN_TILE x ATTN_TILE), P and dS in pairs of rows (ATTN_TILE/2 x ATTN_TILE), dS along the rows (ATTN_TILE x
 * ATTN_TILE/2). */
typedef struct {
    float *D, *S, *dP;
    uint32_t *qb, *qp, *dob, *dop, *kt, *vt, *kp, *pp, *dsp, *dsb;
} bf16_scratch;

static size_t scratch_layout(bf16_scratch *s, float *ws, int T, int HS)
{
    const size_t D2 = (size_t)half_words(HS), HP = (size_t)pair_words(HS);
    const size_t R = per_head(HS) ? (size_t)T + 1 : ATTN_TILE; /* rows of the queries' side, even */
    size_t off = 0;
#define TAKE(field, type, n) (s ? (void)(s->field = (type *)(ws + off)) : (void)0), off += up16(n)
    TAKE(D, float, (size_t)T);
    TAKE(qb, uint32_t, R * D2);
    TAKE(dob, uint32_t, R * D2);
    TAKE(qp, uint32_t, R / 2 * HP);
    TAKE(dop, uint32_t, R / 2 * HP);
    TAKE(kt, uint32_t, D2 * ATTN_TILE);
    TAKE(vt, uint32_t, D2 * ATTN_TILE);
    TAKE(kp, uint32_t, ATTN_TILE / 2 * HP);
    TAKE(S, float, (size_t)ATTN_TILE * ATTN_TILE);
    TAKE(dP, float, (size_t)ATTN_TILE * ATTN_TILE);
    TAKE(pp, uint32_t, (size_t)ATTN_TILE / 2 * ATTN_TILE);
    TAKE(dsp, uint32_t, (size_t)ATTN_TILE / 2 * ATTN_TILE);
    TAKE(dsb, uint32_t, (size_t)ATTN_TILE * ATTN_TILE / 2);
#undef TAKE
    return off;
}

size_t attn_scratch_bf16(int T, int HS) { return scratch_layout(NULL, NULL, T, HS); }

/* The scratch of either element type's backward (the fp32 one's: attention.c), so one buffer serves both. */
size_t attention_scratch_floats(int T, int HS, int threads)
{
    size_t a = attn_scratch_f32(T, HS), b = attn_scratch_bf16(T, HS);
    return (a > b ? a : b) * (size_t)(threads > 0 ? threads : 1);
}

/* A thread reuses its part for each query head of a group, one after the other. */
size_t attention_scratch_floats_gqa(const attn_shape *s, int threads)
{
    return attention_scratch_floats(s->T, s->HS, threads);
}

typedef struct {
    const attn_geom *g;
    int native, q_in_place; /* the queries read where they are (rows_in_place), else from qb */
    const bf16 *q;          /* this head's queries, */
    const float *dO;        /* d(output) */
    float *dq, *dk, *dv;    /* its rows of dqkv, and its kv head's */
    float slope;            /* its ALiBi slope (g->alibi) */
    int first;              /* the group's first query head: its tiles start dK and dV */
} bwd_shape;

/* The queries' side packed for rows [r0, r0 + rows) (r0 even), at the start of its buffers. */
static void pack_queries(const bf16_scratch *s, const bwd_shape *sh, int r0, int rows)
{
    const int HS = sh->g->HS, D2 = half_words(HS), HP = pair_words(HS);
    const bf16 *q = sh->q + (size_t)r0 * sh->g->C3;
    const float *dO = sh->dO + (size_t)r0 * sh->g->C;
    if (!sh->q_in_place) attn_tile_rows_bf16(s->qb, D2, q, sh->g->C3, rows, HS);
    attn_tile_pairs_bf16(s->qp, HP, q, sh->g->C3, rows, HS);
    attn_tile_rows_f32(s->dob, D2, dO, sh->g->C, rows, HS, sh->native);
    attn_tile_pairs_f32(s->dop, HP, dO, sh->g->C, rows, HS, sh->native);
}

typedef struct {
    const void *q; /* Q along the rows (words), row stride qs words */
    ptrdiff_t qs;
    const uint32_t *qp, *dob, *dop;
} query_side;

/* Block i's queries' side: packed now (per tile), or where the head's packing put it. */
static query_side queries_of(const bf16_scratch *s, const bwd_shape *sh, int i)
{
    const int HS = sh->g->HS, D2 = half_words(HS), HP = pair_words(HS), i0 = i * ATTN_TILE, T = sh->g->T;
    const size_t r = per_head(HS) ? (size_t)i0 : 0;
    if (!per_head(HS)) pack_queries(s, sh, i0, T - i0 < ATTN_TILE ? T - i0 : ATTN_TILE);
    query_side qs = {s->qb + r * D2, D2, s->qp + r / 2 * HP, s->dob + r * D2, s->dop + r / 2 * HP};
    if (sh->q_in_place) qs.q = sh->q + (size_t)i0 * sh->g->C3, qs.qs = sh->g->C3 / 2;
    return qs;
}

/* Tile (query block i, key block j): dK_j and dV_j accumulate in dqkv from i == j (the diagonal)
 * on (from the start for a group's later heads), dQ_i from the first block of keys on. */
static void backward_tile(const bf16_scratch *s, const bwd_shape *sh, const float *lse, int i, int j)
{
    const attn_geom *g = sh->g;
    const int T = g->T, HS = g->HS, C3 = g->C3, D2 = half_words(HS), HP = pair_words(HS), native = sh->native;
    const int i0 = i * ATTN_TILE, nq = T - i0 < ATTN_TILE ? T - i0 : ATTN_TILE,
              nk = T - j * ATTN_TILE < ATTN_TILE ? T - j * ATTN_TILE : ATTN_TILE, diag = i == j;
    const float scale = g->scale, ss = g->alibi ? 1.0f : scale;
    const attn_tri upto_n = diag ? TRI_N_UPTO_ROW : TRI_NONE;
    const query_side qs = queries_of(s, sh, i);
    attn_tile_gemm_bf16(s->S, ATTN_TILE, 0, qs.q, qs.qs, 1, s->kt, ATTN_TILE, nq, nk, HS, upto_n, native);
    attn_tile_gemm_bf16(s->dP, ATTN_TILE, 0, qs.dob, D2, 1, s->vt, ATTN_TILE, nq, nk, HS, upto_n, native);
    if (g->alibi) attn_tile_alibi(s->S, ATTN_TILE, nq, nk, 0, diag, scale, sh->slope, i0 - j * ATTN_TILE);
    attn_tile_probs_grads_pairs(s->S, s->dP, ATTN_TILE, nq, nk, diag, ss, scale, lse + i0, s->D + i0, s->pp, s->dsp,
                                ATTN_TILE, s->dsb, ATTN_TILE / 2, native);
    /* dV_j += P^T dO_i, dK_j += dS^T Q_i; dQ_i += dS K_j */
    const attn_tri from = diag ? TRI_K_FROM_ROW : TRI_NONE;
    const int acc = !diag || !sh->first;
    float *dkj = sh->dk + (size_t)j * ATTN_TILE * C3, *dvj = sh->dv + (size_t)j * ATTN_TILE * C3;
    attn_tile_gemm_bf16(dvj, C3, acc, s->pp, 1, ATTN_TILE, qs.dop, HP, nk, HS, nq, from, native);
    attn_tile_gemm_bf16(dkj, C3, acc, s->dsp, 1, ATTN_TILE, qs.qp, HP, nk, HS, nq, from, native);
    attn_tile_gemm_bf16(sh->dq + (size_t)i0 * C3, C3, j > 0, s->dsb, ATTN_TILE / 2, 1, s->kp, HP, nq, HS, nk,
                        diag ? TRI_K_UPTO_ROW : TRI_NONE, native);
}

/* Query head h of batch b (its operands in sh) against the keys and values k, v of its kv head. */
static void backward_head(const bf16_scratch *s, const bwd_shape *sh, const bf16 *k, const bf16 *v, const bf16 *out,
                          const float *lse, int b, int h)
{
    const attn_geom *g = sh->g;
    const int T = g->T, HS = g->HS, C = g->C, C3 = g->C3, nb = (T + ATTN_TILE - 1) / ATTN_TILE;
    const int D2 = half_words(HS), HP = pair_words(HS);
    const bf16 *o = out + (size_t)b * T * C + (size_t)h * HS;
    const float *L = lse + ((size_t)b * g->NH + h) * T;
    if (per_head(HS)) pack_queries(s, sh, 0, T);
    /* D = rowsum(dO * O) from the rounded dO that dP = dO V^T uses: they cancel where they should */
    for (int i = 0; i < nb; i++) {
        const int i0 = i * ATTN_TILE, nq = T - i0 < ATTN_TILE ? T - i0 : ATTN_TILE;
        attn_tile_rowdot_bf16(s->D + i0, queries_of(s, sh, i).dob, D2, o + (size_t)i0 * C, C, nq, HS);
    }
    for (int j = 0; j < nb; j++) {
        const int j0 = j * ATTN_TILE, nk = T - j0 < ATTN_TILE ? T - j0 : ATTN_TILE;
        attn_tile_pairs_t_bf16(s->kt, ATTN_TILE, k + (size_t)j0 * C3, C3, nk, HS);
        attn_tile_pairs_t_bf16(s->vt, ATTN_TILE, v + (size_t)j0 * C3, C3, nk, HS);
        attn_tile_pairs_bf16(s->kp, HP, k + (size_t)j0 * C3, C3, nk, HS);
        for (int i = j; i < nb; i++) backward_tile(s, sh, L, i, j);
    }
}

/* kv head kv of batch b: its G query heads in order, all adding to the one dK and dV. */
static void backward_group(float *dqkv, float *ws, const float *dout, const bf16 *qkv, const bf16 *out,
                           const float *lse, const attn_geom *g, int native, int b, int kv)
{
    const int T = g->T, HS = g->HS;
    const size_t row0 = (size_t)b * T * g->C3, ko = row0 + attn_k_off(g, kv);
    bf16_scratch s;
    scratch_layout(&s, ws, T, HS);
    for (int r = 0; r < g->G; r++) {
        const int h = kv * g->G + r;
        const size_t qo = row0 + attn_q_off(g, h);
        const bwd_shape sh = {g, native, rows_in_place(qkv, HS), qkv + qo, dout + (size_t)b * T * g->C + (size_t)h * HS,
                              dqkv + qo, dqkv + ko, dqkv + ko + HS, g->alibi ? g->alibi[h] : 0.0f, r == 0};
        backward_head(&s, &sh, qkv + ko, qkv + ko + HS, out, lse, b, h);
    }
}

static void backward_all(float *dqkv, float *scratch, int threads, const float *dout, const bf16 *qkv, const bf16 *out,
                         const float *lse, const attn_shape *s, int native)
{
    const attn_geom g = attn_geom_of(s);
    const size_t per = attn_scratch_bf16(g.T, g.HS);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 1)
    for (int bg = 0; bg < g.B * g.KVH; bg++)
        backward_group(dqkv, scratch + (size_t)omp_get_thread_num() * per, dout, qkv, out, lse, &g, native,
                       bg / g.KVH, bg % g.KVH);
}

void attention_forward_gqa_bf16(bf16 *out, float *lse, const bf16 *qkv, const attn_shape *s)
{
    forward_all(out, lse, qkv, s, bf16_cpu_native());
}

void attention_backward_gqa_bf16(float *dqkv, float *scratch, int threads, const float *dout, const bf16 *qkv,
                                 const bf16 *out, const float *lse, const attn_shape *s)
{
    backward_all(dqkv, scratch, threads, dout, qkv, out, lse, s, bf16_cpu_native());
}

void attention_forward_bf16(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH, int HS)
{
    const attn_shape s = {B, T, NH, NH, HS, NULL};
    forward_all(out, lse, qkv, &s, bf16_cpu_native());
}

void attention_backward_bf16(float *dqkv, float *scratch, int threads, const float *dout, const bf16 *qkv,
                             const bf16 *out, const float *lse, int B, int T, int NH, int HS)
{
    const attn_shape s = {B, T, NH, NH, HS, NULL};
    backward_all(dqkv, scratch, threads, dout, qkv, out, lse, &s, bf16_cpu_native());
}

void attn_bf16_forward_path(bf16 *out, float *lse, const bf16 *qkv, const attn_shape *s, int native)
{
    forward_all(out, lse, qkv, s, native && bf16_cpu_native());
}

void attn_bf16_backward_path(float *dqkv, float *scratch, int threads, const float *dout, const bf16 *qkv,
                             const bf16 *out, const float *lse, const attn_shape *s, int native)
{
    backward_all(dqkv, scratch, threads, dout, qkv, out, lse, s, native && bf16_cpu_native());
}
