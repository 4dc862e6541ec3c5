/* published.c: published training runs (data/reference/published/SCHEMA.md) as an input, and the
 * FLOP conventions their TFLOP/s and MFU figures are counted in. */
#include "published.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/csvio.h"
#include "../../common/err.h"
#include "../../common/machine.h"
#include "../../common/precision.h"
#include "../../common/schema.h"
#include "../../common/files.h"

const char *const pub_metric_names[6] = {"seq_per_s",         "tokens_per_s", "tokens_per_s_per_device",
                                         "tflops_per_device", "mfu_pct",      "step_time_s"};
const char *const flop_convention_names[5] = {"", "megatron-2021", "megatron-core", "llm-foundry", "palm"};
const char *const pub_overlap_names[PUB_NOVERLAPS] = {"grad_reduce", "param_gather", "tp_comm"};
const char *const pub_attention_names[PUB_NATTN] = {"flash", "cudnn", "materialised"};
const char *const pub_fp8_recipe_names[PUB_NFP8_RECIPES] = {"delayed", "current", "mxfp8"};
static const char *const sharding_names[5] = {"none", "zero1", "zero2", "zero3", "hybrid"};
static const char *const recompute_names[3] = {"none", "selective", "full"};
/* The precisions SCHEMA.md allows: names of common/precision.h, bf16 its alias (full bf16 of
 * either rounding: the numbers of a published run do not depend on it), and the two it names for
 * other systems. */
const char *const pub_precision_names[PUB_NPRECISIONS] = {"bf16-mixed", PRECISION_NAME_FP16_MIXED,
                                                          PRECISION_NAME_FP8, "fp32", "bf16"};
/* The schema's arch values and the data/models.csv family whose presets carry that architecture
 * (norm, MLP, positions, rotary, biases, residual): the config of a row is that family's first
 * preset with the row's shape. */
static const char *const arch_names[5] = {"gpt", "neox", "llama", "mpt", "gptj"};
static const char *const arch_families[5] = {"gpt3", "neox", "llama2", "mpt", "gpt-j"};

/* The seq_per_s cell a file gives must agree with the one computed from metric and value. */
#define PUB_AGREE_REL 0.005

/* The schema's columns, in its order: the one table the loader below and the writer of an imported
 * row (logs/logrow.c) use. Required: the column must be in the header and its cell non-empty; the
 * others may be absent (every cell empty). Numbers: the range allowed. */
const pub_col pub_cols[PUB_NCOLS] = {
    [PUB_COL_ID] = {"id", 1, 0, 0},
    [PUB_COL_SOURCE] = {"source", 1, 0, 0},
    [PUB_COL_FRAMEWORK] = {"framework", 1, 0, 0},
    [PUB_COL_DEVICE] = {"device", 1, 0, 0},
    [PUB_COL_DEVICES] = {"devices", 1, 1, 10000000},
    [PUB_COL_PER_NODE] = {"devices_per_node", 1, 1, 100000},
    [PUB_COL_NET] = {"node_net_gbps", 0, 1e-3, 1e7},
    [PUB_COL_INSTANCE] = {"instance_type", 0, 0, 0},
    [PUB_COL_MODEL] = {"model", 1, 0, 0},
    [PUB_COL_ARCH] = {"arch", 1, 0, 0},
    [PUB_COL_LAYERS] = {"layers", 1, 1, 1000},
    [PUB_COL_D_MODEL] = {"d_model", 1, 1, 131072},
    [PUB_COL_HEADS] = {"heads", 1, 1, 4096},
    [PUB_COL_KV_HEADS] = {"kv_heads", 0, 1, 4096},
    [PUB_COL_FFN] = {"ffn_dim", 0, 1, 1048576},
    [PUB_COL_VOCAB] = {"vocab", 1, 1, 10000000},
    [PUB_COL_PARAMS] = {"params", 0, 1, 1e16},
    [PUB_COL_TIED] = {"tied_embeddings", 0, 0, 0},
    [PUB_COL_SEQ_LEN] = {"seq_len", 1, 1, CB_MAX_SEQ_LEN},
    [PUB_COL_GLOBAL_BATCH] = {"global_batch", 1, 1, CB_MAX_GLOBAL_BATCH},
    [PUB_COL_MICRO_BATCH] = {"micro_batch", 0, 1, CB_MAX_GLOBAL_BATCH},
    [PUB_COL_TP] = {"tp", 1, 1, 65536},
    [PUB_COL_PP] = {"pp", 1, 1, 65536},
    [PUB_COL_DP] = {"dp", 1, 1, 10000000},
    [PUB_COL_CP] = {"cp", 0, 1, 65536},
    [PUB_COL_VP] = {"vp", 0, 1, 1000},
    [PUB_COL_SEQ_PAR] = {"sequence_parallel", 0, 0, 0},
    [PUB_COL_SHARDING] = {"sharding", 0, 0, 0},
    [PUB_COL_RECOMPUTE] = {"recompute", 0, 0, 0},
    [PUB_COL_PRECISION] = {"precision", 0, 0, 0},
    [PUB_COL_METRIC] = {"metric", 1, 0, 0},
    [PUB_COL_VALUE] = {"value", 1, 1e-12, 1e18},
    [PUB_COL_CONVENTION] = {"flop_convention", 0, 0, 0},
    [PUB_COL_PEAK] = {"peak_tflops", 0, 1e-6, 1e7},
    [PUB_COL_SEQ_PER_S] = {"seq_per_s", 0, 1e-12, 1e15},
    [PUB_COL_FW_VERSION] = {"framework_version", 0, 0, 0},
    [PUB_COL_OVERLAP] = {"overlap", 0, 0, 0},
    [PUB_COL_ATTENTION] = {"attention", 0, 0, 0},
    [PUB_COL_COMPILE] = {"compile", 0, 0, 0},
    [PUB_COL_FP8_RECIPE] = {"fp8_recipe", 0, 0, 0},
    [PUB_COL_RECOMPUTE_LAYERS] = {"recompute_layers", 0, 1, 1000},
    [PUB_COL_NOTES] = {"notes", 0, 0, 0},
};

