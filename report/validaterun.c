/* validaterun.c: costbench validate, the run: the tables, every file validated (report/validate.h)
 * in the mode asked (first row, --leave-one-out, --calibrate none; --band-csv and
 * --framework-eff-csv derive the band's and the default efficiencies' tables first), then the rows
 * and the per-file summary as a table, CSV and a plot. It reports; it does not judge. */
#include "validaterun.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/files.h"
#include "../common/machine.h"
#include "../common/record.h"
#include "charts.h"
#include "formats/devices.h"
#include "formats/gemmcurve.h"
#include "predict/stepmodel.h"

enum { VC_FILE, VC_ID, VC_LINE, VC_CAL, VC_PUB, VC_PRED, VC_ERR, VC_NAIVE, VC_NERR, VC_FROM, VC_HFU, VC_BAND, VC_EXTRA,
       VC_NOTE, VC_NCOLS };
/* The names of the first nine are a contract: other tools read them. */
static const rec_col val_cols[VC_NCOLS] = {{"file", "", REC_STR, 0}, {"id", "", REC_STR, 0}, {"line", "", REC_NUM, 0},
                                           {"calibration", "", REC_STR, 0},
                                           {"published_seq_per_s", "seq/s", REC_NUM, 3},
                                           {"predicted_seq_per_s", "seq/s", REC_NUM, 3}, {"error_pct", "%", REC_NUM, 1},
                                           {"naive_seq_per_s", "seq/s", REC_NUM, 3},
                                           {"naive_error_pct", "%", REC_NUM, 1}, {"calibrated_on", "", REC_STR, 0},
                                           {"hfu_pct", "%", REC_NUM, 1}, {"band_pct", "%", REC_NUM, 0},
                                           {"extrapolated", "", REC_STR, 0}, {"note", "", REC_STR, 0}};

/* Columns are added at the end (scripts read the earlier ones by position too). */
enum { VS_FILE, VS_ROWS, VS_CAL, VS_PRED, VS_MED, VS_MAX, VS_NMED, VS_NMAX, VS_FROWS, VS_PHI, VS_PHISE, VS_OVH, VS_OVHSE,
       VS_FRMS, VS_FWORST, VS_FWORSTID, VS_REFUSED, VS_UNKNOWN, VS_COVER, VS_UNMODELLED, VS_NCOLS };
static const rec_col sum_cols[VS_NCOLS] = {{"file", "", REC_STR, 0}, {"rows", "", REC_NUM, 0},
                                           {"calibration_rows", "", REC_NUM, 0}, {"predicted", "", REC_NUM, 0},
                                           {"median_abs_error_pct", "%", REC_NUM, 1},
                                           {"max_abs_error_pct", "%", REC_NUM, 1},
                                           {"naive_median_abs_error_pct", "%", REC_NUM, 1},
                                           {"naive_max_abs_error_pct", "%", REC_NUM, 1}, {"fit_rows", "", REC_NUM, 0},
                                           {"fit_phi", "", REC_NUM, 3}, {"fit_phi_se", "", REC_NUM, 3},
                                           {"fit_overhead_s", "s", REC_NUM, 3}, {"fit_overhead_se", "s", REC_NUM, 3},
                                           {"fit_rms_pct", "%", REC_NUM, 1}, {"fit_worst_pct", "%", REC_NUM, 1},
                                           {"fit_worst", "", REC_STR, 0}, {"refused", "", REC_NUM, 0},
                                           {"unknown_names", "", REC_NUM, 0},
                                           {"band_coverage_pct", "%", REC_NUM, 0}, {"unmodelled", "", REC_NUM, 0}};

/* Every file validated into res in `mode`; every --calibrate id must be in one of them. */
static int val_mode_run(const val_opts *o, val_mode mode, const val_env *env, val_result *res)
{
    if (mode != VAL_FIRST_ROW) return validate_pooled(res, o->files, o->nfiles, mode, env);
    int *found = calloc((size_t)o->nids + 1, sizeof *found), rc = found ? 0 : err_msg("out of memory");
    for (int i = 0; i < o->nfiles && rc == 0; i++)
        rc = validate_file(res, o->files[i], (const char *const *)o->ids, o->nids, found, env);
    for (int k = 0; k < o->nids && rc == 0; k++)
        if (!found[k])
            rc = err_usage("flag '--calibrate': no row of the %d file%s has the id '%s'", o->nfiles,
                           o->nfiles == 1 ? "" : "s", o->ids[k]);
    free(found);
    return rc;
}

