// The rotary embedding's variants as CUDA kernels (rope.cuh). Indexing is 32-bit (the launchers
// refuse a qkv buffer past 2^32 - 1 elements): integer division is the costly part of the index
// arithmetic on a GPU, and the fused kernel does little else. Offsets into the buffers are size_t.
#include "rope.cuh"

#include <stdint.h>

#include "cudautil.cuh"
#include "../ropeplan.h"

namespace {

// V consecutive elements, aligned to their size: one vector load or store (two for 32 bytes).
template <typename T, int V> struct alignas(sizeof(T) * V) rvec {
    T v[V];
};

template <typename E> __device__ __forceinline__ float ld(E v) { return gpu_elem<E>::to_f(v); }
template <typename E> __device__ __forceinline__ E st(float v) { return gpu_elem<E>::from(v); }

// n / d and n % d for a divisor fixed at launch (ropeplan_divider: a multiply-high, an add and a
// shift in place of the long sequence of an integer division).
struct fdiv {
    unsigned d, magic, shift;
    __device__ __forceinline__ unsigned q(unsigned n) const
    {
        return (unsigned)(((unsigned long long)__umulhi(n, magic) + n) >> shift);
    }
    __device__ __forceinline__ unsigned r(unsigned n) const { return n - q(n) * d; }
};

fdiv fdiv_of(unsigned d)
{
    const ropeplan_div v = ropeplan_divider(d);
    return fdiv{v.d, v.magic, v.shift};
}

// The shape as the kernels index it. Rows enumerate (b, head, t) in (B, NH, T) order, as the
// (B, NH, T, HS) outputs and the reference's (B, NH, T, w) temporaries are laid out.
struct geo {
    unsigned T, NH, HS, r, h, rows; // rows = B * NH * T
    fdiv dT, dNH, dHS, dr, dh, drows, d2NH; // dividers by T, NH, HS, r, h, rows, 2 NH
    // Element offset in qkv (B, T, NH, 3*HS) of block `which` (0 q, 1 k) of row `row`.
    __device__ __forceinline__ size_t qkv_row(unsigned row, unsigned which) const
    {
        const unsigned bh = dT.q(row), t = row - bh * T, b = dNH.q(bh), head = bh - b * NH;
        return (((size_t)b * T + t) * NH + head) * 3 * (size_t)HS + (size_t)which * HS;
    }
};

// One thread per element i < n (the grid may be smaller: each thread strides on).
template <typename F> __global__ void map_kernel(size_t n, F f)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        f((unsigned)i);
}

// ---------------------------------------------------------------- the reference's ops

// neg (rows, h) = -x[..., h:r] of q or k (`which`) in qkv.
template <typename E> struct op_neg_x {
    E *neg;
    const E *x;
    geo g;
    unsigned which;
    __device__ void operator()(unsigned i) const
    {
        const unsigned row = g.dh.q(i), j = i - row * g.h;
        neg[i] = st<E>(-ld(x[g.qkv_row(row, which) + g.h + j]));
    }
};

// half (rows, r) = cat(neg, x[..., :h]).
template <typename E> struct op_cat_half {
    E *half;
    const E *neg, *x;
    geo g;
    unsigned which;
    __device__ void operator()(unsigned i) const
    {
        const unsigned row = g.dr.q(i), j = i - row * g.r;
        half[i] = j < g.h ? neg[(size_t)row * g.h + j] : x[g.qkv_row(row, which) + (j - g.h)];
    }
};

// o (rows, r) = x[..., :r] * tab, x in qkv.
template <typename E> struct op_mul_qkv {
    E *o;
    const E *x;
    const float *tab; // (T, r)
    geo g;
    unsigned which;
    __device__ void operator()(unsigned i) const
    {
        const unsigned row = g.dr.q(i), j = i - row * g.r;
        o[i] = st<E>(ld(x[g.qkv_row(row, which) + j]) * tab[(size_t)g.dT.r(row) * g.r + j]);
    }
};

