/* mem.h: overflow-checked, 64-byte aligned allocation and this machine's memory. */
#ifndef CB_MEM_H
#define CB_MEM_H

#include <stddef.h>

#define CB_ALIGN 64

/* n floats rounded up to a whole number of CB_ALIGN-byte lines (16 floats), so that arrays laid
 * back to back in one allocation each start aligned. */
static inline size_t mem_round_floats(size_t n)
{
    const size_t per = CB_ALIGN / sizeof(float);
    return (n + per - 1) / per * per;
}

/* count*size bytes, 64-byte aligned, or NULL (with an error naming `what`) on overflow or
 * failure. Free with free(). */
void *mem_alloc(size_t count, size_t size, const char *what);
/* Same, zero-filled. */
void *mem_calloc(size_t count, size_t size, const char *what);
/* a*b (and a*b*c) in bytes with overflow detection: returns 0 and sets *out, or -1. */
int mem_mul(size_t a, size_t b, size_t *out);
/* This machine's total memory (MemTotal) and what is available now (MemAvailable), bytes. */
double mem_total_bytes(void);
double mem_available_bytes(void);
/* Refuses (CB_EUSAGE, one line with both figures) when need_bytes exceeds 90% of the
 * available memory. `what` describes the need ("matmul N=16384 K=6144"). */
int mem_check_fits(double need_bytes, const char *what);
/* Peak resident set size of this process so far (VmHWM), bytes; 0 if unknown. */
double mem_peak_rss_bytes(void);

#endif
