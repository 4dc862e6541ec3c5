/* costbench scale: seq/s, tokens/$ and efficiency across node counts from the step model of
 * report/scale.h, calibrated on measured points (--base-*, --measured) or the data-sheet peak. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"
#include "../common/machine.h"
#include "../common/opts.h"
#include "../common/parse.h"
#include "../common/record.h"
#include "../report/inputs.h"
#include "../report/plot.h"
#include "../report/scale.h"
#include "commands.h"

enum { SC_NODES, SC_SEQS, SC_TOKS, SC_TPU, SC_EFF, SC_MEAS, SC_ERR, SC_STEP, SC_COMP, SC_BUBBLE, SC_TPC, SC_DPC, SC_EXP,
       SC_OPT, SC_MFU, SC_MEM, SC_USD, SC_MODEL, SC_TP, SC_PP, SC_INST, SC_ITYPE, SC_SEQ, SC_GB, SC_MB, SC_SOURCE, SC_NCOLS };
static const rec_col scale_cols[SC_NCOLS] = {
    {"nodes", "", REC_NUM, 0},              {"seq_per_s", "seq/s", REC_NUM, 2},      {"tokens_per_s", "tok/s", REC_NUM, 0},
    {"tokens_per_usd", "tok/$", REC_NUM, 0}, {"efficiency", "", REC_NUM, 3},         {"measured_seq_per_s", "seq/s", REC_NUM, 2},
    {"error_pct", "%", REC_NUM, 1},         {"step_s", "s", REC_NUM, 3},             {"compute_s", "s", REC_NUM, 3},
    {"bubble_s", "s", REC_NUM, 3},          {"tp_comm_s", "s", REC_NUM, 3},          {"dp_comm_s", "s", REC_NUM, 3},
    {"exposed_comm_s", "s", REC_NUM, 3},    {"optimizer_s", "s", REC_NUM, 3},        {"mfu", "%", REC_NUM, 1},
    {"mem_per_rank_gib", "GiB", REC_NUM, 1}, {"usd_per_hour", "$/h", REC_NUM, 2},    {"model", "", REC_STR, 0},
    {"tensor_parallel", "", REC_NUM, 0},    {"pipeline_parallel", "", REC_NUM, 0},   {"instances", "", REC_NUM, 0},
    {"instance_type", "", REC_STR, 0},      {"seq_len", "", REC_NUM, 0},             {"global_batch", "seq", REC_NUM, 0},
    {"micro_batch", "seq", REC_NUM, 0},     {"source", "", REC_STR, 0},
};

typedef struct {
    long nodes[256];
    double seq_per_s[256];
    char where[256][64];
    int n;
} point_list;

/* Rows of a throughput file that describe the modelled configuration. */
static int points_from_file(const char *path, const scale_model *s, point_list *pl)
{
    tput_set set = {0};
    if (throughput_load(&set, path) != 0) return CB_EFAIL;
    int rc = 0;
    for (int i = 0; i < set.n; i++) {
        const tput_row *r = &set.rows[i];
        /* rows measured on this machine match its profile ("this machine (per rank)", from
         * costbench allreduce --profile): one rank is one node of the model */
        int here = machine_is_this_machine(s->hw.instance) && machine_is_this_machine(r->instance);
        if (strcmp(r->model, s->cfg.name) != 0 || r->tp != s->tp || r->pp != s->pp || r->seq_len != s->seq ||
            (strcmp(r->instance, s->hw.instance) != 0 && !here))
            continue;
        if (s->global_batch > 0 && r->global_batch != s->global_batch) continue;
        if (pl->n == 256) {
            rc = err_msg("%s: more than 256 matching rows", path);
            break;
        }
        pl->nodes[pl->n] = r->instances * r->ranks;
        pl->seq_per_s[pl->n] = r->seq_per_s;
        snprintf(pl->where[pl->n], sizeof pl->where[0], "%.40s:%d", path, r->line);
        pl->n++;
    }
    throughput_free(&set);
    if (rc == 0 && pl->n == 0)
        rc = err_usage("%s: no row matches %s, tp %d, pp %d, seq_len %ld, %s%s", path, s->cfg.name, s->tp, s->pp, s->seq,
                       s->hw.instance, s->global_batch > 0 ? " and the global batch" : "");
    return rc;
}

