/*
 * janitor.h - the master's database chores, in a thread of the master that
 * only ever talks to PostgreSQL: every janitor_interval seconds it deletes
 * completed and free keys older than `retention`, in small batches so it
 * never holds long locks; and when a worker process has gone, it frees that
 * worker's keys at once (idem_expire_owner) so its jobs are claimed on their
 * next delivery instead of waiting out the lease, counting the run of the
 * jobs that crashed it.
 */
#ifndef TWICE_JANITOR_H
#define TWICE_JANITOR_H

#include <stddef.h>

#include "idem.h"

struct janitor;

/* Start with the configuration's dsn, table, retention and batch (copied).
 * NULL on failure (logged). */
struct janitor *janitor_start(const char *dsn, const char *table, int retention, int interval,
                              int batch);

/* Queue a gone worker's lease owner (see childargs_owner) and the jobs that
 * crashed it (culprits[0..n), copied; none when it exited or was stopped;
 * see idem_expire_owner). Never blocks. */
void janitor_expire_owner(struct janitor *j, const char *owner,
                          const struct idem_culprit *culprits, size_t n);

/* Stop (after one last try at the queued owners) and free; owners still
 * queued move to successor when given (a reload's new janitor). */
void janitor_stop(struct janitor *j, struct janitor *successor);
/* Tell it to begin its last try and stop, without waiting (janitor_stop
 * waits): relay_ask_stop says why. Owners queued after it may miss the last
 * try; janitor_stop still hands them over. */
void janitor_ask_stop(struct janitor *j);

#endif
