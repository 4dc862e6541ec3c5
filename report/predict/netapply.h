/* netapply.h: `scale` and `plan --net-from FILE`: the all_reduce rows of a network file
 * (formats/netfit.h) set the network of the hardware rows the step model reads: across nodes the
 * bus bandwidth and the latency per hop, inside a node the device link (busbw / STEP_LINK_EFF). */
#ifndef CB_NETAPPLY_H
#define CB_NETAPPLY_H

#include <stddef.h>

#include "../formats/inputs.h"
#include "../formats/netfit.h"

/* What --net-from applied to one node type. */
typedef struct {
    const net_row *inter, *intra; /* the all_reduce rows used (NULL: none) */
    double table_gbit_per_s, table_intra_gb_per_s; /* the hardware table's figures they replaced */
    double link_eff; /* the device's link efficiency the intra row was divided by */
} net_applied;

/* Sets hw's network from t's all_reduce rows for hw->instance: an inter row its net_gbit_per_s
 * (busbw x 8) and net_latency_us (per hop), an intra row its intra_gb_per_s (busbw /
 * the device's link_eff, STEP_LINK_EFF where it gives none). Returns 1 when a row applied, 0 when t has none for that node type. */
int netfit_apply(const net_table *t, hw_row *hw, net_applied *a);
/* "network: measured (FILE:LINE, nccl-tests all_reduce_perf on 16 ranks over 2 nodes of X): ..."
 * for a note. */
void netfit_describe(const net_table *t, const net_applied *a, char *buf, size_t n);
/* The error for a node type t has no row for: names the file and the node types it has. Returns
 * CB_EUSAGE. */
int netfit_no_row(const net_table *t, const char *node_type);

#endif
