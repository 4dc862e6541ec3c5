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
 * of keys stay in cache through their column of tiles).
 * Products against keys and queries of the same block skip the masked triangle (attn_tile.h). */
#define BT ATTN_TILE

#if ATTENTION_BLOCK != ATTN_TILE
#error "ATTENTION_BLOCK must name the tile the kernels use"
#endif

static size_t up16(size_t n) { return (n + 15) & ~(size_t)15; }

/* The fp32 backward's scratch of one thread: D (T), K^T and V^T (HS x BT), P and dS (BT x BT),
 * each rounded up to 16 floats. */
size_t attn_scratch_f32(int T, int HS)
{
    return up16((size_t)T) + 2 * up16((size_t)HS * BT) + 2 * up16((size_t)BT * BT);
}

size_t attention_scratch_floats(int T, int HS, int threads)
{
    size_t a = attn_scratch_f32(T, HS), b = attn_scratch_bf16(T, HS);
    return (a > b ? a : b) * (size_t)(threads > 0 ? threads : 1);
}

/* One block of queries [i0, i0 + nq) of head h of batch b against keys [0, i0 + nq). */
static void forward_block(float *out, float *lse, const float *qkv, int T, int NH, int HS, int b, int h, int i)
{
    const int C3 = 3 * NH * HS, C = NH * HS, i0 = i * BT, nq = T - i0 < BT ? T - i0 : BT;
    const float scale = 1.0f / sqrtf((float)HS);
    const float *q = qkv + ((size_t)b * T + i0) * C3 + (size_t)h * 3 * HS;
    const float *k = qkv + (size_t)b * T * C3 + (size_t)h * 3 * HS + HS, *v = k + HS;
    float qt[HS * BT], st[BT * BT], o[BT * HS], m[BT], l[BT], alpha[BT];
    attn_tile_transpose(qt, BT, q, C3, nq, HS);
    for (int r = 0; r < BT; r++) m[r] = -INFINITY, l[r] = 0.0f;
    for (int j = 0; j <= i; j++) {
        const int j0 = j * BT, nk = T - j0 < BT ? T - j0 : BT, diag = j == i;
        const float *kj = k + (size_t)j0 * C3, *vj = v + (size_t)j0 * C3;
        /* st (nk x nq) = K_j Q_i^T; then P in place, zero above the diagonal */
        attn_tile_gemm_f32(st, BT, 0, kj, C3, 1, qt, BT, nk, nq, HS, diag ? TRI_N_FROM_ROW : TRI_NONE);
        attn_tile_softmax_cols(st, BT, nk, nq, diag, scale, m, l, alpha);
        if (j > 0) attn_tile_scale_rows(o, HS, nq, HS, alpha);
        /* o (nq x HS) += P V_j, P(q, k) = st[k][q] */
        attn_tile_gemm_f32(o, HS, j > 0, st, 1, BT, vj, C3, nq, HS, nk, diag ? TRI_K_UPTO_ROW : TRI_NONE);
    }
    float *ob = out + ((size_t)b * T + i0) * C + (size_t)h * HS, *lb = lse + ((size_t)b * NH + h) * T + i0;
    for (int r = 0; r < nq; r++) {
        for (int d = 0; d < HS; d++) ob[(size_t)r * C + d] = o[r * HS + d] / l[r];
        lb[r] = m[r] + logf(l[r]);
    }
}

void attention_forward(float *out, float *lse, const float *qkv, int B, int T, int NH, int HS)
{
    const int nb = (T + BT - 1) / BT, heads = B * NH;
    const long ntask = (long)heads * nb;
    /* head by head (its keys and values stay in cache), the longest blocks (most keys) first */
#pragma omp parallel for schedule(dynamic, 1)
    for (long t = 0; t < ntask; t++) {
        int i = nb - 1 - (int)(t % nb), bh = (int)(t / nb);
        forward_block(out, lse, qkv, T, NH, HS, bh / NH, bh % NH, i);
    }
}

typedef struct {
    float *D, *kt, *vt, *P, *dS;
} f32_scratch;

static f32_scratch f32_scratch_split(float *ws, int T, int HS)
{
    f32_scratch s;
    s.D = ws, ws += up16((size_t)T);
    s.kt = ws, ws += up16((size_t)HS * BT);
    s.vt = ws, ws += up16((size_t)HS * BT);
    s.P = ws, ws += up16((size_t)BT * BT);
    s.dS = ws;
    return s;
}

/* Tile (query block i, key block j) of the backward: dK_j and dV_j accumulate in dqkv from
 * i == j (the diagonal) on, dQ_i from the first block of keys on. dq: this head's dqkv. */
