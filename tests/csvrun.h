/* csvrun.h: a command's --csv table read back, and its cells by column name (tests/util.c). */
#ifndef CB_TESTS_CSVRUN_H
#define CB_TESTS_CSVRUN_H

#include "../common/csvio.h"

/* Runs the command args with `--csv path` added (out, err: its captured output), then loads path
 * into t. 0, or -1 after a failed check (the command failed or its CSV does not load). */
int test_cmd_csv(const char *const *args, const char *path, char *out, size_t on, char *err, size_t en, table *t);
/* The cell of row i in column `name` ("" when the column is missing, after a failed check). */
const char *test_cell(const table *t, int i, const char *name);
double test_num(const table *t, int i, const char *name);

#endif
