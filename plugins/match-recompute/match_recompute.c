/*
 * match_recompute.c - the match-recompute plugin: recompute one role's
 * match scores against all candidates and replace that role's rows in
 * `matches`, inside the worker's transaction (TWICE_FLAG_TRANSACTIONAL), so
 * the new rows and the key's completion commit together. Keyed
 * "match-recompute:{roleId}:{roleVersion}". Tables and the score:
 * etc/schema-matches.sql. Not a scheduler: one message, one role.
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <twice/plugin.h>

/* Read-only after init: handle() runs on many threads (each with its own
 * connection from the host). */
struct recompute {
    const twice_api *api;
    char *schema; /* unquoted; quoted per connection with PQescapeIdentifier */
};

/* The statements; %1$s is the quoted schema. Parameters only. */
static const char sql_lock[] = "SELECT version FROM %1$s.roles WHERE id = $1::bigint FOR UPDATE";
static const char sql_delete[] = "DELETE FROM %1$s.matches WHERE role_id = $1::bigint";
static const char sql_insert[] =
    "INSERT INTO %1$s.matches (role_id, candidate_id, score, computed_for_version) "
    "SELECT $1::bigint, c.id, round(sum(rs.weight) / t.total, 4), $2::integer "
    "FROM %1$s.role_skills rs "
    "JOIN %1$s.candidates c "
    "  ON lower(btrim(rs.skill)) = ANY (SELECT lower(btrim(s)) FROM unnest(c.skills) AS s) "
    "CROSS JOIN (SELECT sum(weight) AS total FROM %1$s.role_skills "
    "            WHERE role_id = $1::bigint) t "
    "WHERE rs.role_id = $1::bigint "
    "GROUP BY c.id, t.total "
    "HAVING round(sum(rs.weight) / t.total, 4) > 0";

static int
recompute_init(const twice_api *api, const twice_settings *settings, void **state)
{
    const char *schema = api->setting(settings, "schema");
    if (schema == NULL || *schema == '\0' || strlen(schema) > 63) {
        api->log(NULL, TWICE_LOG_ERROR, "schema must be 1-63 bytes");
        return -1;
    }
    struct recompute *r = calloc(1, sizeof(*r));
    if (r == NULL || (r->schema = strdup(schema)) == NULL) {
        api->log(NULL, TWICE_LOG_ERROR, "out of memory");
        free(r);
        return -1;
    }
    r->api = api;
    *state = r;
    return 0;
}

static void
recompute_fini(void *state)
{
    struct recompute *r = state;
    free(r->schema);
    free(r);
}

/* A decimal of 1..max_digits digits, no sign or leading zero. */
static int
positive_integer(const char *s, size_t max_digits)
{
    size_t n = s != NULL ? strspn(s, "0123456789") : 0;
    return n > 0 && n <= max_digits && s[n] == '\0' && s[0] != '0';
}

/* One statement; its result when it returned status `want`, else NULL
 * after api->error() with the server's primary message and SQLSTATE. */
static PGresult *
run(const struct recompute *r, twice_job *job, PGconn *db, const char *fmt, const char *quoted,
    int nparams, const char *const *params, ExecStatusType want, const char *what)
{
    char *sql = NULL;
    if (asprintf(&sql, fmt, quoted) < 0) {
        r->api->error(job, "out of memory");
        return NULL;
    }
    PGresult *res = PQexecParams(db, sql, nparams, NULL, params, NULL, NULL, 0);
    free(sql);
    if (PQresultStatus(res) == want) {
        return res;
    }
    const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    char line[512];
    snprintf(line, sizeof(line), "%s", msg != NULL ? msg : PQerrorMessage(db));
    line[strcspn(line, "\r\n")] = '\0';
    r->api->error(job, "%s for role %s: %s (SQLSTATE %s)", what, params[0], line,
                  state != NULL ? state : "none");
    PQclear(res);
    return NULL;
}

/*
 * The role's current version, locked (FOR UPDATE) so two recomputes of one
 * role take turns: the second then sees the first one's rows and replaces
 * them instead of colliding with them. TWICE_DONE with version, or the
 * verdict after api->error().
 */
