/*
 * worker.h - a worker process: its plugins, its queues, and the threads
 * that move jobs through them.
 *
 *   receiver (one per queue)   receive, route, derive keys, claim a batch
 *   handlers (concurrency)     run handle(); FIFO groups in order
 *   acker (one per worker)     complete, delete, retry, dead-letter, heartbeat
 *
 * A job is owned by one of them at a time and always ends in the acker,
 * which is the only place that frees jobs. This header is shared by the
 * worker's files only (worker.c, receiver.c, handler.c, acker.c,
 * hostapi.c); nothing outside a worker process uses it.
 */
#ifndef TWICE_WORKER_H
#define TWICE_WORKER_H

#include <pthread.h>
#include <stddef.h>

#include "advice.h"
#include "loader.h"

struct config;
struct config_plugin;
struct config_queue;
struct creds_chain;
struct idem_store;
struct sqs_client;
struct twice_job;
struct acker;

/* A plugin as a worker runs it. */
struct wplugin {
    const struct config_plugin *cfg;
    struct loaded_plugin lp;
    const char *name; /* the configured name (logs, metrics, routes) */
    size_t index;     /* in w->plugins */
    int transactional;
};

/* A queue as a worker consumes it. */
struct wqueue {
    struct worker *w;
    const struct config_queue *cfg;
    const struct wplugin *plugin;         /* the queue's plugin, or NULL when routed */
    const struct wplugin **route_plugins; /* parallel to cfg->routes */
    const char *route_attr;               /* route_by "attr:Name": the name */
    const char *route_path;               /* route_by body path */

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
    struct advice_window *advice; /* per plugin (w->plugins order): recent durations */
    int stop;                     /* handlers: exit when the list is empty */
};

/* The in-flight registry: every claimed job until the acker finishes it,
 * so the heartbeat can extend visibility and lease. */
struct inflight {
    pthread_mutex_t mu;
    struct inflight_node *head;
    size_t n;
};

struct worker {
    const struct config *cfg;
    const char *config_text; /* the snapshot the master validated */
    int slot;                /* in the master's table */
    int generation;
    char owner[160]; /* lease owner: host:pid:generation:random */

    struct wplugin *plugins;
    size_t nplugins;
    struct wqueue *queues;
    size_t nqueues;

    struct sqs_endpoint *endpoint;
    struct creds_chain *creds;
    struct acker *acker;

    volatile int draining; /* stop receiving; read by receivers and cancel flags */
    volatile int abandon;  /* the drain deadline passed */
};

/* Start one queue's receiver and handlers (receiver.c / handler.c). */
int receiver_start(struct wqueue *q, char *err, size_t errlen);
void receiver_join(struct wqueue *q);
int handlers_start(struct wqueue *q, char *err, size_t errlen);
/* Hand a prepared job (or the head of a FIFO chain) to the handlers;
 * blocks never: the receiver only receives what fits. */
void handlers_push(struct wqueue *q, struct twice_job *j);
/* Stop: jobs not yet started are given back (JOB_ACT_RETURN) to the acker;
 * running ones finish. Then join the threads. */
void handlers_stop(struct wqueue *q);
void handlers_join(struct wqueue *q);
/* Nothing running and nothing waiting. */
int handlers_idle(struct wqueue *q);
/* A job is finished (its message deleted, hidden or given back): its slot
 * is free for the next receive. Counting jobs until then keeps the acker's
 * backlog bounded by concurrency. */
void wqueue_release_slot(struct wqueue *q, int n);

/* Entry point of a worker process (twiced --worker). Returns the exit code. */
int worker_main(int argc, char **argv);

#endif
