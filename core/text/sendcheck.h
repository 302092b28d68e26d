/*
 * sendcheck.h - the checks api->send() makes at the call, so that a handler
 * learns of a message SQS would refuse while it can still fail its job:
 * size, characters, attributes, FIFO fields. Pure (libc and yajl); the
 * daemon (plugin/send.c) and the SDK's mock host share it. Not the
 * resolution of queue names: that needs the configuration.
 */
#ifndef TWICE_SENDCHECK_H
#define TWICE_SENDCHECK_H

#include <stddef.h>

/* SQS's limits (2025): a message of at most 1 MiB, attributes included; at
 * most 10 attributes, of which twice-outbox-id is one; delays to 900 s.
 * The same numbers as base/sqs_limits.h, which this layer cannot include
 * (text/ uses nothing; the SDK's mock links it alone). */
#define SENDCHECK_MAX_BYTES 1048576
#define SENDCHECK_MAX_ATTRS 9
#define SENDCHECK_MAX_DELAY 900
#define SENDCHECK_ID_ATTR   "twice-outbox-id"

/* 1 when a queue URL names a FIFO queue (it ends in ".fifo"). */
int sendcheck_is_fifo(const char *url);

/*
 * Check a message for the queue at url, staged by the job keyed key: body
 * (len bytes), delay, group_id (NULL: none) and attrs (NULL, or name,
 * value, ..., NULL). Returns 0 with *attrs_json the attributes as a JSON
 * array (malloc'd, the caller frees; NULL without attributes), or -1 with
 * why (one line) and *attrs_json NULL.
 */
int sendcheck_message(const char *url, const char *key, const char *body, size_t len, int delay,
                      const char *group_id, const char *const *attrs, char **attrs_json, char *why,
                      size_t whylen);

#endif