static twice_status
lock_role(const struct recompute *r, twice_job *job, PGconn *db, const char *quoted,
          const char *role, char *version, size_t cap)
{
    const char *params[1] = {role};
    PGresult *res = run(r, job, db, sql_lock, quoted, 1, params, PGRES_TUPLES_OK, "lock role");
    if (res == NULL) {
        return TWICE_RETRY;
    }
    if (PQntuples(res) == 0) {
        PQclear(res);
        r->api->error(job, "role %s does not exist", role);
        return TWICE_REJECT;
    }
    snprintf(version, cap, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    return TWICE_DONE;
}

/*
 * Versions. A message for an older version than the role's is recomputed
 * anyway, with the current data (its result is what the newer message
 * would compute; rows record the version they were computed for). A
 * message for a newer version than the database holds means the role's
 * edit is not visible yet: retried.
 */
static twice_status
check_version(const struct recompute *r, twice_job *job, const char *role, const char *wanted,
              const char *current)
{
    long long want = strtoll(wanted, NULL, 10), cur = strtoll(current, NULL, 10);
    if (want > cur) {
        r->api->error(job,
                      "role %s is at version %lld, the message is for version %lld "
                      "(edit not committed yet?)",
                      role, cur, want);
        return TWICE_RETRY;
    }
    if (want < cur) {
        r->api->log(job, TWICE_LOG_INFO,
                    "role %s is at version %lld (message: %lld); recomputing with current data",
                    role, cur, want);
    }
    return TWICE_DONE;
}

static twice_status
replace_rows(const struct recompute *r, twice_job *job, PGconn *db, const char *quoted,
             const char *role, const char *wanted)
{
    char version[32];
    twice_status st = lock_role(r, job, db, quoted, role, version, sizeof(version));
    if (st != TWICE_DONE || (st = check_version(r, job, role, wanted, version)) != TWICE_DONE) {
        return st;
    }
    const char *params[2] = {role, version};
    PGresult *res =
        run(r, job, db, sql_delete, quoted, 1, params, PGRES_COMMAND_OK, "delete matches");
    if (res == NULL) {
        return TWICE_RETRY;
    }
    PQclear(res);
    res = run(r, job, db, sql_insert, quoted, 2, params, PGRES_COMMAND_OK, "insert matches");
    if (res == NULL) {
        return TWICE_RETRY; /* the host rolls back: the DELETE is undone too */
    }
    r->api->log(job, TWICE_LOG_INFO, "role %s version %s: %s matches", role, version,
                PQcmdTuples(res));
    PQclear(res);
    return TWICE_DONE;
}

static twice_status
recompute_handle(void *state, twice_job *job)
{
    const struct recompute *r = state;
    const char *role = r->api->field(job, "roleId", NULL);
    const char *version = r->api->field(job, "roleVersion", NULL);
    if (!positive_integer(role, 18)) {
        r->api->error(job, "roleId must be a positive integer");
        return TWICE_REJECT;
    }
    if (!positive_integer(version, 9)) {
        r->api->error(job, "roleVersion must be a positive integer");
        return TWICE_REJECT;
    }
    PGconn *db = r->api->db(job);
    if (db == NULL) {
        r->api->error(job, "no database connection (the host runs this plugin in its "
                           "transaction only when it is flagged transactional)");
        return TWICE_RETRY;
    }
    char *quoted = PQescapeIdentifier(db, r->schema, strlen(r->schema));
    if (quoted == NULL) {
        r->api->error(job, "schema setting: %s", PQerrorMessage(db));
        return TWICE_RETRY;
    }
    twice_status st = replace_rows(r, job, db, quoted, role, version);
    PQfreemem(quoted);
    return st;
}

static const twice_setting recompute_settings[] = {
    {"schema", TWICE_SETTING_STRING, 0, "public",
     "schema holding roles, role_skills, candidates and matches"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL},
};

TWICE_PLUGIN(.flags = TWICE_FLAG_TRANSACTIONAL, .name = "match-recompute", .version = "1.0.0",
             .key_template = "match-recompute:{roleId}:{roleVersion}",
             .settings = recompute_settings, .init = recompute_init, .handle = recompute_handle,
             .fini = recompute_fini)
