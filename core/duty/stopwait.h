/*
 * stopwait.h - how the master's threads that keep a PostgreSQL connection
 * (janitor, pause watch, store health check, outbox relay) wait for their
 * statements' answers: never held past a stop by a server that stopped
 * answering on an established connection (a frozen backend or pooler), from
 * their first connect on (the migration, LISTEN), so that the master, which
 * joins them when it stops or reloads, exits in time.
 *
 * No deadline while the master runs: a slow statement of these threads
 * harms nobody but themselves (a purge of many keys, a relay batch behind a
 * row lock), a given-up one leaves its outcome unknown, and /readyz already
 * counts a check that hangs as none (health.c). Only a stop gives a
 * statement up, a grace after the thread first saw it: long enough for what
 * a working server answers late (the janitor's last expiries of gone
 * workers, a relay batch's completion, whose loss sends its rows again),
 * short because the master waits for them: it tells all of them to stop
 * before it joins any (relay_ask_stop), so their graces overlap, and the
 * longest (the janitor's, 2 s) is what a stop or a reload waits at most.
 */
#ifndef TWICE_STOPWAIT_H
#define TWICE_STOPWAIT_H

#include "idem.h"

#include <stdint.h>

/* A thread's wait: when it first saw its stop (monotonic ms, 0: not yet). */
struct stopwait {
    int64_t stop_seen_ms;
};

/* For a tick: nonzero once stopping has been seen for grace_ms (0: at once). */
int stopwait_over(struct stopwait *w, int stopping, int grace_ms);

/*
 * The store of these threads: *s opened on first use, reconnected when
 * it dropped, and from its first connect on, its connects and statements
 * wait as above: tick(arg) is called about every 100 ms meanwhile, on the
 * thread, and returns stopwait_over's answer for the thread's stop (arg is
 * borrowed for as long as *s lives). 0, or -1 with err; *fresh (may be NULL)
 * is set when it had to (re)connect.
 */
int stopwait_ensure(struct idem_store **s, const char *dsn, const char *table, const char *owner,
                    int *fresh, int (*tick)(void *arg), void *arg, char *err, size_t errlen);

#endif
