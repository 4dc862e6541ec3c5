/* test_audit3_net.c: regression tests of the third audit: network files, nccl-tests tables, validate's refused rows (issue 28: #8 #13 #14). */
#include <stdio.h>
#include <string.h>

#include "check.h"

const test_case tests_audit3_net[] = {
    {NULL, NULL},
};
