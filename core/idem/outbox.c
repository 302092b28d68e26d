/*
 * outbox.c - the outbox table of outbox.h on libpq: its schema, the insert
 * that rides in a job's completing transaction, and the relay's and
 * twicectl's statements. Every statement takes parameters only; the table
 * name from the configuration is quoted as an identifier. Not the sending
 * (duty/relay.c) nor the staging rules of api->send (plugin/hostapi.c).
 */
#include "outbox.h"

#include "buf.h"
#include "cnum.h"
#include "idem.h"
#include "idem_internal.h"
#include "jsonwrite.h"

#include <libpq-fe.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows per INSERT statement: 9 parameters each, well under libpq's 65535. */
#define INSERT_CHUNK 1000

/* Nothing to migrate: the table, its index and claimed_by (added since the
 * relay runs in a worker that can die: outbox_release_owner). ALTER TABLE
 * locks the table even when the column exists, so look first. */
static const char sql_check[] =
    "SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL"
    " AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1)"
    " AND attname = 'claimed_by' AND attnum > 0 AND NOT attisdropped)";

/* "@X" the quoted outbox table, "@P" its index of pending rows, "@L" the
 * advisory lock of the migration. Keep in sync with etc/schema.sql. */
static const char sql_migrate[] =
    "SELECT pg_advisory_xact_lock(@L);"
    "CREATE TABLE IF NOT EXISTS @X (id BIGSERIAL PRIMARY KEY,"
    " source_key TEXT NOT NULL, idx INTEGER NOT NULL, source_queue TEXT NOT NULL,"
    " plugin TEXT NOT NULL, queue TEXT NOT NULL, queue_url TEXT NOT NULL,"
    " body TEXT NOT NULL, delay_seconds INTEGER NOT NULL DEFAULT 0, group_id TEXT,"
    " attributes TEXT, state TEXT NOT NULL DEFAULT 'pending'"
    " CHECK (state IN ('pending', 'refused')), error TEXT,"
    " tries INTEGER NOT NULL DEFAULT 0, claimed_until TIMESTAMPTZ,"
    " created_at TIMESTAMPTZ NOT NULL DEFAULT now(), claimed_by TEXT);"
    "SELECT set_config('lock_timeout', '10s', true);"
    "ALTER TABLE @X ADD COLUMN IF NOT EXISTS claimed_by TEXT;"
    "CREATE INDEX IF NOT EXISTS @P ON @X (id) WHERE state = 'pending';";

static const char sql_claim[] =
    "UPDATE @X o SET claimed_until = now() + $2::int * interval '1 second',"
    " claimed_by = $3, tries = o.tries + 1"
    " FROM (SELECT id FROM @X WHERE state = 'pending'"
    " AND (claimed_until IS NULL OR claimed_until < now())"
    " ORDER BY id LIMIT $1::int FOR UPDATE SKIP LOCKED) c WHERE o.id = c.id"
    " RETURNING o.id, o.source_key, o.idx, o.source_queue, o.plugin, o.queue, o.queue_url,"
    " o.body, o.delay_seconds, o.group_id, o.attributes, o.state, o.error, o.tries,"
    " extract(epoch FROM o.created_at)::bigint";

/* $1 sent ids, $2 {id: why} refused, $3 {id: why} for later, $4 seconds. */
static const char sql_finish[] =
    "WITH d AS (DELETE FROM @X WHERE id = ANY ($1::bigint[]) RETURNING 1),"
    " r AS (UPDATE @X o SET state = 'refused', error = e.value, claimed_until = NULL"
    " FROM jsonb_each_text($2::jsonb) e WHERE o.id = e.key::bigint RETURNING 1),"
    " l AS (UPDATE @X o SET error = e.value,"
    " claimed_until = now() + $4::int * interval '1 second'"
    " FROM jsonb_each_text($3::jsonb) e WHERE o.id = e.key::bigint RETURNING 1)"
    " SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM r), (SELECT count(*) FROM l)";

static const char sql_stats[] =
    "SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'refused'),"
    " coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE state = 'pending')),"
    " 0)::float8 FROM @X";

