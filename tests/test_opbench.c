/* test_opbench.c */
#include "check.h"

const test_case tests_opbench[] = {
    {0},
};
