/*
 * test-match-recompute.c - the match-recompute plugin through the SDK mock
 * host. `unit`: keys, settings and refusals without a database, settings
 * read the same under a decimal-comma locale another plugin set.
 * `integration`: a real PostgreSQL (TWICE_TEST_PGDSN, required): the test
 * plays the host (BEGIN; handle; COMMIT on DONE, else ROLLBACK) in a
 * schema of its own made from etc/schema-matches.sql.
 */
#include "check.h"
#include "comma_locale.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <twice/mock.h>

static char schema[64];  /* unquoted, with a space and capitals on purpose */
static char qschema[80]; /* quoted */

static twice_mock *
new_mock(const char *schema_setting)
{
    char err[512];
    twice_mock *m = twice_mock_open(PLUGIN_PATH, err, sizeof(err));
    if (m == NULL) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    if (schema_setting != NULL) {
        twice_mock_set(m, "schema", schema_setting);
    }
    return m;
}

static twice_status
run(twice_mock *m, const char *body, void *db, twice_mock_job **out)
{
    *out = twice_mock_job_new(m, body);
    twice_mock_job_db(*out, db);
    return twice_mock_run(*out);
}

static void
test_unit(void)
{
    twice_mock *m = new_mock("");
    CHECK(twice_mock_init(m) != 0);
    CHECK_STR(twice_mock_error(m),
              "plugin 'match-recompute': setting 'schema': must be 1-63 bytes");
    twice_mock_free(m);

    m = new_mock(NULL);
    CHECK_INT(twice_mock_init(m), 0);
    CHECK(twice_mock_plugin(m)->flags & TWICE_FLAG_TRANSACTIONAL);
    twice_mock_job *j;
    CHECK_INT(run(m, "{\"type\":\"match-recompute\",\"roleId\":7,\"roleVersion\":3}", NULL, &j),
              TWICE_RETRY);
    CHECK_STR(twice_mock_job_key(j), "match-recompute:7:3");
    CHECK_CONTAINS(twice_mock_job_error(j), "no database connection");
    twice_mock_job_free(j);
    const char *bad[] = {"{\"roleId\":-7,\"roleVersion\":3}",
                         "{\"roleId\":\"7; DROP\",\"roleVersion\":3}",
                         "{\"roleId\":7.5,\"roleVersion\":3}", "{\"roleId\":0,\"roleVersion\":1}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_INT(run(m, bad[i], NULL, &j), TWICE_REJECT);
        CHECK_STR(twice_mock_job_error(j), "roleId must be a positive integer");
        twice_mock_job_free(j);
    }
    CHECK_INT(run(m, "{\"roleId\":7,\"roleVersion\":\"x\"}", NULL, &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "roleVersion must be a positive integer");
    twice_mock_job_free(j);
    CHECK_INT(run(m, "{\"roleId\":7}", NULL, &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "missing key field roleVersion");
    twice_mock_job_free(j);
    twice_mock_free(m);
}

/* A threshold written the C way ("0.75") is still read after another plugin
 * of the worker put a locale with a decimal comma in force (setlocale). */
static void
test_threshold_in_a_comma_locale(void)
{
    CHECK_INT(comma_locale_set(), 0);
    twice_mock *m = new_mock(NULL);
    twice_mock_set(m, "notify_threshold", "0.75");
    int rc = twice_mock_init(m);
    CHECK_INT(rc, 0);
    if (rc != 0) {
        fprintf(stderr, "init: %s\n", twice_mock_error(m));
    }
    twice_mock_free(m);
    setlocale(LC_ALL, "C");
}

/* ---- integration ---- */

static int
exec_ok(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) {
        fprintf(stderr, "SQL failed: %s\n  %s", sql, PQerrorMessage(db));
    }
    PQclear(r);
    return ok;
}

static void
execf(PGconn *db, const char *fmt)
{
    char *sql = NULL;
    CHECK(asprintf(&sql, fmt, qschema) >= 0);
    CHECK(exec_ok(db, sql));
    free(sql);
}

/* "candidate=score@version,..." of a role, ordered by candidate. */
static char *
matches_of(PGconn *db, int role)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(string_agg(candidate_id || '=' || score || '@' || "
             "computed_for_version, ',' ORDER BY candidate_id), '') FROM %s.matches "
             "WHERE role_id = %d",
             qschema, role);
    PGresult *r = PQexec(db, sql);
    char *out = strdup(PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 0) : "(error)");
    PQclear(r);
    return out;
}

