/* frameworks.c: the frameworks as each version runs (see frameworks.h for every rule). Every
 * feature's default is read from the framework's code or flag at the tag named in its source
 * (research of issue 30: each line number at that tag). */
#include "frameworks.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/frameworks.h"

#define SPAN(a, b) {(a), (b)}
#define NONE_SPAN {0, 0}
#define MLM "NVIDIA/Megatron-LM "
#define MDS "bigscience-workshop/Megatron-DeepSpeed "
/* Megatron-Bridge's Llama 3.1 405B recipe (126 layers, pp 8 x vp 2 by default; the performance
 * recipes scripts/performance/configs/llama31/llama31_llm_pretrain.py build on it with pp 8/16 x vp
 * 2..8) sets both flags; Megatron-Core then splits L + 2 layers evenly and builds one fewer on the
 * first virtual stage of the first rank and the last of the last (get_num_layers_to_build,
 * megatron/core/transformer/transformer_block.py). Without them Megatron-Core asserts an even split,
 * so a Megatron-Bridge run that does not split evenly ran with them (or with explicit first/last
 * counts, which no Megatron-Bridge Llama recipe sets). */
#define MB_UNEVEN_SPLIT                                                                                              \
    "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/recipes/llama/llama3.py:400-414 @v0.2.0 (7af9601c9) and "      \
    "@v0.3.0 (21b02e0cf): llama31_405b_pretrain_config account_for_embedding_in_pipeline_split = True, "                          \
    "account_for_loss_in_pipeline_split = True (llama3.py:1146-1147 @v0.5.0, fcbb60311)"

