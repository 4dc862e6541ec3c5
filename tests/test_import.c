/* test_import.c */
#include "check.h"

const test_case tests_import[] = {
    {NULL, NULL},
};
