#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/parse.h"
#include "safetensors.h"

/* Every tensor of the model with its Hugging Face name and shape, pointing into `base` (the
 * parameter, first-moment or second-moment slab). Returns the count. */
static int list_tensors(const gpt_model *m, const float *base, const char *prefix, st_out *out, char (*names)[96])
{
    const model_config *c = &m->cfg;
    int64_t C = c->C, V = c->V;
    int n = 0;
    for (int k = 0; k < P_COUNT; k++) {
        if (m->sizes[k] == 0) continue;
        const float *p = base + m->offsets[k];
        int per_layer = k >= P_LN1W && k <= P_FCPROJB;
        int layers = per_layer ? c->L : 1;
        for (int l = 0; l < layers; l++) {
            st_out *t = &out[n];
            char nm[80];
            gpt_param_name(m, k, l, nm, sizeof nm);
            snprintf(names[n], 96, "%s%s", prefix, nm);
            t->name = names[n];
            switch (k) {
            case P_WTE: case P_UNEMBED: t->ndim = 2, t->shape[0] = V, t->shape[1] = C; break;
            case P_WPE: t->ndim = 2, t->shape[0] = c->max_T, t->shape[1] = C; break;
            case P_QKVW: t->ndim = 2, t->shape[0] = 3 * C, t->shape[1] = C; break;
            case P_QKVB: t->ndim = 1, t->shape[0] = 3 * C; break;
            case P_ATTPROJW: t->ndim = 2, t->shape[0] = C, t->shape[1] = C; break;
            case P_FCW: t->ndim = 2, t->shape[0] = 4 * C, t->shape[1] = C; break;
            case P_FCB: t->ndim = 1, t->shape[0] = 4 * C; break;
            case P_FCPROJW: t->ndim = 2, t->shape[0] = C, t->shape[1] = 4 * C; break;
            default: t->ndim = 1, t->shape[0] = C; break;
            }
            size_t count = 1;
            for (int d = 0; d < t->ndim; d++) count *= (size_t)t->shape[d];
            t->data = p + (size_t)l * count;
            n++;
        }
    }
    return n;
}

static int max_tensors(const gpt_model *m) { return 8 + 12 * m->cfg.L; }

/* Safetensors metadata: key/value pairs whose values are formatted into buf[*n]. */
typedef struct {
    char buf[24][64];
    const char *kv[48];
    int n;
} meta_list;

static void meta_add(meta_list *ml, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void meta_add(meta_list *ml, const char *key, const char *fmt, ...)
{
    if (ml->n == 24) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ml->buf[ml->n], 64, fmt, ap);
    va_end(ap);
    ml->kv[2 * ml->n] = key;
    ml->kv[2 * ml->n + 1] = ml->buf[ml->n];
    ml->n++;
}

static void meta_model(const gpt_model *m, meta_list *ml)
{
    const model_config *c = &m->cfg;
    meta_add(ml, "format", "%s", "pt");
    meta_add(ml, "costbench_model", "%s", c->name);
    meta_add(ml, "layers", "%d", c->L);
    meta_add(ml, "d_model", "%d", c->C);
    meta_add(ml, "heads", "%d", c->NH);
    meta_add(ml, "vocab", "%d", c->V);
    meta_add(ml, "rotary_pct", "%.9g", c->rotary_pct);
    meta_add(ml, "parallel_residual", "%d", c->parallel_residual);
    meta_add(ml, "tied_embeddings", "%d", c->tied_embeddings);
}

static int remove_step_dir(const char *path)
{
    static const char *files[] = {"model.safetensors", "optimizer.safetensors"};
    char f[4400];
    for (int i = 0; i < 2; i++) {
        if (path_fmt(f, sizeof f, "%s/%s", path, files[i]) == 0) unlink(f);
    }
    return rmdir(path);
}

