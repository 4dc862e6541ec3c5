/* test_stepmodel.c: every term of the step model (report/predict/stepmodel.h, report/predict/scale.h) worked by
 * hand on a small case, the joint fit recovering known parameters, and the validation targets
 * on the shipped published runs (the model is deterministic: its accuracy on fixed data may be
 * asserted). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../report/predict/calibration.h"
#include "../report/formats/devices.h"
#include "../report/predict/stepmodel.h"
#include "../report/validate.h"
#include "check.h"
#include "steptoy.h"

static double f_dim(double x) { return x / (x + STEP_GEMM_HALF_DIM); }

static void test_one_gemm(void)
{
    scale_model s;
    test_toy_step(&s);
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX);
    const op_entry *q = test_find_op(ops, n, "qkv", "fwd");
    CHECK(n > 0 && q && q->n == 256 && q->k == 256 && q->m == 768, "qkv fwd is 256 x 256 -> 768: %ld %ld %ld",
          q ? q->n : 0, q ? q->k : 0, q ? q->m : 0);
    if (!q) return;
    /* 2 n k m FLOPs at 0.5 x f(256) f(256) f(768) of 100 TFLOP/s */
    double want = 2.0 * 256 * 256 * 768 / (0.5 * f_dim(256) * f_dim(256) * f_dim(768) * 100e12);
    CHECK(fabs(step_op_time(&s, q) / want - 1) < 1e-6, "one GEMM: %.9g s, by hand %.9g s", step_op_time(&s, q), want);
    /* tp 2: the weight dimension halves, the rows stay */
    s.tp = 2;
    n = step_ops(&s, 1, ops, OP_LIST_MAX);
    q = test_find_op(ops, n, "qkv", "fwd");
    CHECK(q && q->n == 256 && q->m == 384, "tp 2: rows 256, width 384: %ld %ld", q ? q->n : 0, q ? q->m : 0);
    /* a memory-bound op: bytes at 0.5 of 1000 GB/s */
    const op_entry *norm = test_find_op(ops, n, "norm", "fwd");
    CHECK(norm && fabs(step_op_time(&s, norm) / (norm->bytes / 500e9) - 1) < 1e-6 && norm->bytes == 256.0 * 256 * 2 * 2,
          "a norm reads and writes 256 x 256 16-bit values at 500 GB/s");
    /* the tiled attention core: the causal half at attn_eff: 4 HS s (s + 1) / 2 FLOPs per head, b x heads / tp heads */
    const op_entry *a = test_find_op(ops, n, "attn_core", "fwd");
    double fl = 4.0 * 64 * 128 * 129 / 2.0 * 2 * 2;
    CHECK(a && fabs(a->flops / fl - 1) < 1e-12 && fabs(step_op_time(&s, a) / (fl / (0.25 * 100e12)) - 1) < 1e-6,
          "attention: %.9g FLOPs, by hand %.9g", a ? a->flops : 0, fl);
}

/* Grouped-query attention past its key/value heads: 8 KV heads at TP 16 hold one each (replicated),
 * the queries 64 / 16; 6 KV heads at TP 4 split neither way. */
static void test_gqa_tp(void)
{
    scale_model s;
    test_toy_step(&s);
    s.cfg.C = 8192, s.cfg.NH = 64, s.cfg.HS = 128, s.cfg.KVH = 8, s.cfg.ffn = 28672, s.cfg.mlp = MLP_SWIGLU, s.tp = 16;
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX);
    const op_entry *q = test_find_op(ops, n, "qkv", "fwd");
    CHECK(q && q->m == (64 / 16 + 2 * 1) * 128, "qkv at TP 16: (4 + 2 x 1) x 128 = 768 wide: %ld", q ? q->m : -1);
    s.cfg.NH = 48, s.cfg.KVH = 6, s.cfg.C = 6144, s.tp = 4;
    CHECK(!op_tp_splits(&s.cfg, 4) && step_ops(&s, 1, ops, OP_LIST_MAX) < 0, "6 key/value heads at TP 4: refused");
}

