// rope_gpu.cu: `costbench-gpu rope` (the three rotary variants of `costbench rope` as CUDA kernels,
// kernels/cuda/rope.cu, timed on the device) and the rope checks of `costbench-gpu test`.
//
// Every variant is checked before it is timed: its output on the timed buffers, copied back for
// the first and the last sequence, against the CPU's kernel of the same variant and dtype
// (kernels/rope.c) on that sequence's input, norm-wise (gpu_rel_err <= gpu_check_tol).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>
#include <vector>

#include "../../kernels/cuda/cudautil.cuh"
#include "gpu.h"
#include "../../kernels/cuda/rope.cuh"

extern "C" {
#include "../../common/cliflags.h"
#include "../../common/opts.h"
#include "../../common/parse.h"
#include "../../common/presets.h"
#include "../../common/record.h"
#include "../../common/schema.h"
}

namespace {

const char *const rg_vname[3] = {"reference", "zero_freq", "fused"};
const char *const rg_dname[2] = {"forward", "backward"};

// The host's type of the device's element E (the same bits: bf16 is the upper half of an fp32).
template <typename E> struct rg_host;
template <> struct rg_host<float> {
    typedef float T;
    static double val(float v) { return (double)v; }
};
template <> struct rg_host<__nv_bfloat16> {
    typedef bf16 T;
    static double val(bf16 v) { return (double)bf16_to_float(v); }
};

// ---------------------------------------------------------------- the CPU's kernels, by type

void cpu_run(float *qkv, float *dqkv, float *q, float *k, const float *dq, const float *dk, const rope_shape *s,
             const rope_tables *tb, float *scratch, int v, int d)
{
    if (d == 0 && v == 0) rope_forward_ref(q, k, qkv, s, tb, scratch);
    if (d == 0 && v == 1) rope_forward_zero_freq(q, k, qkv, s, tb);
    if (d == 0 && v == 2) rope_forward_fused(qkv, s, tb);
    if (d == 1 && v == 0) rope_backward_ref(dqkv, dq, dk, s, tb, scratch);
    if (d == 1 && v == 1) rope_backward_zero_freq(dqkv, dq, dk, s, tb);
    if (d == 1 && v == 2) rope_backward_fused(dqkv, s, tb);
}

void cpu_run(bf16 *qkv, bf16 *dqkv, bf16 *q, bf16 *k, const bf16 *dq, const bf16 *dk, const rope_shape *s,
             const rope_tables *tb, bf16 *scratch, int v, int d)
{
    if (d == 0 && v == 0) rope_forward_ref_bf16(q, k, qkv, s, tb, scratch);
    if (d == 0 && v == 1) rope_forward_zero_freq_bf16(q, k, qkv, s, tb);
    if (d == 0 && v == 2) rope_forward_fused_bf16(qkv, s, tb);
    if (d == 1 && v == 0) rope_backward_ref_bf16(dqkv, dq, dk, s, tb, scratch);
    if (d == 1 && v == 1) rope_backward_zero_freq_bf16(dqkv, dq, dk, s, tb);
    if (d == 1 && v == 2) rope_backward_fused_bf16(dqkv, s, tb);
}

// ---------------------------------------------------------------- device buffers of one shape

template <typename E> struct rg_bufs {
    rope_shape s;
    double base;
    std::vector<float> host_tables;
    rope_tables tb_host, tb; // tb: device arrays
    E *qkv, *dqkv;           // (B, T, NH, 3*HS)
    E *q_out, *k_out;        // (B, NH, T, HS)
    E *dq, *dk;              // (B, NH, T, HS): the gradients of q_out, k_out
    E *scratch;              // rope_ref_scratch_floats(s) elements
};

size_t rg_qkv_elems(const rope_shape *s) { return (size_t)s->B * s->T * rope_qkv_per_token(s); }
size_t rg_out_elems(const rope_shape *s) { return (size_t)s->B * s->T * s->NH * s->HS; }

// Device bytes of a shape's buffers (elements of eb bytes; tables fp32).
double rg_device_bytes(const rope_shape *s, int eb)
{
    return (double)eb * (2.0 * rg_qkv_elems(s) + 4.0 * rg_out_elems(s) + rope_ref_scratch_floats(s)) +
           4.0 * rope_tables_floats(s->T, s->r, s->HS);
}

template <typename E> void rg_free(rg_bufs<E> *c)
{
    E *p[7] = {c->qkv, c->dqkv, c->q_out, c->k_out, c->dq, c->dk, c->scratch};
    for (int i = 0; i < 7; i++)
        if (p[i]) cudaFree(p[i]);
    c->qkv = c->dqkv = c->q_out = c->k_out = c->dq = c->dk = c->scratch = NULL;
    rope_gpu_tables_free(&c->tb);
}

// Fills every input with gpu_fill's values in [-1, 1) (rounded to E); one seed per buffer.
template <typename E> int rg_fill(rg_bufs<E> *c)
{
    const size_t nq = rg_qkv_elems(&c->s), no = rg_out_elems(&c->s);
    E *p[6] = {c->qkv, c->dqkv, c->q_out, c->k_out, c->dq, c->dk};
    const size_t n[6] = {nq, nq, no, no, no, no};
    for (int i = 0; i < 6; i++)
        if (gpu_fill<E>(p[i], n[i], 101u + (unsigned)i, 1.0f) != 0) return CB_EFAIL;
    return 0;
}

template <typename E> int rg_alloc(rg_bufs<E> *c, const rope_shape *s, double base)
{
    memset(&c->tb, 0, sizeof c->tb);
    c->qkv = c->dqkv = c->q_out = c->k_out = c->dq = c->dk = c->scratch = NULL;
    c->s = *s;
    c->base = base;
    c->host_tables.assign(rope_tables_floats(s->T, s->r, s->HS), 0.0f);
    rope_tables_init(&c->tb_host, c->host_tables.data(), s->T, s->r, s->HS, base);
    if (rope_gpu_tables_upload(&c->tb, &c->tb_host) != 0) return CB_EFAIL;
    const size_t nq = rg_qkv_elems(s), no = rg_out_elems(s), ns = rope_ref_scratch_floats(s);
    E **p[7] = {&c->qkv, &c->dqkv, &c->q_out, &c->k_out, &c->dq, &c->dk, &c->scratch};
    const size_t n[7] = {nq, nq, no, no, no, no, ns > 0 ? ns : 1};
    for (int i = 0; i < 7; i++) GPU_CK(cudaMalloc((void **)p[i], n[i] * sizeof(E)));
    return rg_fill(c);
}

// One call of variant v (0 reference, 1 zero_freq, 2 fused) in direction d (0 forward, 1 backward).
template <typename E> int rg_call(rg_bufs<E> *c, int v, int d)
{
    const rope_shape *s = &c->s;
    const rope_tables *tb = &c->tb;
    if (d == 0 && v == 0) return rope_gpu_forward_ref<E>(c->q_out, c->k_out, c->qkv, s, tb, c->scratch);
    if (d == 0 && v == 1) return rope_gpu_forward_zero_freq<E>(c->q_out, c->k_out, c->qkv, s, tb);
    if (d == 0 && v == 2) return rope_gpu_forward_fused<E>(c->qkv, s, tb);
    if (d == 1 && v == 0) return rope_gpu_backward_ref<E>(c->dqkv, c->dq, c->dk, s, tb, c->scratch);
    if (d == 1 && v == 1) return rope_gpu_backward_zero_freq<E>(c->dqkv, c->dq, c->dk, s, tb);
    return rope_gpu_backward_fused<E>(c->dqkv, s, tb);
}

// ---------------------------------------------------------------- the check against the CPU

// One sequence's buffers on the host (shape s1: B = 1), its input as the device held it.
template <typename E> struct rg_seq {
    typedef typename rg_host<E>::T H;
    rope_shape s1;
    std::vector<H> qkv, dqkv, q, k, dq, dk, scratch; // the CPU's inputs and outputs
    std::vector<H> gqkv, gdqkv, gq, gk;              // the device's outputs
};

template <typename E, typename H> int rg_down(std::vector<H> *dst, const E *src, size_t off, size_t n)
{
    static_assert(sizeof(E) == sizeof(H), "host and device elements differ");
    dst->resize(n);
    GPU_CK(cudaMemcpy(dst->data(), src + off, n * sizeof(E), cudaMemcpyDeviceToHost));
    return 0;
}

// Copies sequence b's inputs to variant (v, d) (before the device runs) into q: qkv (forward), or
// dqkv (its v blocks, which the backward leaves alone, and the fused backward's input) and the
// output gradients dq, dk (backward).
template <typename E> int rg_seq_inputs(const rg_bufs<E> *c, int b, int v, int d, rg_seq<E> *q)
{
    q->s1 = c->s;
    q->s1.B = 1;
    const size_t nq = rg_qkv_elems(&q->s1), no = rg_out_elems(&q->s1);
    int rc = 0;
    if (d == 0) rc = rg_down(&q->qkv, c->qkv, (size_t)b * nq, nq);
    if (d == 1 && rc == 0) rc = rg_down(&q->dqkv, c->dqkv, (size_t)b * nq, nq);
    if (d == 1 && v < 2 && rc == 0) rc = rg_down(&q->dq, c->dq, (size_t)b * no, no);
    if (d == 1 && v < 2 && rc == 0) rc = rg_down(&q->dk, c->dk, (size_t)b * no, no);
    if (d == 0 && v < 2) q->q.assign(no, 0), q->k.assign(no, 0);
    if (v == 0) q->scratch.assign(rope_ref_scratch_floats(&q->s1) + 1, 0);
    return rc;
}

// Copies sequence b's outputs of variant (v, d) (after the run) into q: q_out and k_out (forward
// reference and zero_freq), qkv (forward fused) or dqkv (backward).
template <typename E> int rg_seq_outputs(const rg_bufs<E> *c, int b, int v, int d, rg_seq<E> *q)
{
    const size_t nq = rg_qkv_elems(&q->s1), no = rg_out_elems(&q->s1);
    if (d == 1) return rg_down(&q->gdqkv, c->dqkv, (size_t)b * nq, nq);
    if (v == 2) return rg_down(&q->gqkv, c->qkv, (size_t)b * nq, nq);
    int rc = rg_down(&q->gq, c->q_out, (size_t)b * no, no);
    if (rc == 0) rc = rg_down(&q->gk, c->k_out, (size_t)b * no, no);
    return rc;
}

// The values a variant writes, in one order for both sides: q_out then k_out (forward reference,
// zero_freq), or the q and k blocks of every head of the qkv-layout buffer x (the rest).
template <typename H, typename E>
void rg_gather(std::vector<double> *dst, const rope_shape *s1, int flat, const std::vector<H> &q,
               const std::vector<H> &k, const std::vector<H> &x)
{
    dst->clear();
    if (flat) {
        for (size_t i = 0; i < q.size(); i++) dst->push_back(rg_host<E>::val(q[i]));
        for (size_t i = 0; i < k.size(); i++) dst->push_back(rg_host<E>::val(k[i]));
        return;
    }
    const size_t heads = (size_t)s1->T * s1->NH, HS = (size_t)s1->HS;
    for (size_t i = 0; i < heads; i++)
        for (size_t j = 0; j < 2 * HS; j++) dst->push_back(rg_host<E>::val(x[i * 3 * HS + j]));
}

// The CPU's variant on the sequence's input, and the relative error of the device's output.
// perturb: the device's output scaled by 1.05 first, a relative error of 0.05 (the check's own test).
template <typename E> double rg_seq_err(rg_seq<E> *q, int v, int d, const rg_bufs<E> *c, int perturb)
{
    cpu_run(q->qkv.data(), q->dqkv.data(), q->q.data(), q->k.data(), q->dq.data(), q->dk.data(), &q->s1, &c->tb_host,
            q->scratch.data(), v, d);
    const int flat = d == 0 && v < 2;
    const std::vector<typename rg_seq<E>::H> &cx = d == 0 ? q->qkv : q->dqkv, &gx = d == 0 ? q->gqkv : q->gdqkv;
    std::vector<double> out, ref;
    rg_gather<typename rg_seq<E>::H, E>(&out, &q->s1, flat, q->gq, q->gk, gx);
    rg_gather<typename rg_seq<E>::H, E>(&ref, &q->s1, flat, q->q, q->k, cx);
    if (perturb)
        for (double &x : out) x *= 1.05;
    return gpu_rel_err(out.data(), ref.data(), out.size());
}

// Runs variant (v, d) once on freshly filled buffers and compares the first and last sequence with
// the CPU's. *err: the larger relative error. Returns 0 (compare *err yourself) or CB_EFAIL.
template <typename E> int rg_check(rg_bufs<E> *c, int v, int d, int perturb, double *err)
{
    const int seqs[2] = {0, c->s.B - 1};
    const int nseq = c->s.B > 1 ? 2 : 1;
    rg_seq<E> q[2];
    int rc = rg_fill(c);
    for (int i = 0; i < nseq && rc == 0; i++) rc = rg_seq_inputs(c, seqs[i], v, d, &q[i]);
    if (rc == 0) rc = rg_call(c, v, d);
    if (rc == 0) GPU_CK_LAUNCH();
    for (int i = 0; i < nseq && rc == 0; i++) rc = rg_seq_outputs(c, seqs[i], v, d, &q[i]);
    *err = 0;
    for (int i = 0; i < nseq && rc == 0; i++) {
        double e = rg_seq_err(&q[i], v, d, c, perturb);
        if (!isnan(*err) && !(e <= *err)) *err = e; // a NaN, once seen, stays
    }
    return rc;
}

gpu_dtype rg_gdt(int is_bf16) { return is_bf16 ? GPU_BF16 : GPU_FP32; }

// ---------------------------------------------------------------- timing

typedef struct {
    double min_time_s;
    int min_samples;
} rg_opts;

typedef struct {
    double med, lo, hi, cv; // ms per call
} rg_time_result;

#define RG_BATCH_MS 2.0    // a sample: back-to-back calls filling at least this long between two events
#define RG_MAX_SAMPLES 1000

// Warm-up, then batches of back-to-back calls between CUDA events until min_samples samples and
// min_time_s seconds; median, min, max of ms per call.
template <typename E> int rg_time(rg_bufs<E> *c, int v, int d, const rg_opts *o, rg_time_result *r)
{
    auto call = [&]() { return rg_call(c, v, d); };
    double ms = 0;
    int rc = gpu_time_ms(call, 3, &ms); // warm-up (and a first estimate)
    if (rc == 0) rc = gpu_time_ms(call, 3, &ms);
    if (rc != 0) return rc;
    int reps = ms > 0 ? (int)ceil(RG_BATCH_MS / ms) : 1000;
    if (reps < 1) reps = 1;
    if (reps > 10000) reps = 10000;
    std::vector<double> x;
    double total_s = 0;
    while ((int)x.size() < o->min_samples || (total_s < o->min_time_s && (int)x.size() < RG_MAX_SAMPLES)) {
        if ((rc = gpu_time_ms(call, reps, &ms)) != 0) return rc;
        x.push_back(ms);
        total_s += ms * reps / 1e3;
    }
    gpu_stats(x.data(), (int)x.size(), &r->med, &r->lo, &r->hi, &r->cv);
    return 0;
}

// ---------------------------------------------------------------- the benchmark

void rg_add_row(record *rec, const gpu_dev *dev, const model_config *cfg, const rope_shape *s, int is_bf16, int v,
                int d, const rg_time_result *t, double copy_gbps, double ref_ns)
{
    const double tokens = (double)s->B * s->T, ns = t->med * 1e6 / tokens;
    const double bpt = rope_bytes_per_token_dtype(s, v, d, is_bf16 ? 2 : 4);
    int row = record_add_row(rec);
    if (row < 0) return;
    record_str(rec, row, RB_MODEL, cfg->name);
    record_str(rec, row, RB_VARIANT, rg_vname[v]);
    record_str(rec, row, RB_DIR, rg_dname[d]);
    record_str(rec, row, RB_CACHE, "warm");
    record_str(rec, row, RB_DTYPE, is_bf16 ? "bf16" : "fp32");
    const double vals[][2] = {{RB_TOKENS, tokens}, {RB_HEADS, (double)s->NH}, {RB_HS, (double)s->HS},
                              {RB_R, (double)s->r}, {RB_NS_MED, ns}, {RB_NS_MIN, t->lo * 1e6 / tokens},
                              {RB_NS_MAX, t->hi * 1e6 / tokens}, {RB_CV, t->cv}, {RB_BYTES, bpt},
                              {RB_GBPS, bpt / ns}, {RB_PCT_BW, copy_gbps > 0 ? 100.0 * (bpt / ns) / copy_gbps : NAN},
                              {RB_SPEEDUP, ref_ns / ns}};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) record_num(rec, row, (int)vals[i][0], vals[i][1]);
    gpu_cols_fill(rec, row, RB_NCOLS, dev);
}

