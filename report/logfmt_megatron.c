/* logfmt_megatron.c: Megatron-LM logs (logimport.h). */
#include "logimport.h"

#include <string.h>

/* training_log's iteration line: " [date] iteration   10/  100 | consumed samples: ... | elapsed
 * time per iteration (ms): ... |" */
int log_is_megatron_line(const char *line)
{
    return strstr(line, "iteration") && strstr(line, "elapsed time per iteration (ms):") != NULL;
}
