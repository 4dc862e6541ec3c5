/* The test runner: every test of every file, then "N passed, N failed". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/stats.h"
#include "check.h"

const char *g_costbench = "./costbench";
static int g_failed_checks;

void check_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stdout, "    %s:%d: ", file, line);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
    va_end(ap);
    g_failed_checks++;
}

int main(int argc, char **argv)
{
    stats_init();
    if (argc > 1) g_costbench = argv[1];
    const char *only = argc > 2 ? argv[2] : NULL;
    const test_case *groups[] = {tests_common, tests_kernels, tests_rope, tests_model, tests_train, tests_cli,
                                 tests_report, tests_comm, tests_plot, tests_outdir, tests_scale, tests_audit,
                                 tests_attention, tests_bf16, tests_precision, tests_sampler, tests_trajectory,
                                 tests_fullbf16, tests_archk, tests_arch, tests_presets, tests_plan, tests_calib,
                                 tests_audit2_ckpt, tests_audit2_clean, tests_audit2_traj, tests_audit2_cli,
                                 tests_audit2_calib, tests_devices, tests_devicefigs, tests_physics, tests_published, tests_validate, tests_tputcols,
                                 tests_models, tests_opbench, tests_stepmodel, tests_plansearch, tests_planview, tests_ops,
                                 tests_import, tests_logmegatron, tests_logtitan, tests_netfit, tests_prices, tests_pricesupdate,
                                 tests_audit3_import, tests_audit3_prices, tests_audit3_files, tests_audit3_net,
                                 tests_layout, tests_names, tests_band, tests_logexcerpts, tests_gpu, tests_gpurope, tests_gemmcurve};
    int passed = 0, failed = 0;
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
        for (const test_case *t = groups[g]; t->name; t++) {
            if (only && !strstr(t->name, only)) continue;
            int before = g_failed_checks;
            t->fn();
            if (g_failed_checks == before) {
                passed++;
                printf("ok   %s\n", t->name);
            } else {
                failed++;
                printf("FAIL %s\n", t->name);
            }
            fflush(stdout);
        }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
