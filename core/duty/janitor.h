/*
 * janitor.h - the host's database chores, in a thread of the worker that
 * leads the host's duties (duties.h), which only ever talks to PostgreSQL:
 * every janitor_interval seconds it deletes completed and free keys older
 * than `retention`, in small batches so it never holds long locks; and when
 * a worker process has gone, it frees that worker's keys at once
 * (idem_expire_owner), so its jobs are claimed on their next delivery
 * instead of waiting out the lease, counting the run of the jobs that
 * crashed it, and the outbox rows its relay had claimed
 * (outbox_release_owner), so they are sent now rather than when the claim
 * lapses.
 *
 * The gone workers reach it through the shared region, not through this
 * API: the master queues each (gone_push, proc/gone.h), and the janitor,
 * in another process, looks at the queue every 250 ms, retrying with
 * backoff while PostgreSQL refuses. An owner leaves the queue only once
 * its keys are freed, so a janitor that stops (a reload replaces it) leaves
 * the rest to the next.
 */
#ifndef TWICE_JANITOR_H
#define TWICE_JANITOR_H

struct janitor;

/* Start with the configuration's dsn, table, retention and batch (copied).
 * NULL on failure (logged). */
struct janitor *janitor_start(const char *dsn, const char *table, int retention, int interval,
                              int batch);

/* Stop (after one last try at the queued gone workers) and free. Those it
 * could not free stay queued, for the next janitor. */
void janitor_stop(struct janitor *j);
/* Tell it to begin its last try and stop, without waiting (janitor_stop
 * waits): relay_ask_stop says why. */
void janitor_ask_stop(struct janitor *j);

#endif
