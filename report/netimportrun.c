/* netimportrun.c: costbench import of a collective benchmark's output: each collective's table fitted
 * (report/formats/netfit.h) into a row of a network file, with `#` lines saying what it came from and
 * what the step model takes from it. */
#include "netimportrun.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../common/err.h"
#include "../common/files.h"
#include "../common/machine.h"
#include "formats/netfit.h"
#include "predict/stepmodel.h"

enum { NOTES_PER_RUN = 4, NOTE_LEN = 1024 };

/* The comment lines of the file being written. */
typedef struct {
    char text[1 + NET_NCOLL * NOTES_PER_RUN][NOTE_LEN];
    char *ptr[1 + NET_NCOLL * NOTES_PER_RUN];
    int n;
} net_notes;

static void note_add(net_notes *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_add(net_notes *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->text[c->n], NOTE_LEN, fmt, ap);
    va_end(ap);
    c->ptr[c->n] = c->text[c->n];
    c->n++;
}

/* --instance must name an instance of the hardware table (*per_node: its ranks, accelerators x
 * workers; 0 without --instance); --scope one of its two words. */
static int net_opts_check(const net_import_opts *o, int *per_node)
{
    *per_node = 0;
    if (o->scope && strcmp(o->scope, "intra") != 0 && strcmp(o->scope, "inter") != 0)
        return err_usage("flag '--scope': expected intra or inter, got '%s'", o->scope);
    if (!o->instance) return 0;
    hw_table ht;
    char def[CB_PATH_MAX];
    if (!o->hw_path && machine_data_file(def, sizeof def, "hardware.csv") != 0) return CB_EFAIL;
    if (hardware_load(&ht, o->hw_path ? o->hw_path : def) != 0) return CB_EUSAGE;
    const hw_row *hw = hardware_find(&ht, o->instance);
    int found = hw != NULL;
    if (hw) *per_node = hw->accelerators * (hw->workers > 0 ? hw->workers : 1);
    if (!found) err_usage("flag '--instance': unknown instance type '%s' (not in %s)", o->instance, ht.path);
    hardware_free(&ht);
    return found ? 0 : CB_EUSAGE;
}

/* The nodes of a run whose rank list is elided or absent: its ranks over the ranks a node of
 * --instance holds (per_node), checked against the hosts and ranks the lines that are there show. */
static int nodes_resolve(const net_import_opts *o, const text_lines *t, net_run *r, int per_node)
{
    if (r->nodes > 0) return 0;
    if (!per_node)
        return err_usage("%s: %d ranks, but the rank lines do not list them all (%d shown; %s): the number of nodes "
                         "is unknown; give --instance (the node type: its accelerators per node divide the ranks)",
                         t->path, r->ranks, r->ranks_seen, r->notes);
    int nodes = r->ranks <= per_node ? 1 : r->ranks / per_node;
    if (r->ranks > per_node && r->ranks % per_node != 0)
        return err_usage("flag '--instance': %s holds %d ranks a node, but %s has %d ranks: not a whole number of "
                         "nodes",
                         o->instance, per_node, t->path, r->ranks);
    if (r->hosts_seen > nodes)
        return err_usage("flag '--instance': %d ranks on nodes of %d (%s) make %d node%s, but the rank lines of %s "
                         "name %d hosts",
                         r->ranks, per_node, o->instance, nodes, nodes == 1 ? "" : "s", t->path, r->hosts_seen);
    r->nodes = nodes, r->inter = nodes > 1, r->nodes_given = 1;
    char note[160];
    snprintf(note, sizeof note, "%d node%s = %d ranks / %d a node of %s (--instance)", nodes, nodes == 1 ? "" : "s",
             r->ranks, per_node, o->instance);
    size_t len = strlen(r->notes);
    snprintf(r->notes + len, sizeof r->notes - len, "%s%s", len ? "; " : "", note);
    return 0;
}

/* --scope over what the hosts say. Across nodes on one host contradicts the rank lines (or the
 * costbench CSV, whose ranks all run on this machine): its node count would be made up. */
static int scope_apply(const net_import_opts *o, const text_lines *t, net_run *r)
{
    if (!o->scope) return 0;
    r->inter = strcmp(o->scope, "inter") == 0;
    if (r->inter && r->nodes <= 1)
        return err_usage("flag '--scope': inter, but the %d ranks of %s:%d-%d run on one host (%s): across nodes "
                         "needs ranks on several",
                         r->ranks, t->path, r->first_line, r->last_line,
                         strcmp(r->program, "costbench allreduce") == 0 ? "costbench allreduce runs on this machine"
                                                                         : "every rank line names the same host");
    return 0;
}

/* The run's row of the network file. */
static int row_make(const net_import_opts *o, const text_lines *t, const net_run *r, const net_fit *f, net_row *w)
{
    memset(w, 0, sizeof *w);
    const char *type = o->instance ? o->instance : r->device[0] ? r->device : "";
    if (!type[0] && strcmp(r->program, "costbench allreduce") == 0) type = CB_THIS_MACHINE;
    if (!type[0]) return err_usage("%s: the rank lines name no device: give --instance", t->path);
    snprintf(w->collective, sizeof w->collective, "%s", net_coll_names[r->coll]);
    snprintf(w->scope, sizeof w->scope, "%s", r->inter ? "inter" : "intra");
    snprintf(w->node_type, sizeof w->node_type, "%s", type);
    w->ranks = r->ranks, w->nodes = r->nodes, w->ranks_per_node = (r->ranks + r->nodes - 1) / r->nodes;
    w->latency_us = f->latency_us, w->busbw_gb_per_s = f->busbw_gb_per_s;
    w->busbw_max_gb_per_s = f->busbw_max_gb_per_s, w->sizes = f->sizes;
    w->min_bytes = f->min_bytes, w->max_bytes = f->max_bytes, w->r2 = f->r2;
    snprintf(w->source, sizeof w->source, "%.40s in %.250s:%d-%d", r->program, t->path, r->first_line, r->last_line);
    snprintf(w->as_of, sizeof w->as_of, "%s", r->as_of);
    return 0;
}