/* ------------------------------------------------------------------ cells */

static int cell_empty(const table *t, int row, int c) { return c < 0 || *table_cell(t, row, c) == '\0'; }

/* "file:line: column 'x'" of column i in row `row`. */
#define WHERE(t, row, i) (t)->path, (t)->lines[row], pub_cols[i].name

/* A text cell copied into dst: "" when optional and empty; a required one must be given. */
static int get_text(const table *t, int row, const int *col, int i, char *dst, size_t n)
{
    const char *s = "";
    dst[0] = '\0';
    if (pub_cols[i].required && table_get_str(t, row, col[i], &s) != 0) return CB_EUSAGE;
    if (!pub_cols[i].required && !cell_empty(t, row, col[i])) s = table_cell(t, row, col[i]);
    if (strlen(s) >= n)
        return err_usage("%s:%d: column '%s': expected at most %zu characters, got %zu", WHERE(t, row, i), n - 1,
                         strlen(s));
    snprintf(dst, n, "%s", s);
    return 0;
}

/* An integer cell in the column's range; `dflt` when optional and empty. */
static int get_long(const table *t, int row, const int *col, int i, long dflt, long *out)
{
    *out = dflt;
    if (!pub_cols[i].required && cell_empty(t, row, col[i])) return 0;
    return table_get_long(t, row, col[i], (long)pub_cols[i].lo, (long)pub_cols[i].hi, out) == 0 ? 0 : CB_EUSAGE;
}

static int get_int(const table *t, int row, const int *col, int i, int dflt, int *out)
{
    long v;
    if (get_long(t, row, col, i, dflt, &v) != 0) return CB_EUSAGE;
    *out = (int)v;
    return 0;
}

/* A number cell in the column's range; NaN when optional and empty. */
static int get_num(const table *t, int row, const int *col, int i, double *out)
{
    *out = NAN;
    if (!pub_cols[i].required && cell_empty(t, row, col[i])) return 0;
    return table_get_double(t, row, col[i], pub_cols[i].lo, pub_cols[i].hi, out) == 0 ? 0 : CB_EUSAGE;
}

/* One of names[0..n) spelled exactly as the schema does; `dflt` when optional and empty. */
static int get_word(const table *t, int row, const int *col, int i, const char *const *names, int n, int dflt, int *out)
{
    *out = dflt;
    if (!pub_cols[i].required && cell_empty(t, row, col[i])) return 0;
    return table_get_word(t, row, col[i], names, n, out) == 0 ? 0 : CB_EUSAGE;
}

/* true / false as the schema spells them: 1 / 0; -1 when empty. */
static int get_flag(const table *t, int row, const int *col, int i, int *out)
{
    static const char *const tf[2] = {"false", "true"};
    return get_word(t, row, col, i, tf, 2, -1, out);
}

