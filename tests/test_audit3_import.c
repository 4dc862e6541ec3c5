/* test_audit3_import.c: regression tests of the third audit: `costbench import` and its --out (issue 28: #0 #1 #3 #4 #9 #10 #12 of the log side). */
#include <stdio.h>
#include <string.h>

#include "check.h"

const test_case tests_audit3_import[] = {
    {NULL, NULL},
};
