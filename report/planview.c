/* planview.c: what `costbench plan` shows and why (see planview.h). */
#include "planview.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"

static int key_of(const plan_cand *c) { return c->inst * PLAN_MAX_OFFERS + c->offer; }
static int qualifies(const plan_cand *c) { return c->meets_deadline && c->within_budget; }

int plan_keys_build(const plan_run *r, plan_keys *k)
{
    memset(k, 0, sizeof *k);
    k->nkeys = r->in.ninst * PLAN_MAX_OFFERS;
    size_t n = (size_t)(k->nkeys > 0 ? k->nkeys : 1);
    k->count = calloc(n, sizeof *k->count);
    k->best = malloc(n * sizeof *k->best), k->next = malloc(n * sizeof *k->next);
    k->fastest = malloc(n * sizeof *k->fastest);
    if (!k->count || !k->best || !k->next || !k->fastest) {
        plan_keys_free(k);
        return err_msg("plan: out of memory");
    }
    for (int i = 0; i < k->nkeys; i++) k->best[i] = k->next[i] = k->fastest[i] = -1;
    const plan_result *res = &r->res;
    for (int i = 0; i < res->n; i++) { /* res->c is by cost ascending */
        const plan_cand *c = &res->c[i];
        int key = key_of(c);
        if (k->fastest[key] < 0 || c->train_s < res->c[k->fastest[key]].train_s) k->fastest[key] = i;
        if (!qualifies(c)) continue;
        k->count[key]++;
        if (k->best[key] < 0) k->best[key] = i;
        else if (k->next[key] < 0 && !plan_same_result(&res->c[k->best[key]], c)) k->next[key] = i;
    }
    return 0;
}

void plan_keys_free(plan_keys *k)
{
    if (!k) return;
    free(k->count), free(k->best), free(k->next), free(k->fastest);
    memset(k, 0, sizeof *k);
}

int plan_view_all(const plan_opts *o) { return o->all || (o->top > 0 && !o->per_instance && o->runners_up == 0); }

/* Whether c ties with a row already chosen (plan_same_result): in the ranking, with the last 64
 * rows (the rows tying with it are next to it); by type, with the rows of its own type. */
static int ties_shown(const plan_result *res, const int *idx, int n, const plan_cand *c, int all)
{
    for (int k = all && n > 64 ? n - 64 : 0; k < n; k++)
        if (plan_same_result(&res->c[idx[k]], c)) return 1;
    return 0;
}

/* The rows of one instance type and offer together, the types in the order of their best (idx is
 * by cost: each type's rows keep their order); an insertion sort: a handful of rows a type. */
static void group_by_type(const plan_result *res, const plan_keys *k, int *idx, int n)
{
    for (int i = 1; i < n; i++) {
        int v = idx[i], bv = k->best[key_of(&res->c[v])], j = i - 1;
        while (j >= 0 && k->best[key_of(&res->c[idx[j]])] > bv) {
            idx[j + 1] = idx[j];
            j--;
        }
        idx[j + 1] = v;
    }
}

int plan_view_select(const plan_run *r, const plan_keys *k, int **idx, int *n, long *hidden)
{
    const plan_result *res = &r->res;
    int all = plan_view_all(&r->o);
    long limit = r->o.top > 0 ? r->o.top : all ? 10 : LONG_MAX, per_key = 1 + r->o.runners_up;
    *idx = NULL, *n = 0, *hidden = 0;
    int *out = malloc((size_t)(res->n > 0 ? res->n : 1) * sizeof *out);
    long *shown = calloc((size_t)(k->nkeys > 0 ? k->nkeys : 1), sizeof *shown);
    if (!out || !shown) {
        free(out), free(shown);
        return err_msg("plan: out of memory");
    }
    for (int i = 0; i < res->n && *n < limit; i++) {
        const plan_cand *c = &res->c[i];
        if (!qualifies(c)) continue;
        if (ties_shown(res, out, *n, c, all)) {
            (*hidden)++;
            continue;
        }
        if (!all && shown[key_of(c)] >= per_key) continue;
        shown[key_of(c)]++;
        out[(*n)++] = i;
    }
    free(shown);
    if (!all) group_by_type(res, k, out, *n);
    *idx = out;
    return 0;
}

