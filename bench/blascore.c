#include "blascore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/schema.h"
#include "../kernels/matmul.h"
#include "../common/files.h"

#define REEXEC_ENV "COSTBENCH_BLAS_REEXEC"

/* After a re-exec: the user's OPENBLAS_CORETYPE and the kernel it gave. Returns 0 when this
 * process was not re-executed by blascore_select. */
static int reexec_state(char *orig, size_t no, char *envcore, size_t ne)
{
    const char *s = getenv(REEXEC_ENV), *bar = s ? strrchr(s, '|') : NULL;
    if (!bar) return 0;
    snprintf(orig, no, "%.*s", (int)(bar - s), s);
    snprintf(envcore, ne, "%s", bar + 1);
    return 1;
}

void blascore_env_orig(char *out, size_t n)
{
    char core[32];
    if (reexec_state(out, n, core, sizeof core)) return;
    const char *o = getenv("OPENBLAS_CORETYPE");
    snprintf(out, n, "%s", o ? o : "");
}

typedef struct {
    char core[32];
    char requires[256];
} core_row;

/* data/blas_cores.csv: every row names a kernel and the CPU flags it needs (never none). */
static int load_cores(core_row *rows, int cap)
{
    char path[CB_PATH_MAX];
    if (machine_data_file(path, sizeof path, "blas_cores.csv") != 0) return CB_EFAIL;
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int cc = table_col(&t, blas_core_schema[BC_CORE].col.name, 1),
        rc = table_col(&t, blas_core_schema[BC_REQUIRES].col.name, 1);
    int n = 0, bad = cc < 0 || rc < 0;
    for (int i = 0; !bad && i < t.nrows && n < cap; i++, n++) {
        const char *core, *req;
        bad = table_get_str(&t, i, cc, &core) != 0 || table_get_str(&t, i, rc, &req) != 0;
        if (!bad && (strlen(core) >= sizeof rows[n].core || strlen(req) >= sizeof rows[n].requires))
            bad = err_msg("%s:%d: a cell is too long", path, t.lines[i]);
        if (!bad)
            snprintf(rows[n].core, sizeof rows[n].core, "%s", core),
                snprintf(rows[n].requires, sizeof rows[n].requires, "%s", req);
    }
    table_free(&t);
    return bad ? CB_EFAIL : n;
}

/* Returns NULL if the CPU has every flag, else the first missing flag (in buf). */
static const char *missing_flag(const char *requires, char *buf, size_t n)
{
    char list[256];
    snprintf(list, sizeof list, "%s", requires);
    char *save = NULL;
    for (char *f = strtok_r(list, " ", &save); f; f = strtok_r(NULL, " ", &save))
        if (!machine_has_cpu_flag(f)) {
            snprintf(buf, n, "%s", f);
            return buf;
        }
    return NULL;
}

int blascore_best(char *out, size_t n)
{
    core_row rows[32];
    char miss[64];
    int k = load_cores(rows, 32);
    out[0] = '\0';
    if (k < 0) return CB_EFAIL;
    for (int i = 0; i < k; i++)
        if (!missing_flag(rows[i].requires, miss, sizeof miss)) {
            snprintf(out, n, "%s", rows[i].core);
            return 0;
        }
    return 0;
}

/* The kernel `choice` names (auto: the best for this CPU) into target ("" : keep the environment's). */
static int choose(const char *choice, char *target, size_t n)
{
    target[0] = '\0';
    if (strcmp(choice, "env") == 0) return 0;
    if (strcmp(choice, "auto") == 0) {
        if (blascore_best(target, n) != 0) return CB_EFAIL;
        if (!target[0])
            err_warn("no OpenBLAS kernel in data/blas_cores.csv matches this CPU; keeping the environment's");
        return 0;
    }
    core_row rows[32];
    int k = load_cores(rows, 32), found = -1;
    if (k < 0) return CB_EFAIL;
    for (int i = 0; i < k; i++)
        if (strcasecmp(rows[i].core, choice) == 0) found = i;
    if (found < 0) {
        char list[512] = "";
        for (int i = 0; i < k; i++) {
            size_t l = strlen(list);
            int w = snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", rows[i].core);
            if (w < 0 || (size_t)w >= sizeof list - l) break; /* the list is cut, not overrun */
        }
        return err_usage("flag '--blas-core': expected auto, env or one of %s, got '%s'", list, choice);
    }
    char miss[64];
    if (missing_flag(rows[found].requires, miss, sizeof miss))
        return err_usage("flag '--blas-core': kernel '%s' needs the CPU flag '%s', which this CPU lacks",
                         rows[found].core, miss);
    snprintf(target, n, "%s", rows[found].core);
    return 0;
}

int blascore_select(const char *choice, char **argv)
{
    char target[32];
    int rc = choose(choice, target, sizeof target);
    if (rc != 0 || !target[0] || strcasecmp(target, matmul_blas_core()) == 0) return rc;
    if (getenv(REEXEC_ENV)) {
        err_warn("OpenBLAS did not take OPENBLAS_CORETYPE=%s (it uses %s)", target, matmul_blas_core());
        return 0;
    }
    const char *orig = getenv("OPENBLAS_CORETYPE");
    char state[128];
    snprintf(state, sizeof state, "%.80s|%.32s", orig ? orig : "", matmul_blas_core());
    setenv(REEXEC_ENV, state, 1);
    setenv("OPENBLAS_CORETYPE", target, 1);
    fflush(stdout);
    fflush(stderr);
    execv("/proc/self/exe", argv);
    err_warn("could not re-run with OPENBLAS_CORETYPE=%s; keeping %s", target, matmul_blas_core());
    return 0;
}

void blascore_restore_env(void)
{
    char orig[128], core[32];
    if (!reexec_state(orig, sizeof orig, core, sizeof core)) return;
    if (orig[0]) setenv("OPENBLAS_CORETYPE", orig, 1);
    else unsetenv("OPENBLAS_CORETYPE");
    unsetenv(REEXEC_ENV);
}

void blascore_fill(machine_info *m, const char *choice)
{
    snprintf(m->blas_core, sizeof m->blas_core, "%s", matmul_blas_core());
    blascore_env_orig(m->blas_core_env, sizeof m->blas_core_env);
    snprintf(m->blas_core_choice, sizeof m->blas_core_choice, "%.31s", choice);
    m->blas_threads = matmul_blas_threads();
}

void blascore_describe(const machine_info *m, char *out, size_t n)
{
    char orig[128], envcore[32];
    const char *cur = m->blas_core, *choice = m->blas_core_choice;
    if (reexec_state(orig, sizeof orig, envcore, sizeof envcore) && strcmp(choice, "env") != 0) {
        char why[192];
        if (*orig) snprintf(why, sizeof why, "OPENBLAS_CORETYPE=%.80s in the environment forces %s", orig, envcore);
        else snprintf(why, sizeof why, "OpenBLAS's own detection picks %s", envcore);
        snprintf(out, n,
                 "OpenBLAS kernel %s (--blas-core %s: %s, so costbench re-ran itself with OPENBLAS_CORETYPE=%s; "
                 "--blas-core env keeps the environment's)",
                 cur, choice, why, cur);
    } else if (m->blas_core_env[0]) {
        snprintf(out, n, "OpenBLAS kernel %s (forced by OPENBLAS_CORETYPE=%s in the environment, --blas-core %s)", cur,
                 m->blas_core_env, choice);
    } else {
        snprintf(out, n, "OpenBLAS kernel %s (OpenBLAS's own detection, --blas-core %s)", cur, choice);
    }
}
