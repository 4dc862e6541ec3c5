/* netapply.c: --net-from: a network file's measured all_reduce rows in place of the hardware
 * table's network (see netapply.h). */
#include "netapply.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/files.h"
#include "stepmodel.h"

/* t's all_reduce row of `scope` for node_type; of several (other rank counts), the one of the
 * most ranks: the closest to a training job's size. */
static const net_row *row_pick(const net_table *t, const char *node_type, const char *scope)
{
    const net_row *best = NULL;
    for (int i = 0; i < t->n; i++) {
        const net_row *r = &t->rows[i];
        if (strcmp(r->collective, "all_reduce") == 0 && strcmp(r->scope, scope) == 0 &&
            strcmp(r->node_type, node_type) == 0 && (!best || r->ranks > best->ranks))
            best = r;
    }
    return best;
}

int netfit_apply(const net_table *t, hw_row *hw, net_applied *a)
{
    memset(a, 0, sizeof *a);
    a->inter = row_pick(t, hw->instance, "inter"), a->intra = row_pick(t, hw->instance, "intra");
    a->table_gbit_per_s = hw->net_gbit_per_s, a->table_intra_gb_per_s = hw->intra_gb_per_s;
    if (a->inter) {
        hw->net_gbit_per_s = a->inter->busbw_gb_per_s * 8.0;
        hw->net_latency_us = netfit_hop_latency_us(a->inter->latency_us, a->inter->nodes);
        hw->net_source[0] = '\0'; /* the file's measurement replaces the table's */
    }
    a->link_eff = step_link_eff(hw);
    if (a->intra) hw->intra_gb_per_s = a->intra->busbw_gb_per_s / a->link_eff; /* the model's link x eff = busbw */
    return a->inter || a->intra;
}

/* "FILE:LINE, nccl-tests all_reduce_perf on 16 ranks over 2 nodes of X" (the program: the
 * source's words before " in "). */
static void row_where(const net_table *t, const net_row *r, char *buf, size_t n)
{
    const char *in = strstr(r->source, " in ");
    int plen = in ? (int)(in - r->source) : (int)strlen(r->source);
    snprintf(buf, n, "%s:%d, %.*s on %d ranks over %d node%s of %s", t->path, r->line, plen, r->source, r->ranks,
             r->nodes, r->nodes == 1 ? "" : "s", r->node_type);
}

/* "400 Gbit/s", or "unknown figure" for NaN. */
static const char *figure(double v, const char *unit, char *buf, size_t n)
{
    if (isfinite(v)) snprintf(buf, n, "%.4g %s", v, unit);
    else snprintf(buf, n, "unknown figure");
    return buf;
}

void netfit_describe(const net_table *t, const net_applied *a, char *buf, size_t n)
{
    char where[CB_WHERE_MAX + 512], was[64];
    size_t len = 0;
    buf[0] = '\0';
    if (a->inter) {
        row_where(t, a->inter, where, sizeof where);
        len += (size_t)snprintf(buf, n,
                                "network: measured (%s): %.4g GB/s bus bandwidth, %.4g us latency (%.4g us a hop), "
                                "in place of the hardware table's %s",
                                where, a->inter->busbw_gb_per_s, a->inter->latency_us,
                                netfit_hop_latency_us(a->inter->latency_us, a->inter->nodes),
                                figure(a->table_gbit_per_s, "Gbit/s", was, sizeof was));
    }
    if (a->intra && len < n) {
        row_where(t, a->intra, where, sizeof where);
        snprintf(buf + len, n - len,
                 "%sdevice link: measured (%s): %.4g GB/s bus bandwidth, a link of %.4g GB/s (busbw / %.2f), in "
                 "place of the hardware table's %s",
                 len ? "; " : "", where, a->intra->busbw_gb_per_s, a->intra->busbw_gb_per_s / a->link_eff,
                 a->link_eff, figure(a->table_intra_gb_per_s, "GB/s", was, sizeof was));
    }
}

int netfit_no_row(const net_table *t, const char *node_type)
{
    char types[1024] = "";
    size_t len = 0;
    for (int i = 0; i < t->n && len < sizeof types; i++) {
        int seen = 0;
        for (int k = 0; k < i && !seen; k++) seen = strcmp(t->rows[k].node_type, t->rows[i].node_type) == 0;
        if (!seen)
            len += (size_t)snprintf(types + len, sizeof types - len, "%s%s", len ? ", " : "", t->rows[i].node_type);
    }
    return err_usage("%s: no all_reduce row for node type '%s' (it has: %s)", t->path, node_type,
                     t->n ? types : "no rows");
}
