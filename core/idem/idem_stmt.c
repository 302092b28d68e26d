/*
 * idem_stmt.c - the store's hot-path statements as named prepared statements
 * that stay correct behind a connection pooler (pgbouncer in transaction
 * mode): each name is derived from a hash of the statement's text, and a
 * statement is prepared on demand, on the server connection that runs it.
 * Not the SQL itself (idem.c) nor what a failed statement means.
 *
 * Why names from a hash: a pooler hands a client's statements to whichever
 * server connection is free, so a name another client prepared there may
 * meet ours. With the text's hash in the name, a name that exists already
 * means the same text (the same table): it is safe to use. Why on demand: a
 * name we prepared on one server connection is missing on the next one
 * (26000). Then the Parse and the Execute go out in one pipeline, ending in
 * one Sync: a pooler keeps them on one server connection, since it hands the
 * connection on only when the server says it is idle, after the Sync.
 * Inside a transaction a missing name would abort the caller's work, so a
 * statement there runs unnamed; a pooler keeps a transaction on one server.
 */
#include "idem_internal.h"

#include <openssl/evp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Times a missing name is prepared again before the unnamed statement is
 * used: a pooler may hand every attempt a different server connection. */
#define STMT_TRIES 4

struct idem_stmts {
    size_t n;
    char **sql; /* the statements' text, owned */
    char (*name)[IDEM_STMT_NAME_MAX];
    unsigned char *known; /* 1: prepared on this connection, as far as we know */
};

/* "twice_<tag>_<24 hex digits of SHA-256 of sql>" into out. 0 or -1. */
static int
stmt_name(char out[IDEM_STMT_NAME_MAX], const char *tag, const char *sql)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(sql, strlen(sql), md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < 12) {
        return -1;
    }
    int len = snprintf(out, IDEM_STMT_NAME_MAX, "twice_%s_", tag);
    for (int i = 0; i < 12 && len > 0 && len + 2 < IDEM_STMT_NAME_MAX; i++) {
        len += snprintf(out + len, 3, "%02x", md[i]);
    }
    return len == (int) strlen("twice__") + (int) strlen(tag) + 24 ? 0 : -1;
}

struct idem_stmts *
idem_stmts_new(const char *const *tags, char **sql, size_t n)
{
    struct idem_stmts *st = calloc(1, sizeof(*st));
    if (st == NULL || (st->sql = calloc(n, sizeof(*st->sql))) == NULL ||
        (st->name = calloc(n, sizeof(*st->name))) == NULL || (st->known = calloc(n, 1)) == NULL) {
        goto fail;
    }
    st->n = n;
    for (size_t i = 0; i < n; i++) {
        st->sql[i] = sql[i];
        sql[i] = NULL;
        if (stmt_name(st->name[i], tags[i], st->sql[i]) != 0) {
            goto fail;
        }
    }
    return st;
fail:
    for (size_t i = 0; i < n; i++) {
        free(sql[i]);
        sql[i] = NULL;
    }
    idem_stmts_free(st);
    return NULL;
}

void
idem_stmts_free(struct idem_stmts *st)
{
    if (st == NULL) {
        return;
    }
    for (size_t i = 0; st->sql != NULL && i < st->n; i++) {
        free(st->sql[i]);
    }
    free(st->sql);
    free(st->name);
    free(st->known);
    free(st);
}

void
idem_stmts_forget(struct idem_stmts *st)
{
    memset(st->known, 0, st->n);
}

/* Whether res failed with sqlstate (res may be NULL). */
static int
has_state(const PGresult *res, const char *sqlstate)
{
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    return state != NULL && strcmp(state, sqlstate) == 0;
}

/*
 * Prepare statement i and run it, in one pipeline (Parse, Bind/Execute,
 * Sync). Returns the Parse's result when it failed (42P05: the name exists
 * on this server connection, with our text), else the Execute's; *parsed
 * says whether the Parse succeeded. NULL when the connection was lost (or
 * memory ran out) before an answer. The implicit transaction commits at the
 * Sync, not at the Execute: an Execute that answered is not done until the
 * Sync's answer came, so an error after it (the server ending the connection
 * before the commit: it then sends the Execute's rows too) is the answer, and
 * a connection lost before the Sync's answer is NULL.
 */
static PGresult *
prepare_and_run(struct idem_store *s, size_t i, int nparams, const char *const *params,
                int *parsed)
{
    struct idem_stmts *st = s->stmts;
    PGconn *conn = s->conn;
    *parsed = 0;
    long long deadline = idem_answer_deadline(s);
    if (PQenterPipelineMode(conn) != 1) {
        return NULL;
    }
    PGresult *parse = NULL, *exec = NULL, *late = NULL;
    int sent = PQsendPrepare(conn, st->name[i], st->sql[i], 0, NULL) == 1 &&
               PQsendQueryPrepared(conn, st->name[i], nparams, params, NULL, NULL, 0) == 1;
    int synced = 0;
    /* Whatever went out ends in a Sync, so that the pipeline can be left. */
    if (PQpipelineSync(conn) == 1) {
        /* Each query's results end in a NULL; the Sync's result ends the pipeline. */
        int query = 0;
        while (PQstatus(conn) == CONNECTION_OK && query < 8) {
            idem_await(s, deadline);
            PGresult *r = PQgetResult(conn);
            if (r == NULL) {
                query++;
                continue;
            }
            if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
                PQclear(r);
                synced = 1;
                break;
            }
            if (sent && query == 0 && parse == NULL) {
                parse = r;
            } else if (sent && query == 1 && exec == NULL) {
                exec = r;
            } else if (late == NULL && PQresultStatus(r) == PGRES_FATAL_ERROR) {
                late = r; /* after the Execute's: its commit (at the Sync) failed */
            } else {
                PQclear(r);
            }
        }
    }
    PQexitPipelineMode(conn);
    if ((!synced || late != NULL) && exec != NULL && PQresultStatus(exec) != PGRES_FATAL_ERROR) {
        PQclear(exec); /* answered, but not committed (or not known to be) */
        exec = late;
        late = NULL;
    }
    PQclear(late);
    if (parse != NULL && PQresultStatus(parse) != PGRES_COMMAND_OK) {
        PQclear(exec);
        return parse;
    }
    *parsed = parse != NULL;
    PQclear(parse);
    return exec;
}

PGresult *
idem_stmts_exec(struct idem_store *s, size_t i, int nparams, const char *const *params)
{
    struct idem_stmts *st = s->stmts;
    if (PQtransactionStatus(s->conn) != PQTRANS_IDLE) {
        return idem_exec(s, st->sql[i], nparams, params);
    }
    PGresult *res = NULL;
    for (int try = 0; try < STMT_TRIES; try++) {
        PQclear(res);
        if (st->known[i]) {
            res = idem_exec_prepared(s, st->name[i], nparams, params);
            if (!has_state(res, "26000")) {
                return res; /* done, or a failure that is not about the name */
            }
            st->known[i] = 0; /* a new server connection, or DEALLOCATE ALL */
            continue;
        }
        int parsed;
        res = prepare_and_run(s, i, nparams, params, &parsed);
        if (!has_state(res, "42P05")) {
            st->known[i] = (unsigned char) parsed;
            return res;
        }
        st->known[i] = 1; /* prepared here by someone else: the same text */
    }
    /* A pooler kept us moving between server connections: run it unnamed. */
    PQclear(res);
    return idem_exec(s, st->sql[i], nparams, params);
}
