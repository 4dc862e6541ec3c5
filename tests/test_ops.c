/* test_ops.c: every kernel operation registered once, run for every precision it has. */
#include "check.h"

const test_case tests_ops[] = {
    {NULL, NULL},
};