/* ------------------------------------------------------------------ one row */

/* What ran where: id, source, framework, device, the nodes, the precision. A device unknown to dt
 * is an error of the file when `strict` (a row about to be written), else of the row alone: its
 * reason in r->unknown, the rest of the row checked as any other. */
static int row_run(const table *t, int i, const int *col, const dev_table *dt, int strict, pub_row *r,
                   const dev_row **dev)
{
    int prec = 0;
    if (get_text(t, i, col, PUB_COL_ID, r->id, sizeof r->id) ||
        get_text(t, i, col, PUB_COL_SOURCE, r->source, sizeof r->source) ||
        get_text(t, i, col, PUB_COL_FRAMEWORK, r->framework, sizeof r->framework) ||
        get_text(t, i, col, PUB_COL_DEVICE, r->device, sizeof r->device))
        return CB_EUSAGE;
    r->unknown[0] = '\0';
    /* a run measured here (costbench train): its peak is the measured one, in peak_tflops */
    if (!(*dev = devices_find(dt, r->device)) && strcmp(r->device, CB_THIS_MACHINE) != 0) {
        char known[1024];
        devices_list(dt, known, sizeof known);
        if (strict)
            return err_usage("%s:%d: column 'device': expected a device of %s (%s), got '%s' (or '%s': a run "
                             "measured here)",
                             t->path, t->lines[i], dt->path, known, r->device, CB_THIS_MACHINE);
        snprintf(r->unknown, sizeof r->unknown, "column 'device': unknown device '%s' (known: %.400s)", r->device,
                 known);
    }
    if (get_long(t, i, col, PUB_COL_DEVICES, 0, &r->devices) || get_long(t, i, col, PUB_COL_PER_NODE, 0, &r->devices_per_node) ||
        get_num(t, i, col, PUB_COL_NET, &r->node_net_gbps) ||
        get_text(t, i, col, PUB_COL_INSTANCE, r->instance, sizeof r->instance) ||
        get_word(t, i, col, PUB_COL_PRECISION, pub_precision_names, PUB_NPRECISIONS, -1, &prec))
        return CB_EUSAGE;
    snprintf(r->precision, sizeof r->precision, "%s", prec >= 0 ? pub_precision_names[prec] : "");
    return 0;
}

/* The model: name, arch, shape (kv_heads = heads and ffn_dim = 4 d_model when empty), params,
 * tied embeddings, sequence length. */
static int row_model(const table *t, int i, const int *col, pub_row *r)
{
    int arch = 0;
    if (get_text(t, i, col, PUB_COL_MODEL, r->model, sizeof r->model) ||
        get_word(t, i, col, PUB_COL_ARCH, arch_names, 5, -1, &arch) || get_int(t, i, col, PUB_COL_LAYERS, 0, &r->layers) ||
        get_int(t, i, col, PUB_COL_D_MODEL, 0, &r->d_model) || get_int(t, i, col, PUB_COL_HEADS, 0, &r->heads))
        return CB_EUSAGE;
    snprintf(r->arch, sizeof r->arch, "%s", arch_names[arch]);
    if (r->d_model % r->heads != 0)
        return err_usage("%s:%d: column 'heads': expected a divisor of d_model %d, got '%d'", t->path, t->lines[i],
                         r->d_model, r->heads);
    if (get_int(t, i, col, PUB_COL_KV_HEADS, r->heads, &r->kv_heads) ||
        get_int(t, i, col, PUB_COL_FFN, 4 * r->d_model, &r->ffn_dim) || get_int(t, i, col, PUB_COL_VOCAB, 0, &r->vocab) ||
        get_num(t, i, col, PUB_COL_PARAMS, &r->params) || get_flag(t, i, col, PUB_COL_TIED, &r->tied_embeddings) ||
        get_long(t, i, col, PUB_COL_SEQ_LEN, 0, &r->seq_len))
        return CB_EUSAGE;
    return 0;
}

/* Batch and parallel layout: global and micro batch, tp pp dp cp vp, sequence parallelism,
 * sharding, recomputation (and the layers of a stage it recomputes). */
