/*
 * sigv4.c - AWS Signature Version 4 for the Authorization header (sigv4.h).
 * Pure computation with OpenSSL; not for presigned URLs, SigV4a or
 * S3's chunked payload signing, and it never reads the clock. Also what
 * AWS quotes back of a signature it refused, cut before it reaches a log.
 */
#include "sigv4.h"

#include "buf.h"
#include "creds.h"
#include "digest.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIGV4_ALGORITHM "AWS4-HMAC-SHA256"

static const char hex_digits[] = "0123456789abcdef";

static void
hex_encode(const unsigned char *in, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex_digits[in[i] >> 4];
        out[2 * i + 1] = hex_digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Lower-case hex SHA-256 of n bytes into out[65]. */
static void
sha256_hex(const void *data, size_t n, char out[65])
{
    unsigned char md[32];

    digest_sha256(data, n, md); /* zeros on failure: the signature will not match */
    hex_encode(md, 32, out);
}

static void
hmac_sha256(const void *key, size_t keylen, const void *data, size_t n, unsigned char out[32])
{
    unsigned int outlen = 0;

    if (HMAC(EVP_sha256(), key, (int) keylen, data, n, out, &outlen) == NULL || outlen != 32) {
        memset(out, 0, 32);
    }
}

static EVP_MAC *hmac_alg; /* fetched once; NULL when the provider has no HMAC */
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void
hmac_fetch(void)
{
    hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

/*
 * A new HMAC-SHA256 context keyed with key[32], or NULL. OpenSSL 3's HMAC()
 * fetches the MAC and the digest on every call (some 14,000 instructions
 * per request, more than the MAC itself); this context is made once per
 * signing key and re-initialised per request (keyed_mac_hex), which keeps
 * the key's inner and outer digest states. Freed with EVP_MAC_CTX_free,
 * which wipes them.
 */
static EVP_MAC_CTX *
keyed_mac_new(const unsigned char key[32])
{
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *) "SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    EVP_MAC_CTX *ctx = NULL;

    pthread_once(&hmac_once, hmac_fetch);
    if (hmac_alg != NULL && (ctx = EVP_MAC_CTX_new(hmac_alg)) != NULL &&
        EVP_MAC_init(ctx, key, 32, params) != 1) {
        EVP_MAC_CTX_free(ctx);
        ctx = NULL;
    }
    return ctx;
}

/* The lower-case hex MAC of s with ctx's key into out[65]; -1 on failure. */
static int
keyed_mac_hex(EVP_MAC_CTX *ctx, const char *s, char out[65])
{
    unsigned char mac[32];
    size_t len = 0;

    if (EVP_MAC_init(ctx, NULL, 0, NULL) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *) s, strlen(s)) != 1 ||
        EVP_MAC_final(ctx, mac, &len, sizeof(mac)) != 1 || len != sizeof(mac)) {
        return -1;
    }
    hex_encode(mac, 32, out);
    return 0;
}

static int
is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

void
sigv4_uri_encode(struct buf *out, const char *s, size_t n, int keep_slash)
{
    static const char upper[] = "0123456789ABCDEF";

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        if (is_unreserved(c) || (keep_slash && c == '/')) {
            buf_putc(out, (char) c);
        } else {
            char esc[3] = {'%', upper[c >> 4], upper[c & 15]};
            buf_append(out, esc, 3);
        }
    }
}

static int
hex_value(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Percent-decode n bytes of a query component into out. A '%' not followed
 * by two hex digits stays literal; '+' stays '+' (SigV4 is not form
 * decoding), so it is signed as %2B. */
static void
uri_decode(struct buf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n) {
            int hi = hex_value(s[i + 1]);
            int lo = hex_value(s[i + 2]);
            if (hi >= 0 && lo >= 0) {
                buf_putc(out, (char) (hi << 4 | lo));
                i += 2;
                continue;
            }
        }
        buf_putc(out, s[i]);
    }
}

/*
 * The canonical URI. With normalize, "." and empty segments go, ".." drops
 * the segment before it, and a trailing '/' is kept (what botocore and the
 * vectors do). Each byte outside the unreserved set is %-encoded, '%'
 * included: a path that is already encoded is encoded again, as every
 * service but S3 expects.
 */
