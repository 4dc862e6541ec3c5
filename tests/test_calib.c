#include "check.h"

const test_case tests_calib[] = {
    {NULL, NULL},
};