/* "4 nodes, TP 8 (SP) PP 2 x 2 virtual ZeRO 1, micro-batch 1, recompute full, bf16-mixed" */
static void layout_text(const plan_cand *c, char *buf, size_t n)
{
    char vp[24] = "";
    if (c->vp > 1) snprintf(vp, sizeof vp, " x %d virtual", c->vp);
    snprintf(buf, n, "%ld node%s, TP %d%s PP %d%s ZeRO %d, micro-batch %d%s, %s", c->nodes, c->nodes == 1 ? "" : "s",
             c->tp, c->sp ? " (SP)" : "", c->pp, vp, c->zero, c->micro_batch, c->recompute ? ", recompute full" : "",
             plan_prec_name(c->prec, c->fp8));
}

/* What b changes from a: "TP 4, ZeRO 0, fp8" ("the same layout" when nothing). */
static void diff_text(const plan_cand *a, const plan_cand *b, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
#define DIFF(cond, ...)                                                                                              \
    do {                                                                                                             \
        if ((cond) && len < n) {                                                                                     \
            len += (size_t)snprintf(buf + len, n - len, "%s", len ? ", " : "");                                      \
            if (len < n) len += (size_t)snprintf(buf + len, n - len, __VA_ARGS__);                                   \
        }                                                                                                            \
    } while (0)
    DIFF(a->nodes != b->nodes, "%ld node%s", b->nodes, b->nodes == 1 ? "" : "s");
    DIFF(a->tp != b->tp, "TP %d", b->tp);
    DIFF(a->sp != b->sp, "SP %s", b->sp ? "on" : "off");
    DIFF(a->pp != b->pp, "PP %d", b->pp);
    DIFF(a->vp != b->vp, "%d virtual", b->vp);
    DIFF(a->zero != b->zero, "ZeRO %d", b->zero);
    DIFF(a->micro_batch != b->micro_batch, "micro-batch %d", b->micro_batch);
    DIFF(a->recompute != b->recompute, "recompute %s", b->recompute ? "full" : "off");
    DIFF(a->prec != b->prec || a->fp8 != b->fp8, "%s", plan_prec_name(b->prec, b->fp8));
#undef DIFF
    if (!buf[0]) snprintf(buf, n, "the same layout");
}

/* "+4%", "+0.3%", "+<0.1%": how much dearer b is than a. */
static void dearer_text(const plan_cand *a, const plan_cand *b, char *buf, size_t n)
{
    double pct = 100.0 * (b->cost_usd - a->cost_usd) / a->cost_usd;
    if (pct < 0.05) snprintf(buf, n, "+<0.1%%");
    else snprintf(buf, n, pct < 10 ? "+%.1f%%" : "+%.0f%%", pct);
}

void plan_view_why(const plan_run *r, const plan_keys *k, int ci, char *buf, size_t n)
{
    const plan_result *res = &r->res;
    const plan_cand *c = &res->c[ci];
    const plan_instance *pi = &r->in.inst[c->inst];
    int key = key_of(c), best = k->best[key], next = k->next[key];
    char lay[160], diff[160], pct[16];
    const char *what = r->in.budget_usd > 0 ? "the deadline and the budget" : "the deadline";
    if (best < 0 || !qualifies(c)) { /* a frontier row that misses the deadline */
        layout_text(c, lay, sizeof lay);
        snprintf(buf, n, "misses %s; %s", what, lay);
        return;
    }
    if (ci != best) {
        dearer_text(&res->c[best], c, pct, sizeof pct);
        diff_text(&res->c[best], c, diff, sizeof diff);
        snprintf(buf, n, "%s over the best %s %s layout; %s", pct, pi->hw.instance, pi->option[c->offer], diff);
        return;
    }
    layout_text(c, lay, sizeof lay);
    char tail[200] = "next: none (every other layout ties with it)";
    if (next >= 0) {
        dearer_text(c, &res->c[next], pct, sizeof pct);
        diff_text(c, &res->c[next], diff, sizeof diff);
        snprintf(tail, sizeof tail, "next: %s with %s", pct, diff);
    }
    snprintf(buf, n, "cheapest of %ld layouts meeting %s; %s; %s", k->count[key], what, lay, tail);
}

void plan_view_band(double band_pct, char *buf, size_t n)
{
    if (isfinite(band_pct)) snprintf(buf, n, "+-%.0f%%", band_pct);
    else snprintf(buf, n, "no band: uncalibrated at an assumed MFU");
}

