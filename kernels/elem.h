/* elem.h: element access for kernels written once for both storage types, fp32 and bf16, with
 * fp32 arithmetic either way. A body written against E (the element type), SFX(name) (the
 * instance's name: name for fp32, name_bf16 for bf16) and ELEM(helper) (helper_f32 or
 * helper_bf16, the functions below) is compiled once per type (rope_elem.inc, included by rope.c
 * with each definition). The helpers, TY = f32 or bf16:
 *   elem_ld_TY(p, i)          element i of p as a float (bf16: widened, exact)
 *   elem_st_TY(p, i, v)       v stored as element i of p (bf16: rounded as bf16_from_float)
 *   elem_vld_TY(p, left)      (ELEM_VEC builds: AVX-512 with VMATH_BF16) the first min(left, 16)
 *                             elements at p in 16 fp32 lanes, the others 0
 *   elem_vst_TY(p, x, left)   the first min(left, 16) lanes of x stored at p
 * fp32 loads and stores are the plain ones: an fp32 instance compiles to what a kernel written
 * for float alone would. */
#ifndef CB_ELEM_H
#define CB_ELEM_H

#include <stddef.h>

#include "bf16.h"
#include "vmath.h"

static inline float elem_ld_f32(const float *p, size_t i) { return p[i]; }
static inline void elem_st_f32(float *p, size_t i, float v) { p[i] = v; }
static inline float elem_ld_bf16(const bf16 *p, size_t i) { return bf16_to_float(p[i]); }
static inline void elem_st_bf16(bf16 *p, size_t i, float v) { p[i] = bf16_from_float(v); }

#if defined(__AVX512F__) && defined(VMATH_BF16)
#define ELEM_VEC 1
static inline __m512 elem_vld_f32(const float *p, long left) { return _mm512_maskz_loadu_ps(vmask_tail(left), p); }
static inline void elem_vst_f32(float *p, __m512 x, long left) { _mm512_mask_storeu_ps(p, vmask_tail(left), x); }
static inline __m512 elem_vld_bf16(const bf16 *p, long left) { return vbf16_load512(p, left); }
static inline void elem_vst_bf16(bf16 *p, __m512 x, long left) { vbf16_store512(p, x, left); }
#endif

/* A span of n elements as floats: an fp32 span is read where it is; a bf16 span is widened into
 * buf (n floats). elem_out_*: where a float result for the span goes (fp32: the span itself,
 * bf16: buf); elem_commit_*: puts it in the span (fp32: nothing to do, bf16: narrowed). */
static inline const float *elem_view_f32(const float *x, float *buf, int n)
{
    (void)buf, (void)n;
    return x;
}
static inline float *elem_out_f32(float *o, float *buf)
{
    (void)buf;
    return o;
}
static inline void elem_commit_f32(float *o, const float *f, int n) { (void)o, (void)f, (void)n; }

static inline const float *elem_view_bf16(const bf16 *x, float *buf, int n)
{
    for (int d = 0; d < n; d++) buf[d] = bf16_to_float(x[d]);
    return buf;
}
static inline float *elem_out_bf16(bf16 *o, float *buf)
{
    (void)o;
    return buf;
}
static inline void elem_commit_bf16(bf16 *o, const float *f, int n)
{
#ifdef ELEM_VEC
    for (int d = 0; d < n; d += 16) vbf16_store512(o + d, _mm512_loadu_ps(f + d), n - d);
#else
    for (int d = 0; d < n; d++) o[d] = bf16_from_float(f[d]);
#endif
}

#endif
