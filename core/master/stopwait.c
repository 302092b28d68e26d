/*
 * stopwait.c - a statement of a master thread given up once its thread has
 * been stopping for a while (see stopwait.h).
 */
#include "stopwait.h"

#include "clock.h"

#include <stdio.h>

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
stopwait_reconnect(struct idem_store *s, int (*tick)(void *arg), void *arg, char *err,
                   size_t errlen)
{
    for (;;) {
        int got = idem_reconnect_poll(s, STOPWAIT_TICK_MS, err, errlen);
        if (got != 0) {
            return got == 1 ? 0 : -1;
        }
        if (tick(arg) != 0) {
            snprintf(err, errlen, "cannot connect to PostgreSQL: no answer before the stop");
            return -1;
        }
    }
}

int
stopwait_ensure(struct idem_store **s, const char *dsn, const char *table, const char *owner,
                int *fresh, int (*tick)(void *arg), void *arg, char *err, size_t errlen)
{
    int renew = !idem_connected(*s);
    if (fresh != NULL) {
        *fresh = renew;
    }
    if (!renew) {
        return 0;
    }
    int rc = *s == NULL ? idem_open(dsn, table, owner, s, err, errlen)
                        : stopwait_reconnect(*s, tick, arg, err, errlen);
    stopwait_apply(*s, tick, arg);
    return rc;
}
