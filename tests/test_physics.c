/* test_physics.c: the device figures as the step model uses them (report/predict/stepmodel.h),
 * worked by hand on a toy: the attention curve at the sequence length the kernel sees, the link's
 * efficiency and latency, fp8 as frameworks run it (block Linear layers only, the casts as memory
 * traffic, the blended peak every check uses). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../report/predict/stepmodel.h"
#include "check.h"
#include "steptoy.h"

/* A made-up device: 100 TFLOP/s BF16, 200 FP8, 1000 GB/s, 8 per node on a 100 GB/s link, gemm_eff
 * 0.5, fp8_gemm_eff 0.4, attention 0.6 s / (s + 128), mem_eff 0.5, link_eff 0.8, 2 us a ring
 * step, no launch cost; a 2-layer toy model. */
/* The step model's toy device (tests/util.c test_toy_step) with the kernel figures of
 * data/devices.csv's new columns: an FP8 peak of 200 TFLOP/s at fp8_gemm_eff 0.4, the attention
 * curve 0.6 s / (s + 128), a link at 0.8 of its bandwidth and 2 us a hop. */
static void toy(scale_model *s)
{
    test_toy_step(s);
    hw_row *h = &s->hw;
    h->fp8_tflops = 200, h->fp8_gemm_eff = 0.4, h->attn_eff_max = 0.6, h->attn_s_half = 128;
    h->link_eff = 0.8, h->link_latency_us = 2;
}

static double f_dim(double x) { return x / (x + STEP_GEMM_HALF_DIM); }

/* The attention core at 0.6 s / (s + 128) of the peak, s the kernel's query block: 128 at cp 1 (0.3),
 * 64 at cp 2 (0.2); a device without a curve keeps its flat figure. */
static void test_attention_curve(void)
{
    scale_model s;
    toy(&s);
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX);
    const op_entry *a = test_find_op(ops, n, "attn_core", "fwd");
    CHECK(a && fabs(step_op_time(&s, a) / (a->flops / (0.3 * 100e12)) - 1) < 1e-6, "cp 1: attention at 0.3 of the peak");
    s.cp = 2;
    n = step_ops(&s, 1, ops, OP_LIST_MAX);
    a = test_find_op(ops, n, "attn_core", "fwd");
    CHECK(a && a->n == 64 && fabs(step_op_time(&s, a) / (a->flops / (0.2 * 100e12)) - 1) < 1e-6,
          "cp 2: the kernel sees 64 queries, at 0.2 of the peak");
    s.hw.attn_eff_max = NAN, s.hw.attn_s_half = NAN;
    CHECK(a && fabs(step_op_time(&s, a) / (a->flops / (0.25 * 100e12)) - 1) < 1e-6, "no curve: the flat attn_eff");
    CHECK(fabs(step_attn_eff(&s.hw, 1e9) - 0.25) < 1e-12, "no curve: flat at any length");
}

/* One TP all-reduce at tp 2 of n x C 16-bit values: 2 (t - 1) / t x bytes / (100 GB/s x 0.8) +
 * 2 (t - 1) x 2 us; the defaults where the device gives none. */
static void test_link_figures(void)
{
    scale_model s;
    toy(&s);
    s.tp = 2;
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX);
    const op_entry *t = test_find_op(ops, n, "tp_collective", "fwd");
    double bytes = 256.0 * 256 * 2, want = bytes / 80e9 + 2 * 2e-6;
    CHECK(t && t->bytes == bytes && fabs(step_op_time(&s, t) / want - 1) < 1e-9, "all-reduce: %.9g s, by hand %.9g",
          t ? step_op_time(&s, t) : 0, want);
    s.hw.link_eff = NAN, s.hw.link_latency_us = NAN;
    want = bytes / (100e9 * STEP_LINK_EFF) + 2 * STEP_LINK_LATENCY_US * 1e-6;
    CHECK(t && fabs(step_op_time(&s, t) / want - 1) < 1e-9, "no device figure: STEP_LINK_EFF and its latency");
}

