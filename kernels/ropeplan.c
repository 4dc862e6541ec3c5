#include "ropeplan.h"

int ropeplan_vec(int h, int HS, int elem_bytes)
{
    for (int v = 8; v > 1; v /= 2)
        if (v * elem_bytes <= 16 && h % v == 0 && HS % v == 0) return v;
    return 1;
}

static int fill(size_t items, int vec, ropeplan_launch *out)
{
    if (items > 4294967295u) return -1;
    size_t blocks = (items + ROPEPLAN_THREADS - 1) / ROPEPLAN_THREADS;
    out->vec = vec;
    out->items = items;
    out->blocks = (unsigned)blocks;
    return 0;
}

int ropeplan_fused(long tokens, int NH, int HS, int r, int elem_bytes, ropeplan_launch *out)
{
    const int h = r / 2, vec = ropeplan_vec(h, HS, elem_bytes);
    return fill((size_t)tokens * 2 * (size_t)NH * (size_t)(h / vec), vec, out);
}

int ropeplan_zero_freq(long tokens, int NH, int HS, int r, int elem_bytes, ropeplan_launch *out)
{
    const int vec = ropeplan_vec(r / 2, HS, elem_bytes);
    return fill(2 * (size_t)tokens * (size_t)NH * (size_t)(HS / vec), vec, out);
}

unsigned ropeplan_blocks(size_t n, unsigned max_blocks)
{
    size_t b = (n + ROPEPLAN_THREADS - 1) / ROPEPLAN_THREADS;
    return b < max_blocks ? (unsigned)b : max_blocks;
}

ropeplan_div ropeplan_divider(unsigned d)
{
    ropeplan_div v = {d, 0, 0};
    if (d == 0) return v;
    while (v.shift < 32 && (UINT64_C(1) << v.shift) < d) v.shift++; /* ceil(log2 d) */
    /* magic = floor(2^32 (2^shift - d) / d) + 1 < 2^32 */
    v.magic = (unsigned)(((UINT64_C(1) << 32) * ((UINT64_C(1) << v.shift) - d)) / d + 1);
    return v;
}
