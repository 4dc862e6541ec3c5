/* The band of a prediction from out-of-sample errors (report/predict/band.h) and validate's
 * leave-one-file-out and uncalibrated modes (report/validate.h): data/band.csv recomputed from the
 * shipped published runs; the derivation worked by hand on a few made-up errors; the targets
 * for the leave-one-file-out mode and the uncalibrated mode (met ones, and the misses asserted at
 * today's figure so they cannot get worse); bad input. */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../report/formats/devices.h"
#include "../report/predict/band.h"
#include "../report/predict/calibration.h"
#include "../report/predict/fweff.h"
#include "../report/validate.h"
#include "../report/formats/gemmcurve.h"
#include "check.h"

static char g_out[1 << 18], g_err[1 << 15];

/* The shipped files, in glob order (as the shell gives them to validate). */
static int shipped(glob_t *g)
{
    int rc = glob("data/reference/published/*.csv", 0, NULL, g);
    CHECK(rc == 0 && g->gl_pathc >= 6, "the shipped published runs: %zu files", rc == 0 ? g->gl_pathc : 0);
    return rc == 0 ? (int)g->gl_pathc : 0;
}

typedef struct {
    dev_table dt;
    hw_table ht;
    gemm_curves gemm; /* data/gemm/: the measured device curves validate times those devices on */
    scale_model d;
    val_env env;
} band_env;

static int env_init(band_env *e, const band_table *bt)
{
    memset(e, 0, sizeof *e);
    if (devices_load(&e->dt, NULL) != 0 || hardware_load(&e->ht, "data/hardware.csv") != 0 ||
        gemm_curves_load(&e->gemm, &e->dt, NULL) != 0)
        return -1;
    e->d.interleave = 1, e->d.bucket_bytes = 25.0 * 1048576.0, e->d.net_eff = 1.0; /* validate's defaults */
    e->d.gemm_measured = &e->gemm;
    e->env = (val_env){&e->ht, &e->dt, NULL, -1, NULL, 5, &e->d, bt};
    return 0;
}

static void env_free(band_env *e)
{
    gemm_curves_free(&e->gemm);
    hardware_free(&e->ht);
    devices_free(&e->dt);
}

/* The files validated in mode m into res. */
static int run_mode(val_result *res, glob_t *g, int n, val_mode m, const val_env *env)
{
    if (m != VAL_FIRST_ROW) return validate_pooled(res, g->gl_pathv, n, m, env);
    int found = 0, rc = 0;
    for (int i = 0; i < n && rc == 0; i++) rc = validate_file(res, g->gl_pathv[i], NULL, 0, &found, env);
    return rc;
}

/* data/band.csv is what the shipped files give: every entry recomputed (validate in the three modes
 * without a band, band_derive), and calibration.h's constants are its first_row entries over every
 * file. */
