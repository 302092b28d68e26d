/*
 * test-readiness.c - the /readyz decision (httpd_readiness): workers, then
 * the store, then each queue's receives, with the cause of failing receives
 * (an SQS outage is named as such, not only as receives that stopped).
 */
#include "check.h"
#include "httpd.h"

#include <stdio.h>

int
main(void)
{
    const char *queues[] = {"jobs", "more"};
    const int waits[] = {1, 20};
    char reason[256];
    double now = 1000;

    const double fresh[] = {999, 990};
    CHECK_INT(
        httpd_readiness(1, "", "", queues, waits, fresh, NULL, 2, now, reason, sizeof(reason)), 1);
    CHECK_STR(reason, "ready");

    /* jobs received nothing for 30 s (limit 2 x (1 + slack)): the failing code names why. */
    const double stale[] = {970, 990};
    const char *failing[] = {"ReceiveMessage fails: CouldNotConnect", ""};
    CHECK_INT(
        httpd_readiness(1, "", "", queues, waits, stale, failing, 2, now, reason, sizeof(reason)),
        0);
    CHECK_CONTAINS(reason, "queue jobs: no successful receive for 30s");
    CHECK_CONTAINS(reason, "; ReceiveMessage fails: CouldNotConnect");
    /* Without a known cause, the symptom alone. */
    const char *unknown[] = {"", ""};
    httpd_readiness(1, "", "", queues, waits, stale, unknown, 2, now, reason, sizeof(reason));
    CHECK(strstr(reason, "fails") == NULL);
    /* Never received. */
    const double never[] = {999, 0};
    const char *second[] = {"", "ReceiveMessage fails: AccessDenied"};
    httpd_readiness(1, "", "", queues, waits, never, second, 2, now, reason, sizeof(reason));
    CHECK_STR(reason, "queue more has not received yet; ReceiveMessage fails: AccessDenied");

    /* The workers and the store come first. */
    httpd_readiness(0, "worker 1: starting", "", queues, waits, stale, failing, 2, now, reason,
                    sizeof(reason));
    CHECK_STR(reason, "workers are not ready: worker 1: starting");
    httpd_readiness(1, "", "idempotency store does not answer: x", queues, waits, stale, failing,
                    2, now, reason, sizeof(reason));
    CHECK_STR(reason, "idempotency store does not answer: x");
    return check_done("test-readiness");
}
