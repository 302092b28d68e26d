/*
 * creds_imds.c - the last source of the chain: the EC2 instance's role
 * through the instance metadata service, IMDSv2 (a session token PUT,
 * then the role's name, then its credentials), 1 s timeouts, never
 * through a proxy. The IMDSv1 fallback (no token) is off unless
 * AWS_EC2_METADATA_V1_DISABLED=false is set explicitly. Not the rest of
 * the metadata (region and the like).
 */
#include "awsconfig.h"
#include "buf.h"
#include "ascii.h"
#include "creds.h"
#include "creds_provider.h"
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMDS_ENDPOINT     "http://169.254.169.254"
#define IMDS_ENDPOINT_V6  "http://[fd00:ec2::254]"
#define IMDS_TIMEOUT_MS   1000
#define IMDS_MAX_REPLY    (64 * 1024)
#define IMDS_TOKEN_PATH   "/latest/api/token"
#define IMDS_ROLE_PATH    "/latest/meta-data/iam/security-credentials/"
#define IMDS_TTL_HEADER   "X-aws-ec2-metadata-token-ttl-seconds: 21600"
#define IMDS_TOKEN_HEADER "X-aws-ec2-metadata-token: "

struct imds_provider {
    struct creds_provider base; /* first: the chain sees only this */
    struct http_client *http;   /* made on first use */
};

/* One resolve's state. */
struct imds_call {
    struct imds_provider *ip;
    const struct creds_ctx *ctx;
    char base[256];     /* the endpoint, no trailing '/' */
    char *token_header; /* "X-aws-ec2-metadata-token: ...", NULL for IMDSv1 */
    struct http_response resp;
};

/* method base+path with the token header (or extra): 0 when an answer
 * came (status in call->resp), -1 with why on a transport error. */
static int
imds_request(struct imds_call *call, const char *method, const char *path, const char *extra,
             char *why, size_t whylen)
{
    char url[512];
    const char *headers[1] = {extra != NULL ? extra : call->token_header};
    struct http_request req = {
        .method = method,
        .url = url,
        .headers = headers,
        .nheaders = headers[0] != NULL ? 1 : 0,
        .timeout_ms = IMDS_TIMEOUT_MS,
        .connect_timeout_ms = IMDS_TIMEOUT_MS,
        .cancel = call->ctx->cancel,
        .max_response = IMDS_MAX_REPLY,
        .no_proxy = 1,
    };
    struct http_error herr;

    snprintf(url, sizeof(url), "%s%s", call->base, path);
    if (http_perform(call->ip->http, &req, &call->resp, &herr) != 0) {
        snprintf(why, whylen, "no instance metadata service at %s (%s: %s)", call->base, herr.code,
                 herr.message);
        return -1;
    }
    return 0;
}

/* The IMDSv2 session token into call->token_header: 1; or 1 without a
 * token when IMDSv1 is allowed and the PUT was refused; 0 with why. */
