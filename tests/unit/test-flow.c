/*
 * test-flow.c - the per-queue flow state in shared memory (proc/flow.h):
 * nothing is received before the master has read the pause table, the
 * breaker's failure window, one trip per opening (here or on another host),
 * probes taken and given back, and what the master's publishing clears. One
 * process, a real shared region (shm_create).
 */
#include "check.h"
#include "flow.h"
#include "shm.h"

#include <stdio.h>

static void
test_without_region(void)
{
    /* Tools and tests without a region: every queue flows. */
    CHECK_INT(flow_mode("q", 1000), FLOW_RUN);
    CHECK_INT(flow_failure("q", 30, 1000), 0);
    CHECK_INT(flow_trip("q", 60, 1000), 0);
    CHECK_INT(flow_probe_take("q"), 0);
}

static void
test_window(void)
{
    /* A 30 s window: failures count while they are inside it. */
    int64_t t = 1000000;
    for (int i = 1; i <= 5; i++) {
        CHECK_INT(flow_failure("win", 30, t), i);
    }
    CHECK_INT(flow_failure("win", 30, t + 29), 6);
    CHECK_INT(flow_failure("win", 30, t + 30), 2); /* the first five are out */
    CHECK_INT(flow_failure("win", 30, t + 100), 1);
    /* Another queue counts apart. */
    CHECK_INT(flow_failure("other", 30, t + 100), 1);
    /* A long window (buckets of several seconds) still forgets old failures. */
    for (int i = 0; i < 10; i++) {
        flow_failure("long", 3600, t + i * 60);
    }
    CHECK_INT(flow_failure("long", 3600, t + 600), 11);
    CHECK_INT(flow_failure("long", 3600, t + 600 + 3600 + 120), 1);
}

static void
test_trip_and_probes(void)
{
    int64_t t = 2000000;
    flow_publish("b", FLOW_RUN, 0);
    CHECK_INT(flow_mode("b", t), FLOW_RUN);
    CHECK_INT(flow_trip("b", 60, t), 1);
    CHECK_INT(flow_trip("b", 60, t + 1), 0);     /* one opening, one trip */
    CHECK_INT(flow_mode("b", t + 1), FLOW_OPEN); /* at once on this host */
    CHECK(flow_open_until("b") == t + 60);
    CHECK_INT(flow_failure("b", 30, t + 1), 1); /* counting starts afresh */
    /* The master takes the request once; a publish of the old state (read
     * before the trip was taken) does not close it. */
    flow_publish("b", FLOW_RUN, 0);
    CHECK_INT(flow_mode("b", t + 2), FLOW_OPEN);
    CHECK_INT(flow_take_trip("b"), 60);
    CHECK_INT(flow_take_trip("b"), 0);
    flow_publish("b", FLOW_OPEN, t + 60);
    CHECK_INT(flow_mode("b", t + 2), FLOW_OPEN);
    /* The cooldown is over: two probes granted, taken, one given back. */
    flow_publish("b", FLOW_PROBING, t + 60);
    CHECK_INT(flow_probe_take("b"), 0);
    flow_grant_probes("b", 2);
    CHECK_INT(flow_probe_take("b"), 1);
    CHECK_INT(flow_probe_take("b"), 1);
    CHECK_INT(flow_probe_take("b"), 0);
    flow_probe_give_back("b");
    CHECK_INT(flow_probe_take("b"), 1);
    /* The first outcome decides. */
    flow_probe_done("b", 0);
    flow_probe_done("b", 1);
    CHECK_INT(flow_take_probe_result("b"), 2);
    CHECK_INT(flow_take_probe_result("b"), 0);
    /* Closed: receiving again, no probes left over. */
    flow_grant_probes("b", 1);
    flow_publish("b", FLOW_RUN, 0);
    CHECK_INT(flow_mode("b", t + 100), FLOW_RUN);
    CHECK_INT(flow_probe_take("b"), 0);
    /* An operator's pause. */
    flow_publish("b", FLOW_PAUSED, 0);
    CHECK_INT(flow_mode("b", t + 100), FLOW_PAUSED);
}

/* Another host opened the breaker (the master publishes it open): the failures
 * counted here before it are of the outage that opened it. Once it closes, this
 * host counts afresh, as the host that tripped does, rather than opening it again
 * on its first failure when the cooldown was shorter than the window. */
static void
test_an_opening_elsewhere_clears_the_window(void)
{
    int64_t t = 3000000;
    flow_publish("c", FLOW_RUN, 0);
    CHECK_INT(flow_failure("c", 30, t), 1);
    CHECK_INT(flow_failure("c", 30, t + 1), 2);
    flow_publish("c", FLOW_OPEN, t + 10);
    flow_publish("c", FLOW_PROBING, t + 10);
    flow_publish("c", FLOW_RUN, 0);
    CHECK_INT(flow_failure("c", 30, t + 12), 1);
    /* An operator's pause is no outage: the window runs on through it. */
    CHECK_INT(flow_failure("c", 30, t + 13), 2);
    flow_publish("c", FLOW_PAUSED, 0);
    flow_publish("c", FLOW_RUN, 0);
    CHECK_INT(flow_failure("c", 30, t + 14), 3);
}

/* Names share a long prefix: each keeps its own state. */
static void
test_long_names(void)
{
    char a[200], b[200];
    snprintf(a, sizeof(a), "%0150d-a", 0);
    snprintf(b, sizeof(b), "%0150d-b", 0);
    flow_publish(a, FLOW_PAUSED, 0);
    flow_publish(b, FLOW_RUN, 0);
    CHECK_INT(flow_mode(a, 1), FLOW_PAUSED);
    CHECK_INT(flow_mode(b, 1), FLOW_RUN);
}

int
main(void)
{
    test_without_region();
    CHECK(shm_create() >= 0);
    /* Before the master has read the pause table, nothing is received. */
    CHECK_INT(flow_mode("q", 1000), FLOW_PAUSED);
    flow_set_loaded();
    CHECK_INT(flow_mode("q", 1000), FLOW_RUN);
    test_window();
    test_trip_and_probes();
    test_an_opening_elsewhere_clears_the_window();
    test_long_names();
    return check_done("test-flow");
}
