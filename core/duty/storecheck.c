/*
 * storecheck.c - a reload's check of a changed idempotency.dsn (see
 * storecheck.h): the identity (idem.h) of what each dsn reaches, compared.
 */
#include "storecheck.h"

#include "config.h"
#include "diag.h"
#include "idem.h"

#include "clock.h"

#include <stdio.h>
#include <string.h>

/* One check's wait (the tick of its store's statements and connect): the
 * tick alone bounds the whole check, connect and statements together. */
struct check_wait {
    long long until;         /* monotonic ms: given up then */
    int (*stop_asked)(void); /* may be NULL */
};

/* Give the check up past its time or at a stop. */
static int
check_tick(void *arg)
{
    struct check_wait *w = arg;
    if (w->stop_asked != NULL && w->stop_asked()) {
        return 1;
    }
    return clock_mono_ms() >= w->until;
}

/* Open a store on dsn for one check: its connect and statements given up
 * at cw's time or stop (check_tick), which cw is set up for here. 0, or -1
 * with err; *s to idem_close either way. */
static int
open_checked(const char *dsn, const char *table, const char *owner, int (*stop_asked)(void),
             struct check_wait *cw, struct idem_store **s, char *err, size_t cap)
{
    *cw = (struct check_wait){clock_mono_ms() + STORECHECK_MS, stop_asked};
    struct idem_wait w = {.answer_ms = 0, .tick_ms = 100, .tick = check_tick, .arg = cw};
    return idem_open_waiting(dsn, table, owner, &w, s, err, cap);
}

/* Why a store's workers could never claim (what the start refuses too). */
enum no_claims {
    CLAIMS_OK = 0,
    CLAIMS_NO_WRITES,  /* idem_takes_writes: a standby, or default_transaction_read_only */
    CLAIMS_NOT_GRANTED /* idem_claim_allowed: the role lacks a grant on the key table */
};

/* Whether s's workers could claim: CLAIMS_OK, another enum no_claims with
 * why in err, or -1 with err when that could not be asked. */
static int
claims_possible(struct idem_store *s, char *err, size_t cap)
{
    int rc = idem_takes_writes(s, err, cap);
    if (rc != 0) {
        return rc > 0 ? CLAIMS_NO_WRITES : -1;
    }
    rc = idem_claim_allowed(s, err, cap);
    return rc > 0 ? CLAIMS_NOT_GRANTED : rc;
}

/* Connect to dsn just long enough to read what it reaches, and (no_claims
 * not NULL) whether its workers could claim (claims_possible: an enum
 * no_claims with why in err), within STORECHECK_MS, given up at once when
 * stop_asked (may be NULL) says so. 0, or -1 with err. */
static int
identity_of(const char *dsn, const char *table, int (*stop_asked)(void), struct idem_identity *out,
            int *no_claims, char *err, size_t cap)
{
    struct check_wait cw;
    struct idem_store *s = NULL;
    int rc = open_checked(dsn, table, "twiced check", stop_asked, &cw, &s, err, cap);
    if (rc == 0) {
        rc = idem_identity(s, out, err, cap);
    }
    if (rc == 0 && no_claims != NULL) {
        *no_claims = claims_possible(s, err, cap);
        rc = *no_claims < 0 ? -1 : 0;
    }
    idem_close(s);
    if (rc != 0 && clock_mono_ms() >= cw.until) {
        snprintf(err, cap,
                 "its server does not answer within %d s: it may take the connection and say "
                 "nothing (a stopped server or pooler)",
                 STORECHECK_MS / 1000);
    }
    return rc;
}

/* Add the problem at the dsn's line of now. */
static int
refuse(const struct config *now, struct diag *d, const char *what)
{
    const char *file = now->idempotency.dsn_src != NULL ? now->idempotency.dsn_src : now->file;
    diag_add(d, file, now->idempotency.dsn_line, "idempotency.dsn: %s", what);
    return 1;
}

/* What the running store reaches, into *out: what the health check learned
 * (running, NULL: nothing), or, when that is nothing or has no keys table
 * yet (the workers create it after the health check's first connect), asked
 * of was's dsn now, unless it is the new one too. 1 when known, else 0 with
 * err. */