static void
expect_matches(PGconn *db, int role, const char *want)
{
    char *got = matches_of(db, role);
    CHECK_STR(got, want);
    free(got);
}

/* The host's part: one transaction around handle(). */
static twice_status
as_host(twice_mock *m, PGconn *db, const char *body, char **error)
{
    twice_mock_job *j;
    CHECK(exec_ok(db, "BEGIN"));
    twice_status st = run(m, body, db, &j);
    CHECK(exec_ok(db, st == TWICE_DONE ? "COMMIT" : "ROLLBACK"));
    if (error != NULL) {
        *error = strdup(twice_mock_job_error(j) ? twice_mock_job_error(j) : "");
    }
    twice_mock_job_free(j);
    return st;
}

static void
load_schema(PGconn *db)
{
    char buf[1 << 14];
    FILE *f = fopen(SCHEMA_SQL, "r");
    size_t n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f != NULL) {
        fclose(f);
    }
    buf[n] = '\0';
    CHECK(n > 0);
    execf(db, "DROP SCHEMA IF EXISTS %s CASCADE");
    execf(db, "CREATE SCHEMA %s");
    execf(db, "SET search_path TO %s");
    CHECK(exec_ok(db, buf));
    CHECK(exec_ok(db, "RESET search_path"));
    execf(db, "INSERT INTO %1$s.roles (id, title, version) VALUES (7, 'Engineer', 1), "
              "(8, 'Analyst', 1);"
              "INSERT INTO %1$s.role_skills (role_id, skill, weight) VALUES (7, 'C', 3), "
              "(7, 'SQL', 2), (7, 'go', 1), (8, 'python', 1);"
              "INSERT INTO %1$s.candidates (id, name, skills) VALUES "
              "(1, 'Ana', '{c,sql}'), (2, 'Bo', '{go}'), (3, 'Cy', '{python}'), "
              "(4, 'Di', '{\" c\",Go,SQL,sql}')");
}

static void
test_scores(twice_mock *m, PGconn *db)
{
    char *err = NULL;
    CHECK_INT(as_host(m, db, "{\"roleId\":7,\"roleVersion\":1}", NULL), TWICE_DONE);
    expect_matches(db, 7, "1=0.8333@1,2=0.1667@1,4=1.0000@1");
    CHECK_INT(as_host(m, db, "{\"roleId\":8,\"roleVersion\":1}", NULL), TWICE_DONE);
    expect_matches(db, 8, "3=1.0000@1");

    /* candidates change, the role is edited: version 2 */
    execf(db, "UPDATE %1$s.candidates SET skills = '{go,sql}' WHERE id = 2;"
              "UPDATE %1$s.candidates SET skills = '{python,c}' WHERE id = 3;"
              "UPDATE %1$s.candidates SET skills = '{SQL}' WHERE id = 1;"
              "UPDATE %1$s.roles SET version = 2 WHERE id = 7");
    CHECK_INT(as_host(m, db, "{\"roleId\":7,\"roleVersion\":2}", NULL), TWICE_DONE);
    expect_matches(db, 7, "1=0.3333@2,2=0.5000@2,3=0.5000@2,4=1.0000@2");
    expect_matches(db, 8, "3=1.0000@1"); /* another role's rows are left alone */

    /* duplicates: five more deliveries leave the same single set */
    for (int i = 0; i < 5; i++) {
        CHECK_INT(as_host(m, db, "{\"roleId\":7,\"roleVersion\":2}", NULL), TWICE_DONE);
    }
    expect_matches(db, 7, "1=0.3333@2,2=0.5000@2,3=0.5000@2,4=1.0000@2");

    /* an old version is recomputed with current data; a newer one waits */
    CHECK_INT(as_host(m, db, "{\"roleId\":7,\"roleVersion\":1}", NULL), TWICE_DONE);
    expect_matches(db, 7, "1=0.3333@2,2=0.5000@2,3=0.5000@2,4=1.0000@2");
    CHECK_INT(as_host(m, db, "{\"roleId\":7,\"roleVersion\":3}", &err), TWICE_RETRY);
    CHECK_STR(err, "role 7 is at version 2, the message is for version 3 "
                   "(edit not committed yet?)");
    free(err);
    CHECK_INT(as_host(m, db, "{\"roleId\":99,\"roleVersion\":1}", &err), TWICE_REJECT);
    CHECK_STR(err, "role 99 does not exist");
    free(err);
}

