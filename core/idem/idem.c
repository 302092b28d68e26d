/*
 * idem.c - the idempotency store of idem.h on libpq: connection,
 * claim/complete/release/extend by batch, transactional completion, and the
 * helpers the other idem files share (idem_internal.h). The table's DDL is
 * idem_schema.c's, the janitor's and the master's statements idem_janitor.c's,
 * twicectl's key queries idem_keys.c's. Not the policy of what to do with a
 * BUSY or COMPLETED key: that is the job lifecycle's.
 */
#include "idem.h"

#include "fdguard.h"

#include <libpq-fe.h>

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ascii.h"
#include "buf.h"
#include "cnum.h"
#include "config.h"
#include "idem_internal.h"

/*
 * The hot-path statements, prepared on demand under names derived from their
 * text (idem_stmt.c: safe behind a pooler). "@T" stands for the quoted table
 * name.
 * The states and their transitions are written at the top of idem.h.
 *
 * The claim, in one statement under READ COMMITTED (every part of it sees the
 * same snapshot, taken when the statement starts):
 * - ins inserts the keys nobody has (no run counted yet), in key order so
 *   that two claimers of overlapping batches wait for each other's
 *   uncommitted inserts in the same order and cannot deadlock. ON CONFLICT
 *   checks the latest committed state, not the snapshot: a key inserted by
 *   another worker after our snapshot is not inserted again (we wait if its
 *   insert is still uncommitted). A row lock (FOR KEY SHARE from
 *   idem_tx_begin) does not make it wait.
 * - old holds the keys ins did not insert (they had a row already, or
 *   another worker inserted one just now): the parts below look only at
 *   these, by primary key. In the common batch of new keys they do nothing,
 *   and no part ever scans the in-progress rows of the table (the claim of
 *   issue 9 did, through the owner index, once the planner's statistics said
 *   there were few: its cost grew with the keys in flight over all hosts).
 * - free locks the rows of old that nobody holds: released, crashed and
 *   interrupted ones, and in_progress ones whose lease has expired, SKIP
 *   LOCKED: a row locked by a transactional handler, or being claimed by
 *   another worker right now, is skipped instead of waited for. A row
 *   changed after our snapshot is rechecked on its newest version, so a row
 *   that another worker has just claimed (lease renewed) or completed is not
 *   taken.
 * - upd claims exactly the rows free locked, keeping their count of runs,
 *   and answers the state each had.
 * - The claim is idempotent, so that one whose answer was lost with its
 *   connection can be sent again as it was (idem_claim_batch): each claim
 *   statement carries a token ($6, a number of microseconds from 1 to
 *   999999, which the worker's claims draw in turn: idem_lost_token) that
 *   it takes off the processed_at it writes (the lease stays exact; an
 *   in-progress row's processed_at is only shown), so a row it claimed has
 *   lease_until - processed_at (both from the same now()) = its lease + the
 *   token. free also takes a row in progress under this owner, for this
 *   message, with exactly that difference: this very statement claimed it
 *   (and committed) before, so it is claimed again and answered as claimed.
 *   Another claim of this worker (another receiver, another token) or an
 *   extension changes the difference: a key that another job of this worker
 *   holds stays BUSY. What the row was before the first run (released,
 *   crashed...) is lost with its answer: it reads as claimed, its count of
 *   runs kept. A claim whose answer was lost again (or that could not be
 *   sent again) gives its messages back; its token goes into the worker's
 *   idem_lost, which later claims pass as $7 and take as their own: a key
 *   it took is taken back at once when its message comes again, not after
 *   its lease. No claim draws a token that is in idem_lost, nor one that
 *   another claim of the worker holds.
 * - seen reads the rows of old from the snapshot: a key neither inserted
 *   nor claimed is COMPLETED if the snapshot says so (completed is final
 *   until the janitor deletes it), else BUSY, including a row that is newer
 *   than the snapshot (lease unknown: we report our own lease).
 * The answers: C claimed (new or released), T taken over (a lease expired
 * unrecorded), X crashed, S interrupted, D completed, B busy.
 */
#define FREE_ROW                                                                                  \
    "(t.state IN ('released', 'crashed', 'interrupted')"                                          \
    " OR (t.state = 'in_progress' AND t.lease_until < now()) OR " OWN_ROW ")"

/* A row this statement (its owner $5, its token $6) claimed before, for the
 * same message o.m: the claim sent again after its answer was lost; or one
 * that a claim of this worker whose answer was lost for good claimed (a
 * token of $7, idem_lost): no job of the worker runs it, its message was
 * given back and is here again. */
#define OWN_ROW                                                                                   \
    "(t.state = 'in_progress' AND t.owner = $5 AND t.message_id = o.m"                            \
    " AND t.lease_until - t.processed_at = ANY (" LEASES_EXPR "))"

/* What lease_until - processed_at is in a row a claim with token x wrote for
 * input o, for this statement's token $6 and the lost ones $7. */
#define LEASES_EXPR                                                                               \
    "ARRAY(SELECT o.l * interval '1 second' + x * interval '1 microsecond'"                       \
    " FROM unnest($6::int || $7::int[]) x)"
/* The processed_at a claim writes: now() less its token. */
#define CLAIMED_AT "now() - $6::int * interval '1 microsecond'"

static const char sql_claim[] =
    "WITH input AS ("
    " SELECT u.k, decode(u.h, 'hex') AS sha, u.m, u.l, u.ord"
    " FROM unnest($1::text[], $2::text[], $3::text[], $4::int[])"
    " WITH ORDINALITY AS u (k, h, m, l, ord)"
    "), ins AS ("
    " INSERT INTO @T AS t (idempotency_key, state, owner, lease_until, payload_sha256,"
    " message_id, attempts, processed_at, created_at)"
    " SELECT o.k, 'in_progress', $5, now() + o.l * interval '1 second', o.sha, o.m, 0,"
    " " CLAIMED_AT ", now() FROM input o ORDER BY o.k"
    " ON CONFLICT (idempotency_key) DO NOTHING RETURNING t.idempotency_key"
    "), old AS MATERIALIZED ("
    " SELECT i.* FROM input i WHERE NOT EXISTS"
    " (SELECT 1 FROM ins WHERE ins.idempotency_key = i.k)"
    "), free AS MATERIALIZED ("
    " SELECT t.idempotency_key, CASE WHEN " OWN_ROW " THEN 'again' ELSE t.state END AS was"
    " FROM old o JOIN @T t ON t.idempotency_key = o.k"
    " WHERE " FREE_ROW " ORDER BY t.idempotency_key FOR UPDATE OF t SKIP LOCKED"
    "), upd AS ("
    " UPDATE @T t SET state = 'in_progress', owner = $5,"
    " lease_until = now() + o.l * interval '1 second', payload_sha256 = o.sha,"
    " message_id = o.m, processed_at = " CLAIMED_AT
    " FROM free f JOIN old o ON o.k = f.idempotency_key"
    " WHERE t.idempotency_key = f.idempotency_key AND " FREE_ROW
    " RETURNING t.idempotency_key, t.attempts, f.was"
    "), seen AS ("
    " SELECT o.k, t.state, t.attempts, t.lease_until, t.payload_sha256, t.message_id"
    " FROM old o JOIN @T t ON t.idempotency_key = o.k"
    ") SELECT CASE WHEN o.k IS NULL THEN 'C'"
    " WHEN upd.was IN ('released', 'again') THEN 'C' WHEN upd.was = 'crashed' THEN 'X'"
    " WHEN upd.was = 'interrupted' THEN 'S' WHEN upd.was IS NOT NULL THEN 'T'"
    " WHEN t.state = 'completed' THEN 'D' ELSE 'B' END,"
    " coalesce(upd.attempts, t.attempts, 0),"
    " CASE WHEN t.lease_until > now()"
    " THEN extract(epoch FROM t.lease_until - now())::float8 ELSE i.l END,"
    " encode(t.payload_sha256, 'hex'), t.message_id"
    " FROM input i LEFT JOIN old o ON o.k = i.k LEFT JOIN upd ON upd.idempotency_key = i.k"
    " LEFT JOIN seen t ON t.k = i.k ORDER BY i.ord";

