// cudautil.cuh: CUDA helpers of the GPU kernels and microbenchmarks (nvcc only): error checks,
// element conversions, inputs that the host can recompute for its reference checks, event timing.
#ifndef CB_CUDAUTIL_CUH
#define CB_CUDAUTIL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <stddef.h>

extern "C" {
#include "../../common/err.h"
}

// Returns CB_EFAIL with one line naming the call and the runtime's message when it fails.
#define GPU_CK(call)                                                                                   \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) return err_msg("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    } while (0)
// After a kernel launch: its launch error, then (synchronising) its execution error.
#define GPU_CK_LAUNCH()                \
    do {                               \
        GPU_CK(cudaGetLastError());    \
        GPU_CK(cudaDeviceSynchronize()); \
    } while (0)

// Element i of input tensor `seed`: uniform in [-1, 1) from 24 bits of splitmix64, exact in float,
// the same on the host and the device (the host recomputes any element for its reference).
__host__ __device__ inline float gpu_hash_val(unsigned long long seed, unsigned long long i)
{
    unsigned long long z = seed * 0x9E3779B97F4A7C15ull + i + 1ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

// A float rounded to nearest into each element type, and back (host and device alike).
template <typename T> struct gpu_elem;
template <> struct gpu_elem<float> {
    __host__ __device__ static float from(float v) { return v; }
    __host__ __device__ static float to_f(float v) { return v; }
};
template <> struct gpu_elem<__half> {
    __host__ __device__ static __half from(float v) { return __float2half_rn(v); }
    __host__ __device__ static float to_f(__half v) { return __half2float(v); }
};
template <> struct gpu_elem<__nv_bfloat16> {
    __host__ __device__ static __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
    __host__ __device__ static float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
};
template <> struct gpu_elem<__nv_fp8_e4m3> {
    __host__ __device__ static __nv_fp8_e4m3 from(float v) { return __nv_fp8_e4m3(v); }
    __host__ __device__ static float to_f(__nv_fp8_e4m3 v) { return float(v); }
};

// p[i] = element (seed, i) x scale, rounded to T.
template <typename T> __global__ void gpu_fill_kernel(T *p, size_t n, unsigned long long seed, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = gpu_elem<T>::from(gpu_hash_val(seed, i) * scale);
}
template <typename T> int gpu_fill(T *p, size_t n, unsigned long long seed, float scale)
{
    gpu_fill_kernel<T><<<1024, 256>>>(p, n, seed, scale);
    GPU_CK_LAUNCH();
    return 0;
}
// The same element as the host computes it.
template <typename T> inline double gpu_host_val(unsigned long long seed, size_t i, float scale)
{
    return (double)gpu_elem<T>::to_f(gpu_elem<T>::from(gpu_hash_val(seed, i) * scale));
}

// Times `reps` calls of f() between two events on the default stream; ms per call. Returns 0 or
// CB_EFAIL (f's own failure, or the events').
template <typename F> int gpu_time_ms(F f, int reps, double *ms)
{
    cudaEvent_t a, b;
    GPU_CK(cudaEventCreate(&a));
    GPU_CK(cudaEventCreate(&b));
    GPU_CK(cudaEventRecord(a));
    int rc = 0;
    for (int i = 0; i < reps && rc == 0; i++) rc = f();
    GPU_CK(cudaEventRecord(b));
    GPU_CK(cudaEventSynchronize(b));
    float t = 0;
    GPU_CK(cudaEventElapsedTime(&t, a, b));
    GPU_CK(cudaEventDestroy(a));
    GPU_CK(cudaEventDestroy(b));
    GPU_CK(cudaGetLastError());
    *ms = (double)t / reps;
    return rc;
}

#endif
