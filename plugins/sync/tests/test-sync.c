/*
 * test-sync.c - the sync plugin. `unit`: settings, keys and refusals
 * through the SDK mock host (Retry-After and body sanitising are
 * http-common's, tested there). `integration`: real requests to a private
 * scripts/http-receiver.py: DONE on 200 and 409, RETRY with retry_after on 503 + Retry-After: 7,
 * REJECT on 400 with the body, escaped URL fields, Idempotency-Key = key,
 * the job's traceparent as a header,
 * and connections reused across messages (the receiver numbers each TCP
 * connection), from one thread and from several at once.
 */
#include "check.h"
#include "test_receiver.h"
#include "test_server.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <twice/mock.h>

/* ---- unit ---- */

static twice_mock *
new_mock(const char *url, const char *method)
{
    twice_mock *m = plugin_open(PLUGIN_PATH);
    twice_mock_set(m, "url", url);
    if (method != NULL) {
        twice_mock_set(m, "method", method);
    }
    return m;
}

static void
test_settings(void)
{
    expect_setting_error(new_mock("ftp://x/{id}", NULL), "url",
                         "must start with http:// or https://");
    expect_setting_error(new_mock("http://x/{id", NULL), "url",
                         "has a '{' that does not start a {field}");
    expect_setting_error(new_mock("http://x/id}", NULL), "url", "has a '}' without its '{'");
    expect_setting_error(new_mock("http://x/{id}", "PATCH"), "method", "must be PUT or POST");
    /* the one of the pair that is set is blamed */
    twice_mock *m = new_mock("http://x/{id}", NULL);
    twice_mock_set(m, "auth_header", "Authorization");
    expect_setting_error(m, "auth_header", "needs auth_env too");
    m = new_mock("http://x/{id}", NULL);
    twice_mock_set(m, "auth_env", "TWICE_SYNC_TEST_TOKEN");
    expect_setting_error(m, "auth_env", "needs auth_header too");
    m = new_mock("http://x/{id}", NULL);
    twice_mock_set(m, "auth_header", "Bad Name");
    twice_mock_set(m, "auth_env", "TWICE_SYNC_TEST_TOKEN");
    expect_setting_error(m, "auth_header", "must be a header name such as Authorization");
    m = new_mock("http://x/{id}", NULL);
    twice_mock_set(m, "auth_header", "Authorization");
    twice_mock_set(m, "auth_env", "TWICE_SYNC_TEST_UNSET_VARIABLE");
    expect_setting_error(m, "auth_env",
                         "TWICE_SYNC_TEST_UNSET_VARIABLE is not set or empty in twiced's "
                         "environment");
    setenv("TWICE_SYNC_TEST_BROKEN", "Bearer x\r\nX-Evil: 1", 1);
    m = new_mock("http://x/{id}", NULL);
    twice_mock_set(m, "auth_header", "Authorization");
    twice_mock_set(m, "auth_env", "TWICE_SYNC_TEST_BROKEN");
    expect_setting_error(m, "auth_env", "the value of TWICE_SYNC_TEST_BROKEN holds a line break");
    unsetenv("TWICE_SYNC_TEST_BROKEN");
    m = new_mock("http://x/{id}", NULL);
    twice_mock_set(m, "timeout", "0");
    expect_setting_error(m, "timeout", "must be 1-600 seconds");
}

static void
test_refusals(void)
{
    twice_mock *m = new_mock("http://127.0.0.1:9/{case}/{entity}/{id}", NULL);
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j;
    CHECK_INT(plugin_run(m, "{\"entity\":\"candidate\",\"id\":42,\"version\":9}", &j),
              TWICE_REJECT);
    CHECK_STR(twice_mock_job_key(j), "sync:candidate:42:9");
    CHECK_STR(twice_mock_job_error(j), "message has no data");
    twice_mock_job_free(j);
    CHECK_INT(plugin_run(m, "{\"entity\":\"c\",\"id\":1,\"version\":1,\"data\":[1]}", &j),
              TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "data must be a JSON object");
    twice_mock_job_free(j);
    CHECK_INT(plugin_run(m, "{\"entity\":\"c\",\"id\":1,\"version\":1,\"data\":{}}", &j),
              TWICE_REJECT);
    CHECK_CONTAINS(twice_mock_job_error(j), "url field {case}: the message has no such field");
    twice_mock_job_free(j);
    CHECK_INT(plugin_run(m, "{\"entity\":\"c\",\"id\":1,\"data\":{}}", &j), TWICE_REJECT);
    CHECK(!twice_mock_job_handled(j));
    CHECK_STR(twice_mock_job_error(j), "missing key field version");
    twice_mock_job_free(j);
    twice_mock_free(m);
}

/* ---- integration: the receiver's control API ---- */

