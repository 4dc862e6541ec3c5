/* precision.h: the training precisions, their names and their storage: one enum, one table. Every
 * place a precision is named (the --precision flag of train, scale and plan; the precision column
 * of the throughput and summary CSVs; a checkpoint's metadata; the predictor) reads it here.
 *
 *   fp32          everything in fp32
 *   bf16-mixed    fp32 master weights, gradients and AdamW moments; bf16 copies of the weights and
 *                 bf16 matmul inputs; fp32 accumulation, norms, softmax statistics, residual stream
 *                 and loss
 *   bf16-sr       full bf16, as Trainium trains: the weights and both AdamW moments stored in bf16,
 *                 the gradients rounded to bf16, every update computed in fp32 and written back
 *                 with stochastic rounding; the products and activations as in bf16-mixed
 *   bf16-nearest  full bf16 with the updates rounded to nearest even
 * Aliases accepted on input: bf16 (= bf16-sr, full bf16 as Trainium trains it) and mixed (=
 * bf16-mixed, the predictor's older spelling). */
#ifndef CB_PRECISION_H
#define CB_PRECISION_H

#include <stddef.h>

typedef enum {
    PRECISION_FP32 = 0,
    PRECISION_BF16_MIXED = 1,
    PRECISION_BF16_SR = 2,
    PRECISION_BF16_NEAREST = 3
} train_precision;
enum { PRECISION_COUNT = 4 };

/* How a full-bf16 update is written back to its bf16 weights and moments. */
typedef enum { ROUNDING_NONE = 0, ROUNDING_STOCHASTIC = 1, ROUNDING_NEAREST = 2 } precision_rounding;

/* What a precision stores. Bytes per parameter as a training framework holds them (the ZeRO
 * paper's accounting): the weights the matmuls read, the gradient, each AdamW moment (m and v),
 * and the fp32 master copy (0: none). The model here accumulates its gradients in fp32 in every
 * precision (model/gpt_alloc.c); the predictor (report/predict/scale.h) counts grad_bytes. */
typedef struct {
    const char *name;            /* canonical: what precision_name prints */
    int weights_bf16;            /* the weights and both moments stored in bf16 (full bf16) */
    double weight_bytes, grad_bytes, moment_bytes, master_bytes;
    double act_bytes;            /* an activation element kept for the backward */
    precision_rounding rounding; /* full bf16: how updates are rounded; ROUNDING_NONE otherwise */
    const char *rounding_name;   /* --rounding's value for it ("stochastic", "nearest"), or NULL */
    int fp32_peak;               /* the matmuls run at the device's FP32 peak (else its BF16 one) */
    const char *peak_name;       /* that peak's name in messages: "FP32" or "BF16" */
} precision_info;

extern const precision_info precision_table[PRECISION_COUNT];

/* The row of p (p one of the enum's values). */
static inline const precision_info *precision_info_of(train_precision p) { return &precision_table[p]; }
/* "fp32", "bf16-mixed", "bf16-sr" or "bf16-nearest". */
const char *precision_name(train_precision p);
/* 1 for the full-bf16 precisions (bf16 weights and moments). */
static inline int precision_full_bf16(train_precision p) { return precision_table[p].weights_bf16; }
/* AdamW state bytes per parameter: both moments and the master copy. */
double precision_optimizer_bytes(train_precision p);
/* The one AdamW traffic rule: bytes one update reads and writes per parameter, given what a
 * parameter stores (weights, gradient, each moment, master copy; common/precision.c derives it):
 * 2 weight + grad + 2 (2 moment + master). fp32: 28. */
double adamw_traffic_bytes(double weight, double grad, double moment, double master);
/* adamw_traffic_bytes of p's row of precision_table (fp32 28, bf16-mixed 30, full bf16 14): the
 * step model's optimizer op and its memory-bandwidth time. */
double precision_adamw_traffic_bytes(train_precision p);
/* A canonical name or an alias (bf16 = bf16-sr, mixed = bf16-mixed) into *out: 0, or -1 when
 * unknown (nothing printed). */
int precision_parse(const char *s, train_precision *out);
/* The same for a flag's value: 0, or CB_EUSAGE after one line naming the flag, the value and
 * every accepted name. */
int precision_parse_flag(const char *flag, const char *s, train_precision *out);
/* The accepted names for messages and help: "fp32, bf16-mixed, bf16-sr, bf16-nearest (aliases:
 * bf16 = bf16-sr, mixed = bf16-mixed)". */
const char *precision_names_text(void);

/* The values a result file's precision column takes besides the training precisions: the
 * precisions of runs of other systems (published and imported throughputs), which costbench
 * names but does not train in. Columns also accept the aliases. */
#define PRECISION_NAME_FP16_MIXED "fp16-mixed"
#define PRECISION_NAME_FP8 "fp8"
/* 1 when s is a precision column's value: a training precision's name or alias, fp16-mixed or fp8. */
int precision_column_valid(const char *s);
/* Those values for messages: "fp32, bf16-mixed, bf16-sr, bf16-nearest, fp16-mixed, fp8 (aliases: ...)". */
const char *precision_column_names_text(void);

#endif