/* fp8: the four block Linear layers at 0.4 x f f f of the FP8 peak, forward and backward; the logits
 * and attention 16-bit; each fp8 Linear's input cast forward (4 B per element), its output gradient
 * backward, its weight once per step. */
static void test_fp8_list(void)
{
    scale_model s;
    toy(&s);
    s.fp8 = 1;
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX), fp8 = 0, casts_f = 0, casts_b = 0;
    double cast_f = 0, cast_b = 0, cast_step = 0;
    for (int i = 0; i < n; i++) {
        const op_entry *e = &ops[i];
        if (e->kind == OPK_GEMM) {
            int block = strcmp(e->name, "logits") != 0;
            CHECK(e->fp8 == block, "%s %s: fp8 %d", e->name, e->phase, e->fp8);
            fp8 += e->fp8;
        }
        if (strcmp(e->name, "fp8_cast") != 0) continue;
        if (e->pass == OPP_FWD) casts_f++, cast_f += e->bytes;
        if (e->pass == OPP_BWD) casts_b++, cast_b += e->bytes;
        if (e->scope == OPS_STEP) cast_step += e->bytes;
    }
    CHECK(fp8 == 12 && casts_f == 4 && casts_b == 4, "12 fp8 GEMMs, 4 casts forward and 4 backward: %d %d %d", fp8,
          casts_f, casts_b);
    /* the toy (n = 256 rows, C 256, qkv 768, MLP 1024): inputs 256 + 256 + 256 + 1024 wide, outputs 768 + 256 +
     * 1024 + 256; weights 256 x 768 + 256 x 256 + 256 x 1024 + 1024 x 256 per layer, 2 layers */
    CHECK(cast_f == 256.0 * (256 + 256 + 256 + 1024) * 4 && cast_b == 256.0 * (768 + 256 + 1024 + 256) * 4,
          "cast bytes forward %g, backward %g", cast_f, cast_b);
    CHECK(cast_step == 2.0 * (256 * 768 + 256 * 256 + 256 * 1024 + 1024 * 256) * 4, "weight casts %g a step", cast_step);
    const op_entry *q = test_find_op(ops, n, "qkv", "fwd");
    double want = q ? q->flops / (0.4 * f_dim(256) * f_dim(256) * f_dim(768) * 200e12) : 0;
    CHECK(q && fabs(step_op_time(&s, q) / want - 1) < 1e-6, "an fp8 GEMM at 0.4 of the FP8 peak");
    const op_entry *lg = test_find_op(ops, n, "logits", "fwd");
    want = lg ? lg->flops / (0.5 * f_dim(256) * f_dim(256) * f_dim(1024) * 100e12) : 0;
    CHECK(lg && fabs(step_op_time(&s, lg) / want - 1) < 1e-6, "the logits at 0.5 of the BF16 peak");
}

/* The blended peak: x of the FLOPs at the FP8 peak (2x), the rest at BF16: 1 / ((1 - x) + x / 2) of
 * BF16; a run that is not fp8 keeps its peak. */
static void test_fp8_blend(void)
{
    scale_model s;
    toy(&s);
    step_profile_fill(&s);
    CHECK(scale_peak_blend(&s) == 1.0 && step_profile_get(&s)->fp8_flops_share == 0, "bf16: no blend");
    double bf16 = scale_peak_per_instance(&s);
    s.fp8 = 1;
    step_profile_fill(&s);
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX);
    double f8 = 0, all = 0;
    for (int i = 0; i < n; i++)
        if (ops[i].kind == OPK_GEMM || ops[i].kind == OPK_ATTN) {
            double fl = ops[i].flops * op_times(&ops[i], 2, 1, 1);
            all += fl, f8 += ops[i].fp8 ? fl : 0;
        }
    double x = f8 / all, want = 1.0 / ((1 - x) + x / 2.0);
    CHECK(fabs(step_profile_get(&s)->fp8_flops_share - x) < 1e-12 && x > 0.5 && x < 1,
          "the fp8 share %.4f, by hand %.4f", step_profile_get(&s)->fp8_flops_share, x);
    CHECK(fabs(scale_peak_per_instance(&s) / bf16 - want) < 1e-12 && want > 1 && want < 2,
          "the blended peak %.4f x BF16, by hand %.4f", scale_peak_per_instance(&s) / bf16, want);
}

