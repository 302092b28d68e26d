/*
 * janitor.h - the master's database chores, in a thread of the master that
 * only ever talks to PostgreSQL: every janitor_interval seconds it deletes
 * completed keys older than `retention`, in small batches so it never
 * holds long locks; and when a worker process has gone, it ends that
 * worker's leases at once (idem_expire_owner) so its jobs are taken over
 * on their next delivery instead of waiting out the lease.
 */
#ifndef TWICE_JANITOR_H
#define TWICE_JANITOR_H

struct janitor;

/* Start with the configuration's dsn, table, retention and batch (copied).
 * NULL on failure (logged). */
struct janitor *janitor_start(const char *dsn, const char *table, int retention, int interval,
                              int batch);

/* Queue a gone worker's lease owner (see childargs_owner) and the message
 * whose job crashed it (NULL: unknown; see idem_expire_owner). Never blocks. */
void janitor_expire_owner(struct janitor *j, const char *owner, const char *culprit);

/* Stop (after one last try at the queued owners) and free; owners still
 * queued move to successor when given (a reload's new janitor). */
void janitor_stop(struct janitor *j, struct janitor *successor);

#endif