/*
 * complete/extend/release touch only rows this owner holds, and one process
 * runs them from one thread (its acknowledger), so they never race each
 * other; a claim taking over an expired lease skips locked rows. So plain
 * one-statement updates by primary key, no lock ordering. An update (NO KEY
 * UPDATE) does not conflict with idem_tx_begin's FOR KEY SHARE, so a
 * heartbeat never waits for a transactional handler; release locks its rows
 * FOR UPDATE SKIP LOCKED, so it skips a key a running handler still locks
 * (it is not released under the handler: its lease lapses, or the master
 * ends it when the handler's process has gone). complete and extend answer
 * the 1-based positions of the keys they changed. An attempts element < 0
 * keeps the row's count. A completion leaves lease_until as the claim or the
 * last extension set it, so that in the lease layout (see idem_schema.c) it
 * changes no indexed column and is a HOT update; release and the master's
 * expiry set it to now(), when the lease ended, for the janitor.
 */
static const char sql_complete[] =
    "UPDATE @T t SET state = 'completed', processed_at = now(), owner = NULL,"
    " attempts = CASE WHEN i.a < 0 THEN t.attempts ELSE i.a END"
    " FROM unnest($1::text[], $3::int[]) WITH ORDINALITY AS i (k, a, ord)"
    " WHERE t.idempotency_key = i.k AND t.owner = $2 AND t.state = 'in_progress'"
    " RETURNING i.ord";

static const char sql_extend[] =
    "UPDATE @T t SET lease_until = now() + $3::int * interval '1 second'"
    " FROM unnest($1::text[]) WITH ORDINALITY AS i (k, ord)"
    " WHERE t.idempotency_key = i.k AND t.owner = $2 AND t.state = 'in_progress'"
    " RETURNING i.ord";

/* k: our rows with the count each is to keep; a row without a run counted
 * is deleted, the others are released. */
static const char sql_release[] =
    "WITH k AS (SELECT t.idempotency_key, i.ord,"
    " CASE WHEN i.a < 0 THEN t.attempts ELSE i.a END AS n"
    " FROM @T t JOIN unnest($1::text[], $3::int[]) WITH ORDINALITY AS i (k, a, ord)"
    " ON t.idempotency_key = i.k WHERE t.owner = $2 AND t.state = 'in_progress'"
    " ORDER BY t.idempotency_key FOR UPDATE OF t SKIP LOCKED"
    "), gone AS ("
    " DELETE FROM @T t USING k WHERE t.idempotency_key = k.idempotency_key AND k.n <= 0"
    " RETURNING k.ord"
    "), kept AS ("
    " UPDATE @T t SET state = 'released', owner = NULL, lease_until = now(), attempts = k.n,"
    " processed_at = now() FROM k WHERE t.idempotency_key = k.idempotency_key AND k.n > 0"
    " RETURNING k.ord"
    ") SELECT ord FROM gone UNION ALL SELECT ord FROM kept";

/* FOR KEY SHARE: enough to keep the claim (FOR UPDATE SKIP LOCKED) and
 * release (FOR UPDATE SKIP LOCKED) off the row, while our heartbeat may still
 * extend it. */
static const char sql_tx_lock[] = "SELECT 1 FROM @T WHERE idempotency_key = $1 AND owner = $2"
                                  " AND state = 'in_progress' FOR KEY SHARE";

/* statement_timestamp(): now() would be when the transaction began. */
static const char sql_tx_complete[] =
    "UPDATE @T SET state = 'completed', processed_at = statement_timestamp(),"
    " owner = NULL, attempts = $3::int"
    " WHERE idempotency_key = $1 AND owner = $2 AND state = 'in_progress'";

/*
 * The rows behind BUSY answers that the claim's snapshot did not show: a
 * concurrent claim inserted the key after the claim statement began (its
 * INSERT waited for that one to commit, then found the conflict). A new
 * statement sees them: state, lease left, hash and message, as the claim
 * answers them.
 */
static const char sql_peek[] =
    "SELECT t.idempotency_key, t.state,"
    " CASE WHEN t.lease_until > now()"
    " THEN extract(epoch FROM t.lease_until - now())::float8 ELSE 0 END,"
    " encode(t.payload_sha256, 'hex'), t.message_id"
    " FROM @T t WHERE t.idempotency_key = ANY ($1::text[])";

/* The statements of idem_stmts_exec, by index; tags name them. */
enum {
    STMT_CLAIM,
    STMT_COMPLETE,
    STMT_EXTEND,
    STMT_RELEASE,
    STMT_TX_LOCK,
    STMT_TX_COMPLETE,
    STMT_PEEK,
    STMT_COUNT
};
static const char *const stmt_tags[STMT_COUNT] = {
    "claim", "complete", "extend", "release", "tx_lock", "tx_complete", "peek",
};
static const char *const stmt_sql[STMT_COUNT] = {
    sql_claim, sql_complete, sql_extend, sql_release, sql_tx_lock, sql_tx_complete, sql_peek,
};

void
idem_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    cnum_vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Whether c may continue a word (ASCII letters, digits, '_'). */
static int
word_char(char c)
{
    return ascii_isalnum((unsigned char) c) || c == '_';
}

/* Overwrite each occurrence of secret in s that stands as a whole value, as
 * a password would be quoted (":pw@", "password=pw ", "\"pw\""), with '*':
 * defence in depth, as libpq's own messages do not quote the password (a
 * malformed dsn's are withheld: check_dsn). Not inside a longer word: a
 * short password ("app") must not turn a message's "apply" into "***ly". */
