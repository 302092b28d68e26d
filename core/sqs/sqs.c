/*
 * sqs.c - the SQS client of sqs.h: requests written with jsonwrite.c (yajl,
 * no tree) on the hot paths and jansson elsewhere, signed with SigV4, sent
 * over http.c, retried inside the call on throttling and transient errors. Response parsing and
 * error rules are in sqs_parse.c and sqs_error.c; this file is the transport and the operations.
 */
#include "sqs.h"

#include "atomics.h"
#include "awsconfig.h"
#include "awsregion.h"
#include "backoff.h"
#include "buf.h"
#include "clock.h"
#include "creds.h"
#include "http.h"
#include "jsonwrite.h"
#include "sigv4.h"
#include "sqs_limits.h"
#include "sqs_parse.h"
#include "url.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SQS_CONTENT_TYPE         "application/x-amz-json-1.0"
#define SQS_CALL_TIMEOUT_MS      30000L
#define SQS_CONNECT_TIMEOUT_MS   5000L
#define SQS_LONG_POLL_SLACK_MS   10000L
/* How long an answer already arriving when the cancel flag is raised may take
 * to end (what a working server needs); a trickle is cut then. */
#define SQS_CANCEL_GRACE_MS      1000L
/* A response other than ReceiveMessage's is small (a policy at most). */
#define SQS_MAX_RESPONSE         (4u << 20)
/* The largest receive even if the server escaped every byte 3x (\u00e9
 * for a 2-byte character), plus attributes and JSON framing: 40 MiB. */
#define SQS_RECEIVE_MAX_RESPONSE (4u * SQS_RECEIVE_MAX * SQS_MESSAGE_MAX_BYTES)
/* Response memory kept for the next call; a larger buffer is released. */
#define SQS_KEEP_BUFFER          (1u << 20)

struct sqs_client {
    const struct sqs_endpoint *ep; /* borrowed */
    struct creds_chain *creds;     /* borrowed */
    struct http_client *http;      /* owned */
    const struct flag *cancel;     /* borrowed */
    long budget_ms;                /* a whole call's limit, retries included; 0: none */
    char *host;                    /* the URL's authority, for Host and signing */
    char *path;                    /* "/" unless the endpoint has a path */
    struct http_response resp;     /* reused between calls */
    struct sigv4_key_cache keys;   /* the day's signing key (holds the secret: wiped) */
    time_t date_at;                /* the second amz_date was made for */
    char amz_date[17];             /* X-Amz-Date of date_at: one gmtime per second */
};

/* What one call needs besides the body. */
struct sqs_call_opts {
    long timeout_ms; /* one attempt's */
    size_t max_response;
    long wait_ms; /* a long poll's wait, on top of the client's budget */
};

/* One attempt's limits, cut to what is left of the call's budget. */
struct sqs_limits {
    long timeout_ms, connect_ms;
};

/* Split "scheme://authority/path" into authority and path ("/" if none). */
static int
sqs_split_url(const char *url, char **host, char **path)
{
    const char *a = strstr(url, "://");
    a = a != NULL ? a + 3 : url;
    size_t n = strcspn(a, "/?#");
    *host = strndup(a, n);
    *path = strndup(a[n] == '/' ? a + n : "/", a[n] == '/' ? strcspn(a + n, "?#") : 1);
    if (*host == NULL || *path == NULL) {
        free(*host);
        free(*path);
        return -1;
    }
    return 0;
}

struct sqs_client *
sqs_client_new(const struct sqs_endpoint *ep, struct creds_chain *creds)
{
    struct sqs_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        return NULL;
    }
    c->ep = ep;
    c->creds = creds;
    http_response_init(&c->resp);
    if ((c->http = http_client_new(ep->ca_file)) == NULL ||
        sqs_split_url(ep->url, &c->host, &c->path) != 0) {
        sqs_client_free(c);
        return NULL;
    }
    return c;
}

void
sqs_client_free(struct sqs_client *c)
{
    if (c == NULL) {
        return;
    }
    http_client_free(c->http);
    http_response_free(&c->resp);
    sigv4_key_cache_clear(&c->keys);
    free(c->host);
    free(c->path);
    free(c);
}

void
sqs_client_set_cancel(struct sqs_client *c, const struct flag *flag)
{
    c->cancel = flag;
}

