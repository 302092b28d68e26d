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
 * index) with text parameters. Returns the result (owned by the caller,
 * PQclear it) when its status is `want`, else NULL with err ("WHAT (table
 * T): message", never the DSN's password).
 */
PGresult *idem_run_sql(struct idem_store *s, const char *tmpl, int nparams,
                       const char *const *params, ExecStatusType want, const char *what, char *err,
                       size_t errlen);

/* The same with more markers: extra is NULL or pairs of a marker letter and its
 * text, ending in NULL (as the migration's @L). */
PGresult *idem_run_sql_with(struct idem_store *s, const char *tmpl, const char *const *extra,
                            int nparams, const char *const *params, ExecStatusType want,
                            const char *what, char *err, size_t errlen);

/* The configured table's name + suffix, quoted as an identifier (malloc'd: the
 * caller frees it), for the tables another idem file keeps next to it
 * (tokens.c); NULL when out of memory. */
char *idem_quote_table(struct idem_store *s, const char *suffix);

/* Create the outbox table when missing (outbox.c; outbox.h says more):
 * the one hook of the outbox in idem_migrate. */
int outbox_migrate(struct idem_store *s, const char *table, char *err, size_t errlen);

#endif
