/* cliflags.h: the flags several commands share, each defined once: its name, range, metavar and
 * help, as an opt_spec fragment spliced into a command's `const opt_spec specs[]`, with the one
 * function that checks its value. What legitimately differs between commands (a default: train's
 * 512 tokens, scale's 2048, plan's the model's max_seq_len) is a parameter of the fragment, a
 * string literal spliced into the help, never a copy of the spec.
 *
 *   --micro-batch  1 .. CB_MAX_GLOBAL_BATCH sequences (a micro-batch is at most a global batch)
 *   --seq          1 .. CB_MAX_SEQ_LEN tokens (the model's max_seq_len checked by the command)
 *   --precision    a name of common/precision.h (precision_parse_flag)
 *   --attention    full | flash; default the --framework's kernel (attention_flag_parse)
 *   --prices, --hardware, --region   the price and hardware tables (report/formats/inputs.h)
 *   --calibrate, --matmul-csv, --mfu, --framework   what a prediction (scale, plan) is calibrated on
 *   --fit-tolerance, --net-gbps, --intra-gbps, --latency-us, --bucket-mib   a prediction's fit and network
 *   --net-from     a measured network (report/formats/netfit.h's network file) in place of the hardware table's */
#ifndef CB_CLIFLAGS_H
#define CB_CLIFLAGS_H

#include "opts.h"
#include "precision.h"
#include "schema.h"

/* --micro-batch (dst: long *; dflt: the default's text). */
#define MICRO_BATCH_FLAG_SPEC(dst, dflt)                                                                 \
    {"micro-batch", OPT_LONG, (dst), 1, CB_MAX_GLOBAL_BATCH, 0, 0, "B",                                  \
     "sequences per micro-batch (default " dflt ")"}
/* --seq (dst: long *; dflt: the default's text). */
#define SEQ_FLAG_SPEC(dst, dflt)                                                                         \
    {"seq", OPT_LONG, (dst), 1, CB_MAX_SEQ_LEN, 0, 0, "T", "sequence length in tokens (default " dflt ")"}
/* Both: the shape of a micro-batch. */
#define SHAPE_FLAG_SPECS(mb_dst, mb_dflt, seq_dst, seq_dflt)                                             \
    MICRO_BATCH_FLAG_SPEC(mb_dst, mb_dflt), SEQ_FLAG_SPEC(seq_dst, seq_dflt)

/* --precision (dst: const char **, parsed by precision_parse_flag("--precision", ...); dflt: the
 * default's name). */
#define PRECISION_FLAG_SPEC(dst, dflt)                                                                   \
    {"precision", OPT_STR, (dst), 0, 0, 0, 0, "NAME",                                                    \
     "fp32; bf16-mixed (fp32 master weights, gradients and AdamW moments, bf16 matmul inputs, fp32 "     \
     "accumulation); bf16-sr (full bf16 as Trainium trains: bf16 weights, gradients and moments, each "  \
     "update written back with stochastic rounding); bf16-nearest (full bf16, updates rounded to "       \
     "nearest); aliases bf16 = bf16-sr, mixed = bf16-mixed (default " dflt ")"}

/* --attention (dst: const char **; NULL: the --framework's kernel), parsed by attention_flag_parse. */
#define ATTENTION_FLAG_SPEC(dst)                                                                         \
    {"attention", OPT_STR, (dst), 0, 0, 0, 0, "full|flash",                                              \
     "attention kernel: flash (tiled: causal FLOPs, no s x s scores kept) or full (the scores "          \
     "materialised, Korthikanti et al.); default the --framework's kernel (flash for plain)"}
/* *flash from --attention's value s: 1 for flash, 0 for full, framework_flash when s is NULL.
 * Returns 0, or CB_EUSAGE after one line naming the flag. */
int attention_flag_parse(const char *s, int framework_flash, int *flash);

/* The tables prices and instances are read from (dst: const char **; NULL: the default file). */
#define PRICES_FLAG_SPEC(dst)                                                                            \
    {"prices", OPT_STR, (dst), 0, 0, 0, 0, "FILE", "price table (default data/prices.csv)"}
#define HARDWARE_FLAG_SPEC(dst)                                                                          \
    {"hardware", OPT_STR, (dst), 0, 0, 0, 0, "FILE", "hardware table (default data/hardware.csv)"}
#define PRICING_FLAG_SPECS(prices_dst, hw_dst) PRICES_FLAG_SPEC(prices_dst), HARDWARE_FLAG_SPEC(hw_dst)
/* --region (dst: const char **). */
#define REGION_FLAG_SPEC(dst)                                                                            \
    {"region", OPT_STR, (dst), 0, 0, 0, 0, "REGION", "region of the prices (default: the only one listed)"}

