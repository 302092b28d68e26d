/*
 * sqs_limits.h - the limits of the Amazon SQS protocol that twice relies
 * on, in one place: configuration ranges, clamps and batch sizes name these
 * rather than repeat the numbers. Not twice's own defaults or limits.
 */
#ifndef TWICE_SQS_LIMITS_H
#define TWICE_SQS_LIMITS_H

/* The longest visibility timeout, in seconds (12 hours), for ReceiveMessage
 * and ChangeMessageVisibility: so also the longest a retry can wait or a
 * message can be hidden. */
#define SQS_VISIBILITY_MAX 43200

/* The longest long poll, ReceiveMessage's WaitTimeSeconds, in seconds. */
#define SQS_WAIT_TIME_MAX 20

/* The most messages one ReceiveMessage returns (MaxNumberOfMessages). */
#define SQS_RECEIVE_MAX 10

/* The most entries in one *Batch call (DeleteMessageBatch,
 * ChangeMessageVisibilityBatch, SendMessageBatch). */
#define SQS_BATCH_MAX 10

/* A message's DelaySeconds, at most (15 minutes). */
#define SQS_DELAY_MAX 900

/* The most message attributes one message carries. */
#define SQS_ATTRS_MAX 10

/* The longest delay of a message (SendMessage's DelaySeconds), in seconds. */
#define SQS_DELAY_MAX 900

/* The largest message, in bytes (1 MiB): the top of a queue's
 * MaximumMessageSize, whose default is 256 KiB. */
#define SQS_MESSAGE_MAX_BYTES 1048576

#endif