static void
redact(char *s, const char *secret)
{
    size_t n = secret ? strlen(secret) : 0;
    if (n == 0) {
        return;
    }
    for (char *p = strstr(s, secret); p != NULL; p = strstr(p + 1, secret)) {
        if ((p == s || !word_char(p[-1])) && !word_char(p[n])) {
            memset(p, '*', n);
            p += n - 1;
        }
    }
}

void
idem_flatten(char *s)
{
    char *out = s;
    for (const char *p = s; *p != '\0'; p++) {
        int space = *p == '\n' || *p == '\r' || *p == '\t' || *p == ' ';
        if (!space) {
            *out++ = *p;
        } else if (out > s && out[-1] != ' ') {
            *out++ = ' ';
        }
    }
    while (out > s && out[-1] == ' ') {
        out--;
    }
    *out = '\0';
}

/* A hint for the errors an operator can fix, by SQLSTATE. */
static const char *
sqlstate_hint(const char *state)
{
    if (state == NULL) {
        return "";
    }
    if (strcmp(state, "42P01") == 0) {
        return " (twiced creates it when it starts; or apply etc/schema.sql)";
    }
    if (strcmp(state, "42501") == 0) {
        return " (grant the role SELECT, INSERT, UPDATE, DELETE on the tables; to create or "
               "migrate them twiced needs CREATE on their schema, else apply etc/schema.sql as "
               "their owner)";
    }
    if (strcmp(state, "25006") == 0) {
        return " (the server takes no writes: a standby, or default_transaction_read_only is "
               "on; point the dsn at the primary)";
    }
    if (strcmp(state, "55P03") == 0) {
        return " (another session holds a lock on the table or its rows, and lock_timeout gave "
               "up waiting: look for a long transaction or a schema change in pg_locks, and at "
               "the lock_timeout set for twiced's role or database)";
    }
    if (strcmp(state, "57014") == 0) {
        return " (cut short by a statement_timeout, or cancelled by an administrator: check "
               "the statement_timeout set for twiced's role or database (ALTER ROLE ... RESET "
               "statement_timeout); its statements take milliseconds on a server that works)";
    }
    if (strncmp(state, "53", 2) == 0) {
        return " (the server lacks a resource: disk space, memory or connections; free it on "
               "the server)";
    }
    return "";
}

void
idem_note_failure(struct idem_store *s, const PGresult *res)
{
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    snprintf(s->failed_state, sizeof(s->failed_state), "%s", state != NULL ? state : "-");
    if (idem_state_stale(s->failed_state) && PQstatus(s->conn) == CONNECTION_OK) {
        s->stale = 1;
    }
}

int
idem_pg_fail(struct idem_store *s, PGresult *res, const char *what, char *err, size_t errlen)
{
    return idem_pg_fail_on(s, "", res, what, err, errlen);
}

int
idem_pg_fail_on(struct idem_store *s, const char *suffix, PGresult *res, const char *what,
                char *err, size_t errlen)
{
    const char *msg = idem_failure_text(s, res);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    idem_note_failure(s, res);
    if (err != NULL && errlen > 0) {
        idem_set_err(err, errlen, "%s (table %s%s): %s%s", what, s->name, suffix, msg,
                     sqlstate_hint(state));
        idem_flatten(err);
        redact(err, PQpass(s->conn));
    }
    PQclear(res);
    return -1;
}

int
idem_ask(struct idem_store *s, const char *sql, int nparams, const char *const *params,
         const char *what, char *err, size_t errlen)
{
    PGresult *res = idem_exec(s, sql, nparams, params);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        return idem_pg_fail(s, res, what, err, errlen);
    }
    int yes = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    return yes;
}

/* The text for marker @c: the quoted table and index names, else extra's
 * (NULL, or pairs of a marker letter and its text ending in a NUL letter);
 * NULL when c is no marker. */
static const char *
marker(const struct idem_store *s, char c, const char *const *extra)
{
    switch (c) {
    case 'T':
        return s->table;
    case 'I':
        return s->index;
    case 'O':
        return s->owner_index;
    case 'F':
        return s->free_index;
    case 'E':
        return s->lease_index;
    case 'P':
        return s->pause_table;
    }
    for (size_t i = 0; extra != NULL && extra[i] != NULL; i += 2) {
        if (extra[i][0] == c) {
            return extra[i + 1];
        }
    }
    return NULL;
}

int
idem_sql_expand(struct buf *out, const char *tmpl, const struct idem_store *s,
                const char *const *extra)
{
    for (const char *p = tmpl; *p; p++) {
        const char *text = p[0] == '@' ? marker(s, p[1], extra) : NULL;
        if (text != NULL) {
            buf_puts(out, text);
            p++;
        } else {
            buf_putc(out, *p);
        }
    }
    return out->failed ? -1 : 0;
}

void
idem_array_elem(struct buf *b, const char *v)
{
    buf_putc(b, b->len == 0 ? '{' : ',');
    if (v == NULL) {
        buf_puts(b, "NULL");
        return;
    }
    buf_putc(b, '"');
    /* By runs between the characters an array literal escapes: keys, hashes
     * and message ids rarely hold one, so this is one copy per value. */
    for (const char *p = v;;) {
        size_t run = strcspn(p, "\"\\");
        buf_append(b, p, run);
        p += run;
        if (*p == '\0') {
            break;
        }
        buf_putc(b, '\\');
        buf_putc(b, *p++);
    }
    buf_putc(b, '"');
}

const char *
idem_array_end(struct buf *b)
{
    if (b->len == 0) {
        buf_putc(b, '{');
    }
    buf_putc(b, '}');
    return b->failed ? NULL : buf_str(b);
}

/* The library never prints: notices ("relation already exists, skipping")
 * would otherwise go to stderr. */
void
idem_quiet_notices(void *arg, const char *message)
{
    (void) arg;
    (void) message;
}

/* The name table + suffix, quoted with PQescapeIdentifier into a malloc'd
 * copy (the caller frees it); NULL when out of memory. */
static char *
quote_ident(PGconn *conn, const char *table, const char *suffix)
{
    struct buf name = BUF_INIT;
    buf_printf(&name, "%s%s", table, suffix);
    char *q = name.failed ? NULL : PQescapeIdentifier(conn, buf_str(&name), name.len);
    buf_free(&name);
    if (q == NULL) {
        return NULL;
    }
    char *copy = strdup(q);
    PQfreemem(q);
    return copy;
}

/*
 * A malformed connection string makes libpq quote a piece of it in its
 * message, which may be the password: check the syntax first and say only
 * that it is wrong. A bare database name ("twice") is not parsed.
 */