static int row_layout(const table *t, int i, const int *col, pub_row *r)
{
    int sharding = SHARD_NONE, recompute = RECOMPUTE_NONE;
    if (get_long(t, i, col, PUB_COL_GLOBAL_BATCH, 0, &r->global_batch) ||
        get_long(t, i, col, PUB_COL_MICRO_BATCH, 0, &r->micro_batch) || get_int(t, i, col, PUB_COL_TP, 0, &r->tp) ||
        get_int(t, i, col, PUB_COL_PP, 0, &r->pp) || get_int(t, i, col, PUB_COL_DP, 0, &r->dp) ||
        get_int(t, i, col, PUB_COL_CP, 1, &r->cp) || get_int(t, i, col, PUB_COL_VP, 1, &r->vp) ||
        get_flag(t, i, col, PUB_COL_SEQ_PAR, &r->sequence_parallel) ||
        get_word(t, i, col, PUB_COL_SHARDING, sharding_names, 5, SHARD_NONE, &sharding) ||
        get_word(t, i, col, PUB_COL_RECOMPUTE, recompute_names, 3, RECOMPUTE_NONE, &recompute) ||
        get_int(t, i, col, PUB_COL_RECOMPUTE_LAYERS, 0, &r->recompute_layers))
        return CB_EUSAGE;
    r->sharding = (pub_sharding)sharding;
    r->recompute = (pub_recompute)recompute;
    return 0;
}

/* The published figure: metric, value, and the FLOP convention and peak a FLOP metric needs. */
static int row_metric(const table *t, int i, const int *col, pub_row *r)
{
    int metric = 0, conv = 0;
    if (get_word(t, i, col, PUB_COL_METRIC, pub_metric_names, 6, -1, &metric) || get_num(t, i, col, PUB_COL_VALUE, &r->value) ||
        get_word(t, i, col, PUB_COL_CONVENTION, flop_convention_names + 1, 4, -1, &conv) ||
        get_num(t, i, col, PUB_COL_PEAK, &r->peak_tflops) || get_num(t, i, col, PUB_COL_SEQ_PER_S, &r->seq_per_s_column))
        return CB_EUSAGE;
    r->metric = (pub_metric)metric;
    int flop_metric = r->metric == PUB_TFLOPS_PER_DEVICE || r->metric == PUB_MFU_PCT;
    r->convention = flop_metric ? (flop_convention)(conv + 1) : FLOPS_NONE;
    if (flop_metric && conv < 0)
        return err_usage("%s:%d: column 'flop_convention': metric %s needs megatron-2021, megatron-core, llm-foundry "
                         "or palm, got an "
                         "empty cell",
                         t->path, t->lines[i], pub_metric_names[metric]);
    if (r->metric == PUB_MFU_PCT && isnan(r->peak_tflops))
        return err_usage(
            "%s:%d: column 'peak_tflops': metric mfu_pct needs the per-device peak the source divides by, got an empty "
            "cell",
            t->path, t->lines[i]);
    if (r->metric == PUB_MFU_PCT && r->value > 100)
        return err_usage("%s:%d: column 'value': expected a percentage from 0 to 100 for mfu_pct, got '%s'", t->path,
                         t->lines[i], table_cell(t, i, col[PUB_COL_VALUE]));
    return 0;
}

/* recompute_layers: only with recompute full, at most the layers a (virtual) pipeline stage holds,
 * ceil(layers / (pp x vp)) (Megatron's block method counts --recompute-num-layers per virtual stage
 * under interleaving: NeMo docs/source/features/optimizations/activation_recomputation.rst). */
static int row_recompute_layers(const pub_row *r, const char *path)
{
    if (r->recompute_layers == 0) return 0;
    if (r->recompute != RECOMPUTE_FULL)
        return err_usage("%s:%d: column 'recompute_layers': the layers a stage recomputes in full need recompute "
                         "full, got recompute '%s'",
                         path, r->line, recompute_names[r->recompute]);
    long stages = (long)r->pp * (r->vp > 1 ? r->vp : 1), most = (r->layers + stages - 1) / stages;
    if (r->recompute_layers > most)
        return err_usage("%s:%d: column 'recompute_layers': expected at most the %ld layers a pipeline stage holds "
                         "(layers %d over pp %d x vp %d), got '%d'",
                         path, r->line, most, r->layers, r->pp, r->vp > 1 ? r->vp : 1, r->recompute_layers);
    return 0;
}

/* The rules between cells: whole nodes (or part of one), the layout covering every worker (tp x pp x dp x cp =
 * devices x the device's workers: Trainium ranks are NeuronCores, 2 a chip), whole
 * micro-batches. Layers that do not split evenly over the stages load: whether the step model maps
 * such a run (Megatron-Core's uneven pipelines) is report/predict/pubmodel.c's to say. */
