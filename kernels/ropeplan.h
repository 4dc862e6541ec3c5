/* ropeplan.h: the launch geometry of the rotary CUDA kernels (kernels/cuda/rope.cu), in plain C so
 * that `make test` checks it on every machine. A thread of the fused and zero_freq kernels handles
 * `vec` consecutive dims of a head (fused: vec pairs, dims i..i+vec-1 and h+i..h+i+vec-1), loaded
 * and stored as one aligned vector; vec is the largest of 8, 4, 2, 1 that fits 16 bytes and
 * divides both h = r/2 and HS, so that no vector straddles the rotated half, the rotated part or a
 * head, and every vector starts on its own size (the buffers come from cudaMalloc, 256-byte
 * aligned). The reference's kernels are one element per thread. */
#ifndef CB_ROPEPLAN_H
#define CB_ROPEPLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ROPEPLAN_THREADS 256 /* threads per block of every rotary kernel */

typedef struct {
    int vec;           /* elements per thread and half (fused) or per thread (zero_freq) */
    size_t items;      /* threads with work: one per vector */
    unsigned blocks;   /* ceil(items / ROPEPLAN_THREADS); 0 when items is 0 */
} ropeplan_launch;

/* The vector width for half-rotation h, head size HS and elements of elem_bytes (4 fp32, 2 bf16). */
int ropeplan_vec(int h, int HS, int elem_bytes);
/* fused: B*T tokens x 2 NH head blocks (q and k) x h/vec vectors. Returns 0, or -1 when the
 * items pass 2^32 - 1 (the kernels index in 32 bits). */
int ropeplan_fused(long tokens, int NH, int HS, int r, int elem_bytes, ropeplan_launch *out);
/* zero_freq: 2 tensors (q, k) x B*T*NH rows x HS/vec vectors. Returns 0 or -1 as above. */
int ropeplan_zero_freq(long tokens, int NH, int HS, int r, int elem_bytes, ropeplan_launch *out);
/* Division of a 32-bit index by a divisor fixed at launch, as a multiply-high, an add and a shift
 * (Granlund and Montgomery 1994, "Division by invariant integers using multiplication", fig. 4.1;
 * PyTorch's IntDivider): n / d = (umulhi(n, magic) + n) >> shift, the sum taken in 64 bits, for
 * every n < 2^32. Integer division is a long instruction sequence on a GPU, and the index
 * arithmetic is most of what the kernels compute besides their loads and stores. */
typedef struct {
    unsigned d, magic, shift;
} ropeplan_div;
/* The divider of d >= 1 (d = 0 gives one that returns 0: a kernel dividing by it never runs). */
ropeplan_div ropeplan_divider(unsigned d);
/* n / d as the kernels compute it (the host's twin of their __umulhi). */
static inline unsigned ropeplan_quot(const ropeplan_div *v, unsigned n)
{
    const uint64_t hi = ((uint64_t)n * v->magic) >> 32;
    return v->d ? (unsigned)((hi + n) >> v->shift) : 0;
}

/* One element per thread over n elements (the reference's ops), the grid capped at `max_blocks`
 * blocks (each thread then strides over the rest). */
unsigned ropeplan_blocks(size_t n, unsigned max_blocks);

#ifdef __cplusplus
}
#endif

#endif
