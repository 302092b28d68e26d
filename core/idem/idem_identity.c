/*
 * idem_identity.c - which keys a connection reaches (see idem.h): the
 * cluster, the database and the table its name resolves to, so that a
 * reload can tell a changed dsn that reaches the same keys (another host of
 * the same cluster, a rotated password, a promoted replica) from one that
 * reaches other keys (another database or cluster, another schema); and
 * whether it reaches a standby, or any server that takes no writes, where no
 * key can be written; and whether a claim can be written at all (a claim
 * check), whatever the reason it cannot.
 */
#include "idem.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

#include "idem_internal.h"

/* The cluster's system identifier into id->cluster; left "" when the role
 * may not call pg_control_system() (some managed services revoke it) or the
 * server has none: the other fields still tell databases apart. -1 with err
 * when the connection was lost on the way (or the answer given up: a store
 * that waits), so that a half-read identity is never compared. */
static int
read_cluster(struct idem_store *s, struct idem_identity *id, char *err, size_t errlen)
{
    PGresult *res = idem_exec(
        s, "SELECT system_identifier::text FROM pg_catalog.pg_control_system()", 0, NULL);
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
        snprintf(id->cluster, sizeof(id->cluster), "%s", PQgetvalue(res, 0, 0));
    } else if (!idem_connected(s)) {
        return idem_pg_fail(s, res, "identify the store's cluster", err, errlen);
    }
    PQclear(res);
    return 0;
}

int
idem_identity(struct idem_store *s, struct idem_identity *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    PGresult *res = idem_ask_about_table(s, "",
                                         "SELECT current_database(), coalesce(to_regclass($1)::oid"
                                         "::text, ''), coalesce(to_regclass($1)::text, '')",
                                         "identify the store", err, errlen);
    if (res == NULL) {
        return -1;
    }
    snprintf(out->database, sizeof(out->database), "%s", PQgetvalue(res, 0, 0));
    snprintf(out->table_oid, sizeof(out->table_oid), "%s", PQgetvalue(res, 0, 1));
    snprintf(out->table, sizeof(out->table), "%s", PQgetvalue(res, 0, 2));
    PQclear(res);
    return read_cluster(s, out, err, errlen);
}

int
idem_standby(struct idem_store *s, char *err, size_t errlen)
{
    return idem_ask(s, "SELECT pg_catalog.pg_is_in_recovery()", 0, NULL,
                    "ask whether the server is a standby", err, errlen);
}

int
idem_read_only(struct idem_store *s, char *err, size_t errlen)
{
    int read_only =
        idem_ask(s, "SELECT pg_catalog.current_setting('transaction_read_only') = 'on'", 0, NULL,
                 "ask whether the server takes writes", err, errlen);
    if (read_only > 0) {
        snprintf(s->failed_state, sizeof(s->failed_state), "25006");
        idem_set_err(err, errlen, "%s", IDEM_READ_ONLY_WHY);
    }
    return read_only;
}

int
idem_takes_writes(struct idem_store *s, char *err, size_t errlen)
{
    int standby = idem_standby(s, err, errlen);
    if (standby > 0) {
        idem_set_err(err, errlen, "%s", IDEM_STANDBY_WHY);
        return 1;
    }
    return standby < 0 ? -1 : idem_read_only(s, err, errlen);
}

/* The key of a claim check: it begins with a control character, which no
 * key may hold (keytmpl_check_derived), so no message's key is ever it. */
#define CLAIM_CHECK_KEY "\001twice claim check"

/* End a claim check's transaction. When the check failed (rc -1, err set)
 * a failed ROLLBACK (the connection gone) adds nothing: the claim's error
 * and SQLSTATE are the ones that matter. */
static int
check_rollback(struct idem_store *s, int rc, char *err, size_t errlen)
{
    PGresult *res = idem_exec(s, "ROLLBACK", 0, NULL);
    if (PQresultStatus(res) == PGRES_COMMAND_OK || rc != 0) {
        PQclear(res);
        return rc;
    }
    return idem_pg_fail(s, res, "claim check", err, errlen);
}