static int row_rules(const pub_row *r, const dev_row *dev, const char *path)
{
    int line = r->line;
    /* whole nodes, or part of one (Megatron-LM 2020: 1-8 of a DGX-2's 16 V100s) */
    if (r->devices > r->devices_per_node && r->devices % r->devices_per_node != 0)
        return err_usage("%s:%d: column 'devices_per_node': expected a divisor of devices %ld (whole nodes) or more "
                         "than it (part of "
                         "one node), got '%ld'",
                         path, line, r->devices, r->devices_per_node);
    long ranks = 0, workers = 0;
    int over = __builtin_mul_overflow((long)r->tp * r->pp, (long)r->dp, &ranks) ||
               __builtin_mul_overflow(ranks, (long)r->cp, &ranks) ||
               __builtin_mul_overflow(r->devices, (long)(dev ? dev->workers : 1), &workers);
    /* a device unknown to the table: its workers per device are not known, nor checked */
    if (over || (ranks != workers && !r->unknown[0]))
        return err_usage("%s:%d: column 'dp': expected tp x pp x dp x cp = devices x workers per %s = %ld x %d = %ld, "
                         "got %d x %d x %d "
                         "x %d",
                         path, line, r->device, r->devices, dev ? dev->workers : 1, workers, r->tp, r->pp,
                         r->dp, r->cp);
    if (r->global_batch % r->dp != 0)
        return err_usage("%s:%d: column 'global_batch': expected a multiple of dp %d, got '%ld'", path, line, r->dp,
                         r->global_batch);
    long per_rank = r->global_batch / r->dp;
    /* Composer (llm-foundry) splits a rank's batch into micro-batches and runs a smaller last one
     * ("a micro batch of 11 ... 11, 11, 11, 11, 4"); Megatron-LM and NeMo need whole ones. */
    int ragged = strcmp(r->framework, "llm-foundry") == 0;
    if (r->micro_batch > 0 && (ragged ? r->micro_batch > per_rank : per_rank % r->micro_batch != 0))
        return err_usage("%s:%d: column 'global_batch': expected %s dp x micro_batch = %d x %ld, got '%ld'", path, line,
                         ragged ? "at least" : "a multiple of", r->dp, r->micro_batch, r->global_batch);
    if (r->vp > 1 && r->pp < 2)
        return err_usage("%s:%d: column 'vp': interleaving needs pp 2 or more, got vp '%d' at pp %d", path, line, r->vp,
                         r->pp);
    return row_recompute_layers(r, path);
}

/* The overlap cell: names of pub_overlap_names joined by '+', or "none"; -1 when empty. */
static int get_overlap(const table *t, int row, const int *col, int *out)
{
    *out = -1;
    if (cell_empty(t, row, col[PUB_COL_OVERLAP])) return 0;
    const char *cell = table_cell(t, row, col[PUB_COL_OVERLAP]), *p = cell;
    if (strcmp(cell, "none") == 0) return *out = 0, 0;
    int bits = 0;
    while (*p) {
        size_t len = strcspn(p, "+");
        int k = 0;
        while (k < PUB_NOVERLAPS && !(strlen(pub_overlap_names[k]) == len && strncmp(p, pub_overlap_names[k], len) == 0))
            k++;
        if (k == PUB_NOVERLAPS || (bits & (1 << k)) || (p[len] == '+' && !p[len + 1]))
            return err_usage("%s:%d: column 'overlap': expected grad_reduce, param_gather, tp_comm joined by '+' (each "
                             "once), or none, got '%s'",
                             t->path, t->lines[row], cell);
        bits |= 1 << k;
        p += len + (p[len] == '+');
    }
    *out = bits;
    return 0;
}

/* What the row states of its framework: version, overlap, attention kernel, compile, fp8 recipe
 * (an fp8 row's alone). */
