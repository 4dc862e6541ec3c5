/* validate.c: the step model scored on published runs (see validate.h). */
#include "validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/frameworks.h"
#include "../common/stats.h"
#include "predict/calib_row.h"
#include "predict/calibration.h"
#include "predict/pubmodel.h"
#include "predict/stepmodel.h"

/* One file's rows as step models, and its calibrations. */
typedef struct {
    const pub_table *t;
    const val_env *env;
    const char *path;
    scale_model *model; /* (n) */
    long *nodes;        /* (n) */
    int *mapped;        /* (n) 1: the row is a step model */
    int *cfg_ok;        /* (n) 1: its model shape is known (for the naive count) */
    int *refused;       /* (n) 1: its throughput is impossible (calib_point_plausible); not scored */
    char (*why)[1024];  /* (n) why it is not */
    int *cal;           /* (ncal) row index of each calibration row */
    int ncal;
    calib_fit *fit;     /* (ncal) */
    int *fitted;        /* (ncal) */
} val_file;

static void val_file_free(val_file *f)
{
    free(f->model), free(f->nodes), free(f->mapped), free(f->cfg_ok), free(f->refused), free(f->why), free(f->cal),
        free(f->fit), free(f->fitted);
}

static int val_file_alloc(val_file *f, int n)
{
    size_t k = n > 0 ? (size_t)n : 1;
    f->model = calloc(k, sizeof *f->model), f->nodes = calloc(k, sizeof *f->nodes),
    f->mapped = calloc(k, sizeof *f->mapped);
    f->cfg_ok = calloc(k, sizeof *f->cfg_ok), f->why = calloc(k, sizeof *f->why), f->cal = calloc(k, sizeof *f->cal);
    f->fit = calloc(k, sizeof *f->fit), f->fitted = calloc(k, sizeof *f->fitted),
    f->refused = calloc(k, sizeof *f->refused);
    if (f->model && f->nodes && f->mapped && f->cfg_ok && f->why && f->cal && f->fit && f->fitted && f->refused)
        return 0;
    val_file_free(f);
    return err_msg("out of memory for %d rows", n);
}

/* The calibration rows: those of ids[] in this file (found[] marked), else the first row whose
 * names are known (pub_names_resolve; none: the first row, whose note says why). */
static void val_pick_calibration(val_file *f, const char *const *ids, int nids, int *found)
{
    f->ncal = 0;
    for (int k = 0; k < nids; k++) {
        const pub_row *r = published_find(f->t, ids[k]);
        if (!r) continue;
        found[k] = 1;
        int i = (int)(r - f->t->rows), dup = 0;
        for (int j = 0; j < f->ncal; j++) dup |= f->cal[j] == i;
        if (!dup) f->cal[f->ncal++] = i;
    }
    if (f->ncal > 0 || f->t->n == 0) return;
    const pub_model_env pe = {f->env->ht, f->env->dt, f->env->ov, f->env->latency_us};
    char note[1024];
    int first = 0;
    while (first < f->t->n && pub_names_resolve(&f->t->rows[first], &pe, note, sizeof note) != 0) first++;
    f->cal[f->ncal++] = first < f->t->n ? first : 0;
}

/* A mapped row whose seq/s is impossible on its own hardware, by the rule scale --calibrate
 * refuses it with (calib_point_plausible): refused with that reason, neither predicted nor a
 * baseline (a -99% "model error" against an impossible figure says nothing of the model). */
static void val_refuse(val_file *f, int i)
{
    char why[512];
    if (calib_point_plausible(&f->model[i], f->nodes[i], f->t->rows[i].seq_per_s, why, sizeof why) == 0) return;
    f->mapped[i] = f->cfg_ok[i] = 0, f->refused[i] = 1;
    snprintf(f->why[i], sizeof f->why[i], "refused: %s", why);
}

