/* test_stepmodel.c */
#include "check.h"

const test_case tests_stepmodel[] = {
    {0},
};
