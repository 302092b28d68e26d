/*
 * itest-idem.c - the idempotency store (core/idem/idem.c) against a real
 * PostgreSQL: migration, claim states, leases, transactions, concurrency,
 * janitor, key queries, errors and reconnects. Not a test of the job
 * lifecycle that decides what to do with each answer.
 *
 * Needs TWICE_TEST_PGDSN: a libpq URI to an existing database whose role may
 * CREATE DATABASE. Fails when it is unset or unreachable. Creates its own
 * databases and drops them at the end.
 */
#include <libpq-fe.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "idem.h"
#include "outbox.h"

struct ctx {
    PGconn *admin; /* to TWICE_TEST_PGDSN, for CREATE/DROP DATABASE and kills */
    PGconn *db;    /* to the test database, for looking behind the store */
    char *dsn;     /* conninfo of the test database */
    char *dsn2;    /* conninfo of the second one (etc/schema.sql) */
    int partial;   /* its twice_idempotency has the partial layout (idem.c), not the lease one */
};

static char err[512];

static void
quiet(void *arg, const char *message)
{
    (void) arg;
    (void) message;
}

static double
now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Run SQL that must succeed; prints the error and counts a failure if not. */
static void
sql(PGconn *conn, const char *q)
{
    PGresult *res = PQexec(conn, q);
    ExecStatusType st = PQresultStatus(res);
    CHECK(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        fprintf(stderr, "  SQL failed: %s\n  %s", q, PQerrorMessage(conn));
    }
    PQclear(res);
}

/* The first value of a query, malloc'd ("" for NULL or no row; caller frees). */
static char *
sql_value(PGconn *conn, const char *q)
{
    PGresult *res = PQexec(conn, q);
    char *v = NULL;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "  SQL failed: %s\n  %s", q, PQerrorMessage(conn));
        CHECK(0);
    } else if (PQntuples(res) > 0) {
        v = strdup(PQgetvalue(res, 0, 0));
    }
    PQclear(res);
    return v ? v : strdup("");
}

static long
sql_long(PGconn *conn, const char *q)
{
    char *v = sql_value(conn, q);
    long n = strtol(v, NULL, 10);
    free(v);
    return n;
}

/* conninfo of the admin connection with dbname (and password, if not NULL)
 * replaced; caller frees. */
static char *
dsn_with(PGconn *admin, const char *dbname, const char *password)
{
    PQconninfoOption *opts = PQconninfo(admin);
    struct buf b = BUF_INIT;
    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++) {
        const char *v = o->val;
        if (strcmp(o->keyword, "dbname") == 0) {
            v = dbname;
        } else if (strcmp(o->keyword, "password") == 0 && password != NULL) {
            v = password;
        }
        if (v == NULL || *v == '\0') {
            continue;
        }
        buf_printf(&b, "%s%s='", b.len ? " " : "", o->keyword);
        for (const char *p = v; *p; p++) {
            if (*p == '\'' || *p == '\\') {
                buf_putc(&b, '\\');
            }
            buf_putc(&b, *p);
        }
        buf_putc(&b, '\'');
    }
    PQconninfoFree(opts);
    return buf_steal(&b);
}

static struct idem_store *
open_store(const char *dsn, const char *table, const char *owner)
{
    struct idem_store *s = NULL;
    err[0] = '\0';
    int rc = idem_open(dsn, table, owner, &s, err, sizeof(err));
    CHECK_INT(rc, 0);
    if (rc != 0) {
        fprintf(stderr, "  idem_open: %s\n", err);
        idem_close(s);
        exit(check_done("itest-idem"));
    }
    return s;
}

/* One claim of one key; its answer. */
static struct idem_claim
claim1(struct idem_store *s, const char *key, const char *msg, int sha_seed, int lease)
{
    unsigned char sha[32];
    memset(sha, sha_seed, sizeof(sha));
    struct idem_claim c = {.key = key, .sha256 = sha, .message_id = msg, .lease_seconds = lease};
    err[0] = '\0';
    int rc = idem_claim_batch(s, &c, 1, err, sizeof(err));
    CHECK_INT(rc, 0);
    if (rc != 0) {
        fprintf(stderr, "  claim %s: %s\n", key, err);
        c.state = (enum idem_state) - 1;
    }
    c.sha256 = NULL; /* the local array goes away */
    return c;
}

/* Complete one key with runs attempts; 1 when it was ours. */
static int
complete_runs(struct idem_store *s, const char *key, int runs)
{
    int done = -1;
    CHECK_INT(idem_complete_batch(s, &key, &runs, 1, &done, err, sizeof(err)), 0);
    return done;
}

static int
complete1(struct idem_store *s, const char *key)
{
    return complete_runs(s, key, 1);
}

/* Release one key recording runs (< 0: keep the count); 1 when it was ours. */
static int
release1(struct idem_store *s, const char *key, int runs)
{
    int released = -1;
    CHECK_INT(idem_release_batch(s, &key, &runs, 1, &released, err, sizeof(err)), 0);
    return released;
}

/* The key's row as "state attempts owner-or-dash", or "" when there is none
 * (caller frees). */
static char *
row_of(PGconn *db, const char *key)
{
    char q[512];
    snprintf(q, sizeof(q),
             "SELECT state || ' ' || attempts || ' ' || coalesce(owner, '-')"
             " FROM twice_idempotency WHERE idempotency_key = '%s'",
             key);
    return sql_value(db, q);
}

static void
check_row(PGconn *db, const char *key, const char *want)
{
    char *got = row_of(db, key);
    CHECK_STR(got, want);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "  row of key %s\n", key);
    }
    free(got);
}

/* The table's shape as one string: columns, constraints and indexes. */
static char *
table_shape(PGconn *conn, const char *table)
{
    char q[1024];
    snprintf(q, sizeof(q),
             "SELECT (SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable"
             " || ' ' || coalesce(column_default, '-'), ', ' ORDER BY ordinal_position)"
             " FROM information_schema.columns WHERE table_name = '%s'"
             " AND table_schema = current_schema()) || ' | ' ||"
             " (SELECT string_agg(pg_get_constraintdef(oid), ', ' ORDER BY conname)"
             " FROM pg_constraint WHERE conrelid = '%s'::regclass) || ' | ' ||"
             " (SELECT string_agg(indexdef, ', ' ORDER BY indexname) FROM pg_indexes"
             " WHERE tablename = '%s') || ' | ' || (SELECT coalesce(array_to_string(reloptions,"
             " ','), '-') FROM pg_class WHERE oid = '%s'::regclass)",
             table, table, table, table);
    return sql_value(conn, q);
}

/* Read a file whole (caller frees); NULL when it cannot. */
static char *
read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return NULL;
    }
    struct buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        buf_append(&b, chunk, n);
    }
    fclose(f);
    return buf_steal(&b);
}

/* etc/schema.sql's path. ctest sets TWICE_SOURCE_DIR; run by hand, it is
 * found from this file's. */
static const char *
schema_sql_path(void)
{
    static char path[1024];
    const char *src = getenv("TWICE_SOURCE_DIR");
    if (src != NULL) {
        snprintf(path, sizeof(path), "%s/etc/schema.sql", src);
    } else {
        snprintf(path, sizeof(path), "%.*s/etc/schema.sql",
                 (int) (strlen(__FILE__) - strlen("/tests/integration/itest-idem.c")), __FILE__);
    }
    return path;
}

/* idem_migrate on an empty database, twice; etc/schema.sql in another
 * database gives the same table; migrate after schema.sql is a no-op. */
static void
test_migrate_and_schema_sql(struct ctx *c)
{
    struct idem_store *s = open_store(c->dsn, NULL, "migrator");
    for (int i = 0; i < 2; i++) {
        int rc = idem_migrate(s, err, sizeof(err));
        CHECK_INT(rc, 0);
        if (rc != 0) {
            fprintf(stderr, "  migrate: %s\n", err);
        }
    }
    char *shape = table_shape(c->db, "twice_idempotency");
    CHECK_CONTAINS(shape, "idempotency_key text NO -, processed_at timestamp with time zone NO"
                          " now(), state text NO 'completed'::text");
    CHECK_CONTAINS(shape, "attempts integer NO 1");
    CHECK_CONTAINS(shape, "CHECK ((state = ANY (ARRAY['in_progress'::text, 'released'::text,"
                          " 'crashed'::text, 'interrupted'::text, 'completed'::text])))");
    /* a new table has the lease layout: one index besides the key's */
    CHECK_CONTAINS(shape, "| CREATE INDEX twice_idempotency_lease_idx ON public.twice_idempotency"
                          " USING btree (lease_until), CREATE UNIQUE INDEX twice_idempotency_pkey"
                          " ON public.twice_idempotency USING btree (idempotency_key) |"
                          " fillfactor=50");
    idem_close(s);

    PGconn *db2 = PQconnectdb(c->dsn2);
    char *ddl = read_file(schema_sql_path());
    CHECK(ddl != NULL);
    if (ddl != NULL) {
        sql(db2, ddl);
    }
    char *shape2 = table_shape(db2, "twice_idempotency");
    CHECK_STR(shape2, shape);
    s = open_store(c->dsn2, NULL, "migrator");
    CHECK_INT(idem_migrate(s, err, sizeof(err)), 0);
    char *shape3 = table_shape(db2, "twice_idempotency");
    CHECK_STR(shape3, shape);
    /* the outbox (outbox.c) is created by the same migration and schema.sql */
    char *outbox = table_shape(c->db, "twice_idempotency_outbox");
    char *outbox2 = table_shape(db2, "twice_idempotency_outbox");
    CHECK_CONTAINS(outbox, "(id) WHERE (state = 'pending'::text)");
    CHECK_STR(outbox2, outbox);
    free(outbox);
    free(outbox2);
    idem_close(s);
    PQfinish(db2);
    free(ddl);
    free(shape);
    free(shape2);
    free(shape3);
}

struct migrate_arg {
    struct idem_store *s;
    int rc;
    char err[256];
};

static void *
migrate_thread(void *arg)
{
    struct migrate_arg *m = arg;
    m->rc = idem_migrate(m->s, m->err, sizeof(m->err));
    return NULL;
}

/* Two processes starting at once both migrate a fresh table (without the
 * advisory lock, concurrent CREATE TABLE IF NOT EXISTS can fail). */
static void
test_migrate_concurrently(struct ctx *c)
{
    for (int round = 0; round < 5; round++) {
        char table[32];
        snprintf(table, sizeof(table), "race_%d", round);
        struct migrate_arg a = {open_store(c->dsn, table, "ra"), -1, ""};
        struct migrate_arg b = {open_store(c->dsn, table, "rb"), -1, ""};
        pthread_t ta, tb;
        pthread_create(&ta, NULL, migrate_thread, &a);
        pthread_create(&tb, NULL, migrate_thread, &b);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        CHECK_INT(a.rc, 0);
        CHECK_INT(b.rc, 0);
        if (a.rc != 0 || b.rc != 0) {
            fprintf(stderr, "  concurrent migrate: %s / %s\n", a.err, b.err);
        }
        idem_close(a.s);
        idem_close(b.s);
    }
}

