/* Tests of issue 19's models part. */
#include "check.h"

const test_case tests_models[] = {
    {0},
};
