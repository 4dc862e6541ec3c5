/* test_opbench.c: the operation list (common/oplist.h) as the benchmarks read it, worked by hand
 * on a tiny GPT-NeoX config (L=2, C=64, NH=4, HS=16, ffn 256, V=512) at B=2, T=8 (n = 16 rows):
 * GEMM shapes and FLOPs, tensor parallelism, the PaLM FLOP count, tiled attention's causal half,
 * full recomputation, and `costbench matmul --shapes transformer` listing exactly its GEMMs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench/matmul_bench.h"
#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/oplist.h"
#include "../common/presets.h"
#include "check.h"

#define FWD (1u << OPP_FWD)
#define BWD (1u << OPP_BWD)
#define RECOMPUTE (1u << OPP_RECOMPUTE)

static model_config tiny(void)
{
    model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "tiny");
    c.L = 2, c.C = 64, c.NH = 4, c.HS = 16, c.ffn = 256, c.V = 512, c.max_T = 64;
    c.pos = POS_ROTARY, c.rotary_pct = 0.25, c.rotary_base = 10000;
    return c;
}

static op_layout layout(int tp, op_recompute rc, op_attention att)
{
    op_layout l = {.micro_batch = 2, .seq = 8, .tp = tp, .pp = 1, .cp = 1, .sp = 0, .recompute = rc, .attention = att,
                   .act_bytes = 4, .weight_bytes = 4, .grad_bytes = 4, .optim_bytes = 28, .zero = 0, .dp = 1};
    return l;
}

static int list(const model_config *c, const op_layout *l, op_entry *ops)
{
    int n = op_list(c, l, ops, OP_LIST_MAX);
    CHECK(n > 0, "op_list refused the tiny config (tp %d)", l->tp);
    return n;
}

/* The entry of name, kind, pass and phase (NULL, after a failed check, when there is none). */
static const op_entry *find(const op_entry *ops, int n, const char *name, op_kind kind, op_pass pass, const char *phase)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ops[i].name, name) == 0 && ops[i].kind == kind && ops[i].pass == pass &&
            strcmp(ops[i].phase, phase) == 0)
            return &ops[i];
    CHECK(0, "no %s %s entry (pass %s)", name, phase, op_pass_names[pass]);
    return NULL;
}

static int gemms(const op_entry *ops, int n)
{
    int g = 0;
    for (int i = 0; i < n; i++) g += ops[i].kind == OPK_GEMM;
    return g;
}

static void check_gemm(const op_entry *e, long n, long k, long m, double flops)
{
    if (!e) return;
    CHECK(e->n == n && e->k == k && e->m == m, "%s %s: n=%ld k=%ld m=%ld, expected %ld %ld %ld", e->name, e->phase,
          e->n, e->k, e->m, n, k, m);
    CHECK(e->flops == flops, "%s %s: %.17g FLOPs, expected %.17g", e->name, e->phase, e->flops, flops);
}

