/* Tests of issue 19's published part. */
#include "check.h"

const test_case tests_published[] = {
    {0},
};
