// matmul_gpu.cu: `costbench-gpu matmul`: the transformer's GEMMs through cuBLASLt, its heuristic and
// a small autotune over the algorithms it offers, in fp32, tf32, fp16, bf16 and fp8 (e4m3 with
// per-tensor scales) where the device has it; every case checked against a double-precision
// reference on sampled outputs before it is timed (gpu.h).
//
// Every product is Y (n x m) = X (n x k) W^T with X and W row-major (PyTorch's Linear: W is
// out x in), which is cuBLASLt's column-major D (m x n) = op(A) op(B) with A = W transposed ("T")
// and B = X ("N"): the TN layout, the one Hopper's fp8 GEMMs take, used for every precision and
// phase so that the rows compare. The columns are costbench matmul's (common/schema.h mm_cols),
// then peak_gflops and peak_source, then the GPU's and the host's provenance.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" { // the project's C headers
#include "../../common/opts.h"
#include "../../common/parse.h"
#include "../../common/presets.h"
#include "../../common/schema.h"
#include "../../report/formats/devices.h"
#include "../mmshapes.h"
}
#include "../../kernels/cuda/cudautil.cuh"
#include "gpu.h"

namespace {

#define LT_CK(call)                                                                                    \
    do {                                                                                               \
        cublasStatus_t s_ = (call);                                                                    \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                               \
            return err_msg("%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__, #call, (int)s_);        \
    } while (0)

enum { MG_PEAK = GM_PEAK, MG_PEAK_SRC = GM_PEAK_SRC, MG_NOWN = GM_NOWN };
const size_t WORKSPACE = 32u << 20;  // cuBLASLt's advice for Hopper
const size_t ROTATE_BYTES = 256u << 20; // inputs rotated over at least this much: past any L2
const int CHECK_SAMPLES = 96;

struct mg_opts {
    const char *csv, *model, *shapes, *dtypes;
    long micro_batch, seq, tp, min_samples, autotune;
    double min_time;
    opt_list n, k;
};

// The element types and compute type of a precision.
struct mg_types {
    cudaDataType_t ab, cd, scale;
    cublasComputeType_t compute;
    size_t ab_size, cd_size;
};

mg_types types_of(gpu_dtype dt)
{
    switch (dt) {
    case GPU_FP32: return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4};
    case GPU_TF32: return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
    case GPU_FP16: return {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 2};
    case GPU_BF16: return {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 2};
    default: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1, 2};
    }
}

// One case's device buffers: `sets` copies of X and W (rotated so that small shapes stream from
// memory, not L2), one output, the fp8 scales, the workspace.
struct mg_bufs {
    void *x = nullptr, *w = nullptr, *y = nullptr, *c = nullptr, *ws = nullptr;
    float *scales = nullptr; // a_scale (W) at [0], b_scale (X) at [SCALE_STRIDE], each 256-byte aligned
    int sets = 1;
    size_t x_elems = 0, w_elems = 0;
};

const float A_SCALE = 2.0f, B_SCALE = 1.0f; // fp8: W's dequantisation scale 2 (checked), X's 1
const int SCALE_STRIDE = 64;                 // floats between the two scales

unsigned long long seed_x(int set) { return 1000ull + 2ull * (unsigned long long)set; }
unsigned long long seed_w(int set) { return 1001ull + 2ull * (unsigned long long)set; }

template <typename T> int fill_sets(const mg_bufs &b, size_t x_elems, size_t w_elems)
{
    for (int s = 0; s < b.sets; s++)
        if (gpu_fill<T>((T *)b.x + (size_t)s * x_elems, x_elems, seed_x(s), 1.0f) ||
            gpu_fill<T>((T *)b.w + (size_t)s * w_elems, w_elems, seed_w(s), 1.0f))
            return CB_EFAIL;
    return 0;
}

int fill_inputs(gpu_dtype dt, const mg_bufs &b)
{
    switch (dt) {
    case GPU_FP32:
    case GPU_TF32: return fill_sets<float>(b, b.x_elems, b.w_elems);
    case GPU_FP16: return fill_sets<__half>(b, b.x_elems, b.w_elems);
    case GPU_BF16: return fill_sets<__nv_bfloat16>(b, b.x_elems, b.w_elems);
    default: return fill_sets<__nv_fp8_e4m3>(b, b.x_elems, b.w_elems);
    }
}

void free_bufs(mg_bufs *b)
{
    cudaFree(b->x), cudaFree(b->w), cudaFree(b->y), cudaFree(b->c), cudaFree(b->ws), cudaFree(b->scales);
    *b = mg_bufs();
}

int alloc_bufs(mg_bufs *b, gpu_dtype dt, const mm_shape &s)
{
    mg_types t = types_of(dt);
    b->x_elems = (size_t)s.n * s.k, b->w_elems = (size_t)s.m * s.k;
    size_t set_bytes = (b->x_elems + b->w_elems) * t.ab_size;
    b->sets = (int)((ROTATE_BYTES + set_bytes - 1) / set_bytes);
    if (b->sets > 64) b->sets = 64;
    if (b->sets < 1) b->sets = 1;
    GPU_CK(cudaMalloc(&b->x, b->x_elems * t.ab_size * b->sets));
    GPU_CK(cudaMalloc(&b->w, b->w_elems * t.ab_size * b->sets));
    GPU_CK(cudaMalloc(&b->y, (size_t)s.n * s.m * t.cd_size));
    // C (read with beta 0: never) apart from D: cuBLASLt runs fp8 products out of place only
    GPU_CK(cudaMalloc(&b->c, (size_t)s.n * s.m * t.cd_size));
    GPU_CK(cudaMemset(b->c, 0, (size_t)s.n * s.m * t.cd_size));
    GPU_CK(cudaMalloc(&b->ws, WORKSPACE));
    GPU_CK(cudaMalloc((void **)&b->scales, 2 * SCALE_STRIDE * sizeof(float)));
    float sc[2 * SCALE_STRIDE] = {A_SCALE};
    sc[SCALE_STRIDE] = B_SCALE;
    GPU_CK(cudaMemcpy(b->scales, sc, sizeof sc, cudaMemcpyHostToDevice));
    return fill_inputs(dt, *b);
}

// The descriptors of one case; destroyed by the destructor.
struct mg_desc {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~mg_desc()
    {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (d) cublasLtMatrixLayoutDestroy(d);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (op) cublasLtMatmulDescDestroy(op);
    }
};

int make_desc(mg_desc *g, gpu_dtype dt, const mm_shape &s, const mg_bufs &b)
{
    mg_types t = types_of(dt);
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT_CK(cublasLtMatmulDescCreate(&g->op, t.compute, t.scale));
    LT_CK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_CK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (dt == GPU_FP8) {
        const float *as = b.scales, *bs = b.scales + SCALE_STRIDE;
        LT_CK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &as, sizeof as));
        LT_CK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &bs, sizeof bs));
    }
    LT_CK(cublasLtMatrixLayoutCreate(&g->a, t.ab, s.k, s.m, s.k));
    LT_CK(cublasLtMatrixLayoutCreate(&g->b, t.ab, s.k, s.n, s.k));
    LT_CK(cublasLtMatrixLayoutCreate(&g->d, t.cd, s.m, s.n, s.m));
    LT_CK(cublasLtMatmulPreferenceCreate(&g->pref));
    size_t ws = WORKSPACE;
    LT_CK(cublasLtMatmulPreferenceSetAttribute(g->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    return 0;
}

struct mg_run {
    cublasLtHandle_t lt;
    const mg_desc *g;
    const mg_bufs *b;
    gpu_dtype dt;
    int call = 0;
};

// One product on the next input set; cuBLASLt's status.
cublasStatus_t lt_call(mg_run *r, const cublasLtMatmulAlgo_t *algo)
{
    float alpha = 1.0f, beta = 0.0f;
    mg_types t = types_of(r->dt);
    int set = r->call++ % r->b->sets;
    const char *x = (const char *)r->b->x + (size_t)set * r->b->x_elems * t.ab_size;
    const char *w = (const char *)r->b->w + (size_t)set * r->b->w_elems * t.ab_size;
    return cublasLtMatmul(r->lt, r->g->op, &alpha, w, r->g->a, x, r->g->b, &beta, r->b->c, r->g->d, r->b->y, r->g->d,
                          algo, r->b->ws, WORKSPACE, 0);
}

// One case ready to run: its buffers, descriptors and runner (buffers freed by the destructor).
struct mg_case {
    mg_bufs b;
    mg_desc g;
    mg_run r{};
    ~mg_case() { free_bufs(&b); }
};

int case_open(mg_case *c, cublasLtHandle_t lt, gpu_dtype dt, const mm_shape &s)
{
    int rc = alloc_bufs(&c->b, dt, s);
    if (rc == 0) rc = make_desc(&c->g, dt, s, c->b);
    c->r = {lt, &c->g, &c->b, dt};
    return rc;
}

int run_once(mg_run *r, const cublasLtMatmulAlgo_t *algo)
{
    LT_CK(lt_call(r, algo));
    return 0;
}

// Y's element (row, col) from the device, as a double.
int read_y(const mg_bufs &b, gpu_dtype dt, const mm_shape &s, long row, long col, double *v)
{
    size_t i = (size_t)row * s.m + col;
    if (dt == GPU_FP32 || dt == GPU_TF32) {
        float f;
        GPU_CK(cudaMemcpy(&f, (const float *)b.y + i, sizeof f, cudaMemcpyDeviceToHost));
        *v = f;
    } else if (dt == GPU_FP16) {
        __half h;
        GPU_CK(cudaMemcpy(&h, (const __half *)b.y + i, sizeof h, cudaMemcpyDeviceToHost));
        *v = __half2float(h);
    } else {
        __nv_bfloat16 h;
        GPU_CK(cudaMemcpy(&h, (const __nv_bfloat16 *)b.y + i, sizeof h, cudaMemcpyDeviceToHost));
        *v = __bfloat162float(h);
    }
    return 0;
}

template <typename T> double ref_dot(const mm_shape &s, long row, long col)
{
    double acc = 0;
    for (long k = 0; k < s.k; k++)
        acc += gpu_host_val<T>(seed_x(0), (size_t)row * s.k + k, 1.0f) *
               gpu_host_val<T>(seed_w(0), (size_t)col * s.k + k, 1.0f);
    return acc;
}

double ref_elem(gpu_dtype dt, const mm_shape &s, long row, long col)
{
    switch (dt) {
    case GPU_FP32:
    case GPU_TF32: return ref_dot<float>(s, row, col);
    case GPU_FP16: return ref_dot<__half>(s, row, col);
    case GPU_BF16: return ref_dot<__nv_bfloat16>(s, row, col);
    default: return (double)A_SCALE * B_SCALE * ref_dot<__nv_fp8_e4m3>(s, row, col);
    }
}

// The output poisoned (NaN in every format: all bits set), one product on input set 0, then
// CHECK_SAMPLES elements (the corners and a spread) against the double-precision reference.
int check_case(mg_run *r, const cublasLtMatmulAlgo_t *algo, const mm_shape &s, double *err)
{
    mg_types t = types_of(r->dt);
    GPU_CK(cudaMemset(r->b->y, 0xFF, (size_t)s.n * s.m * t.cd_size));
    r->call = 0;
    if (run_once(r, algo) != 0) return CB_EFAIL;
    GPU_CK(cudaDeviceSynchronize());
    double out[CHECK_SAMPLES], ref[CHECK_SAMPLES];
    unsigned long long z = 12345;
    for (int i = 0; i < CHECK_SAMPLES; i++) {
        long row = i == 0 ? 0 : i == 1 ? s.n - 1 : (long)((z = z * 6364136223846793005ull + 1442695040888963407ull) >> 33) % s.n;
        long col = i == 0 ? 0 : i == 1 ? s.m - 1 : (long)((z = z * 6364136223846793005ull + 1442695040888963407ull) >> 33) % s.m;
        if (read_y(*r->b, r->dt, s, row, col, &out[i]) != 0) return CB_EFAIL;
        ref[i] = ref_elem(r->dt, s, row, col);
    }
    *err = gpu_rel_err(out, ref, CHECK_SAMPLES);
    if (!(*err <= gpu_check_tol(r->dt)))
        return err_msg("matmul %s %s n %d k %d m %d %s: output differs from the double-precision reference: "
                       "relative error %.3g > %.3g (NaN: an element not written or not finite)",
                       s.op, s.phase, s.n, s.k, s.m, gpu_dtype_names[r->dt], *err, gpu_check_tol(r->dt));
    return 0;
}

struct mg_result {
    double ms[64];
    int nsamples;
    char impl[160];
};

// ms per call of `algo`: `reps` calls a sample, `samples` samples.
int time_algo(mg_run *r, const cublasLtMatmulAlgo_t *algo, int reps, int samples, double *ms)
{
    for (int i = 0; i < samples; i++)
        if (gpu_time_ms([&] { return run_once(r, algo); }, reps, &ms[i]) != 0) return CB_EFAIL;
    return 0;
}

void algo_name(const cublasLtMatmulAlgo_t *a, char *buf, size_t n)
{
    int id = -1, tile = -1, stages = -1, splitk = -1;
    size_t w;
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
    snprintf(buf, n, "algo %d tile %d stages %d splitk %d", id, tile, stages, splitk);
}

// The heuristic's candidates (up to `tries`), each timed briefly; the fastest, and what it says.
int pick_algo(mg_run *r, int tries, cublasLtMatmulAlgo_t *best, double *est_ms, char *impl, size_t n)
{
    cublasLtMatmulHeuristicResult_t res[16];
    int got = 0;
    if (tries < 1) tries = 1;
    if (tries > 16) tries = 16;
    LT_CK(cublasLtMatmulAlgoGetHeuristic(r->lt, r->g->op, r->g->a, r->g->b, r->g->d, r->g->d, r->g->pref, tries, res,
                                         &got));
    if (got == 0) return err_msg("cuBLASLt offers no algorithm for this case");
    double t_best = INFINITY, t_heur = INFINITY;
    int i_best = -1, refused = 0;
    for (int i = 0; i < got; i++) {
        double ms[3], med, lo, hi, cv;
        // a candidate the library then refuses to run (its heuristic gives no guarantee) is skipped
        if (res[i].state != CUBLAS_STATUS_SUCCESS || lt_call(r, &res[i].algo) != CUBLAS_STATUS_SUCCESS) {
            refused++;
            continue;
        }
        if (time_algo(r, &res[i].algo, 2, 3, ms) != 0) return CB_EFAIL;
        gpu_stats(ms, 3, &med, &lo, &hi, &cv);
        if (i == 0) t_heur = med;
        if (med < t_best) t_best = med, i_best = i;
    }
    GPU_CK(cudaGetLastError());
    if (i_best < 0) return err_msg("cuBLASLt refused to run each of the %d algorithms its heuristic offered", got);
    *best = res[i_best].algo, *est_ms = t_best;
    char name[96];
    algo_name(best, name, sizeof name);
    char why[48] = "";
    if (refused) snprintf(why, sizeof why, "; %d refused to run", refused);
    if (got == 1) snprintf(impl, n, "%s (the heuristic's only candidate)", name);
    else if (i_best == 0) snprintf(impl, n, "%s (heuristic's first; fastest of %d%s)", name, got, why);
    else if (isinf(t_heur)) snprintf(impl, n, "%s (autotuned: candidate %d of %d%s, the first among them)", name, i_best + 1, got, why);
    else snprintf(impl, n, "%s (autotuned: candidate %d of %d%s, heuristic's first %.2fx slower)", name, i_best + 1, got,
                  why, t_heur / t_best);
    return 0;
}

}  // namespace

