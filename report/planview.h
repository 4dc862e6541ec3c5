/* planview.h: `costbench plan` as a buyer reads it: which candidates the table shows (the best
 * layout of each instance type and pricing option by default; every layout with --all or --top;
 * runner-ups with --runners-up), why each row wins, its band, the precisions searched, and the
 * stale prices in one line. report/planrun.c fills the rows; this file decides what they say. */
#ifndef CB_PLANVIEW_H
#define CB_PLANVIEW_H

#include <stddef.h>

#include "planrun.h"

/* Per instance type and offer (key inst x PLAN_MAX_OFFERS + offer): the candidates that meet the
 * deadline and the budget, the cheapest (-1: none) and the next cheapest that the model can tell
 * from it (-1: none), and the fastest candidate whatever the deadline (-1: none). */
typedef struct {
    int nkeys;
    long *count;
    int *best, *next, *fastest;
} plan_keys;

int plan_keys_build(const plan_run *r, plan_keys *k);
void plan_keys_free(plan_keys *k);

/* Whether the table ranks every layout (--all, or --top without --per-instance or --runners-up)
 * rather than the best of each instance type and offer. */
int plan_view_all(const plan_opts *o);

/* The candidates the table shows, in order (by cost; by type, each type's rows together, with
 * --runners-up), into *idx (allocated; *n of them); *hidden the
 * layouts left out because they tie with a row shown (same offer, nodes, time and cost).
 * Returns 0 or CB_EFAIL. */
int plan_view_select(const plan_run *r, const plan_keys *k, int **idx, int *n, long *hidden);

/* Why candidate ci ranks where it does: the best of its type "cheapest of 12 layouts meeting the
 * deadline; 4 nodes, TP 8 PP 1 ZeRO 1, bf16-mixed; next: +4% with TP 4", another "+4% over the
 * best p5.48xlarge on_demand layout; TP 4, ZeRO 0". */
void plan_view_why(const plan_run *r, const plan_keys *k, int ci, char *buf, size_t n);
/* A candidate's band (plan_cand_case's band_pct) as text: "+-12%", or "no band: uncalibrated at an
 * assumed MFU" when the prediction carries none (NaN). */
void plan_view_band(double band_pct, char *buf, size_t n);

/* The notes on what the table shows and the precisions searched on each device. */
void plan_view_notes(record *rec, const plan_run *r);
/* The offers that have no row (nothing meets the deadline or the budget): their fastest. */
void plan_view_unmet(record *rec, const plan_run *r, const plan_keys *k);
/* The prices older than a year: one warning line with their count and the oldest (--price-warnings
 * all: one line each). */
void plan_view_stale_prices(const plan_run *r);

#endif