// o (rows, r) = a[..., :r] * tab, a (rows, lda).
template <typename E> struct op_mul_flat {
    E *o;
    const E *a;
    const float *tab; // (T, r)
    geo g;
    unsigned lda;
    __device__ void operator()(unsigned i) const
    {
        const unsigned row = g.dr.q(i), j = i - row * g.r;
        o[i] = st<E>(ld(a[(size_t)row * lda + j]) * tab[(size_t)g.dT.r(row) * g.r + j]);
    }
};

// o = a + b, elementwise.
template <typename E> struct op_add {
    E *o;
    const E *a, *b;
    __device__ void operator()(unsigned i) const { o[i] = st<E>(ld(a[i]) + ld(b[i])); }
};

// out (rows, HS) = cat(emb (rows, r), x[..., r:]).
template <typename E> struct op_cat_out {
    E *out;
    const E *emb, *x;
    geo g;
    unsigned which;
    __device__ void operator()(unsigned i) const
    {
        const unsigned row = g.dHS.q(i), j = i - row * g.HS;
        out[i] = j < g.r ? emb[(size_t)row * g.r + j] : x[g.qkv_row(row, which) + j];
    }
};

// dx2 (rows, h) = -dhalf[..., :h], dhalf (rows, r).
template <typename E> struct op_neg_flat {
    E *dx2;
    const E *dhalf;
    geo g;
    __device__ void operator()(unsigned i) const
    {
        const unsigned row = g.dh.q(i), j = i - row * g.h;
        dx2[i] = st<E>(-ld(dhalf[(size_t)row * g.r + j]));
    }
};

// cat (rows, r) = cat(dhalf[..., h:], dx2).
template <typename E> struct op_cat_bwd {
    E *cat;
    const E *dhalf, *dx2;
    geo g;
    __device__ void operator()(unsigned i) const
    {
        const unsigned row = g.dr.q(i), j = i - row * g.r;
        cat[i] = j < g.h ? dhalf[(size_t)row * g.r + g.h + j] : dx2[(size_t)row * g.h + (j - g.h)];
    }
};

// dqkv's block `which` = cat(grad (rows, r), dy[..., r:]), dy (rows, HS).
template <typename E> struct op_cat_dqkv {
    E *dqkv;
    const E *grad, *dy;
    geo g;
    unsigned which;
    __device__ void operator()(unsigned i) const
    {
        const unsigned row = g.dHS.q(i), j = i - row * g.HS;
        dqkv[g.qkv_row(row, which) + j] = j < g.r ? grad[(size_t)row * g.r + j] : dy[i];
    }
};

// ---------------------------------------------------------------- zero_freq and fused

// zero_freq forward: thread it -> (which, row, vector c of HS / V). out[d] = x[d] C[d] + R(x)[d]
// S[d], R(x) = (-x[h:r], x[0:h], x[r:HS]): zf_head_forward's expression (two products, then
// their sum or difference), so the same value as the CPU's.
template <typename E, int V>
__global__ void zf_forward_kernel(E *q_out, E *k_out, const E *qkv, const float *C, const float *S, unsigned items,
                                  geo g, fdiv dvec)
{
    const unsigned it = blockIdx.x * blockDim.x + threadIdx.x;
    if (it >= items) return;
    const unsigned rest = dvec.q(it), c = it - rest * (g.HS / V), which = g.drows.q(rest),
                   row = rest - which * g.rows, d = c * V;
    const E *x = qkv + g.qkv_row(row, which);
    const size_t tab = (size_t)g.dT.r(row) * g.HS + d;
    const int partner = d < g.h ? (int)g.h : d < g.r ? -(int)g.h : 0; // where R(x)[d..] comes from
    const float sign = d < g.h ? -1.0f : 1.0f;
    const rvec<E, V> xv = *(const rvec<E, V> *)(x + d), yv = *(const rvec<E, V> *)(x + (int)d + partner);
    const rvec<float, V> cv = *(const rvec<float, V> *)(C + tab), sv = *(const rvec<float, V> *)(S + tab);
    rvec<E, V> o;
#pragma unroll
    for (int k = 0; k < V; k++)
        o.v[k] = st<E>(__fadd_rn(__fmul_rn(ld(xv.v[k]), cv.v[k]), sign * __fmul_rn(ld(yv.v[k]), sv.v[k])));
    *(rvec<E, V> *)((which ? k_out : q_out) + (size_t)row * g.HS + d) = o;
}

