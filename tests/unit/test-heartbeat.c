/*
 * test-heartbeat.c - when the heartbeat looks and when a running job is due
 * for an extension (heartbeat.h): half the visibility timeout for the usual
 * timeouts, early enough for a short one that the extension lands before the
 * message is visible again; how many are extended at one look when hundreds
 * are due together, and how a look is shared between queues.
 */
#include "check.h"
#include "config.h"
#include "heartbeat.h"
#include "job.h"
#include "sqs_limits.h"
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
test_extensions_stop_at_sqs_twelve_hours(void)
{
    /* SQS refuses an extension that would keep a message hidden past 12 hours
     * from its receive (the whole entry, InvalidParameterValue): the last ones
     * are cut to what is left, less the margin, and then there is none. */
    int limit = SQS_VISIBILITY_MAX - HEARTBEAT_LIMIT_MARGIN_S;
    CHECK(heartbeat_capped_visibility(30, 0) == 30);
    CHECK(heartbeat_capped_visibility(30, 3600) == 30);
    CHECK(heartbeat_capped_visibility(43200, 0) == limit);
    CHECK(heartbeat_capped_visibility(300, limit - 100) == 100);
    CHECK(heartbeat_capped_visibility(300, limit - 100.5) == 100);
    CHECK(heartbeat_capped_visibility(30, limit - 1) == 1);
    CHECK(heartbeat_capped_visibility(30, limit - 0.5) == 0);
    CHECK(heartbeat_capped_visibility(30, limit) == 0);
    CHECK(heartbeat_capped_visibility(30, 50000) == 0);
    for (double t = 0; t < 50000; t += 7.3) {
        int v = heartbeat_capped_visibility(120, t);
        CHECK(v >= 0 && v <= 120 &&
              (v == 0 || t + v <= SQS_VISIBILITY_MAX - HEARTBEAT_LIMIT_MARGIN_S));
    }
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

static void
test_quota_takes_pressing_and_room(void)
{
    double e[] = {29, 28, 27.5, 20, 16, 15};
    CHECK(heartbeat_quota(e, 6, 27, 50) == 6); /* room for all */
    CHECK(heartbeat_quota(e, 6, 27, 4) == 4);  /* oldest first */
    CHECK(heartbeat_quota(e, 6, 27, 1) == 3);  /* the pressing ones whatever the room */
    CHECK(heartbeat_quota(e, 6, 27, 0) == 3);
    CHECK(heartbeat_quota(e, 6, 0, 0) == 6); /* a short timeout: all pressing */
    CHECK(heartbeat_quota(e, 0, 27, 50) == 0);
    CHECK(heartbeat_must_after(30, 1.0) == 21.0); /* due at 15, 27 the last that could wait */
    CHECK(heartbeat_must_after(2, 0.5) == heartbeat_due_after(2, 0.5));
    for (int vis = 1; vis <= 600; vis++) {
        CHECK(heartbeat_must_after(vis, 1.0) >= heartbeat_due_after(vis, 1.0));
    }
}

/* The look's room split between queues: equal parts, what one does not
 * need to the others, never more than the room or than a queue's due jobs. */
static void
test_shares_are_fair_between_queues(void)
{
    size_t share[4];
    size_t busy_first[] = {500, 40};
    heartbeat_shares(busy_first, 2, 50, share);
    CHECK(share[0] == 25 && share[1] == 25); /* not 50 and 0 */
    size_t small_first[] = {10, 500, 500};
    heartbeat_shares(small_first, 3, 50, share);
    CHECK(share[0] == 10 && share[1] == 20 && share[2] == 20); /* 10 left to split */
    size_t fit[] = {3, 0, 7};
    heartbeat_shares(fit, 3, 50, share);
    CHECK(share[0] == 3 && share[1] == 0 && share[2] == 7);
    size_t tight[] = {9, 9, 9, 9};
    heartbeat_shares(tight, 4, 3, share); /* less room than queues: one each */
    CHECK(share[0] + share[1] + share[2] + share[3] == 3);
    for (size_t i = 0; i < 4; i++) {
        CHECK(share[i] <= 1);
    }
    heartbeat_shares(tight, 4, 0, share);
    CHECK(share[0] + share[1] + share[2] + share[3] == 0);
    /* every split: within the room and the wants, and all of the room used
     * while some queue still wants more */
    for (size_t a = 0; a < 60; a += 7) {
        for (size_t b = 0; b < 60; b += 5) {
            for (size_t room = 0; room <= 60; room += 6) {
                size_t d[] = {a, b, 13};
                heartbeat_shares(d, 3, room, share);
                size_t sum = share[0] + share[1] + share[2], want = a + b + 13;
                CHECK(share[0] <= a && share[1] <= b && share[2] <= 13);
                CHECK(sum == (want < room ? want : room));
                /* no queue gets more than another that still wants more, but one */
                for (size_t i = 0; i < 3; i++) {
                    for (size_t j = 0; j < 3; j++) {
                        CHECK(share[j] == d[j] || share[i] <= share[j] + 1);
                    }
                }
            }
        }
    }
}

/* Elapsed seconds since each job's extension, largest first (insertion sort:
 * the simulation's jobs are few). */
static void
sort_desc(double *ext, size_t n, double now, double *elapsed, size_t *order)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        for (; j > 0 && now - ext[order[j - 1]] < now - ext[i]; j--) {
            order[j] = order[j - 1];
        }
        order[j] = i;
    }
    for (size_t i = 0; i < n; i++) {
        elapsed[i] = now - ext[order[i]];
    }
}

