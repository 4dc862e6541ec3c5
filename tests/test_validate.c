/* costbench validate and --calibrate on published runs: every row of every shipped file gives
 * itself back when calibrated on itself (through validate, and through --calibrate FILE:ID's
 * calib_row_load); a calibration row with one field changed gives itself back and moves the
 * prediction of the original configuration the way the model says it must; validate's CSV
 * columns, its summary and naive baseline worked by hand; exit 0 whatever the errors, 2 on bad
 * input; a row the model cannot predict says why; the link overrides reach the calibration row;
 * throughput rows' configuration columns (recompute, sharding) are honoured; one run as a throughput
 * row and as a published row predicts alike. */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/csvio.h"
#include "../report/formats/devices.h"
#include "../report/formats/published.h"
#include "../report/predict/calib_row.h"
#include "check.h"
#include "../common/files.h"

static char g_out[1 << 18], g_err[1 << 15];
static int run(const char *const *args) { return cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err); }

/* The published-runs header, and a row of it: a 1.3B GPT on 32 A100 80GB (4 nodes of 8) at
 * 800 Gbit/s, TP 2 x PP 2 x DP 8, micro-batch 2, global batch 256, ZeRO-1, bf16-mixed. */
static const char g_head[] = "id,source,framework,device,devices,devices_per_node,node_net_gbps,instance_type,model,"
                             "arch,layers,d_model,heads,kv_heads,"
                             "ffn_dim,vocab,params,tied_embeddings,seq_len,global_batch,micro_batch,tp,pp,dp,cp,vp,"
                             "sequence_parallel,sharding,recompute,"
                             "precision,metric,value,flop_convention,peak_tflops,seq_per_s,notes\n";

typedef struct {
    const char *id, *device, *net, *micro_batch, *sharding, *recompute, *precision, *cp;
    int tp, pp, dp, vp;
    long global_batch;
    double seq_per_s;
} row_spec;

static const row_spec g_base = {"orig", "a100-sxm4-80gb", "800", "2", "zero1", "none", "bf16-mixed", "", 2, 2, 8, 1,
                                256, 150.0};

static void row_format(const row_spec *r, char *buf, size_t n)
{
    snprintf(buf, n,
             "%s,made up for "
             "tests,megatron-lm,%s,32,8,%s,,gpt-1.3b,gpt,24,2048,16,,,50304,,false,2048,%ld,%s,%d,%d,%d,%s,%d,false,%s,"
             "%s,%s,"
             "seq_per_s,%.9g,,,%.9g,\n",
             r->id, r->device, r->net, r->global_batch, r->micro_batch, r->tp, r->pp, r->dp, r->cp, r->vp, r->sharding,
             r->recompute, r->precision, r->seq_per_s, r->seq_per_s);
}

/* A published-runs file of rows a[0..n) in dir; its path into path. */
static void pub_write(const char *dir, const char *name, const row_spec *a, int n, char *path, size_t pn)
{
    char text[8192], row[1024];
    snprintf(path, pn, "%s/%s", dir, name);
    snprintf(text, sizeof text, "%s", g_head);
    for (int i = 0; i < n; i++) {
        row_format(&a[i], row, sizeof row);
        strncat(text, row, sizeof text - strlen(text) - 1);
    }
    write_text(path, text);
}

/* One validate CSV's rows: id, calibration, published, predicted (NaN: empty), error, naive, note. */
typedef struct {
    char id[64], note[1024];
    int calibration;
    double published, predicted, error_pct, naive, naive_error_pct;
} csv_row;

/* Reads up to cap rows of a validate CSV; returns the count, -1 when it does not load. */
static int val_csv_read(const char *path, csv_row *rows, int cap)
{
    table t;
    if (table_load(&t, path) != 0) return -1;
    int c[8] = {table_col(&t, "id", 1),
                table_col(&t, "calibration", 1),
                table_col(&t, "published_seq_per_s", 1),
                table_col(&t, "predicted_seq_per_s", 1),
                table_col(&t, "error_pct", 1),
                table_col(&t, "naive_seq_per_s", 1),
                table_col(&t, "naive_error_pct", 1),
                table_col(&t, "note", 1)};
    int n = 0;
    for (int i = 0; i < t.nrows && n < cap; i++, n++) {
        csv_row *r = &rows[n];
        snprintf(r->id, sizeof r->id, "%s", table_cell(&t, i, c[0]));
        r->calibration = strcmp(table_cell(&t, i, c[1]), "true") == 0;
        double *v[5] = {&r->published, &r->predicted, &r->error_pct, &r->naive, &r->naive_error_pct};
        for (int k = 0; k < 5; k++)
            *v[k] = *table_cell(&t, i, c[2 + k]) ? strtod(table_cell(&t, i, c[2 + k]), NULL) : NAN;
        snprintf(r->note, sizeof r->note, "%s", table_cell(&t, i, c[7]));
    }
    table_free(&t);
    return n;
}