/* --band-csv: the files validated in every mode without a band, their out-of-sample errors into
 * the band's table (report/predict/band.h), written to the flag's file. */
static int val_band_derive(const val_opts *o, val_env env, band_table *bt)
{
    env.band = NULL;
    band_sample *smp = NULL;
    int ns = 0, rc = 0;
    for (int m = 0; m < BAND_NMODES && rc == 0; m++) {
        val_result r = {0};
        static const val_mode modes[BAND_NMODES] = {VAL_FIRST_ROW, VAL_LOFO, VAL_NONE};
        rc = val_mode_run(o, modes[m], &env, &r);
        band_sample *grown = rc == 0 ? realloc(smp, (size_t)(ns + r.n + 1) * sizeof *smp) : NULL;
        if (rc == 0 && !grown) rc = err_msg("out of memory for the band");
        if (rc == 0) smp = grown, validate_band_samples(&r, (band_mode)m, smp, &ns, ns + r.n);
        validate_free(&r);
    }
    if (rc == 0) rc = band_derive(bt, smp, ns);
    if (rc == 0 && (rc = band_write(bt, o->band_csv)) == 0) fprintf(stderr, "wrote %s\n", o->band_csv);
    free(smp);
    return rc;
}

/* The band (data/band.csv, or derived by --band-csv), then every file in the mode asked. */
static int val_run(const val_opts *o, const hw_table *ht, const dev_table *dt, const scale_eff_curve *eff,
                   const gemm_curves *gemm, val_result *res)
{
    const hw_overrides ov = {o->net_gbps > 0 ? o->net_gbps : NAN, o->intra_gbps > 0 ? o->intra_gbps : NAN, NAN};
    scale_model d;
    memset(&d, 0, sizeof d);
    d.interleave = 1, d.bucket_bytes = 25.0 * 1048576.0, d.net_eff = 1.0; /* costbench scale's defaults */
    d.gemm_curve = eff; /* every row's step on the curve its calibration is carried on */
    d.gemm_measured = gemm; /* a row on a device with a measured curve: its GEMMs on it */
    band_table bt = {0};
    val_env env = {ht, dt, &ov, o->latency_us, eff, o->fit_tol_pct, &d, &bt};
    int rc = o->band_csv ? val_band_derive(o, env, &bt) : band_load(&bt, NULL);
    if (rc == 0 && o->fweff_csv) {
        fweff_table ft;
        rc = validate_framework_eff(o->files, o->nfiles, &env, &ft);
        if (rc == 0 && (rc = fweff_write(&ft, o->fweff_csv)) == 0) fprintf(stderr, "wrote %s\n", o->fweff_csv);
        fweff_free(&ft);
    }
    if (rc == 0) rc = val_mode_run(o, o->mode, &env, res);
    band_free(&bt);
    return rc;
}

static int val_rows_record(record *rec, const val_result *res, val_mode mode)
{
    for (int i = 0; i < res->n; i++) {
        const val_row *v = &res->rows[i];
        int r = record_add_row(rec);
        if (r < 0) return CB_EFAIL;
        record_str(rec, r, VC_FILE, v->file);
        record_str(rec, r, VC_ID, v->id);
        record_num(rec, r, VC_LINE, v->line);
        record_str(rec, r, VC_CAL, v->calibration ? "true" : "false");
        record_num(rec, r, VC_PUB, v->published);
        record_num(rec, r, VC_PRED, v->predicted);
        record_num(rec, r, VC_ERR, isfinite(v->predicted) ? v->error_pct : NAN);
        record_num(rec, r, VC_NAIVE, v->naive);
        record_num(rec, r, VC_NERR, v->naive_error_pct);
        record_str(rec, r, VC_FROM, v->calibrated_on);
        record_num(rec, r, VC_HFU, v->eff_pct);
        record_num(rec, r, VC_BAND, v->calibration ? NAN : v->band_pct);
        record_str(rec, r, VC_EXTRA,
                   v->calibration || !isfinite(v->predicted) ? ""
                   : v->extrapolated[0]                      ? v->extrapolated
                                                             : "no");
        if (v->note[0]) record_str(rec, r, VC_NOTE, v->note);
    }
    record_csv_only(rec, VC_FILE);
    record_csv_only(rec, VC_LINE);
    record_note(rec,
                "model: costbench scale's step model, each row's configuration from its columns; the compute time "
                "fitted to the "
                "calibration row, its framework efficiency carried by the step model (README: costbench validate)");
    record_note(rec, "naive: %s",
                mode == VAL_FIRST_ROW
                    ? "the calibration row's model FLOP/s per device (6N + 12 L C T per token, PaLM) carried unchanged"
                    : "a flat 40% MFU of the data-sheet peak through the same step arithmetic");
    record_note(rec, "error = predicted / published - 1; a row without a prediction says why in 'note'");
    return 0;
}