/* (a) qkv: Y (16 x 192) = X (16 x 64) W^T; dX (16 x 64) = dY (16 x 192) W; dW (192 x 64) = dY^T X */
static void test_opbench_gemm_shapes(void)
{
    model_config c = tiny();
    op_layout l = layout(1, OP_RECOMPUTE_NONE, OP_ATTN_TILED);
    op_entry ops[OP_LIST_MAX];
    int n = list(&c, &l, ops);
    const double f = 2.0 * 16 * 64 * 192; /* 393216 */
    check_gemm(find(ops, n, "qkv", OPK_GEMM, OPP_FWD, "fwd"), 16, 64, 192, f);
    check_gemm(find(ops, n, "qkv", OPK_GEMM, OPP_BWD, "bwd_input"), 16, 192, 64, f);
    check_gemm(find(ops, n, "qkv", OPK_GEMM, OPP_BWD, "bwd_weight"), 192, 16, 64, f);
    check_gemm(find(ops, n, "attn_out", OPK_GEMM, OPP_FWD, "fwd"), 16, 64, 64, 2.0 * 16 * 64 * 64);
    check_gemm(find(ops, n, "mlp_up", OPK_GEMM, OPP_FWD, "fwd"), 16, 64, 256, 2.0 * 16 * 64 * 256);
    check_gemm(find(ops, n, "mlp_down", OPK_GEMM, OPP_FWD, "fwd"), 16, 256, 64, 2.0 * 16 * 256 * 64);
    check_gemm(find(ops, n, "mlp_down", OPK_GEMM, OPP_BWD, "bwd_weight"), 64, 16, 256, 2.0 * 16 * 256 * 64);
    const op_entry *lg = find(ops, n, "logits", OPK_GEMM, OPP_FWD, "fwd");
    check_gemm(lg, 16, 64, 512, 2.0 * 16 * 64 * 512);
    const op_entry *q = find(ops, n, "qkv", OPK_GEMM, OPP_FWD, "fwd");
    if (q)
        CHECK(q->scope == OPS_LAYER && op_times(q, c.L, 1, 1) == 2, "qkv runs once a layer: %g times",
              op_times(q, c.L, 1, 1));
    if (lg)
        CHECK(lg->scope == OPS_LAST && op_times(lg, c.L, 1, 1) == 1 && op_times(lg, c.L, 1, 0) == 0,
              "logits run once, on the last stage only");
    CHECK(gemms(ops, n) == 15, "%d GEMMs, expected 4 linears x 3 + logits x 3 = 15", gemms(ops, n));
}

/* (b) tp=2 halves the weight dimension (qkv's and mlp_up's outputs, attn_out's and mlp_down's
 * inputs, the logits' vocabulary), never the rows; tp x a rank's FLOPs = the unsplit FLOPs. */
static void test_opbench_tp_halves(void)
{
    model_config c = tiny();
    op_layout l1 = layout(1, OP_RECOMPUTE_NONE, OP_ATTN_TILED), l2 = layout(2, OP_RECOMPUTE_NONE, OP_ATTN_TILED);
    op_entry a[OP_LIST_MAX], b[OP_LIST_MAX];
    int na = list(&c, &l1, a), nb = list(&c, &l2, b);
    check_gemm(find(b, nb, "qkv", OPK_GEMM, OPP_FWD, "fwd"), 16, 64, 96, 2.0 * 16 * 64 * 96);
    check_gemm(find(b, nb, "attn_out", OPK_GEMM, OPP_FWD, "fwd"), 16, 32, 64, 2.0 * 16 * 32 * 64);
    check_gemm(find(b, nb, "mlp_up", OPK_GEMM, OPP_FWD, "fwd"), 16, 64, 128, 2.0 * 16 * 64 * 128);
    check_gemm(find(b, nb, "mlp_down", OPK_GEMM, OPP_FWD, "fwd"), 16, 128, 64, 2.0 * 16 * 128 * 64);
    check_gemm(find(b, nb, "logits", OPK_GEMM, OPP_FWD, "fwd"), 16, 64, 256, 2.0 * 16 * 64 * 256);
    int matched = 0;
    for (int i = 0; i < nb; i++) {
        if (b[i].kind != OPK_GEMM) continue;
        const op_entry *e = find(a, na, b[i].name, OPK_GEMM, b[i].pass, b[i].phase);
        if (!e) continue;
        matched++;
        CHECK(2.0 * b[i].flops == e->flops, "%s %s: tp=2 rank %.17g FLOPs x 2 != tp=1 %.17g", b[i].name, b[i].phase,
              b[i].flops, e->flops);
        /* exactly one of the three dimensions halves; the rows of fwd and bwd_input stay 16 */
        int halved = (b[i].n * 2 == e->n) + (b[i].k * 2 == e->k) + (b[i].m * 2 == e->m);
        int same = (b[i].n == e->n) + (b[i].k == e->k) + (b[i].m == e->m);
        CHECK(halved == 1 && same == 2, "%s %s: tp=2 %ld x %ld x %ld against tp=1 %ld x %ld x %ld", b[i].name,
              b[i].phase, b[i].n, b[i].k, b[i].m, e->n, e->k, e->m);
        if (strcmp(b[i].phase, "bwd_weight") != 0)
            CHECK(b[i].n == 16, "%s %s: rows %ld, expected 16", b[i].name, b[i].phase, b[i].n);
    }
    CHECK(matched == 15, "%d tp=2 GEMMs matched, expected 15", matched);
    double f1 = op_list_flops(a, na, c.L, 1, 1, FWD | BWD), f2 = op_list_flops(b, nb, c.L, 1, 1, FWD | BWD);
    CHECK(2.0 * f2 == f1, "tp=2: %.17g FLOPs a rank x 2 != %.17g", f2, f1);
}