namespace {

// The dense peak each row's pct_of_peak is against: the data sheet's (data/devices.csv) when the
// table knows the device and the precision, else the one from the clocks (gpu.h), else none.
struct mg_peaks {
    double gflops[GPU_NDTYPES];
    char source[GPU_NDTYPES][128];
};

void peaks_of(const gpu_dev *d, mg_peaks *p)
{
    dev_table t;
    memset(&t, 0, sizeof t);
    const dev_row *row = NULL;
    if (*d->key && devices_load(&t, NULL) == 0) row = devices_find(&t, d->key);
    static const char *const col[GPU_NDTYPES] = {"fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops",
                                                 "fp8_tflops"};
    for (int i = 0; i < GPU_NDTYPES; i++) {
        double sheet = gpu_sheet_tflops(row, (gpu_dtype)i);
        double clocks = gpu_clock_peak_tflops(d, (gpu_dtype)i);
        if (sheet > 0) {
            p->gflops[i] = sheet * 1e3 / (row->workers > 0 ? row->workers : 1);
            snprintf(p->source[i], sizeof p->source[i], "data sheet (data/devices.csv %s %s)", d->key, col[i]);
        } else if (clocks > 0) {
            p->gflops[i] = clocks * 1e3;
            snprintf(p->source[i], sizeof p->source[i], "clocks: %d SMs x %.0f MHz x %.0f FLOP/clk", d->sms,
                     d->sm_clock_mhz, gpu_flop_per_clk_sm(d->cc_major, d->cc_minor, (gpu_dtype)i));
        } else {
            p->gflops[i] = NAN;
            snprintf(p->source[i], sizeof p->source[i], "unknown");
        }
    }
    devices_free(&t);
}

void add_row(record *rec, const gpu_dev *d, const mm_shape &s, gpu_dtype dt, double *ms, int n, const char *impl,
             const mg_peaks &pk)
{
    double med, lo, hi, cv, flops = 2.0 * s.n * s.k * s.m;
    gpu_stats(ms, n, &med, &lo, &hi, &cv);
    int r = record_add_row(rec);
    if (r < 0) return;
    char isa[16];
    snprintf(isa, sizeof isa, "sm_%d%d", d->cc_major, d->cc_minor);
    record_str(rec, r, MM_OP, s.op), record_str(rec, r, MM_PHASE, s.phase);
    record_num(rec, r, MM_N, s.n), record_num(rec, r, MM_K, s.k), record_num(rec, r, MM_M, s.m);
    record_num(rec, r, MM_COUNT, s.count);
    record_num(rec, r, MM_GF_MED, flops / med / 1e6), record_num(rec, r, MM_GF_MIN, flops / hi / 1e6);
    record_num(rec, r, MM_GF_MAX, flops / lo / 1e6), record_num(rec, r, MM_CV, cv), record_num(rec, r, MM_MS, med);
    record_num(rec, r, MM_PCT, 100.0 * flops / med / 1e6 / pk.gflops[dt]);
    record_num(rec, r, MM_STEP_MS, med * s.count);
    record_str(rec, r, MM_DTYPE, gpu_dtype_names[dt]), record_str(rec, r, MM_BACKEND, "cublaslt");
    record_str(rec, r, MM_IMPL, impl), record_str(rec, r, MM_ISA, isa);
    record_num(rec, r, MG_PEAK, pk.gflops[dt]), record_str(rec, r, MG_PEAK_SRC, pk.source[dt]);
    gpu_cols_fill(rec, r, MG_NOWN, d);
}

// One shape in one precision: buffers, descriptors, the algorithm, the check, the timing, the row.
int measure(cublasLtHandle_t lt, const gpu_dev *d, gpu_dtype dt, const mm_shape &s, const mg_opts &o,
            const mg_peaks &pk, record *rec, double *worst)
{
    mg_case c;
    int rc = case_open(&c, lt, dt, s);
    mg_run &r = c.r;
    cublasLtMatmulAlgo_t algo;
    double est = 0, err = 0;
    char impl[160] = "";
    if (rc == 0) rc = pick_algo(&r, (int)o.autotune, &algo, &est, impl, sizeof impl);
    if (rc == 0) rc = check_case(&r, &algo, s, &err);
    mg_result res;
    if (rc == 0) {
        int reps = est > 0 && est < 1.0 ? (int)ceil(1.0 / est) : 1; // a sample: at least 1 ms
        int samples = (int)ceil(o.min_time * 1e3 / (reps * est));
        if (samples < (int)o.min_samples) samples = (int)o.min_samples;
        if (samples > 64) samples = 64;
        rc = time_algo(&r, &algo, reps, samples, res.ms);
        if (rc == 0) add_row(rec, d, s, dt, res.ms, samples, impl, pk);
        if (err > *worst) *worst = err;
    }
    return rc;
}

int shapes_of(const mg_opts &o, mm_shape *out, int cap)
{
    if (strcmp(o.shapes, "sweep") == 0) {
        if (o.model) return err_usage("flag '--model' goes with '--shapes transformer'");
        return mm_shapes_sweep(out, cap, o.n.v, o.n.n, o.k.v, o.k.n);
    }
    if (strcmp(o.shapes, "transformer") != 0)
        return err_usage("flag '--shapes': expected sweep or transformer, got '%s'", o.shapes);
    if (!o.model) return err_usage("flag '--shapes transformer' needs '--model PRESET'");
    model_config cfg;
    if (model_preset_find(o.model, &cfg) != 0) return CB_EUSAGE;
    long T = o.seq > 0 ? o.seq : cfg.max_T;
    return mm_shapes_transformer_tp(out, cap, &cfg, (int)o.micro_batch, (int)T, (int)o.tp);
}

int dtypes_of(const gpu_dev *d, const char *list, int explicit_list, int *out)
{
    char buf[128], *w[GPU_NDTYPES];
    int n = parse_word_list(list, "--dtype", 0, buf, sizeof buf, w, GPU_NDTYPES), c = 0;
    if (n < 0) return CB_EUSAGE;
    for (int i = 0; i < n; i++) {
        int dt = gpu_dtype_parse(w[i]);
        if (dt < 0) return err_usage("flag '--dtype': expected fp32, tf32, fp16, bf16 or fp8, got '%s'", w[i]);
        int fp8_ok = d->cc_major > 8 || (d->cc_major == 8 && d->cc_minor >= 9);
        if (dt == GPU_FP8 && !fp8_ok) {
            if (explicit_list) return err_usage("flag '--dtype': fp8 needs compute capability 8.9 or newer; this GPU is %d.%d", d->cc_major, d->cc_minor);
            continue;
        }
        out[c++] = dt;
    }
    return c;
}

// The table's columns (gpu_matmul_cols); the details in the CSV only.
int record_init_mg(record *rec)
{
    if (record_init(rec, gpu_matmul_cols, GM_NCOLS) != 0) return CB_EFAIL;
    for (int c = MM_STEP_MS; c < MG_NOWN; c++)
        if (c != MM_DTYPE) record_csv_only(rec, c);
    return 0;
}

// A NaN in X's row 3 (bf16) makes Y's row 3 NaN and leaves row 4 finite.
int nan_case(cublasLtHandle_t lt, const mm_shape &s)
{
    mg_case c;
    int rc = case_open(&c, lt, GPU_BF16, s);
    mg_run &r = c.r;
    const mg_bufs &b = c.b;
    cublasLtMatmulAlgo_t algo;
    double est, y3 = 0, y4 = 0;
    char impl[160];
    if (rc == 0) rc = pick_algo(&r, 1, &algo, &est, impl, sizeof impl);
    __nv_bfloat16 nan = __float2bfloat16(NAN);
    for (int set = 0; rc == 0 && set < b.sets; set++)
        if (cudaMemcpy((__nv_bfloat16 *)b.x + (size_t)set * b.x_elems + 3 * (size_t)s.k + 5, &nan, sizeof nan,
                       cudaMemcpyHostToDevice) != cudaSuccess)
            rc = err_msg("cannot write the NaN into X");
    r.call = 0;
    if (rc == 0) rc = run_once(&r, &algo);
    if (rc == 0 && cudaDeviceSynchronize() != cudaSuccess) rc = err_msg("the product failed");
    if (rc == 0) rc = read_y(b, GPU_BF16, s, 3, s.m / 2, &y3);
    if (rc == 0) rc = read_y(b, GPU_BF16, s, 4, s.m / 2, &y4);
    if (rc == 0 && !(isnan(y3) && isfinite(y4))) rc = err_msg("a NaN in X row 3 gave Y %g (row 3), %g (row 4)", y3, y4);
    return rc;
}

const char SYNOPSIS[] = "[options]";

int parse(int argc, char **argv, mg_opts *o, int *explicit_dtypes)
{
    *o = mg_opts{NULL, NULL, "sweep", "bf16,fp16,tf32,fp8", 1, 0, 1, 10, 8, 0.05, {}, {}};
    long ns[] = {1024, 2048, 4096, 8192, 16384, 32768}, ks[] = {1024, 2048, 4096, 8192, 12288, 16384};
    const opt_spec specs[] = {
        {"csv", OPT_STR, &o->csv, 0, 0, 0, 0, "FILE", "also write the results as CSV (- for stdout)"},
        {"shapes", OPT_STR, &o->shapes, 0, 0, 0, 0, "sweep|transformer", "the N x K sweep, or one training step's GEMMs"},
        {"n", OPT_LONG_LIST, &o->n, 16, 1L << 20, 0, 0, "LIST", "tokens per device N (default 1024,...,32768)"},
        {"k", OPT_LONG_LIST, &o->k, 16, 1L << 17, 0, 0, "LIST", "model widths K (default 1024,...,16384)"},
        {"model", OPT_STR, &o->model, 0, 0, 0, 0, "PRESET", "preset for --shapes transformer (data/models.csv)"},
        {"micro-batch", OPT_LONG, &o->micro_batch, 1, 4096, 0, 0, "B", "sequences per micro-batch (default 1)"},
        {"seq", OPT_LONG, &o->seq, 1, 1L << 20, 0, 0, "T", "sequence length (default the preset's)"},
        {"tp", OPT_LONG, &o->tp, 1, 1024, 0, 0, "T", "tensor-parallel ranks: the GEMMs of one rank (default 1)"},
        {"dtype", OPT_STR, &o->dtypes, 0, 0, 0, 0, "LIST", "fp32, tf32, fp16, bf16, fp8 (default bf16,fp16,tf32,fp8)"},
        {"autotune", OPT_LONG, &o->autotune, 1, 16, 0, 0, "N", "cuBLASLt candidates timed per case (default 8)"},
        {"min-samples", OPT_LONG, &o->min_samples, 3, 64, 0, 0, "N", "timed samples per case (default 10)"},
        {"min-time", OPT_DOUBLE, &o->min_time, 0, 0, 0, 60, "S", "minimum timed seconds per case (default 0.05)"},
        {NULL, OPT_FLAG, NULL, 0, 0, 0, 0, NULL, NULL}};
    const char *before = o->dtypes;
    int rc = opts_parse("costbench-gpu matmul", SYNOPSIS, specs, argc, argv, 1, NULL, NULL);
    if (rc != 0) return rc;
    if (o->n.n == 0) memcpy(o->n.v, ns, sizeof ns), o->n.n = 6;
    if (o->k.n == 0) memcpy(o->k.v, ks, sizeof ks), o->k.n = 6;
    *explicit_dtypes = o->dtypes != before;
    return 0;
}

void notes(record *rec, const gpu_dev *d, const mg_opts &o, const int *dts, int ndt, const double *worst)
{
    gpu_note(rec, d);
    record_note(rec, "every product Y (n x m) = X (n x k) W^T through cuBLASLt in its TN layout (fp8's), fp32 "
                     "accumulation; fp8: e4m3 X and W, W's scale 2, bf16 Y");
    record_note(rec, "each case: up to %ld of cuBLASLt's candidates timed, the fastest kept (impl); inputs rotated over "
                     "copies of at least 256 MiB in all (never timed from L2); CUDA events, %ld+ samples of >= 1 ms",
                o.autotune, o.min_samples);
    for (int i = 0; i < ndt; i++)
        record_note(rec, "%s: checked before timing on %d sampled outputs against a double-precision reference: "
                         "worst relative error %.2g (tolerance %.0e)",
                    gpu_dtype_names[dts[i]], CHECK_SAMPLES, worst[i], gpu_check_tol((gpu_dtype)dts[i]));
}

} // namespace