/* Ring attention at cp 2: per layer one K/V send forward (b x s / cp x KVH x HS x 2 x 2 B) and one of
 * twice the bytes backward, each bytes / (100 GB/s x 0.8) + 2 us; exposed only past the attention. */
static void test_cp_sends(void)
{
    scale_model s;
    toy(&s);
    s.cp = 2;
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX);
    const op_entry *f = test_find_op(ops, n, "cp_kv_send", "fwd"), *b = test_find_op(ops, n, "cp_kv_send", "bwd");
    double kv = 2.0 * 64 * 4 * 64 * 2 * 2;
    CHECK(f && b && f->bytes == kv && b->bytes == 2 * kv && f->count == 1, "K/V chunk %g bytes, backward %g",
          f ? f->bytes : 0, b ? b->bytes : 0);
    CHECK(f && fabs(step_op_time(&s, f) / (kv / 80e9 + 2e-6) - 1) < 1e-9, "one ring step over the link");
    step_profile_fill(&s);
    const step_profile *p = step_profile_get(&s);
    double sends = 2.0 * (step_op_time(&s, f) + step_op_time(&s, b)); /* 2 layers */
    CHECK(fabs(p->parts.cp_s / sends - 1) < 1e-9 && p->cp_per_mb_s == fmax(0, sends - p->parts.attn_s),
          "exposed %.4g s of %.4g s sent against %.4g s of attention", p->cp_per_mb_s, sends, p->parts.attn_s);
    s.hw.intra_gb_per_s = 0.01; /* a slow link: the sends outlast the attention */
    step_profile_fill(&s);
    p = step_profile_get(&s);
    CHECK(p->cp_per_mb_s > 0 && fabs(p->cp_per_mb_s - (p->parts.cp_s - p->parts.attn_s)) < 1e-12 &&
              step_comm_per_mb(&s) >= p->cp_per_mb_s,
          "a slow link: %.4g s exposed", p->cp_per_mb_s);
    s.cp = 1;
    n = step_ops(&s, 1, ops, OP_LIST_MAX);
    CHECK(!test_find_op(ops, n, "cp_kv_send", "fwd"), "cp 1: no sends");
}

/* The fp8 casts of the toy (tests above: n = 256 rows; inputs 256, 256, 256, 1024 wide, qkv's and
 * mlp_up's from a norm; output gradients 768, 256, 1024, 256; weights 2 layers of 256 x 768, 256 x
 * 256, 256 x 1024, 1024 x 256) under each recipe, bytes by pass: forward, backward, per step. */
static void fp8_cast_bytes_of(scale_model *s, int recipe, double out[3])
{
    s->fp8 = 1, s->fp8_recipe = recipe;
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(s, 1, ops, OP_LIST_MAX);
    out[0] = out[1] = out[2] = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(ops[i].name, "fp8_cast") == 0)
            out[ops[i].pass == OPP_FWD ? 0 : ops[i].pass == OPP_BWD ? 1 : 2] += ops[i].bytes;
}

/* Current scaling adds the amax pass, a 2-byte read of each tensor before its cast, except the inputs a
 * norm feeds (qkv, mlp_up: TE's LayerNorm takes their amax); MXFP8 adds a 1-byte scale per 32
 * elements to each of its two copies and no amax pass; delayed stays at 4 B. */
