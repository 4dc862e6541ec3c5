/* test_logmegatron.c */
#include "check.h"

const test_case tests_logmegatron[] = {
    {NULL, NULL},
};
