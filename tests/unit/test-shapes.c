/*
 * test-shapes.c - the shapes a message arrives in, without a server: SNS
 * and EventBridge envelopes unwrapped by a queue's `envelope` (the inner
 * body, SNS MessageAttributes as attributes, {msg:NAME} fields in keys,
 * bad-envelope for a mismatch), S3 payload pointers told apart from
 * ordinary bodies and checked before anything is fetched
 * (bad-payload-pointer), S3's bucket name rules, and keys that read all of
 * it the same way the daemon does (keying_shape, hostapi_derive_key), and
 * what a route_by value that names no route is said to be.
 */
#include "buf.h"
#include "check.h"
#include "config.h"
#include "dlq.h"
#include "envelope.h"
#include "hostapi.h"
#include "instance.h"
#include "job.h"
#include "jsondoc.h"
#include "keying.h"
#include "keytmpl.h"
#include "payload.h"
#include "s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct s3_client *
no_s3(void *arg)
{
    (void) arg;
    return NULL;
}

/* Shape body on a queue with envelope env and key template tmpl: the key,
 * or "DLQ reason: detail", or "LATER: why". Also the view's text. */
static char *
shape(int env, const char *tmpl, const char *body, char *view, size_t viewcap)
{
    struct config_queue qc = {.name = "q", .envelope = env, .key = (char *) tmpl};
    struct keytmpl *qt = NULL;
    char err[256];
    CHECK_INT(keying_queue_key(&qc, &qt, err, sizeof(err)), 0);
    struct sqs_message m = {.receive_count = 1};
    m.body = (char *) body; /* borrowed: a message without a batch frees nothing */
    m.body_len = strlen(body);
    struct twice_job *j = job_new(NULL, &qc, &m);
    struct plugin_instance p = {.name = "fake"};
    struct buf out = BUF_INIT;
    int rc = keying_shape(j, no_s3, NULL, 1 << 20);
    size_t n;
    const char *v = job_view(j, &n);
    snprintf(view, viewcap, "%.*s", (int) n, v);
    if (rc == KEYING_SHAPED && hostapi_derive_key(&p, qt, j, &out) == 0) {
        /* the key is in out */
    } else if (rc == KEYING_LATER) {
        buf_reset(&out);
        buf_printf(&out, "LATER: %s", j->error);
    } else {
        buf_reset(&out);
        buf_printf(&out, "%s: %s", j->reason, j->error != NULL ? j->error : "");
    }
    char *k = buf_steal(&out);
    job_free(j);
    keytmpl_free(qt);
    return k;
}

static void
check_shape(int env, const char *tmpl, const char *body, const char *want, const char *want_view)
{
    char view[512];
    char *k = shape(env, tmpl, body, view, sizeof(view));
    CHECK_STR(k, want);
    if (want_view != NULL) {
        CHECK_STR(view, want_view);
    }
    free(k);
}

/* A dead letter's detail is cut at JOB_ERROR_MAX bytes, between UTF-8
 * characters, with "..." after it: a route's value from a message can be as
 * long as the body, and it reaches the log line and twice-error. */
static void
test_error_cap(void)
{
    static const char prefix[] = "no route for kind = "; /* 20 bytes */
    struct config_queue qc = {.name = "q"};
    struct sqs_message m = {.receive_count = 1};
    m.body = (char *) "{}";
    m.body_len = 2;
    struct twice_job *j = job_new(NULL, &qc, &m);
    char *value = malloc(5001);
    CHECK(j != NULL && value != NULL);
    if (j == NULL || value == NULL) {
        free(value);
        job_free(j);
        return;
    }
    memset(value, 'v', 5000);
    value[5000] = '\0';
    /* a 2-byte character across the cut: its first byte is the detail's
     * byte JOB_ERROR_MAX - 1, so cutting at JOB_ERROR_MAX would split it */
    memcpy(value + JOB_ERROR_MAX - 1 - 20, "\xc3\xa9", 2);
    job_deadletter(j, "unknown-route", "%s%s", prefix, value);
    CHECK_INT((long long) strlen(j->error), JOB_ERROR_MAX - 1 + 3);
    CHECK(strncmp(j->error, prefix, 20) == 0);
    CHECK_STR(j->error + JOB_ERROR_MAX - 2, "v...");
    value[40] = '\0';
    job_deadletter(j, "unknown-route", "%s%s", prefix, value);
    CHECK_INT((long long) strlen(j->error), 20 + 40); /* short: kept whole */
    free(value);
    job_free(j);
}