/* What the fit found and what the step model takes from it, as comment lines. */
static void notes_fit(net_notes *c, const net_run *r, const net_fit *f)
{
    const char *coll = net_coll_names[r->coll], *scope = r->inter ? "inter" : "intra";
    char lat[160];
    if (f->latency_rows)
        snprintf(lat, sizeof lat, "latency %.4g us (median over the %d latency-bound sizes up to %.0f bytes)%s",
                 f->latency_us, f->latency_rows, f->latency_max_bytes, f->clamped ? ", held at 0" : "");
    else
        snprintf(lat, sizeof lat, "latency not measured (no size near the table's shortest time spends under 10%% "
                                  "of it moving data): held at 0");
    note_add(c,
             "%s %s: time = %.4g us + bus bytes / %.4g GB/s over %d sizes %.0f .. %.0f bytes: busbw %.4g GB/s (median "
             "over the %d plateau sizes from %.0f bytes, within 5%% of the best), %s; R^2 %.6f, worst residual "
             "%.2f%%; largest size measured at %.4g GB/s",
             coll, scope, f->latency_us, f->busbw_gb_per_s, f->sizes, f->min_bytes, f->max_bytes, f->busbw_gb_per_s,
             f->plateau_rows, f->plateau_min_bytes, lat, f->r2, f->max_resid_pct, f->busbw_max_gb_per_s);
    if (isfinite(f->inplace_busbw_gb_per_s))
        note_add(c, "%s %s in-place (not used): %.4g us + bus bytes / %.4g GB/s", coll, scope, f->inplace_latency_us,
                 f->inplace_busbw_gb_per_s);
    if (r->coll != NET_ALL_REDUCE)
        note_add(c, "%s %s: recorded; --net-from takes the network from all_reduce rows only", coll, scope);
    else if (r->inter)
        note_add(c,
                 "the step model takes: net_gbit_per_s %.4g (busbw x 8, net_eff 1), latency %.4g us a hop (%.4g us / "
                 "min(2(k-1), 2 ceil(log2 k)) hops at k = %d nodes)",
                 f->busbw_gb_per_s * 8, netfit_hop_latency_us(f->latency_us, r->nodes), f->latency_us, r->nodes);
    else
        note_add(c,
                 "the step model takes: intra_gb_per_s %.4g (busbw / STEP_LINK_EFF %.2f); its device-link latency "
                 "stays %g us a hop (measured: %.4g us over 2(n-1) = %d hops)",
                 f->busbw_gb_per_s / STEP_LINK_EFF, STEP_LINK_EFF, STEP_LINK_LATENCY_US,
                 f->latency_us / (2.0 * (r->ranks - 1)), 2 * (r->ranks - 1));
}

/* Fits each run into its row and its comment lines. */
static int runs_fit(const net_import_opts *o, const text_lines *t, net_run *runs, int nruns, net_row *rows,
                    net_notes *c, int per_node)
{
    for (int i = 0; i < nruns; i++) {
        net_run *r = &runs[i];
        net_fit f;
        int rc = nodes_resolve(o, t, r, per_node);
        if (rc == 0) rc = scope_apply(o, t, r);
        if (rc == 0) rc = netfit_fit(r, t->path, &f);
        if (rc == 0) rc = row_make(o, t, r, &f, &rows[i]);
        if (rc != 0) return rc;
        note_add(c, "%s: %s (collective from %s), %d ranks on %d %s%s%s%s", t->path, r->program, r->coll_from,
                 r->ranks, r->nodes, r->nodes_given ? "node" : "host", r->nodes == 1 ? "" : "s", r->notes[0] ? "; " : "",
                 r->notes);
        notes_fit(c, r, &f);
    }
    return 0;
}

int import_network(const text_lines *t, const net_import_opts *op)
{
    const net_import_opts o = *op;
    int per_node, rc = net_opts_check(&o, &per_node);
    if (rc != 0) return rc;
    net_run runs[NET_NCOLL];
    int nruns = 0;
    if ((rc = netfit_parse(t, o.collective, runs, &nruns)) != 0) return rc;
    net_row rows[NET_NCOLL];
    static net_notes notes;
    notes.n = 0;
    note_add(&notes, "network file: collective benchmarks fitted by costbench import (report/formats/netfit.h)");
    rc = runs_fit(&o, t, runs, nruns, rows, &notes, per_node);
    for (int i = 0; i < nruns; i++) net_run_free(&runs[i]);
    if (rc != 0) return rc;
    if ((rc = net_table_write(o.out ? o.out : "-", notes.ptr, notes.n, rows, nruns)) != 0) return rc;
    if (o.out) {
        for (int i = 0; i < notes.n; i++) printf("# %s\n", notes.ptr[i]);
        fprintf(stderr, "wrote %s: %d row%s\n", o.out, nruns, nruns == 1 ? "" : "s");
    }
    return 0;
}
