/* clock.c — see clock.h. */
#include "sidecar/core/clock.h"

#include <time.h>

uint64_t clock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct timeval clock_tv_ms(uint64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

struct timeval clock_until(uint64_t deadline_ms)
{
    uint64_t now = clock_now_ms();
    return clock_tv_ms(deadline_ms > now ? deadline_ms - now : 0);
}
