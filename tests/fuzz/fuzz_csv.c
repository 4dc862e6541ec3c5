/* fuzz_csv.c: libFuzzer harness of the CSV loader (common/csvio.c, libcsv in strict mode).
 *
 * Each input is written to a scratch file and loaded with table_load(); a table that loads is
 * then read back through every accessor: table_col() on each header name and on a missing
 * one, and on every cell table_get_long(), table_get_double() (three ranges), table_get_bool()
 * and table_get_str(), then table_free(). Rejected inputs print one "error:" line each, so run
 * with -close_fd_mask=2. Besides the sanitizers, the harness aborts when a loaded table breaks
 * what csvio.h promises: named, distinct columns, and record line numbers that never go back.
 *
 *   make fuzz / make fuzz-explore    every harness (see Makefile)
 *   build-fuzz/fuzz_csv -close_fd_mask=2 -max_len=8192 DIR   fuzz with corpus DIR
 *   build-fuzz/fuzz_csv FILE         replay one input (a crash reproducer), errors shown
 *
 * Seeds: tests/fuzz/corpus/csv/ (written by tests/fuzz/gen_corpus.c). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/csvio.h"
#include "fuzz_io.h"

static int csv_file = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init(*argc, *argv);
    csv_file = fuzz_tmp_new("csv");
    return 0;
}

static __attribute__((noreturn)) void broken(const table *t, const char *what)
{
    fuzz_fail("table_load accepted '%s' (%d columns, %d records) but %s", t->path, t->ncols, t->nrows, what);
}

static void check_header(const table *t)
{
    if (t->ncols < 1 || t->nrows < 0) broken(t, "the table has no columns");
    for (int c = 0; c < t->ncols; c++) {
        if (t->header[c][0] == '\0') broken(t, "a column has no name");
        if (table_col(t, t->header[c], 1) != c) broken(t, "a column name appears twice");
    }
    (void)table_col(t, "costbench-fuzz: no such column", 0);
    (void)table_col(t, "", 1);
}

static void read_cells(const table *t)
{
    static const double ranges[][2] = {{-DBL_MAX, DBL_MAX}, {0, 1}, {-INFINITY, INFINITY}};
    volatile double sink = 0;
    for (int r = 0; r < t->nrows; r++) {
        if (t->lines[r] < 1 || (r > 0 && t->lines[r] < t->lines[r - 1])) broken(t, "record line numbers go back");
        for (int c = 0; c < t->ncols; c++) {
            if (!table_cell(t, r, c)) broken(t, "a cell is NULL");
            long l;
            if (table_get_long(t, r, c, LONG_MIN, LONG_MAX, &l) == 0) sink += (double)l;
            if (table_get_long(t, r, c, 0, 100, &l) == 0) sink += (double)l;
            for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++) {
                double v;
                if (table_get_double(t, r, c, ranges[k][0], ranges[k][1], &v) == 0) sink += v;
            }
            int b;
            if (table_get_bool(t, r, c, &b) == 0) sink += b;
            const char *s;
            if (table_get_str(t, r, c, &s) == 0) sink += (double)strlen(s);
        }
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_tmp_write(csv_file, data, size);
    table t;
    if (table_load(&t, fuzz_tmp_path(csv_file)) == 0) {
        check_header(&t);
        read_cells(&t);
        table_free(&t);
        table_free(NULL);
    }
    fuzz_input_done();
    return 0;
}
