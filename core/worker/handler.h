/*
 * handler.h - a queue's pool of handler threads in a worker (see
 * handler.c). Jobs reach them through wqueue_push (worker.h).
 */
#ifndef TWICE_HANDLER_H
#define TWICE_HANDLER_H

#include <stddef.h>

struct wqueue;

/* Start q's handler threads (cfg->concurrency of them). 0, or -1 with err. */
int handlers_start(struct wqueue *q, char *err, size_t errlen);
/* Stop: jobs not yet started are given back (JOB_ACT_RETURN) to the acker;
 * running ones finish. Then join the threads. */
void handlers_stop(struct wqueue *q);
void handlers_join(struct wqueue *q);
/* The drain deadline passed: the process exits without waiting for the
 * threads (some are inside plugin code), so nobody will join them. */
void handlers_detach(struct wqueue *q);
/* Nothing waiting, nothing running but runs past their time limit whose
 * message was already acted on (timeout.h). */
int handlers_idle(struct wqueue *q);
/* How many such runs still hold a handler thread (the drain then cannot join). */
int handlers_hung(struct wqueue *q);

#endif
