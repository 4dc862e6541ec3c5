#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../model/gpt.h"
#include "../common/presets.h"
#include "../report/predict/stepmodel.h"
#include "steptoy.h"
#include "csvrun.h"
#include "../kernels/bf16.h"
#include "../model/safetensors.h"
#include "check.h"

int allclose(const char *what, const float *x, const double *ref, size_t n, double atol, double rtol)
{
    size_t worst = 0, bad = 0;
    double max_abs = 0, max_rel = 0, worst_excess = -1;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)x[i] - ref[i]), lim = atol + rtol * fabs(ref[i]);
        if (e > max_abs) max_abs = e;
        if (fabs(ref[i]) > 0 && e / fabs(ref[i]) > max_rel) max_rel = e / fabs(ref[i]);
        if (!(e <= lim) || !isfinite(x[i])) {
            bad++;
            if (e - lim > worst_excess || !isfinite(x[i])) worst_excess = e - lim, worst = i;
        }
    }
    if (bad) {
        printf("    %s: %zu of %zu elements beyond atol %.1e + rtol %.1e; worst [%zu] %.9g vs %.9g; max abs %.3e, max "
               "rel %.3e\n",
               what, bad, n, atol, rtol, worst, x[worst], ref[worst], max_abs, max_rel);
        return 0;
    }
    return 1;
}

int allclose_bf16(const char *what, const bf16 *x, const double *ref, size_t n, double atol, double rtol)
{
    float *f = malloc((n ? n : 1) * sizeof(float));
    if (!f) {
        printf("    %s: out of memory\n", what);
        return 0;
    }
    bf16_to_floats(f, x, n);
    int ok = allclose(what, f, ref, n, atol, rtol);
    free(f);
    return ok;
}

int fd_check(const char *what, double *x, size_t n, const float *grad, double (*loss)(void *ctx, const double *x),
             void *ctx, int nsample, double tol)
{
    size_t idx[4096];
    int m = 0;
    unsigned st = 987654321u;
    if ((size_t)nsample >= n) {
        for (size_t i = 0; i < n && m < 4096; i++) idx[m++] = i;
    } else {
        for (int i = 0; i < nsample && i < 4096; i++) {
            st = st * 1664525u + 1013904223u;
            idx[m++] = (size_t)(st >> 4) % n;
        }
    }
    double num[4096], rms = 0;
    for (int i = 0; i < m; i++) {
        double x0 = x[idx[i]], h = 1e-5 * fmax(1.0, fabs(x0));
        x[idx[i]] = x0 + h;
        double lp = loss(ctx, x);
        x[idx[i]] = x0 - h;
        double lm = loss(ctx, x);
        x[idx[i]] = x0;
        num[i] = (lp - lm) / (2 * h);
        rms += num[i] * num[i];
    }
    rms = sqrt(rms / m);
    double worst = 0;
    int wi = 0;
    for (int i = 0; i < m; i++) {
        double e = fabs((double)grad[idx[i]] - num[i]) / fmax(fabs(num[i]), rms > 0 ? rms : 1e-30);
        if (e > worst || !isfinite(grad[idx[i]])) worst = isfinite(grad[idx[i]]) ? e : INFINITY, wi = i;
    }
    if (!(worst <= tol)) {
        printf("    %s: finite differences disagree: element %zu analytic %.9g numeric %.9g (error %.3e > %.1e, rms "
               "%.3e)\n",
               what, idx[wi], grad[idx[wi]], num[wi], worst, tol, rms);
        return 0;
    }
    return 1;
}

void rand_fill(float *x, size_t n, unsigned *state)
{
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        x[i] = (float)((*state >> 8) / 8388608.0 - 1.0);
    }
}

void rand_fill_d(double *x, size_t n, unsigned *state)
{
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        x[i] = (*state >> 8) / 8388608.0 - 1.0;
    }
}

void to_double(double *d, const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++) d[i] = f[i];
}

void to_float(float *f, const double *d, size_t n)
{
    for (size_t i = 0; i < n; i++) f[i] = (float)d[i];
}

static int saved_fd = -1;
static char cap_path[64];
static char cap_buf[8192];