void
sqs_client_set_timeout(struct sqs_client *c, long ms)
{
    c->budget_ms = ms > 0 ? ms : 0;
}

struct http_client *
sqs_client_http(struct sqs_client *c)
{
    return c->http;
}

static int
sqs_cancelled(const struct sqs_client *c)
{
    return flag_is_up(c->cancel);
}

/* Sleep ms, waking early (returning -1) when the cancel flag is raised. */
static int
sqs_sleep(const struct sqs_client *c, long ms)
{
    while (ms > 0) {
        if (sqs_cancelled(c)) {
            return -1;
        }
        long step = ms < 20 ? ms : 20;
        struct timespec ts = {0, step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
    return sqs_cancelled(c) ? -1 : 0;
}

/* The header lines of one attempt; the token and Authorization lines are
 * wiped before they are freed. */
struct sqs_signed {
    struct buf target, date, host, token, auth;
};

static void
sqs_signed_free(struct sqs_signed *s)
{
    buf_free(&s->target);
    buf_free(&s->date);
    buf_free(&s->host);
    buf_free_wipe(&s->token);
    buf_free_wipe(&s->auth);
}

/*
 * Sign body for op at the current time with cr and fill s. The Host value
 * is exactly the URL's authority, as curl would send it.
 */
static int
sqs_sign(struct sqs_client *c, const char *op, const char *body, size_t len,
         const struct creds *cr, struct sqs_signed *s)
{
    static const char target_name[] = "X-Amz-Target: ";
    time_t now = time(NULL);
    if (now != c->date_at || c->amz_date[0] == '\0') {
        sigv4_amz_date((long long) now, c->amz_date);
        c->date_at = now;
    }
    const char *date = c->amz_date;
    /* the header lines first: the target's value is signed from its line */
    int failed = buf_cat(&s->target, target_name, "AmazonSQS.", op, NULL);
    buf_cat(&s->date, "X-Amz-Date: ", date, NULL);
    buf_cat(&s->host, "Host: ", c->host, NULL);
    if (cr->session_token != NULL) {
        buf_cat(&s->token, "X-Amz-Security-Token: ", cr->session_token, NULL);
    }
    struct sigv4_header h[5] = {
        {"content-type", SQS_CONTENT_TYPE},
        {"host", c->host},
        {"x-amz-date", date},
        {"x-amz-target", failed ? "" : buf_str(&s->target) + strlen(target_name)},
        {"x-amz-security-token", cr->session_token},
    };
    struct sigv4_request r = {
        .method = "POST",
        .path = c->path,
        .headers = h,
        .nheaders = cr->session_token != NULL ? 5 : 4,
        .body = body,
        .body_len = len,
        .normalize_path = 1,
    };
    buf_puts(&s->auth, "Authorization: ");
    int rc = failed ? -1
                    : sigv4_authorization_cached(&r, cr, c->ep->region, "sqs", date, &c->keys,
                                                 &s->auth);
    if (rc != 0 || s->target.failed || s->date.failed || s->host.failed || s->token.failed ||
        s->auth.failed) {
        return -1;
    }
    return 0;
}

/* x-amz-retry-after in ms, or -1 when absent or not a number. */
static long
sqs_retry_after(const struct http_response *resp)
{
    const char *v = http_response_header(resp, "x-amz-retry-after");
    char *end;
    if (v == NULL) {
        return -1;
    }
    long ms = strtol(v, &end, 10);
    return end != v && *end == '\0' && ms >= 0 ? ms : -1;
}

/*
 * One signed attempt. 0 on a 2xx response (in c->resp), else -1 with err;
 * *retry_after gets x-amz-retry-after (ms) or -1.
 */
static int
sqs_attempt(struct sqs_client *c, const char *op, const char *body, size_t len,
            const struct sqs_call_opts *o, const struct sqs_limits *lim, long *retry_after,
            struct sqs_error *err)
{
    struct creds cr = {0};
    struct sqs_signed s = {BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT};
    char cerr[1024];
    int rc = -1;
    *retry_after = -1;
    if (c->resp.body.cap > SQS_KEEP_BUFFER) {
        buf_free(&c->resp.body); /* do not hold a big receive's memory for good */
    }
    if (creds_get(c->creds, &cr, cerr, sizeof cerr) != 0) {
        /* worth trying later (temporary credentials come back), not now */
        sqs_error_set(err, "CredentialsError", 1, "%s", cerr);
        return -1;
    }
    if (sqs_sign(c, op, body, len, &cr, &s) != 0) {
        sqs_error_set(err, "OutOfMemory", 0, "out of memory while signing");
        goto done;
    }
    const char *headers[6] = {"Content-Type: " SQS_CONTENT_TYPE,
                              s.target.data,
                              s.date.data,
                              s.host.data,
                              s.auth.data,
                              s.token.data};
    struct http_request req = {
        .method = "POST",
        .url = c->ep->url,
        .headers = headers,
        .nheaders = s.token.data != NULL ? 6 : 5,
        .body = body,
        .body_len = len,
        .timeout_ms = lim->timeout_ms,
        .connect_timeout_ms = lim->connect_ms,
        .cancel = c->cancel,
        .cancel_grace_ms = SQS_CANCEL_GRACE_MS,
        .max_response = o->max_response,
    };
    struct http_error herr;
    if (http_perform(c->http, &req, &c->resp, &herr) != 0) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s: %s", c->ep->url, herr.message);
        sqs_error_transport(err, herr.code, msg, herr.transient);
        goto done;
    }
    if (c->resp.status >= 200 && c->resp.status < 300) {
        rc = 0;
        goto done;
    }
    sqs_parse_error(c->resp.status, buf_str(&c->resp.body), c->resp.body.len,
                    http_response_header(&c->resp, "x-amzn-query-error"),
                    http_response_header(&c->resp, "x-amzn-ErrorType"), err);
    *retry_after = sqs_retry_after(&c->resp);
    if (sqs_error_refuses_creds(err)) {
        /* a file rotated on disk, a set revoked early: read the source again */
        creds_refused(c->creds, cr.access_key_id);
    }
done:
    sqs_signed_free(&s);
    creds_clear(&cr);
    return rc;
}

/* The limits of the next attempt at `now` (ms); 0, or -1 when the call's
 * budget is spent (deadline 0: no budget). */
static int
sqs_limits_at(const struct sqs_call_opts *o, int64_t deadline, int64_t now, struct sqs_limits *lim)
{
    lim->timeout_ms = o->timeout_ms;
    lim->connect_ms = SQS_CONNECT_TIMEOUT_MS;
    if (deadline == 0) {
        return 0;
    }
    long left = (long) (deadline - now);
    lim->timeout_ms = left < lim->timeout_ms ? left : lim->timeout_ms;
    lim->connect_ms = left < lim->connect_ms ? left : lim->connect_ms;
    return left > 0 ? 0 : -1;
}

/* The error of a call that ran out of its budget: which endpoint. */
static void
sqs_timed_out(const struct sqs_client *c, struct sqs_error *err)
{
    char msg[sizeof err->message];
    long ms = c->budget_ms;
    if (ms % 1000 == 0) {
        snprintf(msg, sizeof msg, "%s did not answer within %ld s", c->ep->url, ms / 1000);
    } else {
        snprintf(msg, sizeof msg, "%s did not answer within %ld ms", c->ep->url, ms);
    }
    sqs_error_transport(err, "Timeout", msg, 1);
}

/*
 * A call with the in-call retries: up to SQS_MAX_ATTEMPTS signed attempts
 * (each re-signed with a fresh date), backing off between them, all within
 * the client's budget when it has one. A cancelled call is not retried. On
 * success the body is in c->resp.
 */
static int
sqs_call(struct sqs_client *c, const char *op, const char *body, size_t len,
         const struct sqs_call_opts *o, struct sqs_error *err)
{
    int64_t deadline = c->budget_ms > 0 ? clock_mono_ms() + o->wait_ms + c->budget_ms : 0;
    struct sqs_limits lim;
    int cut = 0; /* the budget, not an attempt's own limit, ended the call */
    for (int attempt = 1;; attempt++) {
        long retry_after;
        sqs_limits_at(o, deadline, clock_mono_ms(), &lim);
        cut = lim.timeout_ms < o->timeout_ms;
        if (sqs_attempt(c, op, body, len, o, &lim, &retry_after, err) == 0) {
            return 0;
        }
        if (!err->retryable || attempt >= SQS_MAX_ATTEMPTS || sqs_cancelled(c) ||
            strcmp(err->code, "CredentialsError") == 0) {
            break;
        }
        long delay = sqs_retry_delay_ms(err, attempt, retry_after, backoff_random());
        if (sqs_limits_at(o, deadline, clock_mono_ms() + delay, &lim) != 0) {
            cut = 1; /* no time left for another attempt */
            break;
        }
        if (sqs_sleep(c, delay) != 0) {
            sqs_error_transport(err, "Cancelled", "cancelled while backing off", 0);
            break;
        }
    }
    if (cut && err->transport && strcmp(err->code, "Timeout") == 0) {
        sqs_timed_out(c, err);
    }
    return -1;
}

/* Serialize req (consumed: decref'd here) and call op. NULL req means
 * json_pack failed on a bad argument. */
static int
sqs_call_json(struct sqs_client *c, const char *op, json_t *req, const struct sqs_call_opts *o,
              struct sqs_error *err)
{
    if (req == NULL) {
        sqs_error_set(err, "InvalidArgument", 0, "%s: a required argument is missing", op);
        return -1;
    }
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (body == NULL) {
        sqs_error_set(err, "OutOfMemory", 0, "out of memory");
        return -1;
    }
    int rc = sqs_call(c, op, body, strlen(body), o, err);
    free(body);
    return rc;
}

/* Call op with the request w wrote into body (freed here); a failed writer
 * means a missing argument or one that is not UTF-8. */
static int
sqs_call_written(struct sqs_client *c, const char *op, struct jsonwrite *w, struct buf *body,
                 const struct sqs_call_opts *o, struct sqs_error *err)
{
    int rc = -1;
    if (jsonwrite_end(w) != 0) {
        sqs_error_set(err, body->failed ? "OutOfMemory" : "InvalidArgument", 0,
                      body->failed ? "out of memory"
                                   : "%s: a required argument is missing or not UTF-8",
                      op);
    } else {
        rc = sqs_call(c, op, buf_str(body), body->len, o, err);
    }
    buf_free(body);
    return rc;
}

int
sqs_call_raw(struct sqs_client *c, const char *op, const char *body, size_t len, char **resp,
             struct sqs_error *err)
{
    struct sqs_call_opts o = {SQS_CALL_TIMEOUT_MS, SQS_MAX_RESPONSE, 0};
    *resp = NULL;
    if (sqs_call(c, op, body, len, &o, err) != 0) {
        return -1;
    }
    if (c->resp.body.len > 0 && (*resp = strdup(buf_str(&c->resp.body))) == NULL) {
        sqs_error_set(err, "OutOfMemory", 0, "out of memory");
        return -1;
    }
    return 0;
}

int
sqs_receive(struct sqs_client *c, const char *queue_url, const struct sqs_receive_opts *o,
            struct sqs_message **msgs, size_t *n, struct sqs_error *err)
{
    *msgs = NULL;
    *n = 0;
    struct buf body = BUF_INIT;
    struct jsonwrite w;
    jsonwrite_begin(&w, &body);
    jsonwrite_open(&w);
    jsonwrite_member_string(&w, "QueueUrl", queue_url);
    jsonwrite_member_int(&w, "MaxNumberOfMessages", o->max_messages);
    jsonwrite_member_int(&w, "WaitTimeSeconds", o->wait_time);
    /* Only the system attributes twice reads: "All" costs a parse per message. */
    jsonwrite_string(&w, "MessageSystemAttributeNames");
    jsonwrite_array(&w);
    jsonwrite_string(&w, "ApproximateReceiveCount");
    jsonwrite_string(&w, "SentTimestamp");
    jsonwrite_string(&w, "MessageGroupId");
    jsonwrite_string(&w, "AWSTraceHeader");
    jsonwrite_end_array(&w);
    jsonwrite_string(&w, "MessageAttributeNames");
    jsonwrite_array(&w);
    jsonwrite_string(&w, "All");
    jsonwrite_end_array(&w);
    if (o->visibility_timeout >= 0) {
        jsonwrite_member_int(&w, "VisibilityTimeout", o->visibility_timeout);
    }
    if (o->attempt_id != NULL) {
        jsonwrite_member_string(&w, "ReceiveRequestAttemptId", o->attempt_id);
    }
    jsonwrite_close(&w);
    long wait_ms = (o->wait_time > 0 ? o->wait_time : 0) * 1000L;
    struct sqs_call_opts co = {wait_ms + SQS_LONG_POLL_SLACK_MS, SQS_RECEIVE_MAX_RESPONSE,
                               wait_ms};
    if (sqs_call_written(c, "ReceiveMessage", &w, &body, &co, err) != 0) {
        return -1;
    }
    return sqs_parse_receive(buf_str(&c->resp.body), c->resp.body.len, msgs, n, err);
}

/* Write entry i of a batch as a JSON object, its Id in *id; -1 with err
 * set on bad input (op names the call in the message). */
typedef int sqs_batch_entry_fn(const void *entries, size_t i, const char *op, struct jsonwrite *w,
                               const char **id, struct sqs_error *err);

/*
 * Every *Batch call: nothing to do for n == 0, at most SQS_BATCH_MAX entries,
 * the {QueueUrl, Entries} request written with entry(), then results[i] for
 * entry i from the response.
 */
static int
sqs_batch_call(struct sqs_client *c, const char *op, const char *queue_url, const void *entries,
               size_t n, sqs_batch_entry_fn *entry, struct sqs_batch_result *results,
               struct sqs_error *err)
{
    const char *ids[SQS_BATCH_MAX];
    if (n == 0) {
        return 0;
    }
    if (n > SQS_BATCH_MAX) {
        sqs_error_set(err, "TooManyEntriesInBatchRequest", 0, "%zu entries (at most %d)", n,
                      SQS_BATCH_MAX);
        return -1;
    }
    struct buf body = BUF_INIT;
    struct jsonwrite w;
    jsonwrite_begin(&w, &body);
    jsonwrite_open(&w);
    jsonwrite_member_string(&w, "QueueUrl", queue_url);
    jsonwrite_string(&w, "Entries");
    jsonwrite_array(&w);
    for (size_t i = 0; i < n; i++) {
        if (entry(entries, i, op, &w, &ids[i], err) != 0) {
            jsonwrite_end(&w);
            buf_free(&body);
            return -1;
        }
    }
    jsonwrite_end_array(&w);
    jsonwrite_close(&w);
    struct sqs_call_opts co = {SQS_CALL_TIMEOUT_MS, SQS_MAX_RESPONSE, 0};
    if (sqs_call_written(c, op, &w, &body, &co, err) != 0) {
        return -1;
    }
    return sqs_parse_batch(buf_str(&c->resp.body), c->resp.body.len, ids, n, results, err);
}

/* A DeleteMessageBatch entry: {Id, ReceiptHandle}; with_visibility adds
 * ChangeMessageVisibilityBatch's VisibilityTimeout. */
static int
sqs_receipt_entry(const struct sqs_batch_entry *e, const char *op, int with_visibility,
                  struct jsonwrite *w, const char **id, struct sqs_error *err)
{
    *id = e->id;
    if (e->id == NULL || e->receipt_handle == NULL) {
        sqs_error_set(err, "InvalidArgument", 0, "%s: a required argument is missing", op);
        return -1;
    }
    jsonwrite_open(w);
    jsonwrite_member_string(w, "Id", e->id);
    jsonwrite_member_string(w, "ReceiptHandle", e->receipt_handle);
    if (with_visibility) {
        jsonwrite_member_int(w, "VisibilityTimeout", e->visibility_timeout);
    }
    jsonwrite_close(w);
    return 0;
}

static int
sqs_delete_entry(const void *entries, size_t i, const char *op, struct jsonwrite *w,
                 const char **id, struct sqs_error *err)
{
    return sqs_receipt_entry((const struct sqs_batch_entry *) entries + i, op, 0, w, id, err);
}

static int
sqs_visibility_entry(const void *entries, size_t i, const char *op, struct jsonwrite *w,
                     const char **id, struct sqs_error *err)
{
    return sqs_receipt_entry((const struct sqs_batch_entry *) entries + i, op, 1, w, id, err);
}

int
sqs_delete_batch(struct sqs_client *c, const char *queue_url,
                 const struct sqs_batch_entry *entries, size_t n, struct sqs_batch_result *results,
                 struct sqs_error *err)
{
    return sqs_batch_call(c, "DeleteMessageBatch", queue_url, entries, n, sqs_delete_entry,
                          results, err);
}

int
sqs_change_visibility_batch(struct sqs_client *c, const char *queue_url,
                            const struct sqs_batch_entry *entries, size_t n,
                            struct sqs_batch_result *results, struct sqs_error *err)
{
    return sqs_batch_call(c, "ChangeMessageVisibilityBatch", queue_url, entries, n,
                          sqs_visibility_entry, results, err);
}

int
sqs_change_visibility(struct sqs_client *c, const char *queue_url, const char *receipt_handle,
                      int visibility_timeout, struct sqs_error *err)
{
    json_t *req = json_pack("{s:s, s:s, s:i}", "QueueUrl", queue_url, "ReceiptHandle",
                            receipt_handle, "VisibilityTimeout", visibility_timeout);
    struct sqs_call_opts co = {SQS_CALL_TIMEOUT_MS, SQS_MAX_RESPONSE, 0};
    return sqs_call_json(c, "ChangeMessageVisibility", req, &co, err);
}

int
sqs_delete(struct sqs_client *c, const char *queue_url, const char *receipt_handle,
           struct sqs_error *err)
{
    json_t *req = json_pack("{s:s, s:s}", "QueueUrl", queue_url, "ReceiptHandle", receipt_handle);
    struct sqs_call_opts co = {SQS_CALL_TIMEOUT_MS, SQS_MAX_RESPONSE, 0};
    return sqs_call_json(c, "DeleteMessage", req, &co, err);
}

json_t *
sqs_attr_json(const struct sqs_attr *a)
{
    if (a->string_value != NULL) {
        return json_pack("{s:s, s:s}", "DataType", a->data_type, "StringValue", a->string_value);
    }
    json_t *v = NULL;
    struct buf b64 = BUF_INIT;
    if (sqs_base64_encode(a->binary, a->binary_len, &b64) == 0) {
        v = json_pack("{s:s, s:s}", "DataType", a->data_type, "BinaryValue", buf_str(&b64));
    }
    buf_free(&b64);
    return v;
}

/* MessageAttributes for a send: {name: {DataType, StringValue|BinaryValue}};
 * a missing name or type, or a value that is not UTF-8, fails the writer. */
static void
sqs_write_attrs(struct jsonwrite *w, const struct sqs_attr *attrs, size_t n)
{
    jsonwrite_open(w);
    for (size_t i = 0; i < n; i++) {
        const struct sqs_attr *a = &attrs[i];
        jsonwrite_string(w, a->name);
        jsonwrite_open(w);
        jsonwrite_member_string(w, "DataType", a->data_type);
        if (a->string_value != NULL) {
            jsonwrite_member_string(w, "StringValue", a->string_value);
        } else {
            struct buf b64 = BUF_INIT;
            if (sqs_base64_encode(a->binary, a->binary_len, &b64) != 0) {
                w->failed = 1;
            }
            jsonwrite_member_string(w, "BinaryValue", buf_str(&b64));
            buf_free(&b64);
        }
        jsonwrite_close(w);
    }
    jsonwrite_close(w);
}

/* The members of one message to send (inside an object the caller opened);
 * with_id for batch entries. A body that is not UTF-8 fails the writer. */
static void
sqs_write_send(struct jsonwrite *w, const struct sqs_send_entry *e, int with_id)
{
    jsonwrite_string(w, "MessageBody");
    if (e->body == NULL) {
        w->failed = 1;
    } else {
        jsonwrite_stringn(w, e->body, e->body_len);
    }
    if (with_id) {
        jsonwrite_member_string(w, "Id", e->id);
    }
    if (e->delay_seconds >= 0) {
        jsonwrite_member_int(w, "DelaySeconds", e->delay_seconds);
    }
    if (e->nattrs > 0) {
        jsonwrite_string(w, "MessageAttributes");
        sqs_write_attrs(w, e->attrs, e->nattrs);
    }
    if (e->group_id != NULL) {
        jsonwrite_member_string(w, "MessageGroupId", e->group_id);
    }
    if (e->dedup_id != NULL) {
        jsonwrite_member_string(w, "MessageDeduplicationId", e->dedup_id);
    }
}

int
sqs_send(struct sqs_client *c, const char *queue_url, const struct sqs_send_entry *e,
         char *message_id_out, size_t message_id_len, struct sqs_error *err)
{
    struct buf body = BUF_INIT;
    struct jsonwrite w;
    jsonwrite_begin(&w, &body);
    jsonwrite_open(&w);
    sqs_write_send(&w, e, 0);
    jsonwrite_member_string(&w, "QueueUrl", queue_url);
    jsonwrite_close(&w);
    if (w.failed) {
        jsonwrite_end(&w);
        buf_free(&body);
        sqs_error_set(err, "InvalidMessageContents", 0,
                      "the message has no body, a body or attribute that is not UTF-8, "
                      "or no queue url");
        return -1;
    }
    struct sqs_call_opts co = {SQS_CALL_TIMEOUT_MS, SQS_MAX_RESPONSE, 0};
    if (sqs_call_written(c, "SendMessage", &w, &body, &co, err) != 0) {
        return -1;
    }
    if (message_id_out == NULL || message_id_len == 0) {
        return 0;
    }
    char *id = NULL;
    if (sqs_parse_string_member(buf_str(&c->resp.body), c->resp.body.len, "MessageId", &id, err) !=
        0) {
        return -1;
    }
    snprintf(message_id_out, message_id_len, "%s", id);
    free(id);
    return 0;
}

/* A SendMessageBatch entry: the message with its Id. */
static int
sqs_send_entry_write(const void *entries, size_t i, const char *op, struct jsonwrite *w,
                     const char **id, struct sqs_error *err)
{
    (void) op;
    const struct sqs_send_entry *e = (const struct sqs_send_entry *) entries + i;
    *id = e->id;
    jsonwrite_open(w);
    sqs_write_send(w, e, 1);
    jsonwrite_close(w);
    if (w->failed) {
        sqs_error_set(err, "InvalidMessageContents", 0,
                      "entry %zu: no body, or a body or attribute that is not UTF-8", i);
        return -1;
    }
    return 0;
}

int
sqs_send_batch(struct sqs_client *c, const char *queue_url, const struct sqs_send_entry *entries,
               size_t n, struct sqs_batch_result *results, struct sqs_error *err)
{
    return sqs_batch_call(c, "SendMessageBatch", queue_url, entries, n, sqs_send_entry_write,
                          results, err);
}

int
sqs_get_attributes(struct sqs_client *c, const char *queue_url, const char *const *names,
                   size_t nnames, struct sqs_kv **out, size_t *n, struct sqs_error *err)
{
    *out = NULL;
    *n = 0;
    json_t *arr = json_array();
    for (size_t i = 0; i < nnames && arr != NULL; i++) {
        if (names[i] == NULL || json_array_append_new(arr, json_string(names[i])) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    json_t *req =
        arr ? json_pack("{s:s, s:o}", "QueueUrl", queue_url, "AttributeNames", arr) : NULL;
    struct sqs_call_opts co = {SQS_CALL_TIMEOUT_MS, SQS_MAX_RESPONSE, 0};
    if (sqs_call_json(c, "GetQueueAttributes", req, &co, err) != 0) {
        return -1;
    }
    return sqs_parse_attributes(buf_str(&c->resp.body), c->resp.body.len, out, n, err);
}

int
sqs_queue_counts(struct sqs_client *c, const char *queue_url, long out[3], struct sqs_error *err)
{
    static const char *const names[] = {"ApproximateNumberOfMessages",
                                        "ApproximateNumberOfMessagesNotVisible",
                                        "ApproximateNumberOfMessagesDelayed"};
    struct sqs_kv *kv = NULL;
    size_t n = 0;
    if (sqs_get_attributes(c, queue_url, names, 3, &kv, &n, err) != 0) {
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        const char *v = sqs_kv_get(kv, n, names[i]);
        out[i] = v != NULL ? strtol(v, NULL, 10) : -1;
    }
    sqs_kv_free(kv, n);
    return 0;
}

int
sqs_check_queue(struct sqs_client *c, const char *queue_url, size_t *max_bytes,
                struct sqs_error *err)
{
    static const char *const names[] = {"QueueArn", "MaximumMessageSize"};
    struct sqs_kv *kv = NULL;
    size_t n = 0;
    int rc = sqs_get_attributes(c, queue_url, names, 2, &kv, &n, err);
    if (max_bytes != NULL) {
        const char *v = rc == 0 ? sqs_kv_get(kv, n, "MaximumMessageSize") : NULL;
        char *end = NULL;
        unsigned long long b = v != NULL ? strtoull(v, &end, 10) : 0;
        *max_bytes =
            end != v && end != NULL && *end == '\0' && b <= SQS_MESSAGE_MAX_BYTES ? (size_t) b : 0;
    }
    sqs_kv_free(kv, n);
    return rc;
}

int
sqs_get_queue_url(struct sqs_client *c, const char *name, char **url_out, struct sqs_error *err)
{
    *url_out = NULL;
    json_t *req = json_pack("{s:s}", "QueueName", name);
    struct sqs_call_opts co = {SQS_CALL_TIMEOUT_MS, SQS_MAX_RESPONSE, 0};
    if (sqs_call_json(c, "GetQueueUrl", req, &co, err) != 0) {
        return -1;
    }
    return sqs_parse_string_member(buf_str(&c->resp.body), c->resp.body.len, "QueueUrl", url_out,
                                   err);
}

int
sqs_purge(struct sqs_client *c, const char *queue_url, struct sqs_error *err)
{
    json_t *req = json_pack("{s:s}", "QueueUrl", queue_url);
    struct sqs_call_opts co = {SQS_CALL_TIMEOUT_MS, SQS_MAX_RESPONSE, 0};
    return sqs_call_json(c, "PurgeQueue", req, &co, err);
}

/*
 * The region, in the order of sqs.h: aws.region, else the environment's or
 * the profile's (awsregion.c), each checked where it is read. NULL with err
 * saying why: none set, a bad one with its source, an unreadable file.
 */
static char *
sqs_resolve_region(const char *cfg_region, const char *profile, char *err, size_t errlen)
{
    char *region = NULL;
    if (cfg_region != NULL && cfg_region[0] != '\0') {
        if (awsregion_check("aws.region", cfg_region, err, errlen) != 0) {
            return NULL;
        }
        if ((region = strdup(cfg_region)) == NULL) {
            snprintf(err, errlen, "out of memory");
        }
        return region;
    }
    if (awsregion_resolve(profile, &region, err, errlen) == 0) {
        snprintf(err, errlen, "no AWS region: set aws.region in the configuration or AWS_REGION");
    }
    return region;
}

/* The endpoint URL (malloc'd, no trailing '/'): the configuration's, else
 * the environment's or the regional one; *src names the setting or the
 * variable it came from, for messages. NULL on ENOMEM. */
static char *
sqs_resolve_url(const char *cfg_endpoint, const char *region, const char **src)
{
    const char *v = cfg_endpoint;
    *src = "aws.endpoint";
    if (v == NULL || v[0] == '\0') {
        v = awsconfig_endpoint_env("sqs", src);
    }
    if (v == NULL) {
        *src = "the region's endpoint";
    }
    char *url = v != NULL ? strdup(v) : awsconfig_service_url("sqs", region);
    for (size_t n = url ? strlen(url) : 0; n > 0 && url[n - 1] == '/'; n--) {
        url[n - 1] = '\0';
    }
    return url;
}

int
sqs_endpoint_resolve(const char *cfg_region, const char *cfg_endpoint, const char *profile,
                     const char *ca_file, struct sqs_endpoint *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if ((out->region = sqs_resolve_region(cfg_region, profile, err, errlen)) == NULL) {
        return -1;
    }
    const char *src = NULL, *why;
    if ((out->url = sqs_resolve_url(cfg_endpoint, out->region, &src)) == NULL ||
        (ca_file != NULL && (out->ca_file = strdup(ca_file)) == NULL)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if ((why = url_problem(out->url, URL_NO_QUERY)) != NULL) {
        snprintf(err, errlen, "bad SQS endpoint %s=%.200s: %s", src, out->url, why);
        goto fail;
    }
    return 0;
fail:
    sqs_endpoint_free(out);
    return -1;
}

void
sqs_endpoint_free(struct sqs_endpoint *ep)
{
    free(ep->url);
    free(ep->region);
    free(ep->ca_file);
    memset(ep, 0, sizeof *ep);
}
