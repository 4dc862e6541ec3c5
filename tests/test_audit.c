/* Regression tests for the defects a hostile audit found (one test per defect, named after it). */
#include "check.h"

const test_case tests_audit[] = {
    {0},
};