static const csv_row *row_by_id(const csv_row *rows, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].id, id) == 0) return &rows[i];
    return NULL;
}

/* validate FILE --calibrate ids --csv csv (extra flags appended); the exit status. */
static int validate_run(const char *file, const char *ids, const char *csv, const char *x1, const char *x2)
{
    const char *args[12] = {"validate", file, "--csv", csv};
    int a = 4;
    if (ids) args[a++] = "--calibrate", args[a++] = ids;
    if (x1) args[a++] = x1;
    if (x2) args[a++] = x2;
    args[a] = NULL;
    return run(args);
}

/* ---------------------------------------------------------------- every row of every shipped file */

/* A row the physics floor refuses as a calibration (its step needs its GEMMs above 100% of the
 * peak) that issue 30's measured figures made so, at today's count: llm-foundry's A100 rows at 16k
 * tokens and more, whose Triton flash kernel (data/attention.csv, flash-attn's benchmark figure) and
 * the A100's measured GEMM share (0.91) are slower than the rows (100.6-113.4% of the peak, 20 rows).
 * Any other refusal is a failure. */
#define FLOOR_REFUSED_MAX 20
static int floor_refused(const pub_table *t, const char *id, const char *why)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].id, id) == 0)
            return strcmp(t->rows[i].framework, "llm-foundry") == 0 && t->rows[i].seq_len >= 16384 &&
                   strstr(why, "of the dense peak") != NULL;
    return 0;
}

/* Every row of one shipped file through validate: all its ids calibrated, each carried from
 * itself. Returns the rows given back (back[i] set for each); a row with no prediction must say
 * why (its note: an unknown name, a configuration the step model cannot map, a calibration that
 * does not fit), counted in *why, or be one the physics floor refuses (floor_refused), counted in
 * *floor. */
static int every_row_validate(const char *file, const pub_table *t, const char *dir, int *back, int *why, int *floor)
{
    size_t len = 0, cap = (size_t)t->n * 66 + 1;
    char *ids = malloc(cap), csv[256];
    if (!ids) return 0;
    ids[0] = '\0';
    for (int i = 0; i < t->n; i++) len += (size_t)snprintf(ids + len, cap - len, "%s%s", i ? "," : "", t->rows[i].id);
    snprintf(csv, sizeof csv, "%s/self.csv", dir);
    int rc = validate_run(file, ids, csv, NULL, NULL);
    free(ids);
    CHECK(rc == 0, "%s: validate exit %d: %.300s", file, rc, g_err);
    csv_row *rows = calloc((size_t)t->n + 1, sizeof *rows);
    int n = rows ? val_csv_read(csv, rows, t->n + 1) : -1, checked = 0;
    CHECK(n == t->n, "%s: %d CSV rows for %d rows", file, n, t->n);
    for (int i = 0; i < n; i++) {
        CHECK(rows[i].calibration, "%s: %s: not a calibration row", file, rows[i].id);
        if (!isfinite(rows[i].predicted)) {
            if (floor_refused(t, rows[i].id, rows[i].note)) {
                ++*floor;
                continue;
            }
            CHECK(rows[i].note[0] != '\0', "%s: %s: no prediction and no reason", file, rows[i].id);
            *why += rows[i].note[0] != '\0';
            printf("    %s: %s: not given back: %.150s\n", file, rows[i].id, rows[i].note);
            continue;
        }
        CHECK(fabs(rows[i].error_pct) < 0.1, "%s: %s gives back %.9g of %.9g seq/s (%+.4f%%)", file, rows[i].id,
              rows[i].predicted, rows[i].published, rows[i].error_pct);
        back[i] = fabs(rows[i].error_pct) < 0.1;
        checked += back[i];
    }
    free(rows);
    return checked;
}

/* Every row through --calibrate FILE:ID (calib_row_load), carried to its own configuration; a row
 * validate did not give back (back[i] 0) is refused with one error line instead. */
