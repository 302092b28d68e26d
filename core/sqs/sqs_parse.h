/*
 * sqs_parse.h - the pure half of the SQS client, internal to sqs.c and its
 * tests: response parsing (sqs_receive.c, sqs_results.c, sqs_parse.c), error
 * classification, MD5 checks. No I/O here; nothing outside core/sqs/ and
 * the tests should include this header.
 */
#ifndef TWICE_SQS_PARSE_H
#define TWICE_SQS_PARSE_H

#include "sqs_types.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct buf;

/* Copy s[0..n) into dst[cap] as a C string: cut at the first NUL and to
 * fit (what snprintf("%.*s") did, at a fraction of its cost per field). */
static inline void
sqs_copy_cut(char *dst, size_t cap, const char *s, size_t n)
{
    const char *nul = memchr(s, '\0', n);
    if (nul != NULL) {
        n = (size_t) (nul - s);
    }
    if (n >= cap) {
        n = cap - 1;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* In-call retry policy (the AWS SDKs' 2026 "standard" values). */
#define SQS_MAX_ATTEMPTS       3
#define SQS_BASE_TRANSIENT_MS  50
#define SQS_BASE_THROTTLING_MS 1000
#define SQS_BACKOFF_CAP_MS     20000
#define SQS_RETRY_AFTER_MAX_MS 5000 /* x-amz-retry-after may add at most this */

/*
 * Fill e from a non-2xx response: code from __type (cut at the first ':',
 * then the part after the last '#') or the x-amzn-ErrorType header, else
 * "HTTP <status>"; message from "message" or "Message"; query_code from
 * x-amzn-query-error ("Code;Fault"); throttled and retryable from those
 * and the status. Headers may be NULL.
 */
void sqs_parse_error(long status, const char *body, size_t len, const char *query_error,
                     const char *error_type, struct sqs_error *e);

/* A transport failure (no response) with curl's code and message. */
void sqs_error_transport(struct sqs_error *e, const char *code, const char *message,
                         int transient);

/* Any other failure of ours: code and message as given, not retryable
 * unless retryable is 1. */
void sqs_error_set(struct sqs_error *e, const char *code, int retryable, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* 1 when e says AWS refused the credentials themselves (expired, revoked,
 * unknown: ExpiredToken, InvalidClientTokenId, UnrecognizedClientException),
 * which reading them again from their source may end (creds_refused); not
 * a signature or clock error, which a new set would not fix. Pure. */
int sqs_error_refuses_creds(const struct sqs_error *e);

/*
 * The delay before retry number `retry` (1 for the first retry): full
 * jitter over the base for throttling or transient errors, drawn with r;
 * retry_after_ms (-1: no x-amz-retry-after) is honoured as
 * max(t, min(retry_after, t + 5 s)).
 */
long sqs_retry_delay_ms(const struct sqs_error *e, int retry, long retry_after_ms, uint64_t r);

/*
 * A ReceiveMessage response body -> messages (owned by the caller:
 * sqs_messages_free), read as a stream (sqs_receive.c): their strings live
 * in one arena per batch, shared by the messages. No "Messages" key: *n =
 * 0. Checks MD5OfBody and MD5OfMessageAttributes: a mismatch fails the
 * whole call with the retryable "BodyMD5Mismatch" / "AttributesMD5Mismatch"
 * (the messages come back after their visibility timeout).
 */
int sqs_parse_receive(const char *json, size_t len, struct sqs_message **msgs, size_t *n,
                      struct sqs_error *e);

/*
 * A batch response -> results[i] for the entry whose Id is ids[i], read as
 * a stream (sqs_results.c). An entry named in neither Successful nor Failed
 * fails with code "NoResult"; one named in both, failed.
 */
int sqs_parse_batch(const char *json, size_t len, const char *const *ids, size_t n,
                    struct sqs_batch_result *results, struct sqs_error *e);

/* GetQueueAttributes -> name/value pairs (caller frees with sqs_kv_free). */
int sqs_parse_attributes(const char *json, size_t len, struct sqs_kv **out, size_t *n,
                         struct sqs_error *e);

/* A response's string member name (QueueUrl, MessageId) -> *out (malloc'd). */
int sqs_parse_string_member(const char *json, size_t len, const char *name, char **out,
                            struct sqs_error *e);

/* Lower-case hex MD5 of data into out[33]; -1 if MD5 is unavailable (FIPS). */
int sqs_md5_hex(const void *data, size_t len, char out[33]);

/* MD5OfMessageAttributes of attrs, as SQS computes it (sorted by name). */
int sqs_md5_of_attrs(const struct sqs_attr *attrs, size_t n, char out[33]);

/* Standard base64 with padding; -1 on bad input. *out is malloc'd. */
int sqs_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen);
/* The same into out, which has room for len / 4 * 3 + 1 bytes. */
int sqs_base64_decode_into(const char *in, size_t len, unsigned char *out, size_t *outlen);
int sqs_base64_encode(const unsigned char *in, size_t len, struct buf *out);

#endif
