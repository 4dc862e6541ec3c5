#include "attention.h"

#include <math.h>
#include <string.h>

#include <omp.h>

#include "attn_tile.h"

/* fp32 tiled attention. Forward, per block of queries: Q^T packed once, then per block of keys
 * the transposed scores K Q^T (so that each query's softmax statistics are vertical vector
 * operations), the online softmax, and O += P V. Backward, per head, FlashAttention-2's order:
 * per block of keys (K^T, V^T packed once), per block of queries from the diagonal on:
 * S = Q K^T, dP = dO V^T, P = exp(scale S - lse), dS = scale P (dP - D) with D = rowsum(dO * O),
 * dV += P^T dO, dK += dS^T Q, dQ += dS K, all three accumulated in dqkv (its rows of one block
 * of keys stay in cache through their column of tiles). Grouped queries: a task is one kv head
 * (of one batch) and runs its G query heads one after the other, each as above, the later ones
 * adding to dK and dV. ALiBi: each tile's raw scores become scale S + bias (attn_tile_alibi)
 * before the softmax step, which then takes them with scale 1.
 * Products against keys and queries of the same block skip the masked triangle (attn_tile.h). */
#if ATTENTION_BLOCK != ATTN_TILE
#error "ATTENTION_BLOCK must name the tile the kernels use"
#endif

static size_t up16(size_t n) { return (n + 15) & ~(size_t)15; }

/* The fp32 backward's scratch of one thread: D (T), K^T and V^T (HS x ATTN_TILE), P and dS (ATTN_TILE x ATTN_TILE),
 * each rounded up to 16 floats. */
size_t attn_scratch_f32(int T, int HS)
{
    return up16((size_t)T) + 2 * up16((size_t)HS * ATTN_TILE) + 2 * up16((size_t)ATTN_TILE * ATTN_TILE);
}


/* One block of queries [i0, i0 + nq) of query head h of batch b against keys [0, i0 + nq) of its
 * kv head. */
static void forward_block(float *out, float *lse, const float *qkv, const attn_geom *g, int b, int h, int i)
{
    const int T = g->T, HS = g->HS, C3 = g->C3, C = g->C, i0 = i * ATTN_TILE,
              nq = T - i0 < ATTN_TILE ? T - i0 : ATTN_TILE;
    const float scale = g->scale, slope = g->alibi ? g->alibi[h] : 0.0f;
    const float ss = g->alibi ? 1.0f : scale; /* the softmax's scale of st: 1 once ALiBi has scaled it */
    const float *q = qkv + ((size_t)b * T + i0) * C3 + attn_q_off(g, h);
    const float *k = qkv + (size_t)b * T * C3 + attn_k_off(g, h / g->G), *v = k + HS;
    float qt[HS * ATTN_TILE], st[ATTN_TILE * ATTN_TILE], o[ATTN_TILE * HS], m[ATTN_TILE], l[ATTN_TILE],
        alpha[ATTN_TILE];
    attn_tile_transpose(qt, ATTN_TILE, q, C3, nq, HS);
    for (int r = 0; r < ATTN_TILE; r++) m[r] = -INFINITY, l[r] = 0.0f;
    for (int j = 0; j <= i; j++) {
        const int j0 = j * ATTN_TILE, nk = T - j0 < ATTN_TILE ? T - j0 : ATTN_TILE, diag = j == i;
        const float *kj = k + (size_t)j0 * C3, *vj = v + (size_t)j0 * C3;
        /* st (nk x nq) = K_j Q_i^T; then P in place, zero above the diagonal */
        attn_tile_gemm_f32(st, ATTN_TILE, 0, kj, C3, 1, qt, ATTN_TILE, nk, nq, HS, diag ? TRI_N_FROM_ROW : TRI_NONE);
        if (g->alibi) attn_tile_alibi(st, ATTN_TILE, nk, nq, 1, diag, scale, slope, i0 - j0);
        attn_tile_softmax_cols(st, ATTN_TILE, nk, nq, diag, ss, m, l, alpha);
        if (j > 0) attn_tile_scale_rows(o, HS, nq, HS, alpha);
        /* o (nq x HS) += P V_j, P(q, k) = st[k][q] */
        attn_tile_gemm_f32(o, HS, j > 0, st, 1, ATTN_TILE, vj, C3, nq, HS, nk, diag ? TRI_K_UPTO_ROW : TRI_NONE);
    }
    float *ob = out + ((size_t)b * T + i0) * C + (size_t)h * HS, *lb = lse + ((size_t)b * g->NH + h) * T + i0;
    for (int r = 0; r < nq; r++) {
        for (int d = 0; d < HS; d++) ob[(size_t)r * C + d] = o[r * HS + d] / l[r];
        lb[r] = m[r] + logf(l[r]);
    }
}

void attn_forward_blocks(const attn_geom *g, attn_block_fn block, const void *ctx)
{
    const int nb = (g->T + ATTN_TILE - 1) / ATTN_TILE, heads = g->B * g->NH;
    const long ntask = (long)heads * nb;
    /* head by head (its keys and values stay in cache), the longest blocks (most keys) first */
#pragma omp parallel for schedule(dynamic, 1)
    for (long t = 0; t < ntask; t++) {
        int i = nb - 1 - (int)(t % nb), bh = (int)(t / nb);
        block(ctx, g, bh / g->NH, bh % g->NH, i);
    }
}