int ckpt_save(const gpt_model *m, const char *dir, const ckpt_state *st)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return err_msg("cannot create '%s': %s", dir, strerror(errno));
    char name[64], tmp[4200], final[4200], path[4400];
    snprintf(name, sizeof name, "step-%08ld", st->step);
    snprintf(tmp, sizeof tmp, "%s/%s.tmp.%ld", dir, name, (long)getpid());
    snprintf(final, sizeof final, "%s/%s", dir, name);
    remove_step_dir(tmp);
    if (mkdir(tmp, 0755) != 0) return err_msg("cannot create '%s': %s", tmp, strerror(errno));
    int nt = 2 * max_tensors(m); /* the optimizer file holds two tensors per parameter tensor */
    st_out *t = calloc((size_t)nt, sizeof *t);
    char(*names)[96] = calloc((size_t)nt, sizeof *names);
    meta_list ml;
    ml.n = 0;
    int rc = CB_EFAIL;
    if (!t || !names) {
        err_msg("out of memory");
        goto out;
    }
    meta_model(m, &ml);
    int n = list_tensors(m, m->params, "", t, names);
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    if (st_write(path, t, n, ml.kv, ml.n) != 0) goto out;
    /* optimizer: both moments, and where the loop stands */
    int n1 = list_tensors(m, m->m, "exp_avg/", t, names);
    int n2 = list_tensors(m, m->v, "exp_avg_sq/", t + n1, names + n1);
    meta_add(&ml, "step", "%ld", st->step);
    meta_add(&ml, "adam_t", "%d", m->adam_t);
    meta_add(&ml, "seed", "%llu", st->seed);
    meta_add(&ml, "micro_batch", "%d", st->B);
    meta_add(&ml, "seq", "%d", st->T);
    meta_add(&ml, "accum", "%d", st->accum);
    snprintf(path, sizeof path, "%s/optimizer.safetensors", tmp);
    if (st_write(path, t, n1 + n2, ml.kv, ml.n) != 0) goto out;
    /* publish: rename the directory, then point `latest` at it */
    char old[4300];
    snprintf(old, sizeof old, "%s.old.%ld", final, (long)getpid());
    int had = rename(final, old) == 0;
    if (rename(tmp, final) != 0) {
        err_msg("cannot rename '%s' to '%s': %s", tmp, final, strerror(errno));
        if (had) rename(old, final);
        goto out;
    }
    if (had) remove_step_dir(old);
    char latest[4300], ltmp[4400];
    snprintf(latest, sizeof latest, "%s/latest", dir);
    long prev = -1; /* the step `latest` pointed at before: kept as the fallback */
    FILE *pf = fopen(latest, "r");
    if (pf) {
        if (fscanf(pf, "step-%ld", &prev) != 1) prev = -1;
        fclose(pf);
    }
    snprintf(ltmp, sizeof ltmp, "%s.tmp.%ld", latest, (long)getpid());
    FILE *f = fopen(ltmp, "w");
    if (!f || fprintf(f, "%s\n", name) < 0 || fclose(f) != 0) {
        err_msg("cannot write '%s': %s", latest, strerror(errno));
        goto out;
    }
    if (file_commit(ltmp, latest) != 0) goto out;
    /* keep this checkpoint and the previous one; drop older ones and temporary directories
     * that killed runs left behind */
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            long s, pid;
            char extra;
            int stale_tmp = sscanf(e->d_name, "step-%ld.tmp.%ld", &s, &pid) == 2;
            int superseded = sscanf(e->d_name, "step-%ld%c", &s, &extra) == 1 && s != st->step && s != prev;
            if (stale_tmp || superseded) {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                remove_step_dir(path);
            }
        }
        closedir(d);
    }
    rc = 0;
out:
    if (rc != 0) remove_step_dir(tmp);
    free(t);
    free(names);
    return rc;
}