/* A rank's GEMM widths and MLP activation bytes under grouped-query attention and SwiGLU (NH 8,
 * KVH 2, HS 8, ffn 128): qkv (NH / tp + 2 max(KVH / tp, 1)) HS, mlp_up 2 ffn / tp, mlp_down in
 * ffn / tp; the activation reads 2 ffn / tp and writes ffn / tp forward (3), reads 3 and writes
 * 2 backward (5), x n rows x 4 bytes. At tp 1 the widths are model_qkv_rows and model_mlp_in_rows. */
static void test_opbench_gqa_swiglu_widths(void)
{
    model_config c = tiny();
    c.NH = 8, c.HS = 8, c.KVH = 2, c.ffn = 128, c.mlp = MLP_SWIGLU;
    static const struct {
        int tp;
        long qkv, up, I;
    } want[] = {{1, 96, 256, 128}, {2, 48, 128, 64}, {4, 32, 64, 32}, {8, 24, 32, 16}};
    CHECK(model_qkv_rows(&c) == want[0].qkv && model_mlp_in_rows(&c) == want[0].up, "tp 1: the config's widths");
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        op_layout l = layout(want[i].tp, OP_RECOMPUTE_NONE, OP_ATTN_TILED);
        op_entry ops[OP_LIST_MAX];
        int n = list(&c, &l, ops);
        check_gemm(find(ops, n, "qkv", OPK_GEMM, OPP_FWD, "fwd"), 16, 64, want[i].qkv, 2.0 * 16 * 64 * want[i].qkv);
        check_gemm(find(ops, n, "mlp_up", OPK_GEMM, OPP_FWD, "fwd"), 16, 64, want[i].up, 2.0 * 16 * 64 * want[i].up);
        check_gemm(find(ops, n, "mlp_down", OPK_GEMM, OPP_FWD, "fwd"), 16, want[i].I, 64, 2.0 * 16 * want[i].I * 64);
        const op_entry *af = find(ops, n, "act", OPK_MEM, OPP_FWD, "fwd"),
                       *ab = find(ops, n, "act", OPK_MEM, OPP_BWD, "bwd");
        if (af && ab)
            CHECK(af->bytes == 16.0 * 3 * want[i].I * 4 && ab->bytes == 16.0 * 5 * want[i].I * 4,
                  "tp %d: act %g / %g bytes", want[i].tp, af->bytes, ab->bytes);
    }
}

/* (c) PaLM appendix B: 6N + 12 L C T with N = 2 (64 x 192 + 64 x 64 + 2 x 64 x 256) + 512 x 64 =
 * 131072 matmul weights: 6 x 131072 + 12 x 2 x 64 x 8 = 798720 FLOPs a token, when every one of
 * the T^2 scores is computed (full attention). */
