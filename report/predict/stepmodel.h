/* stepmodel.h: the time of the shared operation list (common/oplist.h) on a device: the step
 * model `scale`, `plan` and `validate` predict with, and their calibrations fit.
 *
 * Per op, on one rank (a device's share when it runs several ranks: Trainium's NeuronCores):
 *   GEMM       2 n k m FLOPs at gemm_eff x f(n) f(k) f(m) of the dense peak of the run's precision,
 *              f(x) = x / (x + h), h the device's gemm_half_dim (STEP_GEMM_HALF_DIM where empty;
 *              narrow dimensions lose to tile and wave quantisation), + launch_us; or, given a
 *              `costbench matmul` CSV of the device, at its measured share e(k, n)
 *              (report/predict/effcurve.h's curve); on a device with a measured GPU curve
 *              (report/formats/gemmcurve.h: data/gemm/DEVICE.csv or a GPU --matmul-csv), at e(k, n)
 *              of its bf16 sweep (fp16 when only that; fp8 GEMMs its fp8 sweep, else the cited
 *              figures) of that dtype's data-sheet peak, clamped at the grid's edges
 *   attention  tiled: its FLOPs (causal) at attn_eff(s) of the peak, s the sequence length the
 *              kernel sees (a CP rank's s / cp), attn_eff(s) = attn_eff_max s / (s + attn_s_half)
 *              (measured FlashAttention/cuDNN curves; a flat attn_eff where a device gives none);
 *              fp8 GEMMs at fp8_gemm_eff of the FP8 peak; materialised: at gemm_eff (batched
 *              over the heads, the batch fills the device: no shape loss), its two products two
 *              launches, its scores' traffic a memory-bound op
 *   memory     bytes at mem_eff of the memory bandwidth, + launch_us
 *   TP         ring collective over the scale-up link: 2 (t - 1) / t x bytes / (link x
 *              link_eff) + 2 (t - 1) x link_latency_us (the device's measured all-reduce bus
 *              bandwidth share and ring-step latency; STEP_LINK_EFF, STEP_LINK_LATENCY_US where empty)
 *   PP         the activation forward and the gradient back per micro-batch, over the scale-up
 *              link when the run is on one node, else over the rank's share of the network + a
 *              network hop's latency each (the frameworks' rank order: step_pp_over_net)
 *   CP         ring attention's K/V chunks (oplist.h), each ring step bytes / (link x link_eff) +
 *              link_latency_us when the tp x cp group shares a node, else over the rank's share of
 *              the network + its hop latency; hidden under the attention compute it feeds (TE's
 *              async p2p ring, megatron-core's default): exposed max(0, sends - attention)
 * The device's gemm_eff, attn_eff, mem_eff and launch_us come from data/devices.csv (defaults
 * below when a device leaves them empty); the peaks, bandwidths and links from the device too.
 * A calibration fits one framework efficiency phi against this device time (t_mb = t_device /
 * phi) and carries phi, which is not a property of a device, to other devices and layouts.
 *
 * Framework features (overlap) are named, with the frameworks' defaults (frameworks.h). */
#ifndef CB_STEPMODEL_H
#define CB_STEPMODEL_H

#include "../../common/oplist.h"
#include "frameworks.h"
#include "stepconfig.h"

#define STEP_GEMM_EFF 0.75      /* a device's gemm_eff when data/devices.csv leaves it empty */
#define STEP_ATTN_EFF 0.35      /* attn_eff: FlashAttention-2 class kernels, forward + backward */
#define STEP_MEM_EFF                                                                                               \
    0.60 /* mem_eff: memory-bound kernels, the small unfused ops the list does not name (bias adds, casts, copies) \
            included */
#define STEP_LAUNCH_US 5.0      /* a kernel's fixed cost (launch, tail) */
#define STEP_GEMM_HALF_DIM 128.0 /* gemm_half_dim where a device leaves it empty: the H100 fit (data/devices.csv) */
#define STEP_LINK_EFF 0.75      /* NCCL's all-reduce bus bandwidth over NVLink: ~225 of 300 GB/s on A100 */
#define STEP_LINK_LATENCY_US 5.0
#define STEP_NET_LATENCY_US 10.0 /* a network hop when the hardware states none (InfiniBand, EFA: wire + NCCL's step) */

/* What a framework overlaps, by default: the framework table with versions and the source of
 * every default is report/predict/frameworks.h (step_framework_find, step_framework_find_version). */

/* The operation list of s's layout (dp replicas: the ZeRO sharding of the optimizer). Returns the
 * count or -1 (a layout the list cannot split). */
int step_ops(const scale_model *s, long dp, op_entry *ops, int cap);
/* The step of s as a value (stepconfig.h's step_profile): its operation list built and timed once.
 * Whoever builds or changes a configuration (its model, device, layout, precision, recomputation,
 * attention, GEMM curve: step_key) fills it: step_profile_fill computes it into s->prof (nothing to
 * do when s holds the step of its configuration already). Everything else reads it,
 * step_profile_get and the functions below, report/predict/scale.c and calibration.c: arithmetic on
 * the value, never the list again. Reading a model whose configuration changed since it was filled,
 * or that was never filled, is a defect of its builder: one error line naming the model and device
 * and exit 1, never a figure of another configuration. */