static void test_one_allreduce(void)
{
    scale_model s;
    test_toy_step(&s);
    s.tp = 4;
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX);
    const op_entry *t = test_find_op(ops, n, "tp_collective", "fwd");
    CHECK(t && t->bytes == 256.0 * 256 * 2 && t->count == 2,
          "2 all-reduces of the 256 x 256 activation per layer forward");
    if (!t) return;
    /* ring: 2 (t - 1) / t x bytes over 0.75 x 100 GB/s, + 2 (t - 1) hops of 5 us */
    double want = 2.0 * 3 / 4 * t->bytes / (STEP_LINK_EFF * 100e9) + 2.0 * 3 * STEP_LINK_LATENCY_US * 1e-6;
    CHECK(fabs(step_op_time(&s, t) / want - 1) < 1e-9, "one all-reduce: %.9g s, by hand %.9g s", step_op_time(&s, t),
          want);
    /* per micro-batch: 2 forward + 2 backward per layer, 2 layers */
    step_profile_fill(&s);
    CHECK(fabs(step_comm_per_mb(&s) / (8 * want) - 1) < 1e-9, "TP per micro-batch: 8 all-reduces: %.9g s",
          step_comm_per_mb(&s));
    /* an unknown link carries no modelled time */
    s.hw.intra_gb_per_s = NAN;
    step_profile_fill(&s);
    CHECK(step_comm_per_mb(&s) == 0, "unknown link: 0");
}

/* Megatron's rank order (PP outermost: pipeline group i = range(i, world, world / pp), rank r on node
 * r / D) enumerated: some stage boundary crosses a node exactly when the run spans several nodes. */
static int megatron_order_crosses(long nodes, long D, long pp)
{
    long world = nodes * D, stride = world / pp;
    for (long i = 0; i < stride; i++)
        for (long r = i; r + stride < world; r += stride)
            if (r / D != (r + stride) / D) return 1;
    return 0;
}

/* Pipeline sends placed by the rank order, worked by hand on the toy (8 ranks a node, a 100 GB/s link,
 * 800 Gb/s a node): TP 1 x PP 2, one micro-batch of 2 x 128 tokens sends 2 x 128 x 256 x 2 B = 131,072 B
 * forward and the same back. */
