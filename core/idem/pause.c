/*
 * pause.c - the queue pause table of pause.h: its DDL, the operator's pause
 * and resume, the breaker's trip and probe, and the announcements that let
 * exactly one host alert. SQL only with parameters; the table's name is the
 * configured idempotency table's plus "_pause", quoted (@P).
 */
#include "pause.h"

#include "idem_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keep in sync with etc/schema.sql. kind: 'operator' or 'breaker'. */
static const char sql_create[] =
    "CREATE TABLE IF NOT EXISTS @P (queue TEXT PRIMARY KEY,"
    " kind TEXT NOT NULL DEFAULT 'operator' CHECK (kind IN ('operator', 'breaker')),"
    " reason TEXT NOT NULL, paused_at TIMESTAMPTZ NOT NULL DEFAULT now(),"
    " until TIMESTAMPTZ, cooldown INTEGER, probe_owner TEXT, probe_until TIMESTAMPTZ,"
    " resumed BOOLEAN NOT NULL DEFAULT false, announced BOOLEAN NOT NULL DEFAULT false)";

/* idem_run_sql for a statement on the pause table: its errors name it. */
static PGresult *
pause_sql(struct idem_store *s, const char *tmpl, int nparams, const char *const *params,
          ExecStatusType want, const char *what, char *err, size_t errlen)
{
    return idem_run_sql_with(s, "_pause", tmpl, NULL, nparams, params, want, what, err, errlen);
}

/* Look first: CREATE TABLE IF NOT EXISTS needs CREATE on the schema even
 * when the table is there, and a DBA may give twiced's role none once the
 * tables exist (etc/schema.sql applied by their owner). 1 when the table is
 * there, 0 when not, -1 with err (naming the pause table). */
static int
pause_table_exists(struct idem_store *s, char *err, size_t errlen)
{
    const char *params[] = {idem_pause_table(s)};
    PGresult *res = pause_sql(s, "SELECT to_regclass($1) IS NOT NULL", 1, params, PGRES_TUPLES_OK,
                              "look for the pause table", err, errlen);
    if (res == NULL) {
        return -1;
    }
    int yes = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    return yes;
}

int
idem_pause_migrate(struct idem_store *s, char *err, size_t errlen)
{
    int exists = pause_table_exists(s, err, errlen);
    if (exists != 0) {
        return exists > 0 ? 0 : -1;
    }
    /* Two first creators at once: one fails on the catalog's unique index;
     * the second try sees the table. */
    for (int tries = 0; tries < 2; tries++) {
        PGresult *res =
            pause_sql(s, sql_create, 0, NULL, PGRES_COMMAND_OK, "create pause table", err, errlen);
        if (res != NULL) {
            PQclear(res);
            return 0;
        }
    }
    return -1;
}

/* Run a statement whose rows are counted: the count, or -1. */
static int
run_count(struct idem_store *s, const char *sql, int n, const char *const *params,
          const char *what, char *err, size_t errlen)
{
    PGresult *res = pause_sql(s, sql, n, params, PGRES_TUPLES_OK, what, err, errlen);
    if (res == NULL) {
        return -1;
    }
    int rows = PQntuples(res);
    PQclear(res);
    return rows;
}