/* A table that existed before keeps the partial layout (idem.c): the three
 * partial indexes, no lease index, the default fillfactor. */
static void
check_partial_layout(PGconn *db, const char *table)
{
    char *shape = table_shape(db, table);
    char want[512];
    snprintf(want, sizeof(want),
             "| CREATE INDEX %s_free_idx ON public.%s USING btree (processed_at) WHERE (state ="
             " ANY (ARRAY['released'::text, 'crashed'::text, 'interrupted'::text])),"
             " CREATE INDEX %s_janitor_idx ON public.%s USING btree (processed_at) WHERE (state"
             " = 'completed'::text), CREATE INDEX %s_owner_idx ON public.%s USING btree (owner,"
             " idempotency_key) WHERE (state = 'in_progress'::text), CREATE UNIQUE INDEX %s_pkey"
             " ON public.%s USING btree (idempotency_key) | -",
             table, table, table, table, table, table, table, table);
    CHECK_CONTAINS(shape, want);
    free(shape);
}

/* A classic two-column table with rows is migrated in place: its rows are
 * completed keys without a stored hash. */
static void
test_migrate_classic(struct ctx *c)
{
    sql(c->db, "CREATE TABLE classic_keys (idempotency_key TEXT PRIMARY KEY,"
               " processed_at TIMESTAMPTZ NOT NULL DEFAULT now());"
               "INSERT INTO classic_keys VALUES ('old-1'), ('old-2')");
    struct idem_store *s = open_store(c->dsn, "classic_keys", "w1");
    CHECK_INT(idem_migrate(s, err, sizeof(err)), 0);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM classic_keys WHERE state = 'completed'"
                              " AND owner IS NULL AND attempts = 1"),
              2);
    check_partial_layout(c->db, "classic_keys");
    struct idem_claim r = claim1(s, "old-1", "m-new", 7, 30);
    CHECK_INT(r.state, IDEM_COMPLETED);
    CHECK_INT(r.has_stored_sha256, 0);
    CHECK_STR(r.stored_message_id, "");
    r = claim1(s, "new-1", "m-new", 7, 30);
    CHECK_INT(r.state, IDEM_CLAIMED);
    /* the new states are allowed: a retried job keeps its count */
    CHECK_INT(release1(s, "new-1", 1), 1);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM classic_keys WHERE state = 'released'"
                              " AND attempts = 1"),
              1);
    CHECK_INT(claim1(s, "new-1", "m-new", 7, 30).attempts, 1);
    idem_close(s);
}

/* A table of an older twice (its check knew only in_progress and completed,
 * with the name PostgreSQL chose) is migrated in place: its rows keep their
 * state, the new states are allowed, its indexes are the partial layout's
 * (the owner index it had, the free keys' added); a new table's are not. */
static void
test_migrate_older_version(struct ctx *c)
{
    sql(c->db, "CREATE TABLE old_keys (idempotency_key TEXT PRIMARY KEY,"
               " processed_at TIMESTAMPTZ NOT NULL DEFAULT now());"
               "ALTER TABLE old_keys ADD COLUMN state TEXT NOT NULL DEFAULT 'completed'"
               " CHECK (state IN ('in_progress', 'completed')), ADD COLUMN owner TEXT,"
               " ADD COLUMN lease_until TIMESTAMPTZ, ADD COLUMN payload_sha256 BYTEA,"
               " ADD COLUMN message_id TEXT, ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1,"
               " ADD COLUMN created_at TIMESTAMPTZ NOT NULL DEFAULT now();"
               "CREATE INDEX old_keys_janitor_idx ON old_keys (processed_at)"
               " WHERE state = 'completed';"
               "CREATE INDEX old_keys_owner_idx ON old_keys (owner, idempotency_key)"
               " WHERE state = 'in_progress';"
               "INSERT INTO old_keys (idempotency_key, state, owner, lease_until, attempts)"
               " VALUES ('old-done', 'completed', NULL, NULL, 2),"
               " ('old-running', 'in_progress', 'gone', now() - interval '1 minute', 1)");
    struct idem_store *s = open_store(c->dsn, "old_keys", "w1");
    CHECK_INT(idem_migrate(s, err, sizeof(err)), 0);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM pg_constraint WHERE conrelid ="
                              " 'old_keys'::regclass AND contype = 'c'"),
              1);
    CHECK_INT(claim1(s, "old-done", "m", 1, 30).state, IDEM_COMPLETED);
    struct idem_claim r = claim1(s, "old-running", "m", 1, 30);
    CHECK_INT(r.state, IDEM_TAKEN_OVER);
    CHECK_INT(r.attempts, 0); /* that version's count of claims held its own */
    CHECK_INT(release1(s, "old-running", 2), 1);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM old_keys WHERE state = 'released'"), 1);
    CHECK_INT(idem_migrate(s, err, sizeof(err)), 0); /* nothing left to do */
    check_partial_layout(c->db, "old_keys");
    struct idem_store *fresh = open_store(c->dsn, "new_keys", "w1");
    CHECK_INT(idem_migrate(fresh, err, sizeof(err)), 0);
    char *old_shape = table_shape(c->db, "old_keys");
    char *new_shape = table_shape(c->db, "new_keys");
    /* the same columns and check, but for the names, which contain the table's */
    for (char *p = old_shape; (p = strstr(p, "old_keys")) != NULL; p++) {
        memcpy(p, "new_keys", 8);
    }
    *strstr(old_shape, "| CREATE") = '\0';
    *strstr(new_shape, "| CREATE") = '\0';
    CHECK_STR(old_shape, new_shape);
    free(old_shape);
    free(new_shape);
    idem_close(fresh);
    idem_close(s);
}

/*
 * The keys table as each older twice left it (etc/schema.sql's and
 * idem_migrate's history; test_migrate_classic and test_migrate_older_version
 * cover the classic table and caab968's), with what a dead older worker
 * left in it: today's store migrates it, never runs a completed key again,
 * leaves a live lease alone and takes a lease over once it lapses, keeps
 * the counts of free keys, and needs nothing more at the next start.
 */
struct shape {
    const char *rev;  /* the first commit that created tables of this shape */
    const char *ddl;  /* %1$s: the table */
    int five_states;  /* its check knows released, crashed and interrupted */
    int lease_layout; /* one index of lease_until (db5d0ed), not partial ones */
};

static const struct shape shapes[] = {
    /* the first idem_migrate (schema.sql a0bd220): a check of two states, and a
     * janitor index of (state, processed_at) under today's janitor index's name */
    {"0dfc068",
     "CREATE TABLE %1$s (idempotency_key TEXT PRIMARY KEY,"
     " processed_at TIMESTAMPTZ NOT NULL DEFAULT now());"
     "ALTER TABLE %1$s ADD COLUMN state TEXT NOT NULL DEFAULT 'completed'"
     " CHECK (state IN ('in_progress', 'completed')), ADD COLUMN owner TEXT,"
     " ADD COLUMN lease_until TIMESTAMPTZ, ADD COLUMN payload_sha256 BYTEA,"
     " ADD COLUMN message_id TEXT, ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1,"
     " ADD COLUMN created_at TIMESTAMPTZ NOT NULL DEFAULT now();"
     "CREATE INDEX %1$s_janitor_idx ON %1$s (state, processed_at);",
     0, 0},
    /* e9c1b06: and an owner index of in-progress keys, on owner alone */
    {"e9c1b06",
     "CREATE TABLE %1$s (idempotency_key TEXT PRIMARY KEY,"
     " processed_at TIMESTAMPTZ NOT NULL DEFAULT now());"
     "ALTER TABLE %1$s ADD COLUMN state TEXT NOT NULL DEFAULT 'completed'"
     " CHECK (state IN ('in_progress', 'completed')), ADD COLUMN owner TEXT,"
     " ADD COLUMN lease_until TIMESTAMPTZ, ADD COLUMN payload_sha256 BYTEA,"
     " ADD COLUMN message_id TEXT, ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1,"
     " ADD COLUMN created_at TIMESTAMPTZ NOT NULL DEFAULT now();"
     "CREATE INDEX %1$s_janitor_idx ON %1$s (state, processed_at);"
     "CREATE INDEX %1$s_owner_idx ON %1$s (owner) WHERE state = 'in_progress';",
     0, 0},
    /* f015354: five states under a named check, the three partial indexes */
    {"f015354",
     "CREATE TABLE %1$s (idempotency_key TEXT PRIMARY KEY,"
     " processed_at TIMESTAMPTZ NOT NULL DEFAULT now());"
     "ALTER TABLE %1$s ADD COLUMN state TEXT NOT NULL DEFAULT 'completed',"
     " ADD COLUMN owner TEXT, ADD COLUMN lease_until TIMESTAMPTZ,"
     " ADD COLUMN payload_sha256 BYTEA, ADD COLUMN message_id TEXT,"
     " ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1,"
     " ADD COLUMN created_at TIMESTAMPTZ NOT NULL DEFAULT now();"
     "ALTER TABLE %1$s ADD CONSTRAINT %1$s_state_check CHECK (state IN ('in_progress',"
     " 'released', 'crashed', 'interrupted', 'completed'));"
     "CREATE INDEX %1$s_janitor_idx ON %1$s (processed_at) WHERE state = 'completed';"
     "CREATE INDEX %1$s_owner_idx ON %1$s (owner, idempotency_key)"
     " WHERE state = 'in_progress';"
     "CREATE INDEX %1$s_free_idx ON %1$s (processed_at)"
     " WHERE state IN ('released', 'crashed', 'interrupted');",
     1, 0},
    /* db5d0ed: the lease layout */
    {"db5d0ed",
     "CREATE TABLE %1$s (idempotency_key TEXT PRIMARY KEY,"
     " processed_at TIMESTAMPTZ NOT NULL DEFAULT now()) WITH (fillfactor = 50);"
     "ALTER TABLE %1$s ADD COLUMN state TEXT NOT NULL DEFAULT 'completed',"
     " ADD COLUMN owner TEXT, ADD COLUMN lease_until TIMESTAMPTZ,"
     " ADD COLUMN payload_sha256 BYTEA, ADD COLUMN message_id TEXT,"
     " ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1,"
     " ADD COLUMN created_at TIMESTAMPTZ NOT NULL DEFAULT now();"
     "ALTER TABLE %1$s ADD CONSTRAINT %1$s_state_check CHECK (state IN ('in_progress',"
     " 'released', 'crashed', 'interrupted', 'completed'));"
     "CREATE INDEX %1$s_lease_idx ON %1$s (lease_until);",
     1, 1},
};

/* The rows a worker of that version left: completed keys (an hour old, as
 * the janitor sees them), a lapsed and a live lease of a worker that has
 * gone, and for five-state tables free keys with their counts. */
