/*
 * test-http.c - the http plugin. `unit`: the answer mapping (mapping.c
 * linked in) and its refusals, which answers report the endpoint unavailable
 * (the verdict through the SDK mock host), settings refusals, keys from the
 * key setting or a queue's key, through the mock host. `integration`: real
 * POSTs to a private scripts/http-receiver.py: the body and every header
 * (key, message id, attempt, queue, content type, bearer token from a file),
 * DONE on 2xx, RETRY on 503 and 429 with Retry-After (seconds and a date) and
 * on any answer with Twice-Retry-After, REJECT on 422 with the first 1 KB of
 * the answer, connection failures and timeouts (the endpoint unavailable),
 * and kept-alive connections.
 * The daemon's acceptance tests are tests/integration/test_http_plugin.py.
 */
#include "check.h"
#include "test_receiver.h"
#include "test_server.h"

#include "http.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <twice/mock.h>

/* ---- unit ---- */

static void
expect_outcomes(const struct http_mapping *m, const long *statuses, enum http_outcome want)
{
    for (size_t i = 0; statuses[i] != 0; i++) {
        if (http_mapping_of(m, statuses[i]) != want) {
            fprintf(stderr, "status %ld: got %d, want %d\n", statuses[i],
                    (int) http_mapping_of(m, statuses[i]), (int) want);
        }
        CHECK_INT(http_mapping_of(m, statuses[i]), want);
    }
}

static void
test_mapping(void)
{
    struct http_mapping m;
    struct setting_refusal r = {NULL, ""};
    CHECK_INT(http_mapping_compile(&m, "2xx", "429,5xx", "4xx", &r), 0);
    expect_outcomes(&m, (const long[]){200, 201, 204, 299, 0}, HTTP_DONE);
    expect_outcomes(&m, (const long[]){429, 500, 502, 503, 504, 599, 0}, HTTP_RETRY);
    expect_outcomes(&m, (const long[]){400, 401, 404, 408, 409, 422, 499, 0}, HTTP_REJECT);
    expect_outcomes(&m, (const long[]){100, 301, 302, 304, 600, 99, -1, 0}, HTTP_UNMAPPED);

    /* Users differ: 409 as done, 408 as retry, 501 as reject. */
    CHECK_INT(http_mapping_compile(&m, "2xx, 409", "408 429\t5xx", "4XX,501", &r), 0);
    expect_outcomes(&m, (const long[]){200, 409, 0}, HTTP_DONE);
    expect_outcomes(&m, (const long[]){408, 429, 500, 0}, HTTP_RETRY);
    expect_outcomes(&m, (const long[]){400, 410, 501, 0}, HTTP_REJECT);
    CHECK_INT(http_mapping_compile(&m, "", "", "", &r), 0);
    expect_outcomes(&m, (const long[]){200, 500, 0}, HTTP_UNMAPPED);

    CHECK_INT(http_mapping_compile(&m, "2xx", "6xx", "4xx", &r), -1);
    CHECK_STR(r.setting, "retry_statuses");
    CHECK_STR(r.why, "'6xx' is not a status (100-599) or a class of them (1xx-5xx)");
    CHECK_INT(http_mapping_compile(&m, "2xx", "429", "4xx,42", &r), -1);
    CHECK_STR(r.setting, "reject_statuses");
    CHECK_STR(r.why, "'42' is not a status (100-599) or a class of them (1xx-5xx)");
    CHECK_INT(http_mapping_compile(&m, "200x", "", "", &r), -1);
    CHECK_STR(r.setting, "done_statuses");
    CHECK_CONTAINS(r.why, "'200x' is not a status");
    /* in two lists: the later one says it again */
    CHECK_INT(http_mapping_compile(&m, "2xx", "429,5xx", "4xx,429", &r), -1);
    CHECK_STR(r.setting, "reject_statuses");
    CHECK_STR(r.why, "429 is also in retry_statuses");
    CHECK_INT(http_mapping_compile(&m, "2xx,5xx", "5xx", "", &r), -1);
    CHECK_STR(r.setting, "retry_statuses");
    CHECK_STR(r.why, "5xx is also in done_statuses");
}

/* ---- unit: the verdict through the mock host ---- */

/* The mapping verdict_handle judges by (set by each case). */
static struct http_mapping verdict_map;
static const twice_api *verdict_api;

