/*
 * idem_schema.c - the idempotency table's DDL: idem_migrate creates or
 * migrates the table (columns, the state check, the indexes of its layout)
 * under an advisory lock, after a look without locks that usually finds
 * nothing to do. Kept in sync with etc/schema.sql (itest-idem compares
 * them). Not the statements that use the table: idem.c, idem_janitor.c.
 */
#include "idem.h"

#include <libpq-fe.h>

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "hash.h"
#include "idem_internal.h"

/*
 * Tables of older versions check state IN ('in_progress', 'completed'):
 * drop every check of the state column that does not know the newest state
 * and add the current one, named <table>_state_check. A DO block, because
 * PostgreSQL chose the old check's name; the table (@N) and the new name
 * (@C) come in as settings of the transaction, never spliced into its code.
 *
 * Those versions counted claims in attempts, the current one among them;
 * this one counts runs that ended. So when an old check goes, an in-progress
 * row (a job an older worker was running at the upgrade) gives its current
 * claim back: taken over once its lease lapses, that run is not counted, as
 * for any lapsed lease, instead of costing the job an attempt it may not
 * have (a queue with max_attempts 1 would dead-letter it unrun). Once only:
 * the next migration finds no old check.
 */
#define SQL_STATE_CHECK                                                                           \
    "DO $twice$ DECLARE t regclass := current_setting('twice.idem_table')::regclass; c name;"     \
    " claims boolean := false;"                                                                   \
    " BEGIN FOR c IN SELECT k.conname FROM pg_constraint k JOIN pg_attribute a"                   \
    " ON a.attrelid = k.conrelid AND a.attname = 'state' WHERE k.conrelid = t"                    \
    " AND k.contype = 'c' AND k.conkey = ARRAY[a.attnum]"                                         \
    " AND pg_get_constraintdef(k.oid) NOT LIKE '%interrupted%' LOOP"                              \
    " EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', t, c); claims := true; END LOOP;"       \
    " IF claims THEN EXECUTE format('UPDATE %s SET attempts = greatest(attempts - 1, 0)"          \
    " WHERE state = ''in_progress''', t); END IF;"                                                \
    " IF NOT EXISTS (SELECT 1 FROM pg_constraint k JOIN pg_attribute a"                           \
    " ON a.attrelid = k.conrelid AND a.attname = 'state' WHERE k.conrelid = t"                    \
    " AND k.contype = 'c' AND k.conkey = ARRAY[a.attnum]) THEN"                                   \
    " EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I CHECK (state IN (''in_progress'',"         \
    " ''released'', ''crashed'', ''interrupted'', ''completed''))', t,"                           \
    " current_setting('twice.idem_check')); END IF; END $twice$;"

/*
 * Migration, one multi-statement query: PostgreSQL runs it as one implicit
 * transaction, so the advisory lock serialises concurrent migrators and a
 * failure leaves nothing half done. "@T": the table, "@L": the lock. The
 * columns first (sql_migrate_columns), then the indexes of the table's
 * layout. Keep in sync with etc/schema.sql (the integration test compares
 * them).
 *
 * The lease layout, for every table created since: the primary key, one
 * index of lease_until, and fillfactor 50. A completion then changes no
 * indexed column (it leaves lease_until alone) and finds room on the row's
 * page, so it is a HOT update: no new index entries, half the WAL. Per key,
 * two index insertions (primary key and lease at the claim) instead of four.
 * The lease index finds what the other layout needs three indexes for: a
 * gone worker's live leases (lease_until later than when it went), and the
 * janitor's old keys (lease_until and processed_at both older than the
 * retention; release and the master's expiry set lease_until to now()).
 *
 * The partial layout, which tables created by older versions keep (building
 * an index on a large table would block the claims): the janitor's indexes
 * of completed keys and of free ones by processed_at, and the owner index of
 * in-progress keys. Partial, so that no query about in-progress keys is
 * tempted to scan them instead of the primary key. Every statement works on
 * both layouts; only the janitor's and the master's (purge, expire_owner)
 * are written for each.
 */
static const char sql_migrate_columns[] =
    "SELECT pg_advisory_xact_lock(@L);"
    "SELECT set_config('lock_timeout', '10s', true);"
    "CREATE TABLE IF NOT EXISTS @T (idempotency_key TEXT PRIMARY KEY,"
    " processed_at TIMESTAMPTZ NOT NULL DEFAULT now()) WITH (fillfactor = 50);"
    "ALTER TABLE @T"
    " ADD COLUMN IF NOT EXISTS state TEXT NOT NULL DEFAULT 'completed',"
    " ADD COLUMN IF NOT EXISTS owner TEXT,"
    " ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ,"
    " ADD COLUMN IF NOT EXISTS payload_sha256 BYTEA,"
    " ADD COLUMN IF NOT EXISTS message_id TEXT,"
    " ADD COLUMN IF NOT EXISTS attempts INTEGER NOT NULL DEFAULT 1,"
    " ADD COLUMN IF NOT EXISTS created_at TIMESTAMPTZ NOT NULL DEFAULT now();"
    "SELECT set_config('twice.idem_table', @N, true),"
    " set_config('twice.idem_check', @C, true);" SQL_STATE_CHECK;

