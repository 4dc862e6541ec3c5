/* test_gpurope.c: the launch geometry of the rotary CUDA kernels (kernels/ropeplan.h), which
 * runs on every machine: the vector widths the presets' heads get, the thread counts worked by
 * hand, the refusal past 32-bit indexing, and the multiply-shift division against '/'. The
 * kernels themselves are checked by `costbench-gpu test` on a GPU. */
#include <stdint.h>

#include "check.h"
#include "../kernels/ropeplan.h"

static void test_gpurope_vec(void)
{
    /* {h, HS, elem_bytes, vec}: at most 16 bytes, dividing h and HS */
    static const int cases[][4] = {
        {8, 64, 2, 8},  /* pythia-160m bf16: r 16 */
        {8, 64, 4, 4},  /* pythia-160m fp32 */
        {16, 128, 2, 8}, /* pythia-6.9b bf16: r 32 */
        {12, 96, 2, 4}, /* neox-20b bf16: r 24, 12 = 4 x 3 */
        {12, 96, 4, 4}, /* neox-20b fp32 */
        {3, 10, 4, 1},  /* r/2 odd: one element a thread */
        {2, 10, 2, 2},
        {4, 9, 4, 1},   /* HS odd */
        {0, 64, 2, 8},  /* no rotation: zero_freq's vectors over HS */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = ropeplan_vec(cases[i][0], cases[i][1], cases[i][2]);
        CHECK(got == cases[i][3], "h %d HS %d %d-byte: vec %d, expected %d", cases[i][0], cases[i][1], cases[i][2], got,
              cases[i][3]);
    }
}

static void test_gpurope_geometry(void)
{
    ropeplan_launch p;
    /* pythia-160m bf16 at 65536 tokens: 65536 x 24 head blocks x (8 / 8) = 1572864 threads, 6144 blocks */
    CHECK(ropeplan_fused(65536, 12, 64, 16, 2, &p) == 0 && p.vec == 8 && p.items == 1572864 && p.blocks == 6144,
          "pythia-160m fused bf16: vec %d items %zu blocks %u", p.vec, p.items, p.blocks);
    /* neox-20b fp32: 65536 x 128 x (12 / 4) = 25165824 threads, 98304 blocks */
    CHECK(ropeplan_fused(65536, 64, 96, 24, 4, &p) == 0 && p.vec == 4 && p.items == 25165824 && p.blocks == 98304,
          "neox-20b fused fp32: vec %d items %zu blocks %u", p.vec, p.items, p.blocks);
    /* pythia-6.9b bf16 zero_freq: 2 x 65536 x 32 x (128 / 8) = 67108864 threads */
    CHECK(ropeplan_zero_freq(65536, 32, 128, 32, 2, &p) == 0 && p.vec == 8 && p.items == 67108864 &&
              p.blocks == 262144,
          "pythia-6.9b zero_freq bf16: vec %d items %zu blocks %u", p.vec, p.items, p.blocks);
    /* r = 0: no fused thread, no block */
    CHECK(ropeplan_fused(4, 2, 64, 0, 4, &p) == 0 && p.items == 0 && p.blocks == 0, "r 0: items %zu", p.items);
    /* past 2^32 - 1 threads: refused (2^24 tokens x 128 head blocks x 16 vectors = 2^35) */
    CHECK(ropeplan_fused(1L << 24, 64, 128, 128, 4, &p) == -1, "2^35 fused threads accepted");
    CHECK(ropeplan_blocks(0, 100) == 0 && ropeplan_blocks(1, 100) == 1 && ropeplan_blocks(257, 100) == 2 &&
              ropeplan_blocks(1000000, 100) == 100,
          "ropeplan_blocks");
}

/* splitmix-style scramble for sample dividends */
static unsigned next_u32(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (unsigned)((z ^ (z >> 31)) >> 32);
}

static void test_gpurope_divider(void)
{
    static const unsigned divisors[] = {1, 2, 3, 5, 7, 8, 12, 24, 48, 64, 96, 128, 192, 2048, 3000, 65535, 65536,
                                        1u << 31, (1u << 31) + 1, 4294967295u};
    uint64_t seed = 1;
    int bad = 0;
    for (size_t i = 0; i < sizeof divisors / sizeof divisors[0]; i++) {
        const unsigned d = divisors[i];
        const ropeplan_div v = ropeplan_divider(d);
        const unsigned edge[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, 2147483647u, 2147483648u, 4294967295u};
        for (int k = 0; k < 10 + 20000; k++) {
            const unsigned n = k < 10 ? edge[k] : next_u32(&seed) >> (k % 32);
            if (ropeplan_quot(&v, n) != n / d && bad++ < 5)
                CHECK(0, "%u / %u: %u, expected %u", n, d, ropeplan_quot(&v, n), n / d);
        }
    }
    for (unsigned d = 1; d <= 4096; d++) { /* every small divisor over the dividends around its multiples */
        const ropeplan_div v = ropeplan_divider(d);
        for (unsigned n = 0; n < 8 * d + 2 && bad < 5; n += d / 4 + 1)
            if (ropeplan_quot(&v, n) != n / d) {
                CHECK(0, "%u / %u: %u", n, d, ropeplan_quot(&v, n));
                bad++;
            }
    }
    ropeplan_div z = ropeplan_divider(0);
    CHECK(ropeplan_quot(&z, 77) == 0, "divider of 0");
}

const test_case tests_gpurope[] = {
    {"gpurope_vec", test_gpurope_vec},
    {"gpurope_geometry", test_gpurope_geometry},
    {"gpurope_divider", test_gpurope_divider},
    {NULL, NULL},
};
