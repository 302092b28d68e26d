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

/* Finish everything submitted so far, then stop the thread and free. */
void acker_stop(struct acker *a);

/* For heartbeat.c, on the acker's thread only. */
struct log_job;
struct idem_store;
struct sqs_client;
size_t acker_registry_snapshot(struct acker *a, struct twice_job **out, size_t max);
struct idem_store *acker_store(struct acker *a); /* NULL while unreachable */
struct sqs_client *acker_sqs(struct acker *a);
struct worker *acker_worker(struct acker *a);
void acker_job_ctx(const struct twice_job *j, struct log_job *ctx);

#endif