static void test_pp_placement(void)
{
    const long cases[][3] = {{1, 8, 2}, {1, 8, 8}, {2, 8, 2}, {2, 8, 4}, {4, 32, 4}, {2, 32, 4}, {3, 8, 2}, {8, 8, 8}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        CHECK(step_pp_over_net(cases[c][0]) == megatron_order_crosses(cases[c][0], cases[c][1], cases[c][2]),
              "%ld nodes of %ld ranks, pp %ld: the rule says %d, Megatron's order %d", cases[c][0], cases[c][1],
              cases[c][2], step_pp_over_net(cases[c][0]), megatron_order_crosses(cases[c][0], cases[c][1], cases[c][2]));
    scale_model s;
    test_toy_step(&s);
    s.pp = 2, s.latency_s = 20e-6;
    step_profile_fill(&s);
    const step_profile *p = step_profile_get(&s);
    /* one node: both sends over the link at link_eff: 2 x 131072 / (0.75 x 100e9) */
    double link = 2.0 * 131072 / (STEP_LINK_EFF * 100e9);
    CHECK(fabs(step_comm_of(&s, p, 1) / link - 1) < 1e-9, "stages on one node: %.9g s, by hand %.9g s",
          step_comm_of(&s, p, 1), link);
    /* two nodes (the replica's 2 ranks fit one, but stage 1 is world / pp = 8 ranks on): each send at the rank's
     * 1/8 of 800 Gb/s = 12.5 GB/s, + a 20 us hop; at net_eff 0.5 the bandwidth halves, not the latency */
    double net = 2.0 * 131072 / 12.5e9 + 2 * 20e-6;
    CHECK(fabs(step_comm_of(&s, p, 2) / net - 1) < 1e-9, "stages across nodes: %.9g s, by hand %.9g s",
          step_comm_of(&s, p, 2), net);
    s.net_eff = 0.5;
    net = 2.0 * 131072 / 6.25e9 + 2 * 20e-6;
    CHECK(fabs(step_comm_of(&s, p, 2) / net - 1) < 1e-9, "at net_eff 0.5: %.9g s, by hand %.9g s",
          step_comm_of(&s, p, 2), net);
    /* scale on 2 nodes charges it per micro-batch: 16 ranks / 2 = 8 replicas of 2 sequences, one micro-batch */
    scale_point pt;
    s.t_mb_s = 0.01;
    scale_eval(&s, 2, &pt);
    CHECK(pt.micro_batches == 1 && fabs(pt.tp_s / net - 1) < 1e-9, "scale: m %ld, sends %.9g s", pt.micro_batches,
          pt.tp_s);
}

static void test_one_bubble(void)
{
    scale_model s;
    test_toy_step(&s);
    s.pp = 2, s.t_mb_s = 0.1, s.hw.intra_gb_per_s = NAN; /* no TP or PP link time */
    step_profile_fill(&s);
    scale_point p;
    scale_eval(&s, 1, &p); /* 8 ranks, pp 2: 4 replicas of 16 / 4 = 4 sequences, 2 micro-batches */
    CHECK(p.micro_batches == 2 && fabs(p.bubble_s - 0.1) < 1e-12 && fabs(p.compute_s - 0.2) < 1e-12,
          "1F1B: (p - 1) x t_mb = 0.1 s beside 2 x 0.1 s: m %ld, bubble %.9g", p.micro_batches, p.bubble_s);
    s.interleave = 2, s.cfg.L = 4;
    step_profile_fill(&s);
    scale_eval(&s, 1, &p);
    CHECK(fabs(p.bubble_s - 0.05) < 1e-12, "interleaved, vp 2: (p - 1) / v x t_mb = 0.05 s: %.9g", p.bubble_s);
}

static void test_one_overlap(void)
{
    scale_model s;
    test_toy_step(&s);
    s.t_mb_s = 0.3, s.hw.intra_gb_per_s = NAN, s.global_batch = 128; /* 32 replicas of 2 micro-batches */
    step_profile_fill(&s);
    scale_point p;
    scale_eval(&s, 4, &p); /* across 4 nodes: a gradient all-reduce over the network */
    double dp = p.dp_s;
    CHECK(dp > 0 && fabs(p.exposed_s - dp) < 1e-15, "no overlap: all of it exposed: %.9g of %.9g", p.exposed_s, dp);
    s.grad_overlap = 1;
    scale_eval(&s, 4, &p);
    double want = fmax(dp - 2.0 / 3.0 * 0.3, dp / 2);
    CHECK(fabs(p.exposed_s - want) < 1e-15, "grad_overlap: max(dp - 2/3 t_mb, dp / layers) = %.9g: %.9g", want,
          p.exposed_s);
    s.grad_overlap = 0, s.zero = 3, s.gather_prefetch = 1;
    scale_eval(&s, 4, &p);
    want = fmax(p.dp_s - (double)p.micro_batches * 0.3, p.dp_s / ((double)p.micro_batches * 2));
    CHECK(fabs(p.exposed_s - want) < 1e-15, "ZeRO-3 prefetch: max(dp - m t_mb, one layer's) = %.9g: %.9g", want,
          p.exposed_s);
}

/* ZeRO-3's gathers from the list's own param_gather entries: every weight of the replica (the
 * embeddings and the output layer included) once in the forward and once in the backward; the
 * profile's memory terms the same weights, gradients and state a rank holds. Toy: V 1024, C 256,
 * L 2, learned positions over max_T, untied output: 2 x 1 x total params x 2 bytes per micro-batch. */
static void test_zero3_gathers(void)
{
    scale_model s;
    test_toy_step(&s);
    s.tp = 2, s.pp = 2, s.zero = 3;
    step_profile_fill(&s);
    const step_profile *p = step_profile_get(&s);
    double total = model_params_total(&s.cfg), wb = precision_info_of(s.precision)->weight_bytes;
    CHECK(fabs(p->gather_bytes / (2.0 * total * wb) - 1) < 1e-12,
          "a replica gathers its %.0f weights twice a micro-batch: %.9g bytes, by hand %.9g", total, p->gather_bytes,
          2.0 * total * wb);
    CHECK(fabs(p->weight_bytes / (total / 4 * wb) - 1) < 1e-12 &&
              fabs(p->grad_bytes / (total / 4 * precision_info_of(s.precision)->grad_bytes) - 1) < 1e-12 &&
              fabs(p->state_bytes / (total / 4 * precision_optimizer_bytes(s.precision)) - 1) < 1e-12,
          "a rank of tp 2 x pp 2 holds a quarter: weights %.9g, gradients %.9g, state %.9g bytes", p->weight_bytes,
          p->grad_bytes, p->state_bytes);
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 4, ops, OP_LIST_MAX), first = 0, last = 0;
    for (int i = 0; i < n; i++)
        if (ops[i].kind == OPK_GATHER) first += ops[i].scope == OPS_FIRST, last += ops[i].scope == OPS_LAST;
    CHECK(first == 2 && last == 2, "the embeddings and the output layer gathered forward and backward: %d, %d", first,
          last);
}

static void test_joint_fit_recovers(void)
{
    scale_model rows[2];
    long nodes[2] = {1, 4};
    test_toy_step(&rows[0]), test_toy_step(&rows[1]);
    rows[1].global_batch = 256; /* 8 micro-batches per replica against 1: the overhead weighs differently */
    step_profile_fill(&rows[0]), step_profile_fill(&rows[1]);
    calib_joint truth = {.phi = 0.7, .overhead_s = 0.002};
    double sps[2] = {calib_joint_predict(&truth, &rows[0], nodes[0]), calib_joint_predict(&truth, &rows[1], nodes[1])};
    calib_joint j;
    char why[256];
    int rc = calib_fit_joint(rows, nodes, sps, 2, &j, why, sizeof why);
    CHECK(rc == 0 && j.overhead_fitted && fabs(j.phi / 0.7 - 1) < 1e-5 && fabs(j.overhead_s / 0.002 - 1) < 1e-4,
          "two synthetic rows: phi %.9g (0.7), overhead %.9g s (0.002): %s", j.phi, j.overhead_s, why);
    CHECK(rc == 0 && fabs(j.resid_pct[0]) < 1e-6 && fabs(j.resid_pct[1]) < 1e-6, "both reproduced");
    /* one row: phi alone, the overhead undetermined */
    rc = calib_fit_joint(rows, nodes, sps, 1, &j, why, sizeof why);
    CHECK(rc == 0 && !j.overhead_fitted && j.overhead_s == 0, "one row: no overhead fitted");
}

