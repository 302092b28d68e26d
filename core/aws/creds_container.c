/*
 * creds_container.c - container credentials (ECS tasks, EKS Pod Identity):
 * GET AWS_CONTAINER_CREDENTIALS_RELATIVE_URI from 169.254.170.2, or
 * AWS_CONTAINER_CREDENTIALS_FULL_URI, with the Authorization token from
 * AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (read again on each refresh) or
 * AWS_CONTAINER_AUTHORIZATION_TOKEN. Not IMDS (creds_imds.c).
 */
#include "awsconfig.h"
#include "buf.h"
#include "ascii.h"
#include "cnum.h"
#include "creds.h"
#include "creds_provider.h"
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTAINER_HOST       "http://169.254.170.2"
#define CONTAINER_TIMEOUT_MS 2000
#define CONTAINER_TRIES      3
#define CONTAINER_MAX_REPLY  (64 * 1024)
#define CONTAINER_MAX_TOKEN  (16 * 1024)

struct container_provider {
    struct creds_provider base; /* first: the chain sees only this */
    struct http_client *http;   /* made on first use */
};

/* Whether host (as in the URL, IPv6 in brackets) may be reached over
 * plain http: the loopback or the container agent's link-local
 * addresses. */
static int
plain_http_host(const char *host, size_t n)
{
    static const char *const agents[] = {"localhost", "[::1]", "169.254.170.2", "169.254.170.23",
                                         "[fd00:ec2::23]"};
    char text[64];
    unsigned char v4[4];

    for (size_t i = 0; i < sizeof(agents) / sizeof(agents[0]); i++) {
        if (n == strlen(agents[i]) && ascii_strncasecmp(host, agents[i], n) == 0) {
            return 1;
        }
    }
    if (n == 0 || n >= sizeof(text)) {
        return 0;
    }
    memcpy(text, host, n);
    text[n] = '\0';
    return inet_pton(AF_INET, text, v4) == 1 && v4[0] == 127;
}

int
creds_container_uri_allowed(const char *uri)
{
    int https = ascii_strncasecmp(uri, "https://", 8) == 0;

    if (!https && ascii_strncasecmp(uri, "http://", 7) != 0) {
        return 0;
    }
    const char *auth = uri + (https ? 8 : 7);
    size_t alen = strcspn(auth, "/?#");
    if (alen == 0 || memchr(auth, '@', alen) != NULL) {
        return 0;
    }
    if (https) {
        return 1;
    }
    size_t hlen;
    if (auth[0] == '[') {
        const char *close = memchr(auth, ']', alen);
        hlen = close != NULL ? (size_t) (close - auth) + 1 : alen + 1;
    } else {
        const char *colon = memchr(auth, ':', alen);
        hlen = colon != NULL ? (size_t) (colon - auth) : alen;
    }
    if (hlen > alen ||
        (hlen < alen &&
         (auth[hlen] != ':' || strspn(auth + hlen + 1, "0123456789") != alen - hlen - 1))) {
        return 0;
    }
    return plain_http_host(auth, hlen);
}

/* The "Authorization: TOKEN" header line, or NULL when there is no token
 * (*failed 0) or it cannot be used (*failed 1, why filled). The caller
 * wipes and frees it. */
static char *
auth_header(int *failed, char *why, size_t whylen)
{
    const char *file = awsconfig_env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    char *from_file = NULL, *line = NULL;
    const char *token = awsconfig_env("AWS_CONTAINER_AUTHORIZATION_TOKEN");

    *failed = 0;
    if (file != NULL) {
        from_file = creds_read_token_file(file, CONTAINER_MAX_TOKEN);
        if (from_file == NULL) {
            snprintf(why, whylen, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %s: %s", file,
                     cnum_strerror(errno));
            *failed = 1;
            return NULL;
        }
        token = from_file;
    }
    if (token != NULL && strpbrk(token, "\r\n") != NULL) {
        snprintf(why, whylen, "the container authorization token holds a line break (from %s)",
                 file != NULL ? "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
                              : "AWS_CONTAINER_AUTHORIZATION_TOKEN");
        *failed = 1;
    } else if (token != NULL && asprintf(&line, "Authorization: %s", token) < 0) {
        snprintf(why, whylen, "out of memory");
        *failed = 1;
        line = NULL;
    }
    buf_free_secret(from_file);
    return line;
}