static const char sql_list[] =
    "SELECT id, source_key, idx, source_queue, plugin, queue, queue_url, NULL, delay_seconds,"
    " group_id, attributes, state, error, tries, extract(epoch FROM created_at)::bigint"
    " FROM @X WHERE $1::text IS NULL OR state = $1 ORDER BY id LIMIT $2::bigint";

/* Both answer the count of rows changed and, as "3,7", the given ids that
 * were not refused rows (none when $1 is NULL: every refused row). */
#define SQL_NOT_REFUSED(cte)                                                                      \
    "(SELECT coalesce(string_agg(x::text, ',' ORDER BY x), '') FROM unnest($1::bigint[]) x"       \
    " WHERE x NOT IN (SELECT id FROM " cte "))"

static const char sql_retry[] =
    "WITH u AS (UPDATE @X SET state = 'pending', claimed_until = NULL, error = NULL"
    " WHERE state = 'refused' AND ($1::bigint[] IS NULL OR id = ANY ($1::bigint[]))"
    " RETURNING id) SELECT count(*), " SQL_NOT_REFUSED("u") ", pg_notify('" OUTBOX_CHANNEL
                                                            "', '') FROM u";

/* $1 the gone owner: its live claims lapse now, and the relay is woken. */
static const char sql_release[] =
    "WITH u AS (UPDATE @X SET claimed_until = NULL, claimed_by = NULL"
    " WHERE state = 'pending' AND claimed_by = $1 AND claimed_until > now() RETURNING 1)"
    " SELECT count(*), pg_notify('" OUTBOX_CHANNEL "', '') FROM u";

/* Only refused rows: a pending one belongs to the relay. */
static const char sql_delete[] =
    "WITH d AS (DELETE FROM @X WHERE state = 'refused'"
    " AND ($1::bigint[] IS NULL OR id = ANY ($1::bigint[])) RETURNING id)"
    " SELECT count(*), " SQL_NOT_REFUSED("d") " FROM d";

void
outbox_msg_clear(struct outbox_msg *m)
{
    free(m->queue);
    free(m->url);
    free(m->body);
    free(m->group_id);
    free(m->attrs);
    memset(m, 0, sizeof(*m));
}

int
outbox_stage(struct outbox_staged *st, struct outbox_msg *m)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 4;
        struct outbox_msg *grown = realloc(st->msgs, cap * sizeof(*grown));
        if (grown == NULL) {
            return -1;
        }
        st->msgs = grown;
        st->cap = cap;
    }
    st->msgs[st->n++] = *m;
    memset(m, 0, sizeof(*m));
    return 0;
}

void
outbox_staged_clear(struct outbox_staged *st)
{
    for (size_t i = 0; i < st->n; i++) {
        outbox_msg_clear(&st->msgs[i]);
    }
    free(st->msgs);
    memset(st, 0, sizeof(*st));
}

/* "outbox WHAT (table T_outbox): message (hint)" on one line, as every
 * store error is said (idem_pg_fail_on: the SQLSTATE's hint, the password
 * masked); clears res; -1. */
static int
fail(struct idem_store *s, PGresult *res, const char *what, char *err, size_t errlen)
{
    char outbox_what[96];
    snprintf(outbox_what, sizeof(outbox_what), "outbox %s", what);
    return idem_pg_fail_on(s, "_outbox", res, outbox_what, err, errlen);
}

/* The quoted name of table with suffix; owned by the caller (PQfreemem). */
static char *
quoted(struct idem_store *s, const char *table, const char *suffix)
{
    struct buf b = BUF_INIT;
    buf_printf(&b, "%s%s", table, suffix);
    char *q = b.failed ? NULL : PQescapeIdentifier(idem_pgconn(s), buf_str(&b), b.len);
    buf_free(&b);
    return q;
}