static const step_framework frameworks[] = {
    {"plain", "", 1, {NONE_SPAN, NONE_SPAN}, 1, 0, 0, 0,
     "the default: a tiled (flash) attention kernel, nothing overlapped (the conservative choice)",
     {"costbench's assumption", "costbench's assumption", "costbench's assumption", "costbench's assumption",
      "costbench's assumption"},
     NULL, 0, "", "", ""},
    {"megatron-lm", "2020", 0, {SPAN(2020, 2021), SPAN(1.0, 2.0)}, 0, 0, 0, 0,
     "Megatron-LM v1.0 (2020): materialised attention, local DDP (all-reduce after the backward), TP only",
     {MLM "megatron/model/transformer.py @v1.0 (03d2880923ff): QK^T over the full s x s, softmax through HBM",
      MLM "megatron/arguments.py:285 @v1.0: --DDP-impl default local (all-reduce after the whole backward)",
      "no ZeRO in v1.0 (nothing to gather)", "no TP overlap in v1.0 (async backward TP from 16c90445e7, 2021-09)",
      "none in v1.0: the async backward TP collectives arrive in 16c90445e7 (2021-09-02)"},
     NULL, 0, "", "", ""},
    {"megatron-lm", "2021", 1, {SPAN(2021, 2022), SPAN(2.0, 3.0)}, 0, 0, 0, 0,
     "Megatron-LM v2.x (2021, PTD-P): materialised attention with fused softmax, local DDP, nothing overlapped",
     {MLM "megatron/model/transformer.py:275-338 @v2.0 (be473a5bd22e): baddbmm s x s, FusedScaleMaskSoftmax, bmm",
      MLM "megatron/arguments.py @v2.0-v2.6: --DDP-impl default local; --DDP-impl torch overlaps (state it)",
      "no ZeRO in v2.x (nothing to gather)",
      "none: the async backward TP collectives arrive in 16c90445e7 (2021-09-02), after v2.6",
      "none: megatron/mpu/layers.py:280 @v2.6 copy_to_tensor_model_parallel_region, whose backward all-reduces "
      "synchronously (mpu/mappings.py:88-89; async from 16c90445e7, 2021-09-02)"},
     NULL, 0, "", "", ""},
    {"megatron-lm", "2022", 0, {SPAN(2022, 2024), SPAN(22.0, 24.0)}, 0, 0, 0, 0,
     "Megatron-LM 2022 to 23.06: sequence parallel, selective recompute; flash and TE opt-in, no overlap flags",
     {MLM "megatron/arguments.py:755 @23.04 (2360d732a399): --use-flash-attn opt-in (store_true), "
          "--transformer-impl default local: materialised; flash: flash-attn 1.x (megatron/model/transformer.py:27 "
          "@23.04 imports flash_attn_unpadded_func, the 1.x API; flash-attn 2.0 came 2023-07)",
      MLM "megatron/arguments.py @23.04: --DDP-impl default local, no --overlap-grad-reduce yet",
      MLM "--use-distributed-optimizer opt-in (329fe5820f): gathers after the step",
      MLM "no --tp-comm-overlap (the backward async collectives: the next feature)",
      MLM "megatron/core/tensor_parallel/layers.py:283-303 @23.04 (2360d732a399): the input gradient's all-reduce or "
          "reduce-scatter async under the wgrad GEMM (16c90445e7, 2021-09-02); off only with "
          "--no-async-tensor-model-parallel-allreduce (megatron/arguments.py:767 @23.04)"},
     NULL, 1, "", "", "flash1"},
    {"megatron-core", "core_v0.4", 0, {SPAN(0.004, 0.006), NONE_SPAN}, 0, 0, 0, 0,
     "Megatron-Core core_v0.4-v0.5 (2023-12 to 2024-03): overlap flags exist, all off; local attention",
     {MLM "megatron/arguments.py @core_v0.4.0 (38879f8b3f0e): --transformer-impl default local, materialised unless "
          "--use-flash-attn: flash-attn 2.x (megatron/model/transformer.py:34-39 @core_v0.4.0 falls back to its "
          "flash_attn_varlen_func)",
      MLM "megatron/arguments.py:1102 @core_v0.4.0: --overlap-grad-reduce default off",
      MLM "megatron/arguments.py:1107 @core_v0.4.0: --overlap-param-gather default off",
      MLM "--tp-comm-overlap default off (116ffddc58, core_v0.4.0; needs --sequence-parallel)",
      MLM "megatron/core/tensor_parallel/layers.py:378-400 @core_v0.4.0: async all-reduce / reduce-scatter of the "
          "input gradient under the wgrad GEMM (off only with --no-async-tensor-model-parallel-allreduce, "
          "megatron/arguments.py:897)"},
     NULL, 1, "", "", "flash2"},
    {"megatron-core", "core_v0.6+", 1, {SPAN(0.006, 1.0), NONE_SPAN}, 1, 0, 0, 0,
     "Megatron-Core core_v0.6+ (2024-04 on): TE attention; --overlap-grad-reduce, --overlap-param-gather, "
     "--tp-comm-overlap off by default (on in NVIDIA's published H100 runs: state them in the row's overlap)",
     {MLM "megatron/training/arguments.py:602 @core_v0.6.0 (cac60ce4c820): --transformer-impl default "
          "transformer_engine (e7b74a4b7e): TE DotProductAttention, cuDNN fused on sm 9.0+ (NVIDIA/TransformerEngine "
          "transformer_engine/pytorch/attention.py:2894-2899 @v1.5; dot_product_attention/utils.py:1554-1560 "
          "@v2.18: FusedAttention preferred on Hopper+), flash-attn 2 on A100",
      MLM "megatron/core/distributed/distributed_data_parallel_config.py:18 @core_v0.19.0: overlap_grad_reduce = False",
      MLM "megatron/core/distributed/distributed_data_parallel_config.py:21 @core_v0.19.0: overlap_param_gather = False",
      MLM "megatron/core/model_parallel_config.py:265 @core_v0.19.0: tp_comm_overlap = False",
      "NVIDIA/TransformerEngine transformer_engine/pytorch/module/layernorm_linear.py:746-752 @v2.8 (40c69e751a47): "
      "column-parallel dgrad reduce-scatter / all-reduce async_op=True under the wgrad GEMM (TE Linear, the default "
      "transformer_impl); local layers: megatron/core/tensor_parallel/layers.py:534-548 @core_v0.14.0"},
     NULL, 1, "flash2", "cudnn", "flash2"},
    {"nemo", "1.x", 0, {SPAN(1.0, 2.0), NONE_SPAN}, 1, 1, 1, 0,
     "NeMo 1.x (yaml, NeMo-Framework-Launcher configs): TE attention, overlap_grad_sync and overlap_param_sync on, "
     "ub_tp_comm_overlap per config (off in the base config)",
     {"NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/gpt3/175b.yaml @23.05+: transformer_engine or "
      "mcore_gpt (TE spec); before NeMo v1.21 with transformer_engine False: materialised (state it)",
      "apex/contrib/optimizers/distributed_fused_adam.py @d571f3ee2cda: overlap_grad_sync = True; launcher configs "
      "True from 23.05",
      "launcher configs overlap_param_sync: true from 23.05 (apex's own default False)",
      "NVIDIA/NeMo examples/nlp/language_modeling/conf/megatron_gpt_config.yaml:194 @v1.23.0: ub_tp_comm_overlap "
      "False (True in launcher gpt3/20b, llama2_70b, llama3_1_70b @24.07: state it)",
      "NVIDIA/NeMo nemo/collections/nlp/models/language_modeling/megatron_base_model.py:1078 @v1.23.0: "
      "async_tensor_model_parallel_allreduce when TP > 1 (megatron.core layers); TE Linear: always async"},
     NULL, 1, "flash2", "cudnn", "flash2"},
    {"nemo", "2.x", 1, {SPAN(2.0, 3.0), NONE_SPAN}, 1, 1, 1, 1,
     "NeMo 2.x (Python recipes): TE attention; DP overlaps on when DP > 1; TP overlap on in the recipes with TP >= 2 "
     "and sequence parallelism",
     {"NVIDIA/NeMo: TE DotProductAttention (auto: cuDNN fused on H100+, flash-attn 2 on A100)",
      "NVIDIA/NeMo nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py:168-194 @v2.4.0: overlap_grad_reduce "
      "True when DP > 1; recipes' DDP config (llama3_70b.py:116-121)",
      "megatron_comm_overlap.py:168-194 @v2.4.0: overlap_param_gather True when DP > 1",
      "NVIDIA/NeMo nemo/collections/llm/recipes/llama3_70b.py:230-237 @v2.4.0 (gpt3_175b, llama31_405b, ...): "
      "tp_comm_overlap True; forced off when TP < 2 or without sequence parallelism (megatron_comm_overlap.py:141-151)",
      "NVIDIA/TransformerEngine transformer_engine/pytorch/module/layernorm_linear.py:746-752 @v2.8 (40c69e751a47): "
      "async dgrad reduce-scatter / all-reduce under the wgrad GEMM (Megatron-Core's TE layers)"},
     NULL, 1, "flash2", "cudnn", "flash2"},
    {"megatron-bridge", "25.x-26.x", 1, {SPAN(25.0, 27.0), SPAN(0.0, 1.0)}, 1, 1, 1, 1,
     "Megatron-Bridge (containers 25.x/26.x, v0.x): TE attention; its recipes set the DP overlaps (DP > 1) and "
     "userbuffers TP overlap where TP >= 2",
     {"NVIDIA-NeMo/Megatron-Bridge: TE DotProductAttention (attention_backend auto: cuDNN fused on H100+)",
      "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/comm_overlap.py:572-579 @v0.6.0 (51885cf132b2): "
      "overlap_grad_reduce True when DP > 1",
      "comm_overlap.py:572-579 @v0.6.0: overlap_param_gather True when DP > 1",
      "src/megatron/bridge/perf_recipes/llama/h100/llama3.py @v0.6.0: userbuffers cfg where TP >= 2 (llama3_70b); "
      "forced off when TP < 2 or without sequence parallelism (comm_overlap.py:439-449)",
      "NVIDIA/TransformerEngine transformer_engine/pytorch/module/layernorm_linear.py:746-752 @v2.8 (40c69e751a47): "
      "async dgrad reduce-scatter / all-reduce under the wgrad GEMM (Megatron-Core's TE layers)"},
     MB_UNEVEN_SPLIT, 1, "flash2", "cudnn", "flash2"},
    {"torchtitan", "v0.x", 1, {SPAN(0.0, 1.0), SPAN(2024, 2027)}, 1, 1, 1, 0,
     "torchtitan (FSDP2): SDPA attention, implicit forward / explicit backward prefetch, reduce-scatter under the "
     "backward, async TP opt-in (needs compile)",
     {"pytorch/torchtitan torchtitan/models/attention.py:84-104 @v0.2.0 (29624e37fa6d): SDPA is_causal, priority "
      "cuDNN, flash, efficient: cuDNN on sm 9.0+, flash-attn 2 before (an assumption for sm 8.0)",
      "FSDP2 reduce-scatter overlapped with the backward (implicit); mixed_precision_reduce float32 "
      "(torchtitan/config/job_config.py:239 @v0.2.0)",
      "FSDP2: implicit forward prefetch, explicit backward prefetch in reverse post-forward order (pytorch/pytorch "
      "f2805a0408cf, PR #128884)",
      "torchtitan/config/job_config.py:315 @v0.2.0: enable_async_tensor_parallel = False (requires compile: "
      "distributed/tensor_parallel.py:15-25)",
      "DTensor TP: the backward collectives run in the graph's order, synchronous (async TP opt-in, with compile)"},
     NULL, 0, "flash2", "cudnn", "flash2"},
    {"llm-foundry", "v0.1-v0.6", 1, {SPAN(0.0, 0.007), NONE_SPAN}, 1, 1, 0, 0,
     "llm-foundry v0.1-v0.6 (Composer FSDP1, 2023-05 to 2024-03; the default: every published benchmark table's "
     "era): the Triton flash kernel, reduce-scatter under the backward; backward_prefetch BACKWARD_POST and no "
     "forward_prefetch (Composer's defaults; the yamls set neither)",
     {"mosaicml/llm-foundry llmfoundry/models/utils/config_defaults.py: attn_impl 'triton' to v0.6.0 "
      "(flash_attn.flash_attn_triton); the benchmark tables' sweep too: scripts/train/benchmarking/"
      "submit_benchmarks.py:119 @300cc5c58 (the A100 tables, 2023-05) and :144 @b2a43a147 (2023-10) --attn_impl "
      "default 'triton', 'flash' from 7f0fdae66 (v0.7.0, 2024-03-26)",
      "FSDP1 reduce-scatter overlapped with the backward (implicit)",
      "mosaicml/composer composer/trainer/dist_strategy.py:131-137 @v0.15.0 .. composer/utils/parallelism.py:22-31 "
      "@640518880: backward_prefetch 'BACKWARD_POST', forward_prefetch False; llm-foundry "
      "scripts/train/yamls/pretrain/mpt-7b.yaml:92-97 sets neither",
      "no tensor parallelism", "no tensor parallelism"},
     NULL, 0, "triton", "triton", "triton"},
    {"llm-foundry", "v0.7+", 0, {SPAN(0.007, 1.0), NONE_SPAN}, 1, 1, 0, 0,
     "llm-foundry v0.7+ (Composer FSDP1, 2024-03 on): flash-attn 2, reduce-scatter under the backward; "
     "backward_prefetch BACKWARD_POST and no forward_prefetch (Composer's defaults; the yamls set neither)",
     {"mosaicml/llm-foundry llmfoundry/models/utils/config_defaults.py: attn_impl 'flash' (the flash-attn "
      "package, 2.x) from v0.7.0 (c26309de5; submit_benchmarks.py --attn_impl default 'flash' from 7f0fdae66)",
      "FSDP1 reduce-scatter overlapped with the backward (implicit)",
      "mosaicml/composer composer/trainer/dist_strategy.py:131-137 @v0.15.0 .. composer/utils/parallelism.py:22-31 "
      "@640518880: backward_prefetch 'BACKWARD_POST', forward_prefetch False; llm-foundry "
      "scripts/train/yamls/pretrain/mpt-7b.yaml:92-97 sets neither",
      "no tensor parallelism", "no tensor parallelism"},
     NULL, 0, "flash2", "flash2", "flash2"},
    {"deepspeed", "0.x", 1, {SPAN(0.0, 1.0), NONE_SPAN}, 1, 0, 1, 0,
     "DeepSpeed ZeRO: overlap_comm only at stage 3 (False at 0-2), ZeRO-3 gathers prefetched",
     {"the model's kernel (Megatron-DeepSpeed: Megatron's); tiled assumed",
      "microsoft/DeepSpeed deepspeed/runtime/zero/config.py:133, :351-354 @38327e07f6cd: overlap_comm = (stage == 3); "
      "False at stages 0-2 since v0.3.0 (constants.py:49)",
      "deepspeed/runtime/zero/config.py:208 @38327e07f6cd: stage3_prefetch_bucket_size 5e7",
      "no tensor parallelism of its own (Megatron-DeepSpeed: Megatron's)",
      "no tensor parallelism of its own (Megatron-DeepSpeed: Megatron's)"},
     NULL, 0, "", "", ""},
    {"megatron-deepspeed", "2021-2023", 1, {SPAN(2021, 2024), NONE_SPAN}, 0, 0, 0, 0,
     "Megatron-DeepSpeed (BigScience's fork of Megatron-LM 2021, BLOOM): materialised attention with fused softmax, "
     "DeepSpeed's engine reducing gradients after the backward (ZeRO 0-2), nothing overlapped",
     {MDS "megatron/model/transformer.py:179, :307-330 @8387ae17c470: FusedScaleMaskSoftmax over baddbmm s x s "
          "scores; no flash path",
      "microsoft/DeepSpeed deepspeed/runtime/zero/config.py:133, :351-354 @38327e07f6cd: overlap_comm = (stage == 3): "
      "off at the ZeRO stages 0-2 the fork's pipeline runs use",
      "no ZeRO-3 gathers assumed (the fork's runs pair ZeRO 0-1 with its pipeline engine)",
      MDS "megatron/mpu/layers.py:331-333 @8387ae17c470: copy_to_tensor_model_parallel_region, no TP overlap",
      MDS "megatron/mpu/mappings.py:22-33 @8387ae17c470: the backward all-reduce is synchronous (no async path)"},
     NULL, 0, "", "", ""},
    {"neuron-nemo", "2023-2024", 1, {SPAN(2023, 2025), NONE_SPAN}, 0, 0, 0, 0,
     "neuronx-nemo-megatron: materialised attention under XLA, compiler-scheduled gradient all-reduce, no flags",
     {"aws-neuron/neuronx-nemo-megatron test_llama.sh @f4743cef5a1c: use_flash_attention default False (option "
      "from 200cf63, 2024-07); NEURON_FUSE_SOFTMAX=1",
      "train_setup.sh:64 @f4743cef5a1c: BUCKET_CAP_MB=1024, scheduling left to the Neuron compiler (no flag)",
      "train_setup.sh:76-84 @f4743cef5a1c: wrap_with_zero=false (no ZeRO)", "no TP overlap flag",
      "XLA: the Neuron compiler schedules the collectives (no async flag; not modelled)"},
     NULL, 0, "", "", ""},
    {"neuronx-distributed", "2.x", 1, {SPAN(2.0, 3.0), NONE_SPAN}, 1, 0, 0, 0,
     "neuronx-distributed: NKI flash attention in the llama scripts, compiler-scheduled all-reduce, ZeRO-1",
     {"aws-neuron/neuronx-distributed examples/training/llama/tp_zero1_llama_hf_pretrain/"
      "tp_zero1_llama3_8B_hf_pretrain.sh @v2.28.0 (22cadad): USE_FLASH_ATTENTION=1",
      "src/neuronx_distributed/parallel_layers/grads.py:277-280 @v2.28.0: bucketed all-reduce, a compiler hint "
      "under XLA (not a stream overlap)",
      "--use_zero_1: ZeRO-1 (no parameter gathers under compute)",
      "parallel_layers/layers.py:434-536 @v2.28.0: LinearWithAsyncCommunication (backward only; next feature)",
      "parallel_layers/layers.py:434-536 @v2.28.0: the async grad all-reduce is a scheduling hint under XLA (the "
      "compiler orders it): not modelled"},
     NULL, 0, "", "", ""},
    {"costbench", "", 1, {NONE_SPAN, NONE_SPAN}, 1, 1, 0, 0,
     "costbench train: the tiled attention kernel, the all-reduce overlapped with the backward",
     {"kernels/attention.c (tiled)", "costbench train: bucketed all-reduce under the backward",
      "no ZeRO-3", "no tensor parallelism", "no tensor parallelism"},
     NULL, 0, "", "", ""},
};
enum { NFRAMEWORKS = sizeof frameworks / sizeof frameworks[0] };

