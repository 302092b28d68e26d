/*
 * payload.h - message bodies kept in S3 in the format of the AWS Extended
 * Client libraries (Java, Python, and the SNS extended client): the body is
 *   ["software.amazon.payloadoffloading.PayloadS3Pointer",
 *    {"s3BucketName":"BUCKET","s3Key":"KEY"}]
 * and the message attribute ExtendedPayloadSize (SQSLargePayloadSize in the
 * older libraries) holds the payload's size in bytes. Recognising and
 * writing that pointer; fetching is keying_shape's (keying.h), with s3.h.
 */
#ifndef TWICE_PAYLOAD_H
#define TWICE_PAYLOAD_H

#include <stddef.h>

struct buf;
struct jsondoc;

#define PAYLOAD_POINTER_CLASS    "software.amazon.payloadoffloading.PayloadS3Pointer"
#define PAYLOAD_SIZE_ATTR        "ExtendedPayloadSize"
#define PAYLOAD_LEGACY_SIZE_ATTR "SQSLargePayloadSize"

/* A pointer's object (S3 allows 63-byte bucket names, 1024-byte keys). */
struct payload_pointer {
    char bucket[64];
    char key[1025];
};

/* Whether a body that is not valid JSON still looks like a pointer (it
 * starts with '[' and names the pointer class): then it is a broken one. */
int payload_looks_like_pointer(const char *body, size_t len);

/*
 * Read a pointer from doc, the parsed body (NULL when it is not JSON;
 * body/len its text). has_size_attr: the message carries the size
 * attribute, so it claims to be a pointer. Returns 1 with *p (a pointer
 * with a valid bucket name and key), 0 when the body is no pointer and does
 * not claim to be one, -1 with err when it is or claims to be one and is
 * broken (bad-payload-pointer).
 */
int payload_pointer_read(const struct jsondoc *doc, const char *body, size_t len,
                         int has_size_attr, struct payload_pointer *p, char *err, size_t errlen);

/* Append the pointer to bucket/key, as the Extended Client writes it, to
 * out. 0, or -1 on ENOMEM. */
int payload_pointer_write(struct buf *out, const char *bucket, const char *key);

#endif