/* The dead letter of a route_by value that names no route: the value, or
 * why there is none. An attribute or body member that is there but has no
 * text (Binary, an object, null) is not "(missing)": that would send the
 * producer looking for a field it did send. */
static char *
route(const char *route_by, const char *body, const struct sqs_attr *attr)
{
    struct config_route r = {.value = "a", .plugin = "p"};
    struct config_queue qc = {
        .name = "q", .route_by = (char *) route_by, .routes = &r, .nroutes = 1};
    struct sqs_message m = {.receive_count = 1, .body = (char *) body, .body_len = strlen(body)};
    m.attrs = (struct sqs_attr *) attr; /* borrowed, as the body: no batch, nothing freed */
    m.nattrs = attr != NULL;
    struct twice_job *j = job_new(NULL, &qc, &m);
    struct buf out = BUF_INIT;
    int rc = keying_route(j);
    buf_printf(&out, "%d %s", rc, rc == KEYING_NO_ROUTE ? j->error : "");
    job_free(j);
    return buf_steal(&out);
}

static void
check_route(const char *route_by, const char *body, const struct sqs_attr *attr, const char *want)
{
    char *got = route(route_by, body, attr);
    CHECK_STR(got, want);
    free(got);
}

static void
test_route_values(void)
{
    check_route("kind", "{\"kind\":\"a\"}", NULL, "0 ");
    check_route("kind", "{\"kind\":\"b\"}", NULL, "-2 no route for kind = b");
    check_route("kind", "{}", NULL, "-2 no route for kind = (missing)");
    check_route("kind", "{\"kind\":{\"a\":1}}", NULL, "-2 no route for kind = (an object)");
    check_route("kind", "{\"kind\":[\"a\"]}", NULL, "-2 no route for kind = (an array)");
    check_route("kind", "{\"kind\":null}", NULL, "-2 no route for kind = (null)");
    check_route("kind", "{\"kind\":\"a\\u0000\"}", NULL,
                "-2 no route for kind = (a string holding a NUL character)");
    struct sqs_attr bin = {
        .name = "Kind", .data_type = "Binary", .binary = (unsigned char *) "a", .binary_len = 1};
    check_route("attr:Kind", "{}", &bin, "-2 no route for attr:Kind = (a Binary attribute)");
    struct sqs_attr str = {.name = "Kind", .data_type = "String", .string_value = "a"};
    check_route("attr:Kind", "{}", &str, "0 ");
    check_route("attr:Other", "{}", &str, "-2 no route for attr:Other = (missing)");
    /* a Number attribute's value is its text as sent: 1e3 is not route 1000 */
    struct sqs_attr num = {.name = "Kind", .data_type = "Number", .string_value = "1e3"};
    check_route("attr:Kind", "{}", &num, "-2 no route for attr:Kind = 1e3");
}

static const char sns[] =
    "{\"Type\":\"Notification\",\"MessageId\":\"sns-1\",\"TopicArn\":\"arn:aws:sns:us-east-1:1:"
    "orders\",\"Subject\":\"hi\",\"Message\":\"{\\\"orderId\\\":42}\",\"MessageAttributes\":"
    "{\"Tenant\":{\"Type\":\"String\",\"Value\":\"acme\"},\"Blob\":{\"Type\":\"Binary\","
    "\"Value\":\"AAE=\"}}}";

static const char eb[] = "{\"version\":\"0\",\"id\":\"ev-7\",\"detail-type\":\"InvoicePaid\","
                         "\"source\":\"billing\",\"detail\":{\"invoiceId\":\"INV-9\","
                         "\"amount\":19.90}}";