static int scale_plot(const char *path, const scale_model *s, const record *rec, const point_list *meas, const point_list *cmp)
{
    double xs[256], ys[256], ix[256], iy[256], mx[256], my[256], cx[256], cy[256];
    int n = rec->nrows;
    for (int i = 0; i < n; i++) {
        xs[i] = rec->num[(size_t)i * rec->ncols + SC_NODES];
        ys[i] = rec->num[(size_t)i * rec->ncols + SC_SEQS];
        ix[i] = xs[i], iy[i] = ys[0] * xs[i] / xs[0];
    }
    for (int i = 0; i < meas->n; i++) mx[i] = (double)meas->nodes[i], my[i] = meas->seq_per_s[i];
    for (int i = 0; i < cmp->n; i++) cx[i] = (double)cmp->nodes[i], cy[i] = cmp->seq_per_s[i];
    plot_series se[4];
    int ns = 0;
    char l_ideal[64];
    snprintf(l_ideal, sizeof l_ideal, "ideal (linear from %.0f)", xs[0]);
    se[ns++] = (plot_series){"predicted (model)", n, xs, ys, 0, 0, 1};
    se[ns++] = (plot_series){l_ideal, n, ix, iy, 0, 1, 7};
    if (meas->n) se[ns++] = (plot_series){"measured: fitted", meas->n, mx, my, 1, 0, 2};
    if (cmp->n) se[ns++] = (plot_series){"measured: not fitted", cmp->n, cx, cy, 1, 0, 3};
    char title[160], sub[256];
    snprintf(title, sizeof title, "%s on %s: throughput vs node count", s->cfg.name, s->hw.instance);
    snprintf(sub, sizeof sub, "TP %d, PP %d, seq %ld, %s %ld, %s precision, ZeRO %d", s->tp, s->pp, s->seq,
             s->global_batch > 0 ? "global batch" : "batch per replica", s->global_batch > 0 ? s->global_batch : s->batch_per_replica,
             scale_precision_names[s->precision], s->zero);
    plot_spec sp = {title, sub, "nodes (instances)", "throughput (seq/s)", 1, 1, se, ns, NAN, NULL, 0};
    return plot_lines(path, &sp);
}

