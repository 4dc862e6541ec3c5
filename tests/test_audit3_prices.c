/* test_audit3_prices.c: regression tests of the third audit: `costbench prices import` and its --out, plan's costs, prices_load (issue 28: #2 #11 #15 #17 #18). */
#include <stdio.h>
#include <string.h>

#include "check.h"

const test_case tests_audit3_prices[] = {
    {NULL, NULL},
};
