#include "check.h"

const test_case tests_attention[] = {
    {NULL, NULL},
};