static int every_row_calibrate(const char *file, const pub_table *t, const hw_table *ht, const int *back)
{
    int checked = 0;
    scale_model d;
    memset(&d, 0, sizeof d);
    d.interleave = 1, d.bucket_bytes = 25.0 * 1048576.0, d.net_eff = 1.0;
    const calib_env env = {ht, NULL, -1, NULL};
    calib_row *c = malloc(sizeof *c);
    for (int i = 0; c && i < t->n; i++) {
        char spec[CB_PATH_MAX];
        snprintf(spec, sizeof spec, "%s:%s", file, t->rows[i].id);
        capture_stderr_begin();
        int rc = calib_row_load(c, spec, &env, &d, NULL, 5.0);
        double eff = NAN, e;
        int clamped;
        if (rc == 0) rc = calib_row_carry(c, &c->cal, &eff, &clamped, &e);
        const char *err = capture_stderr_end();
        if (!back[i]) {
            CHECK(rc != 0 && strstr(err, "error: ") && count_lines(err) <= 2, "--calibrate %s: %d: %s", spec, rc, err);
            continue;
        }
        CHECK(rc == 0, "--calibrate %s: %d: %s", spec, rc, err);
        if (rc != 0) continue;
        scale_model s = c->cal;
        s.t_mb_s = scale_t_mb_from_peak(&s, eff);
        scale_point p;
        scale_eval(&s, c->fc.nodes, &p);
        CHECK(fabs(p.seq_per_s / t->rows[i].seq_per_s - 1) < 1e-3, "--calibrate %s: %.9g seq/s back for %.9g", spec,
              p.seq_per_s, t->rows[i].seq_per_s);
        checked += fabs(p.seq_per_s / t->rows[i].seq_per_s - 1) < 1e-3;
    }
    free(c);
    return checked;
}

static void test_validate_every_row(void)
{
    glob_t g;
    char *dir = test_tmpdir();
    CHECK(dir && glob("data/reference/published/*.csv", 0, NULL, &g) == 0 && g.gl_pathc >= 6, "the shipped files");
    if (!dir) return;
    dev_table dt = {0};
    hw_table ht = {0};
    CHECK(devices_load(&dt, NULL) == 0 && hardware_load(&ht, "data/hardware.csv") == 0, "the data tables load");
    /* the six files of issue 30's targets: every row given back but those the physics floor refuses
     * (floor_refused); the files added since: every row given back or saying why (GB300 has no
     * device row, a calibration above the physics) */
    int rows = 0, back = 0, back_cal = 0, why = 0, floor = 0, six_rows = 0, six_back = 0, six_floor = 0;
    for (size_t f = 0; f < g.gl_pathc; f++) {
        pub_table t = {0};
        CHECK(published_load(&t, g.gl_pathv[f], &dt) == 0, "%s loads", g.gl_pathv[f]);
        int fl = 0, *ok = calloc((size_t)t.n + 1, sizeof *ok);
        int b = ok ? every_row_validate(g.gl_pathv[f], &t, dir, ok, &why, &fl) : 0;
        rows += t.n, back += b, floor += fl;
        if (!strstr(g.gl_pathv[f], "megatron_bridge_")) six_rows += t.n, six_back += b, six_floor += fl;
        if (ok) back_cal += every_row_calibrate(g.gl_pathv[f], &t, &ht, ok);
        free(ok);
        published_free(&t);
    }
    CHECK(six_rows >= 170 && six_back + six_floor == six_rows && floor <= FLOOR_REFUSED_MAX && back == back_cal &&
              back + why + floor == rows,
          "%d rows, %d given back by validate, %d by --calibrate FILE:ID, %d saying why not, %d refused by the "
          "physics floor (at most %d; the six files: %d of %d given back)",
          rows, back, back_cal, why, floor, FLOOR_REFUSED_MAX, six_back, six_rows);
    globfree(&g);
    hardware_free(&ht);
    devices_free(&dt);
    rm_tree(dir);
}

/* ---------------------------------------------------------------- one field changed */

/* Calibrates on `var` (the base with one field changed, the same seq/s) and predicts the base:
 * the variant gives itself back, and the base's prediction moves by `sign` (+1: above its
 * published seq/s, -1 below). */
