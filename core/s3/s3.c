/*
 * s3.c - the S3 client of s3.h: object URLs (path-style or virtual-hosted),
 * SigV4 headers for service "s3" (the payload's SHA-256 signed in
 * x-amz-content-sha256), and what a status means for a message.
 */
#include "s3.h"

#include "ascii.h"
#include "awsconfig.h"
#include "buf.h"
#include "cnum.h"
#include "creds.h"
#include "digest.h"
#include "http.h"
#include "sigv4.h"
#include "url.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S3_TIMEOUT_MS         60000L
#define S3_CONNECT_TIMEOUT_MS 5000L
#define S3_ERROR_BODY_MAX     (64u << 10)
#define S3_KEY_MAX            1024
#define S3_CHECK_KEY          "twice-connect-check" /* s3_check_bucket's object */

struct s3_client {
    char *base;                /* "http[s]://host[:port]" without a trailing '/' */
    char *host;                /* base's authority */
    char *region;              /* signing region */
    int path_style;            /* bucket in the path, not in the host */
    struct creds_chain *creds; /* borrowed */
    struct http_client *http;  /* owned */
    struct http_response resp;
    struct sigv4_key_cache keys;
};

static void s3_error_set(struct s3_error *e, long status, int transient, const char *code,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
s3_error_set(struct s3_error *e, long status, int transient, const char *code, const char *fmt,
             ...)
{
    memset(e, 0, sizeof(*e));
    e->http_status = status;
    e->transient = transient;
    snprintf(e->code, sizeof(e->code), "%s", code);
    va_list ap;
    va_start(ap, fmt);
    cnum_vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
}

/* AWS's own endpoint for region, as awsconfig_service_url builds it. */
static int
is_aws_default(const char *url, const char *region)
{
    char want[160];
    snprintf(want, sizeof(want), "https://s3.%s.amazonaws.com%s", region,
             strncmp(region, "cn-", 3) == 0 ? ".cn" : "");
    return strcmp(url, want) == 0;
}

int
s3_client_new(const char *endpoint, const char *region, const char *ca_file,
              struct creds_chain *creds, struct s3_client **out, char *err, size_t errlen)
{
    struct s3_client *c = calloc(1, sizeof(*c));
    *out = NULL;
    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->creds = creds;
    const char *src = "aws.s3_endpoint", *why;
    if (endpoint == NULL || endpoint[0] == '\0') {
        endpoint = awsconfig_endpoint_env("s3", &src);
        src = endpoint != NULL ? src : "the region's endpoint";
    }
    c->base = endpoint != NULL ? strdup(endpoint) : awsconfig_service_url("s3", region);
    c->region = strdup(region);
    c->http = http_client_new(ca_file);
    http_response_init(&c->resp);
    if (c->base == NULL || c->region == NULL || c->http == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t n = strlen(c->base); n > 0 && c->base[n - 1] == '/'; n--) {
        c->base[n - 1] = '\0';
    }
    if ((why = url_problem(c->base, URL_NO_QUERY | URL_NO_PATH)) != NULL) {
        snprintf(err, errlen, "bad S3 endpoint %s=%.200s: %s (expected http[s]://host[:port])",
                 src, c->base, why);
        goto fail;
    }
    const char *auth = strstr(c->base, "://");
    if ((c->host = strdup(auth + 3)) == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    c->path_style = !is_aws_default(c->base, region);
    *out = c;
    return 0;
fail:
    s3_client_free(c);
    return -1;
}

void
s3_client_free(struct s3_client *c)
{
    if (c == NULL) {
        return;
    }
    http_client_free(c->http);
    http_response_free(&c->resp);
    sigv4_key_cache_clear(&c->keys);
    free(c->base);
    free(c->host);
    free(c->region);
    free(c);
}

int
s3_valid_key(const char *k)
{
    size_t n = k != NULL ? strlen(k) : 0;
    if (n == 0 || n > S3_KEY_MAX || !utf8_valid(k, n)) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char) k[i] < 0x20 || k[i] == 0x7f) {
            return 0;
        }
    }
    for (const char *seg = k; seg != NULL; seg = strchr(seg, '/') ? strchr(seg, '/') + 1 : NULL) {
        size_t len = strcspn(seg, "/");
        if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.')) {
            return 0;
        }
    }
    return 1;
}

/* One request's target: the Host value, the raw path (signed) and the URL
 * (the path encoded as signed). */
struct s3_target {
    struct buf host, path, url;
};

static int
s3_target(const struct s3_client *c, const char *bucket, const char *key, struct s3_target *t)
{
    int virtual_host = !c->path_style && strchr(bucket, '.') == NULL;
    const char *scheme_end = strstr(c->base, "://") + 3;
    if (virtual_host) {
        buf_printf(&t->host, "%s.%s", bucket, c->host);
        buf_printf(&t->path, "/%s", key);
        buf_printf(&t->url, "%.*s%s/", (int) (scheme_end - c->base), c->base, buf_str(&t->host));
    } else {
        buf_puts(&t->host, c->host);
        buf_printf(&t->path, "/%s/%s", bucket, key);
        buf_printf(&t->url, "%s/%s/", c->base, bucket);
    }
    sigv4_uri_encode(&t->url, key, strlen(key), 1);
    return t->host.failed || t->path.failed || t->url.failed ? -1 : 0;
}