static int
check_dsn(const char *dsn, char *err, size_t errlen)
{
    if (strncmp(dsn, "postgresql://", 13) != 0 && strncmp(dsn, "postgres://", 11) != 0 &&
        strchr(dsn, '=') == NULL) {
        return 0;
    }
    char *msg = NULL;
    PQconninfoOption *opts = PQconninfoParse(dsn, &msg);
    if (opts == NULL) {
        idem_set_err(err, errlen,
                     "the idempotency dsn is not a valid libpq connection string or URI "
                     "(details withheld: they could quote the password)");
        PQfreemem(msg);
        return -1;
    }
    PQconninfoFree(opts);
    return 0;
}

/* Our connection defaults come before the DSN, so that the DSN can override
 * any of them (libpq: later entries win, an expanded dbname included). The
 * keepalives end an idle connection to a peer gone silent after 25 s (10 +
 * 3 x 5); tcp_user_timeout (ms) does the same for a connection whose sent
 * bytes go unacknowledged that long (a host gone while a statement was on
 * its way), where keepalives do not fire and TCP would retransmit for about
 * 15 minutes. A server that is up but does not answer (frozen) keeps both
 * alive: the acker gives its statements up itself (idem_set_wait). The dsn
 * setting's documentation (config_table.c) lists these. */
PGconn *
idem_connect_dsn(const char *dsn, int start_only)
{
    static const char *const keys[] = {
        "connect_timeout",     "keepalives",       "keepalives_idle",
        "keepalives_interval", "keepalives_count", "tcp_user_timeout",
        "application_name",    "dbname",           NULL,
    };
    const char *vals[] = {"10", "1", "10", "5", "3", "25000", "twice", dsn, NULL};
    return start_only ? PQconnectStartParams(keys, vals, 1) : PQconnectdbParams(keys, vals, 1);
}

int
idem_connect_error(struct idem_store *s, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0) {
        idem_set_err(err, errlen, "cannot connect to PostgreSQL: %s", PQerrorMessage(s->conn));
        idem_flatten(err);
        redact(err, PQpass(s->conn));
    }
    return -1;
}

/* The hot-path statements of s, their text expanded for its table. */
static struct idem_stmts *
new_stmts(const struct idem_store *s)
{
    char *sql[STMT_COUNT] = {NULL};
    for (size_t i = 0; i < STMT_COUNT; i++) {
        struct buf b = BUF_INIT;
        if (idem_sql_expand(&b, stmt_sql[i], s, NULL) != 0 ||
            (sql[i] = strdup(buf_str(&b))) == NULL) {
            buf_free(&b);
            for (size_t k = 0; k < i; k++) {
                free(sql[k]);
            }
            return NULL;
        }
        buf_free(&b);
    }
    return idem_stmts_new(stmt_tags, sql, STMT_COUNT);
}

/* idem_open's store; its connect only begun (PQconnectStartParams, which
 * waits for nothing but a host name's lookup) when start_only, to be carried
 * on polled (idem_connect_begun). */
static int
open_store(const char *dsn, const char *table, const char *owner, int start_only,
           struct idem_store **out, char *err, size_t errlen)
{
    *out = NULL;
    if (table == NULL || *table == '\0') {
        table = CONFIG_DEFAULT_TABLE;
    }
    if (dsn == NULL || owner == NULL || *owner == '\0') {
        idem_set_err(err, errlen, "idempotency store: a dsn and an owner are required");
        return -1;
    }
    if (strlen(table) > CONFIG_MAX_TABLE_LEN) {
        idem_set_err(err, errlen, "idempotency table name \"%s\" is longer than %d bytes", table,
                     CONFIG_MAX_TABLE_LEN);
        return -1;
    }
    if (check_dsn(dsn, err, errlen) != 0) {
        return -1;
    }
    struct idem_store *s = calloc(1, sizeof(*s));
    int rc = 0;
    if (s != NULL) {
        s->sock = FDGUARD_ID_NONE; /* noted once connected (idem_socket_note) */
    }
    if (s == NULL || (s->name = strdup(table)) == NULL || (s->owner = strdup(owner)) == NULL ||
        (s->dsn = strdup(dsn)) == NULL || (s->conn = idem_connect_dsn(dsn, start_only)) == NULL) {
        goto oom;
    }
    PQsetNoticeProcessor(s->conn, idem_quiet_notices, NULL);
    /* Describe a failed connect now: PQescapeIdentifier clears the message. */
    if (PQstatus(s->conn) == CONNECTION_BAD ||
        (!start_only && PQstatus(s->conn) != CONNECTION_OK)) {
        rc = idem_connect_error(s, err, errlen);
    } else if (!start_only) {
        idem_socket_note(s);
    }
    if ((s->table = quote_ident(s->conn, table, "")) == NULL ||
        (s->index = quote_ident(s->conn, table, "_janitor_idx")) == NULL ||
        (s->owner_index = quote_ident(s->conn, table, "_owner_idx")) == NULL ||
        (s->free_index = quote_ident(s->conn, table, "_free_idx")) == NULL ||
        (s->lease_index = quote_ident(s->conn, table, "_lease_idx")) == NULL ||
        (s->pause_table = quote_ident(s->conn, table, "_pause")) == NULL ||
        (s->stmts = new_stmts(s)) == NULL) {
        goto oom;
    }
    *out = s;
    return rc;
oom:
    idem_close(s);
    idem_set_err(err, errlen,
                 "idempotency store: out of memory (or a table name that is "
                 "not valid in the client encoding)");
    return -1;
}

int
idem_open(const char *dsn, const char *table, const char *owner, struct idem_store **out,
          char *err, size_t errlen)
{
    return open_store(dsn, table, owner, 0, out, err, errlen);
}

int
idem_open_polled(const char *dsn, const char *table, const char *owner, const struct idem_wait *w,
                 struct idem_store **out, char *err, size_t errlen)
{
    int rc = open_store(dsn, table, owner, 1, out, err, errlen);
    if (*out == NULL) {
        return rc;
    }
    if (w != NULL) {
        idem_set_wait(*out, w->answer_ms, w->tick_ms, w->tick, w->arg);
    }
    if (rc == 0) {
        idem_connect_begun(*out); /* else the next idem_reconnect_poll begins again */
    }
    return rc;
}

int
idem_open_waiting(const char *dsn, const char *table, const char *owner, const struct idem_wait *w,
                  struct idem_store **out, char *err, size_t errlen)
{
    if (w == NULL || w->tick == NULL) {
        int rc = open_store(dsn, table, owner, 0, out, err, errlen);
        if (*out != NULL && w != NULL) {
            idem_set_wait(*out, w->answer_ms, w->tick_ms, w->tick, w->arg);
        }
        return rc;
    }
    int rc = idem_open_polled(dsn, table, owner, w, out, err, errlen);
    return rc != 0 ? rc : idem_reconnect_ticking(*out, err, errlen);
}

