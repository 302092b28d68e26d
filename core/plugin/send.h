/*
 * send.h - api->send()'s staging: which queue a name means, the checks of
 * what SQS would refuse (text/sendcheck.h), a copy for the outbox. Not the
 * outbox's storage (idem/outbox.c).
 */
#ifndef TWICE_SEND_H
#define TWICE_SEND_H

#include <stddef.h>

struct config;
struct outbox_msg;

/*
 * Check a message a handler of the job keyed `key` stages as its idx-th
 * (from 0; its twice-outbox-id counts in the size), and copy it into *out
 * (owned by the caller: outbox_msg_clear). queue is a queue's name in
 * c, or a URL; len (size_t)-1 means strlen(body); attrs is NULL or
 * name, value, ..., NULL. Returns 0, or -1 with why (one line, naming the
 * queue) and *out cleared.
 */
int send_prepare(const struct config *c, const char *key, size_t idx, const char *queue,
                 const char *body, size_t len, int delay, const char *group_id,
                 const char *const *attrs, struct outbox_msg *out, char *why, size_t whylen);

#endif
