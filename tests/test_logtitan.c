/* test_logtitan.c */
#include "check.h"

const test_case tests_logtitan[] = {
    {NULL, NULL},
};
