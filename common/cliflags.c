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

/* --net-from (network file) beside the network flags. */
int net_from_flag_check(const char *net_from, double net_gbps, double intra_gbps, double latency_us, double net_eff)
{
    if (!net_from) return 0;
    const char *other = net_gbps > 0      ? "--net-gbps"
                        : intra_gbps > 0  ? "--intra-gbps"
                        : latency_us >= 0 ? "--latency-us"
                        : net_eff != 1    ? "--net-efficiency"
                                          : NULL;
    if (other)
        return err_usage("flag '--net-from': give it alone, not with '%s' (the measured network replaces the "
                         "hardware table's figures that flag sets)",
                         other);
    return 0;
}
