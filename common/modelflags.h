/* modelflags.h: the model flags train, scale and plan share: --models FILE (the presets --model is
 * looked up in), the shape overrides of model_config_override and --max-seq-len. One opt_spec
 * fragment for the commands' option tables, one function from the flags to the run's model, one
 * check of --seq against its limit. */
#ifndef CB_MODELFLAGS_H
#define CB_MODELFLAGS_H

#include "opts.h"
#include "presets.h"
#include "schema.h"

typedef struct {
    const char *models_path; /* --models FILE (NULL: data/models.csv) */
    model_overrides ov;      /* --layers --d-model --heads --kv-heads --ffn --vocab --max-seq-len (0: the preset's) */
} model_flags;

/* A flag takes what the models.csv column it overrides takes (common/schema.c). */
#define MODEL_FLAG_RANGE(md) (long)model_schema[md].lo, (long)model_schema[md].hi

/* The fragment, spliced into a command's `const opt_spec specs[]` (f: a model_flags *). */
#define MODEL_FLAG_SPECS(f)                                                                              \
    {"models", OPT_STR, &(f)->models_path, 0, 0, 0, 0, "FILE",                                            \
     "model presets to look --model up in: a models.csv of the same columns (default data/models.csv)"},  \
    {"layers", OPT_LONG, &(f)->ov.layers, MODEL_FLAG_RANGE(MD_LAYERS), 0, 0, "L",                         \
     "override the preset's layer count"},                                                                \
    {"d-model", OPT_LONG, &(f)->ov.dmodel, MODEL_FLAG_RANGE(MD_D_MODEL), 0, 0, "C",                       \
     "override the preset's width (the MLP width follows it; the heads stay)"},                           \
    {"heads", OPT_LONG, &(f)->ov.heads, MODEL_FLAG_RANGE(MD_HEADS), 0, 0, "NH",                           \
     "override the preset's head count"},                                                                 \
    {"kv-heads", OPT_LONG, &(f)->ov.kv_heads, MODEL_FLAG_RANGE(MD_KV_HEADS), 0, 0, "N",                   \
     "override the preset's key/value heads (grouped-query attention; heads must be a multiple of N; a "  \
     "multi-head preset stays multi-head under --heads)"},                                                \
    {"ffn", OPT_LONG, &(f)->ov.ffn, MODEL_FLAG_RANGE(MD_FFN_DIM), 0, 0, "N",                              \
     "override the preset's MLP intermediate width (default the preset's ffn / d_model ratio times "      \
     "d-model, 4 for GELU presets; SwiGLU: a multiple of 8, rounded up)"},                                \
    {"vocab", OPT_LONG, &(f)->ov.vocab, MODEL_FLAG_RANGE(MD_VOCAB), 0, 0, "V",                            \
     "override the preset's vocabulary"},                                                                 \
    {"max-seq-len", OPT_LONG, &(f)->ov.max_seq_len, MODEL_FLAG_RANGE(MD_MAX_SEQ_LEN), 0, 0, "N",          \
     "override the preset's max_seq_len, the longest --seq it takes (learned positions: that many "       \
     "position rows)"}

/* The preset `name` of --models (or data/models.csv) with the overrides applied. Returns 0,
 * CB_EUSAGE after one line (an unknown preset, with the known ones as a hint; a bad override naming
 * its flag), or CB_EFAIL after the file's file:line error. */
int model_flags_config(const model_flags *f, const char *name, model_config *cfg);
/* --seq within the model's max_seq_len: 0, or CB_EUSAGE after one line naming '--seq' and where
 * the limit came from ('--max-seq-len', or the preset's with a hint to raise it). */
int model_flags_seq_check(const model_flags *f, const model_config *cfg, long seq);

#endif