static int
verdict_init(const twice_api *api, const twice_settings *set, void **state)
{
    (void) set;
    verdict_api = api;
    *state = NULL;
    return 0;
}

/* An answer as the body says: {"status":503,"ra":7,"tra":-1} (Retry-After and
 * Twice-Retry-After in seconds, -1 for none), judged by http_verdict. */
static twice_status
verdict_handle(void *state, twice_job *job)
{
    (void) state;
    struct http_answer a;
    http_answer_init(&a);
    a.retry_after = atol(verdict_api->field(job, "ra", NULL));
    a.twice_retry_after = atol(verdict_api->field(job, "tra", NULL));
    return http_verdict(verdict_api, job, &verdict_map,
                        atol(verdict_api->field(job, "status", NULL)), &a);
}

static const twice_plugin verdict_plugin = {
    .magic = TWICE_ABI_MAGIC,
    .abi_major = TWICE_ABI_MAJOR,
    .abi_minor = TWICE_ABI_MINOR,
    .size = (uint32_t) sizeof(twice_plugin),
    .name = "verdict",
    .version = "1",
    .key_template = "v:{status}",
    .init = verdict_init,
    .handle = verdict_handle,
};

/* An unavailable endpoint is reported to the host (for the queue's circuit
 * breaker) as sync reports it: 503, and 429 with Retry-After, when the lists
 * make them a RETRY; never an answer about the job itself. */
static void
test_downstream_unavailable(void)
{
    static const struct {
        const char *retry, *reject; /* the lists; done_statuses is 2xx */
        long status, ra, tra;
        twice_status want;
        int downstream, retry_after; /* -1: not called / none */
    } rows[] = {
        {"429,5xx", "4xx", 503, -1, -1, TWICE_RETRY, 0, -1},
        {"429,5xx", "4xx", 503, 7, -1, TWICE_RETRY, 7, 7},
        {"429,5xx", "4xx", 429, 30, -1, TWICE_RETRY, 30, 30},
        {"429,5xx", "4xx", 429, 99999, -1, TWICE_RETRY, 43200, 43200},
        {"429,5xx", "4xx", 429, -1, -1, TWICE_RETRY, -1, -1},
        {"429,5xx", "4xx", 500, 5, -1, TWICE_RETRY, -1, 5},
        {"429,5xx", "4xx", 502, -1, -1, TWICE_RETRY, -1, -1},
        {"429,5xx", "4xx", 422, -1, -1, TWICE_REJECT, -1, -1},
        {"429,5xx", "4xx", 200, -1, -1, TWICE_DONE, -1, -1},
        /* the service's own delay is about the job */
        {"429,5xx", "4xx", 503, -1, 60, TWICE_RETRY, -1, 60},
        /* lists that make 503 a REJECT: the user's word stands */
        {"429", "4xx,5xx", 503, 7, -1, TWICE_REJECT, -1, -1},
    };
    twice_mock *m = twice_mock_new(&verdict_plugin);
    CHECK(m != NULL);
    CHECK_INT(twice_mock_init(m), 0);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct setting_refusal r = {NULL, ""};
        CHECK_INT(http_mapping_compile(&verdict_map, "2xx", rows[i].retry, rows[i].reject, &r), 0);
        char body[128];
        snprintf(body, sizeof(body), "{\"status\":%ld,\"ra\":%ld,\"tra\":%ld}", rows[i].status,
                 rows[i].ra, rows[i].tra);
        twice_mock_job *j = twice_mock_job_new(m, body);
        twice_status st = twice_mock_run(j);
        if (st != rows[i].want || twice_mock_job_downstream_unavailable(j) != rows[i].downstream) {
            fprintf(stderr, "row %zu: %s\n", i, body);
        }
        CHECK_INT(st, rows[i].want);
        CHECK_INT(twice_mock_job_downstream_unavailable(j), rows[i].downstream);
        CHECK_INT(twice_mock_job_retry_after(j), rows[i].retry_after);
        twice_mock_job_free(j);
    }
    twice_mock_free(m);
}

static twice_mock *
new_mock(const char *url)
{
    twice_mock *m = plugin_open(PLUGIN_PATH);
    twice_mock_set(m, "url", url);
    twice_mock_set(m, "key", "order:{orderId}");
    return m;
}

