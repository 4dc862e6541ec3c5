#include "crossentropy.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "vmath.h"

/* Software prefetch distance, floats (4 KiB ahead): the exp-heavy passes over logits coming from
 * memory ran at a third of their in-cache speed on the hardware prefetcher alone (Zen 5,
 * measured); one prefetch per 16-float step fetches each line once. */
#define XENT_PREFETCH 1024

/* max and log-sum-exp of one row; `next` (or NULL) is prefetched during the exp pass, which runs
 * from cache, so that the next row's max pass does too. */
static float row_lse(const float *x, const float *next, int V)
{
#ifdef __AVX512F__
    __m512 vm = _mm512_set1_ps(-INFINITY);
    int j = 0;
    for (; j + 16 <= V; j += 16) {
        _mm_prefetch((const char *)(x + j + XENT_PREFETCH), _MM_HINT_T0);
        vm = _mm512_max_ps(vm, _mm512_loadu_ps(x + j));
    }
    float mx = _mm512_reduce_max_ps(vm);
    for (; j < V; j++) mx = x[j] > mx ? x[j] : mx;
    __m512 vs = _mm512_setzero_ps(), vmx = _mm512_set1_ps(mx);
    for (j = 0; j + 16 <= V; j += 16) {
        if (next) _mm_prefetch((const char *)(next + j), _MM_HINT_T0);
        vs = _mm512_add_ps(vs, vexp512(_mm512_sub_ps(_mm512_loadu_ps(x + j), vmx)));
    }
    if (j < V) {
        __mmask16 k = vmask_tail(V - j);
        vs = _mm512_add_ps(vs, _mm512_maskz_mov_ps(k, vexp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vmx))));
    }
    return mx + logf(_mm512_reduce_add_ps(vs));
#else
    (void)next;
    float mx = -INFINITY;
    for (int j = 0; j < V; j++) mx = x[j] > mx ? x[j] : mx;
    float sum = 0.0f;
    for (int j = 0; j < V; j++) sum += expf(x[j] - mx);
    return mx + logf(sum);
#endif
}

/* y[j] = g * exp(x[j] - l); y may be x */
static void row_grad(float *y, const float *x, float g, float l, int V)
{
#ifdef __AVX512F__
    __m512 vg = _mm512_set1_ps(g), vl = _mm512_set1_ps(l);
    int j = 0;
    for (; j < V; j += 16) {
        __mmask16 k = vmask_tail(V - j);
        _mm_prefetch((const char *)(x + j + XENT_PREFETCH), _MM_HINT_T0);
        _mm512_mask_storeu_ps(y + j, k, _mm512_mul_ps(vg, vexp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vl))));
    }
#else
    for (int j = 0; j < V; j++) y[j] = g * expf(x[j] - l);
#endif
}

/* y[j] = bf16(g * exp(x[j] - l) - (j == t ? g : 0)): row_grad and the target's subtraction in
 * fp32, exactly as crossentropy_backward computes them, then rounded. pf[j] is prefetched at
 * step j (the row ahead, or the next row while this one is in cache); stream: non-temporal
 * stores for the 32-byte-aligned full steps (the gradient is read back only by the next matmul,
 * after far more data than the caches hold). */
static void row_grad_bf16(bf16 *y, const float *x, const float *pf, float g, float l, int t, int V, int stream)
{
#if defined(__AVX512F__) && defined(VMATH_BF16)
    __m512 vg = _mm512_set1_ps(g), vl = _mm512_set1_ps(l);
    for (int j = 0; j < V; j += 16) {
        __mmask16 k = vmask_tail(V - j);
        _mm_prefetch((const char *)(pf + j), _MM_HINT_T0);
        __m512 d = _mm512_mul_ps(vg, vexp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vl)));
        if (t >= j && t < j + 16) d = _mm512_mask_sub_ps(d, (__mmask16)(1u << (t - j)), d, vg);
        if (stream && k == 0xffff && ((uintptr_t)(y + j) & 31) == 0)
            _mm256_stream_si256((__m256i *)(y + j), vbf16_narrow512(d));
        else vbf16_store512(y + j, d, V - j);
    }
    if (stream) _mm_sfence();
