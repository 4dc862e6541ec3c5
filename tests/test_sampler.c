#include "check.h"

const test_case tests_sampler[] = {
    {NULL, NULL},
};