static int
canonical_path(struct buf *out, const char *path, int normalize)
{
    if (path == NULL || *path == '\0') {
        return buf_putc(out, '/');
    }
    if (!normalize) {
        if (*path != '/') {
            buf_putc(out, '/');
        }
        sigv4_uri_encode(out, path, strlen(path), 1);
        return out->failed ? -1 : 0;
    }

    size_t nseg = 1;
    for (const char *p = path; *p; p++) {
        nseg += *p == '/';
    }
    const char **seg = malloc(nseg * sizeof(*seg));
    size_t *seglen = malloc(nseg * sizeof(*seglen));
    size_t depth = 0;
    int rc = -1;
    if (seg == NULL || seglen == NULL) {
        goto out;
    }
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            depth -= depth > 0;
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            seg[depth] = p;
            seglen[depth++] = n;
        }
        p += n + (p[n] == '/');
    }
    for (size_t i = 0; i < depth; i++) {
        buf_putc(out, '/');
        sigv4_uri_encode(out, seg[i], seglen[i], 0);
    }
    if (depth == 0 || path[strlen(path) - 1] == '/') {
        buf_putc(out, '/');
    }
    rc = out->failed ? -1 : 0;
out:
    free(seg);
    free(seglen);
    return rc;
}

struct query_pair {
    char *name;  /* encoded, owned */
    char *value; /* encoded, owned */
};

static int
query_pair_cmp(const void *a, const void *b)
{
    const struct query_pair *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : strcmp(x->value, y->value);
}

/* Decode one query component and encode it the canonical way; a new
 * string the caller frees, or NULL on ENOMEM. */
static char *
query_component(const char *s, size_t n)
{
    struct buf raw = BUF_INIT, enc = BUF_INIT;

    uri_decode(&raw, s, n);
    sigv4_uri_encode(&enc, buf_str(&raw), raw.len, 0);
    if (raw.failed) {
        enc.failed = 1;
    }
    buf_free(&raw);
    return buf_steal(&enc);
}

/* The canonical query: pairs sorted by encoded name, then encoded value;
 * "name" without '=' signs as "name=". */
static int
canonical_query(struct buf *out, const char *query)
{
    size_t cap = 1, n = 0;
    int rc = -1;

    if (query == NULL || *query == '\0') {
        return 0;
    }
    for (const char *p = query; *p; p++) {
        cap += *p == '&';
    }
    struct query_pair *pairs = calloc(cap, sizeof(*pairs));
    if (pairs == NULL) {
        return -1;
    }
    for (const char *p = query; *p;) {
        size_t len = strcspn(p, "&");
        if (len > 0) {
            const char *eq = memchr(p, '=', len);
            size_t nlen = eq != NULL ? (size_t) (eq - p) : len;
            pairs[n].name = query_component(p, nlen);
            pairs[n].value = eq != NULL ? query_component(eq + 1, len - nlen - 1) : strdup("");
            if (pairs[n].name == NULL || pairs[n].value == NULL) {
                goto out; /* the loop below frees all cap slots */
            }
            n++;
        }
        p += len + (p[len] == '&');
    }
    qsort(pairs, n, sizeof(*pairs), query_pair_cmp);
    for (size_t i = 0; i < n; i++) {
        buf_printf(out, "%s%s=%s", i > 0 ? "&" : "", pairs[i].name, pairs[i].value);
    }
    rc = out->failed ? -1 : 0;
out:
    for (size_t i = 0; i < cap; i++) {
        free(pairs[i].name);
        free(pairs[i].value);
    }
    free(pairs);
    return rc;
}

static int
ascii_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

struct header_ref {
    const char *name;
    size_t index; /* position in the request: keeps repeated names in order */
};

static int
header_ref_cmp(const void *a, const void *b)
{
    const struct header_ref *x = a, *y = b;
    const unsigned char *p = (const unsigned char *) x->name;
    const unsigned char *q = (const unsigned char *) y->name;

    while (*p && ascii_lower(*p) == ascii_lower(*q)) {
        p++;
        q++;
    }
    int c = ascii_lower(*p) - ascii_lower(*q);
    if (c != 0) {
        return c;
    }
    return x->index < y->index ? -1 : x->index > y->index;
}

static int
same_name(const char *a, const char *b)
{
    while (*a && ascii_lower((unsigned char) *a) == ascii_lower((unsigned char) *b)) {
        a++;
        b++;
    }
    return *a == '\0' && *b == '\0';
}

/* s in lower case: room made once, then a byte per character (every
 * header name of every request, twice). */
static void
append_lower(struct buf *out, const char *s)
{
    size_t n = strlen(s);

    if (buf_reserve(out, n) != 0) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        out->data[out->len + i] = (char) ascii_lower((unsigned char) s[i]);
    }
    out->len += n;
    out->data[out->len] = '\0';
}

/* A header value trimmed, with every run of blanks (including the line
 * breaks of a folded multi-line value) collapsed to one space; the text
 * between blanks is appended a run at a time. */
