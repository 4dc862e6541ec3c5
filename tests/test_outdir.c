/* The report's output directory: only a directory costbench wrote is replaced, and nothing it did not write is ever deleted. */
#include "check.h"

const test_case tests_outdir[] = {
    {0},
};
