/* logfmt_torchtitan.c: torchtitan logs (logimport.h). */
#include "logimport.h"

#include <string.h>

/* The metrics logger's step line: "step: 10  loss:  7.1234  memory: 40.50GiB(51.27%)  tps: 3,456
 * tflops: 180.12  mfu: 57.73%" (older versions: "wps:" for tps). */
int log_is_torchtitan_line(const char *line)
{
    return strstr(line, "step:") && strstr(line, "loss:") && (strstr(line, "tps:") || strstr(line, "wps:"));
}
