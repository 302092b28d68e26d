/*
 * worker.h - the state a worker process's threads share: the process
 * (struct worker: configuration, plugins, queues, the acker) and each queue
 * it consumes (struct wqueue: the jobs waiting for a handler and the slots
 * that bound them). The threads that move jobs through it:
 *
 *   receiver (receivers per queue)  receive, route, derive keys, claim a batch
 *   handlers (concurrency)          run handle(); FIFO groups in order
 *   acker (one per worker)          complete, delete, retry, dead-letter, heartbeat
 *
 * A job is owned by one of them at a time and always ends in the acker,
 * which is the only place that frees jobs. The queue's job list and slots
 * are wqueue.c's; the process itself is process.c's. Nothing outside the
 * worker layer uses this header.
 */
#ifndef TWICE_WORKER_H
#define TWICE_WORKER_H

#include "atomics.h"

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include "lifecycle.h"

struct acker;
struct advice_window;
struct config;
struct config_queue;
struct creds_chain;
struct idem_lost;
struct keytmpl;
struct plugin_instance;
struct sqs_endpoint;
struct throttles;
struct twice_job;

/* A queue as a worker consumes it. */
struct wqueue {
    struct worker *w;
    const struct config_queue *cfg;
    struct lifecycle_queue policy;                /* cfg's retry and conflict policy */
    const struct plugin_instance *plugin;         /* the queue's plugin, or NULL when routed */
    const struct plugin_instance **route_plugins; /* parallel to cfg->routes */
    struct keytmpl *key; /* cfg's `key` compiled (kept for the process's life), or NULL */
    /* Its DLQ's MaximumMessageSize (0: unknown): told at readiness (ready.c),
     * then read and lowered by the acker's thread only, as SQS says (dlq.h). */
    size_t dlq_max_bytes;

    pthread_t *receivers; /* cfg->receivers of them */
    size_t nreceivers;
    pthread_t *handlers;
    size_t nhandlers;

    /* Jobs (or FIFO chains) waiting for a handler, and the slot count. */
    pthread_mutex_t mu;
    pthread_cond_t work_cv;  /* a job is ready, or stop */
    pthread_cond_t space_cv; /* a slot came free, or stop */
    struct twice_job *head;
    struct twice_job *tail;
    int inflight;                 /* received and not yet handed to the acker: <= concurrency */
    int running;                  /* inside handle() right now */
    int overruns;                 /* of them, runs past the timeout already acted on (timeout.c) */
    struct advice_window *advice; /* per plugin (w->plugins order): recent durations */
    int stop;                     /* handlers: exit when the list is empty */
};

struct worker {
    const struct config *cfg;
    int slot;         /* in the master's table */
    pid_t master_pid; /* the master that started it: woken by recycle_ask_replace */
    int generation;
    char owner[160]; /* lease owner: host:pid:generation:random */

    struct plugin_instance *plugins;
    size_t nplugins;
    struct wqueue *queues;
    size_t nqueues;
    int handler_threads; /* started so far, every queue's: the shm job records in use */
    long long runs;      /* atomic: handle() runs ended, for worker_max_jobs (recycle.h) */

    struct sqs_endpoint *endpoint;
    struct creds_chain *creds;
    struct acker *acker;
    struct idem_store *ready_store; /* the readiness check's connection, kept for the acker
                                       (ready.c, acker_start); NULL once taken */
    struct throttles *throttles;    /* the rate limits (throttle.c) */
    struct idem_lost *lost_claims;  /* the receivers' claims whose answers were lost (idem.h) */

    struct flag draining; /* stop receiving; read by receivers and cancel flags */
    struct flag abandon;  /* the drain deadline passed */
};

/* Hand a prepared job (or the head of a FIFO chain) to q's handlers; never
 * blocks: the receiver only receives what fits. */
void wqueue_push(struct wqueue *q, struct twice_job *j);

/* A job is finished (its message deleted, hidden or given back): its slot
 * is free for the next receive. Counting jobs until then keeps the acker's
 * backlog bounded by concurrency. */
void wqueue_release_slot(struct wqueue *q, int n);

#endif
