/* scalerun.h: one `costbench scale` run: the flags' model on its instance, its calibration
 * (measured points, a carried row, or the assumed MFU), and the record of its predictions (rows
 * and notes). src/cmd_scale.c parses the flags into scale_opts and prints what this builds.
 * Flags -> scale_opts -> scale_model -> calibration points -> calibration, verified against its
 * own points (--fit-tolerance) -> record (rows, notes). */
#ifndef CB_SCALERUN_H
#define CB_SCALERUN_H

#include "../common/modelflags.h"
#include "../common/opts.h"
#include "../common/record.h"
#include "predict/calib_row.h"
#include "formats/gemmcurve.h"
#include "formats/inputs.h"
#include "predict/scale.h"

enum { SC_NODES, SC_SEQS, SC_TOKS, SC_TPU, SC_EFF, SC_MEAS, SC_ERR, SC_STEP, SC_COMP, SC_BUBBLE, SC_TPC, SC_DPC, SC_EXP,
       SC_OPT, SC_MFU, SC_MEM, SC_USD, SC_MODEL, SC_TP, SC_PP, SC_INST, SC_ITYPE, SC_SEQ, SC_GB, SC_MB, SC_SOURCE,
       SC_RECOMP, SC_SHARD, SC_VP, SC_SEQ_PAR, SC_ATTN, SC_NCOLS };
/* The rows are throughput rows (common/schema.h), so that report and scale --measured read them,
 * with the model's terms beside them. */
extern const rec_col scale_cols[SC_NCOLS];

/* The flags as given (strings point into argv), and what scale_opts_check derives from them. */
typedef struct {
    const char *model, *instance, *pricing, *region, *precision, *measured, *compare, *csv, *plot, *prices_path,
        *hw_path, *fit_list, *calibrate, *matmul_csv;
    const char *gemm; /* --gemm measured|cited (NULL: measured) */
    long tp, pp, seq, global_batch, batch_per_device, micro_batch, base_nodes, zero, interleave;
    model_flags mf; /* --models, the model overrides, --max-seq-len */
    double base_seq_per_s, usd_per_hour, mfu_pct, overlap, bucket_mib, latency_us, net_eff, fit_tol_pct, net_gbps,
        intra_gbps;
    int recompute;
    const char *attention; /* full | flash */
    const char *framework; /* --framework: its attention kernel and overlaps (report/predict/stepmodel.h) */
    int mfu_assumed;       /* 1: --mfu not given (mfu_pct holds SCALE_ASSUMED_MFU_PCT): without --calibrate or measured
                              points the compute comes from the device model x the framework's default phi
                              (report/predict/fweff.h), mfu_pct only when that has no device time */
    const char *net_from;  /* --net-from: a measured network (report/formats/netfit.h, applied by report/predict/netapply.h) */
    int selective;         /* --selective-recompute */
    opt_list nodes;
    opt_list gbs;         /* --global-batch: one value, or one per node count */
    train_precision prec; /* from --precision */
    int want[SP_COUNT];   /* from --fit */
} scale_opts;

/* One run: the flags, the tables (owned), the model, its points and its calibration. */
typedef struct {
    scale_opts o;
    price_table pt;
    hw_table ht;
    const hw_row *hw;    /* a row of ht */
    const price_row *pr; /* a row of pt; NULL with --usd-per-hour */
    double usd_per_hour; /* per instance */
    scale_model s;
    scale_points meas;   /* calibration points: --base-*, --measured */
    scale_points cmp;    /* --compare: shown beside the prediction, not fitted */
    scale_fit fit;
    char calib[512];     /* how the compute time was obtained (notes, source column) */
    double band_pct;     /* uncalibrated with the framework's default phi: its spread (fweff.h); 0 else */
    /* --calibrate: the row's own configuration, its point and what carries to the target */
    calib_row cr;
    scale_eff_curve eff; /* --matmul-csv of a CPU (nk 0: the default curve) */
    gemm_curves gemm;    /* the measured device curves (formats/gemmcurve.h; n 0: none, or --gemm cited) */
    double mfu_cal, mfu_tgt, e_cal, e_tgt;
    double hfu_tgt; /* the compute efficiency carried, in hardware FLOPs (mfu_tgt in model FLOPs) */
    int eff_clamped;
    char net_note[2048]; /* --net-from: what the measured network replaced ("" without it) */
    char attn_note[640]; /* the attention kernel the framework runs on the device (attnpick.h; "": its own) */
} scale_run;

/* Loads the tables, builds the model, gathers the points and calibrates. Returns 0, CB_EUSAGE or
 * CB_EFAIL (one error printed). */
int scale_run_prepare(scale_run *r);
/* The predictions at every --nodes count and the notes into rec (initialised here). Returns 0 or
 * CB_EFAIL. */
int scale_run_record(const scale_run *r, record *rec);
/* --plot of the record. */
int scale_run_plot(const scale_run *r, const record *rec);
void scale_run_free(scale_run *r);

#endif