static void test_band_table(void)
{
    glob_t g;
    int n = shipped(&g);
    band_env e;
    CHECK(env_init(&e, NULL) == 0, "the data tables load");
    band_sample smp[2048];
    int ns = 0;
    for (int m = 0; m < BAND_NMODES; m++) {
        val_result res = {0};
        CHECK(run_mode(&res, &g, n, (val_mode)m, &e.env) == 0, "mode %s runs", band_mode_names[m]);
        validate_band_samples(&res, (band_mode)m, smp, &ns, 2048);
        validate_free(&res);
    }
    band_table want = {0}, have = {0};
    CHECK(band_derive(&want, smp, ns) == 0 && band_load(&have, "data/band.csv") == 0, "derived and loaded");
    /* entries: the three cases of every mode over every file and each file left out, a file
     * counted in a mode where it has out-of-sample errors (one with no prediction has none) */
    int pairs = 0;
    for (int i = 0; i < ns; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = smp[j].mode == smp[i].mode && strcmp(smp[j].file, smp[i].file) == 0;
        pairs += !seen;
    }
    CHECK(pairs >= 3 * 6 && want.n == have.n && want.n >= 3 * (pairs + BAND_NMODES) - 3,
          "%d entries over %d (mode, file) pairs, the file has %d", want.n, pairs, have.n);
    for (int i = 0; i < want.n && i < have.n; i++) {
        const band_entry *a = &want.e[i], *b = &have.e[i];
        CHECK(a->mode == b->mode && a->kase == b->kase && strcmp(a->left_out, b->left_out) == 0 &&
                  a->predictions == b->predictions && a->pooled == b->pooled && fabs(a->p90_pct - b->p90_pct) < 1e-9 &&
                  fabs(a->band_pct - b->band_pct) < 1e-9,
              "entry %d: %s case %d left out '%s': %d predictions, p90 %.1f, band %.1f; the file: %d, %.1f, %.1f "
              "(rewrite it: costbench validate --band-csv data/band.csv data/reference/published/*.csv)",
              i, band_mode_names[a->mode], a->kase, a->left_out, a->predictions, a->p90_pct, a->band_pct,
              b->predictions, b->p90_pct, b->band_pct);
    }
    static const double consts[3] = {CALIB_BAND_NEAR_PCT, CALIB_BAND_LAYOUT_PCT, CALIB_BAND_DEVICE_PCT};
    for (int k = 0; k < 3; k++)
        CHECK(fabs(consts[k] - band_lookup(&have, BAND_FIRST_ROW, k, "not-shipped.csv")) < 1e-9,
              "CALIB_BAND case %d: %g against data/band.csv's %g", k, consts[k],
              band_lookup(&have, BAND_FIRST_ROW, k, "not-shipped.csv"));
    band_free(&want), band_free(&have);
    env_free(&e);
    globfree(&g);
}

/* Worked by hand: file a has near errors 1..10 (10 of them), file b near errors 20 and 30 and
 * layout errors 5, 6. Every file: near P90 of 12 errors at rank ceil(10.8) = 11: 20; layout has 2
 * (< 8): pooled, 14 errors, rank ceil(12.6) = 13: 20 (1..10, 5, 6, 20, 30 sorted: 13th is 20);
 * device: pooled too, 20. a left out: near has 2 (pooled: 5, 6, 20, 30: rank 4: 30). b left out:
 * near 1..10: rank 9: 9; layout: none of its own, pooled: 9. Bands never narrower than a nearer
 * case's. */
static void test_band_by_hand(void)
{
    band_sample s[14];
    int n = 0;
    for (int i = 1; i <= 10; i++) s[n++] = (band_sample){BAND_LOFO, CALIB_NEAR, "a.csv", i};
    s[n++] = (band_sample){BAND_LOFO, CALIB_NEAR, "b.csv", 20};
    s[n++] = (band_sample){BAND_LOFO, CALIB_NEAR, "b.csv", 30};
    s[n++] = (band_sample){BAND_LOFO, CALIB_LAYOUT, "b.csv", 5};
    s[n++] = (band_sample){BAND_LOFO, CALIB_LAYOUT, "b.csv", 6};
    band_table t;
    CHECK(band_derive(&t, s, n) == 0, "derived");
    const struct {
        const char *file;
        int k;
        double want;
    } w[] = {{"x.csv", CALIB_NEAR, 20}, {"x.csv", CALIB_LAYOUT, 20}, {"x.csv", CALIB_DEVICE, 20},
             {"dir/a.csv", CALIB_NEAR, 30}, {"a.csv", CALIB_LAYOUT, 30},     {"b.csv", CALIB_NEAR, 9},
             {"b.csv", CALIB_LAYOUT, 9}};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        CHECK(fabs(band_lookup(&t, BAND_LOFO, w[i].k, w[i].file) - w[i].want) < 1e-9, "%s case %d: %g, want %g",
              w[i].file, w[i].k, band_lookup(&t, BAND_LOFO, w[i].k, w[i].file), w[i].want);
    CHECK(isnan(band_lookup(&t, BAND_FIRST_ROW, CALIB_NEAR, "a.csv")), "no first_row errors: no band");
    double x[] = {3, 1, 2};
    CHECK(band_p90(x, 3) == 3 && isnan(band_p90(x, 0)), "P90 nearest rank");
    band_free(&t);
}