#define SIM_JOBS 2000

/* n jobs of one queue, received together and running for ever, looked at
 * every interval give or take: gaps between looks vary from 0.1 to 1.9
 * intervals (the acker's pass delays a look, the next one comes sooner).
 * A job the budget put off must still be extended before its message would
 * be visible again, with half the window between due and the latest look
 * to spare, and every job must be extended in time when the timeout leaves room for
 * such late looks at all. Returns the most extensions one look made. */
static size_t
simulate(size_t n, int vis)
{
    static double ext[SIM_JOBS], elapsed[SIM_JOBS];
    static size_t order[SIM_JOBS];
    static int put_off[SIM_JOBS];
    struct config_queue qc = {.visibility_timeout = vis};
    struct wqueue q = {.cfg = &qc};
    struct worker w = {.queues = &q, .nqueues = 1};
    double interval = heartbeat_interval(&w), now = 0;
    double due_after = heartbeat_due_after(vis, interval);
    double must_after = heartbeat_must_after(vis, interval);
    size_t most = 0, late = 0;
    unsigned seed = 7;
    int roomy = due_after + 2 * interval + HEARTBEAT_SLACK_S <= vis;
    /* half the window from due to the last look that could still wait */
    double spare = (vis - 2 * interval - HEARTBEAT_SLACK_S - due_after) / 2;
    spare = spare > 0 ? spare : 0;
    for (size_t i = 0; i < n; i++) {
        ext[i] = 0;
        put_off[i] = 0;
    }
    for (int look = 0; look < 400; look++) {
        seed = seed * 1103515245u + 12345u;
        now += interval * (0.1 + 1.8 * (double) ((seed >> 16) % 1000) / 1000.0);
        sort_desc(ext, n, now, elapsed, order);
        size_t m = 0;
        while (m < n && elapsed[m] >= due_after) {
            m++;
        }
        size_t k = heartbeat_quota(elapsed, m, must_after, HEARTBEAT_PER_LOOK);
        for (size_t i = 0; i < k; i++) {
            if ((roomy || put_off[order[i]]) && elapsed[i] + HEARTBEAT_SLACK_S > vis) {
                late++; /* it would land too late */
            }
            if (put_off[order[i]] && elapsed[i] + HEARTBEAT_SLACK_S + spare > vis) {
                late++; /* put off past the margin it must keep for slow calls */
            }
            ext[order[i]] = now;
            put_off[order[i]] = 0;
        }
        for (size_t i = k; i < m; i++) {
            late += elapsed[i] >= must_after; /* what waits must be able to */
            put_off[order[i]] = 1;
        }
        most = k > most ? k : most;
    }
    CHECK(late == 0);
    return most;
}

static void
test_many_due_together_are_spread(void)
{
    /* Jobs due together that the window can spread: one look's budget at a
     * time (250 in the 6 s to spare of a 30 s timeout, 512 in 120 s). */
    CHECK(simulate(250, 30) <= HEARTBEAT_PER_LOOK);
    CHECK(simulate(512, 120) <= HEARTBEAT_PER_LOOK);
    /* More than the window can spread: the budget gives way, nothing lapses. */
    CHECK(simulate(SIM_JOBS, 30) > HEARTBEAT_PER_LOOK);
    for (int vis = 1; vis <= 40; vis++) {
        simulate(300, vis);
    }
}

#define PLAN_JOBS 200

/* Two queues (30 s timeouts: looked at every second, due after 15 s,
 * pressing after 21 s) and jobs made up for heartbeat_plan. */
struct plan_case {
    struct config_queue qc[2];
    struct wqueue q[2];
    struct worker w;
    struct twice_job jobs[PLAN_JOBS];
    struct twice_job *all[PLAN_JOBS], *out[PLAN_JOBS];
    size_t n, first[2], due[2], take[2];
};

static void
plan_init(struct plan_case *c)
{
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < 2; i++) {
        c->qc[i].visibility_timeout = 30;
        c->q[i].cfg = &c->qc[i];
    }
    c->w.queues = c->q;
    c->w.nqueues = 2;
}

