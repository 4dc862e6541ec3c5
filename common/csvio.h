/* csvio.h: the one CSV loader (libcsv, strict) and writer of the project.
 * Loader: a header row, then records; blank lines and lines starting with '#' are skipped; a
 * UTF-8 byte-order mark at the start is skipped; lines ending in CR alone are refused; every record
 * keeps its line number (the header too) so that errors read "file:line: column 'x': ...".
 * Writer: fields quoted where needed, numbers as %.9g, empty cell for unknown (NaN),
 * written to a temporary file and renamed into place only when complete. */
#ifndef CB_CSVIO_H
#define CB_CSVIO_H

#include <stdio.h>

#include "files.h"

typedef struct {
    char *path;
    int nrows, ncols;
    char **header; /* (ncols) */
    char **cells;  /* (nrows, ncols), each a private copy */
    int *lines;    /* (nrows) line number of each record */
    int header_line;
} table;

/* Loads `path`. Returns 0, or CB_EFAIL after printing "error: path:line: ...". */
int table_load(table *t, const char *path);
/* The same after skipping the first nskip records (a preamble before the header, as in the AWS
 * price list's offer files); their lines still count. */
int table_load_skip(table *t, const char *path, int nskip);
/* The same for text in memory (len bytes) named `name` in messages (the file it will become). */
int table_load_text(table *t, const char *name, const char *text, size_t len);
void table_free(table *t);
/* Column index of `name`, or -1 (and an error naming the file, the header's line and the column
 * when required). */
int table_col(const table *t, const char *name, int required);
const char *table_cell(const table *t, int row, int col);
/* Typed access with file:line errors. Empty cells are errors unless noted. */
int table_get_long(const table *t, int row, int col, long lo, long hi, long *out);
int table_get_double(const table *t, int row, int col, double lo, double hi, double *out);
/* true/false/1/0/yes/no */
int table_get_bool(const table *t, int row, int col, int *out);
/* Non-empty string; returns the cell (owned by the table). */
int table_get_str(const table *t, int row, int col, const char **out);
/* One of names[0..n), spelled exactly: its index into *out; anything else (an empty cell too) is
 * an error listing the accepted words. */
int table_get_word(const table *t, int row, int col, const char *const *names, int n, int *out);

typedef struct {
    FILE *f;
    file_out *out; /* the file replaced and its temporary (common/files.h); NULL for stdout */
    char *path, *tmp; /* out->path (the file named, its symbolic links followed) and out->tmp; NULL for stdout */
    int to_stdout;
    int nfield; /* fields written in the current row */
    int failed;
} csv_writer;

/* path "-" writes to stdout; any other file is replaced whole as common/files.h's file_out says
 * (its symbolic links followed, its mode kept, a read-only or hard-linked one refused, a killed
 * write's temporary removed). Returns 0 or CB_EFAIL (CB_EUSAGE: a path too long). */
int csvw_open(csv_writer *w, const char *path);
void csvw_str(csv_writer *w, const char *s);
void csvw_num(csv_writer *w, double v);  /* NaN -> empty cell */
void csvw_endrow(csv_writer *w);
/* Flushes, fsyncs and renames into place. Returns 0 or CB_EFAIL (the old file stays). */
int csvw_commit(csv_writer *w);
/* Drops the temporary file. */
void csvw_abort(csv_writer *w);

#endif
