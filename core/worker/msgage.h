/*
 * msgage.h - how old messages are when a worker receives them, the first
 * sign of falling behind: twice_message_age_seconds (a histogram per
 * queue) and the window of the largest age the master turns into
 * twice_queue_oldest_age_seconds every queue_stats_interval, with the sign
 * that the queue was seen empty (duty/qstats.h has the rule).
 */
#ifndef TWICE_MSGAGE_H
#define TWICE_MSGAGE_H

#include <stddef.h>

struct sqs_message;

/* Observe now - SentTimestamp of msgs[0..n) of queue (a message without
 * SentTimestamp is not observed; a clock behind the sender's counts 0, and
 * the master's window a millisecond, so that it reads received). */
void msgage_observe(const char *queue, const struct sqs_message *msgs, size_t n);

/* A long poll of queue came back empty: it had no visible message then, so
 * the oldest age is 0 rather than the last one grown. Only for a long poll
 * of a standard queue: a short poll samples some of SQS's servers, and a
 * FIFO queue holds back messages whose group has one in flight. */
void msgage_empty(const char *queue);

#endif