static void field_case(const char *what, const row_spec *var, int sign)
{
    char *dir = test_tmpdir(), file[256], csv[256];
    if (!dir) return;
    row_spec rows[2] = {g_base, *var};
    rows[1].id = "var";
    pub_write(dir, "runs.csv", rows, 2, file, sizeof file);
    snprintf(csv, sizeof csv, "%s/out.csv", dir);
    int rc = validate_run(file, "var", csv, NULL, NULL);
    csv_row out[2];
    int n = val_csv_read(csv, out, 2);
    const csv_row *o = row_by_id(out, n, "orig"), *v = row_by_id(out, n, "var");
    CHECK(rc == 0 && o && v, "%s: exit %d, %d rows: %.300s", what, rc, n, g_err);
    if (o && v) {
        CHECK(v->calibration && fabs(v->error_pct) < 1e-6, "%s: the changed row gives itself back: %.12g of %.12g (%s)",
              what, v->predicted, v->published, v->note);
        CHECK(isfinite(o->predicted) && sign * (o->predicted - o->published) > 0.001 * o->published,
              "%s: the original configuration predicted %s its %.6g seq/s: %.6g (%s)", what,
              sign > 0 ? "above" : "below", o->published, o->predicted, o->note);
    }
    /* and the base calibrated on itself gives itself back */
    rc = validate_run(file, "orig", csv, NULL, NULL);
    n = val_csv_read(csv, out, 2);
    o = row_by_id(out, n, "orig");
    CHECK(rc == 0 && o && fabs(o->error_pct) < 1e-6, "%s: the base gives itself back", what);
    rm_tree(dir);
}

static void test_validate_fields(void)
{
    row_spec r;
    /* full recomputation: the same seq/s doing a third more work is more efficient compute */
    r = g_base, r.recompute = "full", field_case("recompute full", &r, +1);
    /* ZeRO-3 gathers the weights in every micro-batch: the same seq/s with more traffic */
    /* ZeRO-3 at 140 seq/s: Megatron-LM's gathers unprefetched over 800 Gbit/s cost more than the 7%,
     * and at the base's 150 the A100's measured GEMM share (0.91) leaves the row above the peak */
    r = g_base, r.sharding = "zero3", r.seq_per_s = 140.0, field_case("sharding zero3", &r, +1);
    /* TP 4: TP traffic and N = b s / t halved, both ask for more efficiency */
    r = g_base, r.tp = 4, r.dp = 4, field_case("tp 4", &r, +1);
    /* PP 4: a larger pipeline bubble */
    r = g_base, r.pp = 4, r.dp = 4, field_case("pp 4", &r, +1);
    /* interleaving: a smaller bubble, so slower compute */
    r = g_base, r.vp = 2, field_case("vp 2", &r, -1);
    /* micro-batch 4 at pp 2: half the micro-batches, twice the bubble's share; the original's smaller
     * ones fill the pipeline better (their GEMMs' narrower rows cost less than the bubble saves) */
    r = g_base, r.micro_batch = "4", field_case("micro-batch 4", &r, +1);
    /* an H100: the same seq/s at a third of the efficiency */
    r = g_base, r.device = "h100-sxm5-80gb", field_case("device h100", &r, -1);
    /* a slower network: more of the step is traffic */
    r = g_base, r.net = "100", field_case("network 100 Gbit/s", &r, +1);
    /* the original at full precision: fp32 against the FP32 peak, 16 times slower per FLOP */
    r = g_base, r.precision = "fp32", r.seq_per_s = 15.0, field_case("precision fp32", &r, +1);
}

/* ---------------------------------------------------------------- output, naive, summary */