/* A mock with one more setting whose value init must refuse with want. */
static void
refused(const char *name, const char *value, const char *want)
{
    twice_mock *m = new_mock("http://127.0.0.1:9/jobs");
    twice_mock_set(m, name, value);
    expect_setting_error(m, name, want);
}

static void
test_settings(void)
{
    expect_setting_error(new_mock("ftp://x/{id}"), "url", "must start with http:// or https://");
    expect_setting_error(new_mock("http://x/{id"), "url", "has a '{' that does not start");
    refused("content_type", "text/plain\r\nX-Evil: 1", "must be a media type on one line");
    refused("timeout", "0", "must be 1-3600 seconds");
    refused("retry_statuses", "429,7xx", "'7xx' is not a status");
    refused("ca_file", "/nonexistent/ca.pem", "/nonexistent/ca.pem: No such file");
    refused("ca_file", "/", "/: not a regular file");
    refused("token_file", "/nonexistent/token", "/nonexistent/token: No such file");
    refused("reject_statuses", "4xx,429", "429 is also in retry_statuses");
    /* the default retry_statuses says 5xx again after this done_statuses */
    twice_mock *m = new_mock("http://127.0.0.1:9/jobs");
    twice_mock_set(m, "done_statuses", "2xx,5xx");
    expect_setting_error(m, "retry_statuses", "5xx is also in done_statuses");
    refused("key", "order:{orderId", "key template \"order:{orderId\"");

    char path[] = "/tmp/test-http-token-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, "\n  \n", 4) == 4);
    close(fd);
    char want[128];
    snprintf(want, sizeof(want), "%s is empty", path);
    refused("token_file", path, want);
    fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && write(fd, "two words\n", 10) == 10);
    close(fd);
    snprintf(want, sizeof(want), "%s holds a space or a control character", path);
    refused("token_file", path, want);
    unlink(path);
}

/* The key comes from the key setting, or from a queue's key; without
 * either a message has none. */
static void
test_keys(void)
{
    twice_mock *m = new_mock("http://127.0.0.1:9/jobs");
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j;
    plugin_run(m, "{\"detail\":{\"invoiceId\":\"INV-1\"}}", &j);
    CHECK(twice_mock_job_key(j) == NULL);
    CHECK_STR(twice_mock_job_reason(j), "missing-key-field");
    CHECK_STR(twice_mock_job_error(j), "missing key field orderId");
    twice_mock_job_free(j);
    CHECK_INT(twice_mock_queue_key(m, "invoice:{detail.invoiceId}"), 0);
    plugin_run(m, "{\"detail\":{\"invoiceId\":\"INV-1\"}}", &j);
    CHECK_STR(twice_mock_job_key(j), "invoice:INV-1");
    twice_mock_job_free(j);
    twice_mock_free(m);

    m = plugin_open(PLUGIN_PATH);
    twice_mock_set(m, "url", "http://127.0.0.1:9/jobs");
    CHECK_INT(twice_mock_init(m), 0);
    plugin_run(m, "{\"orderId\":1}", &j);
    CHECK(twice_mock_job_key(j) == NULL);
    CHECK_CONTAINS(twice_mock_job_error(j), "no key template");
    twice_mock_job_free(j);
    twice_mock_free(m);
}

/* ---- integration: the receiver's control API ---- */

static twice_status
run_in(twice_mock *m, const char *prefix, const char *body, twice_mock_job **out)
{
    char path[256];
    snprintf(path, sizeof(path), "{\"case\":\"%s\",%s", prefix, body + 1);
    return plugin_run(m, path, out);
}

static void
test_request(twice_mock *m)
{
    twice_mock_job *j =
        twice_mock_job_new(m, "{\"case\":\"ok\",\"orderId\":42,\"x\":\"caf\xc3\xa9\"}");
    twice_mock_job_attempt(j, 3);
    twice_mock_job_message_id(j, "m-123");
    twice_mock_job_queue(j, "orders");
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK(twice_mock_job_error(j) == NULL);
    twice_mock_job_free(j);
    json_t *r = receiver_requests("ok");
    CHECK_INT(json_array_size(r), 1);
    CHECK_STR(req_str(r, 0, "method"), "POST");
    CHECK_STR(req_str(r, 0, "path"), "/ok/jobs");
    CHECK_STR(req_str(r, 0, "body"), "{\"case\":\"ok\",\"orderId\":42,\"x\":\"caf\xc3\xa9\"}");
    CHECK_STR(req_header(r, 0, "idempotency-key"), "order:42");
    CHECK_STR(req_header(r, 0, "x-twice-message-id"), "m-123");
    CHECK_STR(req_header(r, 0, "x-twice-attempt"), "3");
    CHECK_STR(req_header(r, 0, "x-twice-queue"), "orders");
    CHECK_STR(req_header(r, 0, "content-type"), "application/vnd.test+json");
    CHECK_STR(req_header(r, 0, "authorization"), "Bearer s3cret-token");
    /* the mock host offers no trace context: the header is left out */
    CHECK_STR(req_header(r, 0, "traceparent"), "(missing)");
    CHECK_STR(req_header(r, 0, "expect"), "(missing)");
    json_decref(r);
}