/* tmpl with @X, @P and @L (lock, may be NULL) replaced, into out. */
static int
expand(struct idem_store *s, const char *table, const char *tmpl, const char *lock,
       struct buf *out)
{
    char *x = quoted(s, table, "_outbox");
    char *p = quoted(s, table, "_outbox_pending");
    for (const char *c = tmpl; x != NULL && p != NULL && *c; c++) {
        const char *text = NULL;
        if (c[0] == '@') {
            text = c[1] == 'X' ? x : c[1] == 'P' ? p : c[1] == 'L' ? lock : NULL;
        }
        if (text != NULL) {
            buf_puts(out, text);
            c++;
        } else {
            buf_putc(out, *c);
        }
    }
    int rc = x != NULL && p != NULL && !out->failed ? 0 : -1;
    PQfreemem(x);
    PQfreemem(p);
    return rc;
}

/* Run tmpl with text parameters; the result when its status is want. */
static PGresult *
run(struct idem_store *s, const char *table, const char *tmpl, int nparams,
    const char *const *params, ExecStatusType want, const char *what, char *err, size_t errlen)
{
    struct buf sql = BUF_INIT;
    if (expand(s, table, tmpl, NULL, &sql) != 0) {
        buf_free(&sql);
        idem_set_err(err, errlen, "outbox %s: out of memory", what);
        return NULL;
    }
    PGresult *res = idem_exec(s, buf_str(&sql), nparams, params);
    buf_free(&sql);
    if (PQresultStatus(res) != want) {
        fail(s, res, what, err, errlen);
        return NULL;
    }
    return res;
}

int
outbox_migrate(struct idem_store *s, const char *table, char *err, size_t errlen)
{
    char *x = quoted(s, table, "_outbox"), *p = quoted(s, table, "_outbox_pending");
    const char *params[] = {x, p};
    PGresult *res = x != NULL && p != NULL ? idem_exec(s, sql_check, 2, params) : NULL;
    PQfreemem(x);
    PQfreemem(p);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        return fail(s, res, "migrate: inspect", err, errlen);
    }
    int done = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    if (done) {
        return 0;
    }
    char lock[32];
    snprintf(lock, sizeof(lock), "%lld", idem_lock_key("twice:outbox:", table));
    struct buf sql = BUF_INIT;
    if (expand(s, table, sql_migrate, lock, &sql) != 0) {
        buf_free(&sql);
        idem_set_err(err, errlen, "outbox migrate: out of memory");
        return -1;
    }
    res = idem_exec(s, buf_str(&sql), 0, NULL);
    buf_free(&sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        return fail(s, res, "migrate", err, errlen);
    }
    PQclear(res);
    return 0;
}

/* The INSERT of rows [from, to) of the flattened messages, with params. */
struct flat {
    const struct outbox_job *job;
    const struct outbox_msg *msg;
    char idx[24], delay[16];
};

static int
insert_chunk(struct idem_store *s, const char *table, struct flat *f, size_t n, char *err,
             size_t errlen)
{
    enum { COLS = 10 };
    const char **params = calloc(n * COLS, sizeof(*params));
    struct buf sql = BUF_INIT;
    if (params == NULL) {
        idem_set_err(err, errlen, "outbox insert: out of memory");
        return -1;
    }
    buf_puts(&sql, "WITH ins AS (INSERT INTO @X (source_key, idx, source_queue, plugin, queue,"
                   " queue_url, body, delay_seconds, group_id, attributes) VALUES ");
    for (size_t i = 0; i < n; i++) {
        size_t b = i * COLS;
        buf_printf(&sql,
                   "%s($%zu, $%zu::int, $%zu, $%zu, $%zu, $%zu, $%zu, $%zu::int, $%zu, $%zu)",
                   i > 0 ? "," : "", b + 1, b + 2, b + 3, b + 4, b + 5, b + 6, b + 7, b + 8, b + 9,
                   b + 10);
        const char *row[COLS] = {f[i].job->key,    f[i].idx,        f[i].job->source_queue,
                                 f[i].job->plugin, f[i].msg->queue, f[i].msg->url,
                                 f[i].msg->body,   f[i].delay,      f[i].msg->group_id,
                                 f[i].msg->attrs};
        memcpy(&params[b], row, sizeof(row));
    }
    buf_puts(&sql, " RETURNING 1) SELECT count(*), pg_notify('" OUTBOX_CHANNEL "', '') FROM ins");
    PGresult *res = sql.failed ? NULL
                               : run(s, table, buf_str(&sql), (int) (n * COLS), params,
                                     PGRES_TUPLES_OK, "insert", err, errlen);
    if (sql.failed) {
        idem_set_err(err, errlen, "outbox insert: out of memory");
    }
    buf_free(&sql);
    free(params);
    if (res == NULL) {
        return -1;
    }
    PQclear(res);
    return 0;
}

