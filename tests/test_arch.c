#include "check.h"

const test_case tests_arch[] = {
    {NULL, NULL},
};
