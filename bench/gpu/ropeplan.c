#include "ropeplan.h"

int ropeplan_vec(int h, int HS, int elem_bytes)
{
    for (int v = 8; v > 1; v /= 2)
        if (v * elem_bytes <= 16 && h % v == 0 && HS % v == 0) return v;
    return 1;
}

static int fill(size_t items, int vec, ropeplan_launch *out)
{
    size_t blocks = (items + ROPEPLAN_THREADS - 1) / ROPEPLAN_THREADS;
    if (blocks > 2147483647u) return -1;
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