static int row_framework(const table *t, int i, const int *col, pub_row *r)
{
    int attention = -1, recipe = -1;
    if (get_text(t, i, col, PUB_COL_FW_VERSION, r->framework_version, sizeof r->framework_version) ||
        get_overlap(t, i, col, &r->overlap) ||
        get_word(t, i, col, PUB_COL_ATTENTION, pub_attention_names, PUB_NATTN, -1, &attention) ||
        get_flag(t, i, col, PUB_COL_COMPILE, &r->compile) ||
        get_word(t, i, col, PUB_COL_FP8_RECIPE, pub_fp8_recipe_names, PUB_NFP8_RECIPES, -1, &recipe))
        return CB_EUSAGE;
    r->attention = attention, r->fp8_recipe = recipe;
    if (recipe >= 0 && strcmp(r->precision, PRECISION_NAME_FP8) != 0)
        return err_usage("%s:%d: column 'fp8_recipe': '%s' is an fp8 run's scaling, but precision is '%s'", t->path,
                         t->lines[i], pub_fp8_recipe_names[recipe], r->precision);
    return 0;
}

/* Row i of t into r, every cell and rule checked. */
static int row_load(const table *t, int i, const int *col, const dev_table *dt, int strict, pub_row *r)
{
    const dev_row *dev = NULL;
    r->line = t->lines[i];
    if (row_run(t, i, col, dt, strict, r, &dev) || row_model(t, i, col, r) || row_layout(t, i, col, r) ||
        row_metric(t, i, col, r) || row_framework(t, i, col, r))
        return CB_EUSAGE;
    if (!dev && !r->unknown[0] && isnan(r->peak_tflops))
        return err_usage("%s:%d: column 'peak_tflops': a run on '%s' needs the peak measured there (per device = per "
                         "rank, in the row's precision), got an empty cell",
                         t->path, r->line, CB_THIS_MACHINE);
    return row_rules(r, dev, t->path);
}

/* ------------------------------------------------------------------ the model of a row */

/* The row's model: the architecture of the first data/models.csv preset of the arch's family
 * (presets, n), the shape of the row. */
static int config_from_presets(const pub_row *r, const char *path, const model_config *presets, int n,
                               model_config *cfg)
{
    int a = 0;
    while (a < 5 && strcmp(r->arch, arch_names[a]) != 0) a++;
    const model_config *tmpl = NULL;
    for (int k = 0; a < 5 && k < n && !tmpl; k++)
        if (strcmp(presets[k].family, arch_families[a]) == 0) tmpl = &presets[k];
    if (!tmpl)
        return err_usage(
            "%s:%d: column 'arch': expected an arch with a preset in data/models.csv (gpt, neox, llama, mpt or gptj), "
            "got '%s'",
            path, r->line, r->arch);
    *cfg = *tmpl;
    snprintf(cfg->name, sizeof cfg->name, "%.47s", r->model);
    snprintf(cfg->source, sizeof cfg->source, "%.255s", r->source);
    cfg->L = r->layers, cfg->C = r->d_model, cfg->NH = r->heads, cfg->HS = r->d_model / r->heads;
    cfg->KVH = r->kv_heads, cfg->ffn = r->ffn_dim, cfg->V = r->vocab;
    cfg->max_T = (int)r->seq_len;
    if (r->tied_embeddings >= 0) cfg->tied_embeddings = r->tied_embeddings;
    const char *column;
    char why[256];
    if (model_config_check(cfg, &column, why, sizeof why) != 0)
        return err_usage("%s:%d: column '%s': %s", path, r->line, column, why);
    return 0;
}

/* data/models.csv's presets; CB_EUSAGE when it cannot be read. */
static int presets_load(model_config **presets, int *n)
{
    char mpath[CB_PATH_MAX];
    if (machine_data_file(mpath, sizeof mpath, "models.csv") != 0 || model_presets_load(mpath, presets, n) != 0)
        return CB_EUSAGE;
    return 0;
}

int published_config(const pub_row *r, const char *path, model_config *cfg)
{
    model_config *presets;
    int n;
    if (presets_load(&presets, &n) != 0) return CB_EUSAGE;
    int rc = config_from_presets(r, path, presets, n, cfg);
    free(presets);
    return rc;
}

/* ------------------------------------------------------------------ FLOP conventions */