/* --matmul-csv FILE (dst: const char **): the GEMM efficiency curve a calibration carries. */
#define MATMUL_CSV_FLAG_SPEC(dst)                                                                        \
    {"matmul-csv", OPT_STR, (dst), 0, 0, 0, 0, "FILE",                                                   \
     "a costbench-gpu matmul CSV: its device's measured GEMM curve (no --calibrate needed); a costbench " \
     "matmul CSV (CPU): with a calibration, the GEMM efficiency curve"}
/* --gemm (dst: const char **): the measured device curves (data/gemm/, a GPU --matmul-csv) or the
 * cited figures of data/devices.csv (scale, plan, validate). */
#define GEMM_FLAG_SPEC(dst)                                                                              \
    {"gemm", OPT_STR, (dst), 0, 0, 0, 0, "measured|cited",                                               \
     "GEMM efficiency: a device's measured curve where one exists (data/gemm/DEVICE.csv, a GPU "         \
     "--matmul-csv; the default), or the cited figures of data/devices.csv for every device"}
/* The calibration of a prediction (scale, plan; dst: const char **, const char **, double *): one
 * throughput row's efficiency carried by the step model (report/predict/calib_row.h), the GEMM curve of a
 * matmul CSV, or an assumed MFU in place of the framework's default efficiency (report/predict/fweff.h)
 * when nothing is calibrated. */
#define CALIBRATE_FLAG_SPECS(cal_dst, mm_dst, mfu_dst)                                                   \
    {"calibrate", OPT_STR, (cal_dst), 0, 0, 0, 0, "FILE[:ROW]",                                          \
     "a measured or published throughput row (ROW: its line, or a published run's id): its framework "   \
     "efficiency carried to every configuration by the step model"},                                     \
    MATMUL_CSV_FLAG_SPEC(mm_dst),                                                                        \
    {"mfu", OPT_DOUBLE, (mfu_dst), 0, 0, 0.1, 100, "PCT",                                                \
     "when nothing is calibrated: an assumed MFU of the data-sheet peak in place of the step model at the "   \
     "framework's default efficiency (data/framework_eff.csv; 40 was the old default)"}
/* --framework (dst: const char **; help: the text step_framework_flag_help writes, which lists the
 * frameworks report/predict/frameworks.h knows). */
#define FRAMEWORK_FLAG_SPEC(dst, help) {"framework", OPT_STR, (dst), 0, 0, 0, 0, "NAME", (help)}

/* --fit-tolerance (dst: double *): how closely a calibration must reproduce its rows (scale, validate). */
#define FIT_TOLERANCE_FLAG_SPEC(dst)                                                                     \
    {"fit-tolerance", OPT_DOUBLE, (dst), 0, 0, 0.001, 1000, "PCT",                                       \
     "a calibration must reproduce each of its rows within PCT% (default 5)"}
/* The network a prediction uses in place of the hardware table's (dst: double * each; scale, validate). */
#define NETWORK_FLAG_SPECS(net_dst, intra_dst, lat_dst)                                                  \
    {"net-gbps", OPT_DOUBLE, (net_dst), 0, 0, 1e-6, 1e9, "G",                                            \
     "network line rate per node (instance), Gbit/s (default: the hardware table's)"},                   \
    {"intra-gbps", OPT_DOUBLE, (intra_dst), 0, 0, 1e-6, 1e9, "G",                                        \
     "device-link bandwidth per accelerator, GB/s (default: the hardware table's)"},                     \
    {"latency-us", OPT_DOUBLE, (lat_dst), 0, 0, 0, 1e6, "US",                                            \
     "network latency per hop (default: the hardware table's, else 0)"}
/* --net-from FILE (dst: const char **; scale, plan): the all_reduce rows of a network file for
 * the instance type set its network and device link (report/formats/netfit.h). */
#define NET_FROM_FLAG_SPEC(dst)                                                                          \
    {"net-from", OPT_STR, (dst), 0, 0, 0, 0, "FILE",                                                     \
     "measured network: a network file `costbench import` writes from nccl-tests or costbench allreduce "  \
     "output, in place of the hardware table's figures"}
/* --net-from with a flag that sets the same figures (given: net_gbps > 0, intra_gbps > 0,
 * latency_us >= 0, net_eff != 1) is one error naming both. Returns 0 or CB_EUSAGE. */
int net_from_flag_check(const char *net_from, double net_gbps, double intra_gbps, double latency_us, double net_eff);
/* --bucket-mib (dst: double *): the gradient all-reduce's bucket (train runs it, scale models it). */
#define BUCKET_FLAG_SPEC(dst)                                                                            \
    {"bucket-mib", OPT_DOUBLE, (dst), 0, 0, 0.001, 1e6, "MIB",                                           \
     "gradient all-reduce bucket size (default 25; train: with --no-overlap)"}

/* --csv FILE (dst: const char **; what: the help, what the file holds). */
#define CSV_FLAG_SPEC(dst, what) {"csv", OPT_STR, (dst), 0, 0, 0, 0, "FILE", what}

#endif
