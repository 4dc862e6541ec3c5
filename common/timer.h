/* timer.h: monotonic wall clock in seconds. */
#ifndef CB_TIMER_H
#define CB_TIMER_H

#include <time.h>

static inline double timer_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
