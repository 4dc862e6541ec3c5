/* netfile.h: the network file (`costbench import` of a collective benchmark writes it, scale and
 * plan read it with --net-from): its rows, their rules, its loader and its writer. What the figures
 * mean and how the step model takes them: netfit.h. */
#ifndef CB_NETFILE_H
#define CB_NETFILE_H

#include <stddef.h>

/* One row of a network file. */
typedef struct {
    char collective[24], scope[8], node_type[96], source[320], as_of[24];
    int ranks, nodes, ranks_per_node, sizes;
    double latency_us, busbw_gb_per_s, busbw_max_gb_per_s, min_bytes, max_bytes, r2;
    int line;
} net_row;

enum { NETFILE_NCOLS = 15 };
extern const char *const netfile_cols[NETFILE_NCOLS];

/* What a network row may hold: a bus bandwidth from 0.01 GB/s (80 Mbit/s) to 10 TB/s and a
 * latency up to 0.1 s; no collective benchmark measures a network outside them. */
#define NETFILE_MIN_BUSBW_GB_PER_S 0.01
#define NETFILE_MAX_BUSBW_GB_PER_S 1e4
#define NETFILE_MAX_LATENCY_US 1e5

/* The loader's rules for one row (every number in its column's range; as_of a date YYYY-MM-DD;
 * ranks = nodes x ranks_per_node; scope inter on 2 nodes at least; min_bytes <= max_bytes): the
 * writer checks each new row with it, so a row written is one the loader reads. Returns 0, or -1
 * with why ("column 'X': ..."). */
int net_row_check(const net_row *r, char *why, size_t n);

typedef struct {
    char path[4096];
    net_row *rows;
    int n;
} net_table;

/* Loads a network file (every cell checked, each row by net_row_check's rules; two rows of the
 * same collective, scope, node type and ranks, or a file with another header: one error naming
 * it). Returns 0 or CB_EUSAGE. */
int net_table_load(net_table *t, const char *path);
void net_table_free(net_table *t);

/* Writes rows (with the `#` comment lines, each without its "# ") to path ("-": stdout), each
 * row checked by net_row_check first (an error naming its source; nothing written). An existing
 * path must be a network file: the rows are appended after its own, unless one has the same
 * collective, scope, node type and ranks (an error naming both; nothing written). Returns 0 or
 * CB_EUSAGE / CB_EFAIL. */
int net_table_write(const char *path, char *const *comments, int ncomments, const net_row *rows, int nrows);

#endif
