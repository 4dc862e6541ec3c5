/* main.c of ./costbench-gpu: the GPU microbenchmarks (bench/gpu/gpu.h), built by `make gpu` with the
 * CUDA toolkit and a C compiler alone. */
#include <stdio.h>
#include <string.h>

#include "../../bench/gpu/gpu.h"
#include "../../common/err.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: costbench-gpu COMMAND [options]   (COMMAND --help for its options)\n\n"
               "commands:\n"
               "  matmul   cuBLASLt GEMMs: the N x K sweep or a preset's step (--shapes transformer), bf16, fp16, tf32, fp8\n"
               "  rope     the rotary embedding's three variants as CUDA kernels, forward and backward\n"
               "  peak     HBM copy and triad bandwidth, L2, the dense peaks from clocks and by the largest GEMM\n"
               "  test     the kernels against their references (make test-gpu); without a GPU: skipped\n"
               "  info     the device as the runtime sees it\n");
}

/* CB_EUSAGE: 2, another failure: 1 (as costbench exits). */
static int exit_code(int rc) { return rc == CB_EUSAGE ? 2 : rc ? 1 : 0; }

static int selftest(const gpu_dev *d)
{
    int passed = 0, failed = gpu_matmul_selftest(d, &passed);
    failed += gpu_rope_selftest(d, &passed);
    failed += gpu_peak_selftest(d, &passed);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    int known = !strcmp(cmd, "matmul") || !strcmp(cmd, "rope") || !strcmp(cmd, "peak") || !strcmp(cmd, "test") ||
                !strcmp(cmd, "info");
    if (!known) {
        err_usage("unknown command '%s': expected matmul, rope, peak, test or info", cmd);
        return 2;
    }
    gpu_dev d = {0};
    int help = 0;
    for (int i = 2; i < argc; i++) help |= strcmp(argv[i], "--help") == 0;
    /* a subcommand's --help needs no device: it is answered before the device is used */
    char why[256] = "";
    int rc = help && strcmp(cmd, "test") != 0 && strcmp(cmd, "info") != 0 ? 0 : gpu_open(&d, why, sizeof why);
    if (rc == CB_EUSAGE && strcmp(cmd, "test") == 0) { /* make test-gpu on a machine without one */
        printf("no GPU: skipped (%s)\n", why);
        return 0;
    }
    if (rc == CB_EUSAGE) return err_msg("no GPU: %s", why), 1;
    if (rc != 0) return 1;
    if (!strcmp(cmd, "matmul")) return exit_code(gpu_matmul_main(&d, argc - 1, argv + 1));
    if (!strcmp(cmd, "rope")) return exit_code(gpu_rope_main(&d, argc - 1, argv + 1));
    if (!strcmp(cmd, "peak")) return exit_code(gpu_peak_main(&d, argc - 1, argv + 1));
    if (!strcmp(cmd, "test")) return selftest(&d);
    printf("%s (%s): sm_%d%d, %d SMs at %.0f MHz, memory %.0f MHz x %d bits, L2 %.0f MiB, %.1f GiB; driver %s, "
           "CUDA %s, cuBLASLt %s; %s\n",
           d.name, *d.key ? d.key : "not in data/devices.csv", d.cc_major, d.cc_minor, d.sms, d.sm_clock_mhz,
           d.mem_clock_mhz, d.bus_bits, d.l2_mib, d.mem_gib, d.driver, d.runtime, d.cublaslt, d.clocks_now);
    return 0;
}