static int load_all(gpt_model *m, const st_file *f, float *base, const char *prefix, int weights)
{
    int nt = max_tensors(m);
    st_out *t = calloc((size_t)nt, sizeof *t);
    char(*names)[96] = calloc((size_t)nt, sizeof *names);
    if (!t || !names) {
        free(t), free(names);
        return err_msg("out of memory");
    }
    int n = list_tensors(m, base, prefix, t, names), rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        /* a tied model may load an untied checkpoint's embed_out: it is not ours to read */
        rc = st_read_f32(f, t[i].name, (float *)t[i].data, t[i].shape, t[i].ndim);
    }
    if (rc == 0 && weights) {
        /* tensors we do not know are reported (buffers of Hugging Face's module are expected) */
        for (int i = 0; i < f->n; i++) {
            const char *nm = f->t[i].name;
            int known = 0;
            for (int j = 0; j < n && !known; j++) known = strcmp(nm, t[j].name) == 0;
            if (!known && !strstr(nm, "attention.bias") && !strstr(nm, "attention.masked_bias") &&
                !strstr(nm, "rotary_emb.inv_freq") && !(m->cfg.tied_embeddings && !strcmp(nm, "embed_out.weight")))
                err_warn("%s: tensor '%s' is not part of this model; ignored", f->path, nm);
        }
    }
    free(t), free(names);
    return rc;
}

int ckpt_load_weights(gpt_model *m, const char *path)
{
    st_file f;
    if (st_open(&f, path) != 0) return CB_EFAIL;
    int rc = load_all(m, &f, m->params, "", 1);
    st_close(&f);
    return rc;
}

static int meta_long(const st_file *f, const char *key, long lo, long hi, long *out)
{
    const char *v = st_meta(f, key);
    if (!v) return err_msg("%s: metadata '%s' is missing", f->path, key);
    char what[4400];
    snprintf(what, sizeof what, "%s: metadata '%s'", f->path, key);
    return parse_long(v, lo, hi, 0, what, out) == 0 ? 0 : CB_EFAIL;
}

int ckpt_resume(gpt_model *m, const char *dir, const ckpt_state *expect, ckpt_state *got)
{
    char latest[4300], name[256] = "", path[4600];
    snprintf(latest, sizeof latest, "%s/latest", dir);
    FILE *fl = fopen(latest, "r");
    if (!fl) return err_msg("cannot resume from '%s': no '%s' (%s)", dir, latest, strerror(errno));
    if (!fgets(name, sizeof name, fl)) name[0] = '\0';
    fclose(fl);
    name[strcspn(name, "\n")] = '\0';
    long s;
    char extra;
    if (sscanf(name, "step-%ld%c", &s, &extra) != 1) return err_msg("%s: expected a step directory name, got '%s'", latest, name);
    st_file f;
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, name);
    if (st_open(&f, path) != 0) return CB_EFAIL;
    int rc = load_all(m, &f, m->params, "", 0);
    st_close(&f);
    if (rc != 0) return rc;
    snprintf(path, sizeof path, "%s/%s/optimizer.safetensors", dir, name);
    if (st_open(&f, path) != 0) return CB_EFAIL;
    long step, adam_t, B, T, accum;
    rc = load_all(m, &f, m->m, "exp_avg/", 0);
    if (rc == 0) rc = load_all(m, &f, m->v, "exp_avg_sq/", 0);
    if (rc == 0) rc = meta_long(&f, "step", 0, 1L << 50, &step);
    if (rc == 0) rc = meta_long(&f, "adam_t", 0, 1L << 50, &adam_t);
    if (rc == 0) rc = meta_long(&f, "micro_batch", 1, 1 << 20, &B);
    if (rc == 0) rc = meta_long(&f, "seq", 1, 1 << 24, &T);
    if (rc == 0) rc = meta_long(&f, "accum", 1, 1 << 20, &accum);
    if (rc == 0) {
        const char *sv = st_meta(&f, "seed");
        char *end;
        errno = 0;
        unsigned long long sd = sv ? strtoull(sv, &end, 10) : 0;
        if (!sv || *end || errno) rc = err_msg("%s: metadata 'seed' is missing or not a number", path);
        got->seed = sd;
    }
    st_close(&f);
    if (rc != 0) return rc;
    got->step = step, got->B = (int)B, got->T = (int)T, got->accum = (int)accum;
    if (expect->B != got->B || expect->T != got->T || expect->accum != got->accum || expect->seed != got->seed)
        return err_usage("--resume %s: the checkpoint was written with --micro-batch %d --seq %d --global-batch %d --seed %llu; this run has %d, %d, %d, %llu",
                         dir, got->B, got->T, got->B * got->accum, got->seed, expect->B, expect->T, expect->B * expect->accum,
                         expect->seed);
    m->adam_t = (int)adam_t;
    return 0;
}