int
outbox_insert(struct idem_store *s, const char *table, const struct outbox_job *jobs, size_t n,
              char *err, size_t errlen)
{
    struct flat f[INSERT_CHUNK];
    size_t k = 0;
    if (PQtransactionStatus(idem_pgconn(s)) == PQTRANS_INERROR) {
        return 0; /* a failed transaction commits nothing: its caller's COMMIT says why */
    }
    for (size_t j = 0; j < n; j++) {
        const struct outbox_staged *st = jobs[j].staged;
        for (size_t i = 0; st != NULL && i < st->n; i++) {
            f[k].job = &jobs[j];
            f[k].msg = &st->msgs[i];
            snprintf(f[k].idx, sizeof(f[k].idx), "%zu", i);
            snprintf(f[k].delay, sizeof(f[k].delay), "%d", st->msgs[i].delay);
            if (++k == INSERT_CHUNK) {
                if (insert_chunk(s, table, f, k, err, errlen) != 0) {
                    return -1;
                }
                k = 0;
            }
        }
    }
    return k > 0 ? insert_chunk(s, table, f, k, err, errlen) : 0;
}

/* One statement of a transaction without a result worth keeping. */
static int
exec_simple(struct idem_store *s, const char *sql, char *err, size_t errlen)
{
    PGresult *res = idem_exec(s, sql, 0, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        return fail(s, res, sql, err, errlen);
    }
    PQclear(res);
    return 0;
}

int
outbox_complete_batch(struct idem_store *s, const char *table, const char *const *keys,
                      const int *attempts, const struct outbox_job *jobs, size_t n, int *done,
                      char *err, size_t errlen)
{
    struct outbox_job *mine = calloc(n ? n : 1, sizeof(*mine));
    if (mine == NULL) {
        idem_set_err(err, errlen, "outbox complete: out of memory");
        return -1;
    }
    int rc = exec_simple(s, "BEGIN", err, errlen);
    if (rc == 0) {
        rc = idem_complete_batch(s, keys, attempts, n, done, err, errlen);
    }
    size_t k = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (done[i]) {
            mine[k++] = jobs[i];
        }
    }
    if (rc == 0) {
        rc = outbox_insert(s, table, mine, k, err, errlen);
    }
    free(mine);
    if (rc == 0) {
        PGresult *res = idem_exec(s, "COMMIT", 0, NULL);
        int ok =
            PQresultStatus(res) == PGRES_COMMAND_OK && strcmp(PQcmdStatus(res), "COMMIT") == 0;
        if (!ok) {
            fail(s, res, "complete: COMMIT", err, errlen);
            memset(done, 0, n * sizeof(*done));
            return -2; /* it may have committed, its answer lost */
        }
        PQclear(res);
        return 0;
    }
    if (PQtransactionStatus(idem_pgconn(s)) != PQTRANS_IDLE) {
        PQclear(idem_exec(s, "ROLLBACK", 0, NULL));
    }
    memset(done, 0, n * sizeof(*done));
    return -1;
}

void
outbox_rows_free(struct outbox_row *rows, size_t n)
{
    for (size_t i = 0; rows != NULL && i < n; i++) {
        struct outbox_row *r = &rows[i];
        free(r->key);
        free(r->source_queue);
        free(r->plugin);
        free(r->queue);
        free(r->url);
        free(r->body);
        free(r->group_id);
        free(r->attrs);
        free(r->error);
    }
    free(rows);
}

/* A column's value copied, NULL for SQL NULL; sets *oom on ENOMEM. */
static char *
col(const PGresult *res, int row, int c, int *oom)
{
    if (PQgetisnull(res, row, c)) {
        return NULL;
    }
    char *v = strdup(PQgetvalue(res, row, c));
    *oom |= v == NULL;
    return v;
}