static void test_validate_csv_and_naive(void)
{
    char *dir = test_tmpdir(), file[256], csv[256], sum[256], png[256];
    if (!dir) return;
    /* the same run on 16 and 32 devices (2 and 4 nodes) and a second model: the naive carries
     * FLOP/s per device, so the 16-device row's naive is half the 32-device row's seq/s */
    row_spec rows[3] = {g_base, g_base, g_base};
    rows[1].id = "half", rows[1].dp = 4, rows[1].global_batch = 128, rows[1].seq_per_s = 70;
    rows[2].id = "slow", rows[2].seq_per_s = 100;
    pub_write(dir, "runs.csv", rows, 3, file, sizeof file);
    char text[8192];
    slurp(file, text, sizeof text);
    char *p = strstr(text, "half,made up for tests,megatron-lm,a100-sxm4-80gb,32,8");
    if (p) memcpy(p + strlen("half,made up for tests,megatron-lm,a100-sxm4-80gb,"), "16", 2), write_text(file, text);
    snprintf(csv, sizeof csv, "%s/out.csv", dir), snprintf(sum, sizeof sum, "%s/sum.csv", dir),
        snprintf(png, sizeof png, "%s/v.png", dir);
    const char *args[] = {"validate", file, "--csv", csv, "--summary-csv", sum, "--plot", png, NULL};
    int rc = run(args);
    CHECK(rc == 0, "exit 0 whatever the errors: %d %.300s", rc, g_err);
    char head[2048];
    slurp(csv, head, sizeof head);
    const char *names[] = {"file", "id", "calibration", "published_seq_per_s", "predicted_seq_per_s", "error_pct",
                           "naive_seq_per_s", "naive_error_pct"};
    for (int i = 0; i < 8; i++) CHECK(strstr(head, names[i]) != NULL, "column '%s' in the CSV", names[i]);
    csv_row out[3];
    int n = val_csv_read(csv, out, 3);
    const csv_row *o = row_by_id(out, n, "orig"), *h = row_by_id(out, n, "half"), *s = row_by_id(out, n, "slow");
    CHECK(n == 3 && o && h && s && o->calibration && !h->calibration && !s->calibration, "the first row calibrates");
    if (n == 3 && o && h && s) {
        CHECK(fabs(h->naive / 75.0 - 1) < 1e-9 && fabs(h->naive_error_pct - 100.0 * (75.0 / 70 - 1)) < 1e-6,
              "naive 150 x 16/32 = 75: %.12g", h->naive);
        CHECK(fabs(s->naive / 150.0 - 1) < 1e-9 && fabs(s->error_pct - 100.0 * (s->predicted / 100 - 1)) < 1e-6,
              "naive and error of 'slow'");
        double a = fabs(h->error_pct), b = fabs(s->error_pct), med = (a + b) / 2, mx = fmax(a, b);
        double sv[2], sm[2];
        CHECK(csv_column(sum, "median_abs_error_pct", sv, 2) == 1 && csv_column(sum, "max_abs_error_pct", sm, 2) == 1 &&
                  fabs(sv[0] - med) < 1e-6 && fabs(sm[0] - mx) < 1e-6,
              "summary: median %.9g max %.9g of the two predicted rows", sv[0], sm[0]);
        CHECK(csv_column(sum, "naive_median_abs_error_pct", sv, 2) == 1 &&
                  fabs(sv[0] - (fabs(h->naive_error_pct) + fabs(s->naive_error_pct)) / 2) < 1e-6,
              "summary: the naive's median over the same rows");
    }
    unsigned char sig[8] = {0};
    FILE *f = fopen(png, "rb");
    CHECK(f && fread(sig, 1, 8, f) == 8 && memcmp(sig, "\x89PNG", 4) == 0, "--plot writes a PNG");
    if (f) fclose(f);
    CHECK(strstr(g_out, "median_abs_error_pct") && strstr(g_out, "naive_max_abs_error_pct"),
          "the per-file summary table: %.400s", g_out);
    rm_tree(dir);
}

/* ---------------------------------------------------------------- rows the model cannot predict, bad input */