// Checks the six (variant, direction) cases against the CPU, then times them; a row each.
template <typename E> int rg_model(rg_bufs<E> *c, const gpu_dev *dev, const model_config *cfg, const rg_opts *o,
                                   double copy_gbps, record *rec)
{
    const int is_bf16 = std::is_same<E, __nv_bfloat16>::value;
    const double tol = gpu_check_tol(rg_gdt(is_bf16));
    double worst = 0;
    for (int d = 0; d < 2; d++)
        for (int v = 0; v < 3; v++) {
            double err;
            int rc = rg_check(c, v, d, 0, &err);
            if (rc != 0) return rc;
            if (!(err <= tol))
                return err_msg("rope %s %s %s %s: the GPU's output differs from the CPU's by %.3g (relative, "
                               "tolerance %.3g)",
                               cfg->name, is_bf16 ? "bf16" : "fp32", rg_vname[v], rg_dname[d], err, tol);
            if (err > worst) worst = err;
        }
    for (int d = 0; d < 2; d++) {
        double ref_ns = NAN;
        for (int v = 0; v < 3; v++) {
            rg_time_result t;
            int rc = rg_time(c, v, d, o, &t);
            if (rc != 0) return rc;
            if (v == 0) ref_ns = t.med * 1e6 / ((double)c->s.B * c->s.T);
            rg_add_row(rec, dev, cfg, &c->s, is_bf16, v, d, &t, copy_gbps, ref_ns);
        }
    }
    record_note(rec, "%s %s: B=%d T=%d; each variant matches the CPU's (first and last sequence) to %.2g at most "
                     "(norm-wise relative, tolerance %.2g)",
                cfg->name, is_bf16 ? "bf16" : "fp32", c->s.B, c->s.T, worst, tol);
    return 0;
}

