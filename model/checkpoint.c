#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/file.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/csvio.h"
#include "../common/err.h"
#include "hfnames.h"
#include "safetensors.h"
#include "../common/files.h"

/* One Hugging Face tensor of the model: a piece of one internal tensor slice (hfnames.h). */
typedef struct {
    hf_piece piece;
    char *slice; /* the slice's first element in its slab */
} tensor_slot;

/* The checkpoint holds the weights and moments as the model stores them (fp32, or bf16). */
static size_t elem_bytes(const gpt_model *m) { return elem_size(m->w.store); }

/* The slab the weights are stored in: fp32, or bf16 (bf16 storage). */
static void *weights_slab(const gpt_model *m)
{
    return m->w.store == ELEM_BF16 ? (void *)m->w.params_bf16 : (void *)m->w.params;
}

/* Every tensor of the model with its Hugging Face name and shape, in `base` (the parameter,
 * first-moment or second-moment slab: fp32, or bf16 in full-bf16 models): out[i].data points into
 * the slab where the tensor is stored as Hugging Face lays it out, else it is NULL (the rows are
 * gathered or scattered through slots[i]). Returns the count. */
static int list_tensors(const gpt_model *m, const void *base, const char *prefix, st_out *out, tensor_slot *slots,
                        char (*names)[128])
{
    const size_t elem = elem_bytes(m);
    int n = 0;
    for (int k = 0; k < P_COUNT; k++) {
        if (m->w.sizes[k] == 0) continue;
        int layers = param_per_layer(k) ? m->cfg.L : 1;
        size_t per = m->w.sizes[k] / (size_t)layers;
        for (int l = 0; l < layers; l++) {
            hf_piece pc[3];
            int np = hf_pieces(m, k, l, pc);
            char *slice = (char *)base + (m->w.offsets[k] + (size_t)l * per) * elem;
            for (int i = 0; i < np; i++, n++) {
                st_out *t = &out[n];
                snprintf(names[n], 128, "%.15s%.111s", prefix, pc[i].name);
                t->name = names[n];
                t->ndim = pc[i].ndim;
                t->shape[0] = pc[i].shape[0], t->shape[1] = pc[i].shape[1];
                t->bf16 = elem == sizeof(bf16);
                t->data = hf_identity(m, &pc[i]) ? slice + pc[i].row0 * pc[i].cols * elem : NULL;
                slots[n] = (tensor_slot){pc[i], slice};
            }
        }
    }
    return n;
}

/* Copies a piece's rows between Hugging Face's order (buf) and the slice (to_slice: into it). */
static void move_rows(const gpt_model *m, const tensor_slot *s, char *buf, int to_slice)
{
    const size_t elem = elem_bytes(m), row = s->piece.cols * elem;
    for (size_t r = 0; r < (size_t)s->piece.shape[0]; r++) {
        char *in_slice = s->slice + hf_row(m, &s->piece, r) * row;
        if (to_slice) memcpy(in_slice, buf + r * row, row);
        else memcpy(buf + r * row, in_slice, row);
    }
}

/* The tensors without a data pointer get a buffer with their rows gathered; *bufs lists them
 * (free_gathered frees them). Returns 0 or CB_EFAIL. */
static int gather_all(const gpt_model *m, st_out *t, const tensor_slot *slots, int n, void **bufs)
{
    for (int i = 0; i < n; i++) {
        bufs[i] = NULL;
        if (t[i].data) continue;
        size_t bytes = (size_t)slots[i].piece.shape[0] * slots[i].piece.cols * elem_bytes(m);
        if (!(bufs[i] = malloc(bytes ? bytes : 1))) return err_msg("out of memory for %zu bytes of '%s'", bytes,
                t[i].name);
        move_rows(m, &slots[i], bufs[i], 0);
        t[i].data = bufs[i];
    }
    return 0;
}

static void free_gathered(void **bufs, int n)
{
    for (int i = 0; i < n; i++) free(bufs[i]);
}

static int max_tensors(const gpt_model *m) { return 8 + 20 * m->cfg.L; }

/* ---------------------------------------------------------------- the moments' bound */

/* The first element breaking AdamW's bound on the moments (ckpt_moment_bound). */
typedef struct {
    char name[128]; /* the first moment's tensor (exp_avg/NAME) */
    size_t elem, count;
    double m, v, k;
} moment_fault;