static void test_frameworks(void)
{
    const step_framework *m = step_framework_find("megatron-lm"), *f = step_framework_find("llm-foundry"),
                         *u = step_framework_find("nonesuch");
    /* llm-foundry's gather_prefetch was 1 ("forward_prefetch and BACKWARD_PRE") until issue 30: Composer's
     * defaults are BACKWARD_POST and no forward_prefetch, and the shipped yamls set neither */
    CHECK(!m->tiled_attention && !m->grad_overlap && f->tiled_attention && !f->gather_prefetch && f->grad_overlap &&
              u == step_framework_default(),
          "megatron-lm: materialised attention, no overlap; llm-foundry: flash, BACKWARD_POST; unknown: the default");
}

/* Every era's features against the research's cited defaults (issue 30, /work/briefs/out_r30_frameworks.md
 * section 1), and the source each names: a row here changes only with its source. */
static void test_framework_table(void)
{
    static const struct {
        const char *name, *version;
        int attn, grad, gather, tp, tp_bwd;
        const char *cites; /* in the feature sources */
    } want[] = {
        {"megatron-lm", "2020", 0, 0, 0, 0, 0, "arguments.py:285 @v1.0"},
        {"megatron-lm", "2021", 0, 0, 0, 0, 0, "transformer.py:275-338 @v2.0"},
        {"megatron-lm", "2022", 0, 0, 0, 0, 1, "arguments.py:755 @23.04"},
        {"megatron-core", "core_v0.4", 0, 0, 0, 0, 1, "arguments.py:1102 @core_v0.4.0"},
        {"megatron-core", "core_v0.6+", 1, 0, 0, 0, 1, "distributed_data_parallel_config.py:18 @core_v0.19.0"},
        {"nemo", "1.x", 1, 1, 1, 0, 1, "megatron_gpt_config.yaml:194 @v1.23.0"},
        {"nemo", "2.x", 1, 1, 1, 1, 1, "megatron_comm_overlap.py:168-194 @v2.4.0"},
        {"megatron-bridge", "25.x-26.x", 1, 1, 1, 1, 1, "comm_overlap.py:572-579 @v0.6.0"},
        {"torchtitan", "v0.x", 1, 1, 1, 0, 0, "job_config.py:315 @v0.2.0"},
        {"llm-foundry", "v0.1-v0.6", 1, 1, 0, 0, 0, "backward_prefetch 'BACKWARD_POST', forward_prefetch False"},
        {"llm-foundry", "v0.7+", 1, 1, 0, 0, 0, "backward_prefetch 'BACKWARD_POST', forward_prefetch False"},
        {"deepspeed", "0.x", 1, 0, 1, 0, 0, "overlap_comm = (stage == 3)"},
        {"megatron-deepspeed", "2021-2023", 0, 0, 0, 0, 0, "transformer.py:179, :307-330 @8387ae17c470"},
        {"neuron-nemo", "2023-2024", 0, 0, 0, 0, 0, "BUCKET_CAP_MB=1024"},
        {"neuronx-distributed", "2.x", 1, 0, 0, 0, 0, "USE_FLASH_ATTENTION=1"},
        {"costbench", "", 1, 1, 0, 0, 0, "costbench train"},
    };
    int n, nwant = (int)(sizeof want / sizeof want[0]);
    const step_framework *t = step_framework_table(&n);
    CHECK(n == nwant + 1 && strcmp(t[0].name, "plain") == 0, "the table: plain and %d eras, got %d rows", nwant, n);
    for (int k = 0; k < nwant; k++) {
        const step_framework *f = NULL;
        for (int i = 0; i < n; i++)
            if (strcmp(t[i].name, want[k].name) == 0 && strcmp(t[i].version, want[k].version) == 0) f = &t[i];
        CHECK(f != NULL, "%s %s in the table", want[k].name, want[k].version);
        if (!f) continue;
        int cited = 0;
        for (int j = 0; j < FW_NFEATURES; j++) cited |= f->feature_source[j] && strstr(f->feature_source[j], want[k].cites);
        CHECK(f->tiled_attention == want[k].attn && f->grad_overlap == want[k].grad &&
                  f->gather_prefetch == want[k].gather && f->tp_overlap == want[k].tp && cited,
              "%s %s: attention %d grad %d gather %d tp %d (want %d %d %d %d), cites '%s': %d", f->name, f->version,
              f->tiled_attention, f->grad_overlap, f->gather_prefetch, f->tp_overlap, want[k].attn, want[k].grad,
              want[k].gather, want[k].tp, want[k].cites, cited);
        for (int j = 0; j < FW_NFEATURES; j++) CHECK(f->feature_source[j] && *f->feature_source[j], "%s: a source", f->name);
        /* the async backward TP collectives (Megatron 16c90445e7, 2021-09-02; TE Linear): on from Megatron 2022 on */
        CHECK(f->tp_bwd_overlap == want[k].tp_bwd && (!f->tp_bwd_overlap || strstr(f->feature_source[FW_TP_BWD], "@")),
              "%s %s: tp_bwd_overlap %d (want %d), source '%s'", f->name, f->version, f->tp_bwd_overlap,
              want[k].tp_bwd, f->feature_source[FW_TP_BWD]);
    }
}

