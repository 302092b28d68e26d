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

#include "sqs_types.h"

struct creds_chain;
struct flag;
struct http_client;
struct json_t;

/* One attribute as SQS's JSON carries it: {DataType, StringValue} or
 * {DataType, BinaryValue (base64)}. A new reference, or NULL when data_type
 * is NULL, a value is not UTF-8, or on ENOMEM. */
struct json_t *sqs_attr_json(const struct sqs_attr *a);

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
 * https://sqs.<region>.amazonaws.com. Each is checked where it is read
 * (text/regionname.h, text/url.h). Returns 0, or -1 with err ("no AWS
 * region: set aws.region in the configuration or AWS_REGION", or what is
 * wrong with a value and where it came from: "AWS_REGION=us east 1: not a
 * region name (...)").
 */
int sqs_endpoint_resolve(const char *cfg_region, const char *cfg_endpoint, const char *profile,
                         const char *ca_file, struct sqs_endpoint *out, char *err, size_t errlen);
void sqs_endpoint_free(struct sqs_endpoint *ep);

struct sqs_client;

/* The client borrows ep and creds: both must outlive it. NULL on ENOMEM. */
struct sqs_client *sqs_client_new(const struct sqs_endpoint *ep, struct creds_chain *creds);
void sqs_client_free(struct sqs_client *c);

/*
 * Make the next and current calls give up early once flag is raised: at
 * once while no byte of the response has arrived (so a long poll in
 * progress can be abandoned at shutdown), else after a second more (a
 * response already arriving is worth having, a trickle is not worth a stop:
 * sqs_error_cut_mid_answer then). The call fails with code "Cancelled".
 * flag is borrowed; NULL clears it.
 */
void sqs_client_set_cancel(struct sqs_client *c, const struct flag *flag);

/*
 * Bound every call, its retries and backoff included, to ms (a receive
 * gets its wait time on top); 0: only the built-in per-attempt limits
 * (30 s, 5 s to connect, up to 3 attempts). A call that runs out of time
 * fails with code "Timeout" and a message naming the endpoint. For
 * twicectl's --timeout, the outbox relay (whose claims must not lapse
 * mid-call) and a worker's acknowledger (whose heartbeat, on the same
 * thread, must not miss the leases: heartbeat_call_budget_ms); the
 * receivers do not set it.
 */
void sqs_client_set_timeout(struct sqs_client *c, long ms);

struct sqs_receive_opts {
    int max_messages;       /* 1-SQS_RECEIVE_MAX */
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

/* SendMessage; message_id_out (may be NULL) receives the new MessageId. */
int sqs_send(struct sqs_client *c, const char *queue_url, const struct sqs_send_entry *e,
             char *message_id_out, size_t message_id_len, struct sqs_error *err);
int sqs_send_batch(struct sqs_client *c, const char *queue_url,
                   const struct sqs_send_entry *entries, size_t n,
                   struct sqs_batch_result *results, struct sqs_error *err);

/* GetQueueAttributes for the given names ("All" works). *out is owned by the
 * caller (sqs_kv_free). */
int sqs_get_attributes(struct sqs_client *c, const char *queue_url, const char *const *names,
                       size_t nnames, struct sqs_kv **out, size_t *n, struct sqs_error *err);

/* A queue's approximate counts: visible, in flight (received, not deleted)
 * and delayed, in out[0..2] (-1 where SQS gave none). One GetQueueAttributes. */
int sqs_queue_counts(struct sqs_client *c, const char *queue_url, long out[3],
                     struct sqs_error *err);

/* Whether a queue answers: one GetQueueAttributes (QueueArn), the cheapest
 * call that needs the queue to exist and the caller to be allowed to read
 * it; the same call tells its MaximumMessageSize into *max_bytes (may be
 * NULL; 0 when it gave none). 0, or -1 with err. */
int sqs_check_queue(struct sqs_client *c, const char *queue_url, size_t *max_bytes,
                    struct sqs_error *err);

/* GetQueueUrl; *url_out is malloc'd and owned by the caller. */
int sqs_get_queue_url(struct sqs_client *c, const char *name, char **url_out,
                      struct sqs_error *err);

/* PurgeQueue. */
int sqs_purge(struct sqs_client *c, const char *queue_url, struct sqs_error *err);

/*
 * A raw SQS call, for tests and operations sqs.h does not cover (tests
 * create their queues with it): POST body to AmazonSQS.<op>, signed, with
 * the in-call retries. On success *resp (malloc'd, NUL-terminated, may be
 * NULL when the response was empty) is the 2xx response body.
 */
int sqs_call_raw(struct sqs_client *c, const char *op, const char *body, size_t len, char **resp,
                 struct sqs_error *err);

/* The client's HTTP handle, so tests can count connections. Borrowed. */
struct http_client *sqs_client_http(struct sqs_client *c);

#endif