static void test_opbench_palm_flops(void)
{
    model_config c = tiny();
    op_layout l = layout(1, OP_RECOMPUTE_NONE, OP_ATTN_FULL);
    op_entry ops[OP_LIST_MAX];
    int n = list(&c, &l, ops);
    double per_token = op_list_flops(ops, n, c.L, 1, 1, FWD | BWD) / (2.0 * 8);
    CHECK(per_token == 798720.0, "full attention: %.17g FLOPs a token, expected 798720", per_token);
    CHECK(per_token == model_flops_per_token(&c, 8), "op list %.17g FLOPs a token, model_flops_per_token %.17g",
          per_token, model_flops_per_token(&c, 8));
    CHECK(op_list_flops(ops, n, c.L, 1, 1, RECOMPUTE) == 0, "recompute none: no recomputed FLOPs");
}

/* (d) tiled attention: the causal half, T (T + 1) / 2 = 36 scores a head, 4 HS FLOPs each forward
 * (2304) and 10 HS backward (5760); one kernel call a layer over its B x NH = 8 heads (batch 8).
 * Full attention: T^2 = 64 scores. */
static void test_opbench_tiled_attention(void)
{
    model_config c = tiny();
    op_layout l = layout(1, OP_RECOMPUTE_NONE, OP_ATTN_TILED), lf = layout(1, OP_RECOMPUTE_NONE, OP_ATTN_FULL);
    op_entry ops[OP_LIST_MAX], full[OP_LIST_MAX];
    int n = list(&c, &l, ops), nf = list(&c, &lf, full);
    const op_entry *f = find(ops, n, "attn_core", OPK_ATTN, OPP_FWD, "fwd"),
                   *b = find(ops, n, "attn_core", OPK_ATTN, OPP_BWD, "bwd");
    if (f) {
        CHECK(f->flops == 8 * 4.0 * 16 * 36,
              "tiled forward: %.17g FLOPs a call, expected 8 heads x 4 x 16 x 36 = 18432", f->flops);
        CHECK(f->count == 1 && f->batch == 8 && f->n == 8 && f->k == 16 && f->m == 8,
              "tiled forward: %g calls of %g heads of %ld x %ld x %ld, expected 1 of 8 of 8 x 16 x 8", f->count,
              f->batch, f->n, f->k, f->m);
    }
    if (b) CHECK(b->flops == 8 * 10.0 * 16 * 36, "tiled backward: %.17g FLOPs a call, expected 8 x 5760", b->flops);
    const op_entry *ff = find(full, nf, "attn_core", OPK_ATTN, OPP_FWD, "fwd");
    if (ff)
        CHECK(ff->flops == 8 * 4.0 * 16 * 64, "full forward: %.17g FLOPs a call, expected 8 x 4 x 16 x 64", ff->flops);
    int scores_mem = 0;
    for (int i = 0; i < n; i++) scores_mem += strcmp(ops[i].name, "attn_scores_mem") == 0;
    CHECK(scores_mem == 0, "tiled attention moves no s x s scores through memory");
}

/* (e) full recomputation: the layers' forward again, 2 x (2 x 16 x 49152 + 8 x 2304) = 3182592
 * FLOPs (the logits are not recomputed); selective: the attention core alone, 2 x 8 x 2304. */
static void test_opbench_recompute(void)
{
    model_config c = tiny();
    op_layout l = layout(1, OP_RECOMPUTE_FULL, OP_ATTN_TILED), ls = layout(1, OP_RECOMPUTE_SELECTIVE, OP_ATTN_TILED);
    op_entry ops[OP_LIST_MAX], sel[OP_LIST_MAX];
    int n = list(&c, &l, ops), ns = list(&c, &ls, sel);
    double re = op_list_flops(ops, n, c.L, 1, 1, RECOMPUTE), layers_fwd = op_list_flops(ops, n, c.L, 0, 0, FWD);
    CHECK(re == layers_fwd, "full recompute: %.17g FLOPs, the layers' forward %.17g", re, layers_fwd);
    CHECK(re == 3182592.0, "full recompute: %.17g FLOPs, expected 3182592", re);
    CHECK(op_list_flops(sel, ns, c.L, 1, 1, RECOMPUTE) == 2.0 * 8 * 2304,
          "selective recompute: %.17g FLOPs, expected 36864", op_list_flops(sel, ns, c.L, 1, 1, RECOMPUTE));
}

