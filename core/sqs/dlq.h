/*
 * dlq.h - building and sending a dead letter: the original body and user
 * attributes, plus twice's own attributes saying why:
 *   twice-reason             a code: rejected, max-attempts, max-receives,
 *                            worker-crashed, timeout, invalid-json, missing-key-field,
 *                            bad-key-field, key-too-long, unknown-route,
 *                            payload-conflict, too-large, bad-envelope,
 *                            bad-payload-pointer, payload-too-large,
 *                            payload-missing, payload-denied (and, in alerts
 *                            only, outbox-refused: a follow-up SQS refused,
 *                            kept in the outbox, master/relay.c)
 *   twice-error              the detail (plugin error text, ...), if room
 *   twice-plugin             the plugin, "-" when none was routed
 *   twice-attempts           the handler runs counted for its key (0: it never
 *                            ran), not its deliveries
 *   twice-source-message-id  the source message's id
 *   twice-source-queue       the source queue's URL (where redrive sends it)
 *   twice-key                the idempotency key, if derived and if room
 * SQS allows ten attributes per message. When the user's attributes leave
 * too little room, those that do not fit are kept as JSON in one attribute,
 * twice-packed-attributes, which `twicectl dlq redrive` unpacks.
 */
#ifndef TWICE_DLQ_H
#define TWICE_DLQ_H

#include <stddef.h>

#include "sqs.h"
#include "sqs_limits.h"

#define DLQ_MAX_ATTRS SQS_ATTRS_MAX
#define DLQ_ERROR_MAX 1000

/* A dead letter ready to send. Its attributes point into the source
 * message and into the letter itself. */
struct dlq_letter {
    struct sqs_send_entry entry;
    struct sqs_attr attrs[DLQ_MAX_ATTRS];
    size_t nattrs;
    char attempts[16];
    char error[DLQ_ERROR_MAX + 8];
    char dedup[160];
    char *packed; /* owned: JSON of user attributes that did not fit */
};

/* What a letter says about its message. */
struct dlq_reason {
    const char *reason;    /* code */
    const char *error;     /* detail, may be NULL */
    const char *plugin;    /* may be NULL */
    int attempts;          /* handler runs counted for the key (twice-attempts) */
    const char *queue_url; /* the source queue */
    const char *key;       /* may be NULL */
};

/* Build a letter for message m (borrowed: it must outlive the letter).
 * 0, or -1 on ENOMEM. */
int dlq_letter_build(struct dlq_letter *l, const struct sqs_message *m,
                     const struct dlq_reason *why, int fifo);
void dlq_letter_free(struct dlq_letter *l);

/* Build the letter for m and send it to dlq_url (SendMessage). 0, or -1
 * with err. */
int dlq_send(struct sqs_client *c, const char *dlq_url, int fifo, const struct sqs_message *m,
             const struct dlq_reason *why, struct sqs_error *err);

/* Copy s into out (cap bytes) keeping only characters SQS accepts in
 * attribute values and cutting at a UTF-8 boundary. */
void dlq_sanitize(const char *s, char *out, size_t cap);

#endif
