/*
 * receiver.h - a queue's receive threads in a worker (see receiver.c).
 */
#ifndef TWICE_RECEIVER_H
#define TWICE_RECEIVER_H

#include <stddef.h>

struct wqueue;

/* Start q's receive threads (cfg->receivers of them). 0, or -1 with err. */
int receiver_start(struct wqueue *q, char *err, size_t errlen);
/* Wait for them to end (they stop once the worker drains). */
void receiver_join(struct wqueue *q);

#endif
