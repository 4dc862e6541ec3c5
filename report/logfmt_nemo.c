/* logfmt_nemo.c: NeMo logs (logimport.h). */
#include "logimport.h"

#include <string.h>

/* PyTorch Lightning's progress line with NeMo's logged metrics: "Epoch 0: ... train_step_timing in
 * s=1.21 ..." */
int log_is_nemo_line(const char *line)
{
    return strstr(line, "train_step_timing") != NULL;
}
