/*
 * sendcheck.h - the checks api->send() makes at the call, so that a handler
 * learns of a message SQS would refuse while it can still fail its job:
 * size, characters, attributes, FIFO fields. Pure (libc and yajl); the
 * daemon (plugin/send.c) and the SDK's mock host share it. Not the
 * resolution of queue names: that needs the configuration.
 */
#ifndef TWICE_SENDCHECK_H
#define TWICE_SENDCHECK_H

#include "sqs_limits.h"

#include <stddef.h>

/* A message of at most SQS's size, attributes included; SQS's attributes
 * less twice-outbox-id, which the relay adds; SQS's longest delay. */
#define SENDCHECK_MAX_BYTES SQS_MESSAGE_MAX_BYTES
#define SENDCHECK_MAX_ATTRS (SQS_ATTRS_MAX - 1) /* one is twice-outbox-id */
#define SENDCHECK_MAX_DELAY SQS_DELAY_MAX
#define SENDCHECK_ID_ATTR   "twice-outbox-id"

/*
 * 1 when an attribute name is one of twice's own, which a dead letter
 * writes (twice-reason, twice-key, ...) and a redrive takes off again: any
 * name starting with "twice-" but twice-outbox-id. That one is part of a
 * follow-up message's identity (a receiving queue may key on it), so it
 * travels with the message into the DLQ and back. send() refuses every
 * "twice-" name: the relay adds twice-outbox-id itself.
 */
int sendcheck_twice_attr(const char *name);

/*
 * The URL api->send() sends queue's message to: url_of(ctx, queue) (the
 * host's lookup of a queue of twice.conf by name, NULL when none), else
 * queue itself when it is an http:// or https:// URL. NULL, with why in
 * the host's words, when it is neither (queue NULL or empty too) or body
 * is NULL. Borrowed from url_of or queue. Both hosts' (plugin/send.c,
 * the SDK's mock), so a plugin's test meets twiced's rule and words.
 */
const char *sendcheck_resolve(const char *queue, const char *body,
                              const char *(*url_of)(const void *ctx, const char *name),
                              const void *ctx, char *why, size_t whylen);

/* 1 when a queue URL names a FIFO queue (it ends in ".fifo"). */
int sendcheck_is_fifo(const char *url);

/*
 * Check a message for the queue at url, staged as the idx-th (from 0) of
 * the job keyed key: body (len bytes), delay, group_id (NULL: none) and
 * attrs (NULL, or name, value, ..., NULL). The size is counted as SQS
 * counts it, with the attribute twice-outbox-id ("<key>#<idx>") the relay
 * adds. Returns 0 with *attrs_json the attributes as a JSON array
 * (malloc'd, the caller frees; NULL without attributes), or -1 with why
 * (one line) and *attrs_json NULL.
 */
int sendcheck_message(const char *url, const char *key, size_t idx, const char *body, size_t len,
                      int delay, const char *group_id, const char *const *attrs, char **attrs_json,
                      char *why, size_t whylen);

#endif
