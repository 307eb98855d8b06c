/* Time as the window sees it: CLOCK_MONOTONIC, which no clock adjustment moves, and sleeps that a signal
 * does not cut short. */
#include "clock.h"
#include "errors.h"

#include <errno.h>
#include <time.h>

uint64_t now_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        die_errno("clock_gettime");
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

double clock_ns(clockid_t clock)
{
    struct timespec t;
    if (clock_gettime(clock, &t) != 0)
        die_errno("clock_gettime");
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

void sleep_seconds(double seconds)
{
    struct timespec left = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&left, &left) != 0)
        if (errno != EINTR)
            die_errno("nanosleep");
}
