/* devices.h: what an accelerator is (data/devices.csv), apart from what an instance costs.
 *
 * One row per accelerator model: its dense peaks per precision (never the sparsity figures), its
 * memory, its scale-up link and the size of that link's domain, each figure with its source. An
 * instance or node (data/hardware.csv) is a number of one device plus a network; a published run
 * on an on-premise cluster names its device, devices per node and network, and is described by
 * hw_from_device without any instance type.
 *
 * Columns of data/devices.csv (units in the names; an empty cell is "not applicable/unknown"):
 *   device            key, lowercase, as the published-runs schema names it (a100-sxm4-80gb, ...)
 *   vendor
 *   workers           ranks per device as the frameworks count them (2 on Trainium: NeuronCores)
 *   fp32_tflops, tf32_tflops, bf16_tflops, fp16_tflops, fp8_tflops   dense, per device
 *   hbm_gib, hbm_gb_per_s
 *   link_gb_per_s     scale-up link per device, one direction (NVLink, NeuronLink, Infinity Fabric)
 *   scaleup_domain    devices that share that link (8 in an HGX/DGX node, 72 in an NVL72 rack)
 *   gemm_eff, attn_eff, mem_eff, launch_us   the step model's figures (report/predict/stepmodel.h;
 *                     optional columns: empty or absent, its defaults)
 *   node_net_gbps     the network per node of the vendor's reference system (Gbit/s)
 *   model_source      where the step model's figures come from (most are assumptions, and say so)
 *   source            where the figures come from (data sheet, with its date or URL)
 *   stochastic_rounding  true/false: the hardware rounds bf16 results stochastically and the
 *                     device's frameworks train full bf16 with it (Trainium); optional, read by name
 *   family            (optional) a variant row: the device listed above it that it is a variant
 *                     of (an other memory, form factor or spelling of the same chip). Its empty cells
 *                     are the family's figures; the cells it gives are its own (d->own lists them);
 *                     its source says where its own come from. A family is never itself a variant.
 * and the kernel figures, at the end of the header (optional; empty: the step model's defaults or the figure above):
 *   fp8_gemm_eff      large fp8 GEMMs' share of the dense FP8 peak (empty: gemm_eff)
 *   attn_eff_max, attn_s_half   the tiled attention kernel's share of the peak as a curve in the
 *                     sequence length s the kernel sees, causal, forward + backward:
 *                     attn_eff(s) = attn_eff_max x s / (s + attn_s_half) (empty: the flat attn_eff)
 *   link_eff          achieved ring all-reduce bus bandwidth / link_gb_per_s (empty: STEP_LINK_EFF)
 *   link_latency_us   a ring step's latency over the link (empty: STEP_LINK_LATENCY_US)
 *   eff_source        each kernel figure's source: measured (repository, path, commit or URL and
 *                     table, with the arithmetic), data sheet, or assumption
 *   gemm_half_dim     h of the GEMM shape factor f(x) = x / (x + h): how wide a GEMM dimension must
 *                     be to fill the device (empty: STEP_GEMM_HALF_DIM, 128)
 * report/formats/README.md describes each column at length. */
#ifndef CB_DEVICES_H
#define CB_DEVICES_H

#include <stddef.h>

#include "inputs.h"

typedef struct dev_row_s {
    char device[48], vendor[32];
    int workers;
    double fp32_tflops, tf32_tflops, bf16_tflops, fp16_tflops, fp8_tflops; /* NaN: none */
    double hbm_gib, hbm_gb_per_s;
    double link_gb_per_s; /* NaN: unknown */
    int scaleup_domain;
    /* the step model's figures (report/predict/stepmodel.h; NaN: its default): achieved share of the
     * dense peak by large GEMMs and by the tiled attention kernel, of the memory bandwidth by
     * memory-bound kernels; a kernel's fixed cost; the vendor reference node's network (a run
     * that does not state its own) */
    double gemm_eff, attn_eff, mem_eff, launch_us, node_net_gbps;
    char model_source[512];
    char source[256];
    /* the kernel figures (NaN: the step model's default or the figure above, see the header) */
    double fp8_gemm_eff, attn_eff_max, attn_s_half, link_eff, link_latency_us;
    char eff_source[2048];
    double gemm_half_dim; /* NaN: STEP_GEMM_HALF_DIM */
    char family[48]; /* the device this row is a variant of; "" for a device row */
    char own[256];   /* a variant's own figures, "hbm_gib 96, hbm_gb_per_s 3900" ("": all the family's) */
    int stochastic_rounding; /* 1 true, 0 false, -1 not known (the column absent or empty) */
    int line;
} dev_row;

struct attn_table_s; /* report/formats/attncurves.h */

typedef struct dev_table_s {
    char path[4096];
    dev_row *rows;
    int n;
    struct attn_table_s *kernels; /* the attention kernels' curves (data/attention.csv); NULL: none */
} dev_table;

/* Loads path (NULL: data/devices.csv through machine_data_file) and the attention kernels' curves
 * beside it (attncurves.h): data/attention.csv with the default table (required), attention.csv in
 * the directory of a table given by path when there is one (none: every device keeps its own
 * curve). Every cell is checked; a bad one is one error "file:line: column 'x': ...". Returns 0
 * or CB_EFAIL. */
int devices_load(dev_table *t, const char *path);
void devices_free(dev_table *t);
/* NULL when the device is not listed (no error printed). A variant row is found by its own name,
 * with its figures resolved through its family (dev_row.family, .own). */
const dev_row *devices_find(const dev_table *t, const char *device);
/* "a100-sxm4-40gb, a100-sxm4-80gb, ..." into buf: for "unknown device" messages. */
void devices_list(const dev_table *t, char *buf, size_t n);
/* "resolved through family h100-sxm5-80gb (its own: hbm_gib 96)" into buf for a variant, "" for a
 * device row: what every output that uses a variant says of it. */
void devices_family_note(const dev_row *d, char *buf, size_t n);

/* A node of `per_node` devices `d` on a network of net_gbit_per_s (per node; NaN: unknown) and
 * net_latency_us (NaN: unknown): the hw_row the scaling model takes, its instance name
 * "<per_node> x <device>", its source the device's. */
void hw_from_device(const dev_row *d, int per_node, double net_gbit_per_s, double net_latency_us, hw_row *out);

/* Overrides of a node's links, given by flags; NaN leaves a figure as it is. They apply to every
 * row they are given for: targets and calibration rows alike. */
typedef struct {
    double net_gbit_per_s, intra_gb_per_s, net_latency_us;
} hw_overrides;
void hw_apply_overrides(hw_row *hw, const hw_overrides *o);

#endif