typedef struct {
    float *out, *lse;
    const float *qkv;
} f32_forward;

static void forward_task(const void *ctx, const attn_geom *g, int b, int h, int i)
{
    const f32_forward *f = ctx;
    forward_block(f->out, f->lse, f->qkv, g, b, h, i);
}

void attention_forward_gqa(float *out, float *lse, const float *qkv, const attn_shape *s)
{
    const attn_geom g = attn_geom_of(s);
    const f32_forward f = {out, lse, qkv};
    attn_forward_blocks(&g, forward_task, &f);
}

void attention_forward(float *out, float *lse, const float *qkv, int B, int T, int NH, int HS)
{
    const attn_shape s = {B, T, NH, NH, HS, NULL};
    attention_forward_gqa(out, lse, qkv, &s);
}

typedef struct {
    float *D, *kt, *vt, *P, *dS;
} f32_scratch;

static f32_scratch f32_scratch_split(float *ws, int T, int HS)
{
    f32_scratch s;
    s.D = ws, ws += up16((size_t)T);
    s.kt = ws, ws += up16((size_t)HS * ATTN_TILE);
    s.vt = ws, ws += up16((size_t)HS * ATTN_TILE);
    s.P = ws, ws += up16((size_t)ATTN_TILE * ATTN_TILE);
    s.dS = ws;
    return s;
}

/* One query head's operands in the backward: its rows of qkv, out, dout and dqkv (q at q, its kv
 * head's k and v at k, v), its lse, its slope; `first`: the group's first query head, whose
 * contributions start dK and dV (the others add to them). */
typedef struct {
    const float *q, *k, *v, *dO, *lse;
    float *dq, *dk, *dv;
    float slope;
    int first;
} f32_head;

/* Tile (query block i, key block j) of the backward: dK_j and dV_j accumulate in dqkv from
 * i == j (the diagonal) on (from the start for a group's later heads), dQ_i from the first block
 * of keys on. */
static void backward_tile(const f32_scratch *s, const f32_head *hd, const attn_geom *g, int i, int j)
{
    const int T = g->T, C = g->C, C3 = g->C3, HS = g->HS;
    const int i0 = i * ATTN_TILE, nq = T - i0 < ATTN_TILE ? T - i0 : ATTN_TILE, j0 = j * ATTN_TILE,
              nk = T - j0 < ATTN_TILE ? T - j0 : ATTN_TILE;
    const int diag = i == j;
    const float scale = g->scale, ss = g->alibi ? 1.0f : scale;
    const float *qi = hd->q + (size_t)i0 * C3, *doi = hd->dO + (size_t)i0 * C;
    attn_tile_gemm_f32(s->P, ATTN_TILE, 0, qi, C3, 1, s->kt, ATTN_TILE, nq, nk, HS, diag ? TRI_N_UPTO_ROW : TRI_NONE);
    attn_tile_gemm_f32(s->dS, ATTN_TILE, 0, doi, C, 1, s->vt, ATTN_TILE, nq, nk, HS, diag ? TRI_N_UPTO_ROW : TRI_NONE);
    if (g->alibi) attn_tile_alibi(s->P, ATTN_TILE, nq, nk, 0, diag, scale, hd->slope, i0 - j0);
    attn_tile_probs_grads(s->P, s->dS, ATTN_TILE, nq, nk, diag, ss, scale, hd->lse + i0, s->D + i0);
    /* dV_j += P^T dO_i and dK_j += dS^T Q_i: A(key, query) = P[query][key] */
    const attn_tri from = diag ? TRI_K_FROM_ROW : TRI_NONE;
    const int acc = !diag || !hd->first;
    attn_tile_gemm_f32(hd->dv + (size_t)j0 * C3, C3, acc, s->P, 1, ATTN_TILE, doi, C, nk, HS, nq, from);
    attn_tile_gemm_f32(hd->dk + (size_t)j0 * C3, C3, acc, s->dS, 1, ATTN_TILE, qi, C3, nk, HS, nq, from);
    /* dQ_i += dS K_j (= from the first block of keys) */
    attn_tile_gemm_f32(hd->dq + (size_t)i0 * C3, C3, j > 0, s->dS, ATTN_TILE, 1, hd->k + (size_t)j0 * C3, C3, nq, HS,
                       nk, diag ? TRI_K_UPTO_ROW : TRI_NONE);
}

static void backward_head(const f32_scratch *s, const f32_head *hd, const float *out, const attn_geom *g, int b, int h)
{
    const int T = g->T, C = g->C, C3 = g->C3, HS = g->HS, nb = (T + ATTN_TILE - 1) / ATTN_TILE;
    attn_tile_rowdot(s->D, hd->dO, C, out + (size_t)b * T * C + (size_t)h * HS, C, T, HS);
    for (int j = 0; j < nb; j++) {
        const int j0 = j * ATTN_TILE, nk = T - j0 < ATTN_TILE ? T - j0 : ATTN_TILE;
        attn_tile_transpose(s->kt, ATTN_TILE, hd->k + (size_t)j0 * C3, C3, nk, HS);
        attn_tile_transpose(s->vt, ATTN_TILE, hd->v + (size_t)j0 * C3, C3, nk, HS);
        for (int i = j; i < nb; i++) backward_tile(s, hd, g, i, j);
    }
}

