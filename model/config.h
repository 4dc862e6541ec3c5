/* config.h: model architectures (data/models.csv) by name. */
#ifndef CB_CONFIG_H
#define CB_CONFIG_H

typedef struct {
    char name[48];
    char family[16];     /* pythia, neox, gpt3 */
    int L;               /* layers */
    int C;               /* d_model */
    int NH;              /* heads */
    int HS;              /* head size C / NH */
    int V;               /* vocabulary, padded */
    int max_T;           /* max sequence length */
    double rotary_pct;   /* share of each head's dims rotated (0: none) */
    double rotary_base;
    int parallel_residual;
    int tied_embeddings;
    int learned_pos;     /* learned positional embeddings (GPT-3) */
    char source[256];
} model_config;

/* Loads every preset of `path`. Returns 0 or CB_EFAIL (file:line error printed). */
int model_presets_load(const char *path, model_config **out, int *n);
/* Finds `name` in data/models.csv (machine_data_dir()). Unknown name: CB_EUSAGE with the list.
 * A broken file: CB_EFAIL. */
int model_preset_find(const char *name, model_config *out);

#endif