// zero_freq backward: dx[j] = dy[j] C[j] + R^T(dy S)[j], R^T(z) = (z[h:r], -z[0:h], z[r:HS])
// (zf_head_backward).
template <typename E, int V>
__global__ void zf_backward_kernel(E *dqkv, const E *dq_out, const E *dk_out, const float *C, const float *S,
                                   unsigned items, geo g, fdiv dvec)
{
    const unsigned it = blockIdx.x * blockDim.x + threadIdx.x;
    if (it >= items) return;
    const unsigned rest = dvec.q(it), c = it - rest * (g.HS / V), which = g.drows.q(rest),
                   row = rest - which * g.rows, d = c * V;
    const E *dy = (which ? dk_out : dq_out) + (size_t)row * g.HS;
    const size_t tab = (size_t)g.dT.r(row) * g.HS;
    const int partner = d < g.h ? (int)g.h : d < g.r ? -(int)g.h : 0;
    const float sign = d < g.h || d >= g.r ? 1.0f : -1.0f;
    const rvec<E, V> yv = *(const rvec<E, V> *)(dy + d), zv = *(const rvec<E, V> *)(dy + (int)d + partner);
    const rvec<float, V> cv = *(const rvec<float, V> *)(C + tab + d),
                         sv = *(const rvec<float, V> *)(S + tab + (int)d + partner);
    rvec<E, V> o;
#pragma unroll
    for (int k = 0; k < V; k++)
        o.v[k] = st<E>(__fadd_rn(__fmul_rn(ld(yv.v[k]), cv.v[k]), sign * __fmul_rn(ld(zv.v[k]), sv.v[k])));
    *(rvec<E, V> *)(dqkv + g.qkv_row(row, which) + d) = o;
}

// fused: thread it -> (token n, head block hb = 2 head + which, vector c of h / V): pairs
// (x[i], x[i + h]) for i in c V .. c V + V - 1, rotated by sign x angle in place. Consecutive
// threads take consecutive vectors of one head's rotated dims, then its k, then the next head.
template <typename E, int V>
__global__ void fused_kernel(E *qkv, const float *cos_half, const float *sin_half, unsigned items, geo g, fdiv dvec,
                             float sign)
{
    const unsigned it = blockIdx.x * blockDim.x + threadIdx.x;
    if (it >= items) return;
    const unsigned rest = dvec.q(it), c = it - rest * (g.h / V), n = g.d2NH.q(rest), hb = rest - n * 2 * g.NH,
                   i = c * V;
    E *x = qkv + ((size_t)n * g.NH + hb / 2) * 3 * (size_t)g.HS + (size_t)(hb % 2) * g.HS + i;
    const size_t tab = (size_t)g.dT.r(n) * g.h + i;
    rvec<E, V> a = *(const rvec<E, V> *)x, b = *(const rvec<E, V> *)(x + g.h);
    const rvec<float, V> cv = *(const rvec<float, V> *)(cos_half + tab), sv = *(const rvec<float, V> *)(sin_half + tab);
#pragma unroll
    for (int k = 0; k < V; k++) {
        const float xa = ld(a.v[k]), xb = ld(b.v[k]), s = sign * sv.v[k];
        a.v[k] = st<E>(xa * cv.v[k] - xb * s);
        b.v[k] = st<E>(xb * cv.v[k] + xa * s);
    }
    *(rvec<E, V> *)x = a;
    *(rvec<E, V> *)(x + g.h) = b;
}

// ---------------------------------------------------------------- launchers