static int
session_token(struct imds_call *call, char *why, size_t whylen)
{
    const char *v1 = awsconfig_env("AWS_EC2_METADATA_V1_DISABLED");
    int v1_allowed = v1 != NULL && ascii_strcasecmp(v1, "false") == 0;
    long status;

    if (imds_request(call, "PUT", IMDS_TOKEN_PATH, IMDS_TTL_HEADER, why, whylen) != 0) {
        return 0;
    }
    status = call->resp.status;
    if (status == 200 && call->resp.body.len > 0 &&
        strpbrk(buf_str(&call->resp.body), "\r\n") == NULL) {
        if (asprintf(&call->token_header, IMDS_TOKEN_HEADER "%s", buf_str(&call->resp.body)) < 0) {
            call->token_header = NULL;
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        return 1;
    }
    if ((status == 403 || status == 404 || status == 405) && v1_allowed) {
        return 1;
    }
    snprintf(why, whylen, "instance metadata service at %s refused an IMDSv2 token (HTTP %ld)%s",
             call->base, status,
             status == 403 || status == 404 || status == 405
                 ? "; the IMDSv1 fallback is off (AWS_EC2_METADATA_V1_DISABLED=false allows it)"
                 : "");
    return 0;
}

/* The instance profile's role name into role: 1, or 0 with why. */
static int
role_name(struct imds_call *call, char *role, size_t rolelen, char *why, size_t whylen)
{
    if (imds_request(call, "GET", IMDS_ROLE_PATH, NULL, why, whylen) != 0) {
        return 0;
    }
    if (call->resp.status == 404) {
        snprintf(why, whylen, "no IAM role attached to this instance (%s: HTTP 404)", call->base);
        return 0;
    }
    const char *body = buf_str(&call->resp.body);
    size_t n = strcspn(body, "\r\n");
    /* IAM names: letters, digits and +=,.@_- (no '/': it goes into a path) */
    int ok = n > 0 && n < rolelen &&
             strspn(body, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                          "0123456789+=,.@_-") >= n;
    if (call->resp.status != 200 || !ok) {
        snprintf(why, whylen, "instance metadata service at %s: no usable role name (HTTP %ld)",
                 call->base, call->resp.status);
        return 0;
    }
    memcpy(role, body, n);
    role[n] = '\0';
    return 1;
}

/* The role's credential document: 1 with *out, or -1 with why. */
static int
role_creds(struct imds_call *call, const char *role, struct creds *out, char *why, size_t whylen)
{
    char path[320], reason[256];

    snprintf(path, sizeof(path), "%s%s", IMDS_ROLE_PATH, role);
    if (imds_request(call, "GET", path, NULL, why, whylen) != 0) {
        return -1;
    }
    if (call->resp.status != 200) {
        snprintf(why, whylen, "instance metadata service at %s: credentials of role %s: HTTP %ld",
                 call->base, role, call->resp.status);
        return -1;
    }
    int rc = creds_from_json(buf_str(&call->resp.body), call->resp.body.len, "Token",
                             CREDS_JSON_EXPIRATION | CREDS_JSON_SUCCESS, "imds", out, reason,
                             sizeof(reason));
    if (rc != 1) {
        snprintf(why, whylen, "instance metadata service at %s: credentials of role %s: %s",
                 call->base, role, reason);
        return -1;
    }
    return 1;
}

/* The endpoint: AWS_EC2_METADATA_SERVICE_ENDPOINT, else by
 * AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE (IPv4 or IPv6). */
static void
endpoint(char *out, size_t len)
{
    const char *ep = awsconfig_env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    const char *mode = awsconfig_env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");

    if (ep == NULL) {
        ep =
            mode != NULL && ascii_strcasecmp(mode, "IPv6") == 0 ? IMDS_ENDPOINT_V6 : IMDS_ENDPOINT;
    }
    snprintf(out, len, "%s", ep);
    for (size_t n = strlen(out); n > 0 && out[n - 1] == '/'; n--) {
        out[n - 1] = '\0';
    }
}

static int
imds_resolve(struct creds_provider *p, const struct creds_ctx *ctx, struct creds *out, char *why,
             size_t whylen)
{
    struct imds_call call = {(struct imds_provider *) p, ctx, "", NULL, {0}};
    char role[128];
    int rc;

    if (creds_env_true("AWS_EC2_METADATA_DISABLED")) {
        snprintf(why, whylen, "AWS_EC2_METADATA_DISABLED=true");
        return 0;
    }
    if (creds_http(&call.ip->http) == NULL) {
        snprintf(why, whylen, "cannot set up HTTP");
        return -1;
    }
    endpoint(call.base, sizeof(call.base));
    http_response_init(&call.resp);
    buf_reserve(&call.resp.body, 8192);
    rc = session_token(&call, why, whylen);
    if (rc == 1) {
        rc = role_name(&call, role, sizeof(role), why, whylen);
    }
    if (rc == 1) {
        rc = role_creds(&call, role, out, why, whylen);
    }
    buf_free_secret(call.token_header);
    buf_free_wipe(&call.resp.body);
    http_response_free(&call.resp);
    return rc;
}

static void
imds_free(struct creds_provider *p)
{
    struct imds_provider *ip = (struct imds_provider *) p;

    http_client_free(ip->http);
    free(ip);
}

struct creds_provider *
creds_provider_imds_new(const char *profile)
{
    struct imds_provider *ip = calloc(1, sizeof(*ip));

    (void) profile;
    if (ip == NULL) {
        return NULL;
    }
    ip->base.label = "imds";
    ip->base.resolve = imds_resolve;
    ip->base.free = imds_free;
    return &ip->base;
}
