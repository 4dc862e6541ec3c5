#include "check.h"

const test_case tests_precision[] = {
    {NULL, NULL},
};
