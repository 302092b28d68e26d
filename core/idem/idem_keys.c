/*
 * idem_keys.c - the idempotency store's queries for operators (`twicectl
 * key show|list|forget`, idem.h): one row, rows by prefix and state, and
 * deleting a row. Not used on the job path; the store itself is idem.c.
 */
#include "idem.h"
#include "idem_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The columns of struct idem_record, in parse_record's order. Only a key in
 * progress has a lease: the others keep when their last one ended (idem.c). */
#define RECORD_COLUMNS                                                                            \
    "idempotency_key, state, owner, message_id, encode(payload_sha256, 'hex'), attempts,"         \
    " CASE WHEN state = 'in_progress'"                                                            \
    " THEN coalesce(extract(epoch FROM lease_until)::bigint, 0) ELSE 0 END,"                      \
    " extract(epoch FROM created_at)::bigint, extract(epoch FROM processed_at)::bigint"

int
idem_state_name_ok(const char *state)
{
    static const char *const names[] = {"in_progress", "released", "crashed", "interrupted",
                                        "completed"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(state, names[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

void
idem_record_clear(struct idem_record *r)
{
    free(r->key);
    free(r->owner);
    free(r->message_id);
    memset(r, 0, sizeof(*r));
}

void
idem_records_free(struct idem_record *r, size_t n)
{
    for (size_t i = 0; r != NULL && i < n; i++) {
        idem_record_clear(&r[i]);
    }
    free(r);
}

/* A copy of a nullable column (NULL stays NULL); -1 when out of memory. */
static int
dup_column(const PGresult *res, int row, int col, char **out)
{
    *out = NULL;
    if (PQgetisnull(res, row, col)) {
        return 0;
    }
    *out = strdup(PQgetvalue(res, row, col));
    return *out ? 0 : -1;
}

/* One row of RECORD_COLUMNS into r (zeroed first; cleared on failure). */
static int
parse_record(const PGresult *res, int row, struct idem_record *r)
{
    memset(r, 0, sizeof(*r));
    if (dup_column(res, row, 0, &r->key) != 0 || dup_column(res, row, 2, &r->owner) != 0 ||
        dup_column(res, row, 3, &r->message_id) != 0) {
        idem_record_clear(r);
        return -1;
    }
    snprintf(r->state, sizeof(r->state), "%s", PQgetvalue(res, row, 1));
    snprintf(r->sha256_hex, sizeof(r->sha256_hex), "%s", PQgetvalue(res, row, 4));
    r->attempts = atoi(PQgetvalue(res, row, 5));
    r->lease_until = (time_t) strtoll(PQgetvalue(res, row, 6), NULL, 10);
    r->created_at = (time_t) strtoll(PQgetvalue(res, row, 7), NULL, 10);
    r->processed_at = (time_t) strtoll(PQgetvalue(res, row, 8), NULL, 10);
    return 0;
}

int
idem_key_show(struct idem_store *s, const char *key, struct idem_record *out, char *err,
              size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *params[] = {key};
    PGresult *res = idem_run_sql(s, "SELECT " RECORD_COLUMNS " FROM @T WHERE idempotency_key = $1",
                                 1, params, PGRES_TUPLES_OK, "show key", err, errlen);
    if (res == NULL) {
        return -1;
    }
    int rc = PQntuples(res) == 1 ? 1 : 0;
    if (rc == 1 && parse_record(res, 0, out) != 0) {
        snprintf(err, errlen, "show key: out of memory");
        rc = -1;
    }
    PQclear(res);
    return rc;
}

/* starts_with, not LIKE: a prefix with % or _ means those characters. A
 * limit <= 0 means no limit (LIMIT NULL). */
int
idem_key_list(struct idem_store *s, const char *prefix, const char *state, int limit,
              struct idem_record **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (state != NULL && !idem_state_name_ok(state)) {
        snprintf(err, errlen,
                 "list keys: state \"%s\" is none of in_progress, released, crashed, "
                 "interrupted, completed",
                 state);
        return -1;
    }
    char lim[16];
    snprintf(lim, sizeof(lim), "%d", limit);
    const char *params[] = {prefix, state, limit > 0 ? lim : NULL};
    PGresult *res = idem_run_sql(s,
                                 "SELECT " RECORD_COLUMNS " FROM @T"
                                 " WHERE ($1::text IS NULL OR starts_with(idempotency_key, $1))"
                                 " AND ($2::text IS NULL OR state = $2)"
                                 " ORDER BY idempotency_key LIMIT $3::int",
                                 3, params, PGRES_TUPLES_OK, "list keys", err, errlen);
    if (res == NULL) {
        return -1;
    }
    size_t rows = (size_t) PQntuples(res);
    struct idem_record *r = calloc(rows ? rows : 1, sizeof(*r));
    size_t i = 0;
    while (r != NULL && i < rows && parse_record(res, (int) i, &r[i]) == 0) {
        i++;
    }
    PQclear(res);
    if (r == NULL || i < rows) {
        idem_records_free(r, i);
        snprintf(err, errlen, "list keys: out of memory");
        return -1;
    }
    *out = r;
    *n = rows;
    return 0;
}

int
idem_key_forget(struct idem_store *s, const char *key, char *err, size_t errlen)
{
    const char *params[] = {key};
    PGresult *res = idem_run_sql(s, "DELETE FROM @T WHERE idempotency_key = $1", 1, params,
                                 PGRES_COMMAND_OK, "forget key", err, errlen);
    if (res == NULL) {
        return -1;
    }
    int rc = strcmp(PQcmdTuples(res), "0") == 0 ? 0 : 1;
    PQclear(res);
    return rc;
}