int cmd_scale(int argc, char **argv)
{
    const char *model = NULL, *instance = NULL, *pricing = "on_demand", *region = NULL, *precision = "mixed";
    const char *measured = NULL, *compare = NULL, *csv = NULL, *plot = NULL, *prices_path = NULL, *hw_path = NULL, *fitl = NULL;
    long tp = 1, pp = 1, seq = 2048, gb = 0, bpd = 0, mb = 1, base_nodes = 0, zero = 0, interleave = 1;
    double base_sps = 0, usd = 0, mfu = 40, overlap = 0, bucket_mib = 25, latency_us = -1, net_eff = 1;
    int recompute = 0;
    opt_list nodes = {{1, 2, 4, 8, 16, 32, 64}, 7};
    const opt_spec specs[] = {
        {"model", OPT_STR, &model, 0, 0, 0, 0, "PRESET", "model preset of data/models.csv (required)"},
        {"instance", OPT_STR, &instance, 0, 0, 0, 0, "TYPE", "instance type of data/hardware.csv and data/prices.csv (required)"},
        {"tp", OPT_LONG, &tp, 1, 4096, 0, 0, "T", "tensor-parallel degree, inside a node (default 1)"},
        {"pp", OPT_LONG, &pp, 1, 4096, 0, 0, "P", "pipeline-parallel stages (default 1)"},
        {"interleave", OPT_LONG, &interleave, 1, 64, 0, 0, "V", "virtual stages per rank, interleaved 1F1B (default 1)"},
        {"seq", OPT_LONG, &seq, 1, 1 << 22, 0, 0, "S", "sequence length (default 2048)"},
        {"global-batch", OPT_LONG, &gb, 1, 1L << 30, 0, 0, "G", "strong scaling: sequences per step, fixed"},
        {"batch-per-device", OPT_LONG, &bpd, 1, 1L << 30, 0, 0, "B", "weak scaling: sequences per data-parallel replica, fixed"},
        {"micro-batch", OPT_LONG, &mb, 1, 1L << 20, 0, 0, "B", "sequences per micro-batch (default 1)"},
        {"nodes", OPT_LONG_LIST, &nodes, 1, 1000000, 0, 0, "LIST", "node counts to predict (default 1,2,4,...,64)"},
        {"base-nodes", OPT_LONG, &base_nodes, 1, 1000000, 0, 0, "N", "a measured point: node count ..."},
        {"base-seq-per-s", OPT_DOUBLE, &base_sps, 0, 0, 1e-9, 1e12, "S", "... and its throughput in seq/s"},
        {"measured", OPT_STR, &measured, 0, 0, 0, 0, "FILE", "throughput CSV: fit the model to its matching rows"},
        {"compare", OPT_STR, &compare, 0, 0, 0, 0, "FILE", "throughput CSV: show its matching rows and the error, not fitted"},
        {"fit", OPT_STR, &fitl, 0, 0, 0, 0, "LIST", "parameters to fit: compute,bandwidth,latency,overlap (default compute,bandwidth)"},
        {"mfu", OPT_DOUBLE, &mfu, 0, 0, 0.1, 100, "PCT", "without measured points: assumed MFU of the data-sheet peak (default 40)"},
        {"zero", OPT_LONG, &zero, 0, 3, 0, 0, "0-3", "ZeRO stage / FSDP sharding of optimizer state, gradients, weights (default 0)"},
        {"precision", OPT_STR, &precision, 0, 0, 0, 0, "fp32|mixed|bf16", "bytes per parameter and gradient (default mixed)"},
        {"recompute", OPT_FLAG, &recompute, 0, 0, 0, 0, NULL, "full activation recomputation (memory; 4/3 the FLOPs from peak)"},
        {"overlap", OPT_DOUBLE, &overlap, 0, 0, 0, 1, "F", "share of the last backward the all-reduce hides under (default 0)"},
        {"bucket-mib", OPT_DOUBLE, &bucket_mib, 0, 0, 0.001, 1e6, "MIB", "gradient bucket size, for the latency term (default 25)"},
        {"latency-us", OPT_DOUBLE, &latency_us, 0, 0, 0, 1e6, "US", "network latency per hop (default: data/hardware.csv, else 0)"},
        {"net-efficiency", OPT_DOUBLE, &net_eff, 0, 0, 0.001, 1, "F", "achieved share of the network line rate (default 1)"},
        {"pricing", OPT_STR, &pricing, 0, 0, 0, 0, "OPTION", "price of data/prices.csv: " PRICE_OPTIONS " (default on_demand)"},
        {"region", OPT_STR, &region, 0, 0, 0, 0, "REGION", "region of the price (default: the only one listed)"},
        {"usd-per-hour", OPT_DOUBLE, &usd, 0, 0, 1e-9, 1e9, "USD", "price per instance-hour instead of data/prices.csv"},
        {"prices", OPT_STR, &prices_path, 0, 0, 0, 0, "FILE", "price table (default data/prices.csv)"},
        {"hardware", OPT_STR, &hw_path, 0, 0, 0, 0, "FILE", "hardware table (default data/hardware.csv)"},
        {"csv", OPT_STR, &csv, 0, 0, 0, 0, "FILE", "write the table as CSV (a throughput file `costbench report` reads)"},
        {"plot", OPT_STR, &plot, 0, 0, 0, 0, "FILE.png", "throughput vs nodes: the model's curve, measured points, ideal line"},
        {0},
    };
    int rc = opts_parse("scale", "--model PRESET --instance TYPE [options]", specs, argc, argv, 2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    if (!model) return err_usage("flag '--model' is required (a preset of data/models.csv)");
    if (!instance) return err_usage("flag '--instance' is required (an instance type of data/hardware.csv)");
    if ((gb > 0) == (bpd > 0)) return err_usage("give exactly one of '--global-batch' (strong scaling) and '--batch-per-device' (weak)");
    if ((base_nodes > 0) != (base_sps > 0)) return err_usage("flags '--base-nodes' and '--base-seq-per-s' go together");
    if (!price_option_valid(pricing)) return err_usage("flag '--pricing': expected one of %s, got '%s'", PRICE_OPTIONS, pricing);
    if (plot && !strstr(plot, ".png") && !strstr(plot, ".svg"))
        return err_usage("flag '--plot': expected a file name ending in .png or .svg, got '%s'", plot);
    scale_model s;
    memset(&s, 0, sizeof s);
    int prec = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(precision, scale_precision_names[i]) == 0) prec = i;
    if (prec < 0) return err_usage("flag '--precision': expected fp32, mixed or bf16, got '%s'", precision);
    int want[SP_COUNT] = {1, 1, 0, 0};
    if (fitl) {
        char buf[256], *words[8];
        int nw = parse_word_list(fitl, "flag '--fit'", buf, sizeof buf, words, 8);
        if (nw < 0) return nw;
        memset(want, 0, sizeof want);
        for (int i = 0; i < nw; i++) {
            int k = -1;
            for (int j = 0; j < SP_COUNT; j++)
                if (strcmp(words[i], scale_param_names[j]) == 0) k = j;
            if (k < 0) return err_usage("flag '--fit': expected compute, bandwidth, latency or overlap, got '%s'", words[i]);
            want[k] = 1;
        }
        want[SP_COMPUTE] = 1;
    }
    if ((rc = model_preset_find(model, &s.cfg)) != 0) return rc;
    if (seq > s.cfg.max_T) return err_usage("flag '--seq': %s has max_seq_len %d, got %ld", model, s.cfg.max_T, seq);
    price_table pt;
    hw_table ht;
    if (data_tables_load(prices_path, hw_path, &pt, &ht) != 0) return CB_EFAIL;
    const hw_row *hw = hardware_find(&ht, instance);
    double price = usd;
    const price_row *pr = NULL;
    if (!hw) {
        rc = err_usage("flag '--instance': unknown instance type '%s' (not in %s)", instance, ht.path);
        goto out;
    }
    if (price <= 0) {
        if (!(pr = prices_find(&pt, instance, pricing, region))) {
            rc = CB_EUSAGE;
            goto out;
        }
        price = pr->usd_per_hour;
    }
    s.hw = *hw;
    s.tp = (int)tp, s.pp = (int)pp, s.interleave = (int)interleave;
    s.seq = seq, s.micro_batch = mb, s.global_batch = gb, s.batch_per_replica = bpd;
    s.zero = (int)zero, s.precision = (scale_precision)prec, s.recompute = recompute;
    s.bucket_bytes = bucket_mib * 1048576.0;
    s.net_eff = net_eff;
    s.latency_s = latency_us >= 0 ? latency_us * 1e-6 : isfinite(hw->net_latency_us) ? hw->net_latency_us * 1e-6 : 0;
    s.overlap = overlap;
    if (pp > s.cfg.L) {
        rc = err_usage("flag '--pp': %ld stages for %d layers", pp, s.cfg.L);
        goto out;
    }
    if (s.cfg.NH % tp != 0) {
        rc = err_usage("flag '--tp': %s has %d heads, not a multiple of %ld", model, s.cfg.NH, tp);
        goto out;
    }
    for (int i = 0; i < nodes.n && rc == 0; i++) rc = scale_check(&s, nodes.v[i], "--nodes");
    if (rc) goto out;

    /* calibration points */
    point_list meas = {0}, cmp = {0};
    if (base_nodes > 0) {
        if ((rc = scale_check(&s, base_nodes, "--base-nodes")) != 0) goto out;
        meas.nodes[0] = base_nodes, meas.seq_per_s[0] = base_sps;
        snprintf(meas.where[0], sizeof meas.where[0], "--base-nodes");
        meas.n = 1;
    }
    if (measured) {
        point_list more = {0};
        if ((rc = points_from_file(measured, &s, &more)) != 0) goto out;
        for (int i = 0; i < more.n && meas.n < 256; i++) {
            if ((rc = scale_check(&s, more.nodes[i], more.where[i])) != 0) goto out;
            meas.nodes[meas.n] = more.nodes[i], meas.seq_per_s[meas.n] = more.seq_per_s[i];
            memcpy(meas.where[meas.n], more.where[i], sizeof meas.where[0]);
            meas.n++;
        }
    }
    if (compare && (rc = points_from_file(compare, &s, &cmp)) != 0) goto out;

    record rec;
    if (record_init(&rec, scale_cols, SC_NCOLS) != 0) {
        rc = CB_EFAIL;
        goto out;
    }
    for (int c = SC_OPT; c < SC_NCOLS; c++)
        if (c != SC_MFU && c != SC_MEM && c != SC_USD) record_csv_only(&rec, c);
    char calib[512];
    scale_fit fit;
    memset(&fit, 0, sizeof fit);
    s.t_mb_s = scale_t_mb_from_peak(&s, mfu / 100.0);
    if (meas.n > 0) {
        if (!isfinite(s.t_mb_s)) s.t_mb_s = 1.0;
        if ((rc = scale_fit_points(&s, want, meas.nodes, meas.seq_per_s, meas.n, &fit)) != 0) goto out_rec;
        if (meas.n == 1)
            snprintf(calib, sizeof calib, "calibrated on 1 point (%ld nodes, %.4g seq/s)", meas.nodes[0], meas.seq_per_s[0]);
        else
            snprintf(calib, sizeof calib, "fitted to %d points (rms error %.1f%%)", meas.n, fit.rms_err_pct);
    } else {
        if (!isfinite(s.t_mb_s)) {
            rc = err_usage("%s: %s has no %s peak; give a measured point (--base-nodes/--base-seq-per-s or --measured)", ht.path,
                           instance, prec == PREC_FP32 ? "FP32" : "BF16");
            goto out_rec;
        }
        snprintf(calib, sizeof calib, "from the data-sheet peak at an assumed MFU of %.0f%%", mfu);
    }
    char source[640];
    snprintf(source, sizeof source, "predicted: costbench scale, %s; %s %g Gbit/s x %.2f, latency %.3g us, %s precision, ZeRO %d",
             calib, instance, hw->net_gbit_per_s, s.net_eff, s.latency_s * 1e6, scale_precision_names[prec], (int)zero);
    double eff0 = NAN;
    int over_mem = 0;
    for (int i = 0; i < nodes.n; i++) {
        scale_point p;
        scale_eval(&s, nodes.v[i], &p);
        int row = record_add_row(&rec);
        if (row < 0) {
            rc = CB_EFAIL;
            goto out_rec;
        }
        double usd_h = price * (double)nodes.v[i];
        if (i == 0) eff0 = p.seq_per_s / (double)nodes.v[i];
        record_num(&rec, row, SC_NODES, (double)nodes.v[i]);
        record_num(&rec, row, SC_SEQS, p.seq_per_s);
        record_num(&rec, row, SC_TOKS, p.tokens_per_s);
        record_num(&rec, row, SC_TPU, round(p.tokens_per_s * 3600.0 / usd_h)); /* whole tokens, as Table 1 */
        record_num(&rec, row, SC_EFF, p.seq_per_s / (double)nodes.v[i] / eff0);
        for (int j = 0; j < meas.n + cmp.n; j++) {
            const point_list *pl = j < meas.n ? &meas : &cmp;
            int jj = j < meas.n ? j : j - meas.n;
            if (pl->nodes[jj] != nodes.v[i]) continue;
            record_num(&rec, row, SC_MEAS, pl->seq_per_s[jj]);
            record_num(&rec, row, SC_ERR, 100.0 * (p.seq_per_s / pl->seq_per_s[jj] - 1.0));
        }
        record_num(&rec, row, SC_STEP, p.step_s);
        record_num(&rec, row, SC_COMP, p.compute_s);
        record_num(&rec, row, SC_BUBBLE, p.bubble_s);
        record_num(&rec, row, SC_TPC, p.tp_s);
        record_num(&rec, row, SC_DPC, p.dp_s);
        record_num(&rec, row, SC_EXP, p.exposed_s);
        record_num(&rec, row, SC_OPT, p.optimizer_s);
        record_num(&rec, row, SC_MFU, p.mfu_pct);
        record_num(&rec, row, SC_MEM, p.mem_gib);
        if (p.mem_gib > p.mem_avail_gib) over_mem = 1;
        record_num(&rec, row, SC_USD, usd_h);
        record_str(&rec, row, SC_MODEL, model);
        record_num(&rec, row, SC_TP, (double)tp);
        record_num(&rec, row, SC_PP, (double)pp);
        record_num(&rec, row, SC_INST, (double)nodes.v[i]);
        record_str(&rec, row, SC_ITYPE, instance);
        record_num(&rec, row, SC_SEQ, (double)seq);
        record_num(&rec, row, SC_GB, (double)p.global_batch);
        record_num(&rec, row, SC_MB, (double)mb);
        record_str(&rec, row, SC_SOURCE, source);
    }
    record_note(&rec, "%s, %s: TP %ld x PP %ld per replica, %d ranks per instance (%d %s x %d), %s",
                model, instance, tp, pp, hw->accelerators * hw->workers, hw->accelerators, hw->accelerator, hw->workers,
                gb > 0 ? "strong scaling (fixed global batch)" : "weak scaling (fixed batch per replica)");
    record_note(&rec, "prediction %s", calib);
    for (int k = 1; k < SP_COUNT; k++) {
        if (fit.fitted[k])
            record_note(&rec, "fitted %s: %.4g%s", k == SP_BANDWIDTH ? "network efficiency" : scale_param_names[k],
                        k == SP_LATENCY ? fit.value[k] * 1e6 : fit.value[k],
                        k == SP_LATENCY ? " us per hop" : k == SP_BANDWIDTH ? " of the line rate" : " of the last backward");
        else if (fit.undetermined[k])
            record_note(&rec, "%s not fitted: the points cannot determine it (kept at %.4g)", scale_param_names[k],
                        k == SP_LATENCY ? s.latency_s * 1e6 : k == SP_BANDWIDTH ? s.net_eff : s.overlap);
    }
    record_note(&rec, "compute %.4g s per micro-batch per stage (%s)", s.t_mb_s,
                meas.n ? "fitted" : "data-sheet peak x assumed MFU");
    if (!isfinite(hw->intra_gb_per_s) && (tp > 1 || hw->accelerators * hw->workers > tp * pp))
        record_note(&rec, "%s: device-link bandwidth unknown: TP and intra-node gradient traffic not modelled%s", instance,
                    meas.n ? " (the fitted compute time includes the TP traffic)" : "");
    if (s.latency_s == 0) record_note(&rec, "network latency unknown: not modelled (give --latency-us)");
    if (pr) record_note(&rec, "price %s %s $%.4g per instance-hour (%s, %s)", instance, pricing, price, pr->as_of, pr->source);
    else record_note(&rec, "price $%.4g per instance-hour (--usd-per-hour)", price);
    if (over_mem)
        record_note(&rec, "warning: the memory estimate exceeds %.1f GiB per rank at some node counts; real runs need --recompute, --zero or more TP/PP",
                    hw->mem_gib / hw->workers);
    record_note(&rec, "efficiency: seq/s per node against the first node count listed; every figure here is predicted");
    record_print(&rec, stdout);
    machine_info mi;
    machine_probe(&mi);
    if (csv && (rc = record_write_csv(&rec, csv, &mi)) != 0) goto out_rec;
    if (plot) {
        if ((rc = scale_plot(plot, &s, &rec, &meas, &cmp)) != 0) goto out_rec;
        fprintf(stderr, "wrote %s\n", plot);
    }
out_rec:
    record_free(&rec);
out:
    prices_free(&pt);
    hardware_free(&ht);
    return rc;
}
