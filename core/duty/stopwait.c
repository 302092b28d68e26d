/*
 * stopwait.c - a statement of a master thread given up once its thread has
 * been stopping for a while (see stopwait.h).
 */
#include "stopwait.h"

#include "clock.h"

/* How often a waiting statement looks at its thread's stop (ms). */
#define STOPWAIT_TICK_MS 100

/* The wait of these threads' stores. */
static struct idem_wait
wait_of(int (*tick)(void *arg), void *arg)
{
    return (struct idem_wait){
        .answer_ms = 0, .tick_ms = STOPWAIT_TICK_MS, .tick = tick, .arg = arg};
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
    int renew = *s == NULL || !idem_usable(*s);
    if (fresh != NULL) {
        *fresh = renew;
    }
    if (!renew) {
        return 0;
    }
    if (*s != NULL) {
        return idem_reconnect(*s, err, errlen); /* polled: the store has its tick */
    }
    struct idem_wait w = wait_of(tick, arg);
    return idem_open_waiting(dsn, table, owner, &w, s, err, errlen);
}
