/*
 * test-heartbeat.c - when the heartbeat looks and when a running job is due
 * for an extension (heartbeat.h): half the visibility timeout for the usual
 * timeouts, early enough for a short one that the extension lands before the
 * message is visible again.
 */
#include "check.h"
#include "config.h"
#include "heartbeat.h"
#include "worker.h"

#include <string.h>

/* The latest an extension can land: due, plus one interval until the next
 * look, plus the slack the call is allowed. */
static double
latest_landing(int vis, double interval)
{
    return heartbeat_due_after(vis, interval) + interval + HEARTBEAT_SLACK_S;
}

static void
test_usual_timeouts_at_half(void)
{
    CHECK(heartbeat_due_after(30, 1.0) == 15.0);
    CHECK(heartbeat_due_after(300, 1.0) == 150.0);
    CHECK(heartbeat_due_after(43200, 1.0) == 21600.0);
    CHECK(heartbeat_due_after(4, 1.0) == 2.0);
    CHECK(heartbeat_due_after(5, 1.0) == 2.5);
}

static void
test_short_timeouts_land_in_time(void)
{
    /* Every timeout the configuration allows (1 s up): an extension found due at
     * the last look lands before the timeout lapses, or the job is due at every
     * look. */
    for (int vis = 1; vis <= 120; vis++) {
        struct config_queue qc;
        memset(&qc, 0, sizeof(qc));
        qc.visibility_timeout = vis;
        struct wqueue q;
        memset(&q, 0, sizeof(q));
        q.cfg = &qc;
        struct worker w;
        memset(&w, 0, sizeof(w));
        w.queues = &q;
        w.nqueues = 1;
        double interval = heartbeat_interval(&w);
        CHECK(interval >= 0.25 && interval <= 1.0);
        double due = heartbeat_due_after(vis, interval);
        CHECK(due >= 0 && due <= vis / 2.0);
        CHECK(latest_landing(vis, interval) <= vis || due == 0);
    }
    CHECK(heartbeat_due_after(3, 0.75) == 1.25);
    CHECK(heartbeat_due_after(2, 0.5) == 0.5);
    CHECK(heartbeat_due_after(1, 0.25) == 0.0);
}

static void
test_interval_follows_the_shortest_queue(void)
{
    struct config_queue qc[3];
    struct wqueue q[3];
    memset(qc, 0, sizeof(qc));
    memset(q, 0, sizeof(q));
    int vis[3] = {30, 2, 600};
    for (int i = 0; i < 3; i++) {
        qc[i].visibility_timeout = vis[i];
        q[i].cfg = &qc[i];
    }
    struct worker w;
    memset(&w, 0, sizeof(w));
    w.queues = q;
    w.nqueues = 1;
    CHECK(heartbeat_interval(&w) == 1.0); /* 30 s: once a second */
    w.nqueues = 3;
    CHECK(heartbeat_interval(&w) == 0.5); /* the 2 s queue: a quarter */
    qc[1].visibility_timeout = 1;
    CHECK(heartbeat_interval(&w) == 0.25); /* never below the acker's wait */
    w.nqueues = 0;
    CHECK(heartbeat_interval(&w) == 1.0);
}

int
main(void)
{
    test_usual_timeouts_at_half();
    test_short_timeouts_land_in_time();
    test_interval_follows_the_shortest_queue();
    return check_done("test-heartbeat");
}