/* Appends name to list (", "-separated) unless it is there. */
static void list_add(char *list, size_t n, const char *name)
{
    size_t len = strlen(list), w = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += w)
        if ((p == list || p[-1] == ' ') && (p[w] == ',' || p[w] == '\0')) return;
    snprintf(list + len, n - len, "%s%s", len ? ", " : "", name);
}

void plan_view_notes(record *rec, const plan_run *r)
{
    if (plan_view_all(&r->o))
        record_note(rec, "view: every layout that meets the deadline, cheapest first (--all%s); without it, the best "
                         "of each instance type and pricing option",
                    r->o.all ? "" : " by --top");
    else
        record_note(rec,
                    "view: the best layout of each instance type and pricing option that meets the deadline, cheapest "
                    "first%s; --runners-up N adds the next N of each, --all ranks every layout",
                    r->o.runners_up > 0 ? " with its runner-ups" : "");
    char fp8[512] = "", sr[512] = "", fp32[512] = "";
    for (int i = 0; i < r->in.ninst; i++) {
        const plan_instance *pi = &r->in.inst[i];
        const char *dev = pi->hw.accelerator[0] ? pi->hw.accelerator : pi->hw.instance;
        if (!isfinite(pi->hw.bf16_tflops)) list_add(fp32, sizeof fp32, dev);
        else if (pi->fp8) list_add(fp8, sizeof fp8, dev);
        if (isfinite(pi->hw.bf16_tflops) && pi->stochastic_rounding) list_add(sr, sizeof sr, dev);
    }
    record_note(rec,
                "precisions searched, as each device's frameworks train: bf16-mixed (fp32 master weights) on every "
                "device with a BF16 peak; fp8 (transformer-block GEMMs at the FP8 peak, the rest bf16-mixed) on %s; "
                "full bf16 with stochastic rounding (bf16-sr) where the hardware rounds stochastically "
                "(data/devices.csv stochastic_rounding): %s; fp32 only without a BF16 peak%s%s",
                fp8[0] ? fp8 : "none of these (no FP8 peak, or frameworks without fp8)", sr[0] ? sr : "none of these",
                fp32[0] ? ": " : "", fp32);
}

void plan_view_unmet(record *rec, const plan_run *r, const plan_keys *k)
{
    char buf[2048] = "";
    size_t len = 0;
    for (int i = 0; i < r->in.ninst; i++)
        for (int o = 0; o < r->in.inst[i].noffers && len < sizeof buf; o++) {
            int key = i * PLAN_MAX_OFFERS + o, f = k->fastest[key];
            if (k->best[key] >= 0) continue;
            const plan_instance *pi = &r->in.inst[i];
            if (f < 0)
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s %s: no feasible layout", len ? "; " : "",
                                        pi->hw.instance, pi->option[o]);
            else {
                char usd[32];
                record_num_text(r->res.c[f].cost_usd, 0, usd, sizeof usd);
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s %s: fastest %.1f days ($%s)",
                                        len ? "; " : "", pi->hw.instance, pi->option[o],
                                        r->res.c[f].train_s / 86400.0, usd);
            }
        }
    if (len)
        record_note(rec, "no row (nothing meets %s): %s",
                    r->in.budget_usd > 0 ? "the deadline within the budget" : "the deadline", buf);
}

void plan_view_stale_prices(const plan_run *r)
{
    const plan_inputs *in = &r->in;
    int all = r->o.price_warnings && strcmp(r->o.price_warnings, "all") == 0, n = 0, oi = -1, ok = -1;
    for (int i = 0; i < in->ninst; i++)
        for (int k = 0; k < in->inst[i].noffers; k++) {
            const plan_instance *pi = &in->inst[i];
            if (!(pi->price_age_days[k] > PRICE_STALE_DAYS)) continue;
            n++;
            if (oi < 0 || pi->price_age_days[k] > in->inst[oi].price_age_days[ok]) oi = i, ok = k;
            if (all)
                err_warn("plan uses a price older than a year: %s %s $%.6g per instance-hour (as of %s)",
                         pi->hw.instance, pi->option[k], pi->usd_per_hour[k], pi->price_source[k]);
        }
    if (n == 0 || all) return;
    const plan_instance *o = &in->inst[oi];
    err_warn("%d price%s older than a year (oldest: %s %s $%.6g per instance-hour, as of %s); `costbench prices` "
             "lists them (--price-warnings all: one line each)",
             n, n == 1 ? "" : "s", o->hw.instance, o->option[ok], o->usd_per_hour[ok], o->as_of[ok]);
}
