/* logrow.h: a training log read by its parser (logimport.h) as one row of the published-runs
 * schema (data/reference/published/SCHEMA.md): its steady state (which steps, their figures, the
 * metric the row publishes: steady.h), and the row itself, written and checked the way
 * published_load (published.h) reads it. */
#ifndef CB_LOGROW_H
#define CB_LOGROW_H

#include <stddef.h>
#include <stdio.h>

#include "logimport.h"
#include "steady.h"
#include "../formats/published.h"

/* When `name` is a preset of data/models.csv: r's arch from the preset's family and, when `shape`,
 * the shape fields r leaves unset (layers, d_model, heads, kv_heads, ffn_dim, vocab, params); 1.
 * 0 when it is none (r untouched). */
int log_preset_fill(log_run *r, const char *name, int shape);
/* 1 when `name` is a preset of data/models.csv. */
int log_preset_known(const char *name);

/* One published-runs row as text, its columns in the schema's order (pub_cols of published.h). */
typedef struct {
    char cell[PUB_NCOLS][600];
} logrow;

/* The row of run r at steady state st: id, source (already worded by the caller), the run's
 * configuration, metric and value, seq_per_s where it follows from the batch or the sequence
 * length, notes (the other figures' medians, the spread, what the log notes). */
void logrow_build(const log_run *r, const log_steady *st, const char *id, const char *source, logrow *row);
/* The columns published_load needs that the row leaves empty, as "device, devices" into buf ("":
 * none). */
void logrow_missing(const logrow *row, char *buf, size_t n);
/* The row checked by published_row_check (published.h), the loader's own rules, as line 2 of the
 * file `shown` (its line under the header): 0, or CB_EUSAGE after its error (naming `shown` and the
 * column) and a hint that it is the imported row (CB_EFAIL: the devices cannot be read). */
int logrow_check(const logrow *row, const char *shown);
/* `comments` (each written as "# ..."), the header and the row to f (CSV, quoted where needed). */
void logrow_print(const logrow *row, const char *const *comments, int ncomments, FILE *f);
/* --out: a new file gets the comments, the header and the row; an existing published-runs file
 * gets the row appended in its own column order, after checking that the id is new and that the row
 * is complete (an incomplete row may only start a new file: its comments say what it lacks). The
 * whole text is loaded back from memory through published_load_text (as `path`) before it is written
 * to a temporary file and renamed into place: a file it goes into stays readable, never
 * half-written. Returns 0, CB_EUSAGE (an incomplete row for an existing file, a row the loader
 * refuses, a duplicate id, a file of another schema: one error naming path:line; the file is
 * unchanged) or CB_EFAIL (cannot write). */
int logrow_save(const logrow *row, const char *const *comments, int ncomments, const char *path);

#endif