static void
test_envelopes(void)
{
    check_shape(CONFIG_ENVELOPE_SNS, "o:{attr:Tenant}:{orderId}", sns, "o:acme:42",
                "{\"orderId\":42}");
    check_shape(CONFIG_ENVELOPE_SNS, "{msg:topic}/{msg:sns_message_id}/{msg:subject}", sns,
                "arn:aws:sns:us-east-1:1:orders/sns-1/hi", NULL);
    check_shape(CONFIG_ENVELOPE_AUTO, "o:{orderId}", sns, "o:42", NULL);
    check_shape(CONFIG_ENVELOPE_EVENTBRIDGE, "{msg:source}:{msg:detail_type}:{invoiceId}", eb,
                "billing:InvoicePaid:INV-9", "{\"invoiceId\":\"INV-9\",\"amount\":19.90}");
    check_shape(CONFIG_ENVELOPE_AUTO, "{msg:event_id}", eb, "ev-7", NULL);
    /* auto leaves anything else as it is, JSON or not */
    check_shape(CONFIG_ENVELOPE_AUTO, "o:{orderId}", "{\"orderId\":5}", "o:5", "{\"orderId\":5}");
    /* a job that only shares an envelope's names, without its Message or
     * detail, is a job: SNS and EventBridge always send those */
    check_shape(CONFIG_ENVELOPE_AUTO, "signup:{id}:{source}",
                "{\"id\":7,\"source\":\"web\",\"detail-type\":\"signup\"}", "signup:7:web",
                "{\"id\":7,\"source\":\"web\",\"detail-type\":\"signup\"}");
    check_shape(CONFIG_ENVELOPE_AUTO, "{id}",
                "{\"id\":8,\"Type\":\"Notification\",\"TopicArn\":\"t\"}", "8", NULL);
    check_shape(CONFIG_ENVELOPE_AUTO, "{attr:X}", "not json",
                "missing-key-field: missing key "
                "field attr:X",
                "not json");
    /* a field of the other envelope is missing, by name */
    check_shape(CONFIG_ENVELOPE_SNS, "{msg:source}", sns,
                "missing-key-field: missing key field msg:source (not an EventBridge event)",
                NULL);
    check_shape(CONFIG_ENVELOPE_NONE, "{msg:topic}", "{}",
                "missing-key-field: missing key field msg:topic (not an SNS notification)", NULL);
    /* a Message that is not JSON is a body that is not JSON */
    check_shape(CONFIG_ENVELOPE_SNS, "{attr:Tenant}",
                "{\"Type\":\"Notification\",\"TopicArn\":\"t\",\"Message\":\"plain text\","
                "\"MessageAttributes\":{\"Tenant\":{\"Type\":\"String\",\"Value\":\"x\"}}}",
                "x", "plain text");
    /* an attribute named twice: the last one wins, as for any JSON member */
    check_shape(CONFIG_ENVELOPE_SNS, "{attr:T}",
                "{\"Type\":\"Notification\",\"TopicArn\":\"t\",\"Message\":\"{}\","
                "\"MessageAttributes\":{\"T\":{\"Type\":\"String\",\"Value\":\"first\"},"
                "\"T\":{\"Type\":\"String\",\"Value\":\"last\"}}}",
                "last", NULL);
}

static void
test_bad_envelopes(void)
{
    check_shape(CONFIG_ENVELOPE_SNS, "{id}", "{\"id\":1}",
                "bad-envelope: not an SNS notification (no Type \"Notification\" with a "
                "TopicArn)",
                "{\"id\":1}");
    check_shape(CONFIG_ENVELOPE_SNS, "{id}", eb,
                "bad-envelope: not an SNS notification (no Type \"Notification\" with a "
                "TopicArn)",
                NULL);
    check_shape(CONFIG_ENVELOPE_EVENTBRIDGE, "{id}", sns,
                "bad-envelope: not an EventBridge event (no detail-type and source strings)",
                NULL);
    check_shape(CONFIG_ENVELOPE_SNS, "{id}",
                "{\"Type\":\"Notification\",\"TopicArn\":\"t\",\"Message\":{\"id\":1}}",
                "bad-envelope: SNS notification's Message is another JSON value, not a string",
                NULL);
    check_shape(CONFIG_ENVELOPE_SNS, "{id}",
                "{\"Type\":\"Notification\",\"TopicArn\":\"t\",\"Message\":\"a\\u0000b\"}",
                "bad-envelope: SNS notification's Message holds a NUL byte", NULL);
    check_shape(CONFIG_ENVELOPE_SNS, "{id}",
                "{\"Type\":\"Notification\",\"TopicArn\":\"t\",\"Message\":\"{}\","
                "\"MessageAttributes\":[1]}",
                "bad-envelope: SNS MessageAttributes is not an object", NULL);
    check_shape(CONFIG_ENVELOPE_EVENTBRIDGE, "{id}", "{\"detail-type\":\"x\",\"source\":\"s\"}",
                "bad-envelope: EventBridge event without detail", NULL);
    check_shape(CONFIG_ENVELOPE_EVENTBRIDGE, "{id}",
                "{\"detail-type\":\"x\",\"source\":\"s\",\"detail\":\"{\\\"id\\\":1}\"}",
                "bad-envelope: EventBridge detail is not an object (it is a string)", NULL);
    check_shape(CONFIG_ENVELOPE_AUTO, "{id}",
                "{\"detail-type\":\"x\",\"source\":\"s\",\"detail\":null}",
                "bad-envelope: EventBridge detail is not an object (it is null)", NULL);
    check_shape(CONFIG_ENVELOPE_SNS, "{id}", "[1,",
                "bad-envelope: expected an sns envelope, and the body is not JSON (line 1 "
                "column 4: parse error: premature EOF)",
                NULL);
}

