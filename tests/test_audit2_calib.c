/* Regression tests for the second hostile audit's defects (issue 18): see the first comment below. */
#include "check.h"

const test_case tests_audit2_calib[] = {
    {0},
};
