#include "check.h"

const test_case tests_presets[] = {
    {NULL, NULL},
};