#define PTR "[\"software.amazon.payloadoffloading.PayloadS3Pointer\","

static void
test_pointers(void)
{
    /* a good pointer is followed: here without S3, so it waits */
    check_shape(CONFIG_ENVELOPE_NONE, "{id}", PTR "{\"s3BucketName\":\"b-1\",\"s3Key\":\"k/1\"}]",
                "LATER: fetching the payload at b-1/k/1: no S3 client", NULL);
    check_shape(CONFIG_ENVELOPE_NONE, "{id}",
                PTR "{\"s3BucketName\":\"Bad_Bucket\",\"s3Key\":\"k\"}]",
                "bad-payload-pointer: an S3 payload pointer whose s3BucketName is not a valid "
                "bucket name",
                NULL);
    check_shape(
        CONFIG_ENVELOPE_NONE, "{id}", PTR "{\"s3BucketName\":\"bucket\",\"s3Key\":\"a/../b\"}]",
        "bad-payload-pointer: an S3 payload pointer whose s3Key is not a valid object key", NULL);
    check_shape(CONFIG_ENVELOPE_NONE, "{id}", PTR "{\"s3BucketName\":\"bucket\"}]",
                "bad-payload-pointer: an S3 payload pointer without string s3BucketName and "
                "s3Key (of at most 63 and 1024 bytes)",
                NULL);
    check_shape(CONFIG_ENVELOPE_NONE, "{id}", PTR "{\"s3BucketName\":\"bucket\",\"s3Key\":\"k\"",
                "bad-payload-pointer: an S3 payload pointer that is not valid JSON", NULL);
    check_shape(CONFIG_ENVELOPE_NONE, "{id}", PTR "\"x\"]",
                "bad-payload-pointer: an S3 payload pointer without its {s3BucketName, s3Key} "
                "object",
                NULL);
    /* an array that only mentions the class later is an ordinary body */
    check_shape(CONFIG_ENVELOPE_NONE, "{0}",
                "[\"a\",\"software.amazon.payloadoffloading."
                "PayloadS3Pointer\"]",
                "a", NULL);
    /* a pointer inside an SNS notification (the SNS extended client) */
    check_shape(CONFIG_ENVELOPE_SNS, "{id}",
                "{\"Type\":\"Notification\",\"TopicArn\":\"t\",\"Message\":\"[\\\"software."
                "amazon.payloadoffloading.PayloadS3Pointer\\\",{\\\"s3BucketName\\\":\\\"b-2\\\","
                "\\\"s3Key\\\":\\\"k2\\\"}]\"}",
                "LATER: fetching the payload at b-2/k2: no S3 client", NULL);
    struct buf b = BUF_INIT;
    CHECK_INT(payload_pointer_write(&b, "my-bucket", "0f1e-uuid"), 0);
    CHECK_STR(buf_str(&b), PTR "{\"s3BucketName\":\"my-bucket\",\"s3Key\":\"0f1e-uuid\"}]");
    buf_free(&b);
}

static void
test_bucket_names(void)
{
    CHECK(s3_valid_bucket("my-bucket.2026"));
    CHECK(s3_valid_bucket("abc"));
    CHECK(!s3_valid_bucket("ab"));
    CHECK(!s3_valid_bucket("My-Bucket"));
    CHECK(!s3_valid_bucket("a..b"));
    CHECK(!s3_valid_bucket("-abc"));
    CHECK(!s3_valid_bucket("abc-"));
    CHECK(!s3_valid_bucket("192.168.5.4"));
    CHECK(!s3_valid_bucket("a_b_c"));
    CHECK(!s3_valid_bucket("a/b"));
    CHECK(!s3_valid_bucket("0123456789012345678901234567890123456789012345678901234567890123"));
    CHECK(s3_valid_key("a/b/c.json"));
    CHECK(!s3_valid_key(""));
    CHECK(!s3_valid_key("a/./b"));
    CHECK(!s3_valid_key(".."));
    CHECK(!s3_valid_key("a\nb"));
    CHECK(!s3_valid_key("\xff"));
}

