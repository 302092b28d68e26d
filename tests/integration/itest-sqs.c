/*
 * itest-sqs.c - the SQS client against a real SQS emulator (fauxqs at
 * TWICE_TEST_SQS_ENDPOINT): every operation of sqs.h, errors, FIFO, long
 * polls, cancellation and connection reuse. Fails when no endpoint is set.
 * Not a test of SigV4 itself (fauxqs does not check signatures).
 */
#include "check.h"
#include "atomics.h"
#include "creds.h"
#include "http.h"
#include "sqs.h"
#include "sqs_parse.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct sqs_endpoint ep;
static struct creds_chain *chain;
static char prefix[64];

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void
print_error(const char *what, const struct sqs_error *e)
{
    char text[1024];
    sqs_error_describe(e, what, text, sizeof text);
    fprintf(stderr, "  %s\n", text);
}

/*
 * CreateQueue through the raw call (sqs.h has no such operation: twice
 * never creates queues), then GetQueueUrl, which must agree. Returns the
 * malloc'd queue URL, or NULL.
 */
static char *
create_queue(struct sqs_client *c, const char *suffix, int fifo)
{
    char name[128];
    snprintf(name, sizeof name, "%s-%s%s", prefix, suffix, fifo ? ".fifo" : "");
    json_t *req =
        fifo ? json_pack("{s:s, s:{s:s}}", "QueueName", name, "Attributes", "FifoQueue", "true")
             : json_pack("{s:s}", "QueueName", name);
    char *body = json_dumps(req, JSON_COMPACT), *resp = NULL, *url = NULL, *url2 = NULL;
    struct sqs_error e;
    json_decref(req);
    int rc = sqs_call_raw(c, "CreateQueue", body, strlen(body), &resp, &e);
    CHECK_INT(rc, 0);
    if (rc != 0) {
        print_error("CreateQueue", &e);
    } else if (resp != NULL) {
        CHECK_INT(sqs_parse_string_member(resp, strlen(resp), "QueueUrl", &url, &e), 0);
    }
    if (url != NULL) {
        CHECK_INT(sqs_get_queue_url(c, name, &url2, &e), 0);
        CHECK_STR(url2, url);
        CHECK_CONTAINS(url, name);
    }
    free(url2);
    free(resp);
    free(body);
    return url;
}

static int
send_text(struct sqs_client *c, const char *url, const char *body, char *id, size_t idlen)
{
    struct sqs_send_entry m = {NULL, body, strlen(body), NULL, 0, -1, NULL, NULL};
    struct sqs_error e;
    int rc = sqs_send(c, url, &m, id, idlen, &e);
    if (rc != 0) {
        print_error("SendMessage", &e);
    }
    return rc;
}

/* Receive with wait seconds and the given visibility (-1: the queue's). */
static int
receive(struct sqs_client *c, const char *url, int max, int wait, int visibility,
        struct sqs_message **msgs, size_t *n, struct sqs_error *e)
{
    struct sqs_receive_opts o = {max, wait, visibility, NULL};
    int rc = sqs_receive(c, url, &o, msgs, n, e);
    if (rc != 0 && strcmp(e->code, "Cancelled") != 0 &&
        strcmp(e->code, "QueueDoesNotExist") != 0) {
        print_error("ReceiveMessage", e);
    }
    return rc;
}

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

/* Send with String, custom Number and Binary attributes; receive them back
 * decoded; the receive count climbs when the message comes back. */
