/* pubmodel.h: a published run (report/formats/published.h's pub_row) as the step model of report/predict/scale.h:
 * the one mapping that `--calibrate FILE:ID` (scale, plan) and `costbench validate` share. The row is
 * read into a measured run (report/predict/measrun.h), made a configuration as a throughput row is.
 *
 * What each field becomes (and what the step model cannot represent, refused with the reason):
 *   model shape     published_config: the row's own architecture and shape, no preset
 *   hardware        device "this machine": hw_this_machine at peak_tflops, one node per device;
 *                   else instance_type: its row of data/hardware.csv (a published "A/B": the first
                   of the two it lists, pub_names_resolve); else hw_from_device(device,
 *                   devices_per_node, node_net_gbps; empty: the device's reference node's
 *                   node_net_gbps, e.g. a DGX A100's 1600); a run on fewer devices than one node
 *                   holds is one node of that many devices (same links); then the link overrides
 *                   of the flags (hw_apply_overrides), for calibration rows and targets alike
 *   nodes           devices / devices_per_node (a run that fills no whole number of nodes: refused)
 *   tp, pp, vp      tensor, pipeline parallel, interleaved stages (vp: bubble (p-1)/(v m)); a tp
 *                   that does not split the heads, the key/value heads or the MLP is refused
 *   cp              context parallelism: each rank's GEMMs on seq / cp of the rows (a cp that does
 *                   not divide seq_len is refused)
 *   micro_batch     as published; empty: 1 (the frameworks' default for pipeline runs, and the
 *                   rule for throughput rows without one); a batch that does not split into
 *                   replicas x micro-batches is refused (scale_layout)
 *   sharding        none 0, zero1 1, zero2 2, zero3 3; hybrid (FSDP HYBRID_SHARD): ZeRO-3 inside a
 *                   node (its weight gathers over the device links, per micro-batch), a gradient
 *                   all-reduce's bytes across nodes
 *   recompute       full: every forward op again; selective: the attention core again
 *   sequence_par.   the norms and residuals on seq / tp rows, the TP collectives as reduce-scatter
 *                   + all-gather (Korthikanti et al. 2022)
 *   framework       its attention kernel and overlaps: the era of framework_version
 *                   (report/predict/frameworks.h: empty or unknown: the name's default era; an
 *                   unknown name: `plain`'s features; either named in why), then the row's own
 *                   overlap list and attention kernel over the era's defaults; a default TP overlap needs
 *                   sequence parallelism; compile is recorded, not modelled
 *   precision       fp32 against the FP32 peak; bf16-mixed (and empty) mixed against the BF16 peak;
 *                   fp16-mixed mixed against the device's FP16 peak; bf16 full bf16 against the
 *                   BF16 peak; fp8 its GEMMs against the FP8 peak, the rest as bf16-mixed (refused
 *                   on a device without one)
 *   latency         the hardware's, else STEP_NET_LATENCY_US
 *   seq, global_batch  as published; the rest (buckets, network efficiency, overlap) from `defaults`. */
#ifndef CB_PUBMODEL_H
#define CB_PUBMODEL_H

#include <stddef.h>

#include "../formats/devices.h"
#include "../formats/published.h"
#include "scale.h"

typedef struct {
    const hw_table *ht;     /* instance types (rows that name one) */
    const dev_table *dt;    /* devices */
    const hw_overrides *ov; /* link overrides given by flags (NULL: none) */
    double latency_us;      /* --latency-us; < 0: the hardware's, else 0 */
} pub_model_env;

/* The hardware of a run measured on this machine (CB_THIS_MACHINE): one rank is one node of one
 * device (as `costbench allreduce --profile` profiles it), its dense peak the one measured there
 * (peak_tflops_per_rank, in the run's precision: the FP32 and BF16 slots alike); the
 * interconnect from the hardware table's "this machine (per rank)" row when it has one (a run of
 * more than one rank needs it). The instance is named `instance`. Returns 0, or CB_EUSAGE with the
 * reason in why (nothing printed). */
int hw_this_machine(const hw_table *ht, const char *instance, double peak_tflops_per_rank, long ranks, hw_row *hw,
                    char *why, size_t n);

/* The names of row r (device, instance type) resolved against env, with what it took: 0 and a
 * note, "" when every name is known as written, else "; "-separated: "device 'x' resolved through
 * family y (its own: hbm_gib 96)", "instance 'a/b': a used (b differs: network 1600 Gbit/s against
 * 800)" (an unknown framework: pub_scale_model's why names it); CB_EUSAGE and the reason in
 * note when the device (published.h: r->unknown) or the instance type is unknown: the row is not
 * predicted. Nothing printed. */
int pub_names_resolve(const pub_row *r, const pub_model_env *env, char *note, size_t n);

/* The row (of the file at path) as a step model (compute time unset) and its node count. Returns
 * 0 (why "" or a note naming an unknown framework version or name: the row still maps), or
 * CB_EUSAGE with the reason in why ("column 'cp': ..."; nothing printed, except by
 * published_config for a shape it rejects). */
int pub_scale_model(const pub_row *r, const char *path, const pub_model_env *env, const scale_model *defaults,
                    scale_model *s, long *nodes, char *why, size_t n);

#endif
