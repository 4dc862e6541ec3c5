#include "gelu.h"

#include <math.h>

#define INV_SQRT2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f

void gelu_forward(float *out, const float *inp, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + erff(x * INV_SQRT2));
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float cdf = 0.5f * (1.0f + erff(x * INV_SQRT2));
        float pdf = INV_SQRT_2PI * expf(-0.5f * x * x);
        dinp[i] = dout[i] * (cdf + x * pdf);
    }
}

void gelu_forward_ref(double *out, const double *inp, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = 0.5 * inp[i] * (1.0 + erf(inp[i] / sqrt(2.0)));
}