/* The six files the targets were first set on (issue 30): every one of their rows predicted and
 * the targets asserted on them. The files added since (Megatron-Bridge's performance summary) are
 * held to the rule every row obeys (predicted, or not and counted with its reason) and their
 * target misses are printed, not asserted (report/predict/README.md names them). */
static int target_file(const char *path)
{
    static const char *const six[] = {"korthikanti_2022.csv", "llmfoundry_a100_40gb.csv", "llmfoundry_a100_80gb.csv",
                                       "megatron_2020.csv", "megatron_a100_2021.csv", "trn1_table1.csv"};
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    for (size_t i = 0; i < sizeof six / sizeof six[0]; i++)
        if (strcmp(base, six[i]) == 0) return 1;
    return 0;
}

/* Every row of file s is predicted, or carries its reason (a note) and is counted in exactly one of
 * refused, unknown_names and unmodelled; the counts add up to the file's rows. */
static void check_reasons(const val_result *res, const val_summary *s, int m)
{
    int pred = 0, refused = 0, unknown = 0, unmodelled = 0, bad = 0;
    for (int i = 0; i < res->n; i++) {
        const val_row *v = &res->rows[i];
        if (strcmp(v->file, s->file) != 0) continue;
        if (isfinite(v->predicted)) {
            pred++, bad += v->refused + v->unknown_names + v->unmodelled != 0;
            continue;
        }
        refused += v->refused, unknown += v->unknown_names, unmodelled += v->unmodelled;
        int why = v->refused + v->unknown_names + v->unmodelled;
        CHECK(why == 1 && v->note[0], "%s mode %d: %s has no prediction and %d reasons: '%.120s'", s->file, m, v->id,
              why, v->note);
        bad += why != 1 || !v->note[0];
    }
    CHECK(bad == 0 && refused == s->refused && unknown == s->unknown_names && unmodelled == s->unmodelled &&
              pred + refused + unknown + unmodelled == s->rows,
          "%s mode %d: %d rows = %d predicted + %d refused + %d unknown names + %d unmodelled", s->file, m, s->rows,
          pred, s->refused, s->unknown_names, s->unmodelled);
}

/* A target of file s in mode m (lofo: median <= 12%, trn1 at today's 46%; none: below the flat 40%
 * MFU, trn1 at today's 42.5%): 1 when met. NaN medians (no prediction) miss. */
static int target_met(const val_summary *s, int m)
{
    int trn1 = strstr(s->file, "trn1") != NULL;
    if (m == VAL_LOFO) return s->median_abs_pct <= (trn1 ? 46 : 12);
    return trn1 ? s->median_abs_pct <= 42.5 : s->median_abs_pct < s->naive_median_abs_pct;
}

/* The targets, leave-one-file-out and uncalibrated, with data/band.csv, asserted on the six
 * files (met ones, and trn1's misses at today's figure so they cannot get worse); every file's rows
 * accounted for; the other files' misses printed. */