static void
test_error_midway(twice_mock *m, PGconn *db)
{
    char *err = NULL;
    /* A real failure after the DELETE: the INSERT breaks a new constraint
     * (NOT VALID: the rows already there are not checked). */
    execf(db, "ALTER TABLE %s.matches ADD CONSTRAINT below_one CHECK (score < 0.9) NOT VALID");
    execf(db, "UPDATE %s.candidates SET skills = '{}' WHERE id = 1");
    CHECK_INT(as_host(m, db, "{\"roleId\":7,\"roleVersion\":2}", &err), TWICE_RETRY);
    CHECK_CONTAINS(err, "insert matches for role 7: new row for relation \"matches\" violates "
                        "check constraint \"below_one\" (SQLSTATE 23514)");
    free(err);
    expect_matches(db, 7, "1=0.3333@2,2=0.5000@2,3=0.5000@2,4=1.0000@2");
    execf(db, "ALTER TABLE %s.matches DROP CONSTRAINT below_one");
    CHECK_INT(as_host(m, db, "{\"roleId\":7,\"roleVersion\":2}", NULL), TWICE_DONE);
    expect_matches(db, 7, "2=0.5000@2,3=0.5000@2,4=1.0000@2");
}

struct second {
    twice_mock *m;
    PGconn *db;
    twice_status st;
};

static void *
second_main(void *arg)
{
    struct second *s = arg;
    s->st = as_host(s->m, s->db, "{\"roleId\":7,\"roleVersion\":2}", NULL);
    return NULL;
}

/* Two recomputes of one role at once: the second waits for the first's
 * lock, then replaces its rows instead of colliding with them. */
static void
test_concurrent(twice_mock *m, PGconn *db, PGconn *db2)
{
    twice_mock_job *j;
    pthread_t t;
    struct second s = {m, db2, TWICE_REJECT};
    CHECK(exec_ok(db, "BEGIN"));
    CHECK_INT(run(m, "{\"roleId\":7,\"roleVersion\":2}", db, &j), TWICE_DONE);
    pthread_create(&t, NULL, second_main, &s);
    usleep(300 * 1000);
    CHECK(exec_ok(db, "COMMIT"));
    pthread_join(t, NULL);
    CHECK_INT(s.st, TWICE_DONE);
    twice_mock_job_free(j);
    expect_matches(db, 7, "2=0.5000@2,3=0.5000@2,4=1.0000@2");
}

/* The candidates a run notified, "candidate=score,..." in send() order,
 * after checking every message's queue and shape. */
static char *
notified(twice_mock_job *j)
{
    char *out = strdup("");
    for (size_t i = 0; i < twice_mock_job_sent_count(j); i++) {
        const char *url = NULL;
        const char *body = twice_mock_job_sent(j, i, &url, NULL, NULL, NULL);
        CHECK_STR(url, "https://sqs.example/1/notify");
        CHECK_CONTAINS(body, "\"type\":\"match-notify\",\"roleId\":7,");
        const char *c = strstr(body, "\"candidateId\":");
        const char *sc = strstr(body, "\"score\":\"");
        char *next = NULL;
        CHECK(c != NULL && sc != NULL);
        if (c != NULL && sc != NULL &&
            asprintf(&next, "%s%s%ld=%.6s", out, *out ? "," : "", strtol(c + 14, NULL, 10),
                     sc + 9) >= 0) {
            free(out);
            out = next;
        }
    }
    return out;
}

/* One recompute as the host runs it; what it notified (NULL unless DONE). */
static char *
recompute_notify(twice_mock *m, PGconn *db, const char *body)
{
    twice_mock_job *j;
    CHECK(exec_ok(db, "BEGIN"));
    twice_status st = run(m, body, db, &j);
    CHECK(exec_ok(db, st == TWICE_DONE ? "COMMIT" : "ROLLBACK"));
    char *out = st == TWICE_DONE ? notified(j) : NULL;
    twice_mock_job_free(j);
    return out;
}