static void
s3_target_free(struct s3_target *t)
{
    buf_free(&t->host);
    buf_free(&t->path);
    buf_free(&t->url);
}

/* The header lines of one signed request; token and Authorization are
 * wiped when freed. */
struct s3_signed {
    struct buf host, date, sha, token, auth;
};

static void
s3_signed_free(struct s3_signed *s)
{
    buf_free(&s->host);
    buf_free(&s->date);
    buf_free(&s->sha);
    buf_free_wipe(&s->token);
    buf_free_wipe(&s->auth);
}

static int
s3_sign(struct s3_client *c, const char *method, const struct s3_target *t, const void *body,
        size_t len, const struct creds *cr, struct s3_signed *s)
{
    unsigned char sum[32];
    char date[17], hex[65];
    if (digest_sha256(body != NULL ? body : "", len, sum) != 0) {
        return -1;
    }
    for (int i = 0; i < 32; i++) {
        snprintf(hex + 2 * i, 3, "%02x", sum[i]);
    }
    sigv4_amz_date((long long) time(NULL), date);
    struct sigv4_header h[4] = {
        {"host", buf_str(&t->host)},
        {"x-amz-content-sha256", hex},
        {"x-amz-date", date},
        {"x-amz-security-token", cr->session_token},
    };
    struct sigv4_request r = {
        .method = method,
        .path = buf_str(&t->path),
        .headers = h,
        .nheaders = cr->session_token != NULL ? 4 : 3,
        .body = body,
        .body_len = len,
        .normalize_path = 0,
    };
    struct buf auth = BUF_INIT;
    int rc = sigv4_authorization_cached(&r, cr, c->region, "s3", date, &c->keys, &auth);
    buf_printf(&s->host, "Host: %s", buf_str(&t->host));
    buf_printf(&s->date, "X-Amz-Date: %s", date);
    buf_printf(&s->sha, "X-Amz-Content-SHA256: %s", hex);
    if (cr->session_token != NULL) {
        buf_printf(&s->token, "X-Amz-Security-Token: %s", cr->session_token);
    }
    buf_printf(&s->auth, "Authorization: %s", buf_str(&auth));
    buf_free_wipe(&auth);
    return rc != 0 || s->host.failed || s->date.failed || s->sha.failed || s->token.failed ||
                   s->auth.failed
               ? -1
               : 0;
}

/* The text between <Code> and </Code> of an S3 error body, or "". */
static void
s3_error_code(const struct http_response *r, char *out, size_t cap)
{
    const char *b = buf_str(&r->body), *start = strstr(b, "<Code>"), *end;
    out[0] = '\0';
    if (start != NULL && (end = strstr(start + 6, "</Code>")) != NULL && end - start - 6 < 60) {
        snprintf(out, cap, "%.*s", (int) (end - start - 6), start + 6);
        for (char *p = out; *p; p++) {
            if (!ascii_isalnum((unsigned char) *p)) {
                *p = '_';
            }
        }
    }
}

/* The region S3 says the bucket is in (x-amz-bucket-region, sent with a
 * redirect or a HEAD's error, which has no body to name its code), if it
 * looks like one: letters, digits and '-'. */
static int
s3_bucket_region(const struct s3_client *c, char *out, size_t cap)
{
    const char *h = http_response_header(&c->resp, "x-amz-bucket-region");
    size_t n = h != NULL ? strspn(h, "abcdefghijklmnopqrstuvwxyz0123456789-") : 0;
    if (n == 0 || h[n] != '\0' || n >= cap) {
        return 0;
    }
    memcpy(out, h, n + 1);
    return 1;
}

/* What a non-2xx status means: 403 and 404 are final, the rest may pass
 * (a redirect: the region is wrong, which a configuration change fixes). */
static void
s3_status_error(struct s3_client *c, const char *method, struct s3_error *err)
{
    char code[64], region[32];
    long st = c->resp.status;
    s3_error_code(&c->resp, code, sizeof(code));
    if (code[0] == '\0') {
        snprintf(code, sizeof(code), "%s",
                 st == 404   ? "NotFound"
                 : st == 403 ? "AccessDenied"
                 : st == 301 ? "PermanentRedirect"
                 : st == 307 ? "TemporaryRedirect"
                 : st == 400 ? "BadRequest"
                             : "HTTPError");
    }
    int where = s3_bucket_region(c, region, sizeof(region));
    s3_error_set(err, st, st != 403 && st != 404, code, "%s: HTTP %ld %s%s%s%s", method, st, code,
                 where ? " (the bucket is in region " : "", where ? region : "",
                 where ? "; check aws.region and aws.s3_endpoint)" : "");
}

