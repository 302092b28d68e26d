/*
 * test-sqs-parse.c - the SQS client's pure half against canned responses:
 * error parsing and retry classification, describe() texts, received
 * messages with attributes and MD5 checks, batch results, endpoint
 * resolution. No server here; itest-sqs.c talks to fauxqs.
 */
#include "buf.h"
#include "check.h"
#include "sqs.h"
#include "sqs_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
parse_err(long status, const char *body, const char *query, struct sqs_error *e)
{
    sqs_parse_error(status, body, body ? strlen(body) : 0, query, NULL, e);
}

/* The exact example of the reference, §4. */
static void
test_reference_error(void)
{
    struct sqs_error e;
    char text[1024];
    parse_err(400,
              "{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\","
              "\"message\":\"The specified queue does not exist.\"}",
              "AWS.SimpleQueueService.NonExistentQueue;Sender", &e);
    CHECK_INT(e.http_status, 400);
    CHECK_STR(e.code, "QueueDoesNotExist");
    CHECK_STR(e.query_code, "AWS.SimpleQueueService.NonExistentQueue");
    CHECK_STR(e.message, "The specified queue does not exist.");
    CHECK_INT(e.retryable, 0);
    CHECK_INT(e.throttled, 0);
    CHECK_INT(e.transport, 0);
    sqs_error_describe(&e, "ReceiveMessage", text, sizeof text);
    CHECK_STR(text, "ReceiveMessage: QueueDoesNotExist: The specified queue does not exist. "
                    "(check the queue url and region)");
    /* A call on the queue a setting names says which setting, and where:
     * a dead letter's SendMessage said "the queue url" of its DLQ. */
    sqs_error_describe_at(&e, "SendMessage", "dlq_url of queue 'jobs' at /etc/twice.conf:12", text,
                          sizeof text);
    CHECK_STR(text, "SendMessage: QueueDoesNotExist: The specified queue does not exist. "
                    "(check dlq_url of queue 'jobs' at /etc/twice.conf:12, and the region)");
    /* other errors keep their hints */
    snprintf(e.code, sizeof(e.code), "AccessDenied");
    sqs_error_describe_at(&e, "SendMessage", "dlq_url of queue 'jobs' at /etc/twice.conf:12", text,
                          sizeof text);
    CHECK_STR(text, "SendMessage: AccessDenied: The specified queue does not exist. "
                    "(check the IAM policy allows sqs:SendMessage on this queue)");
}

static void
test_throttling(void)
{
    struct sqs_error e;
    char text[1024];
    /* SQS throttles with HTTP 403: the code decides, not the status */
    parse_err(403, "{\"__type\":\"com.amazonaws.sqs#RequestThrottled\",\"message\":\"Rate\"}",
              "RequestThrottled;Sender", &e);
    CHECK_STR(e.code, "RequestThrottled");
    CHECK_INT(e.throttled, 1);
    CHECK_INT(e.retryable, 1);
    sqs_error_describe(&e, "SendMessage", text, sizeof text);
    CHECK_CONTAINS(text, "(the queue is being throttled; twice backs off)");
    /* the query code alone is enough */
    parse_err(403, "", "RequestThrottled;Sender", &e);
    CHECK_STR(e.code, "HTTP 403");
    CHECK_INT(e.throttled, 1);
    /* __type with a ':' suffix, as coral services send it */
    parse_err(400,
              "{\"__type\":\"com.amazon.coral.service#ThrottlingException:"
              "http://internal.amazon.com/coral/com.amazon.coral.service/\","
              "\"Message\":\"Rate exceeded\"}",
              NULL, &e);
    CHECK_STR(e.code, "ThrottlingException");
    CHECK_STR(e.message, "Rate exceeded");
    CHECK_STR(e.query_code, "");
    CHECK_INT(e.throttled, 1);
    CHECK_INT(e.retryable, 1);
    parse_err(400, "{\"__type\":\"com.amazonaws.sqs#KmsThrottled\"}",
              "KMS.ThrottlingException;Sender", &e);
    CHECK_INT(e.throttled, 1);
    /* a 403 that is not throttling is not retried */
    parse_err(403, "{\"__type\":\"com.amazonaws.sqs#OverLimit\"}", "OverLimit;Sender", &e);
    CHECK_INT(e.retryable, 0);
    /* x-amzn-ErrorType when the body has no __type */
    sqs_parse_error(400, "{}", 2, NULL, "ThrottlingException:http://x/", &e);
    CHECK_STR(e.code, "ThrottlingException");
    CHECK_INT(e.throttled, 1);
}

