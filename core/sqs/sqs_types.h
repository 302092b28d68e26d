/*
 * sqs_types.h - the SQS data model that the client (sqs.c), the response
 * parser (sqs_parse.c) and their users share: errors, message attributes,
 * messages, batch entries and results, messages to send, queue attributes.
 * The functions here are pure; they live in sqs_parse.c and sqs_error.c.
 */
#ifndef TWICE_SQS_TYPES_H
#define TWICE_SQS_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* What went wrong with a call. */
struct sqs_error {
    long http_status;     /* 0 for transport errors */
    int transport;        /* could not connect / send / read (curl error) */
    int throttled;        /* a throttling error (after the retries inside the call) */
    int retryable;        /* worth trying again later (throttling, 5xx, transport) */
    char code[128];       /* "QueueDoesNotExist", "ThrottlingException", curl's name... */
    char query_code[128]; /* x-amzn-query-error's code, "" when absent */
    char message[1024];   /* the service's or curl's message */
};

/*
 * "ReceiveMessage: QueueDoesNotExist: The specified queue does not exist.
 * (check the queue url)" - the action, the code, the message and a hint for
 * the codes operators meet (access denied, missing queue, bad credentials,
 * clock skew, unreachable endpoint). Callers prefix the queue name.
 */
void sqs_error_describe(const struct sqs_error *e, const char *action, char *out, size_t len);

/*
 * The same for a call on the queue one setting names: a missing queue's
 * hint names that setting and where it is written ("check dlq_url of queue
 * 'jobs' at /etc/twice/twice.conf:12, and the region"), where is its
 * "SETTING of queue 'NAME' at FILE:LINE" (NULL: sqs_error_describe's).
 */
void sqs_error_describe_at(const struct sqs_error *e, const char *action, const char *where,
                           char *out, size_t len);

/*
 * Whether a request that failed with e could succeed later as it is: 1 for
 * what is no fault of the request and passes with time or a fix on the
 * sender's side: what is retryable (throttling, SQS's 5xx, an unreachable
 * endpoint), the sender's credentials (expired, unknown, not valid yet:
 * ExpiredToken, InvalidClientTokenId, UnrecognizedClientException, ...),
 * its clock (a signature expired or not yet current, RequestTimeTooSkewed,
 * RequestExpired), a TLS certificate that does not verify, an HTTP proxy
 * that wants credentials (ProxyAuthRequired), running out of memory. 0
 * for what the request or its target is refused for until someone changes
 * them: a queue that does not exist, access denied to it, its KMS key, a
 * message SQS will not take (InvalidMessageContents, too long, an
 * attribute), a malformed URL. Pure.
 */
int sqs_error_passes(const struct sqs_error *e);

/* Whether e is a call cancelled while its answer was arriving (see
 * sqs_client_set_cancel): a receive's messages in it stay hidden until
 * their visibility timeout ends. Pure. */
int sqs_error_cut_mid_answer(const struct sqs_error *e);

/* A message attribute (String, Number or Binary, and custom subtypes such
 * as "Number.float"). Received ones point into their batch's memory;
 * attributes to send point wherever their sender keeps them. */
struct sqs_attr {
    char *name;
    char *data_type;
    char *string_value;    /* NULL for Binary */
    unsigned char *binary; /* decoded BinaryValue, NULL for String/Number */
    size_t binary_len;
};

/* The attribute called name among attrs[0..n-1], or NULL (also for name
 * NULL). Entries without a name are skipped. SQS's names are unique; an
 * SNS envelope's may repeat, and then the last one wins, as for any JSON
 * member twice reads by name. */
const struct sqs_attr *sqs_attr_find(const struct sqs_attr *attrs, size_t n, const char *name);

/* The memory a received batch's messages share (sqs_receive.c). */
struct sqs_batch;

/*
 * A received message. Its strings live in its batch's memory, which each
 * message of the batch holds one reference to: a message may be moved
 * (copied, then the source zeroed) to wherever it goes, and any thread may
 * clear it; the last one frees the batch. Never free a field.
 */
struct sqs_message {
    char *message_id;
    char *receipt_handle;
    char *body; /* NUL-terminated */
    size_t body_len;
    int receive_count;      /* ApproximateReceiveCount; 1 when missing */
    char *group_id;         /* MessageGroupId, NULL on standard queues */
    char *aws_trace_header; /* AWSTraceHeader (X-Ray), NULL when absent */
    int64_t sent_timestamp_ms;
    struct sqs_attr *attrs;
    size_t nattrs;
    struct sqs_batch *batch; /* the reference this message holds, or NULL */
};

/* Let go of each message's batch reference (sqs_messages_free also frees
 * the array). */
void sqs_messages_free(struct sqs_message *msgs, size_t n);
/* Let go of one message and zero it (for a message moved out of the array). */
void sqs_message_clear(struct sqs_message *m);

/* One entry of a batch call (at most SQS_BATCH_MAX per call). */
struct sqs_batch_entry {
    const char *id; /* unique in the batch, [A-Za-z0-9_-]{1,80} */
    const char *receipt_handle;
    int visibility_timeout; /* ChangeMessageVisibilityBatch only */
};

/* "0".."9": batch entry ids for the i-th entry of a batch. */
const char *sqs_batch_id(size_t i);

/* The outcome of one batch entry. */
struct sqs_batch_result {
    int ok;
    int sender_fault; /* a failed entry that resending will not fix */
    char code[128];
    char message[256];
    char message_id[128]; /* SendMessageBatch: the new MessageId */
};

/* A message to send. */
struct sqs_send_entry {
    const char *id; /* batch entry id (SendMessageBatch only) */
    const char *body;
    size_t body_len;
    const struct sqs_attr *attrs;
    size_t nattrs;
    int delay_seconds;    /* -1: the queue's own; not allowed on FIFO */
    const char *group_id; /* FIFO MessageGroupId, or NULL */
    const char *dedup_id; /* FIFO MessageDeduplicationId, or NULL */
};

/* A name/value pair of GetQueueAttributes. */
struct sqs_kv {
    char *name;
    char *value;
};

void sqs_kv_free(struct sqs_kv *kv, size_t n);
/* The value of name in kv, or NULL. */
const char *sqs_kv_get(const struct sqs_kv *kv, size_t n, const char *name);

#endif
