#include "blascore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../kernels/matmul.h"

static char g_choice[32] = "env";

const char *blascore_env_orig(void)
{
    const char *o = getenv("COSTBENCH_BLAS_ENV_ORIG");
    if (o) return o;
    o = getenv("OPENBLAS_CORETYPE");
    return o ? o : "";
}

typedef struct {
    char core[32];
    char requires[256];
} core_row;

static int load_cores(core_row *rows, int cap)
{
    char path[4200];
    if (machine_data_file(path, sizeof path, "blas_cores.csv") != 0) return CB_EFAIL;
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int cc = table_col(&t, "core", 1), rc = table_col(&t, "requires", 1), n = 0;
    if (cc < 0 || rc < 0) {
        table_free(&t);
        return CB_EFAIL;
    }
    for (int i = 0; i < t.nrows && n < cap; i++, n++) {
        snprintf(rows[n].core, sizeof rows[n].core, "%s", table_cell(&t, i, cc));
        snprintf(rows[n].requires, sizeof rows[n].requires, "%s", table_cell(&t, i, rc));
    }
    table_free(&t);
    return n;
}

/* Returns NULL if the CPU has every flag, else the first missing flag (static buffer). */
static const char *missing_flag(const char *requires)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s", requires);
    char *save = NULL;
    for (char *f = strtok_r(buf, " ", &save); f; f = strtok_r(NULL, " ", &save))
        if (!machine_has_cpu_flag(f)) return f;
    return NULL;
}

int blascore_best(char *out, size_t n)
{
    core_row rows[32];
    int k = load_cores(rows, 32);
    out[0] = '\0';
    if (k < 0) return CB_EFAIL;
    for (int i = 0; i < k; i++)
        if (!missing_flag(rows[i].requires)) {
            snprintf(out, n, "%s", rows[i].core);
            return 0;
        }
    return 0;
}

int blascore_select(const char *choice, char **argv)
{
    snprintf(g_choice, sizeof g_choice, "%s", choice);
    if (strcmp(choice, "env") == 0) return 0;
    char target[32] = "";
    if (strcmp(choice, "auto") == 0) {
        if (blascore_best(target, sizeof target) != 0) return CB_EFAIL;
        if (!target[0]) {
            err_warn("no OpenBLAS kernel in data/blas_cores.csv matches this CPU; keeping the environment's");
            return 0;
        }
    } else {
        core_row rows[32];
        int k = load_cores(rows, 32), found = -1;
        if (k < 0) return CB_EFAIL;
        for (int i = 0; i < k; i++)
            if (strcasecmp(rows[i].core, choice) == 0) found = i;
        if (found < 0) {
            char list[512] = "";
            for (int i = 0; i < k; i++) {
                size_t l = strlen(list);
                snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", rows[i].core);
            }
            return err_usage("flag '--blas-core': expected auto, env or one of %s, got '%s'", list, choice);
        }
        const char *miss = missing_flag(rows[found].requires);
        if (miss)
            return err_usage("flag '--blas-core': kernel '%s' needs the CPU flag '%s', which this CPU lacks",
                             rows[found].core, miss);
        snprintf(target, sizeof target, "%s", rows[found].core);
    }
    if (strcasecmp(target, matmul_blas_core()) == 0) return 0;
    if (getenv("COSTBENCH_BLAS_REEXEC")) {
        err_warn("OpenBLAS did not take OPENBLAS_CORETYPE=%s (it uses %s)", target, matmul_blas_core());
        return 0;
    }
    const char *orig = getenv("OPENBLAS_CORETYPE");
    setenv("COSTBENCH_BLAS_ENV_ORIG", orig ? orig : "", 1);
    setenv("COSTBENCH_BLAS_ENV_CORE", matmul_blas_core(), 1);
    setenv("OPENBLAS_CORETYPE", target, 1);
    setenv("COSTBENCH_BLAS_REEXEC", "1", 1);
    fflush(stdout);
    fflush(stderr);
    execv("/proc/self/exe", argv);
    err_warn("could not re-run with OPENBLAS_CORETYPE=%s; keeping %s", target, matmul_blas_core());
    return 0;
}

void blascore_restore_env(void)
{
    const char *orig = getenv("COSTBENCH_BLAS_ENV_ORIG");
    if (orig) {
        if (*orig) setenv("OPENBLAS_CORETYPE", orig, 1);
        else unsetenv("OPENBLAS_CORETYPE");
    }
    unsetenv("COSTBENCH_BLAS_ENV_ORIG");
    unsetenv("COSTBENCH_BLAS_ENV_CORE");
    unsetenv("COSTBENCH_BLAS_REEXEC");
}

void blascore_fill(machine_info *m)
{
    snprintf(m->blas_core, sizeof m->blas_core, "%s", matmul_blas_core());
    snprintf(m->blas_core_env, sizeof m->blas_core_env, "%s", blascore_env_orig());
    snprintf(m->blas_core_choice, sizeof m->blas_core_choice, "%s", g_choice);
    m->blas_threads = matmul_blas_threads();
}

void blascore_describe(char *out, size_t n)
{
    const char *orig = blascore_env_orig(), *cur = matmul_blas_core();
    const char *envcore = getenv("COSTBENCH_BLAS_ENV_CORE");
    if (getenv("COSTBENCH_BLAS_REEXEC") && strcmp(g_choice, "env") != 0) {
        char why[128];
        if (*orig) snprintf(why, sizeof why, "OPENBLAS_CORETYPE=%s in the environment forces %s", orig, envcore ? envcore : orig);
        else snprintf(why, sizeof why, "OpenBLAS's own detection picks %s", envcore ? envcore : "another kernel");
        snprintf(out, n, "OpenBLAS kernel %s (--blas-core %s: %s, so costbench re-ran itself with OPENBLAS_CORETYPE=%s; --blas-core env keeps the environment's)",
                 cur, g_choice, why, cur);
    }
    else if (*orig)
        snprintf(out, n, "OpenBLAS kernel %s (forced by OPENBLAS_CORETYPE=%s in the environment, --blas-core %s)", cur,
                 orig, g_choice);
    else
        snprintf(out, n, "OpenBLAS kernel %s (OpenBLAS's own detection, --blas-core %s)", cur, g_choice);
}
