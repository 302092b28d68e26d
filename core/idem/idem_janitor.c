/*
 * idem_janitor.c - the statements of the master's janitor thread, written
 * for each layout of the table (idem_schema.c says why there are two):
 * deleting keys older than the retention, and freeing the keys of a worker
 * that has gone, counting the run of the job that crashed it. Not when to
 * run them: duty/janitor.c.
 */
#include "idem.h"

#include <libpq-fe.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "idem_internal.h"

/* Which layout the table has (idem_schema.c): looked up once per connection. */
static enum idem_layout
layout(struct idem_store *s, char *err, size_t errlen)
{
    if (s->layout != LAYOUT_UNKNOWN) {
        return s->layout;
    }
    const char *params[] = {s->lease_index};
    int lease = idem_ask(s, "SELECT to_regclass($1) IS NOT NULL", 1, params,
                         "inspect the table's indexes", err, errlen);
    if (lease < 0) {
        return LAYOUT_UNKNOWN;
    }
    s->layout = lease ? LAYOUT_LEASE : LAYOUT_PARTIAL;
    return s->layout;
}

/* The janitor's rows, by layout, with $1 the retention in seconds: for each
 * kind of key, the conditions the index answers, tried in turn. In the lease
 * layout lease_until and processed_at must both be older than the
 * retention (a key completed after its lease ran out waits for its
 * processed_at), and rows without a lease (written by an older twice into
 * this table) are found apart, as NULLs are in the index; an in-progress
 * key whose lease ended a retention ago belongs to a worker long gone whose
 * lease had lapsed before the master could end it (expire_owner). */
#define PURGE_OLD       "processed_at < now() - $1::int * interval '1 second'"
#define PURGE_OLD_LEASE "lease_until < now() - $1::int * interval '1 second'"
#define PURGE_FREE      "state IN ('released', 'crashed', 'interrupted')"
#define PURGE_CONDS     2 /* at most, per layout and kind; NULL: no more */
static const char *const purge_conds[][2][PURGE_CONDS] = {
    [LAYOUT_PARTIAL] = {{"state = 'completed' AND " PURGE_OLD, NULL},
                        {PURGE_FREE " AND " PURGE_OLD, NULL}},
    [LAYOUT_LEASE] = {{PURGE_OLD_LEASE " AND state = 'completed' AND " PURGE_OLD,
                       "lease_until IS NULL AND state = 'completed' AND " PURGE_OLD},
                      {PURGE_OLD_LEASE " AND (" PURGE_FREE " AND " PURGE_OLD
                                       " OR state = 'in_progress')",
                       "lease_until IS NULL AND " PURGE_FREE " AND " PURGE_OLD}},
};

/* Delete at most limit rows matching cond: by ctid, so that LIMIT bounds
 * the batch (DELETE has no LIMIT). */
