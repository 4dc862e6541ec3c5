/* machine_data.c: where the data tables are, and the name of this machine's rows (machine.h);
 * apart from machine.c's probes so that the parsers can be built without OpenMP (the fuzz
 * harnesses). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "files.h"
#include "machine.h"

/* The data directory: $COSTBENCH_DATA, else data/ next to the executable (the repository root,
 * or its parent for build-san/costbench), else ./data. */
static int data_dir(char *out, size_t n)
{
    const char *env = getenv("COSTBENCH_DATA");
    if (env && *env) return path_fmt(out, n, "%s", env);
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    for (int up = 0; len > 0 && up < 2; up++) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (!slash) break;
        *slash = '\0';
        len = slash - exe;
        char probe[PATH_MAX + 32];
        struct stat st;
        if (path_fmt(probe, sizeof probe, "%s/data/models.csv", exe) == 0 && stat(probe, &st) == 0)
            return path_fmt(out, n, "%s/data", exe);
    }
    return path_fmt(out, n, "data");
}

int machine_data_file(char *out, size_t n, const char *name)
{
    char dir[PATH_MAX];
    if (data_dir(dir, sizeof dir) != 0) return CB_EUSAGE;
    return path_fmt(out, n, "%s/%s", dir, name);
}

int machine_is_this_machine(const char *instance_type)
{
    return strncmp(instance_type, CB_THIS_MACHINE, strlen(CB_THIS_MACHINE)) == 0;
}