/* One moment slab's tensors in Hugging Face order (rows gathered where stored otherwise). */
typedef struct {
    st_out *t;
    tensor_slot *slots;
    char (*names)[128];
    void **bufs;
    int n;
} tensor_list;

static int tensor_list_of(const gpt_model *m, const void *base, const char *prefix, tensor_list *l)
{
    const int nt = max_tensors(m);
    l->t = calloc((size_t)nt, sizeof *l->t);
    l->slots = calloc((size_t)nt, sizeof *l->slots);
    l->names = calloc((size_t)nt, sizeof *l->names);
    l->bufs = calloc((size_t)nt, sizeof *l->bufs);
    l->n = 0;
    if (!l->t || !l->slots || !l->names || !l->bufs) return err_msg("out of memory");
    l->n = list_tensors(m, base, prefix, l->t, l->slots, l->names);
    return gather_all(m, l->t, l->slots, l->n, l->bufs);
}

static void tensor_list_free(tensor_list *l)
{
    if (l->bufs) free_gathered(l->bufs, l->n);
    free(l->t), free(l->slots), free(l->names), free(l->bufs);
}

/* Checks |exp_avg| <= k sqrt(exp_avg_sq) for the betas b1, b2, one pass tensor by tensor: 0 when
 * it holds (or the betas give no bound), 1 with the first element breaking it in *f, CB_EFAIL
 * when out of memory. */
static int moment_fault_find(const gpt_model *m, const void *exp_avg, const void *exp_avg_sq, double b1, double b2,
                             moment_fault *f)
{
    f->k = ckpt_moment_bound(b1, b2);
    if (!isfinite(f->k)) return 0;
    tensor_list lm = {0}, lv = {0};
    int rc = tensor_list_of(m, exp_avg, CKPT_EXP_AVG, &lm);
    if (rc == 0) rc = tensor_list_of(m, exp_avg_sq, CKPT_EXP_AVG_SQ, &lv);
    for (int i = 0; rc == 0 && i < lm.n; i++) {
        size_t n = 1, first = 0;
        for (int d = 0; d < lm.t[i].ndim; d++) n *= (size_t)lm.t[i].shape[d];
        const int bf = lm.t[i].bf16;
        f->count = ckpt_moments_over(lm.t[i].data, lv.t[i].data, n, bf, f->k, &first);
        if (!f->count) continue;
        snprintf(f->name, sizeof f->name, "%s", lm.t[i].name);
        f->elem = first;
        f->m = bf ? bf16_to_float(((const bf16 *)lm.t[i].data)[first]) : ((const float *)lm.t[i].data)[first];
        f->v = bf ? bf16_to_float(((const bf16 *)lv.t[i].data)[first]) : ((const float *)lv.t[i].data)[first];
        rc = 1;
    }
    tensor_list_free(&lm);
    tensor_list_free(&lv);
    return rc;
}

/* ---------------------------------------------------------------- the names costbench writes */

/* 1 when `name` is a file costbench writes into a step directory: model.safetensors,
 * optimizer.safetensors, or the temporary st_write renames into either (NAME.tmp.PID). */
static int step_file_name(const char *name)
{
    static const char *const files[] = {"model.safetensors", "optimizer.safetensors"};
    for (int i = 0; i < 2; i++) {
        const size_t n = strlen(files[i]);
        long pid;
        if (strncmp(name, files[i], n) != 0) continue;
        if (name[n] == '\0' || (strncmp(name + n, ".tmp.", 5) == 0 && file_parse_pid(name + n + 5, &pid))) return 1;
    }
    return 0;
}

typedef enum { NAME_OTHER, NAME_STEP, NAME_STEP_TMP, NAME_STEP_OLD, NAME_LATEST_TMP, NAME_LOCK } dir_name;

/* What `name` in a checkpoint directory is, by the exact names costbench writes there:
 * step-NNNNNNNN (a checkpoint), step-NNNNNNNN.tmp.PID and .old.PID (a save's temporaries),
 * latest.tmp.PID, save.lock.PID (the save lock, below); *step and *pid as they apply. */
