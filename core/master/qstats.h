/*
 * qstats.h - the queue gauges the master publishes for autoscaling:
 * twice_queue_messages{queue,state} from one GetQueueAttributes per queue
 * every metrics.queue_stats_interval (not one per worker), and
 * twice_queue_oldest_age_seconds from the ages workers saw at receive
 * (worker/msgage.c) in that interval. Run by the DLQ monitor's thread
 * with its SQS client (dlqmon.c); not a thread of its own.
 */
#ifndef TWICE_QSTATS_H
#define TWICE_QSTATS_H

#include <stdint.h>

struct config;
struct flag;
struct qstats;
struct sqs_client;

/* The gauges of c's queues (copied), first due now; NULL when they are
 * off (queue_stats_interval 0, or no metrics listener to show them) or
 * out of memory. */
struct qstats *qstats_new(const struct config *c);
void qstats_free(struct qstats *s);

/* When the next refresh is due (CLOCK_MONOTONIC ms, clock.h). */
int64_t qstats_due(const struct qstats *s);

/* Refresh every queue's gauges (sqs NULL: only the ages) and schedule the
 * next refresh. A queue that cannot be read keeps its last values and is
 * logged when it starts failing and when it works again. */
void qstats_run(struct qstats *s, struct sqs_client *sqs, const struct flag *stop);

#endif