/* Every row as a step model (pubmodel.h), then each calibration row fitted to its seq/s. */
static void val_build(val_file *f, const char *path)
{
    const val_env *e = f->env;
    const pub_model_env pe = {e->ht, e->dt, e->ov, e->latency_us};
    for (int i = 0; i < f->t->n; i++) {
        const pub_row *r = &f->t->rows[i];
        f->mapped[i] =
            pub_scale_model(r, path, &pe, e->defaults, &f->model[i], &f->nodes[i], f->why[i], sizeof f->why[i]) == 0;
        f->cfg_ok[i] = f->mapped[i] || strncmp(f->why[i], "columns 'arch'", 14) != 0;
        if (f->mapped[i]) val_refuse(f, i);
    }
    for (int k = 0; k < f->ncal; k++) {
        int i = f->cal[k];
        if (!f->mapped[i]) continue;
        calib_fit *c = &f->fit[k];
        c->cal = f->model[i], c->nodes = f->nodes[i], c->seq_per_s = f->t->rows[i].seq_per_s;
        f->fitted[k] =
            calib_fit_point(c, path, f->t->rows[i].line, e->eff, e->tol_pct, f->why[i], sizeof f->why[i]) == 0;
    }
}

/* The calibration (index into cal[]) row i is carried from: itself when it is one, else the
 * nearest that fitted (same device, then |ln K ratio| + |ln N ratio|, then the first listed);
 * -1 when none fitted. */
static int val_nearest(const val_file *f, int i)
{
    for (int k = 0; k < f->ncal; k++)
        if (f->cal[k] == i) return f->fitted[k] ? k : -1;
    int best = -1;
    double dbest = INFINITY;
    const scale_model *t = &f->model[i];
    for (int k = 0; k < f->ncal; k++) {
        if (!f->fitted[k]) continue;
        const scale_model *c = &f->fit[k].cal;
        double d = fabs(log(scale_eff_k(t) / scale_eff_k(c))) + fabs(log(scale_eff_n(t) / scale_eff_n(c)));
        if (strcmp(f->t->rows[i].device, f->t->rows[f->cal[k]].device) != 0) d += 1e6;
        if (d < dbest) dbest = d, best = k;
    }
    return best;
}

/* "GEMMs on the measured curve of DEVICE" after the row's note when its GEMMs ran on one. */
static void val_gemm_note(const scale_model *s, val_row *v)
{
    char gemm[160];
    step_gemm_brief(s, gemm, sizeof gemm);
    step_parts parts;
    if (gemm[0] && isfinite(step_t_mb_device(s, &parts)) && parts.gemm_clamped)
        strcat(gemm, " (some GEMMs at its edge)");
    size_t len = strlen(v->note);
    if (gemm[0] && len + 2 + strlen(gemm) < sizeof v->note)
        snprintf(v->note + len, sizeof v->note - len, "%s%s", len ? "; " : "", gemm);
}

