/* pubmodel.c: a published run as the step model of report/predict/scale.h (see pubmodel.h for the rule
 * of every field). */
#include "pubmodel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../common/err.h"
#include "../../common/frameworks.h"
#include "../../common/machine.h"
#include "attnpick.h"
#include "measrun.h"
#include "stepmodel.h"

int hw_this_machine(const hw_table *ht, const char *instance, double peak_tflops_per_rank, long ranks, hw_row *hw,
                    char *why, size_t n)
{
    const hw_row *profile = NULL;
    for (int i = 0; i < ht->n && !profile; i++)
        if (machine_is_this_machine(ht->rows[i].instance)) profile = &ht->rows[i];
    if (!profile && ranks > 1)
        return snprintf(why, n,
                        "a run measured here on %ld ranks needs this machine's interconnect, and %s has no '%s' row",
                        ranks, ht->path, CB_THIS_MACHINE " (per rank)"),
               CB_EUSAGE;
    *hw = profile ? *profile
                  : (hw_row){.accelerator = "CPU cores of one rank", .mem_gib = NAN, .mem_gb_per_s = NAN,
                             .intra_gb_per_s = NAN, .net_gbit_per_s = NAN, .net_latency_us = NAN,
                             .source = "the row's own measured peak"};
    snprintf(hw->instance, sizeof hw->instance, "%s", instance);
    hw->accelerators = hw->workers = 1;
    hw->bf16_tflops = hw->fp32_tflops = peak_tflops_per_rank;
    return 0;
}

/* item appended to the ", "-separated list in buf (k characters used so far); the new length. */
static size_t diff_add(char *buf, size_t n, size_t k, const char *item)
{
    if (k < n) k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", item);
    return k;
}

