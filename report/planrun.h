/* planrun.h: one `costbench plan` run: the flags' inputs (model, instances and their prices, the
 * calibration, the framework), the search (report/predict/plan.h), and the record of its ranking (rows,
 * notes, the Pareto frontier, the plot). src/cmd_plan.c parses the flags and prints what this
 * builds. */
#ifndef CB_PLANRUN_H
#define CB_PLANRUN_H

#include "../common/machine.h"
#include "../common/modelflags.h"
#include "../common/record.h"
#include "predict/calib_row.h"
#include "formats/devices.h"
#include "formats/gemmcurve.h"
#include "predict/fweff.h"
#include "formats/inputs.h"
#include "formats/netfit.h"
#include "predict/netapply.h"
#include "predict/plan.h"
#include "predict/stepmodel.h"

#define PLAN_DEFAULT_BATCH_TOKENS 4194304L /* 4M tokens a step (llama2: 1024 x 4096) */
#define PLAN_MAX_TOKENS 1e16

/* The human table shows the columns before PC_TRAIN_S and PC_WHY (PC_BAND_TEXT without a
 * calibration, in place of band_pct); the CSV all of them. */
enum { PC_RANK, PC_ITYPE, PC_PROVIDER, PC_PRICING, PC_NODES, PC_TP, PC_PP, PC_VP, PC_SP, PC_ZERO, PC_MB, PC_RECOMP,
       PC_PREC, PC_DAYS, PC_COST, PC_BAND, PC_TPU, PC_SEQS, PC_MFU, PC_MEM, PC_TAU, PC_LOST, PC_USD, PC_EXTRAP,
       PC_PRICE_AGE, PC_PRICE_SOURCE, PC_TRAIN_S, PC_TOKS, PC_STEP, PC_MEM_AVAIL, PC_MODEL, PC_SEQ, PC_GB, PC_COMPUTE,
       PC_FRAMEWORK, PC_ATTN, PC_BAND_TEXT, PC_WHY, PC_NCOLS };
extern const rec_col plan_cols[PC_NCOLS];

/* The flags as given (strings point into argv). */
typedef struct {
    const char *model, *tokens, *instances, *pricing, *csv, *pareto_csv, *plot, *prices_path, *hw_path, *calibrate,
        *matmul_csv, *attention, *framework;
    const char *gemm; /* --gemm measured|cited (NULL: measured) */
    const char *price_warnings; /* --price-warnings: "one" (NULL: the default) or "all" */
    const char *net_from; /* --net-from: a measured network (report/formats/netfit.h, applied by report/predict/netapply.h) */
    model_flags mf; /* --models, the model overrides, --max-seq-len */
    long seq, global_batch, max_nodes;
    long top;          /* --top: rows shown (0: not given: every type's best, or 10 with --all) */
    long runners_up;   /* --runners-up: the next N layouts of each instance type and offer */
    int per_instance;  /* --per-instance: the best configuration of each instance type and pricing option (the
                        * default unless --all or --top) */
    int all;           /* --all: rank every layout (report/planview.h) */
    double deadline_days, budget_usd, mfu_pct, mtbf_hours, ckpt_s, restart_s;
} plan_opts;

/* One run: the flags, the tables (owned), the search's inputs and result. */
typedef struct {
    plan_opts o;
    price_table pt;
    hw_table ht;
    dev_table dt;      /* data/devices.csv: what each instance's device trains in */
    plan_inputs in;
    plan_result res;
    calib_row cal;       /* --calibrate */
    const step_framework *fw; /* --framework */
    fweff_entry fweff;        /* without --calibrate and --mfu: the framework's default efficiency (in.phi) */
    scale_eff_curve eff; /* --matmul-csv of a CPU (nk 0: the default curve) */
    gemm_curves gemm;    /* the measured device curves (formats/gemmcurve.h; n 0: none, or --gemm cited) */
    char skipped[512]; /* (instance, option) pairs without a price */
    net_table net;     /* --net-from (n 0: none) */
    net_applied *net_used; /* what it set for each row of the hardware table (ht.n; NULL: none) */
} plan_run;

/* The search's inputs from the flags and the tables. Returns 0, CB_EUSAGE or CB_EFAIL. */
int plan_run_build(plan_run *r);
/* What the search could not do (every layout lost to failures: an error; a calibration carried
 * above the peak at some layouts: a warning). Returns 0 or CB_EUSAGE. */
int plan_run_check(const plan_run *r);
/* The ranking's record (human: the table's columns; else the CSV's), its notes and rows; *hidden
 * the layouts that tie with a row shown. Returns 0 or CB_EFAIL. */
int plan_run_record(const plan_run *r, record *rec, int human, long *hidden);
/* Why nothing qualified (no table): printed after the notes. */
void plan_run_verdict(const plan_run *r);
/* The Pareto frontier's CSV, and the cost/time plot. */
int plan_run_pareto_csv(const plan_run *r, const int *idx, int n, const machine_info *mi);
int plan_run_plot(const plan_run *r, const int *idx, int n);
void plan_run_free(plan_run *r);

#endif
