/*
 * acker.h - the acknowledger of a worker process: the one thread that
 * finishes jobs. It completes keys and deletes messages (in batches),
 * releases keys and hides messages for retries, sends dead letters, and
 * keeps the visibility and lease of every job still in flight extended
 * (the heartbeat). Side effects on SQS and PostgreSQL happen here in an
 * order that never loses a message: the key is completed before the
 * message is deleted, and a dead letter is accepted before the source is
 * deleted.
 */
#ifndef TWICE_ACKER_H
#define TWICE_ACKER_H

#include <stddef.h>

struct worker;
struct twice_job;
struct acker;
struct timespec;

/* Create and start the thread. NULL with err on failure. */
struct acker *acker_start(struct worker *w, char *err, size_t errlen);

/* Track a claimed job for heartbeats until it is submitted and finished. */
void acker_track(struct acker *a, struct twice_job *j);

/* Hand over a job whose action is decided; the acker owns it from now on
 * (and frees its queue slot). */
void acker_submit(struct acker *a, struct twice_job *j);

/* Give back every tracked job still running (the drain deadline passed):
 * release its key and make its message visible now. The jobs themselves
 * stay with their handler threads. */
void acker_abandon_running(struct acker *a);

/* Finish everything submitted so far, then stop the thread and free. With
 * a deadline (CLOCK_MONOTONIC), what is not acknowledged by then is left: its
 * SQS call is cancelled and its messages come back after their visibility
 * timeouts (a completed key makes them duplicates), so that a worker whose
 * SQS endpoint hangs or refuses still leaves within its drain. A statement
 * PostgreSQL does not answer is given up by the last call, a few seconds
 * before the deadline, which then settles what the store did not take.
 * NULL: no limit. */
void acker_stop(struct acker *a, const struct timespec *deadline);

#endif
