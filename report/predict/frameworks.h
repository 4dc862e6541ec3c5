/* frameworks.h: the training frameworks the step model knows, each a name AND a version (an era):
 * what its runs get by default, every feature with the source it is read from (the framework's own
 * code or flag, at a tag). The timing that reads the features is stepmodel.c's; the --framework
 * vocabulary and its aliases are common/frameworks.h's. Research behind every row:
 * report/predict/README.md, "Frameworks".
 *
 * The five features (each a named term of the step model, report/predict/stepmodel.h):
 *   tiled_attention  a tiled (flash / cuDNN fused) attention kernel: causal FLOPs, no s x s scores
 *                    in memory; off = materialised s x s scores (softmax through HBM)
 *   grad_overlap     the gradient reduction runs under the backward (DDP buckets, FSDP
 *                    reduce-scatter; Megatron's --overlap-grad-reduce; NeMo's overlap_grad_sync)
 *   gather_prefetch  ZeRO-3/FSDP parameter gathers issued ahead of the layer that needs them,
 *                    under compute
 *   tp_overlap       tensor-parallel collectives hidden under the layer's GEMMs (TE userbuffers:
 *                    Megatron --tp-comm-overlap, NeMo ub_tp_comm_overlap / tp_comm_overlap,
 *                    torchtitan async TP)
 *   tp_bwd_overlap   without tp_overlap: the backward TP collective of each column-parallel layer
 *                    (the input gradient's all-reduce, or its reduce-scatter under sequence
 *                    parallelism) runs asynchronously under that layer's weight-gradient GEMM
 *                    (Megatron's LinearWithGradAccumulationAndAsyncCommunication, TE's Linear);
 *                    the forward collectives and the backward all-gathers stay exposed
 *
 * Versions: a version string is read as major.minor after an optional prefix core_v, core_r, v or
 * r ("2021", "core_r0.8.0", "v0.7.0", "25.09", "1.x"); each era holds the versions in its spans.
 * An empty version is the name's default era; an unknown one is the default era too, named in the
 * note (never silently). */
#ifndef CB_PREDICT_FRAMEWORKS_H
#define CB_PREDICT_FRAMEWORKS_H

#include <stddef.h>

enum { FW_ATTENTION, FW_GRAD, FW_GATHER, FW_TP, FW_TP_BWD, FW_NFEATURES };

typedef struct {
    double lo, hi; /* version keys major + minor / 1000, [lo, hi); lo == hi: unused */
} fw_span;

typedef struct {
    const char *name;    /* the schema's framework column: megatron-lm, megatron-core, nemo, ... */
    const char *version; /* the era's label: 2021, core_v0.6+, 2.x, ... */
    int is_default;      /* the name's era when no version (or an unknown one) is given */
    fw_span spans[2];    /* the versions of this era */
    int tiled_attention, grad_overlap, gather_prefetch, tp_overlap;
    const char *source;                      /* the era in one line (shown in notes) */
    const char *feature_source[FW_NFEATURES]; /* where each default is read: repo path @tag or flag */
    /* non-NULL: where a run's layers do not split evenly over its pp x vp stages, the framework's
     * recipes count the embedding and the loss as one pipeline layer each (Megatron-Core's
     * account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split): the first and
     * the last stage hold (L + 2) / pp - 1 layers, the others (L + 2) / pp (stepconfig.h's
     * pp_first_layers); the text is its source. NULL: such a run is not predicted */
    const char *uneven_split_source;
    int tp_bwd_overlap;                       /* its source: feature_source[FW_TP_BWD] */
    /* The tiled attention kernel (data/attention.csv's names; "": the device's own curve): the era's
     * default before compute capability 9.0 and from it (Transformer Engine and PyTorch SDPA pick
     * cuDNN fused attention on Hopper and later), and what a row stating `flash` runs. Their
     * sources: feature_source[FW_ATTENTION]. */
    const char *attn_kernel, *attn_kernel_sm90, *flash_kernel;
} step_framework;

/* The default era of the framework `spec` ("name" or "name@version"; an alias resolved:
 * common/frameworks.h); an unknown or empty name: `plain` (step_framework_default): a tiled
 * attention kernel and nothing overlapped, the conservative default of scale and plan. */
const step_framework *step_framework_find(const char *spec);
/* The era of `name` that holds `version` (NULL or "": the name's default era). note (n bytes) gets
 * "" when both resolve, else one line naming what did not: an unknown version (the default era
 * used, the known eras listed) or an unknown name (`plain` used). */
const step_framework *step_framework_find_version(const char *name, const char *version, char *note, size_t n);
/* The same for "name@version" (spec). */
const step_framework *step_framework_find_spec(const char *spec, char *note, size_t n);
const step_framework *step_framework_default(void);
/* The table, for tests and the README: *n rows. */
const step_framework *step_framework_table(int *n);
/* "megatron-lm, nemo, ..." (each name once) for messages and help. */
void step_framework_list(char *buf, size_t n);
/* "megatron-lm 2021" or "plain" (the label of an era). */
void step_framework_label(const step_framework *fw, char *buf, size_t n);
/* --framework's help (common/cliflags.h, FRAMEWORK_FLAG_SPEC): what a framework sets and the names. */
void step_framework_flag_help(char *buf, size_t n);
/* A version string's key (see above): 0, or -1 when it holds no number. */
int step_framework_version_key(const char *version, double *key);

#endif
