/* logfmt_costbench.c: `costbench train`'s own log (logimport.h). */
#include "logimport.h"

#include <string.h>

/* The step table's header: "    step      loss  grad_norm        lr        ms  tokens_per_s ..." */
int log_is_costbench_line(const char *line)
{
    const char *s = line + strspn(line, " ");
    return strncmp(s, "step ", 5) == 0 && strstr(s, "grad_norm") && strstr(s, "tokens_per_s") != NULL;
}