// The shape checked against the kernels' contract and turned into a geo. Returns 0 or CB_EUSAGE.
int geo_of(const rope_shape *s, const rope_tables *tb, geo *g)
{
    if (s->B < 1 || s->T < 1 || s->NH < 1 || s->HS < 1 || s->r < 0 || s->r > s->HS || s->r % 2 != 0)
        return err_usage("rope (CUDA): bad shape B=%d T=%d NH=%d HS=%d r=%d", s->B, s->T, s->NH, s->HS, s->r);
    if ((s->kvh != 0 && s->kvh != s->NH) || s->gptj != 0)
        return err_usage("rope (CUDA): only the GPT-NeoX layout and pairing (kvh %d, gptj %d given)", s->kvh, s->gptj);
    if ((double)s->B * s->T * s->NH * 3.0 * s->HS > 4294967295.0)
        return err_usage("rope (CUDA): B=%d T=%d NH=%d HS=%d is past 2^32 - 1 qkv elements", s->B, s->T, s->NH, s->HS);
    if (tb->T != s->T || tb->r != s->r || tb->HS != s->HS)
        return err_usage("rope (CUDA): tables for T=%d r=%d HS=%d, shape T=%d r=%d HS=%d", tb->T, tb->r, tb->HS, s->T,
                         s->r, s->HS);
    const unsigned T = (unsigned)s->T, NH = (unsigned)s->NH, HS = (unsigned)s->HS, r = (unsigned)s->r,
                   rows = (unsigned)s->B * T * NH;
    *g = geo{T, NH, HS, r, r / 2, rows, fdiv_of(T), fdiv_of(NH), fdiv_of(HS), fdiv_of(r), fdiv_of(r / 2),
             fdiv_of(rows), fdiv_of(2 * NH)};
    return 0;
}

template <typename F> int map_launch(size_t n, const F &f)
{
    if (n == 0) return 0;
    map_kernel<F><<<ropeplan_blocks(n, 65535u * 16u), ROPEPLAN_THREADS>>>(n, f);
    GPU_CK(cudaGetLastError());
    return 0;
}

template <typename E> int ref_forward_one(E *out, const E *qkv, const geo &g, const rope_tables *tb, E *scratch,
                                          unsigned which)
{
    const size_t rows = g.rows;
    E *neg = scratch, *half = neg + rows * g.h, *a = half + rows * g.r, *bb = a + rows * g.r, *emb = bb + rows * g.r;
    int rc = 0;
    if (rc == 0) rc = map_launch(rows * g.h, op_neg_x<E>{neg, qkv, g, which});
    if (rc == 0) rc = map_launch(rows * g.r, op_cat_half<E>{half, neg, qkv, g, which});
    if (rc == 0) rc = map_launch(rows * g.r, op_mul_qkv<E>{a, qkv, tb->cos_r, g, which});
    if (rc == 0) rc = map_launch(rows * g.r, op_mul_flat<E>{bb, half, tb->sin_r, g, g.r});
    if (rc == 0) rc = map_launch(rows * g.r, op_add<E>{emb, a, bb});
    if (rc == 0) rc = map_launch(rows * g.HS, op_cat_out<E>{out, emb, qkv, g, which});
    return rc;
}

// The scratch layout of kernels/rope_elem.inc's ref_backward_one: dhalf, dxr1 (rows, r), dx2
// (rows, h), cat, g (rows, r).
template <typename E> int ref_backward_one(E *dqkv, const E *dy, const geo &g, const rope_tables *tb, E *scratch,
                                           unsigned which)
{
    const size_t rows = g.rows;
    E *dhalf = scratch, *dxr1 = dhalf + rows * g.r, *dx2 = dxr1 + rows * g.r, *cat = dx2 + rows * g.h,
      *grad = cat + rows * g.r;
    int rc = 0;
    if (rc == 0) rc = map_launch(rows * g.r, op_mul_flat<E>{dhalf, dy, tb->sin_r, g, g.HS});
    if (rc == 0) rc = map_launch(rows * g.r, op_mul_flat<E>{dxr1, dy, tb->cos_r, g, g.HS});
    if (rc == 0) rc = map_launch(rows * g.h, op_neg_flat<E>{dx2, dhalf, g});
    if (rc == 0) rc = map_launch(rows * g.r, op_cat_bwd<E>{cat, dhalf, dx2, g});
    if (rc == 0) rc = map_launch(rows * g.r, op_add<E>{grad, dxr1, cat});
    if (rc == 0) rc = map_launch(rows * g.HS, op_cat_dqkv<E>{dqkv, grad, dy, g, which});
    return rc;
}