static dir_name classify_name(const char *name, long *step, long *pid)
{
    if (strncmp(name, "latest.tmp.", 11) == 0) return file_parse_pid(name + 11, pid) ? NAME_LATEST_TMP : NAME_OTHER;
    if (strncmp(name, "save.lock.", 10) == 0) return file_parse_pid(name + 10, pid) ? NAME_LOCK : NAME_OTHER;
    if (strncmp(name, "step-", 5) != 0 || name[5] < '0' || name[5] > '9') return NAME_OTHER;
    char *end = NULL, canon[64];
    errno = 0;
    *step = strtol(name + 5, &end, 10);
    snprintf(canon, sizeof canon, "step-%08ld", *step);
    if (errno != 0 || strlen(canon) != (size_t)(end - name) || strncmp(canon, name,
            (size_t)(end - name)) != 0) return NAME_OTHER;
    if (*end == '\0') return NAME_STEP;
    if (strncmp(end, ".tmp.", 5) == 0 && file_parse_pid(end + 5, pid)) return NAME_STEP_TMP;
    if (strncmp(end, ".old.", 5) == 0 && file_parse_pid(end + 5, pid)) return NAME_STEP_OLD;
    return NAME_OTHER;
}

/* Removes a step directory when it holds only files costbench writes (step_file_name): returns
 * 0 (also when it is missing). One holding anything else stays whole, with what it holds:
 * returns 1. -1 when it cannot be read or removed. */
static int remove_step_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    int foreign = 0;
    while ((e = readdir(d)) != NULL && !foreign)
        foreign = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && !step_file_name(e->d_name);
    if (foreign) {
        closedir(d);
        return 1;
    }
    rewinddir(d);
    char f[CB_PATH_MAX];
    while ((e = readdir(d)) != NULL)
        if (step_file_name(e->d_name) && path_fmt(f, sizeof f, "%s/%s", path, e->d_name) == 0) unlink(f);
    closedir(d);
    return rmdir(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* Step directories kept because they hold other files, reported once a process (by device and
 * inode: a save every step would repeat the warning). */
static struct {
    dev_t dev;
    ino_t ino;
} g_kept[64];
static int g_nkept;

/* 1 when (dev, ino) was already reported; else it is recorded. */
static int kept_before(dev_t dev, ino_t ino)
{
    for (int i = 0; i < g_nkept; i++)
        if (g_kept[i].dev == dev && g_kept[i].ino == ino) return 1;
    if (g_nkept < 64) {
        g_kept[g_nkept].dev = dev;
        g_kept[g_nkept].ino = ino;
        g_nkept++;
    }
    return 0;
}

static void warn_kept(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && !kept_before(sb.st_dev, sb.st_ino)) err_warn("kept '%s': it holds files costbench did "
            "not write", path);
}

/* ---------------------------------------------------------------- the save lock
 *
 * A save of process PID holds an exclusive flock on DIR/save.lock.PID from before it creates its
 * first temporary (step-N.tmp.PID) until its last one is gone (after latest.tmp.PID is renamed).
 * A cleaner removes the temporaries of PID only while it holds that lock itself: it gets it when
 * no process holds it, which the kernel decides (a dead writer's lock is released, whatever
 * happened to its PID since: reused, a zombie, another host's process of the same number on a
 * shared file system). Both sides create the file, lock it, and check that the locked file is
 * still the one of that name (a cleaner unlinks it when done), else start over. */
typedef struct {
    int fd;
    char path[CB_PATH_MAX];
} save_lock;