static void
test_send_receive(struct sqs_client *c)
{
    char *url = create_queue(c, "basic", 0);
    if (url == NULL) {
        return;
    }
    unsigned char bin[] = {0, 1, 2, 0xff, 0xfe};
    struct sqs_attr attrs[] = {
        {(char *) "trace", (char *) "String", (char *) "abc-123", NULL, 0},
        {(char *) "price", (char *) "Number.float", (char *) "3.25", NULL, 0},
        {(char *) "blob", (char *) "Binary", NULL, bin, sizeof bin},
    };
    const char *body = "{\"candidateId\":\"c-42\",\"note\":\"h\xc3\xa9llo\"}";
    struct sqs_send_entry m = {NULL, body, strlen(body), attrs, 3, -1, NULL, NULL};
    char id[128] = "";
    struct sqs_error e;
    CHECK_INT(sqs_send(c, url, &m, id, sizeof id, &e), 0);
    CHECK(id[0] != '\0');

    struct sqs_message *msgs = NULL;
    size_t n = 0;
    CHECK_INT(receive(c, url, 10, 1, 0, &msgs, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_STR(msgs[0].message_id, id);
        CHECK_STR(msgs[0].body, body);
        CHECK_INT(msgs[0].body_len, strlen(body));
        CHECK_INT(msgs[0].receive_count, 1);
        CHECK(msgs[0].sent_timestamp_ms > 1600000000000LL);
        CHECK(msgs[0].group_id == NULL);
        CHECK_INT(msgs[0].nattrs, 3);
        const struct sqs_attr *a = find_attr(&msgs[0], "price");
        CHECK_STR(a ? a->data_type : NULL, "Number.float");
        CHECK_STR(a ? a->string_value : NULL, "3.25");
        a = find_attr(&msgs[0], "blob");
        CHECK(a != NULL && a->binary_len == sizeof bin && memcmp(a->binary, bin, 5) == 0);
    }
    sqs_messages_free(msgs, n);
    /* visibility 0 on receive: it is back at once, received a second time */
    CHECK_INT(receive(c, url, 10, 1, 30, &msgs, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_INT(msgs[0].receive_count, 2);
        CHECK_INT(sqs_delete(c, url, msgs[0].receipt_handle, &e), 0);
    }
    sqs_messages_free(msgs, n);
    CHECK_INT(receive(c, url, 10, 0, -1, &msgs, &n, &e), 0);
    CHECK_INT(n, 0);
    sqs_messages_free(msgs, n);
    free(url);
}

struct late_send {
    const char *url;
    long delay_ms;
    int rc;
};

/* A second thread, so a second client: one client per thread. */
static void *
late_send_main(void *arg)
{
    struct late_send *ls = arg;
    struct sqs_client *c = sqs_client_new(&ep, chain);
    sleep_ms(ls->delay_ms);
    ls->rc = c ? send_text(c, ls->url, "late", NULL, 0) : -1;
    sqs_client_free(c);
    return NULL;
}

static void
test_long_poll(struct sqs_client *c)
{
    char *url = create_queue(c, "longpoll", 0);
    if (url == NULL) {
        return;
    }
    struct late_send ls = {url, 1000, -1};
    pthread_t t;
    struct sqs_message *msgs = NULL;
    size_t n = 0;
    struct sqs_error e;
    CHECK_INT(pthread_create(&t, NULL, late_send_main, &ls), 0);
    double t0 = now_s();
    CHECK_INT(receive(c, url, 1, 15, -1, &msgs, &n, &e), 0);
    double took = now_s() - t0;
    pthread_join(t, NULL);
    CHECK_INT(ls.rc, 0);
    CHECK_INT(n, 1);
    CHECK_STR(n == 1 ? msgs[0].body : NULL, "late");
    /* returned when the message arrived, long before the 15 s wait */
    CHECK(took > 0.7 && took < 5.0);
    sqs_messages_free(msgs, n);
    free(url);
}

/* Receive n_want messages (several calls if needed) into msgs. */
static size_t
receive_all(struct sqs_client *c, const char *url, size_t n_want, int visibility,
            struct sqs_message **out)
{
    struct sqs_message *msgs = NULL;
    size_t n = 0, total = 0;
    struct sqs_error e;
    *out = calloc(n_want, sizeof **out);
    for (int tries = 0; tries < 10 && total < n_want; tries++) {
        if (receive(c, url, (int) (n_want - total), 1, visibility, &msgs, &n, &e) != 0) {
            break;
        }
        memcpy(*out + total, msgs, n * sizeof *msgs);
        total += n;
        free(msgs); /* the fields moved to *out */
    }
    return total;
}

/*
 * Batches with a bad receipt handle. Real SQS fails such an entry in both
 * calls; fauxqs reports deletes of unknown handles as successful (as SQS
 * does for stale handles), so per-entry Failed is checked on the
 * visibility batch and the delete batch is checked for its mapping.
 */
static void
test_batches(struct sqs_client *c)
{
    char *url = create_queue(c, "batch", 0);
    if (url == NULL) {
        return;
    }
    CHECK_INT(send_text(c, url, "one", NULL, 0), 0);
    CHECK_INT(send_text(c, url, "two", NULL, 0), 0);
    struct sqs_message *msgs = NULL;
    size_t n = receive_all(c, url, 2, 30, &msgs);
    CHECK_INT(n, 2);
    if (n == 2) {
        struct sqs_batch_entry vis[] = {
            {"good", msgs[0].receipt_handle, 60},
            {"bad", "not-a-receipt-handle", 60},
        };
        struct sqs_batch_result r[2];
        struct sqs_error e;
        CHECK_INT(sqs_change_visibility_batch(c, url, vis, 2, r, &e), 0);
        CHECK_INT(r[0].ok, 1);
        CHECK_INT(r[1].ok, 0);
        CHECK_INT(r[1].sender_fault, 1);
        CHECK_STR(r[1].code, "ReceiptHandleIsInvalid");

        struct sqs_batch_entry del[] = {
            {"b-0", msgs[0].receipt_handle, 0},
            {"b-1", "not-a-receipt-handle", 0},
            {"b-2", msgs[1].receipt_handle, 0},
        };
        struct sqs_batch_result d[3];
        CHECK_INT(sqs_delete_batch(c, url, del, 3, d, &e), 0);
        CHECK_INT(d[0].ok, 1);
        CHECK_INT(d[2].ok, 1);
        CHECK(d[1].ok || strcmp(d[1].code, "ReceiptHandleIsInvalid") == 0);
        CHECK(strcmp(d[1].code, "NoResult") != 0);
    }
    sqs_messages_free(msgs, n);
    /* both deleted: nothing comes back even with visibility over */
    struct sqs_error e;
    CHECK_INT(receive(c, url, 10, 0, -1, &msgs, &n, &e), 0);
    CHECK_INT(n, 0);
    sqs_messages_free(msgs, n);
    free(url);
}

static void
test_visibility(struct sqs_client *c)
{
    char *url = create_queue(c, "visibility", 0);
    struct sqs_message *msgs = NULL, *again = NULL;
    size_t n = 0, n2 = 0;
    struct sqs_error e;
    if (url == NULL || send_text(c, url, "hide me", NULL, 0) != 0) {
        free(url);
        return;
    }
    CHECK_INT(receive(c, url, 1, 1, 60, &msgs, &n, &e), 0);
    CHECK_INT(n, 1);
    CHECK_INT(receive(c, url, 1, 0, -1, &again, &n2, &e), 0);
    CHECK_INT(n2, 0); /* hidden for 60 s */
    sqs_messages_free(again, n2);
    if (n == 1) {
        CHECK_INT(sqs_change_visibility(c, url, msgs[0].receipt_handle, 1, &e), 0);
        sleep_ms(1300);
        CHECK_INT(receive(c, url, 1, 2, 60, &again, &n2, &e), 0);
        CHECK_INT(n2, 1);
        CHECK_STR(n2 == 1 ? again[0].message_id : NULL, msgs[0].message_id);
        CHECK_INT(n2 == 1 ? again[0].receive_count : 0, 2);
        sqs_messages_free(again, n2);
        /* a handle of a message no longer in flight is refused */
        CHECK_INT(sqs_change_visibility(c, url, "not-a-receipt-handle", 5, &e), -1);
        CHECK_INT(e.http_status, 400);
        CHECK_INT(e.retryable, 0);
    }
    sqs_messages_free(msgs, n);
    free(url);
}

static void
test_send_batch_attributes_purge(struct sqs_client *c)
{
    char *url = create_queue(c, "sendbatch", 0);
    if (url == NULL) {
        return;
    }
    struct sqs_send_entry m[3] = {
        {"e0", "first", 5, NULL, 0, -1, NULL, NULL},
        {"e1", "second", 6, NULL, 0, 0, NULL, NULL},
        {"e2", "third", 5, NULL, 0, -1, NULL, NULL},
    };
    struct sqs_batch_result r[3];
    struct sqs_error e;
    CHECK_INT(sqs_send_batch(c, url, m, 3, r, &e), 0);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(r[i].ok, 1);
        CHECK(r[i].message_id[0] != '\0');
    }
    CHECK(strcmp(r[0].message_id, r[1].message_id) != 0);

    const char *names[] = {"ApproximateNumberOfMessages", "VisibilityTimeout"};
    struct sqs_kv *kv = NULL;
    size_t n = 0;
    CHECK_INT(sqs_get_attributes(c, url, names, 2, &kv, &n, &e), 0);
    CHECK_STR(sqs_kv_get(kv, n, "ApproximateNumberOfMessages"), "3");
    CHECK_STR(sqs_kv_get(kv, n, "VisibilityTimeout"), "30");
    sqs_kv_free(kv, n);

    CHECK_INT(sqs_purge(c, url, &e), 0);
    const char *all[] = {"All"};
    CHECK_INT(sqs_get_attributes(c, url, all, 1, &kv, &n, &e), 0);
    CHECK_STR(sqs_kv_get(kv, n, "ApproximateNumberOfMessages"), "0");
    CHECK(sqs_kv_get(kv, n, "QueueArn") != NULL);
    sqs_kv_free(kv, n);
    free(url);
}

static void
test_missing_queue(struct sqs_client *c)
{
    char url[256], text[1024];
    snprintf(url, sizeof url, "http://sqs.%s.localhost:1/000000000000/%s-absent", ep.region,
             prefix);
    struct sqs_message *msgs = NULL;
    size_t n = 0;
    struct sqs_error e;
    CHECK_INT(receive(c, url, 1, 0, -1, &msgs, &n, &e), -1);
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
    char *got = NULL;
    CHECK_INT(sqs_get_queue_url(c, url + strlen(url) - 20, &got, &e), -1);
    CHECK(got == NULL);
    CHECK_STR(e.code, "QueueDoesNotExist");
}

static void
test_fifo(struct sqs_client *c)
{
    char *url = create_queue(c, "fifo", 1);
    if (url == NULL) {
        return;
    }
    struct sqs_send_entry m = {NULL, "fifo body", 9, NULL, 0, -1, "group-1", "dedup-1"};
    char id1[128] = "", id2[128] = "";
    struct sqs_error e;
    CHECK_INT(sqs_send(c, url, &m, id1, sizeof id1, &e), 0);
    /* same deduplication id within 5 minutes: the same message */
    CHECK_INT(sqs_send(c, url, &m, id2, sizeof id2, &e), 0);
    CHECK_STR(id2, id1);
    /* FIFO queues refuse a per-message delay */
    struct sqs_send_entry bad = {NULL, "x", 1, NULL, 0, 5, "group-1", "dedup-2"};
    CHECK_INT(sqs_send(c, url, &bad, NULL, 0, &e), -1);
    CHECK_STR(e.code, "InvalidParameterValue");

    struct sqs_message *msgs = NULL;
    size_t n = 0;
    struct sqs_receive_opts o = {10, 1, 30, "attempt-1"};
    CHECK_INT(sqs_receive(c, url, &o, &msgs, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_STR(msgs[0].group_id, "group-1");
        CHECK_STR(msgs[0].body, "fifo body");
    }
    sqs_messages_free(msgs, n);
    free(url);
}

struct raise_later {
    struct flag *flag;
    long delay_ms;
};

static void *
raise_later_main(void *arg)
{
    struct raise_later *r = arg;
    sleep_ms(r->delay_ms);
    flag_raise(r->flag);
    return NULL;
}

/* Shutdown: a long poll in progress gives up within about a second. */
static void
test_cancel(struct sqs_client *c)
{
    char *url = create_queue(c, "cancel", 0);
    if (url == NULL) {
        return;
    }
    struct flag flag = {0};
    struct raise_later r = {&flag, 300};
    struct sqs_message *msgs = NULL;
    size_t n = 0;
    struct sqs_error e = {0};
    pthread_t t;
    sqs_client_set_cancel(c, &flag);
    CHECK_INT(pthread_create(&t, NULL, raise_later_main, &r), 0);
    double t0 = now_s();
    CHECK_INT(receive(c, url, 1, 20, -1, &msgs, &n, &e), -1);
    double took = now_s() - t0;
    pthread_join(t, NULL);
    CHECK_STR(e.code, "Cancelled");
    CHECK_INT(e.retryable, 0);
    CHECK_INT(e.transport, 1);
    CHECK(took < 1.8);
    /* raised before the call: nothing is sent */
    t0 = now_s();
    CHECK_INT(sqs_purge(c, url, &e), -1);
    CHECK_STR(e.code, "Cancelled");
    CHECK(now_s() - t0 < 0.5);
    /* cleared: calls work again on the same client */
    sqs_client_set_cancel(c, NULL);
    CHECK_INT(sqs_purge(c, url, &e), 0);
    free(url);
}

static void
test_connection_reuse(void)
{
    struct sqs_client *c = sqs_client_new(&ep, chain);
    struct sqs_error e;
    char *url = NULL;
    CHECK(c != NULL);
    if (c == NULL) {
        return;
    }
    char *q = create_queue(c, "reuse", 0); /* CreateQueue + GetQueueUrl */
    CHECK_INT(sqs_get_queue_url(c, strrchr(q ? q : "/", '/') + 1, &url, &e), 0);
    CHECK_INT(sqs_purge(c, q ? q : "", &e), 0);
    /* four calls, one connection */
    CHECK_INT(http_client_connects(sqs_client_http(c)), 1);
    free(url);
    free(q);
    sqs_client_free(c);
}

/* http.c on its own against the emulator: status, headers by any case,
 * the response size limit. */
static void
test_http(void)
{
    struct http_client *h = http_client_new(NULL);
    struct http_response resp;
    struct http_error herr;
    http_response_init(&resp);
    const char *headers[] = {"Content-Type: application/x-amz-json-1.0",
                             "X-Amz-Target: AmazonSQS.GetQueueUrl"};
    const char *body = "{\"QueueName\":\"twice-itest-no-such-queue\"}";
    struct http_request req = {
        .method = "POST",
        .url = ep.url,
        .headers = headers,
        .nheaders = 2,
        .body = body,
        .body_len = strlen(body),
        .timeout_ms = 10000,
        .connect_timeout_ms = 2000,
        .no_proxy = 1,
    };
    CHECK_INT(http_perform(h, &req, &resp, &herr), 0);
    CHECK_INT(resp.status, 400);
    CHECK_STR(http_response_header(&resp, "X-AMZN-QUERY-ERROR"),
              "AWS.SimpleQueueService.NonExistentQueue;Sender");
    CHECK_CONTAINS(http_response_header(&resp, "content-type"), "application/x-amz-json-1.0");
    CHECK(http_response_header(&resp, "x-no-such-header") == NULL);
    CHECK_CONTAINS(buf_str(&resp.body), "QueueDoesNotExist");

    req.max_response = 10;
    CHECK_INT(http_perform(h, &req, &resp, &herr), -1);
    CHECK_STR(herr.code, "TooLarge");
    CHECK_INT(herr.transient, 0);
    CHECK_CONTAINS(herr.message, "response too large");
    CHECK_INT(resp.body.len, 0);

    req.url = "http://127.0.0.1:1/";
    req.max_response = 0;
    CHECK_INT(http_perform(h, &req, &resp, &herr), -1);
    CHECK_STR(herr.code, "CouldNotConnect");
    CHECK_INT(herr.transient, 1);
    req.url = "file:///etc/passwd";
    CHECK_INT(http_perform(h, &req, &resp, &herr), -1);
    CHECK_STR(herr.code, "BadURL");
    http_response_free(&resp);
    http_client_free(h);
}

/* An unreachable endpoint: retried inside the call, then a transport
 * error whose description names the endpoint. */
static void
test_unreachable(void)
{
    struct sqs_endpoint bad = {(char *) "http://127.0.0.1:1", ep.region, NULL};
    struct sqs_client *c = sqs_client_new(&bad, chain);
    struct sqs_error e;
    char text[1024];
    CHECK_INT(sqs_purge(c, "http://127.0.0.1:1/000000000000/q", &e), -1);
    CHECK_INT(e.transport, 1);
    CHECK_INT(e.retryable, 1);
    CHECK_INT(e.http_status, 0);
    CHECK_STR(e.code, "CouldNotConnect");
    sqs_error_describe(&e, "PurgeQueue", text, sizeof text);
    CHECK_CONTAINS(text, "PurgeQueue: CouldNotConnect: http://127.0.0.1:1: ");
    CHECK_CONTAINS(text, "(is the endpoint reachable?)");
    sqs_client_free(c);
}

int
main(void)
{
    const char *endpoint = getenv("TWICE_TEST_SQS_ENDPOINT");
    const char *region = getenv("TWICE_TEST_REGION");
    char err[256];
    if (endpoint == NULL || endpoint[0] == '\0') {
        fprintf(stderr, "itest-sqs: TWICE_TEST_SQS_ENDPOINT is not set: start the SQS "
                        "emulator (scripts/testenv.sh) and export it\n");
        return 1;
    }
    setenv("AWS_ACCESS_KEY_ID", "AKIDTWICEITEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "itest-secret-not-real", 1);
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");
    if (sqs_endpoint_resolve(region && region[0] ? region : "us-east-1", endpoint, NULL, NULL, &ep,
                             err, sizeof err) != 0) {
        fprintf(stderr, "itest-sqs: %s\n", err);
        return 1;
    }
    snprintf(prefix, sizeof prefix, "twice-itest-%ld-%ld", (long) getpid(), (long) time(NULL));
    chain = creds_chain_new(NULL);
    struct sqs_client *c = sqs_client_new(&ep, chain);
    if (chain == NULL || c == NULL) {
        fprintf(stderr, "itest-sqs: out of memory\n");
        return 1;
    }
    test_send_receive(c);
    test_long_poll(c);
    test_batches(c);
    test_visibility(c);
    test_send_batch_attributes_purge(c);
    test_missing_queue(c);
    test_fifo(c);
    test_cancel(c);
    test_connection_reuse();
    test_http();
    test_unreachable();
    sqs_client_free(c);
    creds_chain_free(chain);
    sqs_endpoint_free(&ep);
    return check_done("itest-sqs");
}