void
idem_close(struct idem_store *s)
{
    if (s == NULL) {
        return;
    }
    if (s->conn != NULL && idem_socket_ours(s)) {
        PQfinish(s->conn); /* else left: it would close another's descriptor */
    }
    if (s->dsn != NULL) {
        explicit_bzero(s->dsn, strlen(s->dsn)); /* it may hold the password */
    }
    free(s->dsn);
    free(s->name);
    free(s->table);
    free(s->index);
    free(s->owner_index);
    free(s->free_index);
    free(s->lease_index);
    free(s->pause_table);
    free(s->owner);
    idem_stmts_free(s->stmts);
    free(s);
}

/* Between statements (no transaction open), read what the server sent on
 * its own: a server that ended the connection meanwhile (its
 * idle_session_timeout, pg_terminate_backend, a restart) has sent its FATAL
 * and closed, which libpq notices only when a read meets the end; until
 * then the next statement would go out on it and fail (a transactional run
 * given back, a release lost: its keys held until their leases end). A few
 * reads at most: each stops at what is there (libpq's socket does not
 * block); a NOTIFY read so waits in PQnotifies. */
static void
notice_server_gone(PGconn *conn)
{
    if (PQtransactionStatus(conn) != PQTRANS_IDLE) {
        return;
    }
    for (int i = 0; i < 4 && PQstatus(conn) == CONNECTION_OK; i++) {
        struct pollfd p = {.fd = PQsocket(conn), .events = POLLIN};
        if (p.fd < 0 || poll(&p, 1, 0) <= 0 || PQconsumeInput(conn) == 0) {
            return;
        }
    }
}

int
idem_connected(const struct idem_store *s)
{
    if (s == NULL || s->conn == NULL || PQstatus(s->conn) != CONNECTION_OK) {
        return 0;
    }
    if (!idem_socket_ours(s)) {
        (void) fdguard_check(); /* a plugin closed the descriptors? said there */
        return 0;               /* lost, though libpq does not know it */
    }
    notice_server_gone(s->conn);
    return PQstatus(s->conn) == CONNECTION_OK;
}

int
idem_state_passes(const char *state)
{
    return state[0] == '-' || strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0 ||
           strcmp(state, "25006") == 0;
}

int
idem_state_stale(const char *state)
{
    if (state[0] == '\0' || state[0] == '-' || strcmp(state, "25P02") == 0) {
        return 0;
    }
    return strncmp(state, "22", 2) != 0 && strncmp(state, "23", 2) != 0 &&
           strncmp(state, "40", 2) != 0;
}

int
idem_usable(const struct idem_store *s)
{
    return idem_connected(s) && !s->stale;
}

/* A store that cannot take statements now but may soon: no connection, or
 * its last failed statement failed as idem_state_passes says. */
int
idem_unreachable(const struct idem_store *s)
{
    return !idem_connected(s) || idem_state_passes(s->failed_state);
}

int
idem_ping(struct idem_store *s, char *err, size_t errlen)
{
    PGresult *res = idem_exec(s, "SELECT 1", 0, NULL);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return idem_pg_fail(s, res, "health check", err, errlen);
    }
    PQclear(res);
    return 0;
}

PGresult *
idem_ask_about_table(struct idem_store *s, const char *suffix, const char *sql, const char *what,
                     char *err, size_t errlen)
{
    char *name = idem_quote_table(s, suffix);
    if (name == NULL) {
        idem_set_err(err, errlen, "%s: out of memory", what);
        return NULL;
    }
    const char *params[] = {name};
    PGresult *res = idem_exec(s, sql, 1, params);
    free(name);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        idem_pg_fail(s, res, what, err, errlen);
        return NULL;
    }
    return res;
}

int
idem_table_exists(struct idem_store *s, const char *suffix, struct idem_place *place, char *err,
                  size_t errlen)
{
    PGresult *res =
        idem_ask_about_table(s, suffix,
                             "SELECT to_regclass($1) IS NOT NULL, current_database(),"
                             " coalesce(current_schema(), ''), current_setting('search_path')",
                             "look for the table", err, errlen);
    if (res == NULL) {
        return -1;
    }
    int exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    if (place != NULL) {
        snprintf(place->database, sizeof(place->database), "%s", PQgetvalue(res, 0, 1));
        snprintf(place->schema, sizeof(place->schema), "%s", PQgetvalue(res, 0, 2));
        snprintf(place->search_path, sizeof(place->search_path), "%s", PQgetvalue(res, 0, 3));
    }
    PQclear(res);
    return exists;
}

/* PQreset reconnects with the parameters of the first connect; the server
 * forgot our prepared statements (and any open transaction). A store with a
 * tick (idem_set_wait) reconnects as its statements wait: polled, the tick
 * asked meanwhile (idem_reconnect_ticking). */
int
idem_reconnect(struct idem_store *s, char *err, size_t errlen)
{
    if (s->tick != NULL) {
        return idem_reconnect_ticking(s, err, errlen);
    }
    s->connecting = 0; /* PQreset starts over whatever idem_reconnect_poll began */
    s->stale = 0;
    idem_stmts_forget(s->stmts);
    if (!idem_socket_ours(s)) {
        if (idem_conn_replace(s, 0, err, errlen) != 0) {
            return -1;
        }
    } else {
        PQreset(s->conn);
    }
    PQsetNoticeProcessor(s->conn, idem_quiet_notices, NULL);
    if (PQstatus(s->conn) != CONNECTION_OK) {
        return idem_connect_error(s, err, errlen);
    }
    idem_socket_note(s);
    return 0;
}

void *
idem_pgconn(struct idem_store *s)
{
    /* A store that waits (idem_set_wait) leaves its connection nonblocking;
     * its other users (a plugin's libpq calls) expect libpq's default. */
    if (PQisnonblocking(s->conn)) {
        PQsetnonblocking(s->conn, 0);
    }
    return s->conn;
}

/*
 * Run a hot-path statement (idem_stmt.c prepares it where it is missing);
 * the result (owned by the caller) when its status is `want`, else NULL with
 * err.
 */
static PGresult *
run_prepared(struct idem_store *s, int stmt, int nparams, const char *const *params,
             ExecStatusType want, const char *what, char *err, size_t errlen)
{
    PGresult *res = idem_stmts_exec(s, (size_t) stmt, nparams, params);
    if (PQresultStatus(res) != want) {
        idem_pg_fail(s, res, what, err, errlen);
        return NULL;
    }
    return res;
}

const char *
idem_pause_table(const struct idem_store *s)
{
    return s->pause_table;
}

/* Run SQL built from a template (@T, @I, @P) with text parameters (idem_internal.h). */
PGresult *
idem_run_sql(struct idem_store *s, const char *tmpl, int nparams, const char *const *params,
             ExecStatusType want, const char *what, char *err, size_t errlen)
{
    return idem_run_sql_with(s, "", tmpl, NULL, nparams, params, want, what, err, errlen);
}

char *
idem_quote_table(struct idem_store *s, const char *suffix)
{
    return quote_ident(s->conn, s->name, suffix);
}

