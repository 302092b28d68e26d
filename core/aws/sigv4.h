/*
 * sigv4.h - AWS Signature Version 4 (header signing) with OpenSSL.
 *
 * Each step is a function of its own so the official test vectors can
 * check them one by one: canonical request, string to sign, signing key,
 * signature, Authorization header. Pure functions: no clock, no I/O.
 */
#ifndef TWICE_SIGV4_H
#define TWICE_SIGV4_H

#include <openssl/types.h>
#include <stddef.h>

struct buf;
struct creds;

struct sigv4_header {
    const char *name; /* any case; repeated names are joined with ',' in order */
    const char *value;
};

struct sigv4_request {
    const char *method;                 /* "POST" */
    const char *path;                   /* raw path as sent, e.g. "/" */
    const char *query;                  /* raw query string without '?', or NULL */
    const struct sigv4_header *headers; /* must include host and x-amz-date */
    size_t nheaders;
    const void *body;
    size_t body_len;
    int normalize_path; /* 1 except for S3; SQS's path is always "/" */
};

/* RFC 3986 encoding as SigV4 wants it: unreserved bytes (A-Z a-z 0-9 - _
 * . ~) as they are, '/' too when keep_slash, everything else %XX in
 * upper-case hex. Appended to out. Also what a form body needs. */
void sigv4_uri_encode(struct buf *out, const char *s, size_t n, int keep_slash);

/* Step 1: the canonical request (no trailing newline); signed_headers gets
 * the ';'-joined lower-case names. 0, or -1 on ENOMEM. */
int sigv4_canonical_request(const struct sigv4_request *r, struct buf *out,
                            struct buf *signed_headers);

/* Step 2: "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex sha256(creq)>". */
int sigv4_string_to_sign(const char *amz_date, const char *scope, const char *canonical_request,
                         struct buf *out);

/* Step 3: kSigning from the secret, "YYYYMMDD", region and service. */
void sigv4_signing_key(const char *secret, const char *date, const char *region,
                       const char *service, unsigned char out[32]);

/* Step 4: lower-case hex HMAC-SHA256(key, string_to_sign) into out[65]. */
void sigv4_signature(const unsigned char key[32], const char *string_to_sign, char out[65]);

/*
 * All steps: the Authorization header value for r signed with c at amz_date
 * ("YYYYMMDDTHHMMSSZ", which r's x-amz-date header must carry too),
 * appended to out.
 * r must already hold x-amz-security-token when c has a session token.
 * Returns 0, or -1 on ENOMEM.
 */
int sigv4_authorization(const struct sigv4_request *r, const struct creds *c, const char *region,
                        const char *service, const char *amz_date, struct buf *out);

/* A derived signing key kept between the requests of one client: valid for
 * one secret, day, region and service, which is what the key is made of.
 * Deriving it costs four HMACs per request otherwise. Holds a copy of the
 * secret and an HMAC context keyed with the key: start it zeroed, use it
 * from one thread at a time, and wipe and free it with
 * sigv4_key_cache_clear. */
struct sigv4_key_cache {
    int valid;
    char secret[160];
    char date[9];
    char region[64];
    char service[32];
    unsigned char key[32];
    EVP_MAC_CTX *mac; /* keyed with key (owned), or NULL */
};
void sigv4_key_cache_clear(struct sigv4_key_cache *cache);

/* sigv4_authorization with a key cache (cache may be NULL: no caching). */
int sigv4_authorization_cached(const struct sigv4_request *r, const struct creds *c,
                               const char *region, const char *service, const char *amz_date,
                               struct sigv4_key_cache *cache, struct buf *out);

/* "YYYYMMDDTHHMMSSZ" for t (UTC) into out[17]. */
void sigv4_amz_date(long long t, char out[17]);

/* Cut, in place, an AWS error message where it quotes the canonical request
 * or the string to sign it expected (a SignatureDoesNotMatch of AWS's older
 * front ends, or of a proxy that signs in between), and the blank space
 * before the quote: the quoted headers hold the session token
 * (x-amz-security-token), which must not reach a log line. For SQS's and
 * STS's errors alike. */
void sigv4_cut_quoted_signing(char *message);

#endif
