/* test_plansearch.c */
#include "check.h"

const test_case tests_plansearch[] = {
    {0},
};