/* kv head kv of batch b: its G query heads in order, all adding to the one dK and dV. */
static void backward_group(float *dqkv, float *ws, const float *dout, const float *qkv, const float *out,
                           const float *lse, const attn_geom *g, int b, int kv)
{
    const int T = g->T, HS = g->HS;
    const size_t row0 = (size_t)b * T * g->C3, ko = row0 + attn_k_off(g, kv);
    const f32_scratch s = f32_scratch_split(ws, T, HS);
    for (int r = 0; r < g->G; r++) {
        const int h = kv * g->G + r;
        const size_t qo = row0 + attn_q_off(g, h);
        const f32_head hd = {qkv + qo, qkv + ko, qkv + ko + HS, dout + (size_t)b * T * g->C + (size_t)h * HS,
                             lse + ((size_t)b * g->NH + h) * T, dqkv + qo, dqkv + ko, dqkv + ko + HS,
                             g->alibi ? g->alibi[h] : 0.0f, r == 0};
        backward_head(&s, &hd, out, g, b, h);
    }
}

void attention_backward_gqa(float *dqkv, float *scratch, int threads, const float *dout, const float *qkv,
                            const float *out, const float *lse, const attn_shape *s)
{
    const attn_geom g = attn_geom_of(s);
    const size_t per = attn_scratch_f32(g.T, g.HS);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 1)
    for (int bg = 0; bg < g.B * g.KVH; bg++)
        backward_group(dqkv, scratch + (size_t)omp_get_thread_num() * per, dout, qkv, out, lse, &g, bg / g.KVH,
                       bg % g.KVH);
}

void attention_backward(float *dqkv, float *scratch, int threads, const float *dout, const float *qkv,
                        const float *out, const float *lse, int B, int T, int NH, int HS)
{
    const attn_shape s = {B, T, NH, NH, HS, NULL};
    attention_backward_gqa(dqkv, scratch, threads, dout, qkv, out, lse, &s);
}

/* Two passes per query (the max, then the sums), so that any T needs no buffer. */
void attention_forward_ref_gqa(double *out, const double *qkv, const attn_shape *s)
{
    const attn_geom g = attn_geom_of(s);
    const int T = g.T, HS = g.HS, C3 = g.C3, C = g.C;
    const double scale = 1.0 / sqrt((double)HS);
    for (int b = 0; b < g.B; b++)
        for (int h = 0; h < g.NH; h++) {
            const size_t qo = attn_q_off(&g, h), ko = attn_k_off(&g, h / g.G);
            const double slope = g.alibi ? (double)g.alibi[h] : 0.0;
            for (int i = 0; i < T; i++) {
                const double *q = qkv + ((size_t)b * T + i) * C3 + qo;
                double *o = out + ((size_t)b * T + i) * C + (size_t)h * HS;
                double mx = -INFINITY, sum = 0;
                for (int pass = 0; pass < 2; pass++) {
                    for (int d = 0; d < HS && pass == 1; d++) o[d] = 0;
                    for (int j = 0; j <= i; j++) {
                        const double *kv = qkv + ((size_t)b * T + j) * C3 + ko;
                        double sc = 0;
                        for (int d = 0; d < HS; d++) sc += q[d] * kv[d];
                        sc = sc * scale - slope * (i - j);
                        if (pass == 0) {
                            if (sc > mx || isnan(sc)) mx = sc;
                            continue;
                        }
                        double p = exp(sc - mx);
                        sum += p;
                        for (int d = 0; d < HS; d++) o[d] += p * kv[HS + d];
                    }
                    for (int d = 0; d < HS && pass == 1; d++) o[d] /= sum;
                }
            }
        }
}

void attention_forward_ref(double *out, const double *qkv, int B, int T, int NH, int HS)
{
    const attn_shape s = {B, T, NH, NH, HS, NULL};
    attention_forward_ref_gqa(out, qkv, &s);
}

/* llm-foundry's gen_slopes (llmfoundry/models/layers/attention.py): m = arange(1, n + 1) *
 * alibi_bias_max / n, slopes = 1 / 2^m, and for NH not a power of two
 * concat(slopes[1::2], slopes[::2])[:NH]. In double, rounded once to float. */
void attention_alibi_slopes(float *slopes, int NH, double alibi_bias_max)
{
    int n = 1;
    while (n < NH) n *= 2;
    for (int h = 0; h < NH; h++) {
        const int odd = n / 2; /* slopes[1::2] has n / 2 entries: i = 1, 3, ..., then i = 0, 2, ... */
        const int i = n == NH ? h : h < odd ? 2 * h + 1 : 2 * (h - odd);
        slopes[h] = (float)exp2(-(double)(i + 1) * alibi_bias_max / n);
    }
}