static void
test_reject(twice_mock *m)
{
    twice_mock_job *j;
    receiver_script("bad", "{\"status\":422,\"body\":\"field \\\"email\\\" is invalid\\r\\nok\"}");
    CHECK_INT(run_in(m, "bad", "{\"orderId\":1}", &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "HTTP 422: field \"email\" is invalid  ok");
    CHECK_STR(twice_mock_job_reason(j), "rejected");
    twice_mock_job_free(j);

    char spec[2200] = "{\"status\":400,\"body\":\"";
    memset(spec + strlen(spec), 'x', 2000);
    strcat(spec, "\"}");
    receiver_script("long", spec);
    CHECK_INT(run_in(m, "long", "{\"orderId\":1}", &j), TWICE_REJECT);
    /* The plugin keeps 1024 bytes of the body ("HTTP 400: " and 1024 x's); the host,
     * twiced and the mock alike, keeps a dead letter's first 1024 bytes and "...". */
    const char *e = twice_mock_job_error(j);
    CHECK_INT(strlen(e), 1024 + strlen("..."));
    CHECK(strncmp(e, "HTTP 400: xxxxxxxx", 18) == 0);
    CHECK_STR(e + 1024, "...");
    twice_mock_job_free(j);
}

static void
test_retry(twice_mock *m)
{
    twice_mock_job *j = twice_mock_job_new(m, "{\"case\":\"busy\",\"orderId\":3}");
    receiver_script("busy", "{\"fail_first\":2,\"status\":503,\"retry_after\":\"7\"}");
    for (int attempt = 1; attempt <= 3; attempt++) {
        twice_mock_job_attempt(j, attempt);
        CHECK_INT(twice_mock_run(j), attempt < 3 ? TWICE_RETRY : TWICE_DONE);
        CHECK_INT(twice_mock_job_retry_after(j), attempt < 3 ? 7 : -1);
        CHECK_INT(twice_mock_job_downstream_unavailable(j), attempt < 3 ? 7 : -1);
    }
    twice_mock_job_free(j);

    char spec[200], date[64];
    time_t later = time(NULL) + 120;
    struct tm tm;
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&later, &tm));
    snprintf(spec, sizeof(spec), "{\"status\":429,\"retry_after\":\"%s\"}", date);
    receiver_script("slow", spec);
    CHECK_INT(run_in(m, "slow", "{\"orderId\":1}", &j), TWICE_RETRY);
    CHECK(twice_mock_job_retry_after(j) >= 115 && twice_mock_job_retry_after(j) <= 120);
    twice_mock_job_free(j);

    receiver_script("err", "{\"status\":500}");
    CHECK_INT(run_in(m, "err", "{\"orderId\":1}", &j), TWICE_RETRY);
    CHECK_INT(twice_mock_job_retry_after(j), -1);
    CHECK_CONTAINS(twice_mock_job_error(j), "HTTP 500: ");
    twice_mock_job_free(j);

    /* An answer without a body says so, rather than ending in ": ". */
    receiver_script("bare", "{\"status\":429,\"body\":\"\"}");
    CHECK_INT(run_in(m, "bare", "{\"orderId\":1}", &j), TWICE_RETRY);
    CHECK_STR(twice_mock_job_error(j), "HTTP 429 (empty body)");
    twice_mock_job_free(j);
    receiver_script("bare4", "{\"status\":400,\"body\":\"\\r\\n\"}");
    CHECK_INT(run_in(m, "bare4", "{\"orderId\":1}", &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "HTTP 400 (empty body)");
    twice_mock_job_free(j);
    receiver_script(
        "bare202",
        "{\"status\":202,\"then_body\":\"\",\"headers\":{\"Twice-Retry-After\":\"3\"}}");
    CHECK_INT(run_in(m, "bare202", "{\"orderId\":1}", &j), TWICE_RETRY);
    CHECK_STR(twice_mock_job_error(j), "HTTP 202 with Twice-Retry-After: 3 (empty body)");
    twice_mock_job_free(j);

    /* The service's own delay wins over any status. */
    receiver_script("later", "{\"status\":202,\"headers\":{\"Twice-Retry-After\":\"30\"}}");
    CHECK_INT(run_in(m, "later", "{\"orderId\":1}", &j), TWICE_RETRY);
    CHECK_INT(twice_mock_job_retry_after(j), 30);
    CHECK_CONTAINS(twice_mock_job_error(j), "HTTP 202 with Twice-Retry-After: 30");
    twice_mock_job_free(j);
    receiver_script("later4", "{\"status\":409,\"headers\":{\"Twice-Retry-After\":\"5\"}}");
    CHECK_INT(run_in(m, "later4", "{\"orderId\":1}", &j), TWICE_RETRY);
    CHECK_INT(twice_mock_job_retry_after(j), 5);
    twice_mock_job_free(j);

    receiver_script("moved", "{\"status\":302,\"headers\":{\"Location\":\"http://x/\"}}");
    CHECK_INT(run_in(m, "moved", "{\"orderId\":1}", &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "HTTP 302: not in done_statuses");
    twice_mock_job_free(j);
}

/* Job i of thread t under prefix ctx. */
static void
conn_body(char *buf, size_t cap, const void *ctx, int t, int i)
{
    snprintf(buf, cap, "{\"case\":\"%s\",\"orderId\":%d}", (const char *) ctx, 100 * t + i);
}

static void
test_transport_failures(void)
{
    char url[128];
    twice_mock_job *j;
    snprintf(url, sizeof(url), "%s/late", receiver_base);
    twice_mock *m = new_mock(url);
    twice_mock_set(m, "timeout", "1");
    CHECK_INT(twice_mock_init(m), 0);
    receiver_script("late", "{\"delay_ms\":3000}");
    CHECK_INT(plugin_run(m, "{\"orderId\":1}", &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "POST failed: ");
    CHECK_CONTAINS(twice_mock_job_error(j), "timed out");
    CHECK_INT(twice_mock_job_downstream_unavailable(j), 0); /* no answer: the endpoint */
    twice_mock_job_free(j);
    twice_mock_free(m);

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", server_free_port());
    m = new_mock(url);
    CHECK_INT(twice_mock_init(m), 0);
    CHECK_INT(plugin_run(m, "{\"orderId\":1}", &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "POST failed: ");
    CHECK_INT(twice_mock_job_downstream_unavailable(j), 0); /* refused: the endpoint is down */
    twice_mock_job_free(j);
    twice_mock_free(m);
}

static int
integration(void)
{
    struct test_server srv = {.pid = 0};
    if (server_start(&srv, HTTP_RECEIVER, NULL, NULL) != 0) {
        fprintf(stderr, "could not start %s\n", HTTP_RECEIVER);
        return 1;
    }
    snprintf(receiver_base, sizeof(receiver_base), "http://127.0.0.1:%d", srv.port);
    char url[128], token[] = "/tmp/test-http-token-XXXXXX";
    int fd = mkstemp(token);
    CHECK(fd >= 0 && write(fd, "s3cret-token\n", 13) == 13);
    close(fd);
    snprintf(url, sizeof(url), "%s/{case}/jobs", receiver_base);
    twice_mock *m = new_mock(url);
    twice_mock_set(m, "content_type", "application/vnd.test+json");
    twice_mock_set(m, "token_file", token);
    CHECK_INT(twice_mock_init(m), 0);
    test_request(m);
    test_reject(m);
    test_retry(m);
    receiver_check_reuse(m, conn_body, "test-http");
    for (size_t i = 0; i < twice_mock_log_count(m); i++) {
        CHECK(strstr(twice_mock_log_text(m, i, NULL), "s3cret") == NULL);
    }
    twice_mock_free(m);
    unlink(token);
    test_transport_failures();
    server_stop(&srv);
    return check_done("test-http integration");
}

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "integration") == 0) {
        return integration();
    }
    test_mapping();
    test_downstream_unavailable();
    test_settings();
    test_keys();
    return check_done("test-http unit");
}
