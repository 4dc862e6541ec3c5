#include "linear_bf16.h"

#include "matmul.h"
#include "onednn.h"

int linear_bf16_forward(float *out32, bf16 *out16, const bf16 *inp, const bf16 *weight, const float *bias, int N, int C,
                        int OC)
{
    if (!out32 == !out16) return KERNEL_EDIM;
    onednn_shape s = {ONEDNN_BF16, out16 ? ONEDNN_BF16 : ONEDNN_F32, 0, 1, N, OC, C, C, C, OC, bias != NULL, 0};
    return onednn_gemm(&s, inp, weight, bias, out16 ? (void *)out16 : (void *)out32);
}

int linear_bf16_backward_input(float *dinp, const bf16 *dout, const bf16 *weight, int N, int C, int OC)
{
    onednn_shape s = {ONEDNN_BF16, ONEDNN_F32, 0, 0, N, C, OC, OC, C, C, 0, 0};
    return onednn_gemm(&s, dout, weight, NULL, dinp);
}

int linear_bf16_backward_weight(float *dweight, float *dbias, const bf16 *dout, const float *dout32, const bf16 *inp,
                                int N, int C, int OC)
{
    if (dbias && !dout32) return KERNEL_EDIM;
    onednn_shape s = {ONEDNN_BF16, ONEDNN_F32, 1, 0, OC, C, N, OC, C, C, 0, 1};
    int rc = onednn_gemm(&s, dout, inp, NULL, dweight);
    if (rc == KERNEL_OK && dbias) matmul_bias_backward(dbias, dout32, N, OC);
    return rc;
}