const step_framework *step_framework_default(void) { return &frameworks[0]; }

const step_framework *step_framework_table(int *n)
{
    *n = NFRAMEWORKS;
    return frameworks;
}

int step_framework_version_key(const char *version, double *key)
{
    static const char *const prefixes[] = {"core_v", "core_r", "v", "r"};
    const char *p = version;
    for (int k = 0; k < 4; k++)
        if (strncmp(p, prefixes[k], strlen(prefixes[k])) == 0) {
            p += strlen(prefixes[k]);
            break;
        }
    if (!isdigit((unsigned char)*p)) return -1;
    char *end;
    errno = 0;
    long major = strtol(p, &end, 10), minor = 0;
    if (errno || major > 100000) return -1;
    if (*end == '.' && isdigit((unsigned char)end[1])) {
        minor = strtol(end + 1, &end, 10);
        if (errno || minor > 999) return -1;
    }
    *key = (double)major + (double)minor / 1000.0;
    return 0;
}

/* The era of `name` flagged as its default, NULL when the name has none. */
static const step_framework *era_default(const char *name)
{
    for (int i = 0; i < NFRAMEWORKS; i++)
        if (strcmp(frameworks[i].name, name) == 0 && frameworks[i].is_default) return &frameworks[i];
    return NULL;
}