/* The model's prediction of row i from calibration k (NaN and the reason when there is none). */
static void val_predict(const val_file *f, int i, int k, val_row *out)
{
    const pub_row *r = &f->t->rows[i];
    out->predicted = NAN;
    if (!f->mapped[i]) {
        snprintf(out->note, sizeof out->note, "%s", f->why[i]);
        return;
    }
    if (k < 0) {
        int self = 0, c0 = f->cal[0];
        for (int j = 0; j < f->ncal; j++) self |= f->cal[j] == i;
        if (self) snprintf(out->note, sizeof out->note, "%s", f->why[i]); /* its own fit failed: why */
        else if (f->ncal == 1)
            snprintf(out->note, sizeof out->note, "no calibration: %s: %.900s", f->t->rows[c0].id, f->why[c0]);
        else
            snprintf(out->note, sizeof out->note,
                     "no calibration: none of the %d calibration rows fitted (their rows say why)", f->ncal);
        return;
    }
    scale_model s = f->model[i];
    double eff_t, e_t;
    int clamped;
    if (calib_fit_carry(&f->fit[k], &s, &eff_t, &clamped, &e_t, out->note, sizeof out->note) != 0) return;
    s.t_mb_s = calib_t_mb(&s, eff_t);
    scale_point p;
    scale_eval(&s, f->nodes[i], &p);
    out->predicted = p.seq_per_s;
    out->error_pct = 100.0 * (p.seq_per_s / r->seq_per_s - 1.0);
    out->eff_pct = 100.0 * eff_t;
    out->calib_case = (int)calib_case_of(&f->fit[k].cal, f->fit[k].nodes, &s, f->nodes[i], out->extrapolated,
                                         sizeof out->extrapolated);
    out->band_pct = calib_band_pct(&f->fit[k], &s, f->nodes[i]);
    if (f->env->band)
        out->band_pct = fabs(f->fit[k].fit.resid_pct[0]) +
                        band_lookup(f->env->band, BAND_FIRST_ROW, out->calib_case, f->path);
    size_t len = 0;
    if (clamped || f->fit[k].clamped)
        len = (size_t)snprintf(out->note, sizeof out->note, "e(K, N) of the %s taken at the curve's edge",
                               clamped ? "row" : "calibration row");
    if (!isfinite(s.hw.net_gbit_per_s) && p.replicas > 1 && f->nodes[i] > 1 && len < sizeof out->note)
        snprintf(out->note + len, sizeof out->note - len,
                 "%snetwork not published: the data-parallel traffic across nodes is not modelled "
                 "(--net-gbps)",
                 len ? "; " : "");
    len = strlen(out->note);
    if (f->why[i][0] && len + 2 < sizeof out->note) /* the row's framework note (pubmodel.h) */
        snprintf(out->note + len, sizeof out->note - len, "%s%s", len ? "; " : "", f->why[i]);
    val_gemm_note(&s, out);
}

/* Model FLOP/s per device of row i by costbench's count (PaLM), NaN when its shape is unknown. */
static double val_flops_per_device(const val_file *f, int i)
{
    const pub_row *r = &f->t->rows[i];
    if (!f->cfg_ok[i]) return NAN;
    return model_flops_per_token(&f->model[i].cfg, (int)r->seq_len) * (double)r->seq_len * r->seq_per_s /
           (double)r->devices;
}

/* The naive baseline of row i from calibration row c (a row index). */
static void val_naive(const val_file *f, int i, int c, val_row *out)
{
    const pub_row *r = &f->t->rows[i];
    out->naive = out->naive_error_pct = NAN;
    if (!f->cfg_ok[i] || !f->cfg_ok[c]) return;
    double per_seq = model_flops_per_token(&f->model[i].cfg, (int)r->seq_len) * (double)r->seq_len;
    out->naive = val_flops_per_device(f, c) * (double)r->devices / per_seq;
    out->naive_error_pct = 100.0 * (out->naive / r->seq_per_s - 1.0);
}

/* Whether the row's |error| lies inside its band (-1: no band or no prediction; a calibration row: -1). */
static void val_inside(val_row *v)
{
    v->inside_band = -1;
    if (!v->calibration && isfinite(v->predicted) && isfinite(v->band_pct))
        v->inside_band = fabs(v->error_pct) <= v->band_pct;
}

static val_row *val_row_add(val_result *res)
{
    if (res->n == res->cap) {
        int cap = res->cap ? 2 * res->cap : 64;
        val_row *rows = realloc(res->rows, (size_t)cap * sizeof *rows);
        if (!rows) return NULL;
        res->rows = rows, res->cap = cap;
    }
    val_row *v = &res->rows[res->n++];
    memset(v, 0, sizeof *v);
    return v;
}

/* What resolving row i's names took (pub_names_resolve) before its note; an unknown name counted. */
static void val_names(const val_file *f, int i, val_row *v)
{
    const val_env *e = f->env;
    const pub_model_env pe = {e->ht, e->dt, e->ov, e->latency_us};
    char names[sizeof v->note], old[sizeof v->note];
    v->unknown_names = pub_names_resolve(&f->t->rows[i], &pe, names, sizeof names) != 0;
    if (v->unknown_names || !names[0]) return; /* an unknown name: the note is its reason already */
    snprintf(old, sizeof old, "%s", v->note);
    snprintf(v->note, sizeof v->note, "%.500s%s%.500s", names, old[0] ? "; " : "", old);
}