static void
test_transient(void)
{
    struct sqs_error e;
    char text[1024];
    parse_err(500, NULL, NULL, &e);
    CHECK_STR(e.code, "HTTP 500");
    CHECK_STR(e.message, "");
    CHECK_INT(e.retryable, 1);
    CHECK_INT(e.throttled, 0);
    sqs_error_describe(&e, "DeleteMessageBatch", text, sizeof text);
    CHECK_STR(text, "DeleteMessageBatch: HTTP 500");
    parse_err(503, "<html>Service Unavailable</html>", NULL, &e);
    CHECK_STR(e.code, "HTTP 503");
    CHECK_INT(e.retryable, 1);
    parse_err(400, "{\"__type\":\"com.amazonaws.sqs#RequestTimeout\"}", NULL, &e);
    CHECK_INT(e.retryable, 1);
    parse_err(400, "{\"__type\":\"com.amazonaws.sqs#InvalidParameterValue\"}", NULL, &e);
    CHECK_INT(e.retryable, 0);
    parse_err(404, "{\"__type\":\"com.amazonaws.sqs#ReceiptHandleIsInvalid\"}", NULL, &e);
    CHECK_INT(e.retryable, 0);

    sqs_error_transport(&e, "CouldNotConnect", "http://127.0.0.1:9: Failed to connect", 1);
    CHECK_INT(e.transport, 1);
    CHECK_INT(e.retryable, 1);
    CHECK_INT(e.http_status, 0);
    sqs_error_describe(&e, "ReceiveMessage", text, sizeof text);
    CHECK_STR(text, "ReceiveMessage: CouldNotConnect: http://127.0.0.1:9: Failed to connect "
                    "(is the endpoint reachable?)");
    sqs_error_transport(&e, "RecvError", "Connection reset by peer", 1);
    sqs_error_describe(&e, "DeleteMessageBatch", text, sizeof text);
    CHECK_STR(text, "DeleteMessageBatch: RecvError: Connection reset by peer (the connection "
                    "broke mid-call: the endpoint restarting, or a proxy or load balancer "
                    "ending it; twice tries again)");
    sqs_error_transport(&e, "Cancelled", "cancelled", 0);
    CHECK_INT(e.retryable, 0);
    sqs_error_describe(&e, "ReceiveMessage", text, sizeof text);
    CHECK_STR(text, "ReceiveMessage: Cancelled: cancelled");
}

static void
test_describe_hints(void)
{
    struct sqs_error e;
    char text[1024];
    parse_err(400,
              "{\"__type\":\"com.amazonaws.sqs#AccessDeniedException\","
              "\"message\":\"User: x is not authorized\"}",
              "AccessDenied;Sender", &e);
    sqs_error_describe(&e, "ReceiveMessage", text, sizeof text);
    CHECK_STR(text, "ReceiveMessage: AccessDeniedException: User: x is not authorized "
                    "(check the IAM policy allows sqs:ReceiveMessage on this queue)");
    parse_err(403, "{\"__type\":\"com.amazonaws.sqs#InvalidClientTokenId\"}", NULL, &e);
    sqs_error_describe(&e, "GetQueueUrl", text, sizeof text);
    CHECK_STR(text, "GetQueueUrl: InvalidClientTokenId (check the AWS credentials)");
    parse_err(400, "{\"__type\":\"#UnrecognizedClientException\"}", NULL, &e);
    sqs_error_describe(&e, "GetQueueUrl", text, sizeof text);
    CHECK_CONTAINS(text, "(check the AWS credentials)");
    parse_err(403,
              "{\"__type\":\"#SignatureDoesNotMatch\",\"message\":\"Signature expired: "
              "20150830T123600Z is now earlier than 20150830T124100Z\"}",
              NULL, &e);
    sqs_error_describe(&e, "SendMessage", text, sizeof text);
    CHECK_CONTAINS(text, "(clock skew: this host's clock is off; sync it with NTP (chrony, "
                         "systemd-timesyncd))");
    CHECK_INT(e.retryable, 0);
    /* the expected canonical request quoted holds the session token: never kept */
    parse_err(403,
              "{\"__type\":\"#SignatureDoesNotMatch\",\"message\":\"The request signature we "
              "calculated does not match the signature you provided.\\n\\nThe Canonical String "
              "for this request should have been\\n'POST\\n/\\n\\nhost:sqs\\n"
              "x-amz-security-token:SECRETTOKEN\\n'\\n\\nThe String-to-Sign should have "
              "been\\n'AWS4-HMAC-SHA256'\"}",
              NULL, &e);
    sqs_error_describe(&e, "SendMessage", text, sizeof text);
    CHECK_STR(text, "SendMessage: SignatureDoesNotMatch: The request signature we calculated "
                    "does not match the signature you provided. (check the AWS credentials and "
                    "the system clock)");
    CHECK(strstr(e.message, "SECRETTOKEN") == NULL);
    parse_err(403, "{\"__type\":\"#SignatureDoesNotMatch\",\"message\":\"no\"}", NULL, &e);
    sqs_error_describe(&e, "SendMessage", text, sizeof text);
    CHECK_CONTAINS(text, "credentials and the system clock");
    parse_err(400, "{\"__type\":\"#RequestExpired\"}", NULL, &e);
    sqs_error_describe(&e, "SendMessage", text, sizeof text);
    CHECK_CONTAINS(text, "clock skew");
    /* a short buffer truncates, never overflows */
    char small[12];
    sqs_error_describe(&e, "SendMessage", small, sizeof small);
    CHECK_STR(small, "SendMessage");
}

/* What passes with time (the relay keeps a follow-up pending) and what is the
 * request's or its queue's (kept as refused). */