/* A version picks its era; none, the default era; an unknown one the default era, named. */
static void test_framework_versions(void)
{
    static const struct {
        const char *spec, *name, *version;
        int noted;
    } want[] = {
        {"megatron-lm", "megatron-lm", "2021", 0},       {"megatron@2020", "megatron-lm", "2020", 0},
        {"megatron-lm@v2.5", "megatron-lm", "2021", 0},  {"megatron-lm@23.04", "megatron-lm", "2022", 0},
        {"megatron-lm@core_r0.8.0", "megatron-core", "core_v0.6+", 0},
        {"megatron-core@core_v0.4.0", "megatron-core", "core_v0.4", 0},
        {"megatron-core@0.10", "megatron-core", "core_v0.6+", 0}, {"megatron-core", "megatron-core", "core_v0.6+", 0},
        {"nemo@1.23.0", "nemo", "1.x", 0},               {"nemo@2.x", "nemo", "2.x", 0},
        {"megatron-bridge@25.09", "megatron-bridge", "25.x-26.x", 0},
        {"llm-foundry@v0.7.0", "llm-foundry", "v0.7+", 0}, {"composer", "llm-foundry", "v0.1-v0.6", 0},
        {"llm-foundry@v0.2.0", "llm-foundry", "v0.1-v0.6", 0}, {"llm-foundry@v0.10.0", "llm-foundry", "v0.7+", 0},
        {"megatron-lm@2030", "megatron-lm", "2021", 1},  {"nemo@24.07", "nemo", "2.x", 1},
        {"megatron-core@banana", "megatron-core", "core_v0.6+", 1}, {"nosuch@1", "plain", "", 1},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        char note[512];
        const step_framework *f = step_framework_find_spec(want[k].spec, note, sizeof note);
        CHECK(strcmp(f->name, want[k].name) == 0 && strcmp(f->version, want[k].version) == 0 &&
                  (note[0] != 0) == want[k].noted,
              "%s: %s %s, note '%s' (want %s %s, %s)", want[k].spec, f->name, f->version, note, want[k].name,
              want[k].version, want[k].noted ? "noted" : "no note");
    }
    char note[512];
    step_framework_find_version("megatron-lm", "2030", note, sizeof note);
    CHECK(strstr(note, "unknown version '2030'") && strstr(note, "2020, 2021, 2022") && strstr(note, "2021 assumed"),
          "the unknown version named with the known eras: '%s'", note);
    CHECK(step_framework_find("megatron-lm@2020") == step_framework_find_version("megatron-lm", "2020", NULL, 0),
          "find takes NAME@VERSION");
}

/* scale and plan take --framework NAME@VERSION: the era's features; an unknown version is named in
 * the output (the default era used); an unknown name is one usage error. */
