// gpudev.cu: the device as the CUDA runtime, cuBLASLt and NVML describe it (gpu.h: gpu_open).
// NVML (the driver's libnvidia-ml.so.1) is opened at run time, so that the binary starts, and says
// "no GPU", on a machine without the driver.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <stdio.h>
#include <string.h>

#include "gpu.h"
#include "../../kernels/cuda/cudautil.cuh"
#include "gpu.h"

namespace {

typedef int (*nvml_init_t)(void);
typedef int (*nvml_str_t)(char *, unsigned);
typedef int (*nvml_by_bus_t)(const char *, void **);
typedef int (*nvml_clock_t)(void *, int, unsigned *);
typedef int (*nvml_power_t)(void *, unsigned *);

// The driver's version and the clocks and power limit NVML reads now; leaves them "" when NVML is
// not there (a container without it) or refuses.
void nvml_read(gpu_dev *d, const char *bus_id)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    nvml_init_t init = (nvml_init_t)dlsym(h, "nvmlInit_v2");
    nvml_str_t driver = (nvml_str_t)dlsym(h, "nvmlSystemGetDriverVersion");
    nvml_by_bus_t by_bus = (nvml_by_bus_t)dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml_clock_t clock = (nvml_clock_t)dlsym(h, "nvmlDeviceGetClockInfo");
    nvml_power_t power = (nvml_power_t)dlsym(h, "nvmlDeviceGetEnforcedPowerLimit");
    nvml_init_t shutdown = (nvml_init_t)dlsym(h, "nvmlShutdown");
    if (!init || init() != 0) {
        dlclose(h);
        return;
    }
    char v[80];
    if (driver && driver(v, sizeof v) == 0) snprintf(d->driver, sizeof d->driver, "%s", v);
    void *dev = NULL;
    unsigned sm = 0, mem = 0, mw = 0;
    // NVML_CLOCK_SM 1, NVML_CLOCK_MEM 2
    if (by_bus && clock && by_bus(bus_id, &dev) == 0 && clock(dev, 1, &sm) == 0 && clock(dev, 2, &mem) == 0) {
        int n = snprintf(d->clocks_now, sizeof d->clocks_now, "SM %u MHz, memory %u MHz", sm, mem);
        if (power && power(dev, &mw) == 0 && n > 0 && (size_t)n < sizeof d->clocks_now)
            snprintf(d->clocks_now + n, sizeof d->clocks_now - (size_t)n, ", %u W limit", mw / 1000);
    }
    if (shutdown) shutdown();
    dlclose(h);
}

int attr(int *v, cudaDeviceAttr a, int dev)
{
    GPU_CK(cudaDeviceGetAttribute(v, a, dev));
    return 0;
}

} // namespace

extern "C" int gpu_open(gpu_dev *d, char *why, size_t nwhy)
{
    memset(d, 0, sizeof *d);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorInsufficientDriver) {
        snprintf(why, nwhy, "no NVIDIA driver is loaded, or it is older than this CUDA runtime (%s)", cudaGetErrorString(e));
        return CB_EUSAGE;
    }
    if (e != cudaSuccess || n == 0) {
        snprintf(why, nwhy, "%s", e != cudaSuccess ? cudaGetErrorString(e) : "the CUDA runtime sees no device");
        return CB_EUSAGE;
    }
    GPU_CK(cudaSetDevice(0));
    cudaDeviceProp p;
    GPU_CK(cudaGetDeviceProperties(&p, 0));
    int clk = 0, memclk = 0, bus = 0, l2 = 0, drv = 0, rt = 0;
    if (attr(&clk, cudaDevAttrClockRate, 0) || attr(&memclk, cudaDevAttrMemoryClockRate, 0) ||
        attr(&bus, cudaDevAttrGlobalMemoryBusWidth, 0) || attr(&l2, cudaDevAttrL2CacheSize, 0))
        return CB_EFAIL;
    snprintf(d->name, sizeof d->name, "%s", p.name);
    d->cc_major = p.major, d->cc_minor = p.minor, d->sms = p.multiProcessorCount;
    d->sm_clock_mhz = clk / 1000.0, d->mem_clock_mhz = memclk / 1000.0, d->bus_bits = bus;
    d->l2_mib = l2 / 1048576.0, d->mem_gib = (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0);
    snprintf(d->key, sizeof d->key, "%s", gpu_device_key(d->name, d->mem_gib));
    GPU_CK(cudaDriverGetVersion(&drv));
    GPU_CK(cudaRuntimeGetVersion(&rt));
    snprintf(d->driver, sizeof d->driver, "CUDA driver API %d.%d", drv / 1000, drv % 1000 / 10);
    snprintf(d->runtime, sizeof d->runtime, "%d.%d", rt / 1000, rt % 1000 / 10);
    size_t lt = cublasLtGetVersion();
    snprintf(d->cublaslt, sizeof d->cublaslt, "%zu.%zu.%zu", lt / 10000, lt / 100 % 100, lt % 100);
    char bus_id[32] = "";
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, 0) == cudaSuccess) nvml_read(d, bus_id);
    return 0;
}
