/* record.h: one result table, two writers: an aligned human table on stdout (a units row,
 * '#' context lines above it) and CSV (--csv FILE: header once, %.9g, units in the column
 * names, empty cell for unknown, machine metadata columns on every row). */
#ifndef CB_RECORD_H
#define CB_RECORD_H

#include <stdio.h>

#include "files.h"
#include "machine.h"

typedef enum { REC_NUM, REC_STR } rec_kind;

typedef struct {
    const char *name; /* CSV column name, units in it (gflops_median, ns_per_token_median) */
    const char *unit; /* shown in the table's units row ("GFLOP/s"), "" if none */
    rec_kind kind;
    int prec;         /* decimals in the human table (numbers; record_num_text) */
} rec_col;

#define REC_MAX_NOTES 48

typedef struct {
    const rec_col *cols;
    int ncols, nrows, cap;
    double *num; /* (nrows, ncols), NaN when unset */
    char **str;  /* (nrows, ncols), NULL when unset */
    unsigned char csv_only[64]; /* columns left out of the human table (provenance, details) */
    char *notes[REC_MAX_NOTES];
    int nnotes;
} record;

int record_init(record *r, const rec_col *cols, int ncols);
void record_free(record *r);
/* Appends an empty row; returns its index or CB_EFAIL. */
int record_add_row(record *r);
void record_num(record *r, int row, int col, double v);
void record_str(record *r, int row, int col, const char *s);
/* A context line printed above the table as "# ...". */
void record_note(record *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Leaves column `col` out of the human table (it stays in the CSV). */
void record_csv_only(record *r, int col);
/* A number as the human table prints it: `prec` decimals, "-" when not finite; a nonzero number
 * that would print as zero gets two significant digits instead (0.0042, never 0). */
void record_num_text(double v, int prec, char *buf, size_t n);
void record_print(const record *r, FILE *f);
/* The same table printed as it grows (a training log): the notes, the header and the units row
 * now, then each row when it is complete. Column widths come from the names and units (at least
 * REC_STREAM_MIN_WIDTH), so that rows line up without knowing the values to come. */
#define REC_STREAM_MIN_WIDTH 8
void record_stream_header(const record *r, FILE *f);
void record_stream_row(const record *r, int row, FILE *f);
/* Writes the CSV atomically (or to stdout for "-"); metadata from m on every row (none when m is
 * NULL: rows that did not come from this machine). */
int record_write_csv(const record *r, const char *path, const machine_info *m);

/* A CSV log written as it grows (train --csv): the file is written from its first row on (a run
 * that fails before one leaves no new file), each row appended and flushed as it is added, so
 * that a killed run leaves the rows of what it finished. `path`'s
 * symbolic links are followed and a read-only or hard-linked file refused (common/files.h). */
typedef struct {
    FILE *f;                /* the file itself (no temporary), open from the first row; NULL before, after */
    char path[CB_PATH_MAX]; /* the file written: the one named, its symbolic links followed */
    const machine_info *m;
    int next;               /* the record's first row not yet written */
    int wanted, append;     /* opened (record_log_open) and not closed; appending to an existing file */
} record_log;

/* Opens the log of r's rows added from now on. keep < 0: a new run, the file (re)written from its
 * header at the first row. keep >= 0: a run resumed after step `keep` appends to an
 * existing file whose header is this log's and whose rows reach step `keep` (the first column);
 * its rows after `keep` (steps a killed run did after its last checkpoint) are dropped with a
 * note; one that does not reach `keep` is refused untouched (CB_EUSAGE). A missing file is
 * created. Returns 0, CB_EUSAGE or CB_EFAIL. */
int record_log_open(record_log *s, const record *r, const char *path, const machine_info *m, long keep);
/* Appends r's rows added since the last call and flushes them. Returns 0 or CB_EFAIL. */
int record_log_add(record_log *s, const record *r);
/* Flushes, fsyncs and closes (nothing when not open). Returns 0 or CB_EFAIL. */
int record_log_close(record_log *s);

#endif
