#include "mem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

int mem_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}

void *mem_alloc(size_t count, size_t size, const char *what)
{
    size_t bytes;
    if (mem_mul(count, size, &bytes) != 0 || bytes > SIZE_MAX - CB_ALIGN) {
        err_msg("%s: size overflows (%zu x %zu bytes)", what, count, size);
        return NULL;
    }
    bytes = (bytes + CB_ALIGN - 1) / CB_ALIGN * CB_ALIGN;
    if (bytes == 0) bytes = CB_ALIGN;
    void *p = aligned_alloc(CB_ALIGN, bytes);
    if (!p) err_msg("%s: out of memory allocating %.3f GiB", what, (double)bytes / 1073741824.0);
    return p;
}

void *mem_calloc(size_t count, size_t size, const char *what)
{
    void *p = mem_alloc(count, size, what);
    if (p) memset(p, 0, count * size);
    return p;
}

static double meminfo_field(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            kb = strtod(line + klen + 1, NULL);
            break;
        }
    fclose(f);
    return kb * 1024.0;
}

double mem_total_bytes(void) { return meminfo_field("MemTotal"); }
double mem_available_bytes(void) { return meminfo_field("MemAvailable"); }

int mem_check_fits(double need_bytes, const char *what)
{
    double avail = mem_available_bytes(), total = mem_total_bytes();
    if (avail <= 0) return 0; /* unknown: cannot refuse honestly */
    if (need_bytes > 0.9 * avail)
        return err_usage("%s needs %.1f GiB; this machine has %.1f GiB available (%.1f GiB total)", what,
                         need_bytes / 1073741824.0, avail / 1073741824.0, total / 1073741824.0);
    return 0;
}

double mem_peak_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kb = strtod(line + 6, NULL);
            break;
        }
    fclose(f);
    return kb * 1024.0;
}