static const char *const mode_notes[3] = {
    "mode: each file calibrated on its own row(s) (first row unless --calibrate names others); band = |the "
    "calibration's residual| + data/band.csv's first_row percentile of its case, that file left out",
    "mode: leave-one-file-out (--leave-one-out): each file from a joint fit (phi, per-step overhead) on the other "
    "files' rows of its framework (every framework when none has it), no row of its own; naive: a flat 40% MFU of "
    "the data-sheet peak; band: data/band.csv's lofo percentile, that file left out",
    "mode: uncalibrated (--calibrate none): each row from the device model x its framework's default phi fitted on "
    "the other files (the file left out); naive: a flat 40% MFU of the data-sheet peak (the uncalibrated default "
    "before); band: data/band.csv's none percentile, that file left out"};

static int val_summary_record(record *rec, const val_result *res, val_mode mode)
{
    int rows = 0;
    double inside = 0;
    for (int i = 0; i < res->nfiles; i++)
        if (res->files[i].band_rows > 0)
            rows += res->files[i].band_rows, inside += res->files[i].band_rows * res->files[i].band_coverage_pct / 100;
    record_note(rec, "%s", mode_notes[mode]);
    if (rows > 0)
        record_note(rec, "band coverage over every file: %.0f%% of %d predictions inside their band", 100 * inside / rows,
                    rows);
    for (int i = 0; i < res->nfiles; i++) {
        const val_summary *s = &res->files[i];
        int r = record_add_row(rec);
        if (r < 0) return CB_EFAIL;
        record_str(rec, r, VS_FILE, s->file);
        record_num(rec, r, VS_ROWS, s->rows);
        record_num(rec, r, VS_CAL, s->calibration_rows);
        record_num(rec, r, VS_PRED, s->predicted);
        record_num(rec, r, VS_REFUSED, s->refused);
        record_num(rec, r, VS_UNKNOWN, s->unknown_names);
        record_num(rec, r, VS_MED, s->median_abs_pct);
        record_num(rec, r, VS_MAX, s->max_abs_pct);
        record_num(rec, r, VS_NMED, s->naive_median_abs_pct);
        record_num(rec, r, VS_NMAX, s->naive_max_abs_pct);
        record_num(rec, r, VS_FROWS, s->fit_rows);
        record_num(rec, r, VS_PHI, s->fit_phi);
        record_num(rec, r, VS_PHISE, s->fit_phi_se);
        record_num(rec, r, VS_OVH, s->overhead_fitted ? s->fit_overhead_s : NAN);
        record_num(rec, r, VS_OVHSE, s->overhead_fitted ? s->fit_overhead_se : NAN);
        record_num(rec, r, VS_FRMS, s->fit_rms_pct);
        record_num(rec, r, VS_FWORST, s->fit_worst_pct);
        record_str(rec, r, VS_FWORSTID, s->fit_worst);
        record_num(rec, r, VS_COVER, s->band_coverage_pct);
        record_num(rec, r, VS_UNMODELLED, s->unmodelled);
    }
    record_note(
        rec, "per file: |error| over the rows predicted (calibration rows left out); the naive's over the same rows");
    record_note(rec, "refused: rows whose seq/s is impossible on their own hardware (more than 100%% of its dense "
                     "peak, as scale --calibrate refuses them): not scored");
    record_note(rec, "unknown_names: rows on a device or instance type the tables do not know, not even through a "
                     "family or as one of a published 'A/B' (each row's note names it): not predicted, the rest of "
                     "the file is");
    record_note(rec, "unmodelled: rows with no prediction for another reason, each row's note saying why (a "
                     "configuration outside the step model, no calibration row that fitted): rows = predicted + "
                     "calibration rows predicted + refused + unknown_names + unmodelled");
    record_note(rec, "fit_*: the step model fitted to every row of the file at once (least squares): phi, the "
                     "framework's efficiency "
                     "against the device model, and a fixed overhead per step ('-': the rows cannot tell it from phi); "
                     "the rms and the "
                     "worst residual of that fit: what the model cannot explain in the file");
    return 0;
}