static void test_fp8_recipes(void)
{
    scale_model s;
    toy(&s);
    double d[3], c[3], m[3];
    fp8_cast_bytes_of(&s, OP_FP8_DELAYED, d);
    fp8_cast_bytes_of(&s, OP_FP8_CURRENT, c);
    fp8_cast_bytes_of(&s, OP_FP8_MXFP8, m);
    const double x = 256.0 * (256 + 256 + 256 + 1024), dy = 256.0 * (768 + 256 + 1024 + 256);
    const double w = 2.0 * (256 * 768 + 256 * 256 + 256 * 1024 + 1024 * 256);
    CHECK(d[0] == 4 * x && d[1] == 4 * dy && d[2] == 4 * w, "delayed: 4 B an element: %g %g %g", d[0], d[1], d[2]);
    /* the amax pass: attn_out's (256 wide) and mlp_down's (1024) inputs, every output gradient, every weight */
    const double amax_x = 256.0 * (256 + 1024) * 2;
    CHECK(c[0] - d[0] == amax_x && c[0] == 256.0 * (256 * 4 + 256 * 6 + 256 * 4 + 1024 * 6),
          "current, forward: + %g B of amax reads (by hand %g)", c[0] - d[0], amax_x);
    CHECK(c[1] == 6 * dy && c[2] == 6 * w, "current: 6 B an element backward and for the weights: %g %g", c[1], c[2]);
    CHECK(m[0] == x * (4 + 2.0 / 32) && m[1] == dy * (4 + 2.0 / 32) && m[2] == w * (4 + 2.0 / 32),
          "mxfp8: 4 + 2/32 B an element: %g %g %g", m[0], m[1], m[2]);
    CHECK(op_fp8_cast_bytes(OP_FP8_CURRENT, 1) == 4 && op_fp8_cast_bytes(OP_FP8_CURRENT, 0) == 6 &&
              op_fp8_cast_bytes(OP_FP8_MXFP8, 0) == 4.0625 && op_fp8_cast_bytes(OP_FP8_DELAYED, 0) == 4,
          "bytes an element: current 4 (amax known) / 6, mxfp8 4.0625, delayed 4");
    /* the recipe is part of the step: a profile filled for delayed is not the current one's */
    s.fp8_recipe = OP_FP8_DELAYED;
    step_profile_fill(&s);
    double md = step_profile_get(&s)->parts.mem_s;
    s.fp8_recipe = OP_FP8_CURRENT;
    step_profile_fill(&s);
    CHECK(step_profile_get(&s)->parts.mem_s > md, "current scaling's memory time %.4g s > delayed's %.4g s",
          step_profile_get(&s)->parts.mem_s, md);
}

/* The backward TP collectives under the column-parallel layers' weight gradients (tp_bwd_overlap) on
 * the toy at tp 2: one collective is the all-reduce of test_link_figures, c = 2 (1/2) 131072 B / 80 GB/s
 * + 2 x 2 us; the wgrads at tp 2 are qkv 384 x 256 x 256 (2 x 384 x 256 x 256 FLOPs at 0.5 f(384) f(256)
 * f(256) of 100 TFLOP/s) and mlp_up 512 x 256 x 256; per layer each block's backward collective exposes
 * max(0, c - wgrad); with sequence parallelism only its reduce-scatter half (c / 2) hides, the
 * all-gather half stays exposed. Forward: 2 collectives a layer, all exposed. */
