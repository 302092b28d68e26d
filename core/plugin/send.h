/*
 * send.h - the rules of api->send(): which queue a name means, and what SQS
 * would refuse (size, characters, attributes, FIFO fields), checked at the
 * call so that a handler learns of a bad message while it can still fail
 * its job, never later in the relay. Not the outbox's storage (idem/outbox.c).
 */
#ifndef TWICE_SEND_H
#define TWICE_SEND_H

#include <stddef.h>

struct config;
struct outbox_msg;

/* SQS's limits (2025): a message of at most 1 MiB, attributes included; at
 * most 10 attributes, of which twice-outbox-id is one. */
#define SEND_MAX_BYTES 1048576
#define SEND_MAX_ATTRS 9
#define SEND_MAX_DELAY 900
#define SEND_ID_ATTR   "twice-outbox-id"

/*
 * Check a message a handler of the job keyed `key` stages, and copy it into
 * *out (owned by the caller: outbox_msg_clear). queue is a queue's name in
 * c, or a URL; len (size_t)-1 means strlen(body); attrs is NULL or
 * name, value, ..., NULL. Returns 0, or -1 with why (one line, naming the
 * queue) and *out cleared.
 */
int send_prepare(const struct config *c, const char *key, const char *queue, const char *body,
                 size_t len, int delay, const char *group_id, const char *const *attrs,
                 struct outbox_msg *out, char *why, size_t whylen);

/* 1 when a queue URL names a FIFO queue (it ends in ".fifo"). */
int send_url_is_fifo(const char *url);

#endif