int
idem_claim_check(struct idem_store *s, char *err, size_t errlen)
{
    PGresult *res = idem_exec(s, "BEGIN", 0, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        return idem_pg_fail(s, res, "claim check", err, errlen);
    }
    PQclear(res);
    static const unsigned char zero[32];
    struct idem_claim c = {
        .key = CLAIM_CHECK_KEY, .sha256 = zero, .message_id = "", .lease_seconds = 1};
    int rc = idem_claim_batch(s, &c, 1, err, errlen);
    rc = check_rollback(s, rc, err, errlen);
    if (rc != 0 && strcmp(s->failed_state, "25006") == 0) {
        idem_set_err(err, errlen, "%s", IDEM_READ_ONLY_WHY);
    }
    return rc;
}

/* The privileges a worker needs on the key table (claim, complete, release). */
#define CLAIM_GRANTS "SELECT, INSERT, UPDATE, DELETE"

/* A claim check refused a grant (42501): name the role, the privileges it
 * lacks on the key table and the GRANT that gives them, in err. 1; -1 with
 * err when that could not be asked; the claim check's own error (left in err)
 * stands when the role lacks none of them (a grant elsewhere: the schema). */
static int
claim_refused(struct idem_store *s, char *err, size_t errlen)
{
    char why[768];
    PGresult *res = idem_ask_about_table(
        s, "",
        "SELECT pg_catalog.quote_ident(current_user),"
        " coalesce(pg_catalog.string_agg(p, ', ' ORDER BY o), '')"
        " FROM pg_catalog.unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE'])"
        "  WITH ORDINALITY AS g(p, o)"
        " WHERE NOT pg_catalog.has_table_privilege(pg_catalog.to_regclass($1), p)",
        "ask which grants the role lacks", why, sizeof(why));
    if (res == NULL) {
        idem_set_err(err, errlen, "%s", why);
        return -1;
    }
    const char *role = PQgetvalue(res, 0, 0), *lacks = PQgetvalue(res, 0, 1);
    if (lacks[0] != '\0') {
        idem_set_err(err, errlen,
                     "role %s may not write claims into table %s (it lacks %s on it; twiced's "
                     "workers need " CLAIM_GRANTS "): GRANT %s ON %s TO %s",
                     role, s->name, lacks, lacks, s->table, role);
    }
    PQclear(res);
    return 1;
}

int
idem_claim_allowed(struct idem_store *s, char *err, size_t errlen)
{
    int exists = idem_table_exists(s, "", NULL, err, errlen);
    if (exists <= 0) {
        return exists; /* not there yet: the workers make it (or say why they cannot) */
    }
    if (idem_claim_check(s, err, errlen) == 0) {
        return 0;
    }
    if (strcmp(s->failed_state, "42501") == 0) {
        return claim_refused(s, err, errlen);
    }
    return s->failed_state[0] == '-' ? -1 : 0;
}

const char *
idem_failed_state(const struct idem_store *s)
{
    return s != NULL ? s->failed_state : "";
}

int
idem_identity_same(const struct idem_identity *was, const struct idem_identity *now, char *why,
                   size_t cap)
{
    if (strcmp(was->database, now->database) != 0) {
        snprintf(why, cap, "it reaches database '%s', not '%s'", now->database, was->database);
        return 0;
    }
    if (was->cluster[0] != '\0' && now->cluster[0] != '\0' &&
        strcmp(was->cluster, now->cluster) != 0) {
        snprintf(why, cap,
                 "it reaches database '%s' of another PostgreSQL cluster (system identifier %s, "
                 "not %s)",
                 now->database, now->cluster, was->cluster);
        return 0;
    }
    if (was->table_oid[0] != '\0' && strcmp(was->table_oid, now->table_oid) != 0) {
        if (now->table_oid[0] == '\0') {
            snprintf(why, cap, "the keys table %s is not there for it", was->table);
        } else {
            snprintf(why, cap, "the keys table resolves to another table for it (%s, not %s)",
                     now->table, was->table);
        }
        return 0;
    }
    return 1;
}
