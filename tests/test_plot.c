/* Plots: a full disk or an unwritable path fails with one error and keeps the earlier file; what is committed is complete. */
#include "check.h"

const test_case tests_plot[] = {
    {0},
};