/* The chart: one set per file, its predicted rows (calibration rows left out). */
static int val_plot(const char *path, const val_result *res)
{
    chart_val_set sets[VAL_MAX_FILES];
    double *a = malloc((size_t)(res->n ? res->n : 1) * sizeof *a),
           *b = malloc((size_t)(res->n ? res->n : 1) * sizeof *b);
    if (!a || !b) return free(a), free(b), err_msg("out of memory");
    char labels[VAL_MAX_FILES][64];
    int m = 0, ns = 0;
    for (int f = 0; f < res->nfiles; f++) {
        const char *slash = strrchr(res->files[f].file, '/'), *base = slash ? slash + 1 : res->files[f].file;
        snprintf(labels[ns], sizeof labels[ns], "%.*s", (int)(strstr(base, ".csv") ? strstr(base, ".csv") - base : 60),
                 base);
        sets[ns] = (chart_val_set){labels[ns], 0, a + m, b + m};
        for (int i = 0; i < res->n; i++) {
            const val_row *v = &res->rows[i];
            if (v->file != res->files[f].file || v->calibration || !isfinite(v->predicted)) continue;
            a[m] = v->published, b[m] = v->predicted, m++, sets[ns].n++;
        }
        ns++;
    }
    int rc = chart_validate(path, sets, ns,
                            "each file calibrated on its own row(s), which are left out; costbench scale's step model");
    free(a), free(b);
    return rc;
}

/* With measured device curves: one line each (report/predict/stepmodel.h's step_gemm_source), and
 * that every other device is on the cited figures. Nothing without one. */
static void val_gemm_notes(record *rec, const dev_table *dt, const gemm_curves *gemm)
{
    for (int i = 0; i < gemm->n; i++) {
        const dev_row *d = devices_find(dt, gemm->c[i].device);
        if (!d) continue;
        scale_model s;
        memset(&s, 0, sizeof s);
        hw_from_device(d, 1, NAN, NAN, &s.hw);
        s.precision = PRECISION_BF16_MIXED, s.gemm_measured = gemm;
        char line[1024];
        step_gemm_source(&s, line, sizeof line);
        record_note(rec, "%s (its rows' note says so; fp32 rows stay on the cited figures)", line);
    }
    if (gemm->n > 0)
        record_note(rec, "GEMMs on every other device: cited figures (gemm_eff x shape factors, data/devices.csv)");
}

static int val_write(const val_opts *o, const val_result *res, const dev_table *dt, const gemm_curves *gemm)
{
    record rows, sum;
    record_init(&rows, val_cols, VC_NCOLS);
    record_init(&sum, sum_cols, VS_NCOLS);
    int rc = val_rows_record(&rows, res, o->mode);
    val_gemm_notes(&rows, dt, gemm);
    if (rc == 0) rc = val_summary_record(&sum, res, o->mode);
    if (rc == 0) {
        record_print(&rows, stdout);
        printf("\n");
        record_print(&sum, stdout);
    }
    machine_info mi;
    if (rc == 0 && (o->csv || o->summary_csv)) machine_probe(&mi);
    if (rc == 0 && o->csv) rc = record_write_csv(&rows, o->csv, &mi);
    if (rc == 0 && o->summary_csv) rc = record_write_csv(&sum, o->summary_csv, &mi);
    if (rc == 0 && o->plot && (rc = val_plot(o->plot, res)) == 0) fprintf(stderr, "wrote %s\n", o->plot);
    record_free(&rows);
    record_free(&sum);
    return rc;
}

int validate_run(const val_opts *o)
{
    hw_table ht = {0};
    dev_table dt = {0};
    scale_eff_curve eff = {0};
    gemm_curves gemm = {0};
    val_result res = {0};
    char path[CB_PATH_MAX];
    int rc = 0;
    if (!o->hw_path && machine_data_file(path, sizeof path, "hardware.csv") != 0) rc = CB_EUSAGE;
    if (rc == 0 && hardware_load(&ht, o->hw_path ? o->hw_path : path) != 0) rc = CB_EUSAGE;
    if (rc == 0 && devices_load(&dt, NULL) != 0) rc = CB_EFAIL;
    int cpu_csv = 0; /* validate always calibrates: a CPU curve needs no flag more */
    if (rc == 0) rc = gemm_curves_from_flags(&gemm, o->matmul_csv, o->gemm, 1, &cpu_csv);
    if (rc == 0 && cpu_csv && matmul_curve_load(&eff, o->matmul_csv) != 0) rc = CB_EUSAGE;
    if (rc == 0) rc = val_run(o, &ht, &dt, &eff, &gemm, &res);
    if (rc == 0) rc = val_write(o, &res, &dt, &gemm);
    validate_free(&res);
    gemm_curves_free(&gemm);
    devices_free(&dt);
    hardware_free(&ht);
    return rc;
}