static void
test_passes(void)
{
    static const char *const passes[] = {
        "{\"__type\":\"com.amazon.coral.service#ExpiredTokenException\"}",
        "{\"__type\":\"#ExpiredToken\"}",
        "{\"__type\":\"#InvalidClientTokenId\"}",
        "{\"__type\":\"#UnrecognizedClientException\"}",
        "{\"__type\":\"#MissingAuthenticationToken\"}",
        "{\"__type\":\"#InvalidSignatureException\",\"message\":\"Signature expired\"}",
        "{\"__type\":\"#SignatureDoesNotMatch\"}",
        "{\"__type\":\"#RequestExpired\"}",
        "{\"__type\":\"#RequestTimeTooSkewed\"}",
        "{\"__type\":\"#ThrottlingException\"}",
        "{\"__type\":\"#InternalError\"}",
    };
    static const char *const refused[] = {
        "{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\"}",
        "{\"__type\":\"#AccessDeniedException\"}",
        "{\"__type\":\"#InvalidMessageContents\"}",
        "{\"__type\":\"#InvalidParameterValue\"}",
        "{\"__type\":\"#BatchRequestTooLong\"}",
        "{\"__type\":\"#KmsAccessDenied\"}",
        "{\"__type\":\"#IncompleteSignature\"}",
    };
    struct sqs_error e;
    char text[1024];
    for (size_t i = 0; i < sizeof(passes) / sizeof(passes[0]); i++) {
        parse_err(i < 9 ? 403 : 400, passes[i], NULL, &e);
        CHECK_INT(sqs_error_passes(&e), 1);
    }
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        parse_err(400, refused[i], NULL, &e);
        CHECK_INT(sqs_error_passes(&e), 0);
    }
    /* the query protocol's code alone */
    parse_err(403, "{}", "ExpiredToken;Sender", &e);
    CHECK_INT(sqs_error_passes(&e), 1);
    CHECK_INT(sqs_error_refuses_creds(&e), 1); /* read the source again */
    parse_err(400, "{}", "AWS.SimpleQueueService.NonExistentQueue;Sender", &e);
    CHECK_INT(sqs_error_passes(&e), 0);
    CHECK_INT(sqs_error_refuses_creds(&e), 0);
    parse_err(403, "{\"__type\":\"#InvalidClientTokenId\"}", NULL, &e);
    CHECK_INT(sqs_error_refuses_creds(&e), 1);
    parse_err(403, "{\"__type\":\"#SignatureDoesNotMatch\"}", NULL, &e);
    CHECK_INT(sqs_error_refuses_creds(&e), 0); /* a clock or a secret: a new set is no fix */
    /* http_proxy's 407: the environment's proxy, not SQS; fixed on the sender's side */
    parse_err(407, "<html>Proxy Authentication Required</html>", NULL, &e);
    CHECK_STR(e.code, "ProxyAuthRequired");
    CHECK_INT(sqs_error_passes(&e), 1);
    sqs_error_describe(&e, "SendMessageBatch", text, sizeof text);
    CHECK_CONTAINS(text, "SendMessageBatch: ProxyAuthRequired: the HTTP proxy answered 407 (");
    CHECK_CONTAINS(text, "NO_PROXY");
    sqs_error_transport(&e, "ProxyAuthRequired", "CONNECT tunnel failed, response 407", 0);
    CHECK_INT(sqs_error_passes(&e), 1);
    sqs_error_transport(&e, "TLSVerifyFailed", "certificate has expired", 0);
    CHECK_INT(sqs_error_passes(&e), 1);
    sqs_error_transport(&e, "CouldNotConnect", "refused", 1);
    CHECK_INT(sqs_error_passes(&e), 1);
    sqs_error_transport(&e, "BadURL", "no scheme", 0);
    CHECK_INT(sqs_error_passes(&e), 0);
    sqs_error_set(&e, "OutOfMemory", 0, "out of memory while signing");
    CHECK_INT(sqs_error_passes(&e), 1);
    parse_err(400, "{\"__type\":\"#ExpiredToken\",\"message\":\"expired\"}", NULL, &e);
    sqs_error_describe(&e, "SendMessageBatch", text, sizeof text);
    CHECK_STR(text, "SendMessageBatch: ExpiredToken: expired (the AWS credentials expired: "
                    "twicectl whoami says where they come from)");
    parse_err(403,
              "{\"__type\":\"#InvalidSignatureException\",\"message\":\"Signature not yet "
              "current: 20261205T063000Z is still later than 20261205T062000Z\"}",
              NULL, &e);
    sqs_error_describe(&e, "SendMessageBatch", text, sizeof text);
    CHECK_CONTAINS(text, "(clock skew: this host's clock is off; sync it with NTP (chrony, "
                         "systemd-timesyncd))");
    parse_err(403, "{\"__type\":\"#RequestTimeTooSkewed\"}", NULL, &e);
    sqs_error_describe(&e, "SendMessageBatch", text, sizeof text);
    CHECK_CONTAINS(text, "(clock skew: this host's clock is off; sync it with NTP (chrony, "
                         "systemd-timesyncd))");
}

static void
test_retry_delay(void)
{
    struct sqs_error thr = {0}, tr = {0};
    thr.throttled = thr.retryable = 1;
    tr.retryable = 1;
    /* base 1000 ms for throttling, 50 ms for transient; r mod (ceiling+1) */
    CHECK_INT(sqs_retry_delay_ms(&thr, 1, -1, 1000), 1000);
    CHECK_INT(sqs_retry_delay_ms(&thr, 2, -1, 2000), 2000);
    CHECK_INT(sqs_retry_delay_ms(&tr, 1, -1, 1000), 1000 % 51);
    CHECK_INT(sqs_retry_delay_ms(&tr, 2, -1, 100), 100);
    CHECK_INT(sqs_retry_delay_ms(&tr, 30, -1, UINT64_MAX), UINT64_MAX % 20001);
    /* x-amz-retry-after: max(t, min(retry_after, t + 5 s)) */
    CHECK_INT(sqs_retry_delay_ms(&tr, 1, 3000, 0), 3000);
    CHECK_INT(sqs_retry_delay_ms(&tr, 1, 60000, 0), 5000);
    CHECK_INT(sqs_retry_delay_ms(&tr, 1, 10, 40), 40);
    CHECK_INT(sqs_retry_delay_ms(&thr, 1, 60000, 700), 5700);
}