/* The rows of a claim or list (their columns in the same order). */
static int
read_rows(PGresult *res, struct outbox_row **rows, size_t *n, char *err, size_t errlen)
{
    int nr = PQntuples(res), oom = 0;
    *rows = calloc(nr > 0 ? (size_t) nr : 1, sizeof(**rows));
    *n = 0;
    for (int i = 0; *rows != NULL && i < nr; i++, (*n)++) {
        struct outbox_row *r = &(*rows)[i];
        r->id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
        r->key = col(res, i, 1, &oom);
        r->idx = atoi(PQgetvalue(res, i, 2));
        r->source_queue = col(res, i, 3, &oom);
        r->plugin = col(res, i, 4, &oom);
        r->queue = col(res, i, 5, &oom);
        r->url = col(res, i, 6, &oom);
        r->body = col(res, i, 7, &oom);
        r->body_len = r->body != NULL ? strlen(r->body) : 0;
        r->delay = atoi(PQgetvalue(res, i, 8));
        r->group_id = col(res, i, 9, &oom);
        r->attrs = col(res, i, 10, &oom);
        snprintf(r->state, sizeof(r->state), "%s", PQgetvalue(res, i, 11));
        r->error = col(res, i, 12, &oom);
        r->tries = atoi(PQgetvalue(res, i, 13));
        r->created_at = (time_t) strtoll(PQgetvalue(res, i, 14), NULL, 10);
    }
    PQclear(res);
    if (*rows == NULL || oom) {
        outbox_rows_free(*rows, *n);
        *rows = NULL;
        *n = 0;
        idem_set_err(err, errlen, "outbox: out of memory reading rows");
        return -1;
    }
    return 0;
}

int
outbox_listen(struct idem_store *s, char *err, size_t errlen)
{
    PGresult *res = idem_exec(s, "LISTEN " OUTBOX_CHANNEL, 0, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        return fail(s, res, "LISTEN", err, errlen);
    }
    PQclear(res);
    return 0;
}

int
outbox_claim(struct idem_store *s, const char *table, int limit, int lease, const char *owner,
             struct outbox_row **rows, size_t *n, char *err, size_t errlen)
{
    char l[16], t[16];
    snprintf(l, sizeof(l), "%d", limit);
    snprintf(t, sizeof(t), "%d", lease);
    const char *params[] = {l, t, owner};
    *rows = NULL;
    *n = 0;
    PGresult *res = run(s, table, sql_claim, 3, params, PGRES_TUPLES_OK, "claim", err, errlen);
    return res != NULL ? read_rows(res, rows, n, err, errlen) : -1;
}