static void test_validate_reasons(void)
{
    char *dir = test_tmpdir(), file[256], csv[256];
    if (!dir) return;
    /* fp8 where the device has no FP8 peak, a device without a BF16 peak: refused with the reason;
     * fp8 on an H100 and context parallelism are predicted */
    row_spec rows[5] = {g_base, g_base, g_base, g_base, g_base};
    rows[1].id = "fp8", rows[1].precision = "fp8";
    rows[2].id = "nopeak", rows[2].device = "a10g";
    rows[3].id = "ctx", rows[3].cp = "2", rows[3].dp = 4;
    rows[4].id = "h100fp8", rows[4].device = "h100-sxm5-80gb", rows[4].precision = "fp8";
    pub_write(dir, "runs.csv", rows, 5, file, sizeof file);
    snprintf(csv, sizeof csv, "%s/out.csv", dir);
    int rc = validate_run(file, NULL, csv, NULL, NULL);
    csv_row out[5];
    int n = val_csv_read(csv, out, 5);
    CHECK(rc == 0 && n == 5, "exit 0 with unpredictable rows: %d, %d rows: %.300s", rc, n, g_err);
    const char *why[2][3] = {{"fp8", "column 'precision'", "no dense FP8 peak"},
                             {"nopeak", "column 'precision'", "a10g has no dense BF16 peak"}};
    for (int k = 0; k < 2; k++) {
        const csv_row *r = row_by_id(out, n, why[k][0]);
        CHECK(r && !isfinite(r->predicted) && strstr(r->note, why[k][1]) && strstr(r->note, why[k][2]),
              "%s: no prediction, the reason: %s", why[k][0], r ? r->note : "(missing)");
        CHECK(strstr(g_out, why[k][2]) != NULL, "%s: the reason in the table", why[k][0]);
    }
    const csv_row *cx = row_by_id(out, n, "ctx"), *f8 = row_by_id(out, n, "h100fp8");
    CHECK(cx && isfinite(cx->predicted) && cx->predicted > 0, "cp 2 predicted: %s", cx ? cx->note : "(missing)");
    CHECK(f8 && isfinite(f8->predicted) && f8->predicted > 150,
          "fp8 on an H100 predicted, faster than the A100's bf16: %s", f8 ? f8->note : "(missing)");
    /* a calibration row the model cannot reproduce (above the peak): its reason, and the others' */
    row_spec hot[2] = {g_base, g_base};
    hot[0].seq_per_s = 500, hot[1].id = "other";
    pub_write(dir, "hot.csv", hot, 2, file, sizeof file);
    rc = validate_run(file, NULL, csv, NULL, NULL);
    n = val_csv_read(csv, out, 2);
    const csv_row *c0 = row_by_id(out, n, "orig"), *c1 = row_by_id(out, n, "other");
    CHECK(rc == 0 && c0 && c1 && !isfinite(c0->predicted) && strstr(c0->note, "more than 100% of the dense peak") &&
              !isfinite(c1->predicted) && strstr(c1->note, "no calibration: orig"),
          "no fit: the calibration row says why, the others name it: %s | %s", c0 ? c0->note : "", c1 ? c1->note : "");
    rm_tree(dir);
}

static void test_validate_bad_input(void)
{
    char *dir = test_tmpdir(), file[256], csv[256], text[8192];
    if (!dir) return;
    pub_write(dir, "runs.csv", &g_base, 1, file, sizeof file);
    snprintf(csv, sizeof csv, "%s/out.csv", dir);
    CHECK(validate_run(file, "nosuch", csv, NULL, NULL) == 2 && strstr(g_err, "flag '--calibrate'") &&
              strstr(g_err, "'nosuch'"),
          "an unknown id: exit 2 naming the flag: %s", g_err);
    slurp(file, text, sizeof text);
    char *p = strstr(text, ",2048,256,");
    if (p) memcpy(p + 1, "20x8", 4), write_text(file, text);
    CHECK(validate_run(file, NULL, csv, NULL, NULL) == 2 && strstr(g_err, "runs.csv:2: column 'seq_len'"),
          "a malformed file: exit 2, file:line and the column: %s", g_err);
    const char *none[] = {"validate", NULL};
    CHECK(run(none) == 2 && strstr(g_err, "no file"), "no file: exit 2");
    const char *plot[] = {"validate", "data/reference/published/trn1_table1.csv", "--plot", "x.jpg", NULL};
    CHECK(run(plot) == 2 && strstr(g_err, "flag '--plot'"), "a plot that is not .png or .svg: exit 2");
    rm_tree(dir);
}

/* ---------------------------------------------------------------- link overrides, throughput rows */

static void test_validate_overrides(void)
{
    char *dir = test_tmpdir(), file[256], csv[256];
    if (!dir) return;
    row_spec rows[2] = {g_base, g_base};
    rows[1].id = "other", rows[1].seq_per_s = 140;
    pub_write(dir, "runs.csv", rows, 2, file, sizeof file);
    snprintf(csv, sizeof csv, "%s/out.csv", dir);
    /* at 0.01 Gbit/s the calibration row's gradient traffic alone outlasts its step */
    int rc = validate_run(file, NULL, csv, "--net-gbps", "0.01");
    csv_row out[2];
    int n = val_csv_read(csv, out, 2);
    const csv_row *o = row_by_id(out, n, "orig");
    CHECK(rc == 0 && o && !isfinite(o->predicted) && strstr(o->note, "communication"),
          "--net-gbps reaches the calibration row: %s", o ? o->note : g_err);
    /* scale --calibrate a throughput row on trn1.32xlarge, target p4d.24xlarge: --net-gbps reaches the row too */
    char rowf[256];
    snprintf(rowf, sizeof rowf, "%s/tput.csv", dir);
    write_text(rowf, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n"
                     "neox-20b,8,4,4,trn1.32xlarge,2048,16384,13.6\n");
    const char *args[] = {"scale", "--calibrate", rowf, "--model", "neox-20b", "--instance", "p4d.24xlarge", "--tp",
                          "8", "--pp", "4", "--global-batch", "16384", "--nodes", "4", "--net-gbps", "0.001", NULL};
    rc = run(args);
    CHECK(rc == 2 && strstr(g_err, "tput.csv:2:") && strstr(g_err, "communication"),
          "scale: the row at 0.001 Gbit/s: exit %d %s", rc, g_err);
    rm_tree(dir);
}