/* Every row of the file into res. */
static int val_rows(val_result *res, const val_file *f, const char *file)
{
    for (int i = 0; i < f->t->n; i++) {
        const pub_row *r = &f->t->rows[i];
        val_row *v = val_row_add(res);
        if (!v) return err_msg("out of memory for the validation rows");
        v->file = file, v->line = r->line, v->published = r->seq_per_s, v->error_pct = v->eff_pct = v->band_pct = NAN;
        v->refused = f->refused[i];
        snprintf(v->id, sizeof v->id, "%s", r->id);
        for (int k = 0; k < f->ncal; k++) v->calibration |= f->cal[k] == i;
        int k = f->mapped[i] ? val_nearest(f, i) : -1;
        val_predict(f, i, k, v);
        val_names(f, i, v);
        v->unmodelled = !v->refused && !v->unknown_names && !isfinite(v->predicted);
        int c = k >= 0 ? f->cal[k] : f->cal[0];
        snprintf(v->calibrated_on, sizeof v->calibrated_on, "%s", f->t->rows[c].id);
        val_naive(f, i, c, v);
        val_inside(v);
    }
    return 0;
}

/* The file's summary over rows [first, res->n). */
static int val_summarize(val_result *res, int first, const char *file)
{
    if (res->nfiles == res->fcap) {
        int cap = res->fcap ? 2 * res->fcap : 8;
        val_summary *fs = realloc(res->files, (size_t)cap * sizeof *fs);
        if (!fs) return err_msg("out of memory for the validation summary");
        res->files = fs, res->fcap = cap;
    }
    val_summary *s = &res->files[res->nfiles++];
    *s = (val_summary){
        .file = file, .median_abs_pct = NAN, .max_abs_pct = NAN, .naive_median_abs_pct = NAN, .naive_max_abs_pct = NAN,
        .band_coverage_pct = NAN};
    int n = res->n - first, m = 0;
    double *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a), *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    if (!a || !b) return free(a), free(b), err_msg("out of memory for the validation summary");
    int mb = 0, inside = 0;
    for (int i = first; i < res->n; i++) {
        const val_row *v = &res->rows[i];
        s->rows++, s->calibration_rows += v->calibration, s->refused += v->refused;
        s->unknown_names += v->unknown_names, s->unmodelled += v->unmodelled;
        if (v->calibration || !isfinite(v->predicted)) continue;
        a[m++] = fabs(v->error_pct);
        if (v->inside_band >= 0) s->band_rows++, inside += v->inside_band;
        if (isfinite(v->naive_error_pct)) b[mb++] = fabs(v->naive_error_pct);
    }
    s->predicted = m;
    if (s->band_rows > 0) s->band_coverage_pct = 100.0 * inside / s->band_rows;
    stats_summary sa, sb;
    if (m > 0) stats_summarize(a, m, &sa), s->median_abs_pct = sa.median, s->max_abs_pct = sa.max;
    if (mb > 0) stats_summarize(b, mb, &sb), s->naive_median_abs_pct = sb.median, s->naive_max_abs_pct = sb.max;
    free(a), free(b);
    return 0;
}