static void test_band_targets(void)
{
    glob_t g;
    int n = shipped(&g);
    band_table bt = {0};
    band_env e;
    CHECK(band_load(&bt, "data/band.csv") == 0 && env_init(&e, &bt) == 0, "the tables load");
    for (int m = 0; m < 3; m++) {
        val_result res = {0};
        CHECK(run_mode(&res, &g, n, (val_mode)m, &e.env) == 0, "mode %d runs", m);
        int rows = 0, all_rows = 0;
        double inside = 0, all_inside = 0;
        for (int f = 0; f < res.nfiles; f++) {
            const val_summary *s = &res.files[f];
            int six = target_file(s->file);
            check_reasons(&res, s, m);
            if (s->band_rows > 0) /* a file with no prediction has no coverage (NaN): it adds nothing */
                all_rows += s->band_rows, all_inside += s->band_rows * s->band_coverage_pct / 100;
            if (!six) {
                if (m != VAL_FIRST_ROW && !target_met(s, m))
                    printf("    target missed (not asserted): %s mode %d: median %.2f%% (naive %.2f%%), %d of %d "
                           "predicted\n",
                           s->file, m, s->median_abs_pct, s->naive_median_abs_pct, s->predicted, s->rows);
                continue;
            }
            if (s->band_rows > 0) rows += s->band_rows, inside += s->band_rows * s->band_coverage_pct / 100;
            CHECK(s->predicted == s->rows - s->calibration_rows, "%s mode %d: every row predicted (%d of %d)", s->file,
                  m, s->predicted, s->rows - s->calibration_rows);
            if (m == VAL_FIRST_ROW) continue;
            /* met: median <= 12% (lofo), below the flat 40% MFU (none) on every file but trn1's; trn1 (the
             * one Trainium file, the one neuron-nemo file: no other file tells its phi) at today's figure */
            CHECK(target_met(s, m), "%s: %s median %.2f%% (naive, a flat 40%% MFU: %.2f%%)", s->file,
                  m == VAL_LOFO ? "leave-one-out" : "uncalibrated", s->median_abs_pct, s->naive_median_abs_pct);
        }
        /* met: >= 85% inside the band in first-row and lofo; uncalibrated at today's 80% (the six files) */
        CHECK(rows > 150 && 100 * inside / rows >= (m == VAL_NONE ? 80 : 85), "mode %d: %.1f%% of %d inside the band",
              m, 100 * inside / rows, rows);
        printf("    mode %d: band coverage over every file %.1f%% of %d predictions (the six: %.1f%% of %d)\n", m,
               all_rows ? 100 * all_inside / all_rows : NAN, all_rows, 100 * inside / rows, rows);
        validate_free(&res);
    }
    env_free(&e);
    band_free(&bt);
    globfree(&g);
}

/* Bad input: --leave-one-out with --calibrate is a usage error naming the flag; a malformed band
 * file is one file:line error. */
static void test_band_bad_input(void)
{
    const char *a1[] = {"validate", "data/reference/published/trn1_table1.csv", "--leave-one-out", "--calibrate", "none",
                        NULL};
    int rc = cli_run(a1, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 2 && strstr(g_err, "--leave-one-out") && count_lines(g_err) == 1, "exit %d: %s", rc, g_err);
    const char *path = test_path("band.csv");
    write_text(path, "mode,case,left_out,predictions,pooled,p90_abs_error_pct,band_pct\nlofo,far,,3,0,1,1\n");
    band_table t;
    capture_stderr_begin();
    rc = band_load(&t, path);
    const char *err = capture_stderr_end();
    CHECK(rc == CB_EUSAGE && strstr(err, ":2: column 'case'") && strstr(err, "'far'"), "rc %d: %s", rc, err);
}

/* data/framework_eff.csv is what the shipped files give: phi per framework and `any` refitted, its
 * spread from the uncalibrated mode's out-of-sample errors. */
static void test_fweff_table(void)
{
    glob_t g;
    int n = shipped(&g);
    band_env e;
    CHECK(env_init(&e, NULL) == 0, "the data tables load");
    fweff_table want = {0}, have = {0};
    CHECK(validate_framework_eff(g.gl_pathv, n, &e.env, &want) == 0 && fweff_load(&have, "data/framework_eff.csv") == 0,
          "refitted and loaded");
    CHECK(want.n == have.n && want.n >= 4, "%d frameworks, the file has %d", want.n, have.n);
    for (int i = 0; i < want.n && i < have.n; i++) {
        const fweff_entry *a = &want.e[i], *b = &have.e[i];
        CHECK(strcmp(a->framework, b->framework) == 0 && fabs(a->phi / b->phi - 1) < 1e-6 &&
                  fabs(a->spread_pct - b->spread_pct) < 1e-9 && a->rows == b->rows && a->files == b->files,
              "%s: phi %.9g spread %.1f%% on %d rows of %d files; the file: %s %.9g %.1f%% %d %d (rewrite it: costbench "
              "validate --framework-eff-csv data/framework_eff.csv data/reference/published/*.csv)",
              a->framework, a->phi, a->spread_pct, a->rows, a->files, b->framework, b->phi, b->spread_pct, b->rows,
              b->files);
    }
    const fweff_entry *any = fweff_find(&have, "torchtitan"), *mlm = fweff_find(&have, "megatron");
    CHECK(any && strcmp(any->framework, FWEFF_ANY) == 0 && mlm && strcmp(mlm->framework, "megatron-lm") == 0,
          "a framework the files lack: any; an alias: its framework");
    fweff_free(&want), fweff_free(&have);
    env_free(&e);
    globfree(&g);
}

