/* attn_tile.h: the tile operations behind the tiled attention kernels (attention.c in fp32,
 * attention_bf16.c in bf16), internal to kernels/: small products on one block of queries
 * against one block of keys, with the causal triangle of a diagonal tile skipped, the softmax
 * steps on a tile, and the bf16 packings the vdpbf16ps products read.
 *
 * Products: C (M x N, row stride ldc) = or += A (M x K) B (K x N), row-major C and B (N
 * contiguous, vectorised), A read one element at a time with any strides: A(r, k) at
 * A[r * ars + k * aks], so that a row-major tile and a transposed one are both operands
 * without a copy. fp32 products run on AVX-512 micro-kernels of 6 rows by 64 columns where the
 * build targets AVX-512, plain loops otherwise.
 *
 * bf16 products take K in pairs: a 32-bit word holds two bf16 values, element 2p in its low
 * half and 2p+1 in its high half (vdpbf16ps's layout). A(r, p) is the word at
 * A[r * ars + p * aks] (words of a packed buffer, or of a bf16 tensor read in place: a row of
 * an even number of values, 4-byte aligned); row p of B holds N words, column n pairing B(2p, n)
 * and B(2p+1, n).
 * An odd K pairs its last element with a zero. `native` runs vdpbf16ps (AVX512_BF16, checked
 * at run time by the caller through bf16_cpu_native()); otherwise the same products in fp32
 * FMAs, exact too (a product of two bf16 values fits in fp32), added in the same order. */
#ifndef CB_ATTN_TILE_H
#define CB_ATTN_TILE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "attention.h"
#include "bf16.h"

/* Queries per block and keys per block: the same, so that a diagonal tile is square. */
#define ATTN_TILE 64

/* A shape's strides in the group layout (attention.h), shared by the fp32 and bf16 kernels. */
typedef struct {
    int B, T, NH, KVH, G, HS;
    int C, C3;          /* a token's row of out (NH HS) and of qkv (KVH (G+2) HS) */
    float scale;        /* 1 / sqrt(HS) */
    const float *alibi; /* (NH) slopes, or NULL */
} attn_geom;

static inline attn_geom attn_geom_of(const attn_shape *s)
{
    attn_geom g = {s->B, s->T, s->NH, s->KVH, s->NH / s->KVH, s->HS, 0, 0, 0.0f, s->alibi};
    g.C = s->NH * s->HS, g.C3 = s->KVH * (g.G + 2) * s->HS, g.scale = 1.0f / sqrtf((float)s->HS);
    return g;
}

/* Offsets within a token's row of qkv: query head h; key of kv head kv (its value follows). */
static inline size_t attn_q_off(const attn_geom *g, int h)
{
    return ((size_t)(h / g->G) * (size_t)(g->G + 2) + (size_t)(h % g->G)) * (size_t)g->HS;
}
static inline size_t attn_k_off(const attn_geom *g, int kv)
{
    return ((size_t)kv * (size_t)(g->G + 2) + (size_t)g->G) * (size_t)g->HS;
}

/* One block of queries i of query head h of batch b, with the forward's operands in ctx. */
typedef void (*attn_block_fn)(const void *ctx, const attn_geom *g, int b, int h, int i);
/* The forward's driver (fp32 and bf16): block(ctx, g, b, h, i) for every batch, query head and
 * block of queries, on OpenMP threads. */
void attn_forward_blocks(const attn_geom *g, attn_block_fn block, const void *ctx);
/* Floats of one thread's backward scratch (attention.c, attention_bf16.c). */
size_t attn_scratch_f32(int T, int HS);
size_t attn_scratch_bf16(int T, int HS);

/* The bf16 kernels with the path chosen (tests): native 1 runs vdpbf16ps when the CPU has it,
 * native 0 the portable fp32 products. attn_shape: attention.h. */
void attn_bf16_forward_path(bf16 *out, float *lse, const bf16 *qkv, const attn_shape *s, int native);
void attn_bf16_backward_path(float *dqkv, float *scratch, int threads, const float *dout, const bf16 *qkv,
                             const bf16 *out, const float *lse, const attn_shape *s, int native);

/* On a diagonal tile (the block of queries q against the block of keys at the same offset,
 * masked to k <= q), which part of a product the caller needs; rows are the product's M index. */
typedef enum {
    TRI_NONE,       /* all of C */
    TRI_N_UPTO_ROW, /* C(r, n) for n <= r only; the rest may be left unwritten (scores, queries x keys) */
    TRI_N_FROM_ROW, /* C(r, n) for n >= r only; the rest may be left unwritten (scores, keys x queries) */
    TRI_K_UPTO_ROW, /* all of C, A(r, k) being zero for k > r: those terms are skipped */
    TRI_K_FROM_ROW, /* all of C, A(r, k) being zero for k < r: those terms are skipped */
} attn_tri;

void attn_tile_gemm_f32(float *C, ptrdiff_t ldc, int acc, const float *A, ptrdiff_t ars, ptrdiff_t aks,
                        const float *B, ptrdiff_t ldb, int M, int N, int K, attn_tri tri);
/* K counts elements (pairs: (K + 1) / 2); ars, aks, ldb count 32-bit words. */
void attn_tile_gemm_bf16(float *C, ptrdiff_t ldc, int acc, const void *A, ptrdiff_t ars, ptrdiff_t aks,
                         const uint32_t *B, ptrdiff_t ldb, int M, int N, int K, attn_tri tri, int native);