static void
test_notify(PGconn *db)
{
    twice_mock *m = new_mock(schema);
    twice_mock_set(m, "notify_queue", "notify");
    twice_mock_set(m, "notify_threshold", "0.5");
    CHECK_INT(twice_mock_queue(m, "notify", "https://sqs.example/1/notify"), 0);
    CHECK_INT(twice_mock_init(m), 0);
    execf(db, "DELETE FROM %s.matches WHERE role_id = 7");
    /* first computation: everyone at or above 0.5 crosses */
    char *got = recompute_notify(m, db, "{\"roleId\":7,\"roleVersion\":2}");
    CHECK_STR(got, "2=0.5000,3=0.5000,4=1.0000");
    free(got);
    /* again, nothing changed: nobody crosses again */
    got = recompute_notify(m, db, "{\"roleId\":7,\"roleVersion\":2}");
    CHECK_STR(got, "");
    free(got);
    /* candidate 1 learns C: 0.3333 -> 0.8333 crosses; 2 drops below and is not told */
    execf(db, "UPDATE %1$s.candidates SET skills = '{c,sql}' WHERE id = 1;"
              "UPDATE %1$s.candidates SET skills = '{go}' WHERE id = 2");
    got = recompute_notify(m, db, "{\"roleId\":7,\"roleVersion\":2}");
    CHECK_STR(got, "1=0.8333");
    free(got);
    twice_mock_free(m);

    /* a queue twice.conf does not have: refused at the call, the job rejected */
    m = new_mock(schema);
    twice_mock_set(m, "notify_queue", "nowhere");
    CHECK_INT(twice_mock_init(m), 0);
    execf(db, "DELETE FROM %s.matches WHERE role_id = 7");
    twice_mock_job *j;
    CHECK(exec_ok(db, "BEGIN"));
    CHECK_INT(run(m, "{\"roleId\":7,\"roleVersion\":2}", db, &j), TWICE_REJECT);
    CHECK(exec_ok(db, "ROLLBACK"));
    CHECK_CONTAINS(twice_mock_job_error(j), "queue \"nowhere\" is not a queue of twice.conf");
    CHECK_INT(twice_mock_job_sent_count(j), 0);
    twice_mock_job_free(j);
    twice_mock_free(m);

    /* a threshold that is not a score */
    m = new_mock(schema);
    twice_mock_set(m, "notify_threshold", "1.5");
    CHECK(twice_mock_init(m) != 0);
    CHECK_CONTAINS(twice_mock_error(m), "setting 'notify_threshold': must be a decimal above 0");
    twice_mock_free(m);
}

static int
test_integration(void)
{
    const char *dsn = getenv("TWICE_TEST_PGDSN");
    if (dsn == NULL || *dsn == '\0') {
        fprintf(stderr, "TWICE_TEST_PGDSN is not set: start the servers with "
                        "scripts/testenv.sh and source its env.sh\n");
        return 1;
    }
    PGconn *db = PQconnectdb(dsn), *db2 = PQconnectdb(dsn);
    if (PQstatus(db) != CONNECTION_OK || PQstatus(db2) != CONNECTION_OK) {
        fprintf(stderr, "cannot connect to TWICE_TEST_PGDSN: %s", PQerrorMessage(db));
        PQfinish(db);
        PQfinish(db2);
        return 1;
    }
    CHECK(exec_ok(db, "SET client_min_messages TO warning"));
    snprintf(schema, sizeof(schema), "MR test-%ld", (long) getpid());
    snprintf(qschema, sizeof(qschema), "\"%s\"", schema);
    load_schema(db);
    twice_mock *m = new_mock(schema);
    CHECK_INT(twice_mock_init(m), 0);
    test_scores(m, db);
    test_error_midway(m, db);
    test_concurrent(m, db, db2);
    twice_mock_free(m);
    test_notify(db);
    execf(db, "DROP SCHEMA %s CASCADE");
    PQfinish(db);
    PQfinish(db2);
    return check_done("test-match-recompute integration");
}

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "integration") == 0) {
        return test_integration();
    }
    test_unit();
    test_threshold_in_a_comma_locale();
    return check_done("test-match-recompute unit");
}