static int64_t
column_time(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? 0 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static int
column_bool(const PGresult *res, int row, int col)
{
    return strcmp(PQgetvalue(res, row, col), "t") == 0;
}

int
idem_pause_list(struct idem_store *s, struct pause_row **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    /* No table yet (no twiced has run, nothing was paused): no pauses. */
    const char *name[] = {idem_pause_table(s)};
    int exists = run_count(s, "SELECT 1 WHERE to_regclass($1) IS NOT NULL", 1, name,
                           "list paused queues", err, errlen);
    if (exists <= 0) {
        return exists; /* *out stays NULL: nothing to free */
    }
    PGresult *res =
        pause_sql(s,
                  "SELECT queue, kind = 'breaker', reason, extract(epoch FROM paused_at)::bigint,"
                  " extract(epoch FROM until)::bigint, coalesce(cooldown, 0),"
                  " probe_owner IS NOT NULL AND probe_until > now(), resumed, announced,"
                  " extract(epoch FROM now())::bigint FROM @P ORDER BY queue",
                  0, NULL, PGRES_TUPLES_OK, "list paused queues", err, errlen);
    if (res == NULL) {
        return -1;
    }
    size_t rows = (size_t) PQntuples(res);
    struct pause_row *r = calloc(rows ? rows : 1, sizeof(*r));
    if (r == NULL) {
        PQclear(res);
        snprintf(err, errlen, "list paused queues: out of memory");
        return -1;
    }
    for (size_t i = 0; i < rows; i++) {
        int row = (int) i;
        snprintf(r[i].queue, sizeof(r[i].queue), "%s", PQgetvalue(res, row, 0));
        r[i].breaker = column_bool(res, row, 1);
        snprintf(r[i].reason, sizeof(r[i].reason), "%s", PQgetvalue(res, row, 2));
        r[i].paused_at = column_time(res, row, 3);
        r[i].until = column_time(res, row, 4);
        r[i].cooldown = atoi(PQgetvalue(res, row, 5));
        r[i].probing = column_bool(res, row, 6);
        r[i].resumed = column_bool(res, row, 7);
        r[i].announced = column_bool(res, row, 8);
        r[i].now = column_time(res, row, 9);
    }
    PQclear(res);
    *out = r;
    *n = rows;
    return 0;
}

int
idem_pause_set(struct idem_store *s, const char *queue, const char *reason, long seconds,
               char *err, size_t errlen)
{
    char secs[24];
    snprintf(secs, sizeof(secs), "%ld", seconds > 0 ? seconds : 0);
    const char *params[] = {queue, reason != NULL && reason[0] ? reason : "manual", secs};
    return run_count(
               s,
               "INSERT INTO @P AS p (queue, kind, reason, until) VALUES ($1, 'operator', $2,"
               " CASE WHEN $3::bigint > 0 THEN now() + $3::bigint * interval '1 second' END)"
               " ON CONFLICT (queue) DO UPDATE SET kind = 'operator', reason = EXCLUDED.reason,"
               " until = EXCLUDED.until, cooldown = NULL, probe_owner = NULL, probe_until = NULL,"
               " paused_at = CASE WHEN p.resumed THEN now() ELSE p.paused_at END,"
               " announced = p.announced AND NOT p.resumed, resumed = false RETURNING 1",
               3, params, "pause", err, errlen) < 0
               ? -1
               : 0;
}

int
idem_pause_resume(struct idem_store *s, const char *queue, char *err, size_t errlen)
{
    const char *params[] = {queue};
    return run_count(s,
                     "UPDATE @P SET resumed = true WHERE queue = $1 AND NOT resumed"
                     " AND (kind = 'breaker' OR until IS NULL OR until > now()) RETURNING 1",
                     1, params, "resume", err, errlen);
}

int
idem_pause_trip(struct idem_store *s, const char *queue, int cooldown, char *err, size_t errlen)
{
    char secs[16];
    snprintf(secs, sizeof(secs), "%d", cooldown);
    const char *params[] = {queue, secs};
    return run_count(
        s,
        "INSERT INTO @P AS p (queue, kind, reason, until, cooldown) VALUES ($1, 'breaker',"
        " 'breaker', now() + $2::int * interval '1 second', $2::int)"
        " ON CONFLICT (queue) DO UPDATE SET kind = 'breaker', reason = 'breaker',"
        " until = EXCLUDED.until, cooldown = EXCLUDED.cooldown, probe_owner = NULL,"
        " probe_until = NULL, paused_at = now(), resumed = false, announced = false"
        " WHERE p.resumed OR (p.kind = 'operator' AND p.until <= now()) RETURNING 1",
        2, params, "open the breaker", err, errlen);
}

int
idem_pause_probe_claim(struct idem_store *s, const char *queue, const char *owner, int lease,
                       char *err, size_t errlen)
{
    char secs[16];
    snprintf(secs, sizeof(secs), "%d", lease);
    const char *params[] = {queue, owner, secs};
    return run_count(s,
                     "UPDATE @P SET probe_owner = $2,"
                     " probe_until = now() + $3::int * interval '1 second'"
                     " WHERE queue = $1 AND kind = 'breaker' AND NOT resumed AND until <= now()"
                     " AND (probe_owner IS NULL OR probe_until <= now() OR probe_owner = $2)"
                     " RETURNING 1",
                     3, params, "claim the probe", err, errlen);
}

int
idem_pause_probe_end(struct idem_store *s, const char *queue, int ok, int cap, char *err,
                     size_t errlen)
{
    char secs[16];
    snprintf(secs, sizeof(secs), "%d", cap);
    const char *params[] = {queue, secs};
    if (ok) {
        return run_count(s,
                         "UPDATE @P SET resumed = true WHERE queue = $1 AND kind = 'breaker'"
                         " AND NOT resumed RETURNING 1",
                         1, params, "close the breaker", err, errlen) < 0
                   ? -1
                   : 0;
    }
    return run_count(s,
                     "UPDATE @P SET cooldown = greatest(cooldown, least(cooldown * 2, $2::int)),"
                     " until = now() + greatest(cooldown, least(cooldown * 2, $2::int))"
                     " * interval '1 second',"
                     " probe_owner = NULL, probe_until = NULL"
                     " WHERE queue = $1 AND kind = 'breaker' AND NOT resumed RETURNING 1",
                     2, params, "reopen the breaker", err, errlen) < 0
               ? -1
               : 0;
}

int
idem_pause_announce(struct idem_store *s, const char *queue, char *err, size_t errlen)
{
    const char *params[] = {queue};
    return run_count(s,
                     "UPDATE @P SET announced = true WHERE queue = $1 AND NOT announced"
                     " AND NOT resumed RETURNING 1",
                     1, params, "announce a pause", err, errlen);
}

int
idem_pause_finish(struct idem_store *s, const char *queue, int *announced, char *err,
                  size_t errlen)
{
    const char *params[] = {queue};
    *announced = 0;
    PGresult *res = pause_sql(s,
                              "DELETE FROM @P WHERE queue = $1 AND (resumed OR (kind = 'operator'"
                              " AND until <= now())) RETURNING announced",
                              1, params, PGRES_TUPLES_OK, "end a pause", err, errlen);
    if (res == NULL) {
        return -1;
    }
    int rows = PQntuples(res);
    if (rows > 0) {
        *announced = column_bool(res, 0, 0);
    }
    PQclear(res);
    return rows > 0 ? 1 : 0;
}