static int
running_identity(const struct config *was, const struct idem_identity *running, int same,
                 int (*stop_asked)(void), struct idem_identity *out, char *err, size_t cap)
{
    int known = running != NULL;
    if (known) {
        *out = *running;
    }
    if ((known && out->table_oid[0] != '\0') || same) {
        snprintf(err, cap, "%s", known ? "" : "not learned yet");
        return known;
    }
    struct idem_identity asked;
    if (identity_of(was->idempotency.dsn, was->idempotency.table, stop_asked, &asked, NULL, err,
                    cap) == 0) {
        *out = asked;
        return 1;
    }
    return known;
}

/* Refuse a dsn that reaches other keys than the running store's (why says
 * how); same: it is written as before, and what it names changed under it. */
static int
refuse_moved(const struct config *now, struct diag *d, int same, const char *why, int gen)
{
    char msg[1600];
    if (same) {
        snprintf(msg, sizeof(msg),
                 "it now reaches other keys than generation %d uses: %s; it is written as "
                 "before, so what it relies on changed under it (a service file, a host "
                 "name, the environment), and the running workers reach them too once they "
                 "reconnect: restore it, or restart twiced to move the keys",
                 gen, why);
    } else {
        snprintf(msg, sizeof(msg),
                 "a reload cannot move the keys: %s (the running jobs' keys stay where "
                 "generation %d keeps them, so a message already handled could run again); "
                 "a dsn may change the host, port, password or sslmode of the same "
                 "database; restart twiced to move it",
                 why, gen);
    }
    return refuse(now, d, msg);
}

int
storecheck_reload(const struct config *was, const struct config *now,
                  const struct idem_identity *running, int gen, int (*stop_asked)(void),
                  struct diag *d)
{
    int same = strcmp(was->idempotency.dsn, now->idempotency.dsn) == 0;
    struct idem_identity old_id, new_id;
    char err[768], why[512], msg[1600];
    int no_claims = CLAIMS_OK;
    if (identity_of(now->idempotency.dsn, now->idempotency.table, stop_asked, &new_id, &no_claims,
                    err, sizeof(err)) != 0) {
        if (same) {
            return 0; /* the store is down: the new generation waits for it, as the old does */
        }
        snprintf(msg, sizeof(msg),
                 "the new dsn does not connect (%s); a reload that changes the dsn must check "
                 "that it reaches the keys generation %d uses; reload again once it answers",
                 err, gen);
        return refuse(now, d, msg);
    }
    if (no_claims != CLAIMS_OK) {
        /* A standby, default_transaction_read_only, or a role without the
         * grants a claim needs (the start's check): its workers could never
         * migrate or claim, and the generation would only fail at ready_timeout.
         * Written as before too: the old workers wait for a promotion, the
         * setting's reset or the grant, as for an outage, and a reload can
         * wait with them. */
        snprintf(msg, sizeof(msg),
                 "%s (a generation started on it could never be ready); generation %d keeps "
                 "running; reload again once %s",
                 err, gen, no_claims == CLAIMS_NO_WRITES ? "it takes writes" : "it is granted");
        return refuse(now, d, msg);
    }
    if (!running_identity(was, running, same, stop_asked, &old_id, err, sizeof(err))) {
        if (same) {
            return 0; /* nothing learned to compare with; asking again would say the same */
        }
        snprintf(msg, sizeof(msg),
                 "cannot tell which database generation %d uses: its store never answered "
                 "the master and does not now (%s); restart twiced to change the dsn",
                 gen, err);
        return refuse(now, d, msg);
    }
    if (idem_identity_same(&old_id, &new_id, why, sizeof(why))) {
        return 0;
    }
    return refuse_moved(now, d, same, why, gen);
}

int
storecheck_start(const struct config *c, int (*stop_asked)(void), struct diag *d)
{
    struct check_wait cw;
    struct idem_store *s = NULL;
    char err[768];
    int no_claims = CLAIMS_OK;
    if (open_checked(c->idempotency.dsn, c->idempotency.table, "twiced start", stop_asked, &cw, &s,
                     err, sizeof(err)) == 0) {
        no_claims = claims_possible(s, err, sizeof(err));
    }
    idem_close(s);
    return no_claims > 0 ? refuse(c, d, err) : 0;
}
