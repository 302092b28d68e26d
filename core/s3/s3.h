/*
 * s3.h - a small Amazon S3 client for message payloads kept in S3 (the
 * Extended Client format): HEAD, GET with a size limit, PUT and DELETE of
 * one object, signed with SigV4 and the credential chain SQS uses.
 *
 * One struct s3_client per thread (it owns a curl handle). One attempt per
 * call: callers retry by giving the message back. Nothing here logs.
 */
#ifndef TWICE_S3_H
#define TWICE_S3_H

#include "s3name.h" /* s3_valid_bucket */

#include <stddef.h>

struct creds_chain;

/* What went wrong with a call. */
struct s3_error {
    long http_status; /* 0: no response (transport error) or refused before sending */
    int transient;    /* worth trying later: 5xx, 429, transport, credentials */
    int too_large;    /* s3_get: the object is larger than the limit (nothing was read) */
    long long size;   /* its size, when too_large */
    char code[64];    /* "NoSuchKey", "AccessDenied", "Timeout", ... */
    char message[512];
};

struct s3_client;

/*
 * A client for region. endpoint: the configuration's aws.s3_endpoint, else
 * NULL for AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then AWS's regional
 * endpoint. A configured endpoint (an emulator, a VPC endpoint) is addressed
 * path-style (ENDPOINT/bucket/key); AWS's is addressed virtual-hosted
 * (bucket.s3.REGION.amazonaws.com/key), path-style for bucket names with a
 * dot. creds is borrowed. 0 and *out, or -1 with err.
 */
int s3_client_new(const char *endpoint, const char *region, const char *ca_file,
                  struct creds_chain *creds, struct s3_client **out, char *err, size_t errlen);
void s3_client_free(struct s3_client *c);

/* A key twice will address: 1-1024 bytes of UTF-8 without control
 * characters, and no "." or ".." path segment (URLs would fold them). */
int s3_valid_key(const char *key);

/*
 * The object's contents, when it has at most max bytes: its size is read
 * with HEAD first, and the GET stops reading past max (an object replaced
 * in between). 0 with *body (malloc'd, NUL-terminated, owned by the caller)
 * and *len; -1 with err (err->too_large for an object over max).
 */
int s3_get(struct s3_client *c, const char *bucket, const char *key, size_t max, char **body,
           size_t *len, struct s3_error *err);
/* PUT an object. 0, or -1 with err. */
int s3_put(struct s3_client *c, const char *bucket, const char *key, const void *body, size_t len,
           struct s3_error *err);
/* DELETE an object (deleting one that is gone succeeds). 0, or -1 with err. */
int s3_delete(struct s3_client *c, const char *bucket, const char *key, struct s3_error *err);

/*
 * Whether bucket is there for twice (`twiced -t --connect`): a GET of an
 * object that is not there answers NoSuchKey, or AccessDenied, which is what
 * S3 answers a caller without s3:ListBucket and so says nothing against the
 * bucket. 0, or -1 with err (NoSuchBucket, credentials S3 does not accept,
 * no answer). Nothing is written.
 */
int s3_check_bucket(struct s3_client *c, const char *bucket, struct s3_error *err);

#endif
