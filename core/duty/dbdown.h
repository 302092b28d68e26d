/*
 * dbdown.h - how the master's threads that keep a PostgreSQL connection
 * (janitor, pause watch, outbox relay) report it failing, or refusing the
 * statement they retry (a server that takes no writes, a missing grant): one
 * line when it goes down and one when it works again, not a line per retry.
 */
#ifndef TWICE_DBDOWN_H
#define TWICE_DBDOWN_H

/*
 * Note the outcome rc of a thread's attempt to get its connection. rc != 0:
 * count it in twice_pg_errors_total{operation=op} and, the first time since
 * it worked, log "WHO: ERR (HINT)". rc == 0 after a failure: log that the
 * database is reachable again. *down is the thread's own state (0 at start).
 * Returns rc.
 */
int dbdown_note(int *down, int rc, const char *who, const char *op, const char *err,
                const char *hint);

#endif