static void test_framework_flag_version(void)
{
    static char out[65536], err[4096];
    const char *a[] = {"scale", "--model", "pythia-6.9b", "--instance", "p4d.24xlarge", "--tp", "8", "--global-batch",
                       "1024", "--nodes", "1,2", "--framework", "megatron-lm@core_r0.8.0", NULL};
    int rc = cli_run(a, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "# framework features (--framework megatron-core: Megatron-Core core_v0.6+") &&
              strstr(out, "tiled (flash) attention (the framework's)") &&
              strstr(out, "# attention kernel on a100-sxm4-40gb: flash2, 0.618 s / (s + 475)"),
          "scale --framework megatron-lm@core_r0.8.0 (TE: flash-attn 2 on an A100): %d\n%s%s", rc, out, err);
    a[12] = "megatron-lm@2030";
    rc = cli_run(a, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "# framework megatron-lm: unknown version '2030' (known: 2020, 2021, 2022): its "
                                 "default era 2021 assumed") &&
              strstr(out, "materialised (full) attention"),
          "scale --framework megatron-lm@2030: %d\n%s%s", rc, out, err);
    a[12] = "nosuch@1";
    rc = cli_run(a, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && count_lines(err) == 1 && strstr(err, "got 'nosuch@1'"), "scale --framework nosuch@1: %d %s", rc,
          err);
    const char *p[] = {"plan", "--model", "llama2-7b", "--tokens", "140B", "--deadline-days", "300", "--instances",
                       "p5.48xlarge", "--max-nodes", "2", "--framework", "nemo@1.23.0", "--top", "2", NULL};
    rc = cli_run(p, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, "# framework features (--framework nemo: NeMo 1.x") && !strstr(out, "unknown version") &&
              strstr(out, "attention kernel per device (data/attention.csv's measured curve): h100-sxm5-80gb cudnn"),
          "plan --framework nemo@1.23.0 (TE: cuDNN on an H100): %d %s", rc, err);
}

/* ---------------------------------------------------------------- the validation targets */

typedef struct {
    const char *file;
    double median_max, max_max; /* what the model reaches today, asserted so it cannot slip */
    int beats_naive;            /* its median strictly below the naive's */
} val_target;

static void test_validate_targets(void)
{
    /* The issue's targets: median <= 8%, max <= 25%, median below the naive's on every file. Met:
     * the rows marked so. Not met, asserted at today's figure so it cannot get worse: the two
     * llm-foundry files' max (a 70B run on 64 A100-40GB and a 30B on 8, both slower than their
     * neighbours in the same table) and trn1's median against the naive's (calibrated on its only
     * one-node row; 9.7% before its TP rings were charged on the NeuronLink figure, an assumption of
     * data/devices.csv: 12.9%; 5.1% with the recipe's settings stated, the stages' sends placed by the
     * rank order and trn1.32xlarge's measured network (issue 30), the naive's 4.3%).
     * megatron_a100_2021's median tied the naive's (2.9% against 2.7%) until its rows stated their
     * --DDP-impl as the overlap column (issue 30): 1.7%, below the naive's.
     * Issue 30's measured kernel figures moved three files, asserted at their new figure: the A100's
     * gemm_eff from the assumed 0.80 to the measured MAMF's 0.91 carries Megatron 2020's V100 row to its
     * DGX-A100 rows 15-18% high (median 6.1% -> 15.0%, max 9.0% -> 17.8%); llm-foundry's 2023 tables
     * run the Triton flash kernel (data/attention.csv, measured 78 TFLOP/s = 0.25 of the peak at 8k against the
     * flat 0.33 before): medians 3.8% -> 9.3% (40 GB) and 4.9% -> 13.8% (80 GB), now above the naive's. */
    static const val_target t[] = {{"data/reference/published/korthikanti_2022.csv", 8, 25, 1},
                                   {"data/reference/published/llmfoundry_a100_40gb.csv", 9.5, 35, 0},
                                   {"data/reference/published/llmfoundry_a100_80gb.csv", 14, 32, 0},
                                   {"data/reference/published/megatron_2020.csv", 15.5, 18, 1},
                                   {"data/reference/published/megatron_a100_2021.csv", 8, 25, 1},
                                   {"data/reference/published/trn1_table1.csv", 8, 25, 0}};
    dev_table dt = {0};
    hw_table ht = {0};
    CHECK(devices_load(&dt, NULL) == 0 && hardware_load(&ht, "data/hardware.csv") == 0, "the data tables load");
    scale_model d = {0};
    d.interleave = 1, d.bucket_bytes = 25.0 * 1048576.0, d.net_eff = 1.0;
    val_env env = {&ht, &dt, NULL, -1, NULL, 5, &d, NULL};
    double err[3][512];
    int nerr[3] = {0};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        val_result res = {0};
        int found = 0;
        int rc = validate_file(&res, t[i].file, NULL, 0, &found, &env);
        const val_summary *s = rc == 0 && res.nfiles == 1 ? &res.files[0] : NULL;
        CHECK(s && s->predicted == s->rows - 1, "%s: every row predicted: %d of %d", t[i].file, s ? s->predicted : -1,
              s ? s->rows : -1);
        if (s) {
            CHECK(s->median_abs_pct <= t[i].median_max && s->max_abs_pct <= t[i].max_max,
                  "%s: median %.2f%% (<= %g), max %.2f%% (<= %g)", t[i].file, s->median_abs_pct, t[i].median_max,
                  s->max_abs_pct, t[i].max_max);
            if (t[i].beats_naive)
                CHECK(s->median_abs_pct < s->naive_median_abs_pct, "%s: median %.2f%% below the naive's %.2f%%",
                      t[i].file, s->median_abs_pct, s->naive_median_abs_pct);
        }
        /* across devices: Megatron 2020's DGX-A100 rows from its first row, a DGX-2 V100 */
        for (int r = 0; rc == 0 && strstr(t[i].file, "megatron_2020") && r < res.n; r++)
            if (strstr(res.rows[r].id, "dgxa100"))
                CHECK(fabs(res.rows[r].error_pct) <= 18, "%s from the V100 row within 18%%: %+.2f%%", res.rows[r].id,
                      res.rows[r].error_pct);
        for (int r = 0; r < res.n; r++)
            if (!res.rows[r].calibration && isfinite(res.rows[r].predicted) && nerr[res.rows[r].calib_case] < 512)
                err[res.rows[r].calib_case][nerr[res.rows[r].calib_case]++] = fabs(res.rows[r].error_pct);
        validate_free(&res);
    }
    /* the band's constants (report/predict/band.h: data/band.csv, checked in tests/test_band.c): each case's
     * 90th percentile (nearest rank) of |error|, never narrower than a nearer case's: at or above the
     * in-sample percentile (it was at most 2 points above it when it was the in-sample percentile itself) */
    static const double band[3] = {CALIB_BAND_NEAR_PCT, CALIB_BAND_LAYOUT_PCT, CALIB_BAND_DEVICE_PCT};
    for (int k = 0; k < 3; k++) {
        if (nerr[k] == 0) continue;
        double *x = err[k];
        for (int a = 1; a < nerr[k]; a++) /* sort */
            for (int b = a; b > 0 && x[b] < x[b - 1]; b--) {
                double tmp = x[b];
                x[b] = x[b - 1], x[b - 1] = tmp;
            }
        int rank = (int)ceil(0.9 * nerr[k]) - 1;
        CHECK(band[k] >= x[rank],
              "case %d: band %g%% against the P90 %.2f%% of %d predictions", k, band[k], x[rank], nerr[k]);
    }
    hardware_free(&ht);
    devices_free(&dt);
}