extern "C" int gpu_matmul_main(const gpu_dev *d, int argc, char **argv)
{
    mg_opts o;
    int explicit_dt = 0, dts[GPU_NDTYPES], rc = parse(argc, argv, &o, &explicit_dt);
    if (rc != 0) return rc == 1 ? 0 : rc;
    int ndt = dtypes_of(d, o.dtypes, explicit_dt, dts);
    if (ndt < 0) return ndt;
    static mm_shape shapes[1024];
    int ns = shapes_of(o, shapes, 1024);
    if (ns < 0) return ns;
    record rec;
    if (record_init_mg(&rec) != 0) return CB_EFAIL;
    mg_peaks pk;
    peaks_of(d, &pk);
    cublasLtHandle_t lt;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return err_msg("cannot create a cuBLASLt handle");
    double worst[GPU_NDTYPES] = {0};
    for (int i = 0; i < ndt && rc == 0; i++)
        for (int j = 0; j < ns && rc == 0; j++) rc = measure(lt, d, (gpu_dtype)dts[i], shapes[j], o, pk, &rec, &worst[i]);
    cublasLtDestroy(lt);
    if (rc == 0) {
        notes(&rec, d, o, dts, ndt, worst);
        record_print(&rec, stdout);
        machine_info m;
        gpu_machine_info(&m, NULL);
        if (o.csv) rc = record_write_csv(&rec, o.csv, &m);
    }
    record_free(&rec);
    return rc;
}

