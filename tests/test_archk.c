#include "check.h"

const test_case tests_archk[] = {
    {NULL, NULL},
};