static void
fill_old_table(PGconn *db, const char *table, const struct shape *sh)
{
    char q[2048];
    snprintf(q, sizeof(q),
             "INSERT INTO %1$s (idempotency_key, state, owner, lease_until, payload_sha256,"
             " message_id, attempts, processed_at) VALUES"
             " ('done-1', 'completed', NULL, NULL, NULL, 'm-old', 1, now() - interval '1 hour'),"
             " ('done-2', 'completed', NULL, now() - interval '1 hour', decode(repeat('07', 32),"
             " 'hex'), 'm-old', 2, now() - interval '1 hour'),"
             " ('lapsed', 'in_progress', 'old-host:4242', now() - interval '1 minute', NULL,"
             " 'm-old', 1, now() - interval '2 minutes'),"
             " ('live', 'in_progress', 'old-host:4242', now() + interval '1 hour', NULL,"
             " 'm-old', 1, now())",
             table);
    sql(db, q);
    if (sh->five_states) {
        snprintf(q, sizeof(q),
                 "INSERT INTO %1$s (idempotency_key, state, lease_until, attempts) VALUES"
                 " ('freed', 'released', now(), 2), ('crashed', 'crashed', now(), 3)",
                 table);
        sql(db, q);
    }
}

static long
index_count(PGconn *db, const char *table, const char *suffix)
{
    char q[256];
    snprintf(q, sizeof(q), "SELECT count(*) FROM pg_indexes WHERE indexname = '%s%s'", table,
             suffix);
    return sql_long(db, q);
}

static void
test_migrate_shape(struct ctx *c, const struct shape *sh)
{
    char table[32], q[4096];
    snprintf(table, sizeof(table), "keys_%s", sh->rev);
    snprintf(q, sizeof(q), sh->ddl, table);
    sql(c->db, q);
    fill_old_table(c->db, table, sh);
    struct idem_store *s = open_store(c->dsn, table, "new-host:1");
    CHECK_INT(idem_migrate(s, err, sizeof(err)), 0);
    if (err[0] != '\0') {
        fprintf(stderr, "  %s: migrate: %s\n", sh->rev, err);
    }
    /* every layout's indexes are there: nothing to do at the next start */
    CHECK_INT(index_count(c->db, table, "_lease_idx"), sh->lease_layout);
    CHECK_INT(index_count(c->db, table, "_owner_idx") + index_count(c->db, table, "_free_idx"),
              sh->lease_layout ? 0 : 2);
    snprintf(q, sizeof(q),
             "SELECT count(*) FROM pg_constraint WHERE conrelid = '%s'::regclass"
             " AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%%interrupted%%'",
             table);
    CHECK_INT(sql_long(c->db, q), 1);
    CHECK_INT(idem_migrate(s, err, sizeof(err)), 0);

    /* completed keys are duplicates, with what they stored */
    struct idem_claim r = claim1(s, "done-1", "m-new", 7, 30);
    CHECK_INT(r.state, IDEM_COMPLETED);
    CHECK_INT(r.has_stored_sha256, 0);
    r = claim1(s, "done-2", "m-new", 7, 30);
    CHECK_INT(r.state, IDEM_COMPLETED);
    CHECK_INT(r.has_stored_sha256, 1);
    CHECK_INT(r.attempts, 2);
    /* a live lease of the old worker stays its own until it lapses */
    CHECK_INT(claim1(s, "live", "m-new", 7, 30).state, IDEM_BUSY);
    /* the leases' count: a version counting claims counted the lapsed one,
     * given back once (the second migrate above did not take another) */
    r = claim1(s, "lapsed", "m-new", 7, 30);
    CHECK_INT(r.state, IDEM_TAKEN_OVER);
    CHECK_INT(r.attempts, sh->five_states ? 1 : 0);
    CHECK_INT(complete1(s, "lapsed"), 1);
    CHECK_INT(claim1(s, "lapsed", "m-again", 7, 30).state, IDEM_COMPLETED);
    snprintf(q, sizeof(q),
             "UPDATE %s SET lease_until = now() - interval '1 second'"
             " WHERE idempotency_key = 'live'",
             table);
    sql(c->db, q);
    r = claim1(s, "live", "m-new", 7, 30);
    CHECK_INT(r.state, IDEM_TAKEN_OVER);
    CHECK_INT(r.attempts, sh->five_states ? 1 : 0);
    CHECK_INT(release1(s, "live", 1), 1); /* a state the old check did not know */
    if (sh->five_states) {
        r = claim1(s, "freed", "m-new", 7, 30);
        CHECK_INT(r.state, IDEM_CLAIMED);
        CHECK_INT(r.attempts, 2);
        r = claim1(s, "crashed", "m-new", 7, 30);
        CHECK_INT(r.state, IDEM_CRASHED);
        CHECK_INT(r.attempts, 3);
    }
    /* the janitor finds the old completed keys past the retention */
    long deleted = 0;
    CHECK_INT(idem_purge_completed(s, 600, 100, &deleted, err, sizeof(err)), 0);
    CHECK_INT(deleted, 2);
    idem_close(s);
}

/* etc/schema.sql, run by a DBA on the first twice's table (in a schema of
 * its own, which the file's unqualified names then mean), does what
 * idem_migrate does to it: the current check, and the claims given back. */
static void
test_schema_sql_on_first_table(struct ctx *c)
{
    char q[4096];
    sql(c->db, "SET client_min_messages = warning; CREATE SCHEMA dba; SET search_path = dba");
    snprintf(q, sizeof(q), shapes[0].ddl, "twice_idempotency");
    sql(c->db, q);
    sql(c->db, "INSERT INTO twice_idempotency (idempotency_key, state, owner, lease_until,"
               " attempts) VALUES ('running', 'in_progress', 'old:1', now(), 3),"
               " ('done', 'completed', NULL, NULL, 2)");
    char *ddl = read_file(schema_sql_path());
    CHECK(ddl != NULL);
    if (ddl != NULL) {
        sql(c->db, ddl);
        sql(c->db, ddl); /* again: nothing more */
    }
    CHECK_INT(sql_long(c->db, "SELECT attempts FROM twice_idempotency"
                              " WHERE idempotency_key = 'running'"),
              2);
    CHECK_INT(sql_long(c->db, "SELECT attempts FROM twice_idempotency"
                              " WHERE idempotency_key = 'done'"),
              2);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM pg_constraint WHERE conrelid ="
                              " 'twice_idempotency'::regclass AND contype = 'c'"
                              " AND pg_get_constraintdef(oid) LIKE '%interrupted%'"),
              1);
    free(ddl);
    sql(c->db, "DROP SCHEMA dba CASCADE; RESET search_path; RESET client_min_messages");
}

static void
test_migrate_shapes(struct ctx *c)
{
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        test_migrate_shape(c, &shapes[i]);
    }
    test_schema_sql_on_first_table(c);
}

/* CLAIMED, then BUSY for another owner with the holder's lease and message. */
static void
test_claim_busy(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    struct idem_store *b = open_store(c->dsn, NULL, "owner-b");
    unsigned char sha[32];
    memset(sha, 1, sizeof(sha));
    struct idem_claim cl[3] = {
        {.key = "k-1", .sha256 = sha, .message_id = "m-1", .lease_seconds = 30},
        {.key = "k-2", .sha256 = sha, .message_id = "m-2", .lease_seconds = 30},
        {.key = "k-3", .sha256 = NULL, .message_id = NULL, .lease_seconds = 30},
    };
    CHECK_INT(idem_claim_batch(a, cl, 3, err, sizeof(err)), 0);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(cl[i].state, IDEM_CLAIMED);
        CHECK_INT(cl[i].attempts, 0); /* no run counted yet */
    }
    struct idem_claim r = claim1(b, "k-2", "m-2b", 2, 60);
    CHECK_INT(r.state, IDEM_BUSY);
    CHECK(r.lease_left > 28.0 && r.lease_left <= 30.0);
    CHECK_STR(r.stored_message_id, "m-2");
    CHECK_INT(r.attempts, 0);
    /* the same owner claiming again (a duplicate delivered to us) is BUSY too,
     * for the same message as well: only the very claim that took a key may
     * take it again (sent again after its answer was lost: test_guard.py) */
    r = claim1(a, "k-1", "m-1", 1, 30);
    CHECK_INT(r.state, IDEM_BUSY);
    r = claim1(a, "k-1", "m-1", 1, 30);
    CHECK_INT(r.state, IDEM_BUSY);
    /* a key twice in one batch is refused */
    struct idem_claim dup[2] = {
        {.key = "d-1", .sha256 = sha, .message_id = "x", .lease_seconds = 30},
        {.key = "d-1", .sha256 = sha, .message_id = "y", .lease_seconds = 30},
    };
    CHECK_INT(idem_claim_batch(a, dup, 2, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "twice");
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM twice_idempotency WHERE"
                              " idempotency_key = 'd-1'"),
              0);
    idem_close(a);
    idem_close(b);
}

struct race_arg {
    const char *dsn;
    const char *key;
    struct idem_claim answer;
};

static void *
race_claim(void *arg)
{
    struct race_arg *a = arg;
    struct idem_store *s = open_store(a->dsn, NULL, "owner-late");
    a->answer = claim1(s, a->key, "m-late", 3, 30);
    idem_close(s);
    return NULL;
}

/*
 * A claim that starts while another one's insert of the same key is not
 * committed yet waits for it, and its snapshot cannot see that row: the
 * BUSY answer had no message id ("(message ?)" in match-recompute's logs,
 * five copies of one message claimed at once) and our own lease instead of
 * the holder's. It names the holder now, or says COMPLETED when the holder
 * committed a completed row.
 */
static void
test_claim_race_names_the_holder(struct ctx *c, const char *state, const char *key)
{
    PGconn *holder = PQconnectdb(c->dsn);
    char q[512];
    CHECK_INT(PQstatus(holder), CONNECTION_OK);
    sql(holder, "BEGIN");
    snprintf(q, sizeof(q),
             "INSERT INTO twice_idempotency (idempotency_key, state, owner, lease_until,"
             " payload_sha256, message_id) VALUES ('%s', '%s', %s, %s, NULL, 'm-holder')",
             key, state, strcmp(state, "completed") == 0 ? "NULL" : "'owner-holder'",
             strcmp(state, "completed") == 0 ? "NULL" : "now() + interval '20 seconds'");
    sql(holder, q);
    struct race_arg a = {c->dsn, key, {0}};
    pthread_t t;
    pthread_create(&t, NULL, race_claim, &a);
    /* commit only once the late claim waits on the holder's row */
    double until = now_mono() + 10;
    while (sql_long(c->db, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type ="
                           " 'Lock' AND datname = current_database()") == 0 &&
           now_mono() < until) {
        sleep_ms(10);
    }
    CHECK(now_mono() < until);
    sql(holder, "COMMIT");
    pthread_join(t, NULL);
    PQfinish(holder);
    CHECK_STR(a.answer.stored_message_id, "m-holder");
    if (strcmp(state, "completed") == 0) {
        CHECK_INT(a.answer.state, IDEM_COMPLETED);
    } else {
        CHECK_INT(a.answer.state, IDEM_BUSY);
        CHECK(a.answer.lease_left > 15.0 && a.answer.lease_left <= 20.0);
    }
}

/* An expired lease is taken over without counting the run that never
 * recorded itself; the old holder can no longer complete; the new one can,
 * with its count, and later claims see COMPLETED with its hash. */