/* mm_shapes_transformer: op_list's 15 GEMMs in its order, as sgemm calls (forward X W^T, bwd_input
 * dY W, bwd_weight dY^T X), count = times a step (L for the layers, 1 for the logits). */
static void test_opbench_mm_shapes(void)
{
    model_config c = tiny();
    op_layout l = layout(1, OP_RECOMPUTE_NONE, OP_ATTN_TILED);
    op_entry ops[OP_LIST_MAX];
    int n = list(&c, &l, ops);
    mm_shape sh[32];
    CHECK(mm_shapes_transformer_count() == 15, "mm_shapes_transformer_count() = %d, expected 15",
          mm_shapes_transformer_count());
    int ns = mm_shapes_transformer(sh, 32, &c, 2, 8);
    CHECK(ns == 15, "%d shapes, expected 15", ns);
    for (int i = 0, j = 0; i < n && j < ns; i++) {
        if (ops[i].kind != OPK_GEMM) continue;
        const mm_shape *s = &sh[j++];
        const int fwd = strcmp(s->phase, "fwd") == 0, bwd_w = strcmp(s->phase, "bwd_weight") == 0;
        CHECK(strcmp(s->op, ops[i].name) == 0 && strcmp(s->phase, ops[i].phase) == 0 && s->n == ops[i].n &&
                  s->k == ops[i].k && s->m == ops[i].m && s->count == op_times(&ops[i], c.L, 1, 1),
              "shape %d: %s %s %d x %d x %d count %g, op list %s %s %ld x %ld x %ld", j - 1, s->op, s->phase, s->n,
              s->k, s->m, s->count, ops[i].name, ops[i].phase, ops[i].n, ops[i].k, ops[i].m);
        CHECK(s->trans_a == bwd_w && s->trans_b == fwd && s->lda == (bwd_w ? s->n : s->k) &&
                  s->ldb == (fwd ? s->k : s->m) && s->ldc == s->m,
              "%s %s: transposes %d %d, ld %d %d %d", s->op, s->phase, s->trans_a, s->trans_b, s->lda, s->ldb, s->ldc);
        CHECK(s->weight_b == !bwd_w && !s->concurrent, "%s %s: weight_b %d concurrent %d", s->op, s->phase, s->weight_b,
              s->concurrent);
    }
    CHECK(sh[0].count == 2 && sh[14].count == 1 && strcmp(sh[14].op, "logits") == 0,
          "counts: qkv %g (expected 2), %s %g (expected logits 1)", sh[0].count, sh[14].op, sh[14].count);
    CHECK(mm_shapes_transformer(sh, 14, &c, 2, 8) == CB_EFAIL, "a capacity of 14 shapes is refused");
}

