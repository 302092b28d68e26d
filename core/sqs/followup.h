/*
 * followup.h - a follow-up message that a handler staged with api->send(),
 * as SQS gets it: its attributes plus twice-outbox-id ("<key>#<idx>"), its
 * delay, on a FIFO queue its group and a deduplication id derived from
 * twice-outbox-id, in batches of ten and of 1 MiB as SQS counts them. The
 * outbox relay (duty/relay.c) and a stopping worker's acknowledger
 * (worker/acker.c, when the store cannot take a job's follow-ups) both send
 * with it, so a message is the same message whoever sends it and a
 * receiver keyed on twice-outbox-id dedupes any resend. Not the outbox's
 * storage (idem/outbox.c) nor what to do with SQS's answer (the callers').
 */
#ifndef TWICE_FOLLOWUP_H
#define TWICE_FOLLOWUP_H

#include <stddef.h>

#include "sqs.h"

/* One follow-up message, as the outbox keeps it (an outbox row, or a job's
 * staged message and its index). Every pointer is borrowed. */
struct followup {
    const char *key;  /* the source job's idempotency key */
    int idx;          /* the message's index within that job's run, from 0 */
    const char *url;  /* the target queue's URL */
    const char *body; /* body_len bytes */
    size_t body_len;
    int delay;            /* DelaySeconds; 0: the queue's own (ignored on FIFO queues) */
    const char *group_id; /* FIFO MessageGroupId, or NULL */
    const char *attrs;    /* JSON array ["name","value",...] of String attributes, or NULL */
};

/*
 * The bytes SQS counts for f's message: its body and each attribute's name,
 * data type and value, twice-outbox-id included. A SendMessageBatch whose
 * messages add up to more than 1 MiB is refused whole (and for good), so a
 * batch is packed by these, not by a guess at the attributes, which a
 * handler may have made most of a message. A message whose attributes
 * cannot be read counts as a whole batch: it is sent alone. Pure.
 */
size_t followup_bytes(const struct followup *f);

/* How many of the messages whose followup_bytes are bytes[0..n) (in order,
 * all to one queue) go into the next SendMessageBatch: at most
 * SQS_BATCH_MAX, together at most 1 MiB, one at least (0 when n is 0). */
size_t followup_batch_len(const size_t *bytes, size_t n);

/*
 * One SendMessageBatch of f[0..n) (1 <= n <= SQS_BATCH_MAX, all to
 * f[0]->url) on c, with sqs_send_batch's in-call retries. Returns 0 with
 * res[i] for f[i], or -1 with err (a message that could not be built for
 * want of memory: "OutOfMemory", which passes; nothing was sent then).
 */
int followup_send_batch(struct sqs_client *c, const struct followup *const *f, size_t n,
                        struct sqs_batch_result *res, struct sqs_error *err);

#endif
