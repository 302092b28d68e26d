/*
 * pause.h - which queues are paused, in PostgreSQL next to the idempotency
 * table (TABLE_pause, one row per paused queue), so that every twiced host
 * sharing the database stops and starts together and a restart keeps the
 * state. An operator pauses with twicectl; a queue's circuit breaker pauses
 * it with kind "breaker" and probes it after the cooldown. Not the reading
 * loop nor the alerts (duty/pausewatch.c), nor the workers' view of it
 * (proc/flow.h).
 *
 * A row's life: paused (an operator's, or a breaker's) --resume--> resumed
 * (not paused for anyone any more) --a master announces it--> no row. A row
 * stays until a master has sent the "resumed" alert, so that exactly one
 * host sends it. An operator's pause with an end (--for) counts as resumed
 * once that end has passed. Functions return 0 (or a count), or -1 with err;
 * they never log.
 */
#ifndef TWICE_PAUSE_H
#define TWICE_PAUSE_H

#include <stddef.h>
#include <stdint.h>

struct idem_store;

#define PAUSE_QUEUE_MAX  256 /* bytes of a queue name kept, NUL included */
#define PAUSE_REASON_MAX 200 /* bytes of a reason kept, NUL included */

/* One row of the pause table. Times are unix seconds, 0 when not set. */
struct pause_row {
    char queue[PAUSE_QUEUE_MAX];
    int breaker;                   /* paused by the queue's circuit breaker */
    char reason[PAUSE_REASON_MAX]; /* "breaker" for the breaker's */
    int64_t paused_at;
    int64_t until; /* operator: the pause's end; breaker: the cooldown's end */
    int cooldown;  /* breaker: the current cooldown, seconds */
    int probing;   /* breaker: a host holds a live probe lease */
    int resumed;   /* resumed, waiting for a master to announce it */
    int announced; /* a master sent the "paused" alert */
    int64_t now;   /* the database's clock when read */
};

/* Create the table if it is missing (idem_migrate calls it; twicectl and
 * the master too, since either may come first). Safe concurrently. */
int idem_pause_migrate(struct idem_store *s, char *err, size_t errlen);

/* Every row, by queue; *out is malloc'd (free it; NULL when there are
 * none), *n its count. A missing table has no rows. */
int idem_pause_list(struct idem_store *s, struct pause_row **out, size_t *n, char *err,
                    size_t errlen);

/* An operator's pause of queue, for seconds (0: until resumed), with reason
 * (copied; NULL or "": "manual"). It replaces a breaker's pause. */
int idem_pause_set(struct idem_store *s, const char *queue, const char *reason, long seconds,
                   char *err, size_t errlen);

/* Resume queue: 1 when it was paused, 0 when it was not. */
int idem_pause_resume(struct idem_store *s, const char *queue, char *err, size_t errlen);

/* The breaker of queue opened: pause it for cooldown seconds unless it is
 * paused already. 1 when this call paused it, 0 when it was. */
int idem_pause_trip(struct idem_store *s, const char *queue, int cooldown, char *err,
                    size_t errlen);

/* After a breaker's cooldown: take the probe of queue for owner (one host
 * wins) for lease seconds. 1 when owner has it, 0 when not due or taken. */
int idem_pause_probe_claim(struct idem_store *s, const char *queue, const char *owner, int lease,
                           char *err, size_t errlen);

/* The probe's outcome: ok resumes the queue; else the breaker opens again
 * for its cooldown doubled, at most cap seconds (never shorter than it was:
 * the host that opened it may have a longer cap). */
int idem_pause_probe_end(struct idem_store *s, const char *queue, int ok, int cap, char *err,
                         size_t errlen);

/* Announcements, at most one host each: 1 when this call won the right to
 * send the "paused" alert of queue; for idem_pause_finish, 1 when it removed
 * a resumed (or expired) row, *announced then saying whether its "paused"
 * alert went out (so a "resumed" one is due). */
int idem_pause_announce(struct idem_store *s, const char *queue, char *err, size_t errlen);
int idem_pause_finish(struct idem_store *s, const char *queue, int *announced, char *err,
                      size_t errlen);

#endif