/* The joint fit of phi and the per-step overhead on every mapped row into the file's summary. */
static void val_fit_all(val_summary *s, const val_file *f)
{
    s->fit_phi = s->fit_phi_se = s->fit_overhead_s = s->fit_overhead_se = s->fit_rms_pct = s->fit_worst_pct = NAN;
    int n = 0;
    scale_model *m = malloc((size_t)(f->t->n > 0 ? f->t->n : 1) * sizeof *m);
    long *nodes = malloc((size_t)(f->t->n > 0 ? f->t->n : 1) * sizeof *nodes);
    double *sps = malloc((size_t)(f->t->n > 0 ? f->t->n : 1) * sizeof *sps);
    int *idx = malloc((size_t)(f->t->n > 0 ? f->t->n : 1) * sizeof *idx);
    for (int i = 0; m && nodes && sps && idx && i < f->t->n && n < CALIB_JOINT_MAX; i++)
        if (f->mapped[i] && isfinite(step_t_mb_device(&f->model[i], NULL)))
            m[n] = f->model[i], nodes[n] = f->nodes[i], sps[n] = f->t->rows[i].seq_per_s, idx[n++] = i;
    calib_joint j;
    char why[256];
    if (n > 0 && calib_fit_joint(m, nodes, sps, n, &j, why, sizeof why) == 0) {
        s->fit_rows = n, s->overhead_fitted = j.overhead_fitted;
        s->fit_phi = j.phi, s->fit_phi_se = j.phi_se, s->fit_overhead_s = j.overhead_s,
        s->fit_overhead_se = j.overhead_se;
        s->fit_rms_pct = j.rms_pct, s->fit_worst_pct = j.resid_pct[j.worst];
        snprintf(s->fit_worst, sizeof s->fit_worst, "%s", f->t->rows[idx[j.worst]].id);
    }
    free(m), free(nodes), free(sps), free(idx);
}

int validate_file(val_result *res, const char *path, const char *const *ids, int nids, int *found, const val_env *env)
{
    pub_table t = {0};
    if (published_load(&t, path, env->dt) != 0) return CB_EUSAGE;
    val_file f = {.t = &t, .env = env, .path = path};
    int rc = val_file_alloc(&f, t.n), first = res->n;
    if (rc == 0) {
        val_pick_calibration(&f, ids, nids, found);
        val_build(&f, path);
        rc = val_rows(res, &f, path);
        if (rc == 0) rc = val_summarize(res, first, path);
        if (rc == 0) val_fit_all(&res->files[res->nfiles - 1], &f);
        val_file_free(&f);
    }
    published_free(&t);
    return rc;
}

/* ------------------------------------------------------------------ every file from the others (lofo, none) */

typedef struct {
    pub_table t;
    val_file f;
    int loaded;
} val_loaded;

/* One file's fit from the others, for one framework (validate.h: the rows fitted). */
typedef struct {
    char fw[32];
    int by_fw, ok, rows, files;
    calib_joint j;
    char why[256];
} val_pool_fit;

/* Whether row i can enter a fit: a step model (not refused) with a device time. */
static int val_fittable(const val_file *f, int i)
{
    return f->mapped[i] && isfinite(step_t_mb_device(&f->model[i], NULL));
}

/* The rows of the files other than `self` with framework fw (NULL: any) into m/nodes/sps (at most
 * CALIB_JOINT_MAX); *files the files they come from; *dev set when one runs on device `dev`. */
static int val_pool_rows(const val_loaded *l, int nl, int self, const char *fw, const char *dev, scale_model *m,
                         long *nodes, double *sps, int *files, int *dev_seen)
{
    int n = 0;
    *files = 0, *dev_seen = 0;
    for (int a = 0; a < nl; a++) {
        if (a == self) continue;
        int from = 0;
        for (int i = 0; i < l[a].t.n && n < CALIB_JOINT_MAX; i++) {
            const pub_row *r = &l[a].t.rows[i];
            if (!val_fittable(&l[a].f, i) || (fw && strcmp(framework_canonical(r->framework), fw) != 0)) continue;
            if (m) m[n] = l[a].f.model[i], nodes[n] = l[a].f.nodes[i], sps[n] = r->seq_per_s;
            *dev_seen |= strcmp(l[a].f.model[i].hw.accelerator, dev) == 0;
            n++, from = 1;
        }
        *files += from;
    }
    return n;
}