extern "C" int gpu_gemm_probe(const gpu_dev *d, gpu_dtype dt, int size, double gflops[3], char *impl, size_t n)
{
    mm_shape s = {};
    snprintf(s.op, sizeof s.op, "peak"), snprintf(s.phase, sizeof s.phase, "fwd");
    s.n = s.k = s.m = size, s.count = 1;
    mg_opts o = {NULL, NULL, "sweep", "", 1, 0, 1, 10, 8, 0.2, {}, {}};
    mg_peaks pk;
    peaks_of(d, &pk);
    cublasLtHandle_t lt;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return err_msg("cannot create a cuBLASLt handle");
    record rec;
    double worst = 0;
    int rc = record_init_mg(&rec) != 0 ? CB_EFAIL : measure(lt, d, dt, s, o, pk, &rec, &worst);
    cublasLtDestroy(lt);
    if (rc == 0 && rec.nrows == 1) {
        gflops[0] = rec.num[MM_GF_MED], gflops[1] = rec.num[MM_GF_MIN], gflops[2] = rec.num[MM_GF_MAX];
        snprintf(impl, n, "%s", rec.str[MM_IMPL] ? rec.str[MM_IMPL] : "");
    }
    record_free(&rec);
    return rc;
}

// Small shapes of every precision the device has against the reference (check_case), and a NaN in
// X reaching Y.
extern "C" int gpu_matmul_selftest(const gpu_dev *d, int *passed)
{
    mm_shape odd = {}, aligned = {};
    snprintf(odd.op, sizeof odd.op, "test"), snprintf(odd.phase, sizeof odd.phase, "fwd");
    aligned = odd;
    odd.n = 130, odd.k = 264, odd.m = 72, aligned.n = 256, aligned.k = 512, aligned.m = 384;
    odd.count = aligned.count = 1;
    mg_opts o = {NULL, NULL, "sweep", "", 1, 0, 1, 3, 4, 0, {}, {}};
    mg_peaks pk;
    peaks_of(d, &pk);
    cublasLtHandle_t lt;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return printf("FAIL matmul: no cuBLASLt handle\n"), 1;
    int failed = 0, fp8 = d->cc_major > 8 || (d->cc_major == 8 && d->cc_minor >= 9);
    for (int dt = 0; dt < GPU_NDTYPES; dt++) {
        if (dt == GPU_FP8 && !fp8) continue;
        for (int a = 0; a < 2; a++) {
            const mm_shape &s = dt == GPU_FP8 || a ? aligned : odd;
            record rec;
            double worst = 0;
            // measure() checks before it times (its row is not needed here)
            int rc = record_init_mg(&rec) != 0 ? CB_EFAIL : measure(lt, d, (gpu_dtype)dt, s, o, pk, &rec, &worst);
            record_free(&rec);
            printf("%s matmul %s n %d k %d m %d: relative error %.2g (tolerance %.0e)\n", rc ? "FAIL" : "ok",
                   gpu_dtype_names[dt], s.n, s.k, s.m, worst, gpu_check_tol((gpu_dtype)dt));
            rc ? failed++ : (*passed)++;
        }
    }
    int rc = nan_case(lt, aligned);
    printf("%s matmul bf16: a NaN in X reaches Y\n", rc ? "FAIL" : "ok");
    rc ? failed++ : (*passed)++;
    cublasLtDestroy(lt);
    return failed;
}