static void
test_ok(twice_mock *m)
{
    twice_mock_job *j;
    CHECK_INT(plugin_run(m,
                         "{\"case\":\"ok\",\"entity\":\"candidate\",\"id\":42,\"version\":9,"
                         "\"data\":{\"name\":\"Ana\",\"skills\":[\"c\"]}}",
                         &j),
              TWICE_DONE);
    CHECK(twice_mock_job_error(j) == NULL);
    twice_mock_job_free(j);
    json_t *r = receiver_requests("ok");
    CHECK_INT(json_array_size(r), 1);
    CHECK_STR(req_str(r, 0, "method"), "PUT");
    CHECK_STR(req_str(r, 0, "path"), "/ok/api/candidate/42");
    CHECK_STR(req_header(r, 0, "idempotency-key"), "sync:candidate:42:9");
    CHECK_STR(req_header(r, 0, "content-type"), "application/json");
    CHECK_STR(req_header(r, 0, "authorization"), "Bearer s3cret-token");
    CHECK_STR(req_str(r, 0, "body"), "{\"name\":\"Ana\",\"skills\":[\"c\"]}");
    json_decref(r);
}

/* The job's trace context goes along as a traceparent header: the span
 * context twiced gives with tracing on, the message's own with it off, and
 * no header when there is none. */
static void
test_traceparent(twice_mock *m)
{
    static const char *const body = "{\"case\":\"tp\",\"entity\":\"c\",\"id\":1,\"version\":1,"
                                    "\"data\":{}}";
    const char *span = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const char *incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    twice_mock_job *j = twice_mock_job_new(m, body);
    CHECK_INT(twice_mock_job_traceparent(j, span), 0);
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    twice_mock_job_free(j);
    j = twice_mock_job_new(m, body);
    twice_mock_job_attr(j, "traceparent", NULL, incoming);
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    twice_mock_job_free(j);
    j = twice_mock_job_new(m, body);
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    twice_mock_job_free(j);
    json_t *r = receiver_requests("tp");
    CHECK_INT(json_array_size(r), 3);
    CHECK_STR(req_header(r, 0, "traceparent"), span);
    CHECK_STR(req_header(r, 1, "traceparent"), incoming);
    CHECK_STR(req_header(r, 2, "traceparent"), "(missing)");
    json_decref(r);
}

static void
test_escaping(twice_mock *m)
{
    twice_mock_job *j;
    CHECK_INT(plugin_run(m,
                         "{\"case\":\"esc\",\"entity\":\"candi date/x\",\"id\":\"a&b?c#d\","
                         "\"version\":1,\"data\":{}}",
                         &j),
              TWICE_DONE);
    twice_mock_job_free(j);
    json_t *r = receiver_requests("esc");
    /* the receiver decodes the path: intact segments and no query prove
     * each field was escaped as one segment */
    CHECK_STR(req_str(r, 0, "path"), "/esc/api/candi date/x/a&b?c#d");
    CHECK_STR(req_str(r, 0, "query"), "");
    CHECK_STR(req_header(r, 0, "idempotency-key"), "sync:candi date/x:a&b?c#d:1");
    json_decref(r);
}

static void
test_conflict_and_reject(twice_mock *m)
{
    twice_mock_job *j;
    receiver_script("conflict", "{\"status\":409}");
    CHECK_INT(plugin_run(m,
                         "{\"case\":\"conflict\",\"entity\":\"c\",\"id\":1,\"version\":1,"
                         "\"data\":{}}",
                         &j),
              TWICE_DONE);
    CHECK_CONTAINS(twice_mock_job_log_text(j, 0, NULL), "HTTP 409");
    twice_mock_job_free(j);

    receiver_script("bad",
                    "{\"status\":400,\"body\":\"field \\\"email\\\" is invalid\\r\\nsee docs\"}");
    CHECK_INT(plugin_run(
                  m, "{\"case\":\"bad\",\"entity\":\"c\",\"id\":1,\"version\":1,\"data\":{}}", &j),
              TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "HTTP 400: field \"email\" is invalid  see docs");
    twice_mock_job_free(j);

    char spec[1200] = "{\"status\":422,\"body\":\"";
    memset(spec + strlen(spec), 'x', 1000);
    strcpy(spec + strlen(spec) - 0, "\"}");
    receiver_script("long", spec);
    CHECK_INT(plugin_run(m,
                         "{\"case\":\"long\",\"entity\":\"c\",\"id\":1,\"version\":1,\"data\":{}}",
                         &j),
              TWICE_REJECT);
    CHECK_INT(strlen(twice_mock_job_error(j)), strlen("HTTP 422: ") + 512);
    twice_mock_job_free(j);

    /* An answer without a body says so, rather than ending in ": ". */
    receiver_script("bare", "{\"status\":429,\"body\":\"\"}");
    CHECK_INT(plugin_run(m,
                         "{\"case\":\"bare\",\"entity\":\"c\",\"id\":1,\"version\":1,\"data\":{}}",
                         &j),
              TWICE_RETRY);
    CHECK_STR(twice_mock_job_error(j), "HTTP 429 (empty body)");
    twice_mock_job_free(j);
}