/*
 * One signed request. max_response bounds the body read. 0 on a 2xx
 * answer (in c->resp), else -1 with err.
 */
static int
s3_request(struct s3_client *c, const char *method, const char *bucket, const char *key,
           const void *body, size_t len, size_t max_response, struct s3_error *err)
{
    struct s3_target t = {BUF_INIT, BUF_INIT, BUF_INIT};
    struct s3_signed s = {BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT};
    struct creds cr = {0};
    char cerr[1024];
    int rc = -1;
    if (!s3_valid_bucket(bucket) || !s3_valid_key(key)) {
        s3_error_set(err, 0, 0, "InvalidArgument", "not a valid bucket name or object key");
        return -1;
    }
    if (creds_get(c->creds, &cr, cerr, sizeof(cerr)) != 0) {
        s3_error_set(err, 0, 1, "CredentialsError", "%s", cerr);
        return -1;
    }
    if (s3_target(c, bucket, key, &t) != 0 || s3_sign(c, method, &t, body, len, &cr, &s) != 0) {
        s3_error_set(err, 0, 1, "OutOfMemory", "out of memory while signing");
        goto done;
    }
    /* curl would call a PUT's body a form; and no 100-continue round trip */
    const char *headers[7] = {s.host.data,
                              s.date.data,
                              s.sha.data,
                              s.auth.data,
                              "Content-Type: application/octet-stream",
                              "Expect:"};
    size_t nh = 6;
    if (s.token.data != NULL) {
        headers[nh++] = s.token.data;
    }
    struct http_request req = {
        .method = method,
        .url = buf_str(&t.url),
        .headers = headers,
        .nheaders = nh,
        .body = body,
        .body_len = len,
        .timeout_ms = S3_TIMEOUT_MS,
        .connect_timeout_ms = S3_CONNECT_TIMEOUT_MS,
        .max_response = max_response,
    };
    struct http_error herr;
    if (http_perform(c->http, &req, &c->resp, &herr) != 0) {
        s3_error_set(err, 0, herr.transient || strcmp(herr.code, "TooLarge") == 0, herr.code,
                     "%s %s: %s", method, c->base, herr.message);
        goto done;
    }
    if (c->resp.status >= 200 && c->resp.status < 300) {
        rc = 0;
    } else {
        s3_status_error(c, method, err);
    }
done:
    s3_signed_free(&s);
    s3_target_free(&t);
    creds_clear(&cr);
    return rc;
}

int
s3_get(struct s3_client *c, const char *bucket, const char *key, size_t max, char **body,
       size_t *len, struct s3_error *err)
{
    *body = NULL;
    *len = 0;
    if (s3_request(c, "HEAD", bucket, key, NULL, 0, S3_ERROR_BODY_MAX, err) != 0) {
        return -1;
    }
    const char *cl = http_response_header(&c->resp, "content-length");
    char *end = NULL;
    long long size = cl != NULL ? strtoll(cl, &end, 10) : -1;
    if (cl != NULL && end != cl && *end == '\0' && size > (long long) max) {
        s3_error_set(err, c->resp.status, 0, "TooLarge",
                     "object of %lld bytes exceeds max_payload_bytes (%zu)", size, max);
        err->too_large = 1;
        err->size = size;
        return -1;
    }
    /* The limit holds even for an object replaced since the HEAD. */
    if (s3_request(c, "GET", bucket, key, NULL, 0, max > 0 ? max : 1, err) != 0) {
        if (strcmp(err->code, "TooLarge") == 0) {
            err->too_large = 1;
            err->transient = 0;
            err->size = -1;
        }
        return -1;
    }
    *len = c->resp.body.len;
    *body = buf_steal(&c->resp.body);
    if (*body == NULL && (*body = strdup("")) == NULL) {
        s3_error_set(err, 0, 1, "OutOfMemory", "out of memory");
        return -1;
    }
    return 0;
}

int
s3_put(struct s3_client *c, const char *bucket, const char *key, const void *body, size_t len,
       struct s3_error *err)
{
    return s3_request(c, "PUT", bucket, key, body, len, S3_ERROR_BODY_MAX, err);
}

int
s3_delete(struct s3_client *c, const char *bucket, const char *key, struct s3_error *err)
{
    if (s3_request(c, "DELETE", bucket, key, NULL, 0, S3_ERROR_BODY_MAX, err) != 0) {
        return err->http_status == 404 ? 0 : -1;
    }
    return 0;
}

int
s3_check_bucket(struct s3_client *c, const char *bucket, struct s3_error *err)
{
    if (s3_request(c, "GET", bucket, S3_CHECK_KEY, NULL, 0, S3_ERROR_BODY_MAX, err) == 0) {
        return 0; /* an object of that name: the bucket is there */
    }
    if ((err->http_status == 404 && strcmp(err->code, "NoSuchKey") == 0) ||
        (err->http_status == 403 && strcmp(err->code, "AccessDenied") == 0)) {
        return 0;
    }
    return -1;
}
