/* common/csvio.c built a second time on csvmini.h (as `make gpu` builds it) under other names, so
 * that tests/test_gpu.c feeds the same text to both parsers in one binary. */
#define CB_NO_LIBCSV
#define csvw_abort mini_csvw_abort
#define csvw_commit mini_csvw_commit
#define csvw_endrow mini_csvw_endrow
#define csvw_num mini_csvw_num
#define csvw_open mini_csvw_open
#define csvw_str mini_csvw_str
#define table_cell mini_table_cell
#define table_col mini_table_col
#define table_free mini_table_free
#define table_get_bool mini_table_get_bool
#define table_get_double mini_table_get_double
#define table_get_long mini_table_get_long
#define table_get_str mini_table_get_str
#define table_get_word mini_table_get_word
#define table_load mini_table_load
#define table_load_skip mini_table_load_skip
#define table_load_text mini_table_load_text
#include "../common/csvio.c"

#include "check.h"

int csvmini_rows(const char *text, char *out, size_t n);

/* "[h1][h2]|[a][b]|..." of what csvio.c on csvmini.h reads; non-zero when it refuses the text. */
int csvmini_rows(const char *text, char *out, size_t n)
{
    table t;
    capture_stderr_begin();
    int rc = table_load_text(&t, "in.csv", text, strlen(text));
    capture_stderr_end();
    if (rc != 0) return rc;
    size_t k = 0;
    out[0] = '\0';
    for (int c = 0; c < t.ncols && k < n; c++) k += (size_t)snprintf(out + k, n - k, "[%s]", t.header[c]);
    if (k < n) k += (size_t)snprintf(out + k, n - k, "|");
    for (int r = 0; r < t.nrows && k < n; r++) {
        for (int c = 0; c < t.ncols && k < n; c++) k += (size_t)snprintf(out + k, n - k, "[%s]", table_cell(&t, r, c));
        if (k < n) k += (size_t)snprintf(out + k, n - k, "|");
    }
    table_free(&t);
    return 0;
}
