#include "modelflags.h"

#include "err.h"

int model_flags_config(const model_flags *f, const char *name, model_config *cfg)
{
    int rc = model_preset_find_in(f->models_path, name, cfg);
    return rc != 0 ? rc : model_config_override(cfg, &f->ov);
}

int model_flags_seq_check(const model_flags *f, const model_config *cfg, long seq)
{
    if (seq <= cfg->max_T) return 0;
    if (f->ov.max_seq_len)
        return err_usage("flag '--seq': %ld exceeds the max_seq_len %ld that '--max-seq-len' gives %s", seq,
                         f->ov.max_seq_len, cfg->name);
    err_usage("flag '--seq': %ld exceeds %s's max_seq_len %d", seq, cfg->name, cfg->max_T);
    err_hint("give '--max-seq-len %ld' to describe the model at that length", seq);
    return CB_EUSAGE;
}