static const char sql_migrate_lease[] = "CREATE INDEX IF NOT EXISTS @E ON @T (lease_until);";

static const char sql_migrate_partial[] =
    "CREATE INDEX IF NOT EXISTS @I ON @T (processed_at) WHERE state = 'completed';"
    "CREATE INDEX IF NOT EXISTS @O ON @T (owner, idempotency_key)"
    " WHERE state = 'in_progress';"
    "CREATE INDEX IF NOT EXISTS @F ON @T (processed_at)"
    " WHERE state IN ('released', 'crashed', 'interrupted');";

/* What the migration has to do: whether it has nothing to do (every
 * column, the check of the current states, and the indexes of a layout),
 * and whether the table has the lease layout or does not exist yet (it gets
 * the lease layout then). */
static const char sql_migrate_check[] =
    "SELECT (SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass($1)"
    " AND attnum > 0 AND NOT attisdropped AND attname = ANY ('{idempotency_key,"
    "processed_at,state,owner,lease_until,payload_sha256,message_id,attempts,"
    "created_at}'::text[])) = 9"
    " AND (to_regclass($5) IS NOT NULL OR (to_regclass($2) IS NOT NULL"
    " AND to_regclass($3) IS NOT NULL AND to_regclass($4) IS NOT NULL))"
    " AND (SELECT bool_and(pg_get_constraintdef(k.oid) LIKE '%interrupted%')"
    " FROM pg_constraint k JOIN pg_attribute a ON a.attrelid = k.conrelid"
    " AND a.attname = 'state' WHERE k.conrelid = to_regclass($1) AND k.contype = 'c'"
    " AND k.conkey = ARRAY[a.attnum]),"
    " to_regclass($1) IS NULL OR to_regclass($5) IS NOT NULL";

long long
idem_lock_key(const char *kind, const char *table)
{
    uint64_t h = hash_fnv1a(hash_fnv1a(HASH_FNV1A_INIT, kind), table);
    return (long long) (h >> 1); /* a positive bigint */
}

/*
 * ALTER TABLE takes an ACCESS EXCLUSIVE lock even when every column exists,
 * which would queue all claims behind any long transactional handler. So
 * look first, without locks, and migrate only when something is missing.
 */
int
idem_migrate(struct idem_store *s, char *err, size_t errlen)
{
    if (idem_pause_migrate(s, err, errlen) != 0 || outbox_migrate(s, s->name, err, errlen) != 0) {
        return -1;
    }
    const char *params[] = {s->table, s->index, s->owner_index, s->free_index, s->lease_index};
    PGresult *res = idem_exec(s, sql_migrate_check, 5, params);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        return idem_pg_fail(s, res, "migrate: inspect the table", err, errlen);
    }
    int done = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    int lease = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
    PQclear(res);
    s->layout = lease ? LAYOUT_LEASE : LAYOUT_PARTIAL;
    if (done) {
        return 0;
    }
    /* The DO block gets the quoted table and the check's name as text. */
    struct buf check = BUF_INIT, sql = BUF_INIT;
    char lock[32];
    snprintf(lock, sizeof(lock), "%lld", idem_lock_key("twice:idem:", s->name));
    buf_printf(&check, "%s_state_check", s->name);
    char *table_lit = PQescapeLiteral(s->conn, s->table, strlen(s->table));
    char *check_lit = check.failed ? NULL : PQescapeLiteral(s->conn, buf_str(&check), check.len);
    const char *extra[] = {"L", lock, "N", table_lit, "C", check_lit, NULL};
    int rc = -1;
    if (table_lit != NULL && check_lit != NULL &&
        idem_sql_expand(&sql, sql_migrate_columns, s, extra) == 0) {
        rc = idem_sql_expand(&sql, lease ? sql_migrate_lease : sql_migrate_partial, s, NULL);
    }
    PQfreemem(table_lit);
    PQfreemem(check_lit);
    buf_free(&check);
    if (rc != 0) {
        buf_free(&sql);
        idem_set_err(err, errlen, "migrate: out of memory");
        return -1;
    }
    res = idem_exec(s, buf_str(&sql), 0, NULL);
    buf_free(&sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        return idem_pg_fail(s, res, "migrate", err, errlen);
    }
    PQclear(res);
    return 0;
}
