/*
 * heartbeat.h - keeping jobs in flight alive. A job running longer than
 * half its visibility timeout gets its SQS visibility and its lease
 * extended together, so slowness is never mistaken for death; at the drain
 * deadline, what still runs is given back. It runs on the acker's thread,
 * between the acker's passes, with the acker's connections.
 */
#ifndef TWICE_HEARTBEAT_H
#define TWICE_HEARTBEAT_H

#include <time.h>

struct idem_store;
struct lifecycle_verdict;
struct twice_job;
struct registry;
struct sqs_client;
struct worker;

/* The heartbeat's state, owned by the acknowledger. */
struct heartbeat {
    struct worker *w;
    struct registry *reg;   /* the jobs in flight */
    struct sqs_client *sqs; /* the acker's SQS client */
    /* The acker's store, connected on demand; NULL while unreachable. */
    struct idem_store *(*store)(void *arg);
    void *store_arg;
    /* Carry out a timeout's verdict on a running job's message (timeout.h), with
     * store_arg. */
    void (*act_overrun)(void *arg, struct twice_job *j, const struct lifecycle_verdict *v);
    time_t failure_logged; /* failures are reported every 10 s, not every tick */
    time_t last_advice;    /* when the p99s were last published */
};

/* Extend what is due, about once a second. */
void heartbeat_run(struct heartbeat *hb, const struct timespec *now);
/* The drain deadline passed: give back every job still in flight. */
void heartbeat_give_back(struct heartbeat *hb);

#endif
