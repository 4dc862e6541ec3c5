/* costbench scale: every function small, and a calibration that does not reproduce its own points is an error, never "fitted". */
#include "check.h"

const test_case tests_scale[] = {
    {0},
};