// LAUNCH(V) (a macro launching a kernel of vector width V) for the plan's width.
#define ROPE_DISPATCH_VEC(vec, LAUNCH)                                                                                \
    switch (vec) {                                                                                                    \
    case 8: LAUNCH(8); break;                                                                                         \
    case 4: LAUNCH(4); break;                                                                                         \
    case 2: LAUNCH(2); break;                                                                                         \
    default: LAUNCH(1); break;                                                                                        \
    }

template <typename E> int zf_launch(E *heads, E *flat_q, E *flat_k, const rope_shape *s, const rope_tables *tb,
                                    int backward)
{
    geo g;
    int rc = geo_of(s, tb, &g);
    if (rc != 0) return rc;
    ropeplan_launch p;
    if (ropeplan_zero_freq((long)s->B * s->T, s->NH, s->HS, s->r, (int)sizeof(E), &p) != 0)
        return err_usage("rope (CUDA): zero_freq grid too large");
    if (p.items == 0) return 0;
    const unsigned items = (unsigned)p.items;
    const fdiv dvec = fdiv_of((unsigned)(s->HS / p.vec)); // vectors per row
#define ZF_LAUNCH(V)                                                                                                  \
    if (backward)                                                                                                     \
        zf_backward_kernel<E, V><<<p.blocks, ROPEPLAN_THREADS>>>(heads, flat_q, flat_k, tb->cos_full, tb->sin_full,  \
                                                                 items, g, dvec);                                     \
    else                                                                                                              \
        zf_forward_kernel<E, V><<<p.blocks, ROPEPLAN_THREADS>>>(flat_q, flat_k, heads, tb->cos_full, tb->sin_full,   \
                                                                items, g, dvec)
    ROPE_DISPATCH_VEC(p.vec, ZF_LAUNCH)
#undef ZF_LAUNCH
    GPU_CK(cudaGetLastError());
    return 0;
}

template <typename E> int fused_launch(E *qkv, const rope_shape *s, const rope_tables *tb, float sign)
{
    geo g;
    int rc = geo_of(s, tb, &g);
    if (rc != 0) return rc;
    ropeplan_launch p;
    if (ropeplan_fused((long)s->B * s->T, s->NH, s->HS, s->r, (int)sizeof(E), &p) != 0)
        return err_usage("rope (CUDA): fused grid too large");
    if (p.items == 0) return 0;
    const unsigned items = (unsigned)p.items;
    const fdiv dvec = fdiv_of((unsigned)(s->r / 2 / p.vec)); // vectors per head block
#define FU_LAUNCH(V)                                                                                                  \
    fused_kernel<E, V><<<p.blocks, ROPEPLAN_THREADS>>>(qkv, tb->cos_half, tb->sin_half, items, g, dvec, sign)
    ROPE_DISPATCH_VEC(p.vec, FU_LAUNCH)
#undef FU_LAUNCH
    GPU_CK(cudaGetLastError());
    return 0;
}

} // namespace

// ---------------------------------------------------------------- the interface