/* Two messages: a standard one with every kind of attribute, a FIFO one. */
static const char receive_json[] =
    "{\"Messages\":[{"
    "\"MessageId\":\"m-1\",\"ReceiptHandle\":\"rh-1\","
    "\"MD5OfBody\":\"afc1128594788b435bdea77721f4c4ae\","
    "\"Body\":\"h\\u00e9llo \\\"world\\\"\","
    "\"Attributes\":{\"ApproximateReceiveCount\":\"3\",\"SentTimestamp\":\"1700000000123\","
    "\"ApproximateFirstReceiveTimestamp\":\"1700000000456\",\"SenderId\":\"AIDA\"},"
    "\"MD5OfMessageAttributes\":\"0c787e45616d0800eb5b8baa64dcad7e\","
    "\"MessageAttributes\":{"
    "\"trace\":{\"DataType\":\"String\",\"StringValue\":\"abc-123\"},"
    "\"price\":{\"DataType\":\"Number.float\",\"StringValue\":\"3.25\"},"
    "\"blob\":{\"DataType\":\"Binary\",\"BinaryValue\":\"AAEC//4=\"}}"
    "},{"
    "\"MessageId\":\"m-2\",\"ReceiptHandle\":\"rh-2\","
    "\"MD5OfBody\":\"E63AEAFC8CA710BBBD371F7D1730C9CC\",\"Body\":\"second body\","
    "\"Attributes\":{\"MessageGroupId\":\"g1\",\"MessageDeduplicationId\":\"d1\","
    "\"SequenceNumber\":\"18888\",\"ApproximateReceiveCount\":\"1\","
    "\"AWSTraceHeader\":\"Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1\"},"
    "\"UnknownMember\":[1,2,3]"
    "}]}";

static const struct sqs_attr *
find_attr(const struct sqs_message *m, const char *name)
{
    for (size_t i = 0; i < m->nattrs; i++) {
        if (strcmp(m->attrs[i].name, name) == 0) {
            return &m->attrs[i];
        }
    }
    return NULL;
}

static void
test_receive(void)
{
    struct sqs_message *msgs = NULL;
    size_t n = 0;
    struct sqs_error e;
    CHECK_INT(sqs_parse_receive(receive_json, strlen(receive_json), &msgs, &n, &e), 0);
    CHECK_INT(n, 2);
    if (n != 2) {
        return;
    }
    const struct sqs_message *m = &msgs[0];
    CHECK_STR(m->message_id, "m-1");
    CHECK_STR(m->receipt_handle, "rh-1");
    CHECK_STR(m->body, "h\xc3\xa9llo \"world\"");
    CHECK_INT(m->body_len, 14);
    CHECK_INT(m->receive_count, 3);
    CHECK(m->sent_timestamp_ms == 1700000000123LL);
    CHECK(m->group_id == NULL);
    CHECK(m->aws_trace_header == NULL);
    CHECK_INT(m->nattrs, 3);
    const struct sqs_attr *a = find_attr(m, "trace");
    CHECK(a != NULL && a->binary == NULL);
    CHECK_STR(a ? a->string_value : NULL, "abc-123");
    a = find_attr(m, "price");
    CHECK_STR(a ? a->data_type : NULL, "Number.float");
    CHECK_STR(a ? a->string_value : NULL, "3.25");
    a = find_attr(m, "blob");
    CHECK(a != NULL && a->string_value == NULL);
    CHECK_INT(a ? a->binary_len : 0, 5);
    CHECK(a != NULL && a->binary_len == 5 && memcmp(a->binary, "\0\1\2\377\376", 5) == 0);

    m = &msgs[1];
    CHECK_STR(m->body, "second body");
    CHECK_STR(m->group_id, "g1");
    CHECK_STR(m->aws_trace_header, "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1");
    CHECK_INT(m->receive_count, 1);
    CHECK_INT(m->nattrs, 0);
    sqs_messages_free(msgs, n);
}

static void
test_receive_empty(void)
{
    struct sqs_message *msgs = (struct sqs_message *) &msgs;
    size_t n = 99;
    struct sqs_error e;
    CHECK_INT(sqs_parse_receive("{}", 2, &msgs, &n, &e), 0);
    CHECK_INT(n, 0);
    CHECK(msgs == NULL);
    CHECK_INT(sqs_parse_receive("{\"Messages\":[]}", 15, &msgs, &n, &e), 0);
    CHECK_INT(n, 0);
    CHECK_INT(sqs_parse_receive("", 0, &msgs, &n, &e), 0);
    CHECK_INT(n, 0);
    /* a message without a receive count counts as received once */
    const char *j =
        "{\"Messages\":[{\"MessageId\":\"a\",\"ReceiptHandle\":\"b\",\"Body\":\"x\"}]}";
    CHECK_INT(sqs_parse_receive(j, strlen(j), &msgs, &n, &e), 0);
    CHECK(n == 1 && msgs[0].receive_count == 1 && msgs[0].sent_timestamp_ms == 0);
    sqs_messages_free(msgs, n);
}

/* Replace the first occurrence of from in s with to (same length). */
static char *
patched(const char *s, const char *from, const char *to)
{
    char *p = strdup(s);
    char *at = strstr(p, from);
    if (at != NULL && strlen(from) == strlen(to)) {
        memcpy(at, to, strlen(to));
    }
    return p;
}

