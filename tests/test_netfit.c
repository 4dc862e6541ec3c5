/* test_netfit.c */
#include "check.h"

const test_case tests_netfit[] = {
    {NULL, NULL},
};