PGresult *
idem_run_sql_with(struct idem_store *s, const char *suffix, const char *tmpl,
                  const char *const *extra, int nparams, const char *const *params,
                  ExecStatusType want, const char *what, char *err, size_t errlen)
{
    struct buf sql = BUF_INIT;
    if (idem_sql_expand(&sql, tmpl, s, extra) != 0) {
        buf_free(&sql);
        idem_set_err(err, errlen, "%s: out of memory", what);
        return NULL;
    }
    PGresult *res = idem_exec(s, buf_str(&sql), nparams, params);
    buf_free(&sql);
    if (PQresultStatus(res) != want) {
        idem_pg_fail_on(s, suffix, res, what, err, errlen);
        return NULL;
    }
    return res;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/*
 * Reject what the claim statement cannot answer correctly: a NULL key, a
 * lease <= 0, and a key twice in one batch (both copies would read as
 * CLAIMED). Distinctness costs a sort of n pointers.
 */
static int
check_claims(const struct idem_claim *claims, size_t n, char *err, size_t errlen)
{
    const char **keys = malloc(n * sizeof(*keys));
    if (keys == NULL) {
        idem_set_err(err, errlen, "claim: out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        keys[i] = claims[i].key;
        if (claims[i].key == NULL || claims[i].lease_seconds <= 0) {
            idem_set_err(err, errlen, "claim: key %zu has no key or a lease <= 0", i);
            rc = -1;
        }
    }
    if (rc == 0) {
        qsort(keys, n, sizeof(*keys), cmp_str);
        for (size_t i = 1; i < n && rc == 0; i++) {
            if (strcmp(keys[i - 1], keys[i]) == 0) {
                idem_set_err(err, errlen, "claim: key \"%s\" appears twice in one batch", keys[i]);
                rc = -1;
            }
        }
    }
    free(keys);
    return rc;
}

/* The four input arrays of the claim statement ($1..$4). */
static int
claim_arrays(const struct idem_claim *claims, size_t n, struct buf arr[4])
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        char sha[65], lease[BUF_INT_MAX];
        if (claims[i].sha256 != NULL) {
            for (int j = 0; j < 32; j++) {
                sha[2 * j] = hex[claims[i].sha256[j] >> 4];
                sha[2 * j + 1] = hex[claims[i].sha256[j] & 15];
            }
            sha[64] = '\0';
        }
        buf_int_text(lease, claims[i].lease_seconds);
        idem_array_elem(&arr[0], claims[i].key);
        idem_array_elem(&arr[1], claims[i].sha256 ? sha : NULL);
        idem_array_elem(&arr[2], claims[i].message_id);
        idem_array_elem(&arr[3], lease);
    }
    for (int a = 0; a < 4; a++) {
        if (idem_array_end(&arr[a]) == NULL) {
            return -1;
        }
    }
    return 0;
}

static int
unhex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The stored hash and message of a row (columns sha_col, sha_col + 1). */
static void
claim_stored(const PGresult *res, int row, int sha_col, struct idem_claim *c)
{
    const char *sha = PQgetvalue(res, row, sha_col);
    if (!PQgetisnull(res, row, sha_col) && strlen(sha) == 64) {
        for (int j = 0; j < 32; j++) {
            c->stored_sha256[j] = (unsigned char) (unhex(sha[2 * j]) << 4 | unhex(sha[2 * j + 1]));
        }
        c->has_stored_sha256 = 1;
    }
    snprintf(c->stored_message_id, sizeof(c->stored_message_id), "%s",
             PQgetvalue(res, row, sha_col + 1));
}

/* Fill the outputs of one claim from its row of the claim statement. */
static void
claim_parse(const PGresult *res, int row, struct idem_claim *c)
{
    switch (PQgetvalue(res, row, 0)[0]) {
    case 'C':
        c->state = IDEM_CLAIMED;
        break;
    case 'T':
        c->state = IDEM_TAKEN_OVER;
        break;
    case 'X':
        c->state = IDEM_CRASHED;
        break;
    case 'S':
        c->state = IDEM_INTERRUPTED;
        break;
    case 'D':
        c->state = IDEM_COMPLETED;
        break;
    default:
        c->state = IDEM_BUSY;
        break;
    }
    c->attempts = atoi(PQgetvalue(res, row, 1));
    c->lease_left = c->state == IDEM_BUSY ? cnum_strtod(PQgetvalue(res, row, 2), NULL) : 0.0;
    if (c->state == IDEM_CLAIMED) {
        return; /* the snapshot's row, if any, was deleted or released: no holder */
    }
    claim_stored(res, row, 3, c);
}

/*
 * BUSY answers without a message id may come from a row the claim's
 * snapshot could not see (sql_peek): read those rows again, so the answer
 * names the holder and its real lease, or says COMPLETED when the holder
 * finished meanwhile. Only in that race: no round trip otherwise. A row
 * deleted since stays BUSY with the claim's own lease, one released since
 * BUSY with no lease left (the next delivery claims it), and so do all of
 * them when this read fails: the claims themselves stand.
 */
static void
claim_peek(struct idem_store *s, struct idem_claim *claims, size_t n, const PGresult *res)
{
    char err[256];
    struct buf arr = BUF_INIT;
    size_t unseen = 0;
    for (size_t i = 0; i < n; i++) {
        if (claims[i].state == IDEM_BUSY && PQgetisnull(res, (int) i, 4)) {
            idem_array_elem(&arr, claims[i].key);
            unseen++;
        }
    }
    if (unseen == 0 || idem_array_end(&arr) == NULL) {
        buf_free(&arr);
        return;
    }
    const char *params[] = {buf_str(&arr)};
    PGresult *rows =
        run_prepared(s, STMT_PEEK, 1, params, PGRES_TUPLES_OK, "claim", err, sizeof(err));
    buf_free(&arr);
    if (rows == NULL) {
        return;
    }
    for (int r = 0; r < PQntuples(rows); r++) {
        for (size_t i = 0; i < n; i++) {
            struct idem_claim *c = &claims[i];
            if (c->state != IDEM_BUSY || c->stored_message_id[0] != '\0' ||
                strcmp(c->key, PQgetvalue(rows, r, 0)) != 0) {
                continue;
            }
            int done = strcmp(PQgetvalue(rows, r, 1), "completed") == 0;
            c->state = done ? IDEM_COMPLETED : IDEM_BUSY;
            c->lease_left = done ? 0.0 : cnum_strtod(PQgetvalue(rows, r, 2), NULL);
            claim_stored(rows, r, 3, c);
        }
    }
    PQclear(rows);
}

/* Whether a failed statement (res, NULL when no answer came) failed with its
 * connection: the connection is gone, or the server said it is ending it
 * (57P01-03: terminated, crashed, shutting down; libpq may not have seen
 * the socket close yet), or libpq could not tell (no SQLSTATE, class 08) -
 * not a statement that failed on a live connection (an SQL error, a
 * statement timeout: 57014). */