/* 1 taken, 0 held by another open file (a live save), -1 cannot tell (no file made or locked). */
static int lock_take(save_lock *lk, const char *dir, long pid, int wait)
{
    if (path_fmt(lk->path, sizeof lk->path, "%s/save.lock.%ld", dir, pid) != 0) return -1;
    for (int tries = 0; tries < 1000; tries++) {
        int fd = open(lk->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return -1;
        if (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
            int e = errno;
            close(fd);
            if (e == EINTR) continue;
            return e == EWOULDBLOCK ? 0 : -1;
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(lk->path,
                &named) == 0 && held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
            lk->fd = fd;
            return 1;
        }
        close(fd); /* unlinked by a cleaner between open and flock */
    }
    return -1;
}

static void lock_release(save_lock *lk)
{
    unlink(lk->path);
    close(lk->fd);
}

/* ---------------------------------------------------------------- cleaning a directory */

/* Removes leftover `name` (of kind k, written by process pid) of a killed save, and says so,
 * unless that process still saves (it holds the save lock). */
static void remove_leftover(const char *dir, const char *name, dir_name k, long pid)
{
    char path[CB_PATH_MAX];
    save_lock lk;
    struct stat sb;
    if (path_fmt(path, sizeof path, "%s/%s", dir, name) != 0 || lock_take(&lk, dir, pid, 0) != 1) return;
    if (k != NAME_LOCK && lstat(path, &sb) == 0) {
        int rc = -1;
        if (k == NAME_LATEST_TMP && S_ISREG(sb.st_mode)) rc = unlink(path);
        else if (k != NAME_LATEST_TMP && S_ISDIR(sb.st_mode)) rc = remove_step_dir(path);
        if (rc == 0) fprintf(stderr, "note: removed '%s', left by a killed save\n", path);
        else if (rc == 1) warn_kept(path);
    }
    lock_release(&lk);
}

/* The names in dir (NULL when it cannot be read); *n receives the count. */
static char **list_names(const char *dir, int *n)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    char **names = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (*n == cap) {
            char **grown = realloc(names, (size_t)(cap = cap ? 2 * cap : 32) * sizeof *names);
            if (!grown) break;
            names = grown;
        }
        if (!(names[*n] = strdup(e->d_name))) break;
        (*n)++;
    }
    closedir(d);
    return names;
}

/* Step directories other than `keep1` and `keep2` are superseded (keep -1: none kept); the
 * leftovers of killed saves go (remove_leftover). Only the names costbench writes are touched. */
static void clean_dir(const char *dir, long keep1, long keep2)
{
    int n;
    char **names = list_names(dir, &n), path[CB_PATH_MAX];
    for (int i = 0; i < n; i++) {
        long s = -1, pid = 0;
        dir_name k = classify_name(names[i], &s, &pid);
        if (k == NAME_STEP && keep1 >= 0 && s != keep1 && s != keep2 && path_fmt(path, sizeof path, "%s/%s", dir,
                names[i]) == 0 &&
            remove_step_dir(path) == 1)
            warn_kept(path);
        else if (k != NAME_STEP && k != NAME_OTHER)
            remove_leftover(dir, names[i], k, pid);
        free(names[i]);
    }
    free(names);
}

void ckpt_clean(const char *dir) { clean_dir(dir, -1, -1); }

/* The step `DIR/latest` names (-1 when it is missing or unreadable; a CRLF line ending is fine).
 * name receives the directory name. */
static long read_latest(const char *dir, char *name, size_t n)
{
    char latest[CB_PATH_MAX];
    name[0] = '\0';
    if (path_fmt(latest, sizeof latest, "%s/latest", dir) != 0) return -1;
    FILE *f = fopen(latest, "r");
    if (!f) return -1;
    if (!fgets(name, (int)n, f)) name[0] = '\0';
    fclose(f);
    name[strcspn(name, "\r\n")] = '\0';
    long s;
    int k = 0;
    if (sscanf(name, "step-%ld%n", &s, &k) != 1 || name[k] != '\0' || s < 0) return -1;
    return s;
}

static int write_latest(const char *dir, const char *name)
{
    char latest[CB_PATH_MAX], ltmp[CB_PATH_MAX];
    if (path_fmt(latest, sizeof latest, "%s/latest", dir) != 0 ||
        path_fmt(ltmp, sizeof ltmp, "%s.tmp.%ld", latest, (long)getpid()) != 0)
        return CB_EFAIL;
    FILE *f = fopen(ltmp, "w");
    if (!f) return err_msg("cannot write '%s': %s", latest, strerror(errno));
    int bad = fprintf(f, "%s\n", name) < 0;
    if ((fclose(f) != 0) | bad) {
        int e = errno;
        unlink(ltmp);
        return err_msg("cannot write '%s': %s", latest, strerror(e));
    }
    return file_commit(ltmp, latest);
}

/* Writes one safetensors file of the tensors t[0, n) (gathering the rows of those stored in
 * another order first). */
