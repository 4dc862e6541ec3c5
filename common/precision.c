#include "precision.h"

#include <string.h>

#include "err.h"

/* The canonical names, and the aliases with what they stand for. */
#define N_FP32 "fp32"
#define N_MIXED "bf16-mixed"
#define N_SR "bf16-sr"
#define N_NEAREST "bf16-nearest"
#define ALIAS_BF16 "bf16"   /* full bf16 as Trainium trains it: stochastic rounding */
#define ALIAS_MIXED "mixed" /* scale's and plan's spelling of bf16-mixed */
#define NAMES_LIST N_FP32 ", " N_MIXED ", " N_SR ", " N_NEAREST
#define ALIASES_TEXT "(aliases: " ALIAS_BF16 " = " N_SR ", " ALIAS_MIXED " = " N_MIXED ")"

const precision_info precision_table[PRECISION_COUNT] = {
    [PRECISION_FP32] = {N_FP32, 0, 4, 4, 4, 0, 4, ROUNDING_NONE, NULL, 1, "FP32"},
    [PRECISION_BF16_MIXED] = {N_MIXED, 0, 2, 2, 4, 4, 2, ROUNDING_NONE, NULL, 0, "BF16"},
    [PRECISION_BF16_SR] = {N_SR, 1, 2, 2, 2, 0, 2, ROUNDING_STOCHASTIC, "stochastic", 0, "BF16"},
    [PRECISION_BF16_NEAREST] = {N_NEAREST, 1, 2, 2, 2, 0, 2, ROUNDING_NEAREST, "nearest", 0, "BF16"},
};

static const struct {
    const char *name;
    train_precision p;
} aliases[] = {{ALIAS_BF16, PRECISION_BF16_SR}, {ALIAS_MIXED, PRECISION_BF16_MIXED}};

const char *precision_name(train_precision p) { return precision_table[p].name; }

double precision_optimizer_bytes(train_precision p)
{
    const precision_info *i = &precision_table[p];
    return 2 * i->moment_bytes + i->master_bytes;
}

/* One AdamW update of one parameter reads its gradient, its weight and its state (both moments
 * and, in mixed precision, the fp32 master copy) and writes the weight and the state back:
 *   weight + grad + (2 moment + master)   read
 *   weight +        (2 moment + master)   written
 * fp32: 7 values of 4 bytes = 28 (g, p, m, v read; p, m, v written). bf16-mixed: 2 x 2 (the bf16
 * weight copy, read and rewritten from the master) + 2 + 2 x 12 = 30. Full bf16: 2 x 2 + 2 + 2 x 4
 * = 14. What a trainer streams besides the update (gradient clipping's norm, zeroing the
 * gradients) is not AdamW's and is added by its caller (bench/calib.c). */
double adamw_traffic_bytes(double weight, double grad, double moment, double master)
{
    return 2 * weight + grad + 2 * (2 * moment + master);
}

double precision_adamw_traffic_bytes(train_precision p)
{
    const precision_info *i = &precision_table[p];
    return adamw_traffic_bytes(i->weight_bytes, i->grad_bytes, i->moment_bytes, i->master_bytes);
}

int precision_parse(const char *s, train_precision *out)
{
    for (int k = 0; k < PRECISION_COUNT; k++)
        if (strcmp(s, precision_table[k].name) == 0) return *out = (train_precision)k, 0;
    for (size_t k = 0; k < sizeof aliases / sizeof aliases[0]; k++)
        if (strcmp(s, aliases[k].name) == 0) return *out = aliases[k].p, 0;
    return -1;
}

int precision_parse_flag(const char *flag, const char *s, train_precision *out)
{
    if (precision_parse(s, out) == 0) return 0;
    return err_usage("flag '%s': expected one of %s, got '%s'", flag, NAMES_LIST " " ALIASES_TEXT, s);
}

const char *precision_names_text(void) { return NAMES_LIST " " ALIASES_TEXT; }

int precision_column_valid(const char *s)
{
    train_precision p;
    return precision_parse(s, &p) == 0 || strcmp(s, PRECISION_NAME_FP16_MIXED) == 0 ||
           strcmp(s, PRECISION_NAME_FP8) == 0;
}

const char *precision_column_names_text(void)
{
    return NAMES_LIST ", " PRECISION_NAME_FP16_MIXED ", " PRECISION_NAME_FP8 " " ALIASES_TEXT;
}