void capture_stderr_begin(void)
{
    fflush(stderr);
    snprintf(cap_path, sizeof cap_path, "/tmp/costbench-test-err-XXXXXX");
    int fd = mkstemp(cap_path);
    saved_fd = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

const char *capture_stderr_end(void)
{
    fflush(stderr);
    dup2(saved_fd, STDERR_FILENO);
    close(saved_fd);
    FILE *f = fopen(cap_path, "r");
    size_t n = f ? fread(cap_buf, 1, sizeof cap_buf - 1, f) : 0;
    cap_buf[n] = '\0';
    if (f) fclose(f);
    unlink(cap_path);
    return cap_buf;
}

static void slurp_fd(int fd, char *buf, size_t n)
{
    if (!buf || n == 0) return;
    lseek(fd, 0, SEEK_SET);
    ssize_t k = read(fd, buf, n - 1);
    buf[k > 0 ? k : 0] = '\0';
}

int cmd_run(const char *const *argv, char *out, size_t outsz, char *err, size_t errsz)
{
    char outp[] = "/tmp/costbench-cli-out-XXXXXX", errp[] = "/tmp/costbench-cli-err-XXXXXX";
    int fo = mkstemp(outp), fe = mkstemp(errp);
    unlink(outp);
    unlink(errp);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fo, STDOUT_FILENO);
        dup2(fe, STDERR_FILENO);
        execvp(argv[0], (char **)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    slurp_fd(fo, out, outsz);
    slurp_fd(fe, err, errsz);
    close(fo);
    close(fe);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int cli_run(const char *const *args, char *out, size_t outsz, char *err, size_t errsz)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = g_costbench;
    for (int i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    return cmd_run(argv, out, outsz, err, errsz);
}

void slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = '\0';
    if (f) fclose(f);
}

void rm_tree(const char *dir)
{
    const char *argv[] = {"rm", "-rf", dir, NULL};
    if (cmd_run(argv, NULL, 0, NULL, 0) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
}

int csv_column(const char *path, const char *name, double *out, int cap)
{
    table t;
    if (table_load(&t, path) != 0) return -1;
    int c = table_col(&t, name, 1), n = 0;
    for (int i = 0; c >= 0 && i < t.nrows && n < cap; i++) out[n++] = strtod(table_cell(&t, i, c), NULL);
    table_free(&t);
    return c >= 0 ? n : -1;
}

char *test_tmpdir(void)
{
    static char buf[8][64];
    static int next;
    char *d = buf[next++ % 8];
    snprintf(d, 64, "/tmp/costbench-test-XXXXXX");
    if (mkdtemp(d)) return d;
    CHECK(0, "cannot create a temporary directory");
    return NULL;
}

const char *test_path(const char *name)
{
    static char dir[64], buf[64][256];
    static int next;
    if (!dir[0]) {
        const char *d = test_tmpdir();
        snprintf(dir, sizeof dir, "%s", d ? d : "/tmp");
    }
    char *out = buf[next++ % 64];
    snprintf(out, sizeof buf[0], "%s/%s", dir, name);
    return out;
}

void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    CHECK(ok, "cannot write %s", path);
}

int write_file_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

int cli_run_fsize_limited(const char *const *args, long fsize, char *err, size_t errsz)
{
    char errp[] = "/tmp/costbench-plot-err-XXXXXX";
    int fe = mkstemp(errp);
    if (fe < 0) return -2;
    unlink(errp);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, STDOUT_FILENO);
        dup2(fe, STDERR_FILENO);
        struct rlimit rl = {(rlim_t)fsize, (rlim_t)fsize};
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(126);
        const char *argv[64];
        int n = 0;
        argv[n++] = g_costbench;
        for (int i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
        argv[n] = NULL;
        execv(g_costbench, (char **)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ssize_t k = pread(fe, err, errsz - 1, 0);
    err[k > 0 ? k : 0] = '\0';
    close(fe);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void test_scale_model(scale_model *m)
{
    scale_model s;
    memset(&s, 0, sizeof s);
    CHECK(model_preset_find("pythia-1b", &s.cfg) == 0, "pythia-1b preset");
    snprintf(s.hw.instance, sizeof s.hw.instance, "test");
    s.hw.accelerators = 8, s.hw.workers = 1, s.hw.bf16_tflops = 100, s.hw.fp32_tflops = NAN, s.hw.mem_gib = 80;
    s.hw.mem_gb_per_s = NAN, s.hw.intra_gb_per_s = NAN, s.hw.net_gbit_per_s = 800, s.hw.net_latency_us = NAN;
    s.tp = 8, s.pp = 1, s.interleave = 1, s.seq = 2048, s.micro_batch = 1, s.global_batch = 64;
    s.precision = PRECISION_BF16_MIXED, s.bucket_bytes = 25 << 20, s.t_mb_s = 0.5, s.net_eff = 1;
    step_profile_fill(&s); /* its step, as every builder of a configuration computes it */
    *m = s;
}

void fill_tokens(gpt_model *m, unsigned seed)
{
    for (int i = 0; i < m->B * m->T; i++) {
        seed = seed * 1664525u + 1013904223u;
        m->inputs[i] = (int)((seed >> 8) % (unsigned)m->cfg.V);
        seed = seed * 1664525u + 1013904223u;
        m->targets[i] = (int)((seed >> 8) % (unsigned)m->cfg.V);
    }
}

void copy_weights_and_tokens(gpt_model *dst, const gpt_model *src)
{
    memcpy(dst->w.params, src->w.params, src->w.nparams * sizeof(float));
    gpt_params_changed(dst);
    memcpy(dst->inputs, src->inputs, (size_t)src->B * src->T * sizeof(int));
    memcpy(dst->targets, src->targets, (size_t)src->B * src->T * sizeof(int));
}

int train_micro_step(gpt_model *m, float scale, double *loss)
{
    gpt_zero_grad(m);
    return gpt_forward(m, scale, loss) == 0 && gpt_backward(m, scale, NULL) == 0 ? 0 : -1;
}

int bf16_is_rounding(const char *what, const uint16_t *out, const float *ref, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (out[i] != bf16_from_float(ref[i])) {
            printf("    %s: element %zu is 0x%04x (%.9g), the rounding of %.9g is 0x%04x\n", what, i, out[i],
                   bf16_to_float(out[i]), ref[i], bf16_from_float(ref[i]));
            return 0;
        }
    return 1;
}

int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

double note_value(const char *text, const char *line_prefix, const char *key)
{
    const char *p = strstr(text, line_prefix), *q = p ? strstr(p, key) : NULL, *eol = p ? strchr(p, '\n') : NULL;
    if (!q || (eol && q > eol)) return NAN;
    return strtod(q + strlen(key), NULL);
}

void st_poke(const char *path, const char *name, long elem, float v)
{
    st_file f;
    if (st_open(&f, path) != 0) {
        CHECK(0, "cannot open %s", path);
        return;
    }
    const st_tensor *t = st_find(&f, name);
    FILE *fp = fopen(path, "r+b");
    unsigned char h8[8] = {0};
    int ok = t && fp && fread(h8, 1, 8, fp) == 8;
    if (ok) {
        uint64_t hl = 0;
        for (int i = 7; i >= 0; i--) hl = hl << 8 | h8[i];
        int bf = strcmp(t->dtype, "BF16") == 0;
        uint32_t bits;
        memcpy(&bits, &v, 4);
        uint16_t b16 = (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
        ok = fseek(fp, (long)(8 + hl + t->begin) + (bf ? 2 : 4) * elem, SEEK_SET) == 0 &&
             fwrite(bf ? (const void *)&b16 : (const void *)&v, bf ? 2 : 4, 1, fp) == 1;
    }
    if (fp) fclose(fp);
    st_close(&f);
    CHECK(ok, "cannot set element %ld of '%s' in %s", elem, name, path);
}

const char *test_corpus(void)
{
    static char prefix[256];
    if (prefix[0]) return prefix;
    const char *dir = test_tmpdir();
    if (!dir) return "/nonexistent";
    char txt[256], text[8192] = "", out[4096], err[4096];
    snprintf(txt, sizeof txt, "%s/text.txt", dir);
    for (int i = 0; i < 100; i++) strcat(text, i % 3 ? "tokens per dollar, " : "the cost of a step. ");
    write_text(txt, text);
    snprintf(prefix, sizeof prefix, "%s/corpus", dir);
    const char *a[] = {"dataset", "build", "--out", prefix, txt, NULL};
    CHECK(cli_run(a, out, sizeof out, err, sizeof err) == 0, "dataset build: %s", err);
    return prefix;
}

void test_toy_step(scale_model *s)
{
    memset(s, 0, sizeof *s);
    model_config *c = &s->cfg;
    snprintf(c->name, sizeof c->name, "toy");
    c->L = 2, c->C = 256, c->NH = 4, c->HS = 64, c->V = 1024, c->rotary_pct = 0, c->pos = POS_LEARNED;
    hw_row *h = &s->hw;
    snprintf(h->instance, sizeof h->instance, "toy.8x");
    snprintf(h->accelerator, sizeof h->accelerator, "toy");
    h->accelerators = 8, h->workers = 1, h->bf16_tflops = 100, h->fp32_tflops = 25, h->mem_gib = 80,
    h->mem_gb_per_s = 1000;
    h->intra_gb_per_s = 100, h->net_gbit_per_s = 800, h->net_latency_us = NAN, h->scaleup_domain = 8;
    h->gemm_eff = 0.5, h->attn_eff = 0.25, h->mem_eff = 0.5, h->launch_us = 1e-9;
    s->tp = 1, s->pp = 1, s->cp = 1, s->interleave = 1, s->seq = 128, s->micro_batch = 2, s->global_batch = 16;
    s->precision = PRECISION_BF16_MIXED, s->attn_flash = 1, s->net_eff = 1, s->bucket_bytes = 25 << 20;
}

const op_entry *test_find_op(const op_entry *ops, int n, const char *name, const char *phase)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ops[i].name, name) == 0 && strcmp(ops[i].phase, phase) == 0) return &ops[i];
    return NULL;
}


int test_cmd_csv(const char *const *args, const char *path, char *out, size_t on, char *err, size_t en, table *t)
{
    const char *a[48];
    int n = 0;
    for (; args[n] && n < 44; n++) a[n] = args[n];
    a[n++] = "--csv", a[n++] = path, a[n] = NULL;
    int rc = cli_run(a, out, on, err, en);
    CHECK(rc == 0, "%s: exit %d: %s", args[0], rc, err);
    if (rc != 0) return -1;
    int lrc = table_load(t, path);
    CHECK(lrc == 0, "%s's CSV %s loads", args[0], path);
    return lrc == 0 ? 0 : -1;
}

const char *test_cell(const table *t, int i, const char *name)
{
    int c = table_col(t, name, 0);
    CHECK(c >= 0, "column '%s' in %s", name, t->path);
    return c >= 0 ? table_cell(t, i, c) : "";
}

double test_num(const table *t, int i, const char *name) { return strtod(test_cell(t, i, name), NULL); }