static int write_tensors(const gpt_model *m, const char *path, st_out *t, const tensor_slot *slots, int n,
        const ckpt_meta *ml)
{
    void **bufs = calloc((size_t)n + 1, sizeof *bufs);
    if (!bufs) return err_msg("out of memory");
    int rc = gather_all(m, t, slots, n, bufs);
    if (rc == 0) rc = st_write(path, t, n, ml->kv, ml->n);
    free_gathered(bufs, n);
    free(bufs);
    return rc;
}

/* Both files of step st->step into the directory `tmp`. */
static int write_step_files(const gpt_model *m, const void *exp_avg, const void *exp_avg_sq, const char *tmp,
                            const ckpt_state *st)
{
    int nt = 2 * max_tensors(m); /* the optimizer file holds two tensors per parameter tensor */
    st_out *t = calloc((size_t)nt, sizeof *t);
    tensor_slot *slots = calloc((size_t)nt, sizeof *slots);
    char(*names)[128] = calloc((size_t)nt, sizeof *names);
    char path[CB_PATH_MAX];
    ckpt_meta ml;
    int rc = CB_EFAIL;
    if (!t || !names || !slots) {
        err_msg("out of memory");
        goto out;
    }
    ckpt_meta_write(&ml, &m->cfg, precision_name(m->prec), st, 0, 0);
    int n = list_tensors(m, weights_slab(m), "", t, slots, names);
    if (path_fmt(path, sizeof path, "%s/model.safetensors", tmp) != 0 || write_tensors(m, path, t, slots, n,
            &ml) != 0) goto out;
    /* optimizer: both moments, and where the loop stands */
    int n1 = list_tensors(m, exp_avg, CKPT_EXP_AVG, t, slots, names);
    int n2 = list_tensors(m, exp_avg_sq, CKPT_EXP_AVG_SQ, t + n1, slots + n1, names + n1);
    ckpt_meta_write(&ml, &m->cfg, precision_name(m->prec), st, 1, m->w.adam_t);
    if (path_fmt(path, sizeof path, "%s/optimizer.safetensors", tmp) != 0 || write_tensors(m, path, t, slots,
            n1 + n2, &ml) != 0)
        goto out;
    rc = 0;
out:
    free(t);
    free(slots);
    free(names);
    return rc;
}

/* Renames `tmp` to `final` (an existing `final` moved aside first, removed after). */
static int publish_step(const char *tmp, const char *final)
{
    char old[CB_PATH_MAX];
    if (path_fmt(old, sizeof old, "%s.old.%ld", final, (long)getpid()) != 0) return CB_EFAIL;
    int had = rename(final, old) == 0;
    if (rename(tmp, final) != 0) {
        int e = errno;
        if (had) rename(old, final);
        return err_msg("cannot rename '%s' to '%s': %s", tmp, final, strerror(e));
    }
    if (had) remove_step_dir(old);
    return 0;
}

/* Writes step st->step under its temporary name, publishes it and names it in `latest`. */
static int save_step(const gpt_model *m, const void *exp_avg, const void *exp_avg_sq, const char *dir,
        const ckpt_state *st,
                     const char *name)
{
    char tmp[CB_PATH_MAX], final[CB_PATH_MAX];
    if (path_fmt(tmp, sizeof tmp, "%s/%s.tmp.%ld", dir, name, (long)getpid()) != 0 ||
        path_fmt(final, sizeof final, "%s/%s", dir, name) != 0)
        return CB_EFAIL;
    int rc = remove_step_dir(tmp); /* a dead process's of the same id */
    if (rc == 1) return err_msg("'%s' is in the way of this save: it holds files costbench did not write", tmp);
    if (rc != 0) return err_msg("cannot remove '%s': %s", tmp, strerror(errno));
    if (mkdir(tmp, 0755) != 0) return err_msg("cannot create '%s': %s", tmp, strerror(errno));
    rc = write_step_files(m, exp_avg, exp_avg_sq, tmp, st);
    if (rc == 0) rc = publish_step(tmp, final);
    if (rc != 0) {
        remove_step_dir(tmp);
        return CB_EFAIL;
    }
    return write_latest(dir, name);
}

