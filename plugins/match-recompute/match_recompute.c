/*
 * match_recompute.c - the match-recompute plugin: recompute one role's
 * match scores against all candidates and replace that role's rows in
 * `matches`, inside the worker's transaction (TWICE_FLAG_TRANSACTIONAL), so
 * the new rows and the key's completion commit together. Keyed
 * "match-recompute:{roleId}:{roleVersion}". Tables and the score:
 * etc/schema-matches.sql. With notify_queue set, every candidate whose
 * score crosses notify_threshold gets a match-notify message, staged with
 * api->send() in the same transaction. Not a scheduler: one message, one role.
 */
#include <libpq-fe.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <twice/plugin.h>

/* Read-only after init: handle() runs on many threads (each with its own
 * connection from the host). */
struct recompute {
    const twice_api *api;
    char *schema;       /* unquoted; quoted per connection with PQescapeIdentifier */
    char *notify_queue; /* where match-notify messages go; NULL: none are sent */
    char threshold[16]; /* notify_threshold, as the decimal text PostgreSQL reads */
};

/* The statements; %1$s is the quoted schema. Parameters only. */
static const char sql_lock[] = "SELECT version FROM %1$s.roles WHERE id = $1::bigint FOR UPDATE";
static const char sql_delete[] = "DELETE FROM %1$s.matches WHERE role_id = $1::bigint";
/* Each candidate's new score for role $1 (scores above zero only). */
#define SQL_SCORES                                                                                \
    "SELECT c.id AS candidate_id, round(sum(rs.weight) / t.total, 4) AS score "                   \
    "FROM %1$s.role_skills rs "                                                                   \
    "JOIN %1$s.candidates c "                                                                     \
    "  ON lower(btrim(rs.skill)) = ANY (SELECT lower(btrim(s)) FROM unnest(c.skills) AS s) "      \
    "CROSS JOIN (SELECT sum(weight) AS total FROM %1$s.role_skills "                              \
    "            WHERE role_id = $1::bigint) t "                                                  \
    "WHERE rs.role_id = $1::bigint "                                                              \
    "GROUP BY c.id, t.total "                                                                     \
    "HAVING round(sum(rs.weight) / t.total, 4) > 0"

static const char sql_insert[] =
    "INSERT INTO %1$s.matches (role_id, candidate_id, score, computed_for_version) "
    "SELECT $1::bigint, s.candidate_id, s.score, $2::integer FROM (" SQL_SCORES ") s";

/* The candidates whose new score reaches the threshold $2 while their
 * stored one (read before the rows are replaced) did not, or had none. */
static const char sql_crossed[] =
    "SELECT s.candidate_id, s.score FROM (" SQL_SCORES ") s "
    "LEFT JOIN %1$s.matches m ON m.role_id = $1::bigint AND m.candidate_id = s.candidate_id "
    "WHERE s.score >= $2::numeric AND (m.score IS NULL OR m.score < $2::numeric) "
    "ORDER BY s.candidate_id";

static void
recompute_fini(void *state)
{
    struct recompute *r = state;
    free(r->schema);
    free(r->notify_queue);
    free(r);
}

/* t read as a decimal the C way ("0.75"), as twice.conf writes it, even
 * when another plugin of the worker called setlocale() for a decimal comma
 * (plain strtod would stop at the '.' and refuse the setting). Without a C
 * locale object nothing is read (*end = t): refused, never read the
 * locale's way. */
static double
decimal(const char *t, char **end)
{
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t) 0);
    if (c == (locale_t) 0) {
        *end = (char *) t;
        return 0;
    }
    double v = strtod_l(t, end, c);
    freelocale(c);
    return v;
}

/* notify_queue and notify_threshold (a decimal in (0, 1]). 0, or -1 after
 * saying why. */
static int
notify_settings(const twice_api *api, const twice_settings *settings, struct recompute *r)
{
    const char *q = api->setting(settings, "notify_queue");
    const char *t = api->setting(settings, "notify_threshold");
    char *end = NULL;
    double v = t != NULL ? decimal(t, &end) : 0;
    if (t == NULL || end == t || *end != '\0' || !(v > 0 && v <= 1) || strlen(t) >= 16 ||
        strspn(t, "0123456789.") != strlen(t)) {
        api->setting_error(settings, "notify_threshold",
                           "must be a decimal above 0 and at most 1, like 0.75");
        return -1;
    }
    snprintf(r->threshold, sizeof(r->threshold), "%s", t);
    if (q != NULL && *q != '\0') {
        if (!TWICE_API_HAS(api, send)) {
            api->log(NULL, TWICE_LOG_ERROR, "notify_queue needs a host with send() (ABI 1.1)");
            return -1;
        }
        if ((r->notify_queue = strdup(q)) == NULL) {
            api->log(NULL, TWICE_LOG_ERROR, "out of memory");
            return -1;
        }
    }
    return 0;
}

static int
recompute_init(const twice_api *api, const twice_settings *settings, void **state)
{
    const char *schema = api->setting(settings, "schema");
    if (schema == NULL || *schema == '\0' || strlen(schema) > 63) {
        api->setting_error(settings, "schema", "must be 1-63 bytes");
        return -1;
    }
    struct recompute *r = calloc(1, sizeof(*r));
    if (r == NULL || (r->schema = strdup(schema)) == NULL) {
        api->log(NULL, TWICE_LOG_ERROR, "out of memory");
        free(r);
        return -1;
    }
    r->api = api;
    if (notify_settings(api, settings, r) != 0) {
        recompute_fini(r);
        return -1;
    }
    *state = r;
    return 0;
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

/*
 * Stage one match-notify message per candidate whose score crosses the
 * threshold with this recompute: sent once the transaction commits (the
 * outbox), never when it rolls back. Run before the rows are replaced.
 */
static twice_status
notify_crossed(const struct recompute *r, twice_job *job, PGconn *db, const char *quoted,
               const char *role, const char *version)
{
    const char *params[2] = {role, r->threshold};
    PGresult *res =
        run(r, job, db, sql_crossed, quoted, 2, params, PGRES_TUPLES_OK, "crossed threshold");
    if (res == NULL) {
        return TWICE_RETRY;
    }
    twice_status st = TWICE_DONE;
    for (int i = 0; i < PQntuples(res) && st == TWICE_DONE; i++) {
        char body[256];
        snprintf(body, sizeof(body),
                 "{\"type\":\"match-notify\",\"roleId\":%s,\"roleVersion\":%s,"
                 "\"candidateId\":%s,\"score\":\"%s\"}",
                 role, version, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
        if (r->api->send(job, r->notify_queue, body, (size_t) -1, 0, NULL, NULL) != 0) {
            st = TWICE_REJECT; /* send() said why: a queue twice.conf does not have */
        }
    }
    PQclear(res);
    return st;
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
    if (r->notify_queue != NULL &&
        (st = notify_crossed(r, job, db, quoted, role, version)) != TWICE_DONE) {
        return st;
    }
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
    {"notify_queue", TWICE_SETTING_STRING, 0, NULL,
     "queue (twice.conf name or URL) for match-notify messages; unset: none are sent"},
    {"notify_threshold", TWICE_SETTING_STRING, 0, "0.75",
     "a candidate is notified when a recompute lifts its score to at least this"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL},
};

TWICE_PLUGIN(.flags = TWICE_FLAG_TRANSACTIONAL, .name = "match-recompute", .version = "1.0.0",
             .key_template = "match-recompute:{roleId}:{roleVersion}",
             .settings = recompute_settings, .init = recompute_init, .handle = recompute_handle,
             .fini = recompute_fini)