/* A throughput row's recompute and sharding columns: calibrated on, and predicted with the same
 * --recompute / --zero, it gives itself back (before: recompute ignored, -24%). */
static void test_validate_tput_columns(void)
{
    char *dir = test_tmpdir(), rowf[256], csv[256];
    if (!dir) return;
    snprintf(rowf, sizeof rowf, "%s/tput.csv", dir);
    snprintf(csv, sizeof csv, "%s/out.csv", dir);
    write_text(rowf, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s,"
                     "recompute,sharding,vp\n"
                     "neox-20b,8,4,4,trn1.32xlarge,2048,16384,13.6,full,zero1,2\n");
    const char *args[] = {"scale", "--calibrate", rowf, "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp",
                          "8", "--pp", "4", "--global-batch", "16384", "--nodes", "4", "--recompute", "--zero", "1",
                          "--interleave", "2", "--csv", csv, NULL};
    int rc = run(args);
    double v[2];
    CHECK(rc == 0 && csv_column(csv, "seq_per_s", v, 2) == 1 && fabs(v[0] / 13.6 - 1) < 1e-6,
          "the row back: exit %d, %.9g: %.300s", rc, v[0], g_err);
    /* the same without --recompute: the row's efficiency without the recomputed forward, faster */
    const char *norc[] = {"scale", "--calibrate", rowf, "--model", "neox-20b", "--instance", "trn1.32xlarge", "--tp",
                          "8", "--pp", "4", "--global-batch", "16384", "--nodes", "4", "--zero", "1", "--interleave",
                          "2", "--csv", csv, NULL};
    rc = run(norc);
    CHECK(rc == 0 && csv_column(csv, "seq_per_s", v, 2) == 1 && v[0] > 1.2 * 13.6,
          "without recomputation faster: exit %d, %.9g", rc, v[0]);
    rm_tree(dir);
}

/* `scale`'s output for --calibrate spec (pythia-410m on 2 x p4d.24xlarge, TP 2) without the lines
 * that name the calibration file, into buf. Returns the exit code. */
static int scale_from(const char *spec, char *buf, size_t n)
{
    const char *args[] = {"scale", "--calibrate", spec, "--model", "pythia-410m", "--instance", "p4d.24xlarge",
                          "--nodes", "2", "--tp", "2", "--seq", "2048", "--global-batch", "64", NULL};
    int rc = run(args);
    size_t len = 0;
    buf[0] = '\0';
    for (char *line = strtok(g_out, "\n"); line && len < n; line = strtok(NULL, "\n"))
        if (!strstr(line, ".csv:")) len += (size_t)snprintf(buf + len, n - len, "%s\n", line);
    return rc;
}

/* One run stated as a throughput row and as a published row (report/predict/measrun.h: one path
 * from a measured run to its configuration): pythia-160m on one p4d.24xlarge, TP 4, seq 2048,
 * global batch 64, 20 seq/s; the framework `plain` (tiled attention, nothing overlapped) is what a
 * throughput row leaves to the target's flags. Both predict the target alike, to the digit: as
 * the plain run, as a run that states sharding hybrid and recompute selective (both rows set
 * hybrid and selective by measrun.c's one rule), and as one that states sequence parallelism. */