int ckpt_save(const gpt_model *m, const void *exp_avg, const void *exp_avg_sq, const char *dir, const ckpt_state *st)
{
    moment_fault f;
    int fault = moment_fault_find(m, exp_avg, exp_avg_sq, st->beta1, st->beta2, &f);
    if (fault == 1)
        return err_msg("step %ld: the AdamW update moved weights of '%s' by more than the learning rate allows: "
                       "element %zu of '%s' is %g, above %.3g sqrt(exp_avg_sq %g) (%zu such); stopped, nothing saved",
                       st->step, f.name + strlen(CKPT_EXP_AVG), f.elem, f.name, f.m, f.k, f.v, f.count);
    if (fault != 0) return CB_EFAIL;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return err_msg("cannot create '%s': %s", dir, strerror(errno));
    char name[64], prev_name[256];
    snprintf(name, sizeof name, "step-%08ld", st->step);
    save_lock lk; /* held while this save has temporaries in dir */
    if (lock_take(&lk, dir, (long)getpid(), 1) != 1)
        return err_msg("cannot lock '%s/save.lock.%ld': %s", dir, (long)getpid(), strerror(errno));
    long prev = read_latest(dir, prev_name, sizeof prev_name); /* kept as the fallback */
    int rc = save_step(m, exp_avg, exp_avg_sq, dir, st, name);
    lock_release(&lk);
    if (rc != 0) return CB_EFAIL;
    /* keep this checkpoint and the previous one; drop older ones and what killed saves left */
    clean_dir(dir, st->step, prev);
    return 0;
}

int ckpt_save_own(const gpt_model *m, const char *dir, const ckpt_state *st)
{
    return ckpt_save(m, m->w.m, m->w.v, dir, st);
}

/* Reads tensor i of the list into the model (through a buffer when its rows are reordered). */
static int read_tensor(gpt_model *m, const st_file *f, const st_out *t, const tensor_slot *s)
{
    int bf = t->bf16;
    void *dst = (void *)t->data, *buf = NULL;
    if (!dst) {
        size_t bytes = (size_t)s->piece.shape[0] * s->piece.cols * elem_bytes(m);
        if (!(dst = buf = malloc(bytes ? bytes : 1))) return err_msg("out of memory for %zu bytes of '%s'", bytes,
                t->name);
    }
    int rc = ckpt_meta_read_tensor(f, t->name, dst, t->shape, t->ndim, bf);
    if (rc == 0 && buf) move_rows(m, s, buf, 1);
    free(buf);
    return rc;
}

/* Tensors of f that are not part of this model are reported (buffers of Hugging Face's modules
 * are expected). */
static void warn_unknown(const gpt_model *m, const st_file *f, const st_out *t, int n)
{
    for (int i = 0; i < f->n; i++) {
        const char *nm = f->t[i].name;
        int known = 0;
        for (int j = 0; j < n && !known; j++) known = strcmp(nm, t[j].name) == 0;
        if (!known && !strstr(nm, "attention.bias") && !strstr(nm, "attention.masked_bias") && !strstr(nm,
                "attn.bias") &&
            !strstr(nm, "attn.masked_bias") && !strstr(nm, "rotary_emb.inv_freq") &&
            !(m->cfg.tied_embeddings && (!strcmp(nm, "embed_out.weight") || !strcmp(nm, "lm_head.weight"))))
            err_warn("%s: tensor '%s' is not part of this model; ignored", f->path, nm);
    }
}

static int load_all(gpt_model *m, const st_file *f, void *base, const char *prefix, int weights)
{
    int nt = max_tensors(m);
    st_out *t = calloc((size_t)nt, sizeof *t);
    tensor_slot *slots = calloc((size_t)nt, sizeof *slots);
    char(*names)[128] = calloc((size_t)nt, sizeof *names);
    int rc = 0;
    if (!t || !names || !slots) rc = err_msg("out of memory");
    int n = rc == 0 ? list_tensors(m, base, prefix, t, slots, names) : 0;
    /* a tied model may load an untied checkpoint's output layer: it is not ours to read */
    for (int i = 0; i < n && rc == 0; i++) rc = read_tensor(m, f, &t[i], &slots[i]);
    if (rc == 0 && weights) warn_unknown(m, f, t, n);
    free(t), free(slots), free(names);
    return rc;
}