/* The host API table, caught by a fake plugin's init(). */
static const twice_api *api;

static int
catch_api(const twice_api *a, const twice_settings *s, void **state)
{
    (void) s;
    api = a;
    *state = NULL;
    return 0;
}

/* What a handler sees of an SNS notification: the Message as its body and
 * fields, the notification's MessageAttributes after the message's own.
 * Read inside handle(), as the API takes only the job running there. */
static twice_status
view_handle(void *state, twice_job *j)
{
    (void) state;
    size_t n = 0;
    CHECK_STR(api->body(j, &n), "{\"orderId\":42}");
    CHECK_INT(n, 14);
    CHECK_STR(api->field(j, "orderId", NULL), "42");
    CHECK_STR(api->attr(j, "Tenant", NULL), "acme");
    CHECK_STR(api->attr(j, "Own", NULL), "o");
    CHECK(api->attr(j, "Blob", NULL) == NULL); /* Binary: named, no text */
    CHECK_STR(api->attr_name(j, 0), "Own");
    CHECK_STR(api->attr_name(j, 1), "Tenant");
    CHECK_STR(api->attr_name(j, 2), "Blob");
    CHECK(api->attr_name(j, 3) == NULL);
    return TWICE_DONE;
}

static void
test_handler_view(void)
{
    static twice_plugin desc = {.name = "fake", .init = catch_api, .handle = view_handle};
    struct config_plugin cp = {.name = "fake"};
    struct plugin_instance p = {.name = "fake", .cfg = &cp};
    char err[256];
    p.lp.desc = &desc;
    CHECK_INT(hostapi_init(&p, "twice.conf", err, sizeof(err)), 0);
    struct config_queue qc = {.name = "q", .envelope = CONFIG_ENVELOPE_SNS};
    struct sqs_attr own = {.name = "Own", .data_type = "String", .string_value = "o"};
    struct sqs_message m = {.receive_count = 1, .body = (char *) sns, .body_len = strlen(sns)};
    m.attrs = &own;
    m.nattrs = 1;
    struct twice_job *j = job_new(NULL, &qc, &m);
    CHECK_INT(keying_shape(j, no_s3, NULL, 1 << 20), KEYING_SHAPED);
    CHECK_INT(hostapi_handle(&p, j), TWICE_DONE);
    /* once handle() returned, the job is refused rather than read */
    CHECK(api->field(j, "orderId", NULL) == NULL);
    CHECK(api->body(j, NULL) == NULL);
    job_free(j);
    hostapi_fini(&p);
}

/* Fair queues: a standard queue's message may carry a MessageGroupId; keys,
 * the plugin API and dead letters see it as on FIFO queues. */
static void
test_fair_queue_group(void)
{
    struct config_queue qc = {.name = "std", .key = "t:{msg:group}:{id}"};
    struct keytmpl *qt = NULL;
    char err[256];
    CHECK_INT(keying_queue_key(&qc, &qt, err, sizeof(err)), 0);
    struct sqs_message m = {.receive_count = 1, .body = "{\"id\":3}", .body_len = 8};
    m.group_id = "tenant-a";
    m.message_id = "m-1";
    struct plugin_instance p = {.name = "fake"};
    struct twice_job *j = job_new(NULL, &qc, &m);
    struct buf out = BUF_INIT;
    CHECK_INT(hostapi_derive_key(&p, qt, j, &out), 0);
    CHECK_STR(buf_str(&out), "t:tenant-a:3");
    struct dlq_letter l;
    struct dlq_reason why = {.reason = "rejected", .queue_url = "http://h/0/std"};
    CHECK_INT(dlq_letter_build(&l, &j->msg, &why, 0, 0), 0);
    CHECK_STR(l.entry.group_id, "tenant-a"); /* kept on a standard DLQ too */
    CHECK(l.entry.dedup_id == NULL);
    dlq_letter_free(&l);
    buf_free(&out);
    job_free(j);
    keytmpl_free(qt);
}

int
main(void)
{
    test_fair_queue_group();
    test_handler_view();
    test_envelopes();
    test_error_cap();
    test_route_values();
    test_bad_envelopes();
    test_pointers();
    test_bucket_names();
    return check_done("test-shapes");
}
