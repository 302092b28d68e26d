/*
 * janitor.h - the master's key janitor: every janitor_interval seconds it
 * deletes completed keys older than `retention`, in small batches so it
 * never holds long locks. It runs in a thread of the master and only ever
 * talks to PostgreSQL.
 */
#ifndef TWICE_JANITOR_H
#define TWICE_JANITOR_H

struct janitor;

/* Start with the configuration's dsn, table, retention and batch (copied).
 * NULL on failure (logged). */
struct janitor *janitor_start(const char *dsn, const char *table, int retention, int interval,
                              int batch);
/* Stop and free (waits for the current batch). */
void janitor_stop(struct janitor *j);

#endif
