#include "check.h"

const test_case tests_plan[] = {
    {NULL, NULL},
};