// One model in one dtype: the memory it needs against the device's free memory, then rg_model.
template <typename E> int rg_run(const gpu_dev *dev, const model_config *cfg, long tokens, long T, const rg_opts *o,
                                 double copy_gbps, record *rec)
{
    rope_shape s = {(int)(tokens / T), (int)T, cfg->NH, cfg->HS, model_rotary_dims(cfg), 0, 0};
    size_t free_b = 0, total_b = 0;
    GPU_CK(cudaMemGetInfo(&free_b, &total_b));
    const double need = rg_device_bytes(&s, (int)sizeof(E));
    if (need > 0.95 * (double)free_b)
        return err_usage("rope on %s at %ld tokens in %s needs %.1f GiB; the GPU has %.1f GiB free", cfg->name, tokens,
                         sizeof(E) == 2 ? "bf16" : "fp32", need / 1073741824.0, (double)free_b / 1073741824.0);
    rg_bufs<E> c;
    int rc = rg_alloc(&c, &s, cfg->rotary_base);
    if (rc == 0) rc = rg_model(&c, dev, cfg, o, copy_gbps, rec);
    rg_free(&c);
    return rc;
}

// The table's notes: the GPU, the copy bandwidth (measured now unless given), the byte model, the
// cache state.
int rg_notes(record *rec, const gpu_dev *dev, double *copy_gbps)
{
    gpu_note(rec, dev);
    if (*copy_gbps <= 0) {
        if (gpu_copy_gbps(dev, copy_gbps) != 0) return CB_EFAIL;
        record_note(rec, "pct_of_copy_bw: against the HBM copy bandwidth measured in this run (costbench-gpu peak's "
                         "copy probe): %.1f GB/s",
                    *copy_gbps);
    } else {
        record_note(rec, "pct_of_copy_bw: against --copy-gbps %.1f (given, not measured in this run)", *copy_gbps);
    }
    record_note(rec, "bytes_per_token: what each variant reads and writes (model in kernels/rope.c, as costbench "
                     "rope's), tables fp32; the GPU moves whole 32-byte sectors, so a head whose rotated dims do not "
                     "fill them moves more than this");
    record_note(rec, "cache warm: back-to-back calls on buffers far past the L2 (%.0f MiB), so every call streams "
                     "from HBM; timed with CUDA events around batches of >= %.0f ms",
                dev->l2_mib, RG_BATCH_MS);
    record_note(rec, "an in-place update (fused) has no write-allocate traffic, so it can pass 100%% of copy "
                     "bandwidth's rate of useful bytes; the reference runs one kernel per torch op (Hugging Face)");
    return 0;
}

