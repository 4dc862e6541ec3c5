/* Tests of issue 19's tputcols part. */
#include "check.h"

const test_case tests_tputcols[] = {
    {0},
};
