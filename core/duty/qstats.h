/*
 * qstats.h - the queue gauges the master publishes for autoscaling:
 * twice_queue_messages{queue,state} from one GetQueueAttributes per queue
 * every metrics.queue_stats_interval (not one per worker), and
 * twice_queue_oldest_age_seconds, the age of the oldest message waiting
 * (qstats_oldest_age has the rule), from the ages workers saw at receive
 * (worker/msgage.c) in that interval, the long polls they saw come back
 * empty and the visible count. Run by the DLQ monitor's thread with its
 * SQS client (dlqmon.c); not a thread of its own.
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

/* The oldest age's next value (seconds), what an autoscaler scales on, so it
 * must not fall to 0 while messages wait unreceived (every handler slot
 * busy, the queue paused or its breaker open, SQS unreachable):
 * - received: the largest age received in the interval, when one was;
 * - else 0 when the queue is known empty: emptied (a long poll came back
 *   empty in the interval), or visible (SQS's ApproximateNumberOfMessages,
 *   the latest reading; -1 never read) is 0;
 * - else, messages visible, last (the value the interval began with) grown
 *   by elapsed seconds: those waiting are at least about as old as the
 *   oldest seen, unless another host took them since;
 * - else (nothing known) last. */
double qstats_oldest_age(double last, double elapsed, double received, int emptied, long visible);

#endif
