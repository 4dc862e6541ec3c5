/* mmshapes.c: the shape lists of the matmul benchmarks (mmshapes.h). */
#include "mmshapes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/err.h"
#include "../common/oplist.h"
#include "../common/precision.h"

const char *const mm_dtype_names[MM_NDTYPES] = {"fp32", "bf16"};
const char *const mm_backend_names[MM_NBACKENDS] = {"openblas", "onednn"};

void mm_shapes_set_dtype(mm_shape *s, int n, mm_dtype dtype, mm_backend fp32_backend)
{
    for (int i = 0; i < n; i++) s[i].dtype = dtype, s[i].backend = fp32_backend;
}

static mm_shape mk(const char *op, const char *phase, int n, int k, int m, int ta, int tb, int lda, int ldb, int ldc,
                   double count)
{
    mm_shape s;
    memset(&s, 0, sizeof s);
    snprintf(s.op, sizeof s.op, "%.*s", (int)sizeof s.op - 1, op);
    snprintf(s.phase, sizeof s.phase, "%.*s", (int)sizeof s.phase - 1, phase);
    s.n = n, s.k = k, s.m = m, s.trans_a = ta, s.trans_b = tb, s.lda = lda, s.ldb = ldb, s.ldc = ldc, s.count = count;
    return s;
}

int mm_shapes_sweep(mm_shape *out, int cap, const long *ns, int nn, const long *ks, int nk)
{
    int c = 0;
    for (int i = 0; i < nk; i++)
        for (int j = 0; j < nn && c < cap; j++) {
            int n = (int)ns[j], k = (int)ks[i];
            out[c] = mk("linear", "fwd", n, k, k, 0, 1, k, k, k, NAN);
            out[c++].weight_b = 1;
        }
    return c;
}

/* A GEMM of op_list (Y (n x m) = X (n x k) W^T and its gradients) as kernels/matmul.c calls
 * sgemm: forward X W^T; bwd_input dX = dY W; bwd_weight dW = dY^T X. */
static mm_shape mm_from_op(const op_entry *e, double count)
{
    const int n = (int)e->n, k = (int)e->k, m = (int)e->m;
    mm_shape s;
    if (strcmp(e->phase, "bwd_weight") == 0) {
        s = mk(e->name, e->phase, n, k, m, 1, 0, n, m, m, count); /* B is the activation X */
    } else if (strcmp(e->phase, "bwd_input") == 0) {
        s = mk(e->name, e->phase, n, k, m, 0, 0, k, m, m, count);
        s.weight_b = 1;
    } else {
        s = mk(e->name, e->phase, n, k, m, 0, 1, k, k, m, count);
        s.weight_b = 1;
    }
    return s;
}

/* op_list's GEMMs on one rank without recomputation: 4 linear layers and the logits, 3 products each */
int mm_shapes_transformer_count(void) { return 5 * 3; }

int mm_shapes_transformer(mm_shape *out, int cap, const model_config *cfg, int B, int T)
{
    return mm_shapes_transformer_tp(out, cap, cfg, B, T, 1);
}

int mm_shapes_transformer_tp(mm_shape *out, int cap, const model_config *cfg, int B, int T, int tp)
{
    /* one micro-batch on one rank, no pipeline or context parallelism, no recomputation; the
     * GEMMs' shapes do not depend on the byte sizes, which are fp32's */
    if (tp < 1 || !op_tp_splits(cfg, tp)) return err_msg("%s: tensor parallelism %d does not split its heads and MLP", cfg->name, tp);
    const op_layout lay = {.micro_batch = B, .seq = T, .tp = tp, .pp = 1, .cp = 1, .sp = 0,
                           .recompute = OP_RECOMPUTE_NONE, .attention = OP_ATTN_TILED, .act_bytes = 4,
                           .weight_bytes = 4, .grad_bytes = 4, .optim_bytes = (int)adamw_traffic_bytes(4, 4, 4, 0), .zero = 0, .dp = 1};
    op_entry ops[OP_LIST_MAX];
    int nops = op_list(cfg, &lay, ops, OP_LIST_MAX), c = 0;
    if (nops < 0) return err_msg("%s at B=%d T=%d: no operation list", cfg->name, B, T);
    for (int i = 0; i < nops; i++) {
        if (ops[i].kind != OPK_GEMM) continue;
        if (c >= cap) return CB_EFAIL;
        /* count: times per micro-step, the layers of the one stage, which is the first and the last */
        out[c++] = mm_from_op(&ops[i], op_times(&ops[i], cfg->L, 1, 1));
    }
    return c;
}

