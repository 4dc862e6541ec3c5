/* Tests of issue 19's validate part. */
#include "check.h"

const test_case tests_validate[] = {
    {0},
};