static void
test_receive_corrupt(void)
{
    struct sqs_message *msgs = NULL;
    size_t n = 0;
    struct sqs_error e;
    char text[1024];
    /* one flipped letter in the second body: the whole call fails */
    char *j = patched(receive_json, "second body", "second bodY");
    CHECK_INT(sqs_parse_receive(j, strlen(j), &msgs, &n, &e), -1);
    CHECK_STR(e.code, "BodyMD5Mismatch");
    CHECK_INT(e.retryable, 1);
    CHECK_INT(e.throttled, 0);
    CHECK_CONTAINS(e.message, "m-2");
    CHECK(msgs == NULL && n == 0);
    sqs_error_describe(&e, "ReceiveMessage", text, sizeof text);
    CHECK_CONTAINS(text, "ReceiveMessage: BodyMD5Mismatch: message m-2");
    free(j);
    /* an attribute changed in transit */
    j = patched(receive_json, "abc-123", "abc-124");
    CHECK_INT(sqs_parse_receive(j, strlen(j), &msgs, &n, &e), -1);
    CHECK_STR(e.code, "AttributesMD5Mismatch");
    CHECK_INT(e.retryable, 1);
    free(j);
    /* bad base64 in a Binary attribute */
    j = patched(receive_json, "AAEC//4=", "AAEC/!4=");
    CHECK_INT(sqs_parse_receive(j, strlen(j), &msgs, &n, &e), -1);
    CHECK_STR(e.code, "MalformedResponse");
    CHECK_CONTAINS(e.message, "blob");
    free(j);
    /* not JSON at all */
    CHECK_INT(sqs_parse_receive("<html>", 6, &msgs, &n, &e), -1);
    CHECK_STR(e.code, "MalformedResponse");
    CHECK_INT(e.retryable, 1);
    /* a message without a receipt handle cannot be acknowledged */
    const char *k = "{\"Messages\":[{\"MessageId\":\"a\",\"Body\":\"x\"}]}";
    CHECK_INT(sqs_parse_receive(k, strlen(k), &msgs, &n, &e), -1);
    CHECK_STR(e.code, "MalformedResponse");
}

/* Read as jansson read answers before: the last of a repeated member wins,
 * a member of the wrong type is absent, unknown ones are skipped. */
static void
test_receive_like_before(void)
{
    struct sqs_message *msgs = NULL;
    size_t n = 0;
    struct sqs_error e;
    const char *j =
        "{\"Messages\":[{\"MessageId\":\"a\",\"MessageId\":\"b\",\"ReceiptHandle\":\"r\","
        "\"Body\":\"x\",\"Body\":\"y\",\"Skip\":{\"Body\":\"z\",\"MessageId\":[1]},"
        "\"Attributes\":{\"ApproximateReceiveCount\":\"5\",\"MessageGroupId\":\"g\"},"
        "\"Attributes\":{\"SentTimestamp\":\"7\",\"ApproximateReceiveCount\":4},"
        "\"MessageAttributes\":{\"k\":{\"DataType\":\"String\",\"StringValue\":\"1\"},"
        "\"t\":{\"DataType\":\"String\",\"StringValue\":\"2\"},"
        "\"k\":{\"DataType\":\"Number\",\"StringValue\":\"3\",\"StringValue\":4},"
        "\"odd\":5,\"bin\":{\"DataType\":\"Binary.x\",\"BinaryValue\":\"AAEC\\/\\/4=\"}}},"
        "{\"MessageId\":\"c\",\"ReceiptHandle\":\"r2\",\"Body\":\"\\u0000z\","
        "\"Attributes\":{\"MessageGroupId\":12,\"ApproximateReceiveCount\":true}}]}";
    CHECK_INT(sqs_parse_receive(j, strlen(j), &msgs, &n, &e), 0);
    CHECK_INT(n, 2);
    if (n != 2) {
        sqs_messages_free(msgs, n);
        return;
    }
    CHECK_STR(msgs[0].message_id, "b");
    CHECK_STR(msgs[0].body, "y");
    CHECK_INT(msgs[0].receive_count, 4);
    CHECK(msgs[0].sent_timestamp_ms == 7);
    CHECK(msgs[0].group_id == NULL); /* the second Attributes has none */
    CHECK_INT(msgs[0].nattrs, 4);
    /* a repeated name keeps its place and takes the last value */
    CHECK_STR(msgs[0].attrs[0].name, "k");
    CHECK_STR(msgs[0].attrs[0].data_type, "Number");
    CHECK_STR(msgs[0].attrs[0].string_value, ""); /* StringValue 4 is not a string */
    CHECK_STR(msgs[0].attrs[1].name, "t");
    CHECK_STR(msgs[0].attrs[2].name, "odd");
    CHECK_STR(msgs[0].attrs[2].data_type, "String");
    CHECK_STR(msgs[0].attrs[2].string_value, "");
    const struct sqs_attr *b = &msgs[0].attrs[3];
    CHECK(b->string_value == NULL && b->binary_len == 5 &&
          memcmp(b->binary, "\0\1\2\377\376", 5) == 0); /* "\/" is "/" */
    CHECK_INT(msgs[1].body_len, 2);
    CHECK(memcmp(msgs[1].body, "\0z", 3) == 0);
    CHECK_STR(msgs[1].group_id, "12");
    CHECK_INT(msgs[1].receive_count, 1);
    sqs_messages_free(msgs, n);

    const char *none[] = {"{\"Messages\":{}}", "{\"Messages\":3}",
                          ("{\"Messages\":[{\"MessageId\":\"a\",\"ReceiptHandle\":\"b\","
                           "\"Body\":\"x\"}],\"Messages\":[]}")};
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        CHECK_INT(sqs_parse_receive(none[i], strlen(none[i]), &msgs, &n, &e), 0);
        CHECK(n == 0 && msgs == NULL);
    }
    const char *bad[] = {"[]",
                         "3",
                         "{\"Messages\":[3]}",
                         "{\"Messages\":[[]]}",
                         "{\"Messages\":[{\"MessageId\":\"a\",\"ReceiptHandle\":\"b\","
                         "\"Body\":5}]}",
                         "{\"Messages\":[{\"MessageId\":7,\"ReceiptHandle\":\"b\","
                         "\"Body\":\"x\"}]}",
                         "{\"Messages\":[{\"MessageId\":\"a\",\"ReceiptHandle\":\"b\","
                         "\"Body\":\"x\",\"MessageAttributes\":{\"b\":{\"DataType\":"
                         "\"Binary\"}}}]}",
                         "{\"Messages\":[{\"MessageId\":\"a\",\"ReceiptHandle\":\"b\","
                         "\"Body\":\"x\"}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        msgs = (struct sqs_message *) &msgs;
        n = 9;
        CHECK_INT(sqs_parse_receive(bad[i], strlen(bad[i]), &msgs, &n, &e), -1);
        CHECK(n == 0 && msgs == NULL);
        CHECK_STR(e.code, "MalformedResponse");
        CHECK_INT(e.retryable, 1);
    }
}

