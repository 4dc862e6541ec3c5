#include "cliflags.h"

#include <string.h>

#include "err.h"

int attention_flag_parse(const char *s, int framework_flash, int *flash)
{
    if (!s) return *flash = framework_flash, 0;
    if (strcmp(s, "flash") == 0) return *flash = 1, 0;
    if (strcmp(s, "full") == 0) return *flash = 0, 0;
    return err_usage("flag '--attention': expected full or flash, got '%s'", s);
}
