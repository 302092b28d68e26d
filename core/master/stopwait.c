/*
 * stopwait.c - a statement of a master thread given up once its thread has
 * been stopping for a while (see stopwait.h).
 */
#include "stopwait.h"

#include "clock.h"

/* How often a waiting statement looks at its thread's stop (ms). */
#define STOPWAIT_TICK_MS 100

void
stopwait_apply(struct idem_store *s, int (*tick)(void *arg), void *arg)
{
    if (s != NULL) {
        idem_set_wait(s, 0, STOPWAIT_TICK_MS, tick, arg);
    }
}

int
stopwait_over(struct stopwait *w, int stopping, int grace_ms)
{
    if (!stopping) {
        return 0;
    }
    int64_t now = clock_mono_ms();
    if (w->stop_seen_ms == 0) {
        w->stop_seen_ms = now;
    }
    return now - w->stop_seen_ms >= grace_ms;
}

int
stopwait_ensure(struct idem_store **s, const char *dsn, const char *table, const char *owner,
                int *fresh, int (*tick)(void *arg), void *arg, char *err, size_t errlen)
{
    int rc = idem_ensure(s, dsn, table, owner, fresh, err, errlen);
    stopwait_apply(*s, tick, arg); /* a first open's store; a reconnect keeps it */
    return rc;
}