/* The strings of a batch live in one block its messages share: a message
 * moved out lives on after the others are freed, on any thread. */
static void
test_receive_batch_memory(void)
{
    struct buf j = BUF_INIT;
    buf_puts(&j, "{\"Messages\":[");
    for (int i = 0; i < 10; i++) {
        buf_printf(&j, "%s{\"MessageId\":\"m%d\",\"ReceiptHandle\":\"rh-%d\",\"Body\":\"",
                   i ? "," : "", i, i);
        for (int k = 0; k < 2000; k++) {
            buf_puts(&j, "\\\"\\u00e9"); /* escapes: decoded into the batch */
        }
        buf_puts(&j, "\"}");
    }
    buf_puts(&j, "]}");
    struct sqs_message *msgs = NULL;
    size_t n = 0;
    struct sqs_error e;
    CHECK_INT(sqs_parse_receive(buf_str(&j), j.len, &msgs, &n, &e), 0);
    buf_free(&j);
    CHECK_INT(n, 10);
    if (n != 10) {
        sqs_messages_free(msgs, n);
        return;
    }
    CHECK(msgs[3].batch != NULL && msgs[3].batch == msgs[7].batch);
    CHECK_INT(msgs[3].body_len, 2000 * 3);
    struct sqs_message kept = msgs[3];
    memset(&msgs[3], 0, sizeof(msgs[3]));
    sqs_message_clear(&msgs[0]);
    sqs_messages_free(msgs, n);
    CHECK_STR(kept.message_id, "m3"); /* still readable (ASan would say otherwise) */
    CHECK(memcmp(kept.body, "\"\xc3\xa9\"", 4) == 0);
    sqs_message_clear(&kept);
    CHECK(kept.body == NULL && kept.batch == NULL);
    sqs_message_clear(&kept); /* a cleared message lets go of nothing */
}

static void
test_receive_attribute_limit(void)
{
    struct buf j = BUF_INIT;
    buf_puts(&j, "{\"Messages\":[{\"MessageId\":\"a\",\"ReceiptHandle\":\"b\",\"Body\":\"x\","
                 "\"MessageAttributes\":{");
    for (int i = 0; i < 257; i++) {
        buf_printf(&j, "%s\"a%d\":{\"DataType\":\"String\",\"StringValue\":\"v\"}", i ? "," : "",
                   i);
    }
    buf_puts(&j, "}}]}");
    struct sqs_message *msgs = NULL;
    size_t n = 0;
    struct sqs_error e;
    CHECK_INT(sqs_parse_receive(buf_str(&j), j.len, &msgs, &n, &e), -1);
    CHECK_STR(e.code, "MalformedResponse");
    CHECK_CONTAINS(e.message, "more than 256 message attributes");
    buf_free(&j);
}

static void
test_md5_and_base64(void)
{
    char md5[33];
    struct sqs_attr a = {"attribName1", "String", "attribValue 1", NULL, 0};
    CHECK_INT(sqs_md5_of_attrs(&a, 1, md5), 0);
    CHECK_STR(md5, "19e27d4e946b072f3f58da80d94fd778"); /* the reference's vector */
    CHECK_INT(sqs_md5_hex("", 0, md5), 0);
    CHECK_STR(md5, "d41d8cd98f00b204e9800998ecf8427e");

    const char *in[] = {"", "YQ==", "YWI=", "YWJj", "AAEC//4="};
    size_t want[] = {0, 1, 2, 3, 5};
    for (size_t i = 0; i < 5; i++) {
        unsigned char *out = NULL;
        size_t len = 99;
        CHECK_INT(sqs_base64_decode(in[i], strlen(in[i]), &out, &len), 0);
        CHECK_INT(len, want[i]);
        struct buf b = BUF_INIT;
        CHECK_INT(sqs_base64_encode(out, len, &b), 0);
        CHECK_STR(buf_str(&b), in[i]);
        buf_free(&b);
        free(out);
    }
    unsigned char *out = NULL;
    size_t len = 0;
    CHECK_INT(sqs_base64_decode("YWJ", 3, &out, &len), -1);
    CHECK_INT(sqs_base64_decode("Y!==", 4, &out, &len), -1);
    CHECK(out == NULL);
}