/* An uneven pipeline (stepconfig.h's pp_uneven), worked by hand on the toy (L 10, pp 4): the
 * embedding and the loss counted as layers (Megatron-Bridge's 405B recipe: (10 + 2) / 4 = 3 a rank,
 * one fewer on the first and the last) gives 2, 3, 3, 2 layers; the middle stages are the slowest
 * (3 layers; the last's 2 plus the logits: the toy's output layer is 6 C V = 1.6 MFLOP a token
 * against a layer's 72 C^2 = 4.7 MFLOP and its attention), so a micro-batch takes 3 x one layer.
 * First 4, last 1 (middle 2.5 each): the first stage, 4 layers and the embedding (its forward
 * gather and backward scatter). An even count
 * stated as uneven (3, 3 of L 12) times as the even split. */
static void test_uneven_pipeline(void)
{
    scale_model s;
    test_toy_step(&s);
    s.cfg.L = 10, s.pp = 4, s.pp_uneven = 1, s.pp_first_layers = 2, s.pp_last_layers = 2;
    step_profile_fill(&s);
    step_parts p;
    double t = step_t_mb_device(&s, &p);
    CHECK(isfinite(t) && fabs(t / (3 * p.layer_s) - 1) < 1e-12, "2/3/3/2: %.9g s a micro-batch, 3 layers %.9g", t,
          3 * p.layer_s);
    s.pp_first_layers = 4, s.pp_last_layers = 1;
    step_profile_fill(&s);
    t = step_t_mb_device(&s, &p);
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX);
    const op_entry *ef = n > 0 ? test_find_op(ops, n, "embedding", "fwd") : NULL,
                   *eb = n > 0 ? test_find_op(ops, n, "embedding", "bwd") : NULL;
    double t_emb = ef && eb ? step_op_time(&s, ef) * ef->count + step_op_time(&s, eb) * eb->count : NAN;
    CHECK(fabs(t / (4 * p.layer_s + t_emb) - 1) < 1e-12, "4/2.5/2.5/1: %.9g s, 4 layers and the embedding %.9g", t,
          4 * p.layer_s + t_emb);
    s.cfg.L = 12, s.pp_first_layers = 3, s.pp_last_layers = 3;
    step_profile_fill(&s);
    double uneven = step_t_mb_device(&s, NULL), ucomm = step_comm_per_mb(&s), uact = step_profile_get(&s)->act_bytes;
    s.pp_uneven = 0;
    step_profile_fill(&s);
    CHECK(uneven == step_t_mb_device(&s, NULL) && ucomm == step_comm_per_mb(&s) &&
              uact == step_profile_get(&s)->act_bytes,
          "3/3/3/3 stated as uneven: %.9g s, even %.9g s", uneven, step_t_mb_device(&s, NULL));
}


