/* test_prices.c */
#include "check.h"

const test_case tests_prices[] = {
    {NULL, NULL},
};