static void
test_batch(void)
{
    const char *ids[] = {"a", "b", "c", "d"};
    struct sqs_batch_result r[4];
    struct sqs_error e;
    const char *j = "{\"Successful\":[{\"Id\":\"a\",\"MessageId\":\"mid-a\"},{\"Id\":\"zz\"}],"
                    "\"Failed\":[{\"Id\":\"b\",\"SenderFault\":true,"
                    "\"Code\":\"ReceiptHandleIsInvalid\",\"Message\":\"The input receipt "
                    "handle is invalid.\"},"
                    "{\"Id\":\"d\",\"SenderFault\":false,\"Code\":\"InternalError\"}]}";
    CHECK_INT(sqs_parse_batch(j, strlen(j), ids, 4, r, &e), 0);
    CHECK_INT(r[0].ok, 1);
    CHECK_STR(r[0].message_id, "mid-a");
    CHECK_STR(r[0].code, "");
    CHECK_INT(r[1].ok, 0);
    CHECK_INT(r[1].sender_fault, 1);
    CHECK_STR(r[1].code, "ReceiptHandleIsInvalid");
    CHECK_STR(r[1].message, "The input receipt handle is invalid.");
    /* named in neither list: failed, so nobody assumes it worked */
    CHECK_INT(r[2].ok, 0);
    CHECK_STR(r[2].code, "NoResult");
    CHECK_INT(r[3].ok, 0);
    CHECK_INT(r[3].sender_fault, 0);
    CHECK_STR(r[3].code, "InternalError");
    CHECK_STR(r[3].message, "");

    /* a failure wins over a success, whatever the order; the last list wins */
    j = "{\"Failed\":[{\"Id\":\"a\",\"SenderFault\":\"true\",\"Code\":\"\"}],"
        "\"Successful\":[{\"Id\":\"a\"},{\"Id\":\"b\",\"MessageId\":\"x\"}],"
        "\"Successful\":[{\"Id\":\"c\",\"MessageId\":7}],\"Other\":{\"Id\":\"d\"}}";
    CHECK_INT(sqs_parse_batch(j, strlen(j), ids, 4, r, &e), 0);
    CHECK(r[0].ok == 0 && r[0].sender_fault == 1);
    CHECK_STR(r[0].code, "Failed");
    CHECK_STR(r[1].code, "NoResult");
    CHECK(r[2].ok == 1 && r[2].message_id[0] == '\0');
    CHECK_STR(r[3].code, "NoResult");

    /* an empty 200 body: every entry failed with NoResult */
    CHECK_INT(sqs_parse_batch("", 0, ids, 2, r, &e), 0);
    CHECK(r[0].ok == 0 && r[1].ok == 0);
    CHECK_STR(r[1].code, "NoResult");
    CHECK_INT(sqs_parse_batch("[1]", 3, ids, 2, r, &e), -1);
    CHECK_STR(e.code, "MalformedResponse");
}

static void
test_attributes(void)
{
    struct sqs_kv *kv = NULL;
    size_t n = 0;
    struct sqs_error e;
    const char *j = "{\"Attributes\":{\"ApproximateNumberOfMessages\":\"7\","
                    "\"VisibilityTimeout\":30,\"QueueArn\":\"arn:aws:sqs:us-east-1:0:q\"}}";
    CHECK_INT(sqs_parse_attributes(j, strlen(j), &kv, &n, &e), 0);
    CHECK_INT(n, 3);
    CHECK_STR(sqs_kv_get(kv, n, "ApproximateNumberOfMessages"), "7");
    CHECK_STR(sqs_kv_get(kv, n, "VisibilityTimeout"), "30");
    CHECK(sqs_kv_get(kv, n, "Policy") == NULL);
    sqs_kv_free(kv, n);
    CHECK_INT(sqs_parse_attributes("{}", 2, &kv, &n, &e), 0);
    CHECK_INT(n, 0);
    sqs_kv_free(kv, n);

    char *url = NULL;
    j = "{\"QueueUrl\":\"http://sqs.us-east-1.localhost:1/000000000000/q\"}";
    CHECK_INT(sqs_parse_string_member(j, strlen(j), "QueueUrl", &url, &e), 0);
    CHECK_STR(url, "http://sqs.us-east-1.localhost:1/000000000000/q");
    free(url);
    CHECK_INT(sqs_parse_string_member("{}", 2, "QueueUrl", &url, &e), -1);
    CHECK_STR(e.code, "MalformedResponse");
}

static void
clear_env(void)
{
    const char *vars[] = {"AWS_REGION",           "AWS_DEFAULT_REGION",
                          "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL",
                          "AWS_PROFILE",          "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        unsetenv(vars[i]);
    }
    /* no shared config file with a region in it */
    setenv("AWS_CONFIG_FILE", "/nonexistent/twice-test/config", 1);
}