int
outbox_release_owner(struct idem_store *s, const char *table, const char *owner, long *released,
                     char *err, size_t errlen)
{
    const char *params[] = {owner};
    *released = 0;
    PGresult *res =
        run(s, table, sql_release, 1, params, PGRES_TUPLES_OK, "release claims", err, errlen);
    if (res == NULL) {
        return -1;
    }
    *released = strtol(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return 0;
}

/* ids as a bigint[] literal into b. */
static void
ids_array(struct buf *b, const long long *ids, size_t n)
{
    buf_putc(b, '{');
    for (size_t i = 0; i < n; i++) {
        buf_printf(b, "%s%lld", i > 0 ? "," : "", ids[i]);
    }
    buf_putc(b, '}');
}

/* {"id": "why", ...} into b. 0, or -1 (out of memory, a text not UTF-8). */
static int
why_object(struct buf *b, const long long *ids, const char *const *why, size_t n)
{
    struct jsonwrite w;
    if (jsonwrite_begin(&w, b) != 0) {
        return -1;
    }
    jsonwrite_open(&w);
    for (size_t i = 0; i < n; i++) {
        char id[24];
        snprintf(id, sizeof(id), "%lld", ids[i]);
        jsonwrite_member_string(&w, id, why[i] != NULL ? why[i] : "");
    }
    jsonwrite_close(&w);
    return jsonwrite_end(&w);
}

int
outbox_finish(struct idem_store *s, const char *table, const struct outbox_outcome *o, char *err,
              size_t errlen)
{
    struct buf sent = BUF_INIT, refused = BUF_INIT, later = BUF_INIT;
    char secs[16];
    ids_array(&sent, o->sent, o->nsent);
    int bad = why_object(&refused, o->refused, o->refused_why, o->nrefused) != 0;
    bad |= why_object(&later, o->later, o->later_why, o->nlater) != 0;
    snprintf(secs, sizeof(secs), "%d", o->later_seconds);
    int rc = -1;
    if (sent.failed || bad) {
        idem_set_err(err, errlen, "outbox finish: out of memory");
    } else {
        const char *params[] = {buf_str(&sent), buf_str(&refused), buf_str(&later), secs};
        PGresult *res =
            run(s, table, sql_finish, 4, params, PGRES_TUPLES_OK, "finish", err, errlen);
        rc = res != NULL ? 0 : -1;
        PQclear(res);
    }
    buf_free(&sent);
    buf_free(&refused);
    buf_free(&later);
    return rc;
}

int
outbox_stats(struct idem_store *s, const char *table, long *pending, long *refused, double *oldest,
             char *err, size_t errlen)
{
    PGresult *res = run(s, table, sql_stats, 0, NULL, PGRES_TUPLES_OK, "stats", err, errlen);
    if (res == NULL) {
        return -1;
    }
    *pending = strtol(PQgetvalue(res, 0, 0), NULL, 10);
    *refused = strtol(PQgetvalue(res, 0, 1), NULL, 10);
    *oldest = cnum_strtod(PQgetvalue(res, 0, 2), NULL);
    PQclear(res);
    return 0;
}

int
outbox_list(struct idem_store *s, const char *table, const char *state, int limit,
            struct outbox_row **rows, size_t *n, char *err, size_t errlen)
{
    char l[24];
    snprintf(l, sizeof(l), "%lld", limit > 0 ? (long long) limit : 9223372036854775807LL);
    const char *params[] = {state, l};
    *rows = NULL;
    *n = 0;
    PGresult *res = run(s, table, sql_list, 2, params, PGRES_TUPLES_OK, "list", err, errlen);
    return res != NULL ? read_rows(res, rows, n, err, errlen) : -1;
}

/* Run sql, which takes an optional bigint[] of ids and answers a count and
 * the ids that were not refused rows, on refused rows (ids[0..n), or all
 * when n is 0). missing (room for n) gets those ids, *nmissing their count. */
static int
refused_apply(struct idem_store *s, const char *table, const char *sql, const char *what,
              const long long *ids, size_t n, long *changed, long long *missing, size_t *nmissing,
              char *err, size_t errlen)
{
    struct buf arr = BUF_INIT;
    *nmissing = 0;
    if (n > 0) {
        ids_array(&arr, ids, n);
    }
    if (arr.failed) {
        idem_set_err(err, errlen, "outbox %s: out of memory", what);
        return -1;
    }
    const char *params[] = {n > 0 ? buf_str(&arr) : NULL};
    PGresult *res = run(s, table, sql, 1, params, PGRES_TUPLES_OK, what, err, errlen);
    buf_free(&arr);
    if (res == NULL) {
        return -1;
    }
    *changed = strtol(PQgetvalue(res, 0, 0), NULL, 10);
    const char *p = PQgetvalue(res, 0, 1);
    while (*p != '\0' && *nmissing < n) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p) {
            break; /* not a number: cannot be; stop rather than loop */
        }
        missing[(*nmissing)++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    PQclear(res);
    return 0;
}

int
outbox_retry(struct idem_store *s, const char *table, const long long *ids, size_t n,
             long *changed, long long *missing, size_t *nmissing, char *err, size_t errlen)
{
    return refused_apply(s, table, sql_retry, "retry", ids, n, changed, missing, nmissing, err,
                         errlen);
}

int
outbox_delete(struct idem_store *s, const char *table, const long long *ids, size_t n,
              long *changed, long long *missing, size_t *nmissing, char *err, size_t errlen)
{
    return refused_apply(s, table, sql_delete, "delete", ids, n, changed, missing, nmissing, err,
                         errlen);
}