static void
test_takeover_complete(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    struct idem_store *b = open_store(c->dsn, NULL, "owner-b");
    struct idem_claim r = claim1(a, "t-1", "m-a", 1, 1);
    CHECK_INT(r.state, IDEM_CLAIMED);
    sleep_ms(1200);
    r = claim1(b, "t-1", "m-b", 2, 30);
    CHECK_INT(r.state, IDEM_TAKEN_OVER);
    CHECK_INT(r.attempts, 0);
    CHECK_INT(complete1(a, "t-1"), 0);
    r = claim1(a, "t-1", "m-a", 1, 30);
    CHECK_INT(r.state, IDEM_BUSY);
    CHECK_INT(complete_runs(b, "t-1", 1), 1);
    CHECK_INT(complete1(b, "t-1"), 0);
    check_row(c->db, "t-1", "completed 1 -");
    r = claim1(a, "t-1", "m-c", 3, 30);
    CHECK_INT(r.state, IDEM_COMPLETED);
    CHECK_INT(r.has_stored_sha256, 1);
    unsigned char want[32];
    memset(want, 2, sizeof(want));
    CHECK(memcmp(r.stored_sha256, want, 32) == 0);
    CHECK_STR(r.stored_message_id, "m-b");
    /* no owner; the lease is left as it was (so that completion is HOT) */
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM twice_idempotency WHERE idempotency_key"
                              " = 't-1' AND owner IS NULL AND lease_until > now()"),
              1);
    idem_close(a);
    idem_close(b);
}

/* A gone worker's keys are free at once: the jobs that crashed it have their
 * run counted (crashed), the others were cut short (interrupted, not
 * counted); other owners' leases are untouched. */