/* The fit for framework fw's rows of file self: that framework's rows of the other files, else all of them. */
static void val_pool_fit_make(const val_loaded *l, int nl, int self, const char *fw, val_mode mode, val_pool_fit *pf)
{
    memset(pf, 0, sizeof *pf);
    snprintf(pf->fw, sizeof pf->fw, "%s", fw);
    scale_model *m = malloc(CALIB_JOINT_MAX * sizeof *m);
    long nodes[CALIB_JOINT_MAX];
    double sps[CALIB_JOINT_MAX];
    int dev_seen;
    if (!m) {
        snprintf(pf->why, sizeof pf->why, "out of memory for the fit");
        return;
    }
    pf->by_fw = 1;
    pf->rows = val_pool_rows(l, nl, self, fw, "", m, nodes, sps, &pf->files, &dev_seen);
    if (pf->rows == 0) pf->by_fw = 0, pf->rows = val_pool_rows(l, nl, self, NULL, "", m, nodes, sps, &pf->files, &dev_seen);
    if (pf->rows == 0) snprintf(pf->why, sizeof pf->why, "no row of another file to fit on");
    else if (mode == VAL_LOFO) pf->ok = calib_fit_joint(m, nodes, sps, pf->rows, &pf->j, pf->why, sizeof pf->why) == 0;
    else pf->ok = calib_fit_phi(m, nodes, sps, pf->rows, &pf->j, pf->why, sizeof pf->why) == 0;
    free(m);
}

/* The naive of a pooled row: the flat SCALE_ASSUMED_MFU_PCT of the data-sheet peak. */
static void val_pool_naive(const val_file *f, int i, val_row *v)
{
    v->naive = v->naive_error_pct = NAN;
    if (!f->mapped[i]) return;
    scale_model s = f->model[i];
    s.t_mb_s = scale_t_mb_from_peak(&s, SCALE_ASSUMED_MFU_PCT / 100.0), s.step_overhead_s = 0;
    scale_point p;
    scale_eval(&s, f->nodes[i], &p);
    v->naive = p.seq_per_s, v->naive_error_pct = 100.0 * (p.seq_per_s / v->published - 1.0);
}

/* Row i of file self predicted from pf (its case and band from the rows fitted). Returns the length
 * of its note when it has no prediction, else 0. */
static int val_pool_predict(const val_loaded *l, int nl, int self, int i, val_mode mode, const val_pool_fit *pf,
                             val_row *v)
{
    const val_file *f = &l[self].f;
    const scale_model *s = &f->model[i];
    snprintf(v->calibrated_on, sizeof v->calibrated_on, "%s: %d rows, %d files", pf->by_fw ? pf->fw : "every framework",
             pf->rows, pf->files);
    if (!f->mapped[i]) return snprintf(v->note, sizeof v->note, "%s", f->why[i]);
    if (!pf->ok) return snprintf(v->note, sizeof v->note, "no fit: %s", pf->why);
    double t_dev = step_t_mb_device(s, NULL), e = calib_gemm_share(s, pf->j.phi);
    if (!isfinite(t_dev))
        return snprintf(v->note, sizeof v->note, "the step model has no device time for the row");
    if (e > 1)
        return snprintf(v->note, sizeof v->note,
                              "phi %.4g puts the row's GEMMs at %.4g%% of the dense peak, above 100%%", pf->j.phi,
                              100 * e);
    v->predicted = calib_joint_predict(&pf->j, s, f->nodes[i]);
    v->error_pct = 100.0 * (v->predicted / v->published - 1.0);
    v->eff_pct = 100.0 * scale_stage_flops(s, 1) / (t_dev / pf->j.phi * scale_stage_peak(s));
    int files, dev_seen;
    val_pool_rows(l, nl, self, pf->by_fw ? pf->fw : NULL, s->hw.accelerator, NULL, NULL, NULL, &files, &dev_seen);
    v->calib_case = !pf->by_fw ? CALIB_DEVICE : dev_seen ? CALIB_NEAR : CALIB_LAYOUT;
    snprintf(v->extrapolated, sizeof v->extrapolated, "%s",
             !pf->by_fw ? "no other file has its framework: phi of every framework"
             : dev_seen ? ""
                        : "its framework's rows are on other devices");
    band_mode bm = mode == VAL_LOFO ? BAND_LOFO : BAND_NONE;
    v->band_pct = f->env->band ? band_lookup(f->env->band, bm, v->calib_case, f->path) : NAN;
    if (pf->j.overhead_fitted) snprintf(v->note, sizeof v->note, "phi %.4g, overhead %.4g s a step", pf->j.phi, pf->j.overhead_s);
    else snprintf(v->note, sizeof v->note, "phi %.4g", pf->j.phi);
    val_gemm_note(s, v);
    return 0;
}

