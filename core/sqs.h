/*
 * sqs.h - an Amazon SQS client speaking the AWS JSON 1.0 protocol over
 * libcurl, signed with SigV4.
 *
 * One struct sqs_client per thread: it owns a libcurl easy handle whose
 * connection is kept alive between calls. Throttling, 5xx and transport
 * errors are retried inside each call (capped exponential backoff with
 * full jitter, the AWS SDKs' 2026 "standard" values); other errors are
 * returned at once. Functions return 0 on success or -1 with *err filled;
 * they never log. Queue URLs are parameters; requests go to the endpoint.
 */
#ifndef TWICE_SQS_H
#define TWICE_SQS_H

#include <stddef.h>
#include <stdint.h>

struct creds_chain;
struct json_t;

/* Where requests go and how they are signed. */
struct sqs_endpoint {
    char *url;     /* e.g. "https://sqs.eu-west-1.amazonaws.com" or "http://127.0.0.1:4566" */
    char *region;  /* signing region */
    char *ca_file; /* NULL: the system CA store; TLS is always verified */
};

/*
 * Resolve the endpoint: region from cfg_region, else AWS_REGION, else
 * AWS_DEFAULT_REGION, else the shared config file's profile (profile NULL:
 * AWS_PROFILE or "default"); endpoint from cfg_endpoint, else
 * AWS_ENDPOINT_URL_SQS, else AWS_ENDPOINT_URL, else
 * https://sqs.<region>.amazonaws.com. Returns 0, or -1 with err ("no AWS
 * region: set aws.region in the configuration or AWS_REGION").
 */
int sqs_endpoint_resolve(const char *cfg_region, const char *cfg_endpoint, const char *profile,
                         const char *ca_file, struct sqs_endpoint *out, char *err, size_t errlen);
void sqs_endpoint_free(struct sqs_endpoint *ep);

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

struct sqs_client;

/* The client borrows ep and creds: both must outlive it. NULL on ENOMEM. */
struct sqs_client *sqs_client_new(const struct sqs_endpoint *ep, struct creds_chain *creds);
void sqs_client_free(struct sqs_client *c);

/*
 * Make the next and current calls give up early once *flag becomes nonzero,
 * as long as no byte of the response has arrived (so a long poll in
 * progress can be abandoned at shutdown without losing a response). The
 * call then fails with code "Cancelled". flag is borrowed; NULL clears it.
 */
void sqs_client_set_cancel(struct sqs_client *c, const volatile int *flag);

/* A message attribute (String, Number or Binary, and custom subtypes such
 * as "Number.float"). */
struct sqs_attr {
    char *name;
    char *data_type;
    char *string_value;    /* NULL for Binary */
    unsigned char *binary; /* decoded BinaryValue, NULL for String/Number */
    size_t binary_len;
};

/* One attribute as SQS's JSON carries it: {DataType, StringValue} or
 * {DataType, BinaryValue (base64)}. A new reference, or NULL when data_type
 * is NULL, a value is not UTF-8, or on ENOMEM. */
struct json_t *sqs_attr_json(const struct sqs_attr *a);

/* The attribute called name among attrs[0..n-1], or NULL (also for name
 * NULL). Entries without a name are skipped. */
const struct sqs_attr *sqs_attr_find(const struct sqs_attr *attrs, size_t n, const char *name);

struct sqs_message {
    char *message_id;
    char *receipt_handle;
    char *body; /* NUL-terminated */
    size_t body_len;
    int receive_count; /* ApproximateReceiveCount; 1 when missing */
    char *group_id;    /* MessageGroupId, NULL on standard queues */
    int64_t sent_timestamp_ms;
    struct sqs_attr *attrs;
    size_t nattrs;
};

struct sqs_receive_opts {
    int max_messages;       /* 1-10 */
    int wait_time;          /* 0-20 seconds */
    int visibility_timeout; /* seconds; -1 for the queue's own */
    const char *attempt_id; /* FIFO ReceiveRequestAttemptId, or NULL */
};

/*
 * ReceiveMessage, asking for every message attribute and the system
 * attributes struct sqs_message holds. *msgs is owned by the caller
 * (sqs_messages_free); *n may be 0.
 */
int sqs_receive(struct sqs_client *c, const char *queue_url, const struct sqs_receive_opts *o,
                struct sqs_message **msgs, size_t *n, struct sqs_error *err);
void sqs_messages_free(struct sqs_message *msgs, size_t n);
/* Free what one message owns and zero it (for a message moved out of the array). */
void sqs_message_clear(struct sqs_message *m);

/* One entry of a batch call (at most 10 per call). */
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

/*
 * DeleteMessageBatch / ChangeMessageVisibilityBatch. Return 0 when the call
 * itself succeeded: then every results[i] says whether entry i did (HTTP 200
 * can still carry failures). Return -1 when the call failed as a whole.
 */
int sqs_delete_batch(struct sqs_client *c, const char *queue_url,
                     const struct sqs_batch_entry *entries, size_t n,
                     struct sqs_batch_result *results, struct sqs_error *err);
int sqs_change_visibility_batch(struct sqs_client *c, const char *queue_url,
                                const struct sqs_batch_entry *entries, size_t n,
                                struct sqs_batch_result *results, struct sqs_error *err);
int sqs_change_visibility(struct sqs_client *c, const char *queue_url, const char *receipt_handle,
                          int visibility_timeout, struct sqs_error *err);
int sqs_delete(struct sqs_client *c, const char *queue_url, const char *receipt_handle,
               struct sqs_error *err);

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

/* SendMessage; message_id_out (may be NULL) receives the new MessageId. */
int sqs_send(struct sqs_client *c, const char *queue_url, const struct sqs_send_entry *e,
             char *message_id_out, size_t message_id_len, struct sqs_error *err);
int sqs_send_batch(struct sqs_client *c, const char *queue_url,
                   const struct sqs_send_entry *entries, size_t n,
                   struct sqs_batch_result *results, struct sqs_error *err);

/* A name/value pair of GetQueueAttributes. */
struct sqs_kv {
    char *name;
    char *value;
};

/* GetQueueAttributes for the given names ("All" works). *out is owned by the
 * caller (sqs_kv_free). */
int sqs_get_attributes(struct sqs_client *c, const char *queue_url, const char *const *names,
                       size_t nnames, struct sqs_kv **out, size_t *n, struct sqs_error *err);
void sqs_kv_free(struct sqs_kv *kv, size_t n);
/* The value of name in kv, or NULL. */
const char *sqs_kv_get(const struct sqs_kv *kv, size_t n, const char *name);

/* A queue's approximate counts: visible, in flight (received, not deleted)
 * and delayed, in out[0..2] (-1 where SQS gave none). One GetQueueAttributes. */
int sqs_queue_counts(struct sqs_client *c, const char *queue_url, long out[3],
                     struct sqs_error *err);

/* GetQueueUrl; *url_out is malloc'd and owned by the caller. */
int sqs_get_queue_url(struct sqs_client *c, const char *name, char **url_out,
                      struct sqs_error *err);

/* PurgeQueue. */
int sqs_purge(struct sqs_client *c, const char *queue_url, struct sqs_error *err);

#endif
