/*
 * tokens.c - leasing rate-limit tokens from PostgreSQL (see tokens.h). One
 * upsert per chunk: a limit's row holds the tokens left and when it was last
 * refilled; the statement adds what the time since then is worth (up to the
 * burst), grants what it can and keeps the rest, under the row's lock, so
 * hosts leasing at once are served one after the other.
 */
#include "tokens.h"

#include "idem_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* The table, created on a connection's first lease (@R: its quoted name). */
static const char sql_create[] =
    "CREATE TABLE IF NOT EXISTS @R (name TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL,"
    " granted INTEGER NOT NULL DEFAULT 0, updated_at TIMESTAMPTZ NOT NULL)";

/* What the bucket holds now: its tokens plus the refill since updated_at
 * ($2 per second; never negative when another host's later statement committed
 * first), at most the burst ($3). */
#define AVAIL                                                                                     \
    "least($3::float8, r.tokens + $2::float8 * greatest(0::float8,"                               \
    " extract(epoch FROM statement_timestamp() - r.updated_at)::float8))"

/* $1 name, $2 per_second, $3 burst, $4 tokens wanted. A new limit starts full. */
static const char sql_lease[] =
    "INSERT INTO @R AS r (name, tokens, granted, updated_at)"
    " VALUES ($1, $3::float8 - least($4::int, $3::int), least($4::int, $3::int),"
    " statement_timestamp())"
    " ON CONFLICT (name) DO UPDATE SET granted = floor(least($4::float8, " AVAIL "))::int,"
    " tokens = " AVAIL " - floor(least($4::float8, " AVAIL ")),"
    " updated_at = greatest(r.updated_at, statement_timestamp())"
    " RETURNING granted";

static int
run(struct idem_store *s, const char *tmpl, const char *const *params, int nparams,
    ExecStatusType want, const char *what, int *out, char *err, size_t errlen)
{
    char *table = idem_quote_table(s, "_rate_limits");
    if (table == NULL) {
        snprintf(err, errlen, "%s: out of memory", what);
        return -1;
    }
    const char *extra[] = {"R", table, NULL};
    PGresult *res = idem_run_sql_with(s, "_rate_limits", tmpl, extra, nparams, params, want, what,
                                      err, errlen);
    free(table);
    if (res == NULL) {
        return -1;
    }
    if (out != NULL) {
        *out = PQntuples(res) == 1 ? atoi(PQgetvalue(res, 0, 0)) : 0;
    }
    PQclear(res);
    return 0;
}

int
tokens_lease(struct idem_store *s, const char *name, int per_second, int burst, int want,
             int *granted, char *err, size_t errlen)
{
    char rate[16], size[16], chunk[16];
    snprintf(rate, sizeof(rate), "%d", per_second);
    snprintf(size, sizeof(size), "%d", burst);
    snprintf(chunk, sizeof(chunk), "%d", want);
    const char *params[] = {name, rate, size, chunk};
    *granted = 0;
    if (run(s, sql_lease, params, 4, PGRES_TUPLES_OK, "rate limit", granted, err, errlen) == 0) {
        return 0;
    }
    /* The table may not exist yet (its first use on this database): create it
     * and try once more. Two hosts creating it at once: one of them fails and
     * tries again on its next lease. */
    char ignored[256];
    if (run(s, sql_create, NULL, 0, PGRES_COMMAND_OK, "rate limit table", NULL, ignored,
            sizeof(ignored)) != 0) {
        return -1; /* err: the lease's own error */
    }
    return run(s, sql_lease, params, 4, PGRES_TUPLES_OK, "rate limit", granted, err, errlen);
}