/* Why row i has no prediction, as a count (the note says it already): an unknown name
 * (pub_names_resolve), else unmodelled unless refused. */
static void val_unmapped(const val_file *f, int i, val_row *v)
{
    if (isfinite(v->predicted)) return;
    const val_env *e = f->env;
    const pub_model_env pe = {e->ht, e->dt, e->ov, e->latency_us};
    char names[256];
    v->unknown_names = pub_names_resolve(&f->t->rows[i], &pe, names, sizeof names) != 0;
    v->unmodelled = !v->refused && !v->unknown_names;
}

/* Every row of file self into res, each from the other files' fit for its framework. */
static int val_pool_file(val_result *res, const val_loaded *l, int nl, int self, val_mode mode)
{
    enum { NFIT = 8 };
    val_pool_fit fits[NFIT];
    int nfit = 0;
    const val_file *f = &l[self].f;
    for (int i = 0; i < l[self].t.n; i++) {
        const pub_row *r = &l[self].t.rows[i];
        val_row *v = val_row_add(res);
        if (!v) return err_msg("out of memory for the validation rows");
        v->file = f->path, v->line = r->line, v->published = r->seq_per_s, v->refused = f->refused[i];
        v->predicted = v->error_pct = v->eff_pct = v->band_pct = NAN;
        snprintf(v->id, sizeof v->id, "%s", r->id);
        const char *fw = framework_canonical(r->framework);
        snprintf(v->framework, sizeof v->framework, "%s", fw);
        int k = 0;
        while (k < nfit && strcmp(fits[k].fw, fw) != 0) k++;
        if (k == nfit && nfit < NFIT) val_pool_fit_make(l, nl, self, fw, mode, &fits[nfit++]);
        if (k >= nfit) k = nfit - 1, val_pool_fit_make(l, nl, self, fw, mode, &fits[k]);
        val_pool_predict(l, nl, self, i, mode, &fits[k], v);
        val_unmapped(f, i, v);
        val_pool_naive(f, i, v);
        val_inside(v);
    }
    return 0;
}

/* Every file of paths[0..n) loaded as step models (no calibration rows) into *out. Returns 0, or
 * CB_EUSAGE when one does not load, CB_EFAIL out of memory (nothing to free then). */
static void val_unload_all(val_loaded *l, int n);
static int val_load_all(val_loaded **out, char *const *paths, int n, const val_env *env)
{
    val_loaded *l = calloc((size_t)(n > 0 ? n : 1), sizeof *l);
    if (!l) return err_msg("out of memory for %d files", n);
    int rc = 0;
    for (int a = 0; a < n && rc == 0; a++) {
        if (published_load(&l[a].t, paths[a], env->dt) != 0) {
            rc = CB_EUSAGE;
            break;
        }
        l[a].f = (val_file){.t = &l[a].t, .env = env, .path = paths[a]};
        if ((rc = val_file_alloc(&l[a].f, l[a].t.n)) != 0) break; /* frees its own on failure */
        l[a].loaded = 1;
        val_build(&l[a].f, paths[a]); /* no calibration rows: ncal 0 */
    }
    if (rc != 0) val_unload_all(l, n), l = NULL;
    *out = l;
    return rc;
}

static void val_unload_all(val_loaded *l, int n)
{
    for (int a = 0; l && a < n; a++) {
        if (l[a].loaded) val_file_free(&l[a].f);
        published_free(&l[a].t);
    }
    free(l);
}

int validate_pooled(val_result *res, char *const *paths, int n, val_mode mode, const val_env *env)
{
    val_loaded *l;
    int rc = val_load_all(&l, paths, n, env);
    for (int a = 0; a < n && rc == 0; a++) {
        int first = res->n;
        rc = val_pool_file(res, l, n, a, mode);
        if (rc == 0) rc = val_summarize(res, first, paths[a]);
        if (rc == 0) val_fit_all(&res->files[res->nfiles - 1], &l[a].f);
    }
    val_unload_all(l, n);
    return rc;
}

