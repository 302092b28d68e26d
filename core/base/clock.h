/*
 * clock.h - the two time computations every thread loop needs: a monotonic
 * millisecond count (deadlines, backoff) and an absolute deadline for
 * pthread_cond_timedwait on the clock its condition variable uses.
 */
#ifndef TWICE_CLOCK_H
#define TWICE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t clock_mono_ms(void);

/* The time ms milliseconds from now on clock id (CLOCK_REALTIME for a
 * default condition variable); ms <= 0 is now. */
struct timespec clock_after_ms(clockid_t id, int64_t ms);

#endif