int rope_gpu_tables_upload(rope_tables *dev, const rope_tables *h)
{
    const size_t half = (size_t)h->T * (h->r / 2), rot = (size_t)h->T * h->r, full = (size_t)h->T * h->HS;
    float **dst[6] = {&dev->cos_half, &dev->sin_half, &dev->cos_r, &dev->sin_r, &dev->cos_full, &dev->sin_full};
    const float *src[6] = {h->cos_half, h->sin_half, h->cos_r, h->sin_r, h->cos_full, h->sin_full};
    const size_t n[6] = {half, half, rot, rot, full, full};
    for (int i = 0; i < 6; i++) *dst[i] = NULL;
    dev->T = h->T, dev->r = h->r, dev->HS = h->HS;
    for (int i = 0; i < 6; i++) {
        GPU_CK(cudaMalloc((void **)dst[i], (n[i] > 0 ? n[i] : 1) * sizeof(float)));
        if (n[i] > 0) GPU_CK(cudaMemcpy(*dst[i], src[i], n[i] * sizeof(float), cudaMemcpyHostToDevice));
    }
    return 0;
}

void rope_gpu_tables_free(rope_tables *dev)
{
    float **p[6] = {&dev->cos_half, &dev->sin_half, &dev->cos_r, &dev->sin_r, &dev->cos_full, &dev->sin_full};
    for (int i = 0; i < 6; i++) {
        if (*p[i]) cudaFree(*p[i]);
        *p[i] = NULL;
    }
}

template <typename E>
int rope_gpu_forward_ref(E *q_out, E *k_out, const E *qkv, const rope_shape *s, const rope_tables *tb, E *scratch)
{
    geo g;
    int rc = geo_of(s, tb, &g);
    if (rc == 0) rc = ref_forward_one(q_out, qkv, g, tb, scratch, 0);
    if (rc == 0) rc = ref_forward_one(k_out, qkv, g, tb, scratch, 1);
    return rc;
}

template <typename E>
int rope_gpu_backward_ref(E *dqkv, const E *dq_out, const E *dk_out, const rope_shape *s, const rope_tables *tb,
                          E *scratch)
{
    geo g;
    int rc = geo_of(s, tb, &g);
    if (rc == 0) rc = ref_backward_one(dqkv, dq_out, g, tb, scratch, 0);
    if (rc == 0) rc = ref_backward_one(dqkv, dk_out, g, tb, scratch, 1);
    return rc;
}

template <typename E>
int rope_gpu_forward_zero_freq(E *q_out, E *k_out, const E *qkv, const rope_shape *s, const rope_tables *tb)
{
    return zf_launch<E>(const_cast<E *>(qkv), q_out, k_out, s, tb, 0); // the forward only reads qkv
}

template <typename E>
int rope_gpu_backward_zero_freq(E *dqkv, const E *dq_out, const E *dk_out, const rope_shape *s,
                                const rope_tables *tb)
{
    // the backward only reads dq_out, dk_out
    return zf_launch<E>(dqkv, const_cast<E *>(dq_out), const_cast<E *>(dk_out), s, tb, 1);
}

template <typename E> int rope_gpu_forward_fused(E *qkv, const rope_shape *s, const rope_tables *tb)
{
    return fused_launch<E>(qkv, s, tb, 1.0f);
}

template <typename E> int rope_gpu_backward_fused(E *dqkv, const rope_shape *s, const rope_tables *tb)
{
    return fused_launch<E>(dqkv, s, tb, -1.0f);
}

#define ROPE_INSTANTIATE(E)                                                                                           \
    template int rope_gpu_forward_ref<E>(E *, E *, const E *, const rope_shape *, const rope_tables *, E *);          \
    template int rope_gpu_backward_ref<E>(E *, const E *, const E *, const rope_shape *, const rope_tables *, E *);   \
    template int rope_gpu_forward_zero_freq<E>(E *, E *, const E *, const rope_shape *, const rope_tables *);         \
    template int rope_gpu_backward_zero_freq<E>(E *, const E *, const E *, const rope_shape *, const rope_tables *);  \
    template int rope_gpu_forward_fused<E>(E *, const rope_shape *, const rope_tables *);                             \
    template int rope_gpu_backward_fused<E>(E *, const rope_shape *, const rope_tables *);
ROPE_INSTANTIATE(float)
ROPE_INSTANTIATE(__nv_bfloat16)