static void test_tp_bwd_overlap(void)
{
    scale_model s;
    toy(&s);
    s.tp = 2;
    double c = 2 * 0.5 * 131072.0 / 80e9 + 2 * 2e-6;
    double wq = 2.0 * 384 * 256 * 256 / (0.5 * f_dim(384) * f_dim(256) * f_dim(256) * 100e12);
    double wu = 2.0 * 512 * 256 * 256 / (0.5 * f_dim(512) * f_dim(256) * f_dim(256) * 100e12);
    double fwd = 2 * 2 * c; /* 2 layers, 2 collectives each */
    step_profile_fill(&s);
    const step_profile *p = step_profile_get(&s);
    CHECK(fabs(p->tp_per_mb_s / (fwd + 2 * 2 * c) - 1) < 1e-6, "off: all 8 collectives exposed, %.6g s (by hand %.6g)",
          p->tp_per_mb_s, fwd + 4 * c);
    s.tp_bwd_overlap = 1;
    step_profile_fill(&s);
    p = step_profile_get(&s);
    double want = fwd + 2 * (fmax(0, c - wq) + fmax(0, c - wu));
    CHECK(wq < c && wu < c && fabs(p->tp_per_mb_s / want - 1) < 1e-6,
          "on: backward exposed past the wgrads (c %.4g us, wgrads %.4g %.4g us): %.6g s, by hand %.6g", c * 1e6,
          wq * 1e6, wu * 1e6, p->tp_per_mb_s, want);
    s.sp = 1;
    step_profile_fill(&s);
    p = step_profile_get(&s);
    want = fwd + 2 * (c / 2 + fmax(0, c / 2 - wq) + c / 2 + fmax(0, c / 2 - wu));
    CHECK(c / 2 < wq && fabs(p->tp_per_mb_s / want - 1) < 1e-6,
          "sequence parallel: the all-gather halves exposed, the reduce-scatters hidden: %.6g s, by hand %.6g",
          p->tp_per_mb_s, want);
    s.tp_overlap = 1; /* userbuffers: every collective under the stage's GEMMs, as before */
    step_profile_fill(&s);
    p = step_profile_get(&s);
    CHECK(p->tp_per_mb_s == fmax(0, p->parts.tp_s - p->parts.gemm_s), "tp_overlap: under all the GEMMs");
}

/* gemm_half_dim: a device's own h in the shape factor, f(x) = x / (x + h); STEP_GEMM_HALF_DIM without one. */
static void test_gemm_half_dim(void)
{
    scale_model s;
    toy(&s);
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX);
    const op_entry *q = test_find_op(ops, n, "qkv", "fwd");
    double f448 = q ? (q->n / (q->n + 448.0)) * (q->k / (q->k + 448.0)) * (q->m / (q->m + 448.0)) : 0;
    double f128 = q ? f_dim((double)q->n) * f_dim((double)q->k) * f_dim((double)q->m) : 0;
    double t128 = q ? step_op_time(&s, q) : 0;
    s.hw.gemm_half_dim = 448;
    CHECK(q && fabs(step_op_time(&s, q) / (q->flops / (0.5 * f448 * 100e12)) - 1) < 1e-6,
          "h 448: the GEMM at 0.5 x f(n) f(k) f(m) of the peak");
    CHECK(q && fabs(t128 / (q->flops / (0.5 * f128 * 100e12)) - 1) < 1e-6, "no gemm_half_dim: 128");
}

const test_case tests_physics[] = {
    {"physics: a GEMM at the shape factor of the device's gemm_half_dim, 128 without one", test_gemm_half_dim},
    {"physics: fp8 recipes: current scaling's amax pass (+2 B), mxfp8's block scales (+2/32 B), delayed 4 B",
     test_fp8_recipes},
    {"physics: the backward TP collectives under the wgrad GEMMs: exposed max(0, comm - wgrad), SP's all-gathers "
     "exposed",
     test_tp_bwd_overlap},
    {"physics: ring attention (cp 2) sends K and V cp - 1 times forward, twice the bytes backward, exposed past the "
     "attention",
     test_cp_sends},
    {"physics: attention at the device's curve at the kernel's sequence length (s / cp), flat without one",
     test_attention_curve},
    {"physics: a TP ring at the device's link_eff and latency, the defaults without them", test_link_figures},
    {"physics: fp8 runs the block Linear layers at fp8_gemm_eff of the FP8 peak, casts as memory traffic",
     test_fp8_list},
    {"physics: an fp8 run's peak checks are against the blend of FP8 and BF16 peaks of its FLOPs", test_fp8_blend},
    {0},
};
