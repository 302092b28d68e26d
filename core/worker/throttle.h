/*
 * throttle.h - a worker's side of the shared rate limits (a plugin's or a
 * queue's rate_limit): before a job runs, its handler thread waits for a token
 * of each limit that applies to it, taken from the host's bucket in shared
 * memory (proc/ratelimit.c), which one process at a time refills with a chunk
 * leased from PostgreSQL (idem/tokens.c). A job waiting is claimed and in
 * flight (the heartbeat extends it) but no attempt; its handler slot stays
 * taken, so the receiver takes no more than can start.
 */
#ifndef TWICE_THROTTLE_H
#define TWICE_THROTTLE_H

#include <stddef.h>

struct twice_job;
struct worker;

/* The limits of w's plugins and queues (w->plugins and w->queues set up).
 * 0, or -1 with err. */
int throttle_setup(struct worker *w, char *err, size_t errlen);
/* Free them (the process's clean exit). */
void throttle_free(struct worker *w);

/* Handler thread: wait until j may start: a token of its queue's limit and
 * one of its plugin's, taken together once both are there (it holds neither
 * while it waits for the other: throttle.c says why); the time waited goes to
 * twice_rate_limited_seconds_total. 0 when it may start, -1 when the worker
 * started draining first. */
int throttle_wait(struct twice_job *j);

#endif
