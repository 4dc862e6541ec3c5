#include "crossentropy.h"

#include <math.h>
#include <stddef.h>

static int targets_ok(const int *targets, int N, int V)
{
    for (int i = 0; i < N; i++)
        if (targets[i] < 0 || targets[i] >= V) return 0;
    return 1;
}

int crossentropy_forward(float *losses, float *lse, const float *logits, const int *targets, int N, int V)
{
    if (!targets_ok(targets, N, V)) return -1;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = logits + (size_t)i * V;
        float mx = -INFINITY;
        for (int j = 0; j < V; j++) mx = x[j] > mx ? x[j] : mx;
        float sum = 0.0f;
        for (int j = 0; j < V; j++) sum += expf(x[j] - mx);
        float l = mx + logf(sum);
        lse[i] = l;
        losses[i] = l - x[targets[i]];
    }
    return 0;
}

int crossentropy_backward(float *dlogits, const float *dlosses, const float *logits, const float *lse,
                          const int *targets, int N, int V)
{
    if (!targets_ok(targets, N, V)) return -1;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = logits + (size_t)i * V;
        float *dx = dlogits + (size_t)i * V;
        float g = dlosses[i], l = lse[i];
        for (int j = 0; j < V; j++) dx[j] += g * expf(x[j] - l);
        dx[targets[i]] -= g;
    }
    return 0;
}

int crossentropy_backward_inplace(float *logits, const float *dlosses, const float *lse, const int *targets, int N,
                                  int V)
{
    if (!targets_ok(targets, N, V)) return -1;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        float *x = logits + (size_t)i * V;
        float g = dlosses[i], l = lse[i];
        for (int j = 0; j < V; j++) x[j] = g * expf(x[j] - l);
        x[targets[i]] -= g;
    }
    return 0;
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
