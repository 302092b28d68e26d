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
 *                            kept in the outbox, duty/relay.c)
 *   twice-error              the detail (plugin error text, ...)
 *   twice-plugin             the plugin, "-" when none was routed
 *   twice-attempts           the handler runs counted for its key (0: it never
 *                            ran), not its deliveries
 *   twice-source-message-id  the source message's id
 *   twice-source-queue       the source queue's URL (where redrive sends it)
 *   twice-key                the idempotency key, if derived
 * SQS allows ten attributes per message. twice's own always get theirs; the
 * user's attributes that do not fit in the slots left are kept as JSON in
 * one attribute, twice-packed-attributes, which `twicectl dlq redrive`
 * unpacks. Text twice writes into attributes keeps only characters SQS
 * accepts (dlq_sanitize).
 *
 * A letter fits the DLQ's size limit as SQS counts it (the body, plus each
 * attribute's name, data type and value; Binary values counted as their
 * base64 text, never less than SQS's count): when it would not, twice-error
 * is shortened, then left out, then twice-key, twice-attempts and
 * twice-plugin are left out. The body, the user's attributes and
 * twice-reason, twice-source-message-id and twice-source-queue (which
 * redrive needs) are never cut: a letter too large even without the
 * optional parts is not sent (DLQ_TOO_LARGE_CODE).
 */
#ifndef TWICE_DLQ_H
#define TWICE_DLQ_H

#include <stddef.h>

#include "cut.h"
#include "sqs.h"
#include "sqs_limits.h"

#define DLQ_MAX_ATTRS SQS_ATTRS_MAX
/* twice-error's longest text: a job's detail as its log line has it
 * (JOB_ERROR_MAX bytes, then "..."), whole. */
#define DLQ_ERROR_MAX (JOB_ERROR_MAX + 3)

/* The error code of a letter larger than the DLQ accepts even without
 * twice's optional attributes: nothing was sent, and sending it again will
 * not help (err.retryable 0). */
#define DLQ_TOO_LARGE_CODE "DeadLetterTooLarge"

/* What of twice's own was shortened or left out to fit (dlq_letter.trimmed). */
#define DLQ_TRIM_ERROR_CUT 0x1 /* twice-error shortened */
#define DLQ_TRIM_ERROR     0x2 /* twice-error left out */
#define DLQ_TRIM_KEY       0x4
#define DLQ_TRIM_ATTEMPTS  0x8
#define DLQ_TRIM_PLUGIN    0x10

/* A dead letter ready to send. Its attributes point into the source
 * message and into the letter itself. */
struct dlq_letter {
    struct sqs_send_entry entry;
    struct sqs_attr attrs[DLQ_MAX_ATTRS];
    size_t nattrs;
    size_t bytes; /* its size as SQS counts it (the smallest one's, when too large) */
    int trimmed;  /* DLQ_TRIM_* bits */
    char attempts[16];
    char error[DLQ_ERROR_MAX + 8];
    char dedup[160];
    char *packed; /* owned: JSON of user attributes that did not fit */
    /* Owned: the texts twice writes, sanitised (dlq_sanitize). */
    char *key;
    char *plugin;
    char *source_id;
    char *source_queue;
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

/* Build a letter for message m (borrowed: it must outlive the letter) that
 * is at most max_bytes as SQS counts them (0: SQS_MESSAGE_MAX_BYTES). 0;
 * -1 on ENOMEM; -2 when even the smallest letter is larger (l->bytes says
 * how large). Free it with dlq_letter_free in every case. */
int dlq_letter_build(struct dlq_letter *l, const struct sqs_message *m,
                     const struct dlq_reason *why, int fifo, size_t max_bytes);
void dlq_letter_free(struct dlq_letter *l);

/* What dlq_send knew and learned of the DLQ's size limit. */
struct dlq_fit {
    size_t max_bytes; /* in: the DLQ's limit as known (0: unknown, SQS's maximum); out:
                         what SQS or the queue's MaximumMessageSize said since */
    size_t bytes;     /* out: the letter's size; when too large, the smallest one's */
    int trimmed;      /* out: DLQ_TRIM_* bits of the letter sent */
    int calls;        /* out: SendMessage calls made */
};

/* Build the letter for m to fit fit->max_bytes and send it to dlq_url
 * (SendMessage). A letter too large for the known limit makes it ask the
 * queue's MaximumMessageSize again (it may have been raised); a refusal for
 * its size (SQS says the limit) builds a smaller letter and sends it once
 * more. 0, or -1 with err (code DLQ_TOO_LARGE_CODE when nothing could be
 * sent for the letter's size). */
int dlq_send(struct sqs_client *c, const char *dlq_url, int fifo, const struct sqs_message *m,
             const struct dlq_reason *why, struct dlq_fit *fit, struct sqs_error *err);

/* The limit a refusal states ("Message must be shorter than N bytes", on
 * InvalidParameterValue), or 0 when err is no such refusal. */
size_t dlq_refused_size(const struct sqs_error *err);

/* Copy s into out (cap bytes) keeping only characters SQS accepts in
 * attribute values and cutting at a UTF-8 boundary. */
void dlq_sanitize(const char *s, char *out, size_t cap);

#endif
