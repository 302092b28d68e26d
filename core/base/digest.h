/*
 * digest.h - SHA-256 and MD5 of a buffer, with the algorithms fetched from
 * OpenSSL's provider once per process. EVP_sha256() and SHA256() look the
 * algorithm up again on every call (some 2,000 instructions, more than
 * hashing a small message costs), and twice hashes every message body and
 * every request. Each thread hashes with its own context, kept until the
 * thread exits: safe from any thread. Not for HMAC or streaming digests.
 */
#ifndef TWICE_DIGEST_H
#define TWICE_DIGEST_H

#include <stddef.h>

/* SHA-256 of data[0..n) into out[32]. 0, or -1 (out zeroed) on failure. */
int digest_sha256(const void *data, size_t n, unsigned char out[32]);

/* MD5 of data[0..n) into out[16]. 0, or -1 when MD5 is unavailable (a
 * FIPS provider) or on failure. */
int digest_md5(const void *data, size_t n, unsigned char out[16]);

#endif