/* FLOPs of one sequence of s tokens, forward and backward, B = 1; l layers, h = d_model, V the
 * (padded) vocabulary, P the matmul weights of one layer (Q, K, V with grouped-query K/V, the
 * attention output, 2 or 3 MLP matrices; 12 h^2 for a GPT layer), a the heads' attention per layer
 * and pass (QK^T and AV, 2 x 2 s^2 h), O the output layer (2 s h V a pass).
 *   megatron-2021  Narayanan et al. 2021 appendix: every layer GEMM 4 times (forward, recomputed
 *                  forward, two backward), the output layer 3 times:
 *                  4 (2 s l P + l a) + 3 O = 96 s l h^2 (1 + s/6h + V/16lh) for a GPT layer;
 *                  for other layers the same count of each GEMM.
 *   megatron-core  Megatron-LM megatron/training/training.py num_floating_point_operations as at
 *                  fdfcef87 (2025-03-03; the 2023-11 original, 2748e7c7, is the same with ffn 4h and
 *                  no SwiGLU); 8873b55d (2025-03-06) and later halve the attention for the causal
 *                  mask, another convention: 12 s l h^2 ((1 + g/n + s/h) + (f/h) m) + 6 s h V,
 *                  g/n kv_heads / heads, f ffn_dim, m = 3/2 for SwiGLU; = 72 s l h^2 (1 + s/6h +
 *                  V/12lh) for a GPT layer. (Its query-projection ratio kv_channels n / h is 1: the
 *                  schema has no separate head width.)
 *   llm-foundry    scripts/train/benchmarking/collect_results.py: 3 (2 N s + 4 l h s^2), N the
 *                  published NumParams (every parameter, embeddings included; counted from cfg when
 *                  params is NaN).
 *   palm           PaLM appendix B: (6 N + 12 l h s) s, N every matmul weight of the layers and
 *                  the output layer: model_flops_per_token, costbench's own count. */
double flops_per_seq(flop_convention convention, const model_config *cfg, double params, long seq)
{
    double s = (double)seq, l = cfg->L, h = cfg->C, V = cfg->V;
    double P = model_layer_matmul_params(cfg), a = 4.0 * s * s * h, O = 2.0 * s * h * V;
    switch (convention) {
    case FLOPS_MEGATRON_2021: return 4.0 * (2.0 * s * l * P + l * a) + 3.0 * O;
    case FLOPS_MEGATRON_CORE: {
        double gn = (double)model_kv_heads(cfg) / cfg->NH, m = cfg->mlp == MLP_SWIGLU ? 1.5 : 1.0;
        return 12.0 * s * l * h * h * ((1.0 + gn + s / h) + (double)model_ffn(cfg) / h * m) + 6.0 * s * h * V;
    }
    case FLOPS_LLM_FOUNDRY: {
        double N = isnan(params) ? model_params_total(cfg) : params;
        return 3.0 * (2.0 * N * s + l * a);
    }
    case FLOPS_PALM: return model_flops_per_token(cfg, (int)seq) * s;
    default: return NAN;
    }
}

double published_seq_per_s(const pub_row *r, const model_config *cfg)
{
    double v = r->value, devices = (double)r->devices, seq = (double)r->seq_len;
    switch (r->metric) {
    case PUB_SEQ_PER_S: return v;
    case PUB_TOKENS_PER_S: return v / seq;
    case PUB_TOKENS_PER_S_PER_DEVICE: return v * devices / seq;
    case PUB_TFLOPS_PER_DEVICE: return v * 1e12 * devices / flops_per_seq(r->convention, cfg, r->params, r->seq_len);
    case PUB_MFU_PCT:
        return v / 100.0 * r->peak_tflops * 1e12 * devices / flops_per_seq(r->convention, cfg, r->params, r->seq_len);
    case PUB_STEP_TIME_S: return (double)r->global_batch / v;
    }
    return NAN;
}

/* ------------------------------------------------------------------ tables */

int published_is_schema(const char *path)
{
    table t;
    if (table_load(&t, path) != 0) return CB_EFAIL;
    int yes = table_col(&t, "id", 0) >= 0 && table_col(&t, "metric", 0) >= 0 && table_col(&t, "value", 0) >= 0;
    table_free(&t);
    return yes;
}

/* Row i's seq/s from its metric, and its agreement with the file's seq_per_s cell. */
static int row_convert(pub_row *r, const char *path, const model_config *presets, int npresets)
{
    model_config cfg;
    if (config_from_presets(r, path, presets, npresets, &cfg) != 0) return CB_EUSAGE;
    r->seq_per_s = published_seq_per_s(r, &cfg);
    if (!(r->seq_per_s > 0) || !isfinite(r->seq_per_s))
        return err_usage("%s:%d: column 'value': %s %g gives no finite positive seq/s", path, r->line,
                         pub_metric_names[r->metric], r->value);
    double c = r->seq_per_s_column;
    if (!isnan(c) && fabs(r->seq_per_s - c) > PUB_AGREE_REL * c)
        return err_usage(
            "%s:%d: column 'seq_per_s': expected %.6g seq/s (from %s %g%s%s) within %g%%, got '%.10g' (%+.2f%%)", path,
            r->line, r->seq_per_s, pub_metric_names[r->metric], r->value, r->convention ? " in " : "",
            flop_convention_names[r->convention], 100 * PUB_AGREE_REL, c, 100 * (c - r->seq_per_s) / r->seq_per_s);
    return 0;
}