// The flags' values checked; the models found. Returns the model count or CB_EUSAGE.
int rg_args(const char *models, const char *dtypes, long tokens, long *T, model_config *cfgs, int *dts, int *ndt)
{
    char buf[1024], dbuf[64];
    char *names[32], *dn[4];
    int nm = parse_word_list(models, "flag '--model'", 0, buf, sizeof buf, names, 32), rc;
    if (nm < 0) return nm;
    for (int i = 0; i < nm; i++) {
        if ((rc = model_preset_find(names[i], &cfgs[i])) != 0) return rc;
        if (model_rotary_dims(&cfgs[i]) == 0)
            return err_usage("flag '--model': '%s' has no rotary embedding (rotary_pct %g)", cfgs[i].name,
                             cfgs[i].rotary_pct);
    }
    if ((*ndt = parse_word_list(dtypes, "flag '--dtype'", 0, dbuf, sizeof dbuf, dn, 4)) < 0) return *ndt;
    for (int i = 0; i < *ndt; i++) {
        if (strcmp(dn[i], "fp32") != 0 && strcmp(dn[i], "bf16") != 0)
            return err_usage("flag '--dtype': expected fp32 or bf16, got '%s'", dn[i]);
        dts[i] = strcmp(dn[i], "bf16") == 0;
    }
    if (*T == 0) *T = tokens < 2048 ? tokens : 2048;
    if (*T > tokens) return err_usage("flag '--seq': %ld is more than --tokens %ld", *T, tokens);
    if (tokens % *T != 0) return err_usage("flag '--tokens': %ld is not a multiple of --seq %ld", tokens, *T);
    return nm;
}

} // namespace