/* scale and plan with no --calibrate and no --mfu: the device model x the framework's default phi,
 * its spread the band; --mfu the assumption, as before. */
static void test_fweff_scale_plan(void)
{
    fweff_table ft;
    CHECK(fweff_load(&ft, "data/framework_eff.csv") == 0, "loaded");
    const fweff_entry *mlm = fweff_find(&ft, "megatron-lm"), *any = fweff_find(&ft, "plain");
    char want[256];
    const char *sc[] = {"scale", "--model", "llama2-7b", "--instance", "p4d.24xlarge", "--nodes", "1,4", "--tp", "2",
                        "--global-batch", "512", "--seq", "4096", "--framework", "megatron-lm", NULL};
    int rc = cli_run(sc, g_out, sizeof g_out, g_err, sizeof g_err);
    snprintf(want, sizeof want, "megatron-lm's default efficiency phi %.3g", mlm ? mlm->phi : NAN);
    CHECK(rc == 0 && strstr(g_out, want) && strstr(g_out, "the device model's time / the framework's default phi"),
          "scale: exit %d, '%s' in %.1500s", rc, want, g_out);
    const char *sc_mfu[] = {"scale", "--model", "llama2-7b", "--instance", "p4d.24xlarge", "--nodes", "1,4", "--tp",
                            "2", "--global-batch", "512", "--seq", "4096", "--mfu", "40", NULL};
    rc = cli_run(sc_mfu, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK(rc == 0 && strstr(g_out, "assumed MFU of 40%") && !strstr(g_out, "default efficiency"),
          "scale --mfu 40: the assumption: %.800s", g_out);
    const char *csv = test_path("plan.csv");
    const char *pl[] = {"plan", "--model", "llama2-7b", "--tokens", "140B", "--deadline-days", "300", "--instances",
                        "p4d.24xlarge", "--max-nodes", "4", "--top", "5", "--csv", csv, NULL};
    rc = cli_run(pl, g_out, sizeof g_out, g_err, sizeof g_err);
    double band[16];
    int nb = rc == 0 ? csv_column(csv, "band_pct", band, 16) : -1, ok = nb > 0;
    for (int i = 0; i < nb; i++) ok &= any && fabs(band[i] - any->spread_pct) < 1e-9;
    CHECK(rc == 0 && ok && strstr(g_out, "every framework's default efficiency"),
          "plan: exit %d, %d rows each with the spread of 'any' (%g): %.600s", rc, nb, any ? any->spread_pct : NAN,
          g_out);
    fweff_free(&ft);
}

const test_case tests_band[] = {
    {"band: data/framework_eff.csv refitted from the shipped files (phi per framework, its out-of-sample spread)",
     test_fweff_table},
    {"band: scale and plan uncalibrated use the device model x the framework's default phi, its spread the band; --mfu "
     "overrides",
     test_fweff_scale_plan},
    {"band: data/band.csv recomputed from the shipped files' out-of-sample errors; calibration.h's constants its own",
     test_band_table},
    {"band: the derivation worked by hand (nearest rank, the file left out, pooling, never narrower)",
     test_band_by_hand},
    {"band: leave-one-file-out and uncalibrated targets, the band's coverage (misses at today's figure)",
     test_band_targets},
    {"band: --leave-one-out with --calibrate, a malformed band file: one error", test_band_bad_input},
    {0},
};
