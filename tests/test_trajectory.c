#include "check.h"

const test_case tests_trajectory[] = {
    {NULL, NULL},
};