void step_profile_fill(scale_model *s);
const step_profile *step_profile_get(const scale_model *s);
/* Device time at phi = 1 of one micro-batch through the slowest pipeline stage: GEMMs, attention
 * and memory-bound ops (parts may be NULL). NaN when the device's peak or bandwidth is unknown. */
double step_t_mb_device(const scale_model *s, step_parts *parts);
/* Whether a run on `nodes` nodes sends its pipeline traffic across nodes. The frameworks place the
 * pipeline stages outermost in their rank order, so neighbouring stages are world / pp ranks apart:
 *   Megatron-LM v2.0 megatron/mpu/initialize.py:143-144 (range(i, world_size, world_size / pp));
 *   Megatron-Core megatron/core/parallel_state.py:395 @core_v0.6.0, order "tp-cp-ep-dp-pp" (pp last,
 *   outermost) :617 @core_v0.19.0; NeMo 2.x nemo/lightning/megatron_init.py:347 @v2.4.0 and
 *   Megatron-Bridge src/megatron/bridge/training/initialize.py:817 @067f987df03b: that order unless the
 *   opt-in use_tp_pp_dp_mapping; aws-neuron/neuronx-nemo-megatron@05dde85a00da
 *   apex/apex/transformer/parallel_state.py:171,280 (Megatron's range); torchtitan v0.2.0
 *   torchtitan/distributed/parallel_dims.py:150-153 (mesh ["pp", "dp_replicate", "dp_shard", "cp",
 *   "tp"], pp the outermost, row-major, dimension). DeepSpeed's PipeModelDataParallelTopology
 *   (axes pipe, data, model) does the same.
 * With the stages world / pp ranks apart, a run on more than one node has a stage boundary that
 * crosses a node in some pipeline (ranks r and r + world / pp on either side of a node's edge),
 * and every replica waits for the slowest at the step's gradient reduction: so the sends cross
 * nodes whenever the run spans several, even when tp x pp fits one node (a trn1.32xlarge holds
 * TP 8 x PP 4, yet on 4 nodes each of the 4 stages is on its own node). */
int step_pp_over_net(long nodes);
/* Exposed tensor-parallel, context-parallel and pipeline communication of one micro-batch (the step's tp_s term)
 * of the profile p on `nodes` nodes (step_comm_of): the pipeline sends over the scale-up link on one
 * node; across nodes (step_pp_over_net) at s->net_eff of the rank's share of the network's line rate,
 * + s->latency_s a send (a network hop). Every send is exposed: the 1F1B schedules wait on them
 * (Megatron's p2p_communication; Neuron's apex fork makes each a blocking 2-rank xm.all_reduce
 * between two mark_step()s, apex/apex/transformer/pipeline_parallel/p2p_communication.py:108,199-211
 * @05dde85a00da: the same, nothing added). step_comm_per_mb: s's own, its replica alone on the nodes
 * it needs. */
double step_comm_of(const scale_model *s, const step_profile *p, long nodes);
double step_comm_per_mb(const scale_model *s);
/* The device's figures with the defaults above (report/formats/devices.h): the link's achieved share
 * of link_gb_per_s and its latency per ring step; the tiled attention kernel's share of the peak at
 * a sequence length s it sees, attn_eff_max s / (s + attn_s_half) when the device gives the curve,
 * else its flat attn_eff. */
double step_link_eff(const hw_row *hw);
double step_link_latency_s(const hw_row *hw);
double step_attn_eff(const hw_row *hw, double s);
/* The time of one op once (phi = 1), for breakdowns and tests. */
double step_op_time(const scale_model *s, const op_entry *op);

/* The measured device curve (report/formats/gemmcurve.h) of s's device in s->gemm_measured, NULL
 * when none or when the run is fp32 (its peak, scale_dense_tflops, is the CUDA-core FP32 figure,
 * not TF32: no tensor-core grid measures it; such a run stays on the cited figures). The grid a
 * GEMM runs on (fp8: the op's op->fp8 on a device with an FP8 peak): fp8 the fp8 sweep, others the
 * bf16 sweep, else the fp16 one; NULL when that dtype was not measured (the cited figures then),
 * its data-sheet peak per rank (FLOP/s) into *peak (may be NULL). */
const struct gemm_dev_curve_s *step_device_curve(const scale_model *s);
const struct matmul_curve_s *step_device_grid(const scale_model *s, int fp8, double *peak);
/* One line: what s's GEMMs run on: "GEMMs on DEVICE: measured curve FILE (GPU, cuBLASLt V, DATE;
 * bf16 e LO-HI over k .., n ..)" or "GEMMs on DEVICE: cited figures (gemm_eff G x shape factors,
 * data/devices.csv)", and why a curve of the device is not used. step_gemm_brief: "GEMMs on the
 * measured curve of DEVICE" for a row's note, "" on the cited figures. */
void step_gemm_source(const scale_model *s, char *buf, size_t n);
void step_gemm_brief(const scale_model *s, char *buf, size_t n);

#endif