static void
test_endpoint(void)
{
    struct sqs_endpoint ep;
    char err[256];
    clear_env();
    CHECK_INT(sqs_endpoint_resolve(NULL, NULL, NULL, NULL, &ep, err, sizeof err), -1);
    CHECK_STR(err, "no AWS region: set aws.region in the configuration or AWS_REGION");

    setenv("AWS_DEFAULT_REGION", "eu-central-1", 1);
    CHECK_INT(sqs_endpoint_resolve(NULL, NULL, NULL, NULL, &ep, err, sizeof err), 0);
    CHECK_STR(ep.region, "eu-central-1");
    CHECK_STR(ep.url, "https://sqs.eu-central-1.amazonaws.com");
    CHECK(ep.ca_file == NULL);
    sqs_endpoint_free(&ep);

    setenv("AWS_REGION", "eu-west-1", 1); /* wins over AWS_DEFAULT_REGION */
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566/", 1);
    CHECK_INT(sqs_endpoint_resolve(NULL, NULL, NULL, "/etc/ca.pem", &ep, err, sizeof err), 0);
    CHECK_STR(ep.region, "eu-west-1");
    CHECK_STR(ep.url, "http://127.0.0.1:4566");
    CHECK_STR(ep.ca_file, "/etc/ca.pem");
    sqs_endpoint_free(&ep);

    setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:9324", 1);
    CHECK_INT(sqs_endpoint_resolve(NULL, NULL, NULL, NULL, &ep, err, sizeof err), 0);
    CHECK_STR(ep.url, "http://127.0.0.1:9324");
    sqs_endpoint_free(&ep);

    /* the configuration wins over the environment */
    CHECK_INT(sqs_endpoint_resolve("cn-north-1", "", NULL, NULL, &ep, err, sizeof err), 0);
    CHECK_STR(ep.region, "cn-north-1");
    CHECK_STR(ep.url, "http://127.0.0.1:9324");
    sqs_endpoint_free(&ep);
    setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
    CHECK_INT(sqs_endpoint_resolve("cn-north-1", NULL, NULL, NULL, &ep, err, sizeof err), 0);
    CHECK_STR(ep.url, "https://sqs.cn-north-1.amazonaws.com.cn");
    sqs_endpoint_free(&ep);
    CHECK_INT(sqs_endpoint_resolve("us-east-2",
                                   "https://vpce-1.sqs.us-east-2.vpce.amazonaws"
                                   ".com",
                                   NULL, NULL, &ep, err, sizeof err),
              0);
    CHECK_STR(ep.url, "https://vpce-1.sqs.us-east-2.vpce.amazonaws.com");
    sqs_endpoint_free(&ep);

    CHECK_INT(sqs_endpoint_resolve("Eu West", NULL, NULL, NULL, &ep, err, sizeof err), -1);
    CHECK_STR(err, "aws.region=Eu West: not a region name (lowercase letters, digits and '-', "
                   "like us-east-1)");
    CHECK(ep.url == NULL && ep.region == NULL);
    CHECK_INT(sqs_endpoint_resolve("us-east-1", "ftp://x", NULL, NULL, &ep, err, sizeof err), -1);
    CHECK_STR(err, "bad SQS endpoint aws.endpoint=ftp://x: must start with http:// or https://");
    CHECK_INT(sqs_endpoint_resolve("us-east-1", "http://", NULL, NULL, &ep, err, sizeof err), -1);
    clear_env();
}

/* A region or endpoint from the environment or the profile is checked where
 * it is read, and named by its source: it used to reach the signer and the
 * URL as it was, and fail as an opaque signing or endpoint error. */
static void
test_endpoint_sources(void)
{
    struct sqs_endpoint ep;
    char err[512];
    clear_env();
    setenv("AWS_REGION", "us east 1", 1);
    CHECK_INT(sqs_endpoint_resolve(NULL, NULL, NULL, NULL, &ep, err, sizeof err), -1);
    CHECK_STR(err, "AWS_REGION=us east 1: not a region name (lowercase letters, digits and '-', "
                   "like us-east-1)");
    CHECK(ep.url == NULL && ep.region == NULL);
    clear_env();
    setenv("AWS_DEFAULT_REGION", "EU-WEST-1\n", 1); /* shown escaped */
    CHECK_INT(sqs_endpoint_resolve(NULL, NULL, NULL, NULL, &ep, err, sizeof err), -1);
    CHECK_STR(err, "AWS_DEFAULT_REGION=EU-WEST-1\\n: not a region name (lowercase letters, "
                   "digits and '-', like us-east-1)");
    /* aws.region wins: the environment's is not read, so not refused */
    CHECK_INT(sqs_endpoint_resolve("eu-west-1", NULL, NULL, NULL, &ep, err, sizeof err), 0);
    sqs_endpoint_free(&ep);

    char path[] = "/tmp/twice-test-awsconfig-XXXXXX";
    int fd = mkstemp(path);
    const char text[] = "[default]\nregion = eu-west-1\n[profile bad]\nregion = Frankfurt\n";
    CHECK(fd >= 0 && write(fd, text, sizeof(text) - 1) == (ssize_t) (sizeof(text) - 1));
    close(fd);
    clear_env();
    setenv("AWS_CONFIG_FILE", path, 1);
    CHECK_INT(sqs_endpoint_resolve(NULL, NULL, NULL, NULL, &ep, err, sizeof err), 0);
    CHECK_STR(ep.region, "eu-west-1");
    sqs_endpoint_free(&ep);
    CHECK_INT(sqs_endpoint_resolve(NULL, NULL, "bad", NULL, &ep, err, sizeof err), -1);
    char want[512];
    snprintf(want, sizeof(want),
             "%s, [profile bad] region=Frankfurt: not a region name (lowercase letters, digits "
             "and '-', like us-east-1)",
             path);
    CHECK_STR(err, want);
    unlink(path);

    clear_env();
    setenv("AWS_REGION", "eu-west-1", 1);
    setenv("AWS_ENDPOINT_URL_SQS", "http://localhost:4566 ", 1);
    CHECK_INT(sqs_endpoint_resolve(NULL, NULL, NULL, NULL, &ep, err, sizeof err), -1);
    CHECK_STR(err, "bad SQS endpoint AWS_ENDPOINT_URL_SQS=http://localhost:4566 : contains a "
                   "space");
    unsetenv("AWS_ENDPOINT_URL_SQS");
    setenv("AWS_ENDPOINT_URL", "http://localhost:65536", 1);
    CHECK_INT(sqs_endpoint_resolve(NULL, NULL, NULL, NULL, &ep, err, sizeof err), -1);
    CHECK_STR(err, "bad SQS endpoint AWS_ENDPOINT_URL=http://localhost:65536: has a port that is "
                   "not a number from 1 to 65535");
    clear_env();
}

int
main(void)
{
    test_reference_error();
    test_throttling();
    test_transient();
    test_describe_hints();
    test_passes();
    test_retry_delay();
    test_receive();
    test_receive_empty();
    test_receive_corrupt();
    test_receive_like_before();
    test_receive_batch_memory();
    test_receive_attribute_limit();
    test_md5_and_base64();
    test_batch();
    test_attributes();
    test_endpoint();
    test_endpoint_sources();
    return check_done("test-sqs-parse");
}