/* Forward, one block of keys against one block of queries, scores transposed: st (nk keys x nq
 * queries, row stride ld) holds the raw scores q.k on entry (diag: only k <= q are read; keys
 * and queries at the same offset). Online softmax per query (column): m (running max of the
 * scaled scores) and l (running sum) updated, alpha[q] = exp(m_old - m_new) the factor for the
 * output accumulated so far, st = exp(scale s - m_new) on exit, zero above the diagonal. */
void attn_tile_softmax_cols(float *st, ptrdiff_t ld, int nk, int nq, int diag, float scale, float *m, float *l,
                            float *alpha);
/* Backward, one block of queries (rows) against one block of keys: P holds the scores s and
 * dS holds dP = dO V^T on entry (nq x nk, row stride ld; diag: only k <= q are read); on exit
 * P = exp(ss s - lse[q]) and dS = scale * P * (dP - D[q]), both zero above the diagonal. ss is
 * the scale of s (scale on raw scores q.k, 1 on scores attn_tile_alibi already scaled), scale
 * the softmax's (the derivative of a scaled score by the raw one). */
void attn_tile_probs_grads(float *P, float *dS, ptrdiff_t ld, int nq, int nk, int diag, float ss, float scale,
                           const float *lse, const float *D);
/* The same two steps for the bf16 kernels, P and dS written only as the bf16 words their
 * products read (attn_tile_pairs_f32, attn_tile_rows_f32 below; fused where native): the
 * forward's P^T in pairs of keys (pp, stride ldp words); the backward's P and dS in pairs of
 * queries (pp, dsp, stride ldp) and dS along its rows (dsb, stride ldb). st, P and dS are
 * scratch: their contents on exit are unspecified. */
void attn_tile_softmax_cols_pairs(float *st, ptrdiff_t ld, int nk, int nq, int diag, float scale, float *m, float *l,
                                  float *alpha, uint32_t *pp, ptrdiff_t ldp, int native);
void attn_tile_probs_grads_pairs(float *P, float *dS, ptrdiff_t ld, int nq, int nk, int diag, float ss, float scale,
                                 const float *lse, const float *D, uint32_t *pp, uint32_t *dsp, ptrdiff_t ldp,
                                 uint32_t *dsb, ptrdiff_t ldb, int native);
/* ALiBi on one tile of raw scores x (row stride ld): x = scale x - slope (q - k), q and k the
 * query's and key's positions, q - k = dqk + (query index - key index) within the tile (dqk:
 * the offset of the block of queries minus that of the block of keys). keys_rows: rows are keys
 * (the forward's transposed st, rows x cols = nk x nq), else queries (the backward's P). diag:
 * only k <= q are written (the rest may be unwritten scratch). The softmax steps then take the
 * scores with scale 1 (attn_tile_softmax_cols) or ss = 1 (attn_tile_probs_grads). */
void attn_tile_alibi(float *x, ptrdiff_t ld, int rows, int cols, int keys_rows, int diag, float scale, float slope,
                     int dqk);
/* x (rows x cols, row stride ld): row r times f[r]. */
void attn_tile_scale_rows(float *x, ptrdiff_t ld, int rows, int cols, const float *f);

/* bf16 packings (words of two bf16 values, as above); odd counts are padded with zeros. */
/* dst row p (stride ld words, cols words) pairs src rows 2p and 2p+1 (fp32, rounded to bf16). */
void attn_tile_pairs_f32(uint32_t *dst, ptrdiff_t ld, const float *src, ptrdiff_t lds, int rows, int cols, int native);
/* The same from bf16 rows. */
void attn_tile_pairs_bf16(uint32_t *dst, ptrdiff_t ld, const bf16 *src, ptrdiff_t lds, int rows, int cols);
/* dst row r (stride ld words) = src row r in bf16, cols values, the pairs along the row. */
void attn_tile_rows_f32(uint32_t *dst, ptrdiff_t ld, const float *src, ptrdiff_t lds, int rows, int cols, int native);
void attn_tile_rows_bf16(uint32_t *dst, ptrdiff_t ld, const bf16 *src, ptrdiff_t lds, int rows, int cols);
/* Transposed: dst row p (stride ld words) column r = the pair (src(r, 2p), src(r, 2p+1)). */
void attn_tile_pairs_t_bf16(uint32_t *dst, ptrdiff_t ld, const bf16 *src, ptrdiff_t lds, int rows, int cols);
/* D[r] = sum over c of a(r, c) b(r, c) (rows x cols, row strides lda, ldb); in fp32, or with a
 * bf16 packed along its rows (attn_tile_rows_*) and b in bf16. */
void attn_tile_rowdot(float *D, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, int rows, int cols);
void attn_tile_rowdot_bf16(float *D, const uint32_t *a, ptrdiff_t lda, const bf16 *b, ptrdiff_t ldb, int rows,
                           int cols);
/* Transpose an fp32 block: dst (cols x rows, stride ld) = src (rows x cols, stride lds)^T. */
void attn_tile_transpose(float *dst, ptrdiff_t ld, const float *src, ptrdiff_t lds, int rows, int cols);

#endif