/* GET url up to CONTAINER_TRIES times (again only after a transport error
 * or a 5xx): 1 with *out, or -1 with why naming `shown`. */
static int
fetch(struct container_provider *cp, const struct creds_ctx *ctx, const char *url,
      const char *shown, const char *auth, struct creds *out, char *why, size_t whylen)
{
    const char *headers[2] = {"Accept: application/json", auth};
    struct http_request req = {
        .method = "GET",
        .url = url,
        .headers = headers,
        .nheaders = auth != NULL ? 2 : 1,
        .timeout_ms = CONTAINER_TIMEOUT_MS,
        .connect_timeout_ms = CONTAINER_TIMEOUT_MS,
        .cancel = ctx->cancel,
        .max_response = CONTAINER_MAX_REPLY,
        .no_proxy = 1,
    };
    struct http_response resp;
    struct http_error herr;
    char reason[256];
    int rc = -1;

    http_response_init(&resp);
    buf_reserve(&resp.body, 8192);
    for (int try = 1; try <= CONTAINER_TRIES; try++) {
        if (http_perform(cp->http, &req, &resp, &herr) != 0) {
            snprintf(why, whylen, "container endpoint %s: %s: %s", shown, herr.code, herr.message);
            if (!herr.transient) {
                break;
            }
        } else if (resp.status != 200) {
            snprintf(why, whylen, "container endpoint %s: HTTP %ld", shown, resp.status);
            if (resp.status < 500) {
                break;
            }
        } else {
            rc = creds_from_json(buf_str(&resp.body), resp.body.len, "Token", 0, "container", out,
                                 reason, sizeof(reason));
            if (rc != 1) {
                snprintf(why, whylen, "container endpoint %s: %s", shown, reason);
                rc = -1;
            }
            break;
        }
    }
    buf_free_wipe(&resp.body);
    http_response_free(&resp);
    return rc;
}

/* The URL to ask, as a new string, or NULL with rc 0 (not configured) or
 * -1 (refused / ENOMEM), why filled. *shown_len: the scheme and host part,
 * all that messages show (the path can be a capability). */
static char *
endpoint_url(int *rc, size_t *shown_len, char *why, size_t whylen)
{
    const char *rel = awsconfig_env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = awsconfig_env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    char *url = NULL;

    *rc = -1;
    if (rel == NULL && full == NULL) {
        snprintf(why, whylen, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI not set");
        *rc = 0;
        return NULL;
    }
    if (rel == NULL && !creds_container_uri_allowed(full)) {
        snprintf(why, whylen,
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI is neither https nor http to the loopback, "
                 "169.254.170.2, 169.254.170.23 or [fd00:ec2::23]");
        return NULL;
    }
    if (rel != NULL ? asprintf(&url, "%s%s%s", CONTAINER_HOST, rel[0] == '/' ? "" : "/", rel) < 0
                    : (url = strdup(full)) == NULL) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    const char *host = strstr(url, "://") + 3;
    *shown_len = (size_t) (host - url) + strcspn(host, "/?#");
    return url;
}

static int
container_resolve(struct creds_provider *p, const struct creds_ctx *ctx, struct creds *out,
                  char *why, size_t whylen)
{
    struct container_provider *cp = (struct container_provider *) p;
    size_t shown_len = 0;
    int rc = 0, failed = 0;
    char *url = endpoint_url(&rc, &shown_len, why, whylen), *auth = NULL;
    char shown[128];

    if (url == NULL) {
        return rc;
    }
    snprintf(shown, sizeof(shown), "%.*s", (int) shown_len, url);
    auth = auth_header(&failed, why, whylen);
    if (failed) {
        rc = -1;
    } else if (creds_http(&cp->http) == NULL) {
        snprintf(why, whylen, "cannot set up HTTP");
        rc = -1;
    } else {
        rc = fetch(cp, ctx, url, shown, auth, out, why, whylen);
    }
    buf_free_secret(auth);
    free(url);
    return rc;
}

static void
container_free(struct creds_provider *p)
{
    struct container_provider *cp = (struct container_provider *) p;

    http_client_free(cp->http);
    free(cp);
}

struct creds_provider *
creds_provider_container_new(const char *profile)
{
    struct container_provider *cp = calloc(1, sizeof(*cp));

    (void) profile;
    if (cp == NULL) {
        return NULL;
    }
    cp->base.label = "container";
    cp->base.resolve = container_resolve;
    cp->base.free = container_free;
    return &cp->base;
}
