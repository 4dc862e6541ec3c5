/* check.h: the test framework: CHECK records a failure and goes on; a test passes when none
 * of its checks failed; the runner ends with "N passed, N failed" and exits non-zero on any. */
#ifndef CB_CHECK_H
#define CB_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "../report/predict/scale.h"

void check_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (!(cond)) check_fail(__FILE__, __LINE__, __VA_ARGS__);     \
    } while (0)

typedef struct {
    const char *name;
    void (*fn)(void);
} test_case;

/* |x - ref| <= atol + rtol * |ref| elementwise; prints the worst element and the max abs/rel
 * errors when it fails. Returns 1 when close. */
int allclose(const char *what, const float *x, const double *ref, size_t n, double atol, double rtol);
/* The same for bf16 values (widened exactly). */
int allclose_bf16(const char *what, const uint16_t *x, const double *ref, size_t n, double atol, double rtol);
/* Central finite differences in double of loss(x) at `nsample` elements (all when n is small)
 * against the analytic gradient `grad`; error |a - n| / max(|n|, rms of numeric) <= tol. */
int fd_check(const char *what, double *x, size_t n, const float *grad, double (*loss)(void *ctx, const double *x),
             void *ctx, int nsample, double tol);

/* Deterministic uniform numbers in [-1, 1). */
void rand_fill(float *x, size_t n, unsigned *state);
void rand_fill_d(double *x, size_t n, unsigned *state);
void to_double(double *d, const float *f, size_t n);
void to_float(float *f, const double *d, size_t n);

/* stderr captured into a buffer around a call (to check one-line error messages). */
void capture_stderr_begin(void);
const char *capture_stderr_end(void);

/* Runs the binary under test with args (NULL-terminated) and returns its exit status (-1 if it
 * died of a signal); its stdout and stderr go to out/err (NULL: discarded). */
int cli_run(const char *const *args, char *out, size_t outsz, char *err, size_t errsz);
/* Runs argv[0] (searched in PATH) with argv, the same way. */
int cmd_run(const char *const *argv, char *out, size_t outsz, char *err, size_t errsz);
/* Runs the binary under test with args under `mpirun -np N` (as root too), leak detection off
 * (Open MPI's own allocations are not ours). */
int mpi_run(int np, const char *const *args, char *out, size_t outsz, char *err, size_t errsz);

/* A new directory /tmp/costbench-test-XXXXXX (NULL, after a failed check, when it cannot be made);
 * the last 8 names stay valid. */
char *test_tmpdir(void);
/* `name` inside this process's own temporary directory (made once): concurrent test runs never
 * share a path. The result stays valid for the next 63 calls. */
const char *test_path(const char *name);
/* Writes text to path (a failed check when it cannot). */
void write_text(const char *path, const char *text);
/* A corpus of made-up text built once (costbench dataset build) for the tiny training runs of the
 * tests: its prefix (a directory that does not exist when the build failed, after a failed check). */
const char *test_corpus(void);
/* Writes n bytes to path; 0, or -1 when it cannot. */
int write_file_bytes(const char *path, const void *data, size_t n);
/* Runs the binary under test with args in a child whose files may not grow past fsize bytes, with
 * SIGXFSZ ignored, so that its writes past the limit fail with EFBIG as on a full disk; stdout is
 * discarded, stderr goes to err. Returns the exit status, -1 if it died of a signal. */
int cli_run_fsize_limited(const char *const *args, long fsize, char *err, size_t errsz);
/* The step model the scale tests start from: pythia-1b, TP 8 on 8 accelerators of 100 dense BF16
 * TFLOP/s and an 800 Gbit/s network, global batch 64, 0.5 s per micro-batch. */
void test_scale_model(scale_model *m);
/* Occurrences of needle in hay; lines of s (its newlines); the number after `key` on the first
 * line of `text` that holds `line_prefix` (NaN when there is none). */
int count_of(const char *hay, const char *needle);
int count_lines(const char *s);
double note_value(const char *text, const char *line_prefix, const char *key);
/* A file's text into buf (empty when missing). */
void slurp(const char *path, char *buf, size_t n);
/* rm -rf dir (a warning when it fails). */
void rm_tree(const char *dir);
/* The numbers of column `name` of a CSV, at most cap; returns the count, or -1 (error printed)
 * when the file or the column is missing. */
int csv_column(const char *path, const char *name, double *out, int cap);

/* Models (model/gpt.h): random token ids in [0, V) for inputs and targets, deterministic in seed;
 * dst takes src's weights and tokens (same shapes; dst's bf16 copies are remade); one
 * zero_grad + forward + backward (0, or -1 after a failed kernel). */
struct gpt_model_s;
void fill_tokens(struct gpt_model_s *m, unsigned seed);
void copy_weights_and_tokens(struct gpt_model_s *dst, const struct gpt_model_s *src);
int train_micro_step(struct gpt_model_s *m, float scale, double *loss);

/* out[i] == bf16_from_float(ref[i]) for every i; prints the first element that is not. */
int bf16_is_rounding(const char *what, const uint16_t *out, const float *ref, size_t n);

/* Overwrites element `elem` of the F32 or BF16 tensor `name` of a safetensors file with v (a bf16
 * tensor gets v rounded to nearest even); a failed check when it cannot. */
void st_poke(const char *path, const char *name, long elem, float v);

/* The binary under test, for CLI tests (argv[1] of the runner). */
extern const char *g_costbench;

extern const test_case tests_common[], tests_kernels[], tests_rope[], tests_model[], tests_train[], tests_cli[],
    tests_report[], tests_comm[], tests_plot[], tests_outdir[], tests_scale[], tests_audit[], tests_attention[],
    tests_bf16[], tests_precision[], tests_sampler[], tests_trajectory[], tests_fullbf16[], tests_archk[], tests_arch[],
    tests_presets[], tests_plan[], tests_calib[], tests_audit2_ckpt[], tests_audit2_clean[], tests_audit2_traj[],
    tests_audit2_cli[], tests_audit2_calib[], tests_devices[], tests_devicefigs[], tests_physics[], tests_published[], tests_validate[], tests_tputcols[],
    tests_models[], tests_opbench[], tests_stepmodel[], tests_plansearch[], tests_planview[], tests_ops[], tests_import[],
    tests_logmegatron[], tests_logtitan[], tests_netfit[], tests_prices[], tests_pricesupdate[],
    tests_audit3_import[], tests_audit3_prices[], tests_audit3_files[], tests_audit3_net[], tests_layout[], tests_names[],
    tests_band[], tests_logexcerpts[], tests_gpu[], tests_gpurope[], tests_gemmcurve[];

#endif