static int
connection_lost(const struct idem_store *s, const PGresult *res)
{
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return PQstatus(s->conn) != CONNECTION_OK || state == NULL || strncmp(state, "08", 2) == 0 ||
           strncmp(state, "57P", 3) == 0;
}

/*
 * Run the claim statement; when the connection was lost on the way, once
 * more at once on a new one: the statement is idempotent (sql_claim), so
 * whether the lost one committed or not, the second answers what the keys
 * are now, with the keys the first took ours (not when the first was given
 * up unanswered). The result, or NULL with err.
 */
static PGresult *
claim_run(struct idem_store *s, const char *const *params, int *unsure, char *err, size_t errlen)
{
    int idle = PQtransactionStatus(s->conn) == PQTRANS_IDLE;
    PGresult *res = idem_stmts_exec(s, STMT_CLAIM, 7, params);
    if (PQresultStatus(res) == PGRES_TUPLES_OK) {
        return res;
    }
    /* Given up unanswered (idem_set_wait): the server did not answer the
     * connection it had, and a new one would wait as long again. */
    *unsure = connection_lost(s, res); /* it may have committed */
    int lost = idle && *unsure && s->gave_up == IDEM_ANSWERED;
    idem_pg_fail(s, res, "claim", err, errlen);
    if (!lost) {
        return NULL;
    }
    char first[256];
    snprintf(first, sizeof(first), "%s", err != NULL ? err : "");
    if (idem_reconnect(s, err, errlen) != 0) {
        return NULL;
    }
    res = run_prepared(s, STMT_CLAIM, 7, params, PGRES_TUPLES_OK, "claim", err, errlen);
    if (res == NULL && err != NULL && errlen > 0) {
        size_t used = strlen(err);
        snprintf(err + used, errlen - used, " (on a new connection, after: %s)", first);
    }
    return res;
}

/* The longest lease of the batch, in seconds. */
static int
claims_lease(const struct idem_claim *claims, size_t n)
{
    int lease = 0;
    for (size_t i = 0; i < n; i++) {
        lease = claims[i].lease_seconds > lease ? claims[i].lease_seconds : lease;
    }
    return lease;
}

int
idem_claim_batch(struct idem_store *s, struct idem_claim *claims, size_t n, char *err,
                 size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        claims[i].state = IDEM_BUSY;
        claims[i].attempts = 0;
        claims[i].lease_left = 0.0;
        memset(claims[i].stored_sha256, 0, sizeof(claims[i].stored_sha256));
        claims[i].has_stored_sha256 = 0;
        claims[i].stored_message_id[0] = '\0';
    }
    if (n == 0) {
        return 0;
    }
    if (check_claims(claims, n, err, errlen) != 0) {
        return -1;
    }
    struct buf arr[4] = {BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT};
    int rc = -1;
    if (claim_arrays(claims, n, arr) != 0) {
        idem_set_err(err, errlen, "claim: out of memory");
        goto out;
    }
    int tok = idem_lost_token(s->lost);
    char token[16], lost[IDEM_LOST_TEXT];
    snprintf(token, sizeof(token), "%d", tok);
    idem_lost_text(s->lost, lost);
    const char *params[] = {buf_str(&arr[0]),
                            buf_str(&arr[1]),
                            buf_str(&arr[2]),
                            buf_str(&arr[3]),
                            s->owner,
                            token,
                            lost};
    int unsure = 0;
    PGresult *res = claim_run(s, params, &unsure, err, errlen);
    if (res == NULL) {
        if (unsure) {
            idem_lost_note(s->lost, tok, claims_lease(claims, n));
        }
        goto out;
    }
    if ((size_t) PQntuples(res) != n) {
        idem_set_err(err, errlen, "claim: %d answers for %zu keys", PQntuples(res), n);
        PQclear(res);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        claim_parse(res, (int) i, &claims[i]);
    }
    claim_peek(s, claims, n, res);
    PQclear(res);
    rc = 0;
out:
    for (int a = 0; a < 4; a++) {
        buf_free(&arr[a]);
    }
    return rc;
}

/* keys as a PostgreSQL text[] literal in arr (freed on failure). 0 or -1. */
static int
keys_array(struct buf *arr, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        idem_array_elem(arr, keys[i]);
    }
    if (idem_array_end(arr) == NULL) {
        buf_free(arr);
        return -1;
    }
    return 0;
}

/* v[0..n) as a PostgreSQL int[] literal in arr (v NULL: all -1). 0, or -1
 * when out of memory (arr freed). */
static int
ints_array(struct buf *arr, const int *v, size_t n)
{
    buf_putc(arr, '{');
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            buf_putc(arr, ',');
        }
        buf_put_int(arr, v != NULL ? v[i] : -1);
    }
    buf_putc(arr, '}');
    if (arr->failed) {
        buf_free(arr);
        return -1;
    }
    return 0;
}

/*
 * complete, extend and release: run stmt on our keys with third as $3 (a
 * lease, or an int[] of attempts), and set flags[i] (may be NULL) for the
 * keys it changed, from the positions it answers.
 */
static int
keys_update(struct idem_store *s, int stmt, const char *what, const char *const *keys, size_t n,
            const char *third, int *flags, char *err, size_t errlen)
{
    if (flags != NULL) {
        memset(flags, 0, n * sizeof(*flags));
    }
    if (n == 0) {
        return 0;
    }
    struct buf arr = BUF_INIT;
    if (third == NULL || keys_array(&arr, keys, n) != 0) {
        idem_set_err(err, errlen, "%s: out of memory", what);
        return -1;
    }
    const char *params[] = {buf_str(&arr), s->owner, third};
    PGresult *res = run_prepared(s, stmt, 3, params, PGRES_TUPLES_OK, what, err, errlen);
    buf_free(&arr);
    if (res == NULL) {
        return -1;
    }
    for (int r = 0; flags != NULL && r < PQntuples(res); r++) {
        long pos = strtol(PQgetvalue(res, r, 0), NULL, 10);
        if (pos >= 1 && (size_t) pos <= n) {
            flags[pos - 1] = 1;
        }
    }
    PQclear(res);
    return 0;
}

/* keys_update with attempts as its $3. */
static int
keys_update_attempts(struct idem_store *s, int stmt, const char *what, const char *const *keys,
                     const int *attempts, size_t n, int *flags, char *err, size_t errlen)
{
    if (n == 0) {
        return keys_update(s, stmt, what, keys, 0, "", flags, err, errlen);
    }
    struct buf arr = BUF_INIT;
    int rc = ints_array(&arr, attempts, n) == 0
                 ? keys_update(s, stmt, what, keys, n, buf_str(&arr), flags, err, errlen)
                 : keys_update(s, stmt, what, keys, n, NULL, flags, err, errlen);
    buf_free(&arr);
    return rc;
}