/* Full recompute of a share of the layers (Megatron-Core's block method) on the toy at 4 layers:
 * a share of 1 (all 4 of a stage's 4 layers) is full recompute; half of them adds half of full's
 * recompute time, half of its recomputed FLOPs, and keeps the activations of the other half. */
static void test_partial_recompute(void)
{
    scale_model s;
    test_toy_step(&s);
    s.cfg.L = 4;
    step_profile_fill(&s);
    double t_none = step_t_mb_device(&s, NULL), act_none = step_profile_get(&s)->act_bytes;
    double hw_none = step_profile_get(&s)->hw_flops_per_token;
    s.recompute = 1;
    step_profile_fill(&s);
    double t_full = step_t_mb_device(&s, NULL), act_full = step_profile_get(&s)->act_bytes;
    double hw_full = step_profile_get(&s)->hw_flops_per_token;
    s.recompute_share = 4.0 / 4.0; /* recompute_layers = L / pp */
    step_profile_fill(&s);
    CHECK(step_t_mb_device(&s, NULL) == t_full && step_profile_get(&s)->act_bytes == act_full &&
              step_profile_get(&s)->hw_flops_per_token == hw_full,
          "4 of 4 layers: full recompute, %.9g s", t_full);
    s.recompute_share = 2.0 / 4.0;
    step_profile_fill(&s); /* the share is in the step's key: a new profile */
    const step_profile *p = step_profile_get(&s);
    double t_half = step_t_mb_device(&s, NULL), want = t_none + 0.5 * (t_full - t_none);
    CHECK(t_full > t_none && fabs(t_half / want - 1) < 1e-12, "2 of 4 layers: %.9g s, by hand %.9g (none %.9g, full %.9g)",
          t_half, want, t_none, t_full);
    CHECK(fabs(p->hw_flops_per_token / (hw_none + 0.5 * (hw_full - hw_none)) - 1) < 1e-12 &&
              fabs(p->act_bytes / (0.5 * (act_none + act_full)) - 1) < 1e-12,
          "2 of 4 layers: half the recomputed FLOPs (%.9g), half the activations kept (%.9g)", p->hw_flops_per_token,
          p->act_bytes);
    op_entry ops[OP_LIST_MAX];
    int n = step_ops(&s, 1, ops, OP_LIST_MAX);
    int rec = 0, halved = 0;
    for (int i = 0; i < n; i++)
        if (ops[i].pass == OPP_RECOMPUTE && ops[i].scope == OPS_LAYER) {
            const op_entry *f = test_find_op(ops, n, ops[i].name, "fwd"); /* the forward entry, first in the list */
            rec++, halved += f && f->pass == OPP_FWD && ops[i].count == 0.5 * f->count;
        }
    CHECK(rec > 0 && halved == rec, "every per-layer recompute entry at half its forward's count: %d of %d", halved, rec);
}

const test_case tests_stepmodel[] = {
    {"step model: full recompute of a share of the layers (the block method), worked by hand on the toy",
     test_partial_recompute},
    {"step model: an uneven pipeline (the embedding and loss counted as layers), worked by hand: the slowest stage",
     test_uneven_pipeline},
    {"step model: one GEMM, a norm and the tiled attention core, worked by hand", test_one_gemm},
    {"step model: grouped-query attention at TP past its key/value heads holds one each; a TP that splits neither way "
     "is refused",
     test_gqa_tp},
    {"step model: one tensor-parallel all-reduce worked by hand; an unknown link carries no time", test_one_allreduce},
    {"step model: pipeline sends placed by the frameworks' rank order (one node: the link; across nodes: the "
     "network + a hop), worked by hand",
     test_pp_placement},
    {"step model: one 1F1B bubble and one interleaved, worked by hand", test_one_bubble},
    {"step model: the gradient overlap and the ZeRO-3 prefetch, worked by hand", test_one_overlap},
    {"step model: ZeRO-3 gathers every weight (embeddings and output layer too) from the list's entries, worked by "
     "hand",
     test_zero3_gathers},
    {"step model: the joint fit recovers phi and the overhead from two synthetic rows", test_joint_fit_recovers},
    {"step model: the frameworks' named features", test_frameworks},
    {"step model: the framework table against the research's cited defaults", test_framework_table},
    {"step model: a framework version picks its era, an unknown one is named", test_framework_versions},
    {"step model: scale and plan --framework NAME@VERSION", test_framework_flag_version},
    {"step model: validate's targets on the shipped published runs (met ones, and the misses at today's figure)",
     test_validate_targets},
    {0},
};