static void test_validate_same_run(void)
{
    char *dir = test_tmpdir(), tput[256], pub[256], a[1 << 14], b[1 << 14];
    if (!dir) return;
    snprintf(tput, sizeof tput, "%s/tput.csv", dir);
    snprintf(pub, sizeof pub, "%s/pub.csv", dir);
    static const struct {
        const char *sharding, *recompute, *sp; /* the throughput row's cells ("" not stated) and the published row's */
        const char *pub_sharding, *pub_recompute, *pub_sp;
    } runs[] = {{"", "", "", "none", "none", "false"},
                {"hybrid", "selective", "", "hybrid", "selective", "false"},
                {"zero1", "full", "true", "zero1", "full", "true"}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text,
                 "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s,"
                 "sharding,recompute,sequence_parallel\n"
                 "pythia-160m,4,1,1,p4d.24xlarge,2048,64,20,%s,%s,%s\n",
                 runs[i].sharding, runs[i].recompute, runs[i].sp);
        write_text(tput, text);
        snprintf(text, sizeof text,
                 "%ssame,made up for tests,plain,a100-sxm4-40gb,8,8,,p4d.24xlarge,pythia-160m,neox,12,768,12,,,50304,,"
                 "false,2048,64,1,4,1,2,,,%s,%s,%s,bf16-mixed,seq_per_s,20,,,20,\n",
                 g_head, runs[i].pub_sp, runs[i].pub_sharding, runs[i].pub_recompute);
        write_text(pub, text);
        char spec[300];
        snprintf(spec, sizeof spec, "%s:same", pub);
        int rc_t = scale_from(tput, a, sizeof a), rc_p = scale_from(spec, b, sizeof b);
        CHECK(rc_t == 0 && rc_p == 0 && strstr(a, "seq_per_s") && strcmp(a, b) == 0,
              "sharding '%s', recompute '%s': the same prediction: exit %d and %d\n%.2000s\n--- vs ---\n%.2000s",
              runs[i].pub_sharding, runs[i].pub_recompute, rc_t, rc_p, a, b);
    }
    rm_tree(dir);
}

/* One bad layout stated as a throughput row and as a published row: one check (measrun.h's
 * meas_run_check), one wording, each naming its row's file:line and its own schema's column. */
static void test_validate_same_checks(void)
{
    char *dir = test_tmpdir(), tput[256], pub[256], text[2048], spec[300], lead[400];
    if (!dir) return;
    snprintf(tput, sizeof tput, "%s/tput.csv", dir);
    snprintf(pub, sizeof pub, "%s/pub.csv", dir);
    write_text(tput, "model,tensor_parallel,pipeline_parallel,instances,instance_type,seq_len,global_batch,seq_per_s\n"
                     "pythia-160m,8,1,1,p4d.24xlarge,2048,64,20\n");
    snprintf(text, sizeof text,
             "%ssame,made up for tests,plain,a100-sxm4-40gb,8,8,,p4d.24xlarge,pythia-160m,neox,12,768,12,,,50304,,"
             "false,2048,64,1,8,1,1,,,false,none,none,bf16-mixed,seq_per_s,20,,,20,\n",
             g_head);
    write_text(pub, text);
    snprintf(spec, sizeof spec, "%s:same", pub);
    static const char want[] = "tp 8 does not divide pythia-160m's 12 heads";
    char a[1024];
    int rc = scale_from(tput, a, sizeof a);
    snprintf(lead, sizeof lead, "%s:2: column 'tensor_parallel': %s", tput, want);
    CHECK(rc == 2 && strstr(g_err, lead), "the throughput row: exit %d: %.500s", rc, g_err);
    rc = scale_from(spec, a, sizeof a);
    snprintf(lead, sizeof lead, "%s:2: row 'same': column 'tp': %s", pub, want);
    CHECK(rc == 2 && strstr(g_err, lead), "the published row: exit %d: %.500s", rc, g_err);
    rm_tree(dir);
}

const test_case tests_validate[] = {
    {"validate: every row of every shipped file gives itself back calibrated on itself (validate, and --calibrate "
     "FILE:ID)",
     test_validate_every_row},
    {"validate: a calibration row with one field changed gives itself back and moves the original's prediction the "
     "expected way",
     test_validate_fields},
    {"validate: the CSV's columns, the naive baseline and the per-file summary worked by hand; --plot",
     test_validate_csv_and_naive},
    {"validate: rows the model cannot predict (fp8 without an FP8 peak, no BF16 peak, no fit) say why; fp8 and cp are "
     "predicted; exit 0",
     test_validate_reasons},
    {"validate: bad input (unknown id, malformed file, no file, --plot) is exit 2 with one error",
     test_validate_bad_input},
    {"validate: --net-gbps reaches the calibration row (validate and scale --calibrate)", test_validate_overrides},
    {"calibrate: a throughput row's recompute, sharding and vp columns are honoured (the row back with the same flags)",
     test_validate_tput_columns},
    {"calibrate: one run as a throughput row and as a published row predicts the target alike (one path; plain, and "
     "sharding hybrid with recompute selective, sequence parallelism)",
     test_validate_same_run},
    {"calibrate: one bad layout as a throughput row and as a published row: one check, one wording, each row's "
     "file:line and column",
     test_validate_same_checks},
    {0},
};