static void
append_trimmed(struct buf *out, const char *v)
{
    static const char blanks[] = " \t\r\n";
    int any = 0;

    while (v != NULL && *v) {
        v += strspn(v, blanks);
        size_t run = strcspn(v, blanks);
        if (run == 0) {
            break; /* only blanks were left */
        }
        if (any) {
            buf_putc(out, ' ');
        }
        buf_append(out, v, run);
        v += run;
        any = 1;
    }
}

/* "name:value\n" per distinct lower-case name, sorted; values of repeated
 * names joined with ',' in request order. */
static int
canonical_headers(struct buf *out, struct buf *signed_headers, const struct sigv4_header *h,
                  size_t n)
{
    struct header_ref *refs = malloc((n ? n : 1) * sizeof(*refs));

    if (refs == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        refs[i].name = h[i].name;
        refs[i].index = i;
    }
    qsort(refs, n, sizeof(*refs), header_ref_cmp);
    for (size_t i = 0; i < n; i++) {
        const struct sigv4_header *cur = &h[refs[i].index];
        if (i > 0 && same_name(refs[i - 1].name, cur->name)) {
            buf_putc(out, ',');
        } else {
            if (i > 0) {
                buf_putc(out, '\n');
                buf_putc(signed_headers, ';');
            }
            append_lower(out, cur->name);
            buf_putc(out, ':');
            append_lower(signed_headers, cur->name);
        }
        append_trimmed(out, cur->value);
    }
    if (n > 0) {
        buf_putc(out, '\n');
    }
    free(refs);
    return out->failed || signed_headers->failed ? -1 : 0;
}

int
sigv4_canonical_request(const struct sigv4_request *r, struct buf *out, struct buf *signed_headers)
{
    char payload_hash[65];
    size_t signed_start = signed_headers->len;

    buf_puts(out, r->method);
    buf_putc(out, '\n');
    if (canonical_path(out, r->path, r->normalize_path) != 0) {
        return -1;
    }
    buf_putc(out, '\n');
    if (canonical_query(out, r->query) != 0) {
        return -1;
    }
    buf_putc(out, '\n');
    if (canonical_headers(out, signed_headers, r->headers, r->nheaders) != 0) {
        return -1;
    }
    buf_putc(out, '\n');
    buf_append(out, buf_str(signed_headers) + signed_start, signed_headers->len - signed_start);
    buf_putc(out, '\n');
    sha256_hex(r->body != NULL ? r->body : "", r->body != NULL ? r->body_len : 0, payload_hash);
    buf_puts(out, payload_hash);
    return out->failed ? -1 : 0;
}

int
sigv4_string_to_sign(const char *amz_date, const char *scope, const char *canonical_request,
                     struct buf *out)
{
    char creq_hash[65];

    sha256_hex(canonical_request, strlen(canonical_request), creq_hash);
    buf_cat(out, SIGV4_ALGORITHM "\n", amz_date, "\n", scope, "\n", creq_hash, NULL);
    return out->failed ? -1 : 0;
}

/*
 * The secret is copied once, into a stack buffer that is wiped before
 * return. HMAC hashes a key longer than its 64-byte block first, so for a
 * secret that long we hash "AWS4" + secret ourselves: the same MAC, and no
 * heap copy of the secret.
 */
void
sigv4_signing_key(const char *secret, const char *date, const char *region, const char *service,
                  unsigned char out[32])
{
    unsigned char key[64], k1[32], k2[32];
    size_t slen = strlen(secret), keylen = 0;

    if (slen <= sizeof(key) - 4) {
        memcpy(key, "AWS4", 4);
        memcpy(key + 4, secret, slen);
        keylen = 4 + slen;
    } else {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        unsigned int mdlen = 0;
        if (ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
            EVP_DigestUpdate(ctx, "AWS4", 4) == 1 && EVP_DigestUpdate(ctx, secret, slen) == 1 &&
            EVP_DigestFinal_ex(ctx, key, &mdlen) == 1) {
            keylen = mdlen;
        }
        EVP_MD_CTX_free(ctx); /* wipes its state */
    }
    if (keylen == 0) {
        memset(out, 0, 32); /* cannot happen short of a broken libcrypto */
    } else {
        hmac_sha256(key, keylen, date, strlen(date), k1);
        hmac_sha256(k1, 32, region, strlen(region), k2);
        hmac_sha256(k2, 32, service, strlen(service), k1);
        hmac_sha256(k1, 32, "aws4_request", 12, out);
    }
    OPENSSL_cleanse(key, sizeof(key));
    OPENSSL_cleanse(k1, sizeof(k1));
    OPENSSL_cleanse(k2, sizeof(k2));
}