/* A checkpoint written in another precision (ckpt_meta_precision): say once what changes. */
static void precision_note(const gpt_model *m, const st_file *f)
{
    train_precision was;
    const int known = ckpt_meta_precision(f, &was) == 0;
    if (known && was == m->prec) return;
    const int full = precision_full_bf16(m->prec);
    const char *what = "the weights and moments are converted (widened exactly, or rounded to nearest)";
    if (known && precision_full_bf16(was) == full)
        what = full ? "the bf16 weights and moments load as stored; only the rounding of the updates changes"
                    : "the fp32 weights and moments load as stored; only the precision of the products changes";
    err_warn("%s: written in precision %s, continuing in %s: %s", f->path,
             known ? precision_name(was) : st_meta(f, "precision"), precision_name(m->prec), what);
}

int ckpt_load_weights(gpt_model *m, const char *path)
{
    st_file f;
    if (st_open(&f, path) != 0) return CB_EFAIL;
    int rc = load_all(m, &f, weights_slab(m), "", 1);
    st_close(&f);
    gpt_params_changed(m);
    return rc;
}

/* Step directory file `name` opened into f. */
static int open_part(const char *stepdir, const char *name, st_file *f)
{
    char path[CB_PATH_MAX];
    if (path_fmt(path, sizeof path, "%s/%s", stepdir, name) != 0) return CB_EFAIL;
    return st_open(f, path);
}

/* The moments just loaded from `path` within AdamW's bound for the run's betas (expect). Returns
 * 0 or CB_EFAIL (error printed, naming the file, the tensor and the element). */
static int moments_bounded(const gpt_model *m, const char *path, const ckpt_state *expect)
{
    moment_fault f;
    int fault = moment_fault_find(m, m->w.m, m->w.v, expect->beta1, expect->beta2, &f);
    if (fault != 1) return fault;
    err_msg("%s: tensor '%s': element %zu is %g, above AdamW's bound %.3g sqrt(exp_avg_sq %g) (%zu such): no run "
            "with --beta1 %g --beta2 %g reaches it",
            path, f.name, f.elem, f.m, f.k, f.v, f.count, expect->beta1, expect->beta2);
    err_hint("the bound follows --beta1 and --beta2: resume with the betas the checkpoint was trained with");
    return CB_EFAIL;
}

/* Each file's metadata is checked before its tensors are read: the weights' before the weights,
 * the optimizer's (position, batch shape, adam_t) before the moments. */
int ckpt_resume(gpt_model *m, const char *dir, const ckpt_state *expect, ckpt_state *got)
{
    char name[256], stepdir[CB_PATH_MAX];
    long s = read_latest(dir, name, sizeof name);
    if (s < 0) {
        if (!name[0]) return err_msg("cannot resume from '%s': no readable '%s/latest' (%s)", dir, dir,
                strerror(errno ? errno : ENOENT));
        return err_msg("%s/latest: expected a step directory name, got '%s'", dir, name);
    }
    if (path_fmt(stepdir, sizeof stepdir, "%s/%s", dir, name) != 0) return CB_EFAIL;
    ckpt_state w = {0};
    st_file f;
    if (open_part(stepdir, "model.safetensors", &f) != 0) return CB_EFAIL;
    int rc = ckpt_meta_check_weights(&f, &m->cfg, dir, s, &w);
    if (rc == 0) rc = load_all(m, &f, weights_slab(m), "", 0);
    st_close(&f);
    gpt_params_changed(m);
    if (rc != 0) return rc;
    if (open_part(stepdir, "optimizer.safetensors", &f) != 0) return CB_EFAIL;
    int adam_t = 0;
    rc = ckpt_meta_check_optimizer(&f, &m->cfg, dir, &w, expect, got, &adam_t);
    if (rc == 0) rc = load_all(m, &f, m->w.m, CKPT_EXP_AVG, 0);
    if (rc == 0) rc = load_all(m, &f, m->w.v, CKPT_EXP_AVG_SQ, 0);
    if (rc == 0) rc = moments_bounded(m, f.path, expect);
    if (rc == 0) precision_note(m, &f);
    st_close(&f);
    if (rc == 0) m->w.adam_t = adam_t;
    return rc;
}

uint64_t ckpt_new_run_id(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id || id == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        id = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16) ^ 1u;
    }
    return id;
}
