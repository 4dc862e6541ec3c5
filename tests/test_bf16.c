#include "check.h"

const test_case tests_bf16[] = {
    {NULL, NULL},
};
