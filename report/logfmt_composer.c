/* logfmt_composer.c: Composer / llm-foundry logs (logimport.h). */
#include "logimport.h"

#include <string.h>

/* The console logger's batch header: "[batch=10/100]:", its metrics on the lines below. */
int log_is_composer_line(const char *line)
{
    const char *b = strstr(line, "[batch=");
    return b && strstr(b, "]:") != NULL;
}
