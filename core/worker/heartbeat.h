/*
 * heartbeat.h - keeping jobs in flight alive. A job running longer than
 * half its visibility timeout (sooner when the timeout is short, so that
 * the extension lands before it lapses) gets its SQS visibility and its
 * lease extended together, so slowness is never mistaken for death; at the
 * drain deadline, what still runs is given back. One look makes at most
 * HEARTBEAT_PER_LOOK extensions unless more are pressing. It runs on the acker's
 * thread, between the acker's passes, with the acker's connections: every
 * queue's visibility first, then the leases, and a store that is down or
 * does not answer a new connection never makes it wait for a reconnect
 * (acker.c), so the messages of jobs that run on stay hidden through an
 * outage. While the acker waits for PostgreSQL to answer a statement (a
 * server that froze on an established connection answers late or never),
 * heartbeat_keep_hidden goes on looking from inside that wait
 * (idem_set_wait): visibility only, the leases it leaves owed are extended
 * at the next look between passes, once the store answers.
 */
#ifndef TWICE_HEARTBEAT_H
#define TWICE_HEARTBEAT_H

#include <stddef.h>
#include <time.h>

struct idem_store;
struct lifecycle_verdict;
struct twice_job;
struct registry;
struct sqs_client;
struct worker;

/* What an extension may take to land after the look that found it due: the
 * acker's wait and its pass in progress, the SQS call itself. */
#define HEARTBEAT_SLACK_S 1.0

/* How much earlier than twice SQS may have started counting a message's 12
 * hours (its receive's answer on the way, clocks): an extension stops short
 * of the limit by this much (seconds). */
#define HEARTBEAT_LIMIT_MARGIN_S 10

/* The heartbeat's state, owned by the acknowledger. */
struct heartbeat {
    struct worker *w;
    struct registry *reg;   /* the jobs in flight */
    struct sqs_client *sqs; /* the acker's SQS client */
    /* The acker's store, connected on demand; NULL while unreachable or still
     * reconnecting (it does not wait for a reconnect). */
    struct idem_store *(*store)(void *arg);
    void *store_arg;
    /* Carry out a timeout's verdict on a running job's message (timeout.h), with
     * store_arg. */
    void (*act_overrun)(void *arg, struct twice_job *j, const struct lifecycle_verdict *v);
    double interval;           /* seconds between looks: heartbeat_interval(w) */
    struct timespec last_look; /* monotonic: when the last look began */
    time_t failure_logged;     /* failures are reported every 10 s, not every tick */
    time_t last_advice;        /* when the p99s were last published */
};

/* How often the heartbeat looks (seconds): a quarter of the shortest
 * visibility timeout of the worker's queues, within 0.25 s .. 1 s. */
double heartbeat_interval(const struct worker *w);

/* After how long (seconds since its visibility was last set) a job of a
 * queue with this visibility timeout is due, when the heartbeat looks every
 * `interval` seconds: half the timeout, or earlier when half would leave less
 * than one interval and HEARTBEAT_SLACK_S for the extension to land; 0 (at
 * every look) for a timeout too short for that. Pure. */
double heartbeat_due_after(int visibility_timeout, double interval);

/* The visibility an extension asks for, `since_receive` seconds after its
 * message was received: the queue's visibility timeout, cut so that the
 * message is hidden no longer than SQS's 12 hours (SQS_VISIBILITY_MAX, less
 * HEARTBEAT_LIMIT_MARGIN_S) from its receive, which SQS refuses past
 * (InvalidParameterValue, the whole extension lost); 0 when nothing is left
 * to extend by. Pure. */
int heartbeat_capped_visibility(int visibility_timeout, double since_receive);

/* How long one SQS call on the acknowledger's thread may take, retries
 * included (ms). The heartbeat runs on that thread between passes, so a
 * call that hangs (a black-holed connection, an answer that never comes)
 * held the leases' extensions for as long as its attempts lasted (30 s
 * each): a job's lease lapsed while it ran, and its message, back, ran a
 * second time beside it. A call must end while the lease extended last
 * still holds: half of what a lease has left when its extension is due
 * (visibility + lease_margin - due after - one interval), at least 1 s. A
 * call cut short is tried again in a later pass, after the heartbeat.
 * Pure; heartbeat_call_budget_ms takes the least over a worker's queues. */
long heartbeat_budget_ms(int visibility_timeout, int lease_margin, double interval);
long heartbeat_call_budget_ms(const struct worker *w);

/* The extensions one look makes when none is pressing: five batch calls.
 * More due jobs than that (hundreds received together, all slow) are spread
 * over the following looks, oldest first, so that one look does not hold
 * the acker's deletes and completions for dozens of SQS round trips. */
#define HEARTBEAT_PER_LOOK 50

/* After how long a due job is pressing: halfway from when it is due to the
 * last look that could still put it off (the next look, one interval later
 * and itself possibly late by as much, must still land it), so that a job
 * put off keeps half of that window against slow SQS calls. For short
 * timeouts, when it is due. A pressing job is extended at this look whatever
 * the budget. Pure. */
double heartbeat_must_after(int visibility_timeout, double interval);

/* How many of a queue's due jobs to extend at this look: elapsed[0..m) are
 * their seconds since their last extension, largest first; all that are
 * pressing (>= must_after), and more, oldest first, while the look's room
 * (extensions it may still make) lasts. Pure. */
size_t heartbeat_quota(const double *elapsed, size_t m, double must_after, size_t room);

/* Split a look's room between nq queues with due[i] due jobs each, into
 * share[i]: each queue gets up to an equal part, and what a queue does not
 * need goes to the others, so a busy queue early in twice.conf cannot leave
 * a later one only its pressing jobs. The shares add up to at most room
 * (to all due jobs when they fit). Pure. */
void heartbeat_shares(const size_t *due, size_t nq, size_t room, size_t *share);

/* Which jobs in flight one look extends: all[0..n) is a snapshot of them,
 * looked at now, every `interval` seconds. A queue's due jobs (not past
 * their time limit, which timeout.c acts on) go to out, which has room for
 * n, grouped by queue: queue qi has due[qi] of them from out[first[qi]],
 * and extends the first take[qi]: its share of HEARTBEAT_PER_LOOK
 * (heartbeat_shares), oldest extension first, and its pressing jobs
 * whatever the share (heartbeat_quota). first, due and take have
 * w->nqueues entries. No I/O and no clock of its own: testable with made-up
 * jobs. */
void heartbeat_plan(const struct worker *w, struct twice_job *const *all, size_t n,
                    double interval, const struct timespec *now, struct twice_job **out,
                    size_t *first, size_t *due, size_t *take);

/* Extend what is due, and the leases owed; called every hb->interval
 * seconds between the acker's passes. */
void heartbeat_run(struct heartbeat *hb, const struct timespec *now);
/* Extend the visibility of what is due, without the store (its leases are
 * then owed): called every hb->interval seconds while the acker waits for
 * PostgreSQL (acker.c), on the acker's thread. */
void heartbeat_keep_hidden(struct heartbeat *hb, const struct timespec *now);
/* The drain deadline passed: give back every job still running (not one that
 * finished DONE and waits in the acker for its completion: acker.c settles it). */
void heartbeat_give_back(struct heartbeat *hb);

#endif