static int
purge_where(struct idem_store *s, const char *cond, int retention, long limit, long *deleted,
            char *err, size_t errlen)
{
    char ret[16], lim[24];
    snprintf(ret, sizeof(ret), "%d", retention);
    snprintf(lim, sizeof(lim), "%ld", limit);
    const char *params[] = {ret, lim};
    struct buf tmpl = BUF_INIT; /* cond is ours: no marker, nothing from outside */
    buf_printf(&tmpl,
               "DELETE FROM @T WHERE ctid = ANY (ARRAY (SELECT ctid FROM @T WHERE %s"
               " LIMIT $2::int))",
               cond);
    if (tmpl.failed) {
        buf_free(&tmpl);
        idem_set_err(err, errlen, "purge: out of memory");
        return -1;
    }
    PGresult *res =
        idem_run_sql(s, buf_str(&tmpl), 2, params, PGRES_COMMAND_OK, "purge keys", err, errlen);
    buf_free(&tmpl);
    if (res == NULL) {
        return -1;
    }
    *deleted = strtol(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return 0;
}

/* Delete at most limit keys of one kind (0 completed, 1 free) older than
 * the retention; *deleted says how many. */
static int
purge(struct idem_store *s, int kind, int retention, int limit, long *deleted, char *err,
      size_t errlen)
{
    *deleted = 0;
    if (retention < 0 || limit <= 0) {
        idem_set_err(err, errlen, "purge: retention %d and limit %d must be >= 0 and > 0",
                     retention, limit);
        return -1;
    }
    enum idem_layout l = layout(s, err, errlen);
    if (l == LAYOUT_UNKNOWN) {
        return -1;
    }
    const char *const *conds = purge_conds[l][kind];
    for (int i = 0; i < PURGE_CONDS && conds[i] != NULL && *deleted < limit; i++) {
        long n = 0;
        if (purge_where(s, conds[i], retention, limit - *deleted, &n, err, errlen) != 0) {
            return -1;
        }
        *deleted += n;
    }
    return 0;
}

int
idem_purge_completed(struct idem_store *s, int retention, int limit, long *deleted, char *err,
                     size_t errlen)
{
    return purge(s, 0, retention, limit, deleted, err, errlen);
}

int
idem_purge_free(struct idem_store *s, int retention, int limit, long *deleted, char *err,
                size_t errlen)
{
    return purge(s, 1, retention, limit, deleted, err, errlen);
}

/* The keys of a process that has gone are free now: the next claim of each
 * takes it at once instead of waiting for the lease. The jobs that crashed
 * it have their run counted: the count + 1, or the run's own number when a
 * FIFO retry in place ran it more than once since the count was written.
 * The partial layout finds them by the owner index. The lease layout by
 * lease_until: a key the worker still held when it went had a lease ending
 * after that ($4: seconds since then, with a margin); a lease that had
 * lapsed before is taken over by the next claim anyway (IDEM_TAKEN_OVER). */
#define SQL_EXPIRE_OWNER(LEASE)                                                                   \
    "UPDATE @T t SET state = CASE WHEN c.a IS NULL THEN 'interrupted' ELSE 'crashed' END,"        \
    " attempts = CASE WHEN c.a IS NULL THEN t.attempts ELSE greatest(t.attempts + 1, c.a) END,"   \
    " owner = NULL, lease_until = now(), processed_at = now()"                                    \
    " FROM (SELECT o.idempotency_key AS k, (SELECT max(u.a) FROM unnest($2::text[], $3::int[])"   \
    " AS u (m, a) WHERE u.m = o.message_id) AS a FROM @T o"                                       \
    " WHERE o.owner = $1 AND o.state = 'in_progress'" LEASE ") c"                                 \
    " WHERE t.idempotency_key = c.k AND t.owner = $1 AND t.state = 'in_progress'"
#define EXPIRE_MARGIN 60 /* seconds */
static const char *const sql_expire_owner[] = {
    [LAYOUT_PARTIAL] = SQL_EXPIRE_OWNER(""),
    [LAYOUT_LEASE] =
        SQL_EXPIRE_OWNER(" AND o.lease_until > now() - $4::int * interval '1 second'"),
};

int
idem_expire_owner(struct idem_store *s, const char *owner, int gone_seconds,
                  const struct idem_culprit *culprits, size_t n, long *expired, char *err,
                  size_t errlen)
{
    *expired = 0;
    enum idem_layout l = layout(s, err, errlen);
    if (l == LAYOUT_UNKNOWN) {
        return -1;
    }
    struct buf ids = BUF_INIT, runs = BUF_INIT;
    buf_putc(&runs, '{');
    for (size_t i = 0; i < n; i++) {
        idem_array_elem(&ids, culprits[i].message_id);
        buf_printf(&runs, "%s%d", i > 0 ? "," : "",
                   culprits[i].attempt > 0 ? culprits[i].attempt : 0);
    }
    buf_putc(&runs, '}');
    if (idem_array_end(&ids) == NULL || runs.failed) {
        buf_free(&ids);
        buf_free(&runs);
        idem_set_err(err, errlen, "expire leases: out of memory");
        return -1;
    }
    char since[16]; /* the margin: the heartbeat's lag, the master's noticing */
    snprintf(since, sizeof(since), "%d", (gone_seconds > 0 ? gone_seconds : 0) + EXPIRE_MARGIN);
    const char *params[] = {owner, buf_str(&ids), buf_str(&runs), since};
    PGresult *res = idem_run_sql(s, sql_expire_owner[l], l == LAYOUT_LEASE ? 4 : 3, params,
                                 PGRES_COMMAND_OK, "expire leases", err, errlen);
    buf_free(&ids);
    buf_free(&runs);
    if (res == NULL) {
        return -1;
    }
    *expired = strtol(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return 0;
}