static void
test_expire_owner(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "gone-a");
    struct idem_store *b = open_store(c->dsn, NULL, "live-b");
    struct idem_store *n = open_store(c->dsn, NULL, "next-n");
    CHECK_INT(claim1(a, "x-poison", "m-poison", 1, 300).state, IDEM_CLAIMED);
    CHECK_INT(claim1(a, "x-good", "m-good", 1, 300).state, IDEM_CLAIMED);
    CHECK_INT(claim1(b, "x-other", "m-other", 1, 300).state, IDEM_CLAIMED);
    long expired = -1;
    const struct idem_culprit poison[] = {{"m-poison", 1}};
    CHECK_INT(idem_expire_owner(n, "gone-a", 0, poison, 1, &expired, err, sizeof(err)), 0);
    CHECK_INT(expired, 2);
    check_row(c->db, "x-poison", "crashed 1 -");
    check_row(c->db, "x-good", "interrupted 0 -");
    struct idem_claim r = claim1(n, "x-poison", "m-poison", 1, 30);
    CHECK_INT(r.state, IDEM_CRASHED);
    CHECK_INT(r.attempts, 1);
    r = claim1(n, "x-good", "m-good", 1, 30);
    CHECK_INT(r.state, IDEM_INTERRUPTED);
    CHECK_INT(r.attempts, 0); /* cut short by the poison: not counted */
    CHECK_INT(claim1(n, "x-other", "m-other", 1, 30).state, IDEM_BUSY);
    /* crashed again by the poison: counted again; the bystander never */
    CHECK_INT(idem_expire_owner(a, "next-n", 0, poison, 1, &expired, err, sizeof(err)), 0);
    CHECK_INT(expired, 2);
    CHECK_INT(claim1(b, "x-poison", "m-poison", 1, 30).attempts, 2);
    CHECK_INT(claim1(b, "x-good", "m-good", 1, 30).attempts, 0);
    /* a crash whose job is unknown: every job then running counts (a run of
     * unknown number counts one) */
    const struct idem_culprit running[] = {{"m-good", 0}, {"m-other", -1}};
    CHECK_INT(idem_expire_owner(a, "live-b", 0, running, 2, &expired, err, sizeof(err)), 0);
    CHECK_INT(expired, 3);
    check_row(c->db, "x-good", "crashed 1 -");
    check_row(c->db, "x-other", "crashed 1 -");
    check_row(c->db, "x-poison", "interrupted 2 -");
    /* a worker that exited (a drain) holding keys: nothing counted */
    CHECK_INT(claim1(n, "x-good", "m-good", 1, 30).state, IDEM_CRASHED);
    CHECK_INT(idem_expire_owner(a, "next-n", 0, NULL, 0, &expired, err, sizeof(err)), 0);
    CHECK_INT(expired, 1);
    check_row(c->db, "x-good", "interrupted 1 -");
    CHECK_INT(idem_expire_owner(a, "nobody", 0, poison, 1, &expired, err, sizeof(err)), 0);
    CHECK_INT(expired, 0);
    /* a FIFO retry in place ran it twice more since its count was written:
     * the crash records the run's own number */
    CHECK_INT(claim1(a, "x-fifo", "m-fifo", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(release1(a, "x-fifo", 1), 1);
    CHECK_INT(claim1(a, "x-fifo", "m-fifo", 1, 30).attempts, 1);
    const struct idem_culprit fifo[] = {{"m-fifo", 4}};
    CHECK_INT(idem_expire_owner(n, "gone-a", 0, fifo, 1, &expired, err, sizeof(err)), 0);
    CHECK_INT(expired, 1);
    check_row(c->db, "x-fifo", "crashed 4 -");
    /* a lease that had lapsed before the worker went: the lease layout leaves
     * it to the next claim (taken over), unless the worker went before the
     * lease ended (gone_seconds); the partial layout frees it at once */
    struct idem_store *l = open_store(c->dsn, NULL, "gone-l");
    CHECK_INT(claim1(l, "x-lapsed", "m-lapsed", 1, 300).state, IDEM_CLAIMED);
    sql(c->db, "UPDATE twice_idempotency SET lease_until = now() - interval '10 minutes'"
               " WHERE idempotency_key = 'x-lapsed'");
    CHECK_INT(idem_expire_owner(n, "gone-l", 0, NULL, 0, &expired, err, sizeof(err)), 0);
    CHECK_INT(expired, c->partial ? 1 : 0);
    CHECK_INT(idem_expire_owner(n, "gone-l", 900, NULL, 0, &expired, err, sizeof(err)), 0);
    CHECK_INT(expired, c->partial ? 0 : 1);
    check_row(c->db, "x-lapsed", "interrupted 0 -");
    idem_close(l);
    idem_close(a);
    idem_close(b);
    idem_close(n);
}

/* Release touches only our in_progress rows: with a run counted the row is
 * released and keeps the count for the next claim; without one (a job
 * given back before it ran) it keeps the count it had, or goes when it has
 * none; a dead letter (0) forgets the key. Extend moves only our lease. */
static void
test_release_extend(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    struct idem_store *b = open_store(c->dsn, NULL, "owner-b");
    const char *key = "r-1";
    CHECK_INT(claim1(a, key, "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(release1(b, key, 1), 0);
    CHECK_INT(claim1(b, key, "m", 1, 30).state, IDEM_BUSY);
    CHECK_INT(release1(a, key, 1), 1); /* a RETRY: its run counted */
    check_row(c->db, key, "released 1 -");
    struct idem_claim r = claim1(b, key, "m", 1, 30);
    CHECK_INT(r.state, IDEM_CLAIMED);
    CHECK_INT(r.attempts, 1);
    check_row(c->db, key, "in_progress 1 owner-b");
    CHECK_INT(release1(b, key, -1), 1); /* given back before it ran */
    check_row(c->db, key, "released 1 -");
    CHECK_INT(claim1(a, key, "m", 1, 30).attempts, 1);
    CHECK_INT(release1(a, key, 0), 1); /* dead-lettered: forgotten */
    check_row(c->db, key, "");
    CHECK_INT(claim1(a, key, "m", 1, 30).attempts, 0);
    CHECK_INT(release1(a, key, -1), 1); /* never ran, nothing to keep */
    check_row(c->db, key, "");
    /* a batch: positions answered, a key not ours is not */
    CHECK_INT(claim1(a, "r-2", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(claim1(b, "r-3", "m", 1, 30).state, IDEM_CLAIMED);
    const char *two[] = {"r-3", "r-2"};
    int runs[] = {4, 3}, rel[2] = {-1, -1};
    CHECK_INT(idem_release_batch(a, two, runs, 2, rel, err, sizeof(err)), 0);
    CHECK_INT(rel[0], 0);
    CHECK_INT(rel[1], 1);
    check_row(c->db, "r-2", "released 3 -");
    check_row(c->db, "r-3", "in_progress 0 owner-b");

    const char *keys[2] = {"e-1", "e-missing"};
    int ext[2] = {-1, -1};
    CHECK_INT(claim1(a, "e-1", "m", 1, 5).state, IDEM_CLAIMED);
    CHECK_INT(idem_extend_batch(a, keys, 2, 100, ext, err, sizeof(err)), 0);
    CHECK_INT(ext[0], 1);
    CHECK_INT(ext[1], 0);
    r = claim1(b, "e-1", "m", 1, 30);
    CHECK_INT(r.state, IDEM_BUSY);
    CHECK(r.lease_left > 98.0 && r.lease_left <= 100.0);
    CHECK_INT(idem_extend_batch(b, keys, 1, 100, ext, err, sizeof(err)), 0);
    CHECK_INT(ext[0], 0);
    idem_close(a);
    idem_close(b);
}

/*
 * A key locked by a transactional handler is BUSY for every other claim,
 * at once, even when its lease has expired; our own heartbeat can still
 * extend it from another connection without waiting.
 */
static void
test_tx_lock_does_not_block(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    struct idem_store *hb = open_store(c->dsn, NULL, "owner-a"); /* a's heartbeat */
    struct idem_store *b = open_store(c->dsn, NULL, "owner-b");
    /* a claim that blocks fails after 5 s instead of hanging the test */
    sql(idem_pgconn(b), "SET statement_timeout = '5s'");
    sql(idem_pgconn(hb), "SET statement_timeout = '5s'");
    CHECK_INT(claim1(a, "x-live", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(claim1(a, "x-dead", "m", 1, 1).state, IDEM_CLAIMED);
    sleep_ms(1200);
    const char *keys[2] = {"x-live", "x-dead"};
    for (int i = 0; i < 2; i++) {
        CHECK_INT(idem_tx_begin(a, keys[i], err, sizeof(err)), 1);
        double t0 = now_mono();
        struct idem_claim r = claim1(b, keys[i], "m2", 2, 30);
        CHECK(now_mono() - t0 < 1.0);
        CHECK_INT(r.state, IDEM_BUSY);
        CHECK_STR(r.stored_message_id, "m");
        int ext = -1;
        t0 = now_mono();
        CHECK_INT(idem_extend_batch(hb, &keys[i], 1, 30, &ext, err, sizeof(err)), 0);
        CHECK(now_mono() - t0 < 1.0);
        CHECK_INT(ext, 1);
        CHECK_INT(idem_tx_rollback(a, err, sizeof(err)), 0);
    }
    /* a key that is not ours: 0, and the transaction is over */
    CHECK_INT(claim1(b, "x-theirs", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(idem_tx_begin(a, "x-theirs", err, sizeof(err)), 0);
    CHECK_INT(PQtransactionStatus(idem_pgconn(a)), PQTRANS_IDLE);
    idem_close(a);
    idem_close(hb);
    idem_close(b);
}

/* The handler's statements and the completion commit together, or neither. */
static void
test_tx_commit_rollback(struct ctx *c)
{
    sql(c->db, "CREATE TABLE effects (k TEXT)");
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    struct idem_store *b = open_store(c->dsn, NULL, "owner-b");
    CHECK_INT(claim1(a, "tx-1", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(idem_tx_begin(a, "tx-1", err, sizeof(err)), 1);
    sql(idem_pgconn(a), "INSERT INTO effects VALUES ('tx-1')");
    CHECK_INT(idem_tx_complete(a, "tx-1", 3, err, sizeof(err)), 0);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM effects WHERE k = 'tx-1'"), 1);
    check_row(c->db, "tx-1", "completed 3 -");
    CHECK_INT(claim1(b, "tx-1", "m", 1, 30).state, IDEM_COMPLETED);

    CHECK_INT(claim1(a, "tx-2", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(idem_tx_begin(a, "tx-2", err, sizeof(err)), 1);
    sql(idem_pgconn(a), "INSERT INTO effects VALUES ('tx-2')");
    CHECK_INT(idem_tx_rollback(a, err, sizeof(err)), 0);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM effects WHERE k = 'tx-2'"), 0);
    CHECK_INT(claim1(b, "tx-2", "m", 1, 30).state, IDEM_BUSY);

    /* a failed statement of the handler: nothing commits, the claim stays */
    CHECK_INT(idem_tx_begin(a, "tx-2", err, sizeof(err)), 1);
    sql(idem_pgconn(a), "INSERT INTO effects VALUES ('tx-2')");
    PQclear(PQexec(idem_pgconn(a), "INSERT INTO no_such_table VALUES (1)"));
    CHECK_INT(idem_tx_complete(a, "tx-2", 1, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "rolled back");
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM effects WHERE k = 'tx-2'"), 0);
    CHECK_INT(claim1(b, "tx-2", "m", 1, 30).state, IDEM_BUSY);
    CHECK_INT(PQtransactionStatus(idem_pgconn(a)), PQTRANS_IDLE);
    /* a deferred constraint that fails at COMMIT: -1, nothing committed */
    sql(c->db, "CREATE TABLE strict (v INT UNIQUE DEFERRABLE INITIALLY DEFERRED)");
    CHECK_INT(idem_tx_begin(a, "tx-2", err, sizeof(err)), 1);
    sql(idem_pgconn(a), "INSERT INTO strict VALUES (1), (1)");
    CHECK_INT(idem_tx_complete(a, "tx-2", 1, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "COMMIT");
    CHECK_INT(claim1(b, "tx-2", "m", 1, 30).state, IDEM_BUSY);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM strict"), 0);
    idem_close(a);
    idem_close(b);
}

#define CONC_KEYS   50
#define CONC_ROUNDS 10

struct conc_arg {
    const char *dsn;
    const char *owner;
    int reverse;
    pthread_barrier_t *barrier;
    enum idem_state state[CONC_ROUNDS][CONC_KEYS];
    int errors;
    char err[256];
};

/* The key at position i of a thread's list: the second thread has the same
 * batches of 10, each in the opposite order, so that both insert the same
 * keys at the same time in opposite orders (which deadlocks unless the
 * store inserts in a fixed order). */
static int
conc_key(int reverse, int i)
{
    return reverse ? i - i % 10 + 9 - i % 10 : i;
}

/* Claim every key of each round in batches of 10. */
static void *
conc_thread(void *arg)
{
    struct conc_arg *t = arg;
    struct idem_store *s = NULL;
    if (idem_open(t->dsn, NULL, t->owner, &s, t->err, sizeof(t->err)) != 0) {
        t->errors++;
    }
    for (int round = 0; round < CONC_ROUNDS; round++) {
        char keys[CONC_KEYS][32];
        struct idem_claim cl[CONC_KEYS];
        memset(cl, 0, sizeof(cl));
        for (int i = 0; i < CONC_KEYS; i++) {
            int k = conc_key(t->reverse, i);
            snprintf(keys[i], sizeof(keys[i]), "conc-%d-%02d", round, k);
            cl[i].key = keys[i];
            cl[i].message_id = t->owner;
            cl[i].lease_seconds = 30;
        }
        pthread_barrier_wait(t->barrier);
        for (int i = 0; s != NULL && i < CONC_KEYS; i += 10) {
            if (idem_claim_batch(s, cl + i, 10, t->err, sizeof(t->err)) != 0) {
                t->errors++;
            }
        }
        for (int i = 0; i < CONC_KEYS; i++) {
            int k = conc_key(t->reverse, i);
            t->state[round][k] = cl[i].state;
        }
    }
    idem_close(s);
    return NULL;
}

static void
test_concurrent_claims(struct ctx *c)
{
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    static struct conc_arg t1, t2;
    t1 = (struct conc_arg){.dsn = c->dsn, .owner = "conc-1", .barrier = &barrier};
    t2 = (struct conc_arg){.dsn = c->dsn, .owner = "conc-2", .reverse = 1, .barrier = &barrier};
    pthread_t p1, p2;
    pthread_create(&p1, NULL, conc_thread, &t1);
    pthread_create(&p2, NULL, conc_thread, &t2);
    pthread_join(p1, NULL);
    pthread_join(p2, NULL);
    pthread_barrier_destroy(&barrier);
    CHECK_INT(t1.errors, 0);
    CHECK_INT(t2.errors, 0);
    if (t1.errors || t2.errors) {
        fprintf(stderr, "  concurrent claims: %s / %s\n", t1.err, t2.err);
    }
    /* each key claimed by exactly one thread, and BUSY (never COMPLETED or
     * TAKEN_OVER) for the other */
    int once = 0, by1 = 0;
    for (int r = 0; r < CONC_ROUNDS; r++) {
        for (int k = 0; k < CONC_KEYS; k++) {
            enum idem_state s1 = t1.state[r][k], s2 = t2.state[r][k];
            once +=
                (s1 == IDEM_CLAIMED && s2 == IDEM_BUSY) || (s1 == IDEM_BUSY && s2 == IDEM_CLAIMED);
            by1 += s1 == IDEM_CLAIMED;
        }
    }
    CHECK_INT(once, CONC_ROUNDS * CONC_KEYS);
    printf("concurrent claims: %d of %d keys won by the first thread\n", by1,
           CONC_ROUNDS * CONC_KEYS);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM twice_idempotency"
                              " WHERE idempotency_key LIKE 'conc-%' AND attempts = 0"),
              CONC_ROUNDS * CONC_KEYS);
}

/* Make keys look older than the janitor's retention of an hour: their last
 * change and, when lease, their lease. */
static void
age(PGconn *db, const char *keys, int lease)
{
    char q[512];
    snprintf(q, sizeof(q),
             "UPDATE twice_idempotency SET processed_at = now() - interval '2 hours'%s"
             " WHERE idempotency_key IN (%s)",
             lease ? ", lease_until = now() - interval '2 hours'" : "", keys);
    sql(db, q);
}

/* The janitor deletes only completed keys, or free ones, older than the
 * retention, at most `limit` per call; never a key in progress under a live
 * lease. Rows without a lease (written by an older twice) are found too. In
 * the lease layout a key in progress whose lease ended a retention ago is
 * free (its worker went long ago); the partial layout keeps it. */
static void
test_purge(struct ctx *c)
{
    sql(c->db, "DELETE FROM twice_idempotency WHERE idempotency_key LIKE 'purge-%'");
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    char key[32];
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof(key), "purge-old-%d", i);
        CHECK_INT(claim1(a, key, "m", 1, 30).state, IDEM_CLAIMED);
        CHECK_INT(complete1(a, key), 1);
    }
    CHECK_INT(claim1(a, "purge-new", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(complete1(a, "purge-new"), 1);
    CHECK_INT(claim1(a, "purge-running", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(claim1(a, "purge-late", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(complete1(a, "purge-late"), 1);
    age(c->db, "'purge-old-0', 'purge-old-1', 'purge-old-2', 'purge-old-3', 'purge-running'", 1);
    sql(c->db, "UPDATE twice_idempotency SET lease_until = NULL WHERE idempotency_key"
               " = 'purge-old-4'");
    age(c->db, "'purge-old-4'", 0);
    /* its lease is old, but it was completed within the retention */
    sql(c->db, "UPDATE twice_idempotency SET lease_until = now() - interval '2 hours'"
               " WHERE idempotency_key = 'purge-late'");
    sql(c->db, "UPDATE twice_idempotency SET lease_until = now() + interval '30 seconds'"
               " WHERE idempotency_key = 'purge-running'");
    long counts[4] = {-1, -1, -1, -1};
    for (int i = 0; i < 4; i++) {
        CHECK_INT(idem_purge_completed(a, 3600, 2, &counts[i], err, sizeof(err)), 0);
    }
    CHECK_INT(counts[0], 2);
    CHECK_INT(counts[1], 2);
    CHECK_INT(counts[2], 1);
    CHECK_INT(counts[3], 0);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM twice_idempotency"
                              " WHERE idempotency_key LIKE 'purge-%'"),
              3);
    check_row(c->db, "purge-late", "completed 1 -");
    check_row(c->db, "purge-running", "in_progress 0 owner-a");
    long d = -1;
    CHECK_INT(idem_purge_completed(a, 3600, 0, &d, err, sizeof(err)), -1);
    /* free keys: released, crashed, interrupted */
    const struct idem_culprit culprit[] = {{"m-crash", 1}};
    CHECK_INT(claim1(a, "purge-released", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(release1(a, "purge-released", 2), 1);
    CHECK_INT(claim1(a, "purge-crashed", "m-crash", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(claim1(a, "purge-cut", "m-cut", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(claim1(a, "purge-fresh", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(release1(a, "purge-fresh", 1), 1);
    CHECK_INT(idem_expire_owner(a, "owner-a", 0, culprit, 1, &d, err, sizeof(err)), 0);
    check_row(c->db, "purge-running", "interrupted 0 -");
    CHECK_INT(claim1(a, "purge-stale", "m", 1, 30).state, IDEM_CLAIMED);
    age(c->db, "'purge-released', 'purge-crashed', 'purge-cut', 'purge-new', 'purge-stale'", 1);
    long total = 0;
    CHECK_INT(idem_purge_free(a, 3600, 2, &d, err, sizeof(err)), 0);
    CHECK_INT(d, 2);
    total += d;
    CHECK_INT(idem_purge_free(a, 3600, 2, &d, err, sizeof(err)), 0);
    total += d;
    CHECK_INT(idem_purge_free(a, 3600, 2, &d, err, sizeof(err)), 0);
    total += d;
    CHECK_INT(total, c->partial ? 3 : 4);
    CHECK_INT(d, 0);
    check_row(c->db, "purge-fresh", "released 1 -");
    check_row(c->db, "purge-new", "completed 1 -"); /* not a free key */
    check_row(c->db, "purge-stale", c->partial ? "in_progress 0 owner-a" : "");
    idem_close(a);
}

/* show, list (a prefix with LIKE's metacharacters means them literally),
 * forget. */
static void
test_key_ops(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    const char *keys[] = {"p%_x:1", "p%_x:2", "pa_x:3", "p%Ax:4", "pZZx:5"};
    for (int i = 0; i < 5; i++) {
        CHECK_INT(claim1(a, keys[i], "msg-p", 0xab, 30).state, IDEM_CLAIMED);
    }
    CHECK_INT(complete1(a, "p%_x:2"), 1);
    struct idem_record *r = NULL;
    size_t n = 0;
    CHECK_INT(idem_key_list(a, "p%_x", NULL, 10, &r, &n, err, sizeof(err)), 0);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(r[0].key, "p%_x:1");
        CHECK_STR(r[0].state, "in_progress");
        CHECK_STR(r[1].key, "p%_x:2");
        CHECK_STR(r[1].state, "completed");
    }
    idem_records_free(r, n);
    CHECK_INT(idem_key_list(a, "p%_x", "completed", 10, &r, &n, err, sizeof(err)), 0);
    CHECK_INT(n, 1);
    idem_records_free(r, n);
    CHECK_INT(idem_key_list(a, "p", NULL, 3, &r, &n, err, sizeof(err)), 0);
    CHECK_INT(n, 3);
    idem_records_free(r, n);
    CHECK_INT(idem_key_list(a, NULL, NULL, 0, &r, &n, err, sizeof(err)), 0);
    CHECK(n >= 5);
    idem_records_free(r, n);
    CHECK_INT(idem_key_list(a, NULL, "done", 0, &r, &n, err, sizeof(err)), -1);
    CHECK_INT(release1(a, "pa_x:3", 2), 1);
    CHECK_INT(idem_key_list(a, "pa_", "released", 0, &r, &n, err, sizeof(err)), 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_STR(r[0].key, "pa_x:3");
        CHECK_INT(r[0].attempts, 2);
        CHECK(r[0].owner == NULL);
    }
    idem_records_free(r, n);

    struct idem_record rec;
    time_t now = time(NULL);
    CHECK_INT(idem_key_show(a, "p%_x:1", &rec, err, sizeof(err)), 1);
    CHECK_STR(rec.key, "p%_x:1");
    CHECK_STR(rec.state, "in_progress");
    CHECK_STR(rec.owner, "owner-a");
    CHECK_STR(rec.message_id, "msg-p");
    CHECK_STR(rec.sha256_hex, "abababababababababababababababababababababababababababababababab");
    CHECK_INT(rec.attempts, 0);
    CHECK(rec.lease_until >= now + 25 && rec.lease_until <= now + 31);
    CHECK(rec.created_at >= now - 60 && rec.created_at <= now + 1);
    idem_record_clear(&rec);
    CHECK_INT(idem_key_show(a, "p%_x:2", &rec, err, sizeof(err)), 1);
    CHECK(rec.owner == NULL);
    CHECK_INT(rec.lease_until, 0);
    idem_record_clear(&rec);
    CHECK_INT(idem_key_forget(a, "p%_x:1", err, sizeof(err)), 1);
    CHECK_INT(idem_key_forget(a, "p%_x:1", err, sizeof(err)), 0);
    CHECK_INT(idem_key_show(a, "p%_x:1", &rec, err, sizeof(err)), 0);
    idem_close(a);
}

/* Keys and message ids that need quoting in an array literal, and table
 * names that need quoting as identifiers. */
static void
test_quoting(struct ctx *c)
{
    const char *tables[] = {"Weird Name", "we\"ird; DROP TABLE effects",
                            "odd@T@I$twice$'; DROP TABLE effects; --"};
    /* Array literal specials, alone, doubled and last; "NULL"; blanks; UTF-8; empty. */
    const char *keys[] = {"a\"b\\c,{d} e", "NULL", " spaced ", "ключ", "", "\\\\\"\"", "tail\\"};
    enum { NK = sizeof(keys) / sizeof(keys[0]) };
    for (int t = 0; t < 3; t++) {
        struct idem_store *a = open_store(c->dsn, tables[t], "owner-a");
        CHECK_INT(idem_migrate(a, err, sizeof(err)), 0);
        struct idem_claim cl[NK];
        memset(cl, 0, sizeof(cl));
        for (int i = 0; i < NK; i++) {
            cl[i].key = keys[i];
            cl[i].message_id = keys[(i + 1) % NK];
            cl[i].lease_seconds = i == 2 || i == 3 ? 300 : 30; /* each claim its own lease */
        }
        CHECK_INT(idem_claim_batch(a, cl, NK, err, sizeof(err)), 0);
        if (t == 0) {
            CHECK_INT(sql_long(c->db, "SELECT count(*) FROM \"Weird Name\" WHERE lease_until > "
                                      "now() + interval '200 seconds'"),
                      2);
        }
        int done[NK] = {0}, runs[NK] = {1, 1, 1, 1, 1, 1, 1};
        CHECK_INT(idem_release_batch(a, keys, runs, NK, done, err, sizeof(err)), 0);
        CHECK_INT(idem_claim_batch(a, cl, NK, err, sizeof(err)), 0);
        CHECK_INT(cl[0].state, IDEM_CLAIMED);
        CHECK_INT(cl[0].attempts, 1);
        runs[0] = 2;
        CHECK_INT(idem_complete_batch(a, keys, runs, NK, done, err, sizeof(err)), 0);
        CHECK_INT(idem_claim_batch(a, cl, NK, err, sizeof(err)), 0);
        for (int i = 0; i < NK; i++) {
            CHECK_INT(done[i], 1);
            CHECK_INT(cl[i].state, IDEM_COMPLETED);
            CHECK_STR(cl[i].stored_message_id, keys[(i + 1) % NK]);
            struct idem_record rec;
            CHECK_INT(idem_key_show(a, keys[i], &rec, err, sizeof(err)), 1);
            CHECK_STR(rec.key, keys[i]);
            idem_record_clear(&rec);
        }
        idem_close(a);
    }
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM \"Weird Name\""), NK);
    CHECK_INT(sql_long(c->db, "SELECT count(*) FROM pg_class WHERE relname = 'effects'"), 1);
}

/* Connection errors say what failed and never quote the password. */
static void
test_connect_errors(struct ctx *c)
{
    struct idem_store *s = NULL;
    const char *down = "postgresql://twice:S3cret-pw-XYZ@127.0.0.1:1/twice?connect_timeout=3";
    CHECK_INT(idem_open(down, NULL, "w", &s, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "cannot connect to PostgreSQL");
    CHECK(strstr(err, "S3cret-pw-XYZ") == NULL);
    CHECK(s != NULL);
    CHECK_INT(idem_connected(s), 0);
    CHECK_INT(idem_reconnect(s, err, sizeof(err)), -1);
    CHECK(strstr(err, "S3cret-pw-XYZ") == NULL);
    idem_close(s);

    char *wrong = dsn_with(c->admin, PQdb(c->db), "Wr0ng-pw-QQQ");
    CHECK_INT(idem_open(wrong, NULL, "w", &s, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "password authentication failed");
    CHECK(strstr(err, "Wr0ng-pw-QQQ") == NULL);
    idem_close(s);
    free(wrong);

    s = (struct idem_store *) 1;
    CHECK_INT(idem_open("host=127.0.0.1 password=abc def", NULL, "w", &s, err, sizeof(err)), -1);
    CHECK(s == NULL);
    CHECK(strstr(err, "def") == NULL && strstr(err, "abc") == NULL);
    CHECK_CONTAINS(err, "not a valid");
}

/*
 * After a completion whose answer was lost (it may have committed): a key
 * reads completed by the message whose job completed it, and by no other;
 * a key still in progress (the completion did not commit) or unknown reads
 * as not completed.
 */
static void
test_completed_by(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    CHECK_INT(claim1(a, "cb-1", "m-1", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(claim1(a, "cb-2", "m-2", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(complete1(a, "cb-1"), 1);
    const char *keys[] = {"cb-1", "cb-1", "cb-2", "cb-none", "cb-1"};
    const char *ids[] = {"m-1", "m-2", "m-2", "m-1", NULL};
    int got[5] = {-1, -1, -1, -1, -1};
    CHECK_INT(idem_completed_by(a, keys, ids, 5, got, err, sizeof(err)), 0);
    static const int want[5] = {1, 0, 0, 0, 0};
    for (int i = 0; i < 5; i++) {
        CHECK_INT(got[i], want[i]);
    }
    idem_close(a);
}

static char *prepared_named(PGconn *conn, const char *prefix, char **text);

/* The first column (the answer's letter) of the claim statement text run
 * on conn for one key of message m with owner-a's token and its lost ones
 * (an int[] literal); "" on error (caller frees). */
static char *
claim_letter_lost(PGconn *conn, const char *text, const char *key, const char *m,
                  const char *token, const char *lost)
{
    char keys[128], msgs[128];
    snprintf(keys, sizeof(keys), "{%s}", key);
    snprintf(msgs, sizeof(msgs), "{%s}", m);
    const char *params[] = {keys, "{NULL}", msgs, "{30}", "owner-a", token, lost};
    PGresult *res = PQexecParams(conn, text, 7, NULL, params, NULL, NULL, 0);
    int ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "  claim: %s", PQerrorMessage(conn));
    }
    char *letter = strdup(ok ? PQgetvalue(res, 0, 0) : "");
    PQclear(res);
    return letter;
}

/* claim_letter_lost with no lost tokens. */
static char *
claim_letter(PGconn *conn, const char *text, const char *key, const char *m, const char *token)
{
    return claim_letter_lost(conn, text, key, m, token, "{}");
}

/*
 * A claim is idempotent (idem.c, sql_claim): the same statement sent again
 * - its answer lost with its connection, though it committed - answers
 * claimed (C) for the keys it took, whatever their row was before, and keeps
 * their count; any other claim of the same owner (another token), or of the
 * same statement for another message, still finds the key busy (B). A claim
 * that names a token among its lost ones (idem_lost: a claim whose answer was
 * lost for good) takes the key that token's claim took for the same
 * message, and only that.
 */
static void
test_claim_is_idempotent(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    CHECK_INT(claim1(a, "ip-0", "m", 1, 30).state, IDEM_CLAIMED);
    char *text = NULL;
    free(prepared_named(idem_pgconn(a), "twice_claim_", &text));
    static const char *const want[][2] = {
        /* token, message: answer */
        {"4242", "m-1"}, {"4242", "m-1"}, {"4243", "m-1"}, {"4242", "m-2"}, {"4242", "m-1"},
    };
    static const char answers[] = "CCBBC";
    for (size_t i = 0; i < sizeof(answers) - 1; i++) {
        char *got = claim_letter(c->db, text, "ip-1", want[i][1], want[i][0]);
        char exp[2] = {answers[i], '\0'};
        CHECK_STR(got, exp);
        free(got);
    }
    /* a released key with runs counted: claimed again, its count kept */
    CHECK_INT(release1(a, "ip-1", 2), 1);
    for (int i = 0; i < 2; i++) {
        char *got = claim_letter(c->db, text, "ip-1", "m-3", "77");
        CHECK_STR(got, "C");
        free(got);
    }
    check_row(c->db, "ip-1", "in_progress 2 owner-a");
    static const char *const lost[][4] = {
        /* token, lost tokens, message: answer */
        {"88", "{}", "m-3", "B"},     {"88", "{5,78}", "m-3", "B"}, {"88", "{5,77}", "m-4", "B"},
        {"88", "{5,77}", "m-3", "C"}, {"99", "{77}", "m-3", "B"},   {"99", "{88}", "m-3", "C"},
    };
    for (size_t i = 0; i < sizeof(lost) / sizeof(lost[0]); i++) {
        char *got = claim_letter_lost(c->db, text, "ip-1", lost[i][2], lost[i][0], lost[i][1]);
        CHECK_STR(got, lost[i][3]);
        free(got);
    }
    check_row(c->db, "ip-1", "in_progress 2 owner-a");
    /* the lease is exact: the token is taken off processed_at */
    CHECK_INT(sql_long(c->db, "SELECT (extract(epoch FROM lease_until - now()) <= 30)::int"
                              " FROM twice_idempotency WHERE idempotency_key = 'ip-1'"),
              1);
    free(text);
    idem_close(a);
}

/* Have the server end the store's connection (as an operator, a pooler or a
 * failover does). */
static void
terminate(struct ctx *c, struct idem_store *s)
{
    char q[128];
    snprintf(q, sizeof(q), "SELECT pg_terminate_backend(%d)", PQbackendPID(idem_pgconn(s)));
    sql(c->admin, q);
    sleep_ms(300);
}

/* After the server drops our connection: a claim reconnects and claims at
 * once (idem_claim_batch); another statement fails (-1, not connected),
 * reconnect, and the prepared statements work again. */
static void
test_reconnect(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    CHECK_INT(claim1(a, "rc-1", "m", 1, 30).state, IDEM_CLAIMED);
    terminate(c, a);
    struct idem_claim r = {.key = "rc-2", .message_id = "m", .lease_seconds = 30};
    CHECK_INT(idem_claim_batch(a, &r, 1, err, sizeof(err)), 0);
    CHECK_INT(r.state, IDEM_CLAIMED);
    CHECK_INT(idem_connected(a), 1);
    terminate(c, a);
    const char *keys[] = {"rc-2"};
    CHECK_INT(idem_extend_batch(a, keys, 1, 30, NULL, err, sizeof(err)), -1);
    CHECK_INT(idem_connected(a), 0);
    CHECK_INT(idem_reconnect(a, err, sizeof(err)), 0);
    CHECK_INT(idem_connected(a), 1);
    CHECK_INT(complete1(a, "rc-2"), 1);
    CHECK_INT(complete1(a, "rc-1"), 1);
    /* a plugin that drops every prepared statement on the shared connection */
    sql(idem_pgconn(a), "DEALLOCATE ALL");
    CHECK_INT(claim1(a, "rc-3", "m", 1, 30).state, IDEM_CLAIMED);
    /* ... inside a transactional handler's transaction: the store's
     * statements there are unnamed, so the job still completes */
    CHECK_INT(idem_tx_begin(a, "rc-3", err, sizeof(err)), 1);
    sql(idem_pgconn(a), "DEALLOCATE ALL");
    CHECK_INT(idem_tx_complete(a, "rc-3", 1, err, sizeof(err)), 0);
    CHECK_INT(claim1(a, "rc-3", "m", 1, 30).state, IDEM_COMPLETED);
    idem_close(a);
}

/* The value of a connection's option keyword ("" when unset; caller frees). */
static char *
conn_option(PGconn *conn, const char *keyword)
{
    char *v = NULL;
    PQconninfoOption *opts = PQconninfo(conn);
    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++) {
        if (strcmp(o->keyword, keyword) == 0) {
            v = strdup(o->val != NULL ? o->val : "");
        }
    }
    PQconninfoFree(opts);
    return v != NULL ? v : strdup("");
}

/* The store's connection defaults (idem.c: connect_dsn), which the dsn overrides:
 * a connection whose bytes go unacknowledged 25 s (a host gone) is ended. */
static void
test_connection_defaults(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    char *v = conn_option(idem_pgconn(a), "tcp_user_timeout");
    CHECK_STR(v, "25000");
    free(v);
    v = conn_option(idem_pgconn(a), "keepalives_idle");
    CHECK_STR(v, "10");
    free(v);
    idem_close(a);
    char *dsn = malloc(strlen(c->dsn) + 32);
    sprintf(dsn, "%s tcp_user_timeout=7000", c->dsn);
    a = open_store(dsn, NULL, "owner-a");
    v = conn_option(idem_pgconn(a), "tcp_user_timeout");
    CHECK_STR(v, "7000");
    free(v);
    idem_close(a);
    free(dsn);
}

/* A store's wait (idem_set_wait): how often it ticked, and from which tick on
 * it says to give the statement up (0: never). */
struct ticks {
    int n;
    int stop_at;
};

static int
count_tick(void *arg)
{
    struct ticks *t = arg;
    t->n++;
    return t->stop_at > 0 && t->n >= t->stop_at;
}

/* A second connection that holds the row of key FOR UPDATE until released:
 * a statement of the store on that row waits, unanswered, as on a server
 * that stopped answering. */
static PGconn *
lock_row(struct ctx *c, const char *key)
{
    PGconn *l = PQconnectdb(c->dsn);
    CHECK_INT(PQstatus(l), CONNECTION_OK);
    sql(l, "BEGIN");
    const char *params[] = {key};
    PGresult *res = PQexecParams(l,
                                 "SELECT 1 FROM twice_idempotency WHERE idempotency_key = $1"
                                 " FOR UPDATE",
                                 1, NULL, params, NULL, NULL, 0);
    CHECK_INT(PQntuples(res), 1);
    PQclear(res);
    return l;
}

/* Reconnect a store whose statement was given up (as the acker does). */
static void
reconnect_poll(struct idem_store *s)
{
    int got = 0;
    for (int i = 0; i < 100 && got == 0; i++) {
        got = idem_reconnect_poll(s, 100, err, sizeof(err));
    }
    CHECK_INT(got, 1);
}

/*
 * A statement that goes unanswered on an established connection (here it
 * waits for a row lock; a frozen server or pooler looks the same to the
 * client) does not hold a store that waits (idem_set_wait): its tick is
 * called while it waits, and past answer_ms, or when the tick says so, it is
 * given up, the connection ended, and the call fails as for a dropped
 * connection (unreachable: tried again later). A COMMIT given up so is
 * outbox_complete_batch's -2: it may commit after all (here it does).
 */
static void
test_statement_given_up(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    struct ticks t = {0, 0};
    idem_set_wait(a, 600, 50, count_tick, &t);
    CHECK_INT(claim1(a, "w-1", "m", 1, 30).state, IDEM_CLAIMED);
    const char *keys[] = {"w-1"};
    int ext = -1;
    CHECK_INT(idem_extend_batch(a, keys, 1, 30, &ext, err, sizeof(err)), 0);
    CHECK_INT(ext, 1);

    PGconn *l = lock_row(c, "w-1");
    t.n = 0;
    double t0 = now_mono();
    CHECK_INT(idem_extend_batch(a, keys, 1, 30, &ext, err, sizeof(err)), -1);
    double took = now_mono() - t0;
    CHECK(took >= 0.55 && took < 3.0);
    CHECK(t.n >= 5);
    CHECK(strstr(err, "no answer from PostgreSQL within 1 s: the connection is given up") != NULL);
    CHECK_INT(idem_unreachable(a), 1);
    CHECK_INT(idem_connected(a), 0);
    reconnect_poll(a);
    /* the tick gives it up, long before answer_ms */
    t.n = 0;
    t.stop_at = 2;
    t0 = now_mono();
    CHECK_INT(idem_extend_batch(a, keys, 1, 30, &ext, err, sizeof(err)), -1);
    CHECK(now_mono() - t0 < 0.5);
    CHECK_INT(t.n, 2);
    CHECK(strstr(err, "given up unanswered") != NULL);
    CHECK_INT(idem_unreachable(a), 1);
    sql(l, "ROLLBACK");
    PQfinish(l);
    reconnect_poll(a);
    t.stop_at = 0;
    CHECK_INT(idem_extend_batch(a, keys, 1, 30, &ext, err, sizeof(err)), 0);
    CHECK_INT(ext, 1);

    /* a COMMIT that goes unanswered: a deferred trigger sleeps in it */
    sql(c->db, "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS"
               " $$BEGIN PERFORM pg_sleep(1.5); RETURN NULL; END$$");
    sql(c->db, "CREATE CONSTRAINT TRIGGER slow_commit AFTER UPDATE ON twice_idempotency"
               " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW"
               " WHEN (NEW.idempotency_key = 'w-1') EXECUTE FUNCTION slow_commit()");
    struct outbox_staged st = {0};
    struct outbox_msg m = {.queue = strdup("q"), .url = strdup("http://q"), .body = strdup("{}")};
    CHECK_INT(outbox_stage(&st, &m), 0);
    struct outbox_job job = {.key = "w-1", .source_queue = "q", .plugin = "p", .staged = &st};
    int runs = 1, done = -1;
    CHECK_INT(outbox_complete_batch(a, "twice_idempotency", keys, &runs, &job, 1, &done, err,
                                    sizeof(err)),
              -2);
    CHECK_INT(done, 0);
    CHECK(strstr(err, "COMMIT") != NULL && strstr(err, "given up") != NULL);
    CHECK_INT(idem_unreachable(a), 1);
    sleep_ms(2500); /* the server went on: it committed (1.5 s after the COMMIT) */
    check_row(c->db, "w-1", "completed 1 -");
    sql(c->db, "DROP TRIGGER slow_commit ON twice_idempotency");
    sql(c->db, "DROP FUNCTION slow_commit()");
    outbox_staged_clear(&st);
    idem_close(a);
}

/* The name of the one prepared statement on conn whose name starts with
 * prefix ("" when none; caller frees); *text gets its SQL (caller frees). */
static char *
prepared_named(PGconn *conn, const char *prefix, char **text)
{
    const char *params[] = {prefix};
    PGresult *res = PQexecParams(conn,
                                 "SELECT name, statement, count(*) OVER () FROM"
                                 " pg_prepared_statements WHERE starts_with(name, $1)",
                                 1, NULL, params, NULL, NULL, 0);
    int one = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
    CHECK(one);
    char *name = strdup(one ? PQgetvalue(res, 0, 0) : "");
    if (text != NULL) {
        *text = strdup(one ? PQgetvalue(res, 0, 1) : "");
    }
    PQclear(res);
    return name;
}

/*
 * The hot-path statements behind a pooler (idem_stmt.c): named for a hash of
 * their text, so two tables never share a name; prepared only when used; a
 * name that another client prepared on the same server connection (the same
 * text) is used, not an error; and a statement that is gone is prepared again.
 */
static void
test_statement_names(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    struct idem_store *b = open_store(c->dsn, "Weird Name", "owner-b");
    CHECK_INT(claim1(a, "sn-1", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(claim1(b, "sn-1", "m", 1, 30).state, IDEM_CLAIMED);
    char *text = NULL;
    char *na = prepared_named(idem_pgconn(a), "twice_claim_", &text);
    char *nb = prepared_named(idem_pgconn(b), "twice_claim_", NULL);
    CHECK(strlen(na) == strlen("twice_claim_") + 24);
    CHECK(strcmp(na, nb) != 0);
    CHECK(strstr(text, "\"twice_idempotency\"") != NULL);
    /* nothing prepared that this connection has not run */
    CHECK_INT(sql_long(idem_pgconn(a), "SELECT count(*) FROM pg_prepared_statements"), 1);

    /* a new server connection where another client prepared our statement */
    CHECK_INT(idem_reconnect(a, err, sizeof(err)), 0);
    PGresult *res = PQprepare(idem_pgconn(a), na, text, 0, NULL);
    CHECK_INT(PQresultStatus(res), PGRES_COMMAND_OK);
    PQclear(res);
    CHECK_INT(claim1(a, "sn-2", "m", 1, 30).state, IDEM_CLAIMED);
    CHECK_INT(claim1(a, "sn-1", "m", 1, 30).state, IDEM_BUSY);
    free(prepared_named(idem_pgconn(a), "twice_claim_", NULL));

    /* a new server connection where it is missing */
    sql(idem_pgconn(b), "DEALLOCATE ALL");
    CHECK_INT(complete1(b, "sn-1"), 1);
    CHECK_INT(claim1(b, "sn-1", "m", 1, 30).state, IDEM_COMPLETED);
    char *nb2 = prepared_named(idem_pgconn(b), "twice_claim_", NULL);
    CHECK_STR(nb2, nb);
    free(nb2);
    free(na);
    free(nb);
    free(text);
    idem_close(a);
    idem_close(b);
}

/* Shared buffers that one run of the claim statement `name` (prepared on
 * conn) touches for ten new keys, from EXPLAIN (ANALYZE, BUFFERS). */
static long
claim_buffers(PGconn *conn, const char *name, int round)
{
    char q[1024];
    int n = snprintf(q, sizeof(q), "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE %s('{", name);
    for (int i = 0; i < 10; i++) {
        n += snprintf(q + n, sizeof(q) - (size_t) n, "%s\"bf-%d-%d\"", i ? "," : "", round, i);
    }
    snprintf(q + n, sizeof(q) - (size_t) n,
             "}', '{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}', '{m,m,m,m,m,m,m,m,m,m}',"
             " '{30,30,30,30,30,30,30,30,30,30}', 'owner-a', 1, '{}')");
    char *plan = sql_value(conn, q);
    const char *params[] = {plan};
    PGresult *res = PQexecParams(conn,
                                 "SELECT (($1::json)->0->'Plan'->>'Shared Hit Blocks')::bigint +"
                                 " (($1::json)->0->'Plan'->>'Shared Read Blocks')::bigint",
                                 1, NULL, params, NULL, NULL, 0);
    long blocks = PQresultStatus(res) == PGRES_TUPLES_OK ? atol(PQgetvalue(res, 0, 0)) : -1;
    PQclear(res);
    free(plan);
    return blocks;
}

/*
 * A claim of new keys reads what it writes and no more, however many keys
 * are in flight: in a table of 20,000 completed keys whose statistics say
 * nothing is in progress (as after a burst, before autovacuum analyses
 * again), 20,000 in-progress rows cost a claim nothing. Before issue 19 the
 * takeover part scanned them all through the owner index (520 buffers
 * against 100 here; its cost grew with the keys in flight). Counted in
 * buffers, not timed.
 */
static void
test_claim_ignores_keys_in_flight(struct ctx *c)
{
    sql(c->db, "DELETE FROM twice_idempotency");
    sql(c->db, "INSERT INTO twice_idempotency (idempotency_key, state, attempts)"
               " SELECT 'done-' || g, 'completed', 1 FROM generate_series(1, 20000) g");
    sql(c->db, "VACUUM ANALYZE twice_idempotency");
    struct idem_store *a = open_store(c->dsn, NULL, "owner-a");
    sql(idem_pgconn(a), "SET plan_cache_mode = force_generic_plan");
    CHECK_INT(claim1(a, "bf-warm", "m", 1, 30).state, IDEM_CLAIMED);
    char *name = prepared_named(idem_pgconn(a), "twice_claim_", NULL);
    long quiet = claim_buffers(idem_pgconn(a), name, 1);
    sql(c->db, "INSERT INTO twice_idempotency (idempotency_key, state, owner, lease_until,"
               " attempts) SELECT 'fl-' || g, 'in_progress', 'owner-' || (g % 7),"
               " now() + interval '1 hour', 0 FROM generate_series(1, 20000) g");
    long busy = claim_buffers(idem_pgconn(a), name, 2);
    CHECK(quiet > 0 && busy > 0);
    CHECK(busy < quiet + 60);
    if (!(busy < quiet + 60)) {
        fprintf(stderr, "  claim of 10 new keys: %ld buffers, %ld with 20,000 keys in flight\n",
                quiet, busy);
    }
    sql(c->db, "DELETE FROM twice_idempotency WHERE idempotency_key LIKE 'fl-%'"
               " OR idempotency_key LIKE 'done-%'");
    free(name);
    idem_close(a);
}

static void
drop_databases(PGconn *admin, const char *name)
{
    char q[256];
    snprintf(q, sizeof(q), "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    sql(admin, q);
    snprintf(q, sizeof(q), "DROP DATABASE IF EXISTS %s_2 WITH (FORCE)", name);
    sql(admin, q);
    snprintf(q, sizeof(q), "DROP DATABASE IF EXISTS %s_3 WITH (FORCE)", name);
    sql(admin, q);
}

/* Completions in the lease layout are HOT updates: no index entries. 200
 * keys fill several pages, so without the free half of each page most
 * completions would have to move their row. The counters are written when
 * the store's backend ends. */
static void
test_completion_is_hot(struct ctx *c)
{
    struct idem_store *a = open_store(c->dsn, "hot_keys", "owner-a");
    CHECK_INT(idem_migrate(a, err, sizeof(err)), 0);
    char key[32];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "hot-%d", i);
        CHECK_INT(claim1(a, key, "m", 1, 30).state, IDEM_CLAIMED);
    }
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "hot-%d", i);
        CHECK_INT(complete1(a, key), 1);
    }
    idem_close(a);
    long upd = 0, hot = 0;
    for (int tries = 0; tries < 100 && upd < 200; tries++) {
        usleep(50000);
        sql(c->db, "SELECT pg_stat_clear_snapshot()");
        upd = sql_long(c->db, "SELECT n_tup_upd FROM pg_stat_user_tables"
                              " WHERE relname = 'hot_keys'");
        hot = sql_long(c->db, "SELECT n_tup_hot_upd FROM pg_stat_user_tables"
                              " WHERE relname = 'hot_keys'");
    }
    CHECK_INT(upd, 200);
    CHECK_INT(hot, 200);
}

/* The same behaviour on a table of the partial layout: created before the
 * lease layout (two columns), then migrated. */
static void
test_partial_layout(struct ctx *c, const char *name)
{
    char q[256];
    snprintf(q, sizeof(q), "CREATE DATABASE %s_3", name);
    sql(c->admin, q);
    snprintf(q, sizeof(q), "%s_3", name);
    struct ctx p = {.admin = c->admin, .dsn = dsn_with(c->admin, q, NULL), .partial = 1};
    p.db = PQconnectdb(p.dsn);
    CHECK_INT(PQstatus(p.db), CONNECTION_OK);
    sql(p.db, "CREATE TABLE twice_idempotency (idempotency_key TEXT PRIMARY KEY,"
              " processed_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    struct idem_store *s = open_store(p.dsn, NULL, "migrator");
    CHECK_INT(idem_migrate(s, err, sizeof(err)), 0);
    idem_close(s);
    check_partial_layout(p.db, "twice_idempotency");
    test_claim_busy(&p);
    test_takeover_complete(&p);
    test_expire_owner(&p);
    test_release_extend(&p);
    test_purge(&p);
    PQfinish(p.db);
    free(p.dsn);
}

int
main(void)
{
    const char *dsn = getenv("TWICE_TEST_PGDSN");
    if (dsn == NULL || *dsn == '\0') {
        fprintf(stderr, "itest-idem: TWICE_TEST_PGDSN is not set (a libpq URI to a database "
                        "whose role may CREATE DATABASE; see scripts/)\n");
        return 1;
    }
    struct ctx c = {0};
    c.admin = PQconnectdb(dsn);
    PQsetNoticeProcessor(c.admin, quiet, NULL);
    if (PQstatus(c.admin) != CONNECTION_OK) {
        fprintf(stderr, "itest-idem: cannot connect to TWICE_TEST_PGDSN: %s",
                PQerrorMessage(c.admin));
        PQfinish(c.admin);
        return 1;
    }
    char name[64], q[256];
    snprintf(name, sizeof(name), "twice_itest_idem_%ld", (long) getpid());
    drop_databases(c.admin, name);
    snprintf(q, sizeof(q), "CREATE DATABASE %s", name);
    sql(c.admin, q);
    snprintf(q, sizeof(q), "CREATE DATABASE %s_2", name);
    sql(c.admin, q);
    c.dsn = dsn_with(c.admin, name, NULL);
    snprintf(q, sizeof(q), "%s_2", name);
    c.dsn2 = dsn_with(c.admin, q, NULL);
    c.db = PQconnectdb(c.dsn);
    CHECK_INT(PQstatus(c.db), CONNECTION_OK);

    test_migrate_and_schema_sql(&c);
    test_migrate_concurrently(&c);
    test_migrate_classic(&c);
    test_migrate_older_version(&c);
    test_migrate_shapes(&c);
    test_claim_busy(&c);
    test_claim_race_names_the_holder(&c, "in_progress", "race-busy");
    test_claim_race_names_the_holder(&c, "completed", "race-done");
    test_takeover_complete(&c);
    test_expire_owner(&c);
    test_release_extend(&c);
    test_tx_lock_does_not_block(&c);
    test_tx_commit_rollback(&c);
    test_concurrent_claims(&c);
    test_purge(&c);
    test_completion_is_hot(&c);
    test_partial_layout(&c, name);
    test_key_ops(&c);
    test_quoting(&c);
    test_connect_errors(&c);
    test_reconnect(&c);
    test_connection_defaults(&c);
    test_statement_given_up(&c);
    test_claim_is_idempotent(&c);
    test_completed_by(&c);
    test_statement_names(&c);
    test_claim_ignores_keys_in_flight(&c);

    PQfinish(c.db);
    drop_databases(c.admin, name);
    PQfinish(c.admin);
    free(c.dsn);
    free(c.dsn2);
    return check_done("itest-idem");
}
