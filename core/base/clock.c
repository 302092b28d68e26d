/*
 * clock.c - monotonic milliseconds and condition-variable deadlines (see
 * clock.h).
 */
#include "clock.h"

int64_t
clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec
clock_after_ms(clockid_t id, int64_t ms)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    if (ms > 0) {
        ts.tv_sec += (time_t) (ms / 1000);
        ts.tv_nsec += (long) (ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
    }
    return ts;
}