/* phi of framework fw (NULL: every framework) fitted on every file's rows into e. */
static int val_fweff_fit(const val_loaded *l, int n, const char *fw, fweff_entry *e)
{
    scale_model *m = malloc(CALIB_JOINT_MAX * sizeof *m);
    long nodes[CALIB_JOINT_MAX];
    double sps[CALIB_JOINT_MAX];
    int dev_seen;
    if (!m) return err_msg("out of memory for the fit");
    snprintf(e->framework, sizeof e->framework, "%s", fw ? fw : FWEFF_ANY);
    e->rows = val_pool_rows(l, n, -1, fw, "", m, nodes, sps, &e->files, &dev_seen);
    calib_joint j;
    char why[256];
    int rc = e->rows > 0 && calib_fit_phi(m, nodes, sps, e->rows, &j, why, sizeof why) == 0 ? 0 : CB_EFAIL;
    free(m);
    if (rc != 0) return err_msg("framework '%s': phi did not fit on %d rows", e->framework, e->rows);
    e->phi = j.phi;
    snprintf(e->derived, sizeof e->derived, "phi fitted on %d rows of %d files; spread out of sample (%s)", e->rows,
             e->files, fw ? "each file from its framework's other files, else every other file" : "each file from the others");
    return 0;
}

/* The spread of e: P90 of |error| of the uncalibrated predictions (res) of its framework's rows. */
static void val_fweff_spread(const val_result *res, fweff_entry *e)
{
    double *x = malloc((size_t)(res->n > 0 ? res->n : 1) * sizeof *x);
    int c = 0, any = strcmp(e->framework, FWEFF_ANY) == 0;
    for (int i = 0; x && i < res->n; i++)
        if (isfinite(res->rows[i].predicted) && (any || strcmp(res->rows[i].framework, e->framework) == 0))
            x[c++] = fabs(res->rows[i].error_pct);
    e->spread_pct = c > 0 ? ceil(10.0 * band_p90(x, c) - 1e-9) / 10.0 : NAN;
    free(x);
}

int validate_framework_eff(char *const *paths, int n, const val_env *env, fweff_table *out)
{
    memset(out, 0, sizeof *out);
    val_loaded *l;
    val_result res = {0};
    int rc = val_load_all(&l, paths, n, env);
    for (int a = 0; a < n && rc == 0; a++)
        for (int i = 0; i < l[a].t.n && rc == 0; i++) {
            const char *fw = framework_canonical(l[a].t.rows[i].framework);
            if (!val_fittable(&l[a].f, i) || fweff_find(out, fw) != NULL) continue;
            fweff_entry *e = fweff_add(out);
            rc = e ? val_fweff_fit(l, n, fw, e) : err_msg("out of memory");
        }
    fweff_entry *e = rc == 0 ? fweff_add(out) : NULL;
    if (rc == 0) rc = e ? val_fweff_fit(l, n, NULL, e) : err_msg("out of memory");
    val_unload_all(l, n);
    if (rc == 0) rc = validate_pooled(&res, paths, n, VAL_NONE, env);
    for (int k = 0; k < out->n && rc == 0; k++) val_fweff_spread(&res, &out->e[k]);
    validate_free(&res);
    if (rc != 0) fweff_free(out);
    return rc;
}

void validate_band_samples(const val_result *res, band_mode m, band_sample *samples, int *ns, int cap)
{
    for (int i = 0; i < res->n && *ns < cap; i++) {
        const val_row *v = &res->rows[i];
        if (v->calibration || !isfinite(v->predicted)) continue;
        band_sample *b = &samples[(*ns)++];
        b->mode = m, b->kase = v->calib_case, b->abs_err_pct = fabs(v->error_pct);
        snprintf(b->file, sizeof b->file, "%s", band_base(v->file));
    }
}

void validate_free(val_result *res)
{
    free(res->rows);
    free(res->files);
    memset(res, 0, sizeof *res);
}
