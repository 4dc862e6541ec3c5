#include "adamw.h"

#include <math.h>

void adamw_update(float *params, const float *grads, float *m, float *v, size_t n, const adamw_params *hp, int t)
{
    const float b1 = hp->beta1, b2 = hp->beta2, lr = hp->lr, eps = hp->eps, wd = hp->weight_decay;
    const float gs = hp->grad_scale != 0.0f ? hp->grad_scale : 1.0f;
    const float c1 = 1.0f / (float)(1.0 - pow((double)b1, t)), c2 = 1.0f / (float)(1.0 - pow((double)b2, t));
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * gs;
        float mi = b1 * m[i] + (1.0f - b1) * g;
        float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        params[i] -= lr * ((mi * c1) / (sqrtf(vi * c2) + eps) + wd * params[i]);
    }
}

void adamw_update_ref(double *params, const double *grads, double *m, double *v, size_t n, const adamw_params *hp,
                      int t)
{
    const double gs = hp->grad_scale != 0.0f ? hp->grad_scale : 1.0;
    for (size_t i = 0; i < n; i++) {
        double g = grads[i] * gs;
        m[i] = hp->beta1 * m[i] + (1.0 - hp->beta1) * g;
        v[i] = hp->beta2 * v[i] + (1.0 - hp->beta2) * g * g;
        double mh = m[i] / (1.0 - pow(hp->beta1, t)), vh = v[i] / (1.0 - pow(hp->beta2, t));
        params[i] -= hp->lr * (mh / (sqrt(vh) + hp->eps) + hp->weight_decay * params[i]);
    }
}

double grad_sumsq(const float *g, size_t n)
{
    double s = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
    return s;
}

float grad_clip(float *g, size_t n, double norm, float max_norm)
{
    if (!(norm > max_norm) || max_norm <= 0.0f) return 1.0f;
    float f = (float)(max_norm / (norm + 1e-6));
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) g[i] *= f;
    return f;
}
