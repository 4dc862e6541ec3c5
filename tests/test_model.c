/* The whole model: its gradient against central finite differences of a double-precision
 * reference forward, recomputation giving the same gradients, loss at initialisation near
 * ln(V), overfitting a fixed batch, and determinism. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/attention.h"
#include "../kernels/crossentropy.h"
#include "../kernels/gelu.h"
#include "../kernels/layernorm.h"
#include "../kernels/matmul.h"
#include "../model/gpt.h"
#include "check.h"

static model_config tiny(int parallel, int learned, int tied)
{
    model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "tiny");
    c.L = 2, c.C = 16, c.NH = 2, c.HS = 8, c.V = 23, c.max_T = 8;
    c.rotary_pct = learned ? 0.0 : 0.5, c.rotary_base = 10000;
    c.parallel_residual = parallel, c.pos = learned ? POS_LEARNED : POS_ROTARY, c.tied_embeddings = tied;
    return c;
}

/* ---- double-precision reference forward over a double copy of the parameter slab ---- */
typedef struct {
    const gpt_model *m;
} ref_ctx;

static double ref_forward(void *p, const double *P)
{
    const gpt_model *m = ((ref_ctx *)p)->m;
    const model_config *c = &m->cfg;
    const size_t *off = m->w.offsets;
    const int B = m->B, T = m->T, BT = B * T, C = c->C, V = c->V, L = c->L;
    const double *wte = P + off[P_WTE], *wpe = P + off[P_WPE];
    const double *unembed = c->tied_embeddings ? wte : P + off[P_UNEMBED];
    double *x = calloc((size_t)BT * C, sizeof(double)), *ln = calloc((size_t)BT * C, sizeof(double));
    double *qkv = calloc((size_t)BT * 3 * C, sizeof(double)), *atty = calloc((size_t)BT * C, sizeof(double));
    double *ap = calloc((size_t)BT * C, sizeof(double)), *res2 = calloc((size_t)BT * C, sizeof(double));
    double *h = calloc((size_t)BT * 4 * C, sizeof(double)), *g = calloc((size_t)BT * 4 * C, sizeof(double));
    double *mo = calloc((size_t)BT * C, sizeof(double)), *logits = calloc((size_t)BT * V, sizeof(double));
    double *losses = calloc((size_t)BT, sizeof(double));
    for (int i = 0; i < BT; i++)
        for (int k = 0; k < C; k++)
            x[i * C + k] =
                wte[(size_t)m->inputs[i] * C + k] + (c->pos == POS_LEARNED ? wpe[(size_t)(i % T) * C + k] : 0);
    int r = m->rotary_dims, hr = r / 2;
    for (int l = 0; l < L; l++) {
        size_t o = (size_t)l;
        layernorm_forward_ref(ln, x, P + off[P_LN1W] + o * C, P + off[P_LN1B] + o * C, BT, C);
        matmul_forward_ref(qkv, ln, P + off[P_QKVW] + o * 3 * C * C, P + off[P_QKVB] + o * 3 * C, BT, C, 3 * C);
        for (int i = 0; i < BT && r > 0; i++)
            for (int hh = 0; hh < c->NH; hh++)
                for (int w = 0; w < 2; w++) {
                    double *v = qkv + (size_t)i * 3 * C + (size_t)hh * 3 * c->HS + (size_t)w * c->HS;
                    for (int d = 0; d < hr; d++) {
                        double ang = (i % T) * pow(c->rotary_base, -2.0 * d / r), a = v[d], b = v[d + hr];
                        v[d] = a * cos(ang) - b * sin(ang);
                        v[d + hr] = b * cos(ang) + a * sin(ang);
                    }
                }
        attention_forward_ref(atty, qkv, B, T, c->NH, c->HS);
        matmul_forward_ref(ap, atty, P + off[P_ATTPROJW] + o * C * C, P + off[P_ATTPROJB] + o * C, BT, C, C);
        const double *ln2_in = x;
        if (!c->parallel_residual) {
            for (int i = 0; i < BT * C; i++) res2[i] = x[i] + ap[i];
            ln2_in = res2;
        }
        layernorm_forward_ref(ln, ln2_in, P + off[P_LN2W] + o * C, P + off[P_LN2B] + o * C, BT, C);
        matmul_forward_ref(h, ln, P + off[P_FCW] + o * 4 * C * C, P + off[P_FCB] + o * 4 * C, BT, C, 4 * C);
        gelu_forward_ref(g, h, (size_t)BT * 4 * C);
        matmul_forward_ref(mo, g, P + off[P_FCPROJW] + o * 4 * C * C, P + off[P_FCPROJB] + o * C, BT, 4 * C, C);
        for (int i = 0; i < BT * C; i++) x[i] = c->parallel_residual ? x[i] + ap[i] + mo[i] : res2[i] + mo[i];
    }
    layernorm_forward_ref(ln, x, P + off[P_LNFW], P + off[P_LNFB], BT, C);
    matmul_forward_ref(logits, ln, unembed, NULL, BT, C, V);
    crossentropy_forward_ref(losses, logits, m->targets, BT, V);
    double s = 0;
    for (int i = 0; i < BT; i++) s += losses[i];
    free(x), free(ln), free(qkv), free(atty), free(ap), free(res2), free(h), free(g), free(mo), free(logits),
        free(losses);
    return s / BT;
}