/* The era of `name` whose spans hold key, NULL when none. */
static const step_framework *era_of(const char *name, double key)
{
    for (int i = 0; i < NFRAMEWORKS; i++) {
        const step_framework *f = &frameworks[i];
        for (int k = 0; k < 2 && strcmp(f->name, name) == 0; k++)
            if (f->spans[k].hi > f->spans[k].lo && key >= f->spans[k].lo && key < f->spans[k].hi) return f;
    }
    return NULL;
}

/* "2020, 2021, 2022" (the eras of name) into buf. */
static void eras_list(const char *name, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < NFRAMEWORKS && used < n; i++) {
        if (strcmp(frameworks[i].name, name) != 0) continue;
        int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", frameworks[i].version);
        if (w < 0) break;
        used += (size_t)w;
    }
}

const step_framework *step_framework_find_version(const char *name, const char *version, char *note, size_t n)
{
    char canon[64];
    const char *ignored;
    framework_split(name ? name : "", canon, sizeof canon, &ignored);
    if (note && n) note[0] = '\0';
    const step_framework *d = era_default(canon);
    if (!d) {
        if (note && n && canon[0])
            snprintf(note, n, "unknown framework '%s': %s's features assumed", canon, step_framework_default()->name);
        return step_framework_default();
    }
    if (!version || !*version) return d;
    double key;
    /* megatron-lm's repository tags Megatron-Core's releases too (core_r0.8.0): its eras are one family */
    const step_framework *f = step_framework_version_key(version, &key) == 0 ? era_of(canon, key) : NULL;
    if (!f && strcmp(canon, "megatron-lm") == 0 && strncmp(version, "core_", 5) == 0)
        f = era_of("megatron-core", key);
    if (f) return f;
    if (note && n) {
        char eras[256];
        eras_list(canon, eras, sizeof eras);
        snprintf(note, n, "framework %s: unknown version '%s' (known: %s): its default era %s assumed", canon, version,
                 eras, d->version);
    }
    return d;
}

const step_framework *step_framework_find_spec(const char *spec, char *note, size_t n)
{
    char name[64];
    const char *version;
    framework_split(spec ? spec : "", name, sizeof name, &version);
    return step_framework_find_version(name, version, note, n);
}

const step_framework *step_framework_find(const char *spec) { return step_framework_find_spec(spec, NULL, 0); }

void step_framework_list(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < NFRAMEWORKS && used < n; i++) {
        if (i > 0 && strcmp(frameworks[i - 1].name, frameworks[i].name) == 0) continue; /* eras of one name */
        int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", frameworks[i].name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

void step_framework_label(const step_framework *fw, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", fw->name, *fw->version ? " " : "", fw->version);
}

void step_framework_flag_help(char *buf, size_t n)
{
    char names[512];
    step_framework_list(names, sizeof names);
    snprintf(buf, n,
             "the framework's features (attention kernel, gradient overlap, prefetched gathers, TP overlap): NAME or "
             "NAME@VERSION, NAME one of %s (default %s: flash attention, nothing overlapped; a version picks the "
             "era, e.g. megatron-lm@2021, megatron-core@core_r0.8.0, nemo@2.x)",
             names, step_framework_default()->name);
}