#else
    (void)pf, (void)stream;
    for (int j = 0; j < V; j++) {
        float d;
        row_grad(&d, x + j, g, l, 1);
        if (j == t) d -= g;
        y[j] = bf16_from_float(d);
    }
#endif
}

/* Non-temporal stores for a gradient of at least this many elements (8 MiB in bf16, past the
 * last-level cache's share of two cores): about a quarter of crossentropy_backward_bf16's time at
 * N=2048, V=50304 (measured). */
#define XENT_STREAM_MIN ((size_t)1 << 22)

static int targets_ok(const int *targets, int N, int V)
{
    for (int i = 0; i < N; i++)
        if (targets[i] < 0 || targets[i] >= V) return 0;
    return 1;
}

int crossentropy_forward(float *losses, float *lse, const float *logits, const int *targets, int N, int V)
{
    if (!targets_ok(targets, N, V)) return KERNEL_EINDEX;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = logits + (size_t)i * V;
        float l = row_lse(x, x + V, V);
        lse[i] = l;
        losses[i] = l - x[targets[i]];
    }
    return KERNEL_OK;
}

int crossentropy_backward(float *dlogits, const float *dlosses, const float *logits, const float *lse,
                          const int *targets, int N, int V)
{
    if (!targets_ok(targets, N, V)) return KERNEL_EINDEX;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = logits + (size_t)i * V;
        float *dx = dlogits + (size_t)i * V;
        row_grad(dx, x, dlosses[i], lse[i], V);
        dx[targets[i]] -= dlosses[i];
    }
    return KERNEL_OK;
}

int crossentropy_backward_inplace(float *logits, const float *dlosses, const float *lse, const int *targets, int N,
                                  int V)
{
    if (!targets_ok(targets, N, V)) return KERNEL_EINDEX;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        float *x = logits + (size_t)i * V;
        row_grad(x, x, dlosses[i], lse[i], V);
        x[targets[i]] -= dlosses[i];
    }
    return KERNEL_OK;
}

int crossentropy_backward_bf16(bf16 *dlogits, const float *dlosses, const float *logits, const float *lse,
                               const int *targets, int N, int V)
{
    if (!targets_ok(targets, N, V)) return KERNEL_EINDEX;
    const int stream = (size_t)N * (size_t)V >= XENT_STREAM_MIN;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++)
        row_grad_bf16(dlogits + (size_t)i * V, logits + (size_t)i * V, logits + (size_t)i * V + XENT_PREFETCH,
                      dlosses[i], lse[i], targets[i], V, stream);
    return KERNEL_OK;
}

/* Each row's log-sum-exp, loss and gradient while the row is in cache: the logits are read from
 * memory once instead of twice (forward, then backward), and the gradient pass prefetches the
 * next row, so that its max pass finds it in cache. */
int crossentropy_fused_bf16(float *losses, float *lse, bf16 *dlogits, const float *logits, const float *dlosses,
                            const int *targets, int N, int V)
{
    if (!targets_ok(targets, N, V)) return KERNEL_EINDEX;
    const int stream = (size_t)N * (size_t)V >= XENT_STREAM_MIN;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = logits + (size_t)i * V;
        float l = row_lse(x, NULL, V);
        lse[i] = l;
        losses[i] = l - x[targets[i]];
        row_grad_bf16(dlogits + (size_t)i * V, x, x + V, dlosses[i], l, targets[i], V, stream);
    }
    return KERNEL_OK;
}

void crossentropy_forward_ref(double *losses, const double *logits, const int *targets, int N, int V)
{
    for (int i = 0; i < N; i++) {
        const double *x = logits + (size_t)i * V;
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < V; j++) mx = x[j] > mx ? x[j] : mx;
        for (int j = 0; j < V; j++) sum += exp(x[j] - mx);
        losses[i] = mx + log(sum) - x[targets[i]];
    }
}