static void check_model_gradient(int parallel, int learned, int tied, const char *label)
{
    model_config c = tiny(parallel, learned, tied);
    gpt_model m, mr;
    CHECK(gpt_init(&m, &c, 2, 5, 0, PRECISION_FP32) == 0 && gpt_init(&mr, &c, 2, 5, 1, PRECISION_FP32) == 0,
          "%s: init failed", label);
    gpt_init_weights(&m, 7);
    /* larger weights than the 0.02 init so that every path carries signal */
    for (size_t i = 0; i < m.w.nparams; i++) m.w.params[i] *= 20.0f;
    for (int k = 0; k < P_COUNT; k++)
        if (k == P_LN1B || k == P_LN2B || k == P_LNFB || k == P_QKVB || k == P_FCB || k == P_FCPROJB ||
            k == P_ATTPROJB) {
            unsigned st = 100u + (unsigned)k;
            rand_fill(m.w.p[k], m.w.sizes[k], &st);
            for (size_t i = 0; i < m.w.sizes[k]; i++) m.w.p[k][i] *= 0.3f;
        }
    fill_tokens(&m, 3);
    memcpy(mr.w.params, m.w.params, m.w.nparams * sizeof(float));
    memcpy(mr.inputs, m.inputs, sizeof(int) * 10), memcpy(mr.targets, m.targets, sizeof(int) * 10);
    gpt_zero_grad(&m);
    double loss = NAN;
    CHECK(gpt_forward(&m, 1.0f, &loss) == 0 && gpt_backward(&m, 1.0f, NULL) == 0, "%s: forward or backward failed",
          label);
    double *P = malloc(m.w.nparams * sizeof(double));
    to_double(P, m.w.params, m.w.nparams);
    ref_ctx rc = {&m};
    double lref = ref_forward(&rc, P);
    CHECK(fabs(loss - lref) < 1e-5 * (1 + fabs(lref)), "%s: loss %.9g vs double reference %.9g", label, loss, lref);
    char what[96];
    snprintf(what, sizeof what, "%s full-model gradient", label);
    CHECK(fd_check(what, P, m.w.nparams, m.w.grads, ref_forward, &rc, 400, 2e-3), "%s: gradient vs finite differences",
          label);
    /* activation recomputation gives the same gradients, bit for bit */
    gpt_zero_grad(&mr);
    double lr = NAN;
    CHECK(gpt_forward(&mr, 1.0f, &lr) == 0 && gpt_backward(&mr, 1.0f, NULL) == 0,
          "%s: recompute forward or backward failed", label);
    CHECK(lr == loss && memcmp(mr.w.grads, m.w.grads, m.w.nparams * sizeof(float)) == 0,
          "%s: --recompute changes the gradients", label);
    free(P);
    gpt_free(&m);
    gpt_free(&mr);
}

static void test_model_gradient_neox(void) { check_model_gradient(1, 0, 0, "neox (parallel, rotary, untied)"); }
static void test_model_gradient_gpt3(void) { check_model_gradient(0, 1, 1, "gpt3 (sequential, learned, tied)"); }

static double train_steps(gpt_model *m, int steps, float lr, double *losses)
{
    adamw_params hp = {lr, 0.9f, 0.95f, 1e-8f, 0.0f, 0.0f};
    double loss = 0;
    for (int s = 0; s < steps; s++) {
        gpt_zero_grad(m);
        CHECK(gpt_forward(m, 1.0f, &loss) == 0 && gpt_backward(m, 1.0f, NULL) == 0, "forward or backward failed");
        gpt_update(m, &hp, gpt_grad_norm(m), 1.0f);
        if (losses) losses[s] = loss;
    }
    return loss;
}

static void test_model_init_loss(void)
{
    model_config c = tiny(1, 0, 0);
    c.C = 64, c.NH = 4, c.HS = 16, c.V = 1000, c.max_T = 32;
    gpt_model m;
    CHECK(gpt_init(&m, &c, 2, 32, 0, PRECISION_FP32) == 0, "init failed");
    gpt_init_weights(&m, 1);
    fill_tokens(&m, 9);
    double loss = NAN;
    CHECK(gpt_forward(&m, 1.0f, &loss) == 0, "forward failed");
    CHECK(fabs(loss - log(1000.0)) < 0.1, "loss at init %.4f, ln V = %.4f", loss, log(1000.0));
    gpt_free(&m);
}

static void test_model_overfits_and_is_deterministic(void)
{
    model_config c = tiny(1, 0, 0);
    c.C = 32, c.NH = 4, c.HS = 8, c.V = 64, c.max_T = 16;
    gpt_model a, b;
    CHECK(gpt_init(&a, &c, 2, 16, 0, PRECISION_FP32) == 0 && gpt_init(&b, &c, 2, 16, 0, PRECISION_FP32) == 0,
          "init failed");
    gpt_init_weights(&a, 5);
    gpt_init_weights(&b, 5);
    fill_tokens(&a, 11);
    fill_tokens(&b, 11);
    double la[200], lb[200];
    double final = train_steps(&a, 200, 3e-3f, la);
    train_steps(&b, 200, 3e-3f, lb);
    CHECK(la[0] > 3.5 && final < 0.05, "a fixed batch does not overfit: loss %.4f -> %.4f", la[0], final);
    int k = 0;
    while (k < 200 && la[k] == lb[k]) k++;
    CHECK(k == 200, "same seed, different losses (first differ at step %d)", k);
    gpt_free(&a);
    gpt_free(&b);
}

const test_case tests_model[] = {
    {"model: neox gradient vs finite differences of a double forward; recompute identical", test_model_gradient_neox},
    {"model: gpt3 gradient vs finite differences of a double forward; recompute identical", test_model_gradient_gpt3},
    {"model: loss at initialisation near ln(V)", test_model_init_loss},
    {"model: overfits a fixed batch; same seed gives identical losses", test_model_overfits_and_is_deterministic},
    {NULL, NULL},
};
