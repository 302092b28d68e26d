/*
 * test-idem-unreachable.c - which failed statements mean the idempotency
 * store cannot be reached (idem_state_passes): the acknowledger keeps a
 * finished job's completion through those (a failover) for as long as its
 * worker runs, and gives up after its tries on an SQL error, which the same
 * statement would meet again; and which failures on a connection that stays
 * up are the store's, so that it is made again (idem_state_stale).
 */
#include "check.h"
#include "idem_internal.h"

int
main(void)
{
    /* the store unreachable or failing over: worth waiting for */
    CHECK_INT(idem_state_passes("-"), 1);     /* no answer came */
    CHECK_INT(idem_state_passes("08006"), 1); /* connection failure */
    CHECK_INT(idem_state_passes("08001"), 1); /* could not connect */
    CHECK_INT(idem_state_passes("57P01"), 1); /* admin shutdown: a failover's old primary */
    CHECK_INT(idem_state_passes("57P02"), 1); /* crash shutdown */
    CHECK_INT(idem_state_passes("57P03"), 1); /* cannot connect now: starting up */
    CHECK_INT(idem_state_passes("25006"), 1); /* read-only: now a standby */
    /* SQL errors: the same statement fails again */
    CHECK_INT(idem_state_passes(""), 0);      /* no failure recorded */
    CHECK_INT(idem_state_passes("42P01"), 0); /* undefined table */
    CHECK_INT(idem_state_passes("42501"), 0); /* insufficient privilege */
    CHECK_INT(idem_state_passes("23505"), 0); /* unique violation */
    CHECK_INT(idem_state_passes("57014"), 0); /* statement timeout: a live connection */
    /* a store fault on a live connection: made again before its next use */
    CHECK_INT(idem_state_stale("57014"), 1); /* statement_timeout, a cancel */
    CHECK_INT(idem_state_stale("55P03"), 1); /* lock_timeout */
    CHECK_INT(idem_state_stale("42501"), 1); /* a revoked grant */
    CHECK_INT(idem_state_stale("25006"), 1); /* default_transaction_read_only */
    CHECK_INT(idem_state_stale("42P01"), 1); /* a search_path that misses the table */
    CHECK_INT(idem_state_stale("53100"), 1); /* disk full */
    /* the statement's own data, contention, an earlier error, no answer: kept */
    CHECK_INT(idem_state_stale("22P05"), 0); /* a key the encoding cannot hold */
    CHECK_INT(idem_state_stale("23505"), 0); /* unique violation */
    CHECK_INT(idem_state_stale("40001"), 0); /* serialization failure */
    CHECK_INT(idem_state_stale("40P01"), 0); /* deadlock */
    CHECK_INT(idem_state_stale("25P02"), 0); /* in an aborted transaction */
    CHECK_INT(idem_state_stale("-"), 0);
    CHECK_INT(idem_state_stale(""), 0);
    return check_done("test-idem-unreachable");
}