static void backward_tile(const f32_scratch *s, float *dq, const float *q, const float *k, const float *dO,
                          const float *lse, int T, int C, int C3, int HS, int i, int j)
{
    const int i0 = i * BT, nq = T - i0 < BT ? T - i0 : BT, j0 = j * BT, nk = T - j0 < BT ? T - j0 : BT;
    const int diag = i == j;
    const float scale = 1.0f / sqrtf((float)HS);
    const float *qi = q + (size_t)i0 * C3, *doi = dO + (size_t)i0 * C;
    attn_tile_gemm_f32(s->P, BT, 0, qi, C3, 1, s->kt, BT, nq, nk, HS, diag ? TRI_N_UPTO_ROW : TRI_NONE);
    attn_tile_gemm_f32(s->dS, BT, 0, doi, C, 1, s->vt, BT, nq, nk, HS, diag ? TRI_N_UPTO_ROW : TRI_NONE);
    attn_tile_probs_grads(s->P, s->dS, BT, nq, nk, diag, scale, lse + i0, s->D + i0);
    /* dV_j += P^T dO_i and dK_j += dS^T Q_i: A(key, query) = P[query][key] */
    const attn_tri from = diag ? TRI_K_FROM_ROW : TRI_NONE;
    attn_tile_gemm_f32(dq + (size_t)j0 * C3 + 2 * HS, C3, !diag, s->P, 1, BT, doi, C, nk, HS, nq, from);
    attn_tile_gemm_f32(dq + (size_t)j0 * C3 + HS, C3, !diag, s->dS, 1, BT, qi, C3, nk, HS, nq, from);
    /* dQ_i += dS K_j (= from the first block of keys) */
    attn_tile_gemm_f32(dq + (size_t)i0 * C3, C3, j > 0, s->dS, BT, 1, k + (size_t)j0 * C3, C3, nq, HS, nk,
                       diag ? TRI_K_UPTO_ROW : TRI_NONE);
}

static void backward_head(float *dqkv, float *ws, const float *dout, const float *qkv, const float *out,
                          const float *lse, int T, int NH, int HS, int b, int h)
{
    const int C3 = 3 * NH * HS, C = NH * HS, nb = (T + BT - 1) / BT;
    const size_t qo = (size_t)b * T * C3 + (size_t)h * 3 * HS, oo = (size_t)b * T * C + (size_t)h * HS;
    const float *q = qkv + qo, *k = q + HS, *v = q + 2 * HS, *o = out + oo, *dO = dout + oo;
    const float *L = lse + ((size_t)b * NH + h) * T;
    float *dq = dqkv + qo;
    f32_scratch s = f32_scratch_split(ws, T, HS);
    attn_tile_rowdot(s.D, dO, C, o, C, T, HS);
    for (int j = 0; j < nb; j++) {
        const int j0 = j * BT, nk = T - j0 < BT ? T - j0 : BT;
        attn_tile_transpose(s.kt, BT, k + (size_t)j0 * C3, C3, nk, HS);
        attn_tile_transpose(s.vt, BT, v + (size_t)j0 * C3, C3, nk, HS);
        for (int i = j; i < nb; i++) backward_tile(&s, dq, q, k, dO, L, T, C, C3, HS, i, j);
    }
}

void attention_backward(float *dqkv, float *scratch, int threads, const float *dout, const float *qkv,
                        const float *out, const float *lse, int B, int T, int NH, int HS)
{
    const size_t per = attn_scratch_f32(T, HS);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 1)
    for (int bh = 0; bh < B * NH; bh++)
        backward_head(dqkv, scratch + (size_t)omp_get_thread_num() * per, dout, qkv, out, lse, T, NH, HS, bh / NH,
                      bh % NH);
}

/* Two passes per query (the max, then the sums), so that any T needs no buffer. */
void attention_forward_ref(double *out, const double *qkv, int B, int T, int NH, int HS)
{
    const int C3 = 3 * NH * HS, C = NH * HS;
    const double scale = 1.0 / sqrt((double)HS);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const double *q = qkv + ((size_t)b * T + i) * C3 + (size_t)h * 3 * HS;
                double mx = -INFINITY, sum = 0;
                for (int pass = 0; pass < 2; pass++) {
                    double *o = out + ((size_t)b * T + i) * C + (size_t)h * HS;
                    for (int d = 0; d < HS && pass == 1; d++) o[d] = 0;
                    for (int j = 0; j <= i; j++) {
                        const double *kv = qkv + ((size_t)b * T + j) * C3 + (size_t)h * 3 * HS;
                        double s = 0;
                        for (int d = 0; d < HS; d++) s += q[d] * kv[HS + d];
                        s *= scale;
                        if (pass == 0) {
                            if (s > mx || isnan(s)) mx = s;
                            continue;
                        }
                        double p = exp(s - mx);
                        sum += p;
                        for (int d = 0; d < HS; d++) o[d] += p * kv[2 * HS + d];
                    }
                    for (int d = 0; d < HS && pass == 1; d++) o[d] /= sum;
                }
            }
}