static void
test_retry(twice_mock *m)
{
    const char *body = "{\"case\":\"busy\",\"entity\":\"c\",\"id\":3,\"version\":2,\"data\":{}}";
    twice_mock_job *j = twice_mock_job_new(m, body);
    receiver_script("busy", "{\"fail_first\":2,\"status\":503,\"retry_after\":\"7\"}");
    for (int attempt = 1; attempt <= 3; attempt++) {
        twice_mock_job_attempt(j, attempt);
        twice_status st = twice_mock_run(j);
        CHECK_INT(st, attempt < 3 ? TWICE_RETRY : TWICE_DONE);
        CHECK_INT(twice_mock_job_retry_after(j), attempt < 3 ? 7 : -1);
        CHECK_INT(twice_mock_job_downstream_unavailable(j), attempt < 3 ? 7 : -1);
        if (attempt < 3) {
            CHECK_CONTAINS(twice_mock_job_error(j), "HTTP 503: ");
        }
    }
    twice_mock_job_free(j);
    json_t *r = receiver_requests("busy");
    CHECK_INT(json_array_size(r), 3);
    for (size_t i = 0; i < json_array_size(r); i++) {
        CHECK_STR(req_header(r, i, "idempotency-key"), "sync:c:3:2");
    }
    json_decref(r);

    /* 429 with an HTTP date two minutes ahead */
    char spec[200], date[64];
    time_t later = time(NULL) + 120;
    struct tm tm;
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&later, &tm));
    snprintf(spec, sizeof(spec), "{\"status\":429,\"retry_after\":\"%s\"}", date);
    receiver_script("slow", spec);
    CHECK_INT(plugin_run(m,
                         "{\"case\":\"slow\",\"entity\":\"c\",\"id\":1,\"version\":1,\"data\":{}}",
                         &j),
              TWICE_RETRY);
    CHECK(twice_mock_job_retry_after(j) >= 115 && twice_mock_job_retry_after(j) <= 120);
    CHECK(twice_mock_job_downstream_unavailable(j) >= 115);
    twice_mock_job_free(j);

    /* A 500 and a 429 without Retry-After are this record's trouble: retried,
     * the endpoint not reported unavailable; a 503 without one is. */
    static const struct {
        const char *spec;
        int downstream;
    } rows[] = {{"{\"status\":500}", -1}, {"{\"status\":429}", -1}, {"{\"status\":503}", 0}};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        receiver_script("down", rows[i].spec);
        CHECK_INT(plugin_run(m,
                             "{\"case\":\"down\",\"entity\":\"c\",\"id\":1,\"version\":1,"
                             "\"data\":{}}",
                             &j),
                  TWICE_RETRY);
        CHECK_INT(twice_mock_job_downstream_unavailable(j), rows[i].downstream);
        twice_mock_job_free(j);
    }
}

/* Job i of thread t under prefix ctx. */
static void
conn_body(char *buf, size_t cap, const void *ctx, int t, int i)
{
    snprintf(buf, cap, "{\"case\":\"%s\",\"entity\":\"c\",\"id\":%d,\"version\":1,\"data\":{}}",
             (const char *) ctx, 100 * t + i);
}

static void
test_transport_failures(void)
{
    char url[128];
    twice_mock_job *j;
    snprintf(url, sizeof(url), "%s/late/{id}", receiver_base);
    twice_mock *m = new_mock(url, "POST");
    twice_mock_set(m, "timeout", "1");
    CHECK_INT(twice_mock_init(m), 0);
    receiver_script("late", "{\"delay_ms\":3000}");
    CHECK_INT(plugin_run(m, "{\"entity\":\"c\",\"id\":1,\"version\":1,\"data\":{}}", &j),
              TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "POST failed: ");
    CHECK_CONTAINS(twice_mock_job_error(j), "timed out");
    twice_mock_job_free(j);
    twice_mock_free(m);
    json_t *r = receiver_requests("late");
    CHECK_STR(req_str(r, 0, "method"), "POST");
    json_decref(r);

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/{id}", server_free_port());
    m = new_mock(url, NULL);
    CHECK_INT(twice_mock_init(m), 0);
    CHECK_INT(plugin_run(m, "{\"entity\":\"c\",\"id\":1,\"version\":1,\"data\":{}}", &j),
              TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "PUT failed: ");
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
    char url[128];
    snprintf(url, sizeof(url), "%s/{case}/api/{entity}/{id}", receiver_base);
    setenv("TWICE_SYNC_TEST_TOKEN", "Bearer s3cret-token", 1);
    twice_mock *m = new_mock(url, NULL);
    twice_mock_set(m, "auth_header", "Authorization");
    twice_mock_set(m, "auth_env", "TWICE_SYNC_TEST_TOKEN");
    CHECK_INT(twice_mock_init(m), 0);
    test_ok(m);
    test_traceparent(m);
    test_escaping(m);
    test_conflict_and_reject(m);
    test_retry(m);
    receiver_check_reuse(m, conn_body, "test-sync");
    for (size_t i = 0; i < twice_mock_log_count(m); i++) {
        CHECK(strstr(twice_mock_log_text(m, i, NULL), "s3cret") == NULL);
    }
    twice_mock_free(m);
    test_transport_failures();
    server_stop(&srv);
    return check_done("test-sync integration");
}

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "integration") == 0) {
        return integration();
    }
    test_settings();
    test_refusals();
    return check_done("test-sync unit");
}