int
idem_complete_batch(struct idem_store *s, const char *const *keys, const int *attempts, size_t n,
                    int *done, char *err, size_t errlen)
{
    return keys_update_attempts(s, STMT_COMPLETE, "complete", keys, attempts, n, done, err,
                                errlen);
}

/* The keys completed by the message each names: positions, 1-based. */
static const char sql_completed_by[] =
    "SELECT i.ord FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS i (k, m, ord)"
    " JOIN @T t ON t.idempotency_key = i.k WHERE t.state = 'completed' AND t.message_id = i.m";

int
idem_completed_by(struct idem_store *s, const char *const *keys, const char *const *message_ids,
                  size_t n, int *completed, char *err, size_t errlen)
{
    memset(completed, 0, n * sizeof(*completed));
    if (n == 0) {
        return 0;
    }
    struct buf k = BUF_INIT, m = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        idem_array_elem(&m, message_ids[i]);
    }
    if (keys_array(&k, keys, n) != 0 || idem_array_end(&m) == NULL) {
        buf_free(&k);
        buf_free(&m);
        idem_set_err(err, errlen, "completed check: out of memory");
        return -1;
    }
    const char *params[] = {buf_str(&k), buf_str(&m)};
    PGresult *res = idem_run_sql(s, sql_completed_by, 2, params, PGRES_TUPLES_OK,
                                 "completed check", err, errlen);
    buf_free(&k);
    buf_free(&m);
    if (res == NULL) {
        return -1;
    }
    for (int r = 0; r < PQntuples(res); r++) {
        long pos = strtol(PQgetvalue(res, r, 0), NULL, 10);
        if (pos >= 1 && (size_t) pos <= n) {
            completed[pos - 1] = 1;
        }
    }
    PQclear(res);
    return 0;
}

int
idem_extend_batch(struct idem_store *s, const char *const *keys, size_t n, int lease_seconds,
                  int *extended, char *err, size_t errlen)
{
    if (lease_seconds <= 0) {
        idem_set_err(err, errlen, "extend: lease of %d seconds (must be > 0)", lease_seconds);
        return -1;
    }
    char lease[16];
    snprintf(lease, sizeof(lease), "%d", lease_seconds);
    return keys_update(s, STMT_EXTEND, "extend", keys, n, lease, extended, err, errlen);
}

int
idem_release_batch(struct idem_store *s, const char *const *keys, const int *attempts, size_t n,
                   int *released, char *err, size_t errlen)
{
    return keys_update_attempts(s, STMT_RELEASE, "release", keys, attempts, n, released, err,
                                errlen);
}

/* Roll back after a failure that err already describes; its own failure
 * (a lost connection) shows in idem_connected. */
static void
rollback_quietly(struct idem_store *s)
{
    PQclear(idem_exec(s, "ROLLBACK", 0, NULL));
}

int
idem_tx_begin(struct idem_store *s, const char *key, char *err, size_t errlen)
{
    if (PQtransactionStatus(s->conn) != PQTRANS_IDLE) {
        idem_set_err(err, errlen,
                     "tx begin \"%s\": the connection is busy or already in a "
                     "transaction",
                     key);
        return -1;
    }
    PGresult *res = idem_exec(s, "BEGIN", 0, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        return idem_pg_fail(s, res, "tx begin", err, errlen);
    }
    PQclear(res);
    const char *params[] = {key, s->owner};
    res = run_prepared(s, STMT_TX_LOCK, 2, params, PGRES_TUPLES_OK, "tx begin: lock key", err,
                       errlen);
    if (res == NULL) {
        rollback_quietly(s);
        return -1;
    }
    int locked = PQntuples(res) == 1;
    PQclear(res);
    if (locked) {
        return 1;
    }
    return idem_tx_rollback(s, err, errlen) == 0 ? 0 : -1;
}

/* Why the handler's transaction cannot be completed, before we try. One a
 * statement of the plugin's aborted is named by that statement's SQLSTATE
 * and message (idem_watch.c), not by the 25P02 of what followed it. */
static int
tx_check_open(struct idem_store *s, char *err, size_t errlen)
{
    switch (PQtransactionStatus(s->conn)) {
    case PQTRANS_INTRANS:
        return 0;
    case PQTRANS_INERROR:
        rollback_quietly(s);
        if (s->watch_abort_text[0] != '\0') {
            idem_set_err(err, errlen,
                         "tx complete: a statement of the plugin failed (%s), so its "
                         "transaction was rolled back",
                         s->watch_abort_text);
        } else {
            idem_set_err(err, errlen,
                         "tx complete: a statement of the handler failed, so the "
                         "transaction was rolled back");
        }
        return -1;
    case PQTRANS_IDLE:
        idem_set_err(err, errlen, "tx complete: no transaction is open (did the handler end it?)");
        return -1;
    default:
        return idem_pg_fail(s, NULL, "tx complete", err, errlen);
    }
}

/*
 * Mark the key completed and commit it with the handler's statements. A
 * COMMIT of a failed transaction "succeeds" with the tag ROLLBACK, hence the
 * tag check; a connection lost during COMMIT leaves the outcome unknown.
 */
int
idem_tx_complete(struct idem_store *s, const char *key, int attempts, char *err, size_t errlen)
{
    if (tx_check_open(s, err, errlen) != 0) {
        return -1;
    }
    char runs[16];
    snprintf(runs, sizeof(runs), "%d", attempts);
    const char *params[] = {key, s->owner, runs};
    PGresult *res =
        run_prepared(s, STMT_TX_COMPLETE, 3, params, PGRES_COMMAND_OK, "tx complete", err, errlen);
    if (res == NULL) {
        rollback_quietly(s);
        return -1;
    }
    int updated = strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    if (!updated) {
        rollback_quietly(s);
        idem_set_err(err, errlen, "tx complete \"%s\": the key is no longer ours; rolled back",
                     key);
        return -1;
    }
    res = idem_exec(s, "COMMIT", 0, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        if (PQstatus(s->conn) != CONNECTION_OK) {
            PQclear(res);
            idem_set_err(err, errlen,
                         "tx complete \"%s\": connection lost during COMMIT, the "
                         "outcome is unknown (look the key up)",
                         key);
            return -1;
        }
        return idem_pg_fail(s, res, "tx complete: COMMIT", err, errlen);
    }
    int committed = strcmp(PQcmdStatus(res), "COMMIT") == 0;
    PQclear(res);
    if (!committed) {
        idem_set_err(err, errlen, "tx complete \"%s\": the transaction was rolled back", key);
        return -1;
    }
    return 0;
}

int
idem_tx_rollback(struct idem_store *s, char *err, size_t errlen)
{
    PGresult *res = idem_exec(s, "ROLLBACK", 0, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        return idem_pg_fail(s, res, "tx rollback", err, errlen);
    }
    PQclear(res);
    return 0;
}