extern "C" int gpu_rope_main(const gpu_dev *d, int argc, char **argv)
{
    const char *csv = NULL, *models = "pythia-160m,pythia-6.9b,neox-20b", *dtypes = "fp32,bf16";
    long tokens = 65536, T = 0, min_samples = 5;
    double copy_gbps = 0, min_time = 0.1;
    const opt_spec specs[] = {
        CSV_FLAG_SPEC(&csv, "also write the results as CSV (- for stdout)"),
        {"dtype", OPT_STR, &dtypes, 0, 0, 0, 0, "LIST",
         "element types of q and k and their gradients, fp32 and/or bf16 (bf16: fp32 arithmetic, results rounded; "
         "default fp32,bf16)"},
        {"model", OPT_STR, &models, 0, 0, 0, 0, "LIST", "presets (default pythia-160m,pythia-6.9b,neox-20b)"},
        {"tokens", OPT_LONG, &tokens, 1, 1 << 24, 0, 0, "N", "tokens per call, B x T (default 65536)"},
        SEQ_FLAG_SPEC(&T, "min(tokens, 2048)"),
        {"copy-gbps", OPT_DOUBLE, &copy_gbps, 0, 0, 0, 1e7, "G",
         "copy bandwidth for pct_of_copy_bw (default: measured now)"},
        {"min-time", OPT_DOUBLE, &min_time, 0, 0, 0.001, 600, "S", "minimum timed seconds per case (default 0.1)"},
        {"min-samples", OPT_LONG, &min_samples, 1, RG_MAX_SAMPLES, 0, 0, "N", "minimum samples per case (default 5)"},
        {NULL, OPT_FLAG, NULL, 0, 0, 0, 0, NULL, NULL}, // the end
    };
    int rc = opts_parse("costbench-gpu rope", "[options]", specs, argc, argv, 1, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    model_config cfgs[32];
    int dts[4], ndt = 0;
    int nm = rg_args(models, dtypes, tokens, &T, cfgs, dts, &ndt);
    if (nm < 0) return nm;
    rec_col cols[RB_NCOLS + GC_NCOLS];
    const int ncols = gpu_cols_join(cols, RB_NCOLS + GC_NCOLS, rb_cols, RB_NCOLS);
    record rec;
    if (ncols < 0 || record_init(&rec, cols, ncols) != 0) return err_msg("rope: cannot set up the result table");
    rg_opts o = {min_time, (int)min_samples};
    rc = rg_notes(&rec, d, &copy_gbps);
    for (int k = 0; k < ndt && rc == 0; k++)
        for (int i = 0; i < nm && rc == 0; i++)
            rc = dts[k] ? rg_run<__nv_bfloat16>(d, &cfgs[i], tokens, T, &o, copy_gbps, &rec)
                        : rg_run<float>(d, &cfgs[i], tokens, T, &o, copy_gbps, &rec);
    if (rc == 0) {
        record_print(&rec, stdout);
        if (csv) {
            machine_info m;
            gpu_machine_info(&m, NULL);
            rc = record_write_csv(&rec, csv, &m);
        }
    }
    record_free(&rec);
    return rc;
}

// ---------------------------------------------------------------- the checks of `costbench-gpu test`

namespace {

typedef struct {
    int passed, failed;
    char label[96]; // "bf16 B=2 T=7 NH=3 HS=16 r=8": the shape and dtype under test
} rg_tally;

void rg_report(rg_tally *t, int ok, const char *what, const char *why)
{
    if (ok) {
        printf("ok rope %s %s\n", what, t->label);
        t->passed++;
    } else {
        printf("FAIL rope %s %s: %s\n", what, t->label, why);
        t->failed++;
    }
    fflush(stdout);
}

// Every variant and direction against the CPU's, and the check's own test: a perturbed output fails.
template <typename E> int rg_test_variants(rg_bufs<E> *c, rg_tally *t, double tol)
{
    char what[64], why[128];
    for (int d = 0; d < 2; d++)
        for (int v = 0; v < 3; v++) {
            double err;
            if (rg_check(c, v, d, 0, &err) != 0) return CB_EFAIL;
            snprintf(what, sizeof what, "%s %s vs the CPU's", rg_vname[v], rg_dname[d]);
            snprintf(why, sizeof why, "relative error %.3g, tolerance %.3g", err, tol);
            rg_report(t, err <= tol, what, why);
        }
    double err;
    if (rg_check(c, 2, 0, 1, &err) != 0) return CB_EFAIL;
    snprintf(why, sizeof why, "an output 5%% off passed (relative error %.3g, tolerance %.3g)", err, tol);
    rg_report(t, err > tol, "check catches a perturbed output", why);
    return 0;
}

// The fused forward against the double-precision definition (rope_forward_ref_gqa), and the fused
// kernels leave every byte but the rotated dims as they were (pass-through dims, v).
template <typename E> int rg_test_fused(rg_bufs<E> *c, rg_tally *t, double tol)
{
    typedef typename rg_host<E>::T H;
    const rope_shape *s = &c->s;
    const size_t nq = rg_qkv_elems(s), HS = (size_t)s->HS, r = (size_t)s->r;
    std::vector<H> before, after;
    std::vector<double> x(nq), ref(nq), out, want;
    char why[160];
    for (int d = 0; d < 2; d++) {
        E *buf = d == 0 ? c->qkv : c->dqkv;
        if (rg_fill(c) != 0 || rg_down(&before, buf, 0, nq) != 0 || rg_call(c, 2, d) != 0) return CB_EFAIL;
        GPU_CK_LAUNCH();
        if (rg_down(&after, buf, 0, nq) != 0) return CB_EFAIL;
        size_t changed = 0;
        for (size_t i = 0; i < nq; i++) {
            const size_t dim = i % (3 * HS); // within a head's [q, k, v]
            const int rotated = dim < 2 * HS && dim % HS < r;
            if (!rotated && memcmp(&before[i], &after[i], sizeof(H)) != 0) changed++;
        }
        snprintf(why, sizeof why, "%zu pass-through or v elements changed", changed);
        rg_report(t, changed == 0, d == 0 ? "fused forward keeps pass-through and v" : "fused backward keeps "
                                                                                     "pass-through and v", why);
        if (d != 0) break;
        for (size_t i = 0; i < nq; i++) x[i] = rg_host<E>::val(before[i]);
        rope_forward_ref_gqa(ref.data(), x.data(), s, c->base);
        out.clear(), want.clear();
        for (size_t i = 0; i < nq; i++)
            if (i % (3 * HS) < 2 * HS) out.push_back(rg_host<E>::val(after[i])), want.push_back(ref[i]);
        const double err = gpu_rel_err(out.data(), want.data(), out.size());
        snprintf(why, sizeof why, "relative error %.3g, tolerance %.3g", err, tol);
        rg_report(t, err <= tol, "fused forward vs the double-precision definition", why);
    }
    return 0;
}

// A NaN in q (head 0, position 1, dim 0) comes out NaN at that dim in every forward variant.
template <typename E> int rg_test_nan(rg_bufs<E> *c, rg_tally *t)
{
    const rope_shape *s = &c->s;
    const int tpos = s->T > 1 ? 1 : 0;
    const size_t in = rope_qkv_offset(s, 0, tpos, 0, 0), flat = (size_t)tpos * s->HS; // b 0, head 0
    const E nan_e = gpu_elem<E>::from(NAN);
    for (int v = 0; v < 3; v++) {
        E got;
        if (rg_fill(c) != 0) return CB_EFAIL;
        GPU_CK(cudaMemcpy(c->qkv + in, &nan_e, sizeof(E), cudaMemcpyHostToDevice));
        if (rg_call(c, v, 0) != 0) return CB_EFAIL;
        GPU_CK_LAUNCH();
        GPU_CK(cudaMemcpy(&got, v == 2 ? c->qkv + in : c->q_out + flat, sizeof(E), cudaMemcpyDeviceToHost));
        char what[64];
        snprintf(what, sizeof what, "%s forward keeps a NaN", rg_vname[v]);
        rg_report(t, isnan(gpu_elem<E>::to_f(got)), what, "a NaN in q came out a number");
    }
    return 0;
}

template <typename E> int rg_test_shape(const rope_shape *s, rg_tally *t)
{
    const int is_bf16 = std::is_same<E, __nv_bfloat16>::value;
    const double tol = gpu_check_tol(rg_gdt(is_bf16));
    snprintf(t->label, sizeof t->label, "%s B=%d T=%d NH=%d HS=%d r=%d", is_bf16 ? "bf16" : "fp32", s->B, s->T, s->NH,
             s->HS, s->r);
    rg_bufs<E> c;
    int rc = rg_alloc(&c, s, 10000.0);
    if (rc == 0) rc = rg_test_variants(&c, t, tol);
    if (rc == 0) rc = rg_test_fused(&c, t, tol);
    if (rc == 0) rc = rg_test_nan(&c, t);
    rg_free(&c);
    if (rc != 0) rg_report(t, 0, "checks", "a CUDA call failed (the error line above)");
    return rc;
}

} // namespace

// Small shapes: partial rotation with an odd T, r = HS, r/2 odd (one element per thread), Pythia's
// 64/16 (vectors of 4 fp32, 8 bf16), NeoX-20B's 96/24 (r/2 = 12: vectors of 4).
extern "C" int gpu_rope_selftest(const gpu_dev *d, int *passed)
{
    (void)d;
    const rope_shape shapes[] = {
        {2, 7, 3, 16, 8, 0, 0}, {1, 5, 2, 8, 8, 0, 0}, {2, 9, 2, 10, 6, 0, 0}, {2, 33, 2, 64, 16, 0, 0},
        {3, 4, 2, 96, 24, 0, 0},
    };
    rg_tally t = {0, 0, ""};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        rg_test_shape<float>(&shapes[i], &t);
        rg_test_shape<__nv_bfloat16>(&shapes[i], &t);
    }
    *passed += t.passed;
    return t.failed;
}