/* Two figures the same (both unknown: the same). */
static int same_figure(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* The figures two instance types differ in, "network 1600 Gbit/s against 800" ("" when none). */
static void instance_diff(const hw_row *used, const hw_row *other, char *buf, size_t n)
{
    char item[160];
    size_t k = 0;
    buf[0] = '\0';
    if (strcmp(used->accelerator, other->accelerator) != 0)
        snprintf(item, sizeof item, "device %s against %s", other->accelerator, used->accelerator),
            k = diff_add(buf, n, k, item);
    if (used->accelerators != other->accelerators)
        snprintf(item, sizeof item, "%d devices against %d", other->accelerators, used->accelerators),
            k = diff_add(buf, n, k, item);
    if (!same_figure(used->net_gbit_per_s, other->net_gbit_per_s))
        snprintf(item, sizeof item, "network %g Gbit/s against %g%s", other->net_gbit_per_s, used->net_gbit_per_s,
                 used->net_source[0] ? " (measured: data/hardware.csv network_source)" : ""),
            k = diff_add(buf, n, k, item);
    if (!same_figure(used->intra_gb_per_s, other->intra_gb_per_s))
        snprintf(item, sizeof item, "device link %g GB/s against %g", other->intra_gb_per_s, used->intra_gb_per_s),
            k = diff_add(buf, n, k, item);
}

/* The instance type a row names, in ht: as written; or a published "A/B" (either of two, the
 * source does not say which: trn1.32xlarge/trn1n.32xlarge): the first of them ht knows, the note
 * saying which was used and how the other differs. NULL with the reason in note when none is. */
static const hw_row *pub_instance(const char *name, const hw_table *ht, char *note, size_t n)
{
    const hw_row *h = hardware_find(ht, name);
    const char *slash = strchr(name, '/');
    note[0] = '\0';
    if (h || !slash) {
        if (!h) snprintf(note, n, "column 'instance_type': unknown instance type '%s' (not in %s)", name, ht->path);
        return h;
    }
    char a[64], b[64];
    snprintf(a, sizeof a, "%.*s", (int)(slash - name), name);
    snprintf(b, sizeof b, "%s", slash + 1);
    const hw_row *ha = hardware_find(ht, a), *hb = hardware_find(ht, b), *used = ha ? ha : hb;
    if (!used)
        return snprintf(note, n, "column 'instance_type': unknown instance type '%s' (neither '%s' nor '%s' is in %s)",
                        name, a, b, ht->path),
               NULL;
    char diff[256] = "";
    if (ha && hb) instance_diff(ha, hb, diff, sizeof diff);
    snprintf(note, n, "instance '%s': %s used (%s%s%s)", name, used->instance, ha ? b : a,
             !(ha && hb) ? " unknown" : diff[0] ? " differs: " : " the same figures", diff);
    return used;
}


int pub_names_resolve(const pub_row *r, const pub_model_env *env, char *note, size_t n)
{
    note[0] = '\0';
    if (r->unknown[0]) return snprintf(note, n, "%s", r->unknown), CB_EUSAGE;
    char dev[400] = "", inst[320] = "";
    const dev_row *d = devices_find(env->dt, r->device);
    if (d) devices_family_note(d, dev, sizeof dev);
    if (*r->instance && !pub_instance(r->instance, env->ht, inst, sizeof inst))
        return snprintf(note, n, "%s", inst), CB_EUSAGE;
    /* an unknown framework (or version) is named by pub_framework's note (frameworks.h) */
    const char *part[2] = {dev, inst};
    size_t k = 0;
    for (int i = 0; i < 2; i++)
        if (part[i][0] && k < n) k += (size_t)snprintf(note + k, n - k, "%s%s", k ? "; " : "", part[i]);
    return 0;
}

/* The node the row ran on: its instance type, or `per_node` of its device on its network; the
 * flags' link overrides applied. A run on part of one node is one node of the devices it used. */
static int pub_hardware(const pub_row *r, const pub_model_env *env, hw_row *hw, char *why, size_t n)
{
    if (strcmp(r->device, CB_THIS_MACHINE) == 0) {
        int rc = hw_this_machine(env->ht, CB_THIS_MACHINE, r->peak_tflops, r->devices, hw, why, n);
        if (rc == 0 && env->ov) hw_apply_overrides(hw, env->ov);
        return rc;
    }
    const dev_row *d = devices_find(env->dt, r->device);
    if (!d)
        return snprintf(why, n, "%s", r->unknown[0] ? r->unknown : "column 'device': unknown device"), CB_EUSAGE;
    long per_node = r->devices < r->devices_per_node ? r->devices : r->devices_per_node;
    if (*r->instance) {
        const hw_row *h = pub_instance(r->instance, env->ht, why, n);
        if (!h) return CB_EUSAGE;
        why[0] = '\0'; /* the A/B note is validate's (pub_names_resolve), not a reason */
        if (h->accelerators != r->devices_per_node)
            return snprintf(why, n, "column 'devices_per_node': %ld, but %s holds %d accelerators (%s)",
                            r->devices_per_node, h->instance, h->accelerators, env->ht->path),
                   CB_EUSAGE;
        *hw = *h;
        hw->accelerators = (int)per_node;
    } else {
        /* a run that does not state its network: the device's reference node's (a DGX), when listed */
        double net = isnan(r->node_net_gbps) && d->node_net_gbps > 0 ? d->node_net_gbps : r->node_net_gbps;
        hw_from_device(d, (int)per_node, net, NAN, hw);
    }
    if (env->ov) hw_apply_overrides(hw, env->ov);
    return 0;
}

/* The precision as the step model's, and the peak it runs against in the model's slot for it
 * (fp16-mixed: the device's FP16 peak in the 16-bit slot; fp8: its GEMMs at the FP8 peak, its casts
 * as its fp8_recipe column says: delayed scaling when empty, Megatron-Core's default --fp8-recipe,
 * megatron/core/transformer/transformer_config.py:573 @core_v0.19.0). */
static int pub_precision(const pub_row *r, meas_run *run, char *why, size_t n)
{
    const char *p = r->precision;
    const int fp16 = strcmp(p, PRECISION_NAME_FP16_MIXED) == 0, fp8 = strcmp(p, PRECISION_NAME_FP8) == 0;
    if (!*p || fp16 || fp8) run->precision = PRECISION_BF16_MIXED; /* the 16-bit slot; fp8 GEMMs at the FP8 peak */
    else if (precision_parse(p, &run->precision) != 0)
        return snprintf(why, n, "column 'precision': '%s' is none of %s", p, precision_column_names_text()), CB_EUSAGE;
    if (fp16) scale_hw_for_precision(&run->hw, p);
    if (fp8) run->fp8 = 1;
    static const op_fp8_recipe recipe[PUB_NFP8_RECIPES] = {[PUB_FP8_DELAYED] = OP_FP8_DELAYED,
                                                           [PUB_FP8_CURRENT] = OP_FP8_CURRENT,
                                                           [PUB_FP8_MXFP8] = OP_FP8_MXFP8};
    run->fp8_recipe = fp8 && r->fp8_recipe >= 0 ? recipe[r->fp8_recipe] : OP_FP8_DELAYED;
    return 0;
}

/* What only a published row states, checked: an fp8 run's FP8 peak, its devices filling whole
 * nodes (its node count into run->nodes), its cp dividing seq_len. */
static int pub_own_check(const pub_row *r, meas_run *run, char *why, size_t n)
{
    if (run->fp8 && !(run->hw.fp8_tflops > 0))
        return snprintf(why, n, "column 'precision': fp8 on %s, which has no dense FP8 peak", r->device), CB_EUSAGE;
    long per_node = run->hw.accelerators;
    if (r->devices % per_node != 0)
        return snprintf(why, n, "column 'devices': %ld devices fill no whole number of %ld-device nodes", r->devices,
                        per_node),
               CB_EUSAGE;
    run->nodes = r->devices / per_node;
    if ((long)r->seq_len % run->cp != 0)
        return snprintf(why, n, "column 'cp': cp %d does not divide seq_len %ld", run->cp, r->seq_len), CB_EUSAGE;
    return 0;
}

/* The stated dp against the replicas the layout makes. */
static int pub_dp_check(const pub_row *r, const scale_model *s, long nodes, char *why, size_t n)
{
    long D = (long)s->hw.accelerators * s->hw.workers, R = nodes * D / scale_replica_ranks(s);
    if (r->dp > 0 && r->dp != R)
        return snprintf(why, n,
                        "column 'dp': %d, but %ld nodes of %ld ranks at tp %d x pp %d x cp %d make %ld replicas", r->dp,
                        nodes, D, s->tp, s->pp, s->cp, R),
               CB_EUSAGE;
    return 0;
}

/* The framework's features (report/predict/frameworks.h), its version's era, then what the row
 * states: its overlap list and attention kernel beat the era's defaults. A default TP overlap needs
 * sequence parallelism (Megatron asserts it: megatron/training/arguments.py:1401-1402
 * @core_v0.19.0; NeMo's MegatronCommOverlapCallback and Megatron-Bridge's CommOverlapConfig force it
 * off without: megatron_comm_overlap.py:141-151 @v2.4.0, comm_overlap.py:439-449 @v0.6.0). An
 * unknown version is named in why (the row still maps: the default era), as a kernel the device has
 * no attention curve for. compile is recorded, not a term: no kernel-level measurement gives it a
 * figure. */
static void pub_framework(const pub_row *r, const pub_model_env *env, meas_run *run, char *why, size_t n)
{
    const step_framework *fw = step_framework_find_version(r->framework, r->framework_version, why, n);
    run->attn_flash = fw->tiled_attention;
    run->grad_overlap = fw->grad_overlap, run->gather_prefetch = fw->gather_prefetch;
    run->tp_overlap = fw->tp_overlap && run->sp;
    run->tp_bwd_overlap = fw->tp_bwd_overlap; /* the async backward collectives: no flag a row states turns them off */
    if (r->overlap >= 0) {
        run->grad_overlap = (r->overlap & PUB_OVERLAP_GRAD) != 0;
        run->gather_prefetch = (r->overlap & PUB_OVERLAP_PARAM) != 0;
        run->tp_overlap = (r->overlap & PUB_OVERLAP_TP) != 0;
    }
    if (r->attention >= 0) run->attn_flash = r->attention != PUB_ATTN_MATERIALISED;
    /* the kernel's measured curve on the device (attnpick.h); a kernel it has none for is named */
    char note[512];
    step_attn_apply(env->dt, fw, r->attention >= 0 ? r->attention : ATTN_STATED_NONE, &run->hw, note, sizeof note);
    size_t used = strlen(why);
    if (note[0] && used + 3 < n) snprintf(why + used, n - used, "%s%s", used ? "; " : "", note);
}

/* Layers that do not split evenly into pp x vp stages (Megatron-Core's uneven pipelines: Llama 3.1
 * 405B's 126 layers over 8 x 4): the split the row's framework documents for them
 * (frameworks.h's uneven_split_source: the embedding and the loss counted as one layer each, L + 2
 * split evenly, so the first and the last rank hold (L + 2) / pp - 1 layers over their vp chunks);
 * none, or L + 2 not splitting either: not predicted, why says so. */
static int pub_pipeline_split(const pub_row *r, meas_run *run, char *why, size_t n)
{
    int vp = r->vp > 1 ? r->vp : 1, stages = r->pp * vp;
    if (stages < 2 || r->layers % stages == 0) return 0;
    char note[256];
    const step_framework *fw = step_framework_find_version(r->framework, r->framework_version, note, sizeof note);
    if (fw->uneven_split_source && (r->layers + 2) % stages == 0 && (r->layers + 2) / stages >= 1 &&
        (r->layers + 2) / r->pp >= 2) {
        run->pp_uneven = 1;
        run->pp_first_layers = run->pp_last_layers = (r->layers + 2) / r->pp - 1;
        return 0;
    }
    return snprintf(why, n,
                    "columns 'layers', 'pp', 'vp': %d layers do not split evenly into pp %d x vp %d stages (an uneven "
                    "pipeline; %s): not predicted",
                    r->layers, r->pp, vp,
                    fw->uneven_split_source ? "nor do the layers plus the embedding and the loss"
                                            : "the framework documents no split for it"),
           CB_EUSAGE;
}

/* The share of a stage's layers a row's full recompute covers: recompute_layers N of the L / (pp vp)
 * layers of a (virtual) stage (Megatron-Core's --recompute-method block recomputes the first N of
 * each: megatron/core/transformer/transformer_block.py, _checkpointed_forward); 0 (all) when the row
 * states none. The uniform method recomputes every layer (in groups of N), i.e. full: such a row
 * leaves the column empty. */
static double pub_recompute_share(const pub_row *r)
{
    if (r->recompute != RECOMPUTE_FULL || r->recompute_layers < 1) return 0;
    double per_stage = (double)r->layers / ((double)r->pp * (r->vp > 1 ? r->vp : 1));
    return r->recompute_layers >= per_stage ? 0 : r->recompute_layers / per_stage;
}

/* The run a published row states (report/predict/measrun.h): its shape, node, precision, layout,
 * sharding, recomputation and framework; what it cannot state from `defaults`. */
static int pub_run(const pub_row *r, const char *path, const pub_model_env *env, const scale_model *defaults,
                   meas_run *run, char *why, size_t n)
{
    meas_run_init(run, defaults);
    run->cfg = defaults->cfg;
    if (published_config(r, path, &run->cfg) != 0)
        return snprintf(why, n, "columns 'arch' to 'vocab': a model shape the step model cannot take (above)"),
               CB_EUSAGE;
    int rc = pub_pipeline_split(r, run, why, n); /* its shape read: the naive's */
    if (rc == 0) rc = pub_hardware(r, env, &run->hw, why, n);
    if (rc == 0) rc = pub_precision(r, run, why, n);
    if (rc != 0) return rc;
    run->tp = r->tp, run->pp = r->pp, run->vp = r->vp, run->cp = r->cp > 1 ? r->cp : 1;
    run->seq = r->seq_len, run->global_batch = r->global_batch, run->micro_batch = r->micro_batch;
    meas_run_sharding(run, r->sharding);
    meas_run_recompute(run, r->recompute);
    run->recompute_share = pub_recompute_share(r);
    run->sp = r->sequence_parallel == 1 && r->tp > 1;
    pub_framework(r, env, run, why, n);
    run->seq_per_s = r->seq_per_s;
    return pub_own_check(r, run, why, n);
}

/* The published-runs schema's columns, as meas_run_check names them. */
static const meas_run_columns pub_columns = {.tp = "tp", .pp = "pp", .micro_batch = "micro_batch",
                                             .global_batch = "global_batch", .ranks = "devices", .nodes = "devices",
                                             .peak = "precision"};

int pub_scale_model(const pub_row *r, const char *path, const pub_model_env *env, const scale_model *defaults,
                    scale_model *s, long *nodes, char *why, size_t n)
{
    meas_run run;
    why[0] = '\0';
    *s = *defaults;
    int rc = pub_run(r, path, env, defaults, &run, why, n);
    if (rc != 0) s->cfg = run.cfg; /* validate's naive baseline reads a shape that mapped */
    if (rc == 0) meas_run_model(&run, defaults, env->latency_us, s);
    if (rc == 0) rc = meas_run_check(&run, s, &pub_columns, r->precision, why, n);
    if (rc == 0) rc = pub_dp_check(r, s, run.nodes, why, n);
    if (rc != 0) return rc;
    *nodes = run.nodes;
    s->t_mb_s = NAN;
    step_profile_fill(s); /* the row's step, once */
    return 0;
}
