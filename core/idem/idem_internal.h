/*
 * idem_internal.h - what idem.c shares with idem_keys.c and outbox.c and
 * nobody else: running SQL written against the store's table, and the
 * outbox's part of the migration. Not part of the store's
 * contract (idem.h); never include it outside idem*.c and outbox.c.
 */
#ifndef TWICE_IDEM_INTERNAL_H
#define TWICE_IDEM_INTERNAL_H

#include <libpq-fe.h>
#include <stddef.h>

struct idem_store;

/*
 * Run SQL built from tmpl ("@T" is the quoted table, "@I" the janitor
 * index, "@P" the pause table of pause.h) with text parameters. Returns the result (owned by the
 * caller, PQclear it) when its status is `want`, else NULL with err ("WHAT (table T): message",
 * never the DSN's password).
 */
PGresult *idem_run_sql(struct idem_store *s, const char *tmpl, int nparams,
                       const char *const *params, ExecStatusType want, const char *what, char *err,
                       size_t errlen);

/* The pause table's name, quoted (for to_regclass). Borrowed from s. */
const char *idem_pause_table(const struct idem_store *s);

/* The pause table's DDL (pause.c; pause.h says more), for idem_migrate. */
int idem_pause_migrate(struct idem_store *s, char *err, size_t errlen);

/* Create the outbox table when missing (outbox.c; outbox.h says more):
 * the one hook of the outbox in idem_migrate. */
int outbox_migrate(struct idem_store *s, const char *table, char *err, size_t errlen);

#endif
