/*
 * sqs_error.c - what went wrong with an SQS call: parsing error responses,
 * classifying them for retries (botocore's standard rules) and describing
 * them for operators. Pure functions; the transport lives in sqs.c.
 */
#include "sqs_parse.h"

#include "backoff.h"
#include "cnum.h"
#include "http.h"
#include "sigv4.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const throttling_codes[] = {
    "RequestThrottled",
    "ThrottlingException",
    "Throttling",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "SlowDown",
    "ProvisionedThroughputExceededException",
    "BandwidthLimitExceeded",
    "EC2ThrottledException",
    /* not in the SDKs' list; the reference advises throttling backoff */
    "KmsThrottled",
    "KMS.ThrottlingException",
    NULL,
};

static const char *const transient_codes[] = {
    "InternalFailure",
    "InternalError",
    "ServiceUnavailable",
    "RequestTimeout",
    "RequestTimeoutException",
    "PriorRequestNotComplete",
    NULL,
};

static int
sqs_code_in(const char *code, const char *const *list)
{
    if (code == NULL || code[0] == '\0') {
        return 0;
    }
    for (size_t i = 0; list[i] != NULL; i++) {
        if (strcmp(code, list[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* 1 when code names a throttling error. */
static int
sqs_is_throttling_code(const char *code)
{
    return sqs_code_in(code, throttling_codes);
}

/* Set e->throttled and e->retryable from status, code and query code. */
static void
sqs_error_classify(struct sqs_error *e)
{
    if (e->transport) {
        return; /* set by sqs_error_transport from curl's verdict */
    }
    e->throttled =
        sqs_is_throttling_code(e->code) || sqs_is_throttling_code(e->query_code) ? 1 : 0;
    long s = e->http_status;
    int transient = s == 500 || s == 502 || s == 503 || s == 504 ||
                    sqs_code_in(e->code, transient_codes) ||
                    sqs_code_in(e->query_code, transient_codes);
    e->retryable = e->throttled || transient;
}

/* "com.amazonaws.sqs#QueueDoesNotExist:http://..." -> "QueueDoesNotExist" */
static void
sqs_error_code_from_type(const char *type, char *out, size_t len)
{
    size_t n = strcspn(type, ":");
    const char *start = type;
    for (size_t i = 0; i < n; i++) {
        if (type[i] == '#') {
            start = type + i + 1;
        }
    }
    n -= (size_t) (start - type);
    snprintf(out, len, "%.*s", (int) (n < len ? n : len - 1), start);
}

void
sqs_parse_error(long status, const char *body, size_t len, const char *query_error,
                const char *error_type, struct sqs_error *e)
{
    memset(e, 0, sizeof *e);
    e->http_status = status;
    json_t *root = len > 0 ? json_loadb(body, len, JSON_ALLOW_NUL, NULL) : NULL;
    const char *type = NULL, *msg = NULL;
    if (json_is_object(root)) {
        type = json_string_value(json_object_get(root, "__type"));
        msg = json_string_value(json_object_get(root, "message"));
        if (msg == NULL) {
            msg = json_string_value(json_object_get(root, "Message"));
        }
    }
    if (type == NULL || type[0] == '\0') {
        type = error_type;
    }
    if (type != NULL && type[0] != '\0') {
        sqs_error_code_from_type(type, e->code, sizeof e->code);
    }
    if (e->code[0] == '\0' && status == 407) {
        /* not SQS's answer: an HTTP proxy of the environment's (http_proxy) */
        snprintf(e->code, sizeof e->code, "ProxyAuthRequired");
        snprintf(e->message, sizeof e->message, "the HTTP proxy answered 407");
    }
    if (e->code[0] == '\0') {
        snprintf(e->code, sizeof e->code, "HTTP %ld", status);
    }
    if (msg != NULL) {
        snprintf(e->message, sizeof e->message, "%s", msg);
        sigv4_cut_quoted_signing(e->message);
    }
    if (query_error != NULL) {
        size_t n = strcspn(query_error, ";");
        snprintf(e->query_code, sizeof e->query_code, "%.*s",
                 (int) (n < sizeof e->query_code ? n : sizeof e->query_code - 1), query_error);
    }
    json_decref(root);
    sqs_error_classify(e);
}

void
sqs_error_transport(struct sqs_error *e, const char *code, const char *message, int transient)
{
    memset(e, 0, sizeof *e);
    e->transport = 1;
    e->retryable = transient ? 1 : 0;
    snprintf(e->code, sizeof e->code, "%s", code);
    snprintf(e->message, sizeof e->message, "%s", message);
}

void
sqs_error_set(struct sqs_error *e, const char *code, int retryable, const char *fmt, ...)
{
    memset(e, 0, sizeof *e);
    e->retryable = retryable;
    snprintf(e->code, sizeof e->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    cnum_vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

long
sqs_retry_delay_ms(const struct sqs_error *e, int retry, long retry_after_ms, uint64_t r)
{
    uint64_t base = e->throttled ? SQS_BASE_THROTTLING_MS : SQS_BASE_TRANSIENT_MS;
    long t = (long) backoff_full_jitter(base, SQS_BACKOFF_CAP_MS, retry, r);
    if (retry_after_ms >= 0) {
        long upper = t + SQS_RETRY_AFTER_MAX_MS;
        long ra = retry_after_ms < upper ? retry_after_ms : upper;
        t = ra > t ? ra : t;
    }
    return t;
}

static int
sqs_error_is(const struct sqs_error *e, const char *const *codes)
{
    return sqs_code_in(e->code, codes) || sqs_code_in(e->query_code, codes);
}

/* AWS refused the credentials themselves (expired, revoked, unknown): what
 * reading them again from their source may end. */
static const char *const refused_creds_codes[] = {
    "ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId", "UnrecognizedClientException",
    NULL,
};

/* The rest of the sender's side, not the request: no credentials, a
 * signature or the clock; what a fix of the credentials' source or of the
 * clock ends. */
static const char *const sender_codes[] = {
    "MissingAuthenticationToken",
    "MissingAuthenticationTokenException",
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "RequestExpired",
    "RequestTimeTooSkewed",
    NULL,
};

int
sqs_error_refuses_creds(const struct sqs_error *e)
{
    return sqs_error_is(e, refused_creds_codes);
}

int
sqs_error_passes(const struct sqs_error *e)
{
    return e->retryable || sqs_error_refuses_creds(e) || sqs_error_is(e, sender_codes) ||
           strcmp(e->code, "ProxyAuthRequired") == 0 ||
           (e->transport && strncmp(e->code, "TLS", 3) == 0) ||
           strcmp(e->code, "OutOfMemory") == 0;
}

int
sqs_error_cut_mid_answer(const struct sqs_error *e)
{
    return e->transport && strcmp(e->code, "Cancelled") == 0 &&
           strstr(e->message, HTTP_CANCELLED_MID_ANSWER) != NULL;
}

/* A hint for the errors operators meet, into out (empty when none); where
 * names the setting of a missing queue (sqs_error_describe_at), or NULL. */
static void
sqs_error_hint(const struct sqs_error *e, const char *action, const char *where, char *out,
               size_t len)
{
    static const char *const denied[] = {"AccessDenied", "AccessDeniedException", NULL};
    static const char *const missing[] = {"QueueDoesNotExist", "NonExistentQueue",
                                          "AWS.SimpleQueueService.NonExistentQueue", NULL};
    static const char *const creds[] = {"InvalidClientTokenId", "UnrecognizedClientException",
                                        "MissingAuthenticationToken", NULL};
    static const char *const kms[] = {"KmsAccessDenied",
                                      "KMS.AccessDeniedException",
                                      "KmsDisabled",
                                      "KMS.DisabledException",
                                      "KmsNotFound",
                                      "KMS.NotFoundException",
                                      "KmsInvalidState",
                                      "KMS.InvalidStateException",
                                      "KmsOptInRequired",
                                      "KMS.OptInRequired",
                                      NULL};
    static const char *const overlimit[] = {"OverLimit", NULL};
    static const char *const md5[] = {"BodyMD5Mismatch", "AttributesMD5Mismatch", NULL};
    static const char *const skew[] = {"RequestExpired", "RequestTimeTooSkewed", NULL};
    static const char *const token[] = {"ExpiredToken", "ExpiredTokenException", NULL};
    /* reached, then cut: not a question of reachability (http.c's names) */
    static const char *const broken[] = {"SendError", "RecvError", "EmptyReply", NULL};
    int expired = strstr(e->message, "Signature expired") != NULL ||
                  strstr(e->message, "Signature not yet current") != NULL || sqs_error_is(e, skew);
    out[0] = '\0';
    if (e->throttled) {
        snprintf(out, len, "the queue is being throttled; twice backs off");
    } else if (sqs_error_is(e, denied)) {
        snprintf(out, len, "check the IAM policy allows sqs:%s on this queue", action);
    } else if (sqs_error_is(e, missing) && where != NULL) {
        snprintf(out, len, "check %s, and the region", where);
    } else if (sqs_error_is(e, missing)) {
        snprintf(out, len, "check the queue url and region");
    } else if (sqs_error_is(e, creds)) {
        snprintf(out, len, "check the AWS credentials");
    } else if (sqs_error_is(e, token)) {
        snprintf(out, len,
                 "the AWS credentials expired: twicectl whoami says where they come from");
    } else if (expired) {
        snprintf(out, len,
                 "clock skew: this host's clock is off; sync it with NTP (chrony, "
                 "systemd-timesyncd)");
    } else if (strcmp(e->code, "SignatureDoesNotMatch") == 0) {
        snprintf(out, len, "check the AWS credentials and the system clock");
    } else if (sqs_error_is(e, kms)) {
        snprintf(out, len, "check the queue's KMS key and its key policy");
    } else if (sqs_error_is(e, overlimit)) {
        snprintf(out, len, "too many messages in flight on this queue");
    } else if (sqs_error_is(e, md5)) {
        snprintf(out, len, "corrupted in transit; the messages will be received again");
    } else if (strcmp(e->code, "ProxyAuthRequired") == 0) {
        snprintf(out, len,
                 "the HTTP proxy of the environment wants credentials: put them in "
                 "HTTPS_PROXY or http_proxy, or name the endpoint's host in NO_PROXY");
    } else if (strncmp(e->code, "TLS", 3) == 0) {
        snprintf(out, len,
                 "the endpoint's certificate is not trusted: check aws.ca_file, or "
                 "the system CA store");
    } else if (sqs_error_is(e, broken)) {
        snprintf(out, len,
                 "the connection broke mid-call: the endpoint restarting, or a proxy or "
                 "load balancer ending it; twice tries again");
    } else if (e->transport && strcmp(e->code, "Cancelled") != 0 &&
               strcmp(e->code, "TooLarge") != 0) {
        snprintf(out, len, "is the endpoint reachable?");
    }
}

void
sqs_error_describe_at(const struct sqs_error *e, const char *action, const char *where, char *out,
                      size_t len)
{
    char hint[640];
    sqs_error_hint(e, action, where, hint, sizeof hint);
    snprintf(out, len, "%s: %s%s%s%s%s%s", action, e->code, e->message[0] ? ": " : "", e->message,
             hint[0] ? " (" : "", hint, hint[0] ? ")" : "");
}

void
sqs_error_describe(const struct sqs_error *e, const char *action, char *out, size_t len)
{
    sqs_error_describe_at(e, action, NULL, out, len);
}