void
sigv4_signature(const unsigned char key[32], const char *string_to_sign, char out[65])
{
    unsigned char mac[32];

    hmac_sha256(key, 32, string_to_sign, strlen(string_to_sign), mac);
    hex_encode(mac, 32, out);
}

void
sigv4_key_cache_clear(struct sigv4_key_cache *cache)
{
    EVP_MAC_CTX_free(cache->mac);
    OPENSSL_cleanse(cache, sizeof(*cache));
}

/* The signing key from the cache when it was derived from the same inputs,
 * else derived (and kept when the inputs fit the cache). */
static void
cached_signing_key(struct sigv4_key_cache *cache, const char *secret, const char *date,
                   const char *region, const char *service, unsigned char out[32])
{
    if (cache != NULL && cache->valid && strcmp(cache->secret, secret) == 0 &&
        strcmp(cache->date, date) == 0 && strcmp(cache->region, region) == 0 &&
        strcmp(cache->service, service) == 0) {
        memcpy(out, cache->key, 32);
        return;
    }
    sigv4_signing_key(secret, date, region, service, out);
    if (cache == NULL) {
        return;
    }
    sigv4_key_cache_clear(cache);
    if (strlen(secret) < sizeof(cache->secret) && strlen(region) < sizeof(cache->region) &&
        strlen(service) < sizeof(cache->service)) {
        snprintf(cache->secret, sizeof(cache->secret), "%s", secret);
        snprintf(cache->date, sizeof(cache->date), "%s", date);
        snprintf(cache->region, sizeof(cache->region), "%s", region);
        snprintf(cache->service, sizeof(cache->service), "%s", service);
        memcpy(cache->key, out, 32);
        cache->mac = keyed_mac_new(out); /* NULL: sigv4_signature per request */
        cache->valid = 1;
    }
}

int
sigv4_authorization(const struct sigv4_request *r, const struct creds *c, const char *region,
                    const char *service, const char *amz_date, struct buf *out)
{
    return sigv4_authorization_cached(r, c, region, service, amz_date, NULL, out);
}

int
sigv4_authorization_cached(const struct sigv4_request *r, const struct creds *c,
                           const char *region, const char *service, const char *amz_date,
                           struct sigv4_key_cache *cache, struct buf *out)
{
    struct buf creq = BUF_INIT, signed_headers = BUF_INIT, sts = BUF_INIT, scope = BUF_INIT;
    unsigned char key[32];
    char date[9], signature[65];
    int rc = -1;

    size_t dlen = strnlen(amz_date, 8);
    memcpy(date, amz_date, dlen);
    date[dlen] = '\0';
    if (buf_cat(&scope, date, "/", region, "/", service, "/aws4_request", NULL) != 0 ||
        sigv4_canonical_request(r, &creq, &signed_headers) != 0 ||
        sigv4_string_to_sign(amz_date, buf_str(&scope), buf_str(&creq), &sts) != 0) {
        goto out;
    }
    cached_signing_key(cache, c->secret_access_key, date, region, service, key);
    if (cache == NULL || cache->mac == NULL ||
        keyed_mac_hex(cache->mac, buf_str(&sts), signature) != 0) {
        sigv4_signature(key, buf_str(&sts), signature);
    }
    OPENSSL_cleanse(key, sizeof(key));
    buf_cat(out, SIGV4_ALGORITHM " Credential=", c->access_key_id, "/", buf_str(&scope),
            ", SignedHeaders=", buf_str(&signed_headers), ", Signature=", signature, NULL);
    rc = out->failed ? -1 : 0;
out:
    buf_free(&creq);
    buf_free(&signed_headers);
    buf_free(&sts);
    buf_free(&scope);
    return rc;
}

void
sigv4_amz_date(long long t, char out[17])
{
    time_t tt = (time_t) t;
    struct tm tm;

    if (gmtime_r(&tt, &tm) == NULL || strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16) {
        out[0] = '\0';
    }
}

void
sigv4_cut_quoted_signing(char *message)
{
    static const char *const quotes[] = {"The Canonical String for this request",
                                         "The String-to-Sign",
                                         "StringToSign",
                                         "CanonicalRequest",
                                         "x-amz-security-token",
                                         "X-Amz-Security-Token",
                                         NULL};
    for (size_t i = 0; quotes[i] != NULL; i++) {
        char *at = strstr(message, quotes[i]);
        if (at != NULL) {
            *at = '\0';
        }
    }
    size_t n = strlen(message);
    while (n > 0 && (message[n - 1] == '\n' || message[n - 1] == ' ' || message[n - 1] == '\r')) {
        message[--n] = '\0';
    }
}
