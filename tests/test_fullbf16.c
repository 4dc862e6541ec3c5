#include "check.h"

const test_case tests_fullbf16[] = {
    {NULL, NULL},
};