/* (f) the command lists exactly op_list's GEMMs of pythia-14m at B=1 T=64, and no attention products. */
static void test_opbench_matmul_cli(void)
{
    char dir[96], csv[128], out[65536], err[16384];
    const char *tmp = test_tmpdir();
    if (!tmp) return;
    snprintf(dir, sizeof dir, "%s", tmp);
    snprintf(csv, sizeof csv, "%s/mm.csv", dir);
    const char *args[] = {"matmul", "--shapes", "transformer", "--model", "pythia-14m", "--micro-batch", "1", "--seq",
                          "64", "--min-time", "0.01", "--min-samples", "1", "--peak-gflops", "100", "--csv", csv, NULL};
    int rc = cli_run(args, out, sizeof out, err, sizeof err);
    CHECK(rc == 0, "matmul --shapes transformer: exit %d: %s", rc, err);
    model_config c;
    memset(&c, 0, sizeof c);
    CHECK(model_preset_find("pythia-14m", &c) == 0, "preset pythia-14m missing");
    op_layout l = layout(1, OP_RECOMPUTE_NONE, OP_ATTN_TILED);
    l.micro_batch = 1, l.seq = 64;
    op_entry ops[OP_LIST_MAX];
    int n = op_list(&c, &l, ops, OP_LIST_MAX);
    table t;
    if (rc != 0 || n < 0 || table_load(&t, csv) != 0) {
        CHECK(0, "no CSV at %s, or no op list", csv);
        rm_tree(dir);
        return;
    }
    const char *names[] = {"op", "phase", "n", "k", "m", "count"};
    int col[6];
    for (int i = 0; i < 6; i++) CHECK((col[i] = table_col(&t, names[i], 0)) >= 0, "no column '%s'", names[i]);
    CHECK(t.nrows == 15 && gemms(ops, n) == 15, "%d rows, %d GEMMs in the op list, expected 15", t.nrows,
          gemms(ops, n));
    for (int r = 0; r < t.nrows; r++)
        CHECK(strncmp(table_cell(&t, r, col[0]), "attn_", 5) != 0 || strcmp(table_cell(&t, r, col[0]), "attn_out") == 0,
              "row %d: an attention product '%s'", r, table_cell(&t, r, col[0]));
    for (int i = 0, r = 0;
         i < n && r < t.nrows && col[0] >= 0 && col[1] >= 0 && col[2] >= 0 && col[3] >= 0 && col[4] >= 0 && col[5] >= 0;
         i++) {
        if (ops[i].kind != OPK_GEMM) continue;
        const op_entry *e = &ops[i];
        CHECK(strcmp(table_cell(&t, r, col[0]), e->name) == 0 && strcmp(table_cell(&t, r, col[1]), e->phase) == 0 &&
                  atol(table_cell(&t, r, col[2])) == e->n && atol(table_cell(&t, r, col[3])) == e->k &&
                  atol(table_cell(&t, r, col[4])) == e->m &&
                  strtod(table_cell(&t, r, col[5]), NULL) == op_times(e, c.L, 1, 1),
              "row %d: %s %s %s x %s x %s count %s; op list %s %s %ld x %ld x %ld count %g", r,
              table_cell(&t, r, col[0]), table_cell(&t, r, col[1]), table_cell(&t, r, col[2]),
              table_cell(&t, r, col[3]), table_cell(&t, r, col[4]), table_cell(&t, r, col[5]), e->name, e->phase, e->n,
              e->k, e->m, op_times(e, c.L, 1, 1));
        r++;
    }
    CHECK(strstr(out, "one training step's matmuls") != NULL, "no step total: %s", out);
    table_free(&t);
    rm_tree(dir);
}

const test_case tests_opbench[] = {
    {"opbench: qkv forward, bwd_input and bwd_weight shapes and FLOPs at B=2 T=8 (tiny config, by hand)",
     test_opbench_gemm_shapes},
    {"opbench: tp=2 halves each GEMM's weight dimension, never the rows; FLOPs x tp = tp=1's", test_opbench_tp_halves},
    {"opbench: full attention, no recompute: GEMM + attention FLOPs a token = model_flops_per_token (6N + 12 L C T)",
     test_opbench_palm_flops},
    {"opbench: tiled attention counts T(T+1)/2 scores a head, 4 HS FLOPs forward, 10 HS backward, one call a layer "
     "over the heads",
     test_opbench_tiled_attention},
    {"opbench: full recompute adds exactly the layers' forward FLOPs; selective the attention core's",
     test_opbench_recompute},
    {"opbench: mm_shapes_transformer is op_list's 15 GEMMs as sgemm calls, count = times a step",
     test_opbench_mm_shapes},
    {"opbench: matmul --shapes transformer lists exactly op_list's 15 GEMMs, no attention products (CLI)",
     test_opbench_matmul_cli},
    {"opbench: a rank's widths under grouped-query attention and SwiGLU", test_opbench_gqa_swiglu_widths},
    {0},
};
