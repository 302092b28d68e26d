/*
 * test-idem-unreachable.c - which failed statements mean the idempotency
 * store cannot be reached (idem_state_passes): the acknowledger keeps a
 * finished job's completion through those (a failover) for as long as its
 * worker runs, and gives up after its tries on an SQL error, which the same
 * statement would meet again.
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
    return check_done("test-idem-unreachable");
}