/* count jobs of queue qi last extended `age` seconds before 1000 s. */
static void
plan_add(struct plan_case *c, int qi, size_t count, double age)
{
    for (size_t i = 0; i < count && c->n < PLAN_JOBS; i++) {
        struct twice_job *j = &c->jobs[c->n];
        j->queue = &c->q[qi];
        double at = 1000 - age - 0.001 * (double) i; /* the later ones older */
        j->extended_at.tv_sec = (time_t) at;
        j->extended_at.tv_nsec = (long) ((at - (double) (time_t) at) * 1e9);
        c->all[c->n++] = j;
    }
}

static void
plan_run(struct plan_case *c)
{
    struct timespec now = {1000, 0};
    heartbeat_plan(&c->w, c->all, c->n, heartbeat_interval(&c->w), &now, c->out, c->first, c->due,
                   c->take);
}

/* Every job out[first[qi]..) of queue qi is of that queue, and the take
 * chosen are at least as old as the due ones left. */
static void
check_groups(const struct plan_case *c)
{
    for (int qi = 0; qi < 2; qi++) {
        double youngest_taken = 1e9, oldest_left = 0;
        for (size_t i = 0; i < c->due[qi]; i++) {
            const struct twice_job *j = c->out[c->first[qi] + i];
            CHECK(j->queue == &c->q[qi]);
            double age = 1000 - ((double) j->extended_at.tv_sec + j->extended_at.tv_nsec / 1e9);
            if (i < c->take[qi]) {
                youngest_taken = age < youngest_taken ? age : youngest_taken;
            } else {
                oldest_left = age > oldest_left ? age : oldest_left;
            }
        }
        CHECK(c->due[qi] == c->take[qi] || youngest_taken >= oldest_left);
    }
}

static void
test_plan_shares_the_look_between_queues(void)
{
    static struct plan_case c;
    /* both busy, the first queue's jobs first in the snapshot: half each */
    plan_init(&c);
    plan_add(&c, 0, 70, 16);
    plan_add(&c, 1, 70, 16);
    plan_add(&c, 0, 20, 5); /* not due yet */
    plan_run(&c);
    CHECK(c.due[0] == 70 && c.due[1] == 70);
    CHECK(c.take[0] == 25 && c.take[1] == 25);
    CHECK(c.first[0] == 0 && c.first[1] == 70);
    check_groups(&c);
    /* what one queue does not need goes to the other */
    plan_init(&c);
    plan_add(&c, 1, 100, 17);
    plan_add(&c, 0, 10, 16);
    plan_run(&c);
    CHECK(c.take[0] == 10 && c.take[1] == 40);
    check_groups(&c);
    /* pressing jobs go whatever the share; the other queue keeps its own */
    plan_init(&c);
    plan_add(&c, 0, 60, 22);
    plan_add(&c, 1, 60, 16);
    plan_run(&c);
    CHECK(c.take[0] == 60 && c.take[1] == 25);
    check_groups(&c);
    /* a run past its time limit is timeout.c's, not extended */
    plan_init(&c);
    plan_add(&c, 0, 3, 16);
    c.jobs[1].run_ms = -1;
    plan_run(&c);
    CHECK(c.due[0] == 2 && c.take[0] == 2 && c.due[1] == 0 && c.take[1] == 0);
    CHECK(c.out[0] == &c.jobs[0] && c.out[1] == &c.jobs[2]);
}

static void
test_call_budget_ends_before_the_lease(void)
{
    /* An acknowledger's SQS call cut at the budget, then a look one interval
     * later, still extends a lease the last look extended: due + interval +
     * budget stays under visibility + lease_margin (twice over, but 1 s at
     * the least: a lease_margin of 0 on a 1 s queue leaves no room at all). */
    for (int vis = 1; vis <= 600; vis++) {
        for (int margin = 0; margin <= 10; margin += 2) {
            double interval = vis / 4.0 < 0.25 ? 0.25 : vis / 4.0 > 1.0 ? 1.0 : vis / 4.0;
            long ms = heartbeat_budget_ms(vis, margin, interval);
            double spare = vis + margin - heartbeat_due_after(vis, interval) - interval;
            CHECK(ms >= 1000);
            CHECK(ms == 1000 || ms / 1000.0 <= spare / 2 + 0.001);
        }
    }
    CHECK(heartbeat_budget_ms(30, 5, 1.0) == 9500); /* the defaults */
    CHECK(heartbeat_budget_ms(4, 2, 1.0) == 1500);
}

int
main(void)
{
    test_plan_shares_the_look_between_queues();
    test_quota_takes_pressing_and_room();
    test_shares_are_fair_between_queues();
    test_many_due_together_are_spread();
    test_usual_timeouts_at_half();
    test_short_timeouts_land_in_time();
    test_extensions_stop_at_sqs_twelve_hours();
    test_interval_follows_the_shortest_queue();
    test_call_budget_ends_before_the_lease();
    return check_done("test-heartbeat");
}
