/* Tests of issue 19's devices part. */
#include "check.h"

const test_case tests_devices[] = {
    {0},
};