/* Every row of t into pt: cells, rules, unique ids, seq/s; strict: an unknown device is an error
 * of the file (row_run). */
static int rows_load(pub_table *pt, const table *t, const int *col, const dev_table *dt, int strict)
{
    model_config *presets;
    int npresets, rc = 0;
    if (presets_load(&presets, &npresets) != 0) return CB_EUSAGE;
    for (int i = 0; i < t->nrows && rc == 0; i++) {
        pub_row *r = &pt->rows[i];
        if ((rc = row_load(t, i, col, dt, strict, r)) != 0) break;
        for (int j = 0; j < i && rc == 0; j++)
            if (strcmp(pt->rows[j].id, r->id) == 0)
                rc = err_usage("%s:%d: column 'id': expected an id unique in the file, got '%s' (first at line %d)",
                               t->path, r->line, r->id, pt->rows[j].line);
        if (rc == 0) rc = row_convert(r, t->path, presets, npresets);
        if (rc == 0) pt->n = i + 1;
    }
    free(presets);
    return rc;
}

/* The loaded table t (its path the name messages use) into pt: the header's required columns, at
 * least one row, every row (strict: an unknown device fails the file, rows_load). t is freed. */
static int table_rows_load(pub_table *pt, table *t, const dev_table *dt, int strict)
{
    int col[PUB_NCOLS], rc = 0;
    for (int i = 0; i < PUB_NCOLS && rc == 0; i++)
        if ((col[i] = table_col(t, pub_cols[i].name, pub_cols[i].required)) < 0 && pub_cols[i].required)
            rc = CB_EUSAGE;
    if (rc == 0 && t->nrows == 0) rc = err_usage("%s: no published runs (a header and no rows)", t->path);
    if (rc == 0 && !(pt->rows = calloc((size_t)t->nrows, sizeof *pt->rows))) rc = err_msg("out of memory");
    if (rc == 0) rc = rows_load(pt, t, col, dt, strict);
    table_free(t);
    if (rc) published_free(pt);
    return rc ? CB_EUSAGE : 0;
}

int published_load(pub_table *pt, const char *path, const dev_table *dt)
{
    memset(pt, 0, sizeof *pt);
    snprintf(pt->path, sizeof pt->path, "%s", path);
    table t;
    if (table_load(&t, path) != 0) return CB_EUSAGE;
    return table_rows_load(pt, &t, dt, 0);
}

int published_load_text(pub_table *pt, const char *shown, const char *text, size_t len, const dev_table *dt)
{
    memset(pt, 0, sizeof *pt);
    snprintf(pt->path, sizeof pt->path, "%s", shown);
    table t;
    if (table_load_text(&t, shown, text, len) != 0) return CB_EUSAGE;
    return table_rows_load(pt, &t, dt, 1); /* a file about to be written */
}

int published_row_check(const char *const *cells, const char *shown, int line, const dev_table *dt, pub_row *r)
{
    /* a one-row table over the caller's cells (borrowed: never freed here), the header the schema's
     * columns in order, so that the loader's own functions check it and word its errors */
    char *header[PUB_NCOLS], *row[PUB_NCOLS];
    for (int c = 0; c < PUB_NCOLS; c++) header[c] = (char *)pub_cols[c].name, row[c] = (char *)cells[c];
    int col[PUB_NCOLS];
    for (int c = 0; c < PUB_NCOLS; c++) col[c] = c;
    table t = {.path = (char *)shown, .nrows = 1, .ncols = PUB_NCOLS, .header = header, .cells = row,
               .lines = &line, .header_line = line - 1};
    pub_table pt = {.rows = r};
    return rows_load(&pt, &t, col, dt, 1) == 0 ? 0 : CB_EUSAGE;
}

void published_free(pub_table *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}

const pub_row *published_find(const pub_table *t, const char *id)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].id, id) == 0) return &t->rows[i];
    return NULL;
}
