/*
 * sync.c - the sync plugin: PUT (or POST) a record's `data` to an HTTP
 * endpoint with libcurl, the idempotency key in an Idempotency-Key header,
 * keyed "sync:{entity}:{id}:{version}". Settings, init/fini and the request
 * are here; what the answer means is verdict.c's; the kept-alive connection
 * pool, reading answers and the URL template are http-common's (shared with
 * the http plugin). Not a general HTTP client.
 */
#include "sync.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <twice/plugin.h>

/* Read-only after init except the pool (its own lock): handle() runs on
 * many threads. All owned. */
struct sync {
    const twice_api *api;
    char *url_tmpl;
    char *method;      /* "PUT" or "POST" */
    char *auth_header; /* "Name: value" or NULL; a secret: never logged */
    long timeout;
    int pool_ready;
    struct http_pool pool; /* kept-alive connections (http_common.h) */
};

static void
sync_free(struct sync *s)
{
    if (s == NULL) {
        return;
    }
    if (s->pool_ready) {
        http_pool_free(&s->pool);
    }
    free(s->url_tmpl);
    free(s->method);
    http_free_secret(s->auth_header);
    free(s);
}

/* The auth header from the environment, read once (its value never
 * quoted). Two settings make it: the one set without the other is blamed.
 * 0, or -1 with r. */
static int
read_auth(struct sync *s, const char *name, const char *env, struct setting_refusal *r)
{
    if (name != NULL && env == NULL) {
        return setting_refuse(r, "auth_header",
                              "needs auth_env too (the environment variable holding its value)");
    }
    if (env != NULL && name == NULL) {
        return setting_refuse(r, "auth_env",
                              "needs auth_header too (the header it is the value of)");
    }
    if (name == NULL) {
        return 0;
    }
    if (*name == '\0' || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789!#$%&'*+-.^_`|~") != strlen(name)) {
        return setting_refuse(r, "auth_header", "must be a header name such as Authorization");
    }
    const char *value = getenv(env);
    if (value == NULL || *value == '\0') {
        return setting_refuse(r, "auth_env", "%.64s is not set or empty in twiced's environment",
                              env);
    }
    if (strpbrk(value, "\r\n") != NULL) {
        return setting_refuse(r, "auth_env", "the value of %.64s holds a line break", env);
    }
    if (asprintf(&s->auth_header, "%s: %s", name, value) < 0) {
        s->auth_header = NULL;
        return setting_refuse(r, NULL, "out of memory");
    }
    return 0;
}

/* Every setting, checked and kept in s. 0, or -1 with r. */
static int
read_settings(struct sync *s, const twice_settings *set, struct setting_refusal *r)
{
    const twice_api *api = s->api;
    const char *url = api->setting(set, "url"), *method = api->setting(set, "method");
    if (http_check_url(url, r) != 0) {
        return -1;
    }
    if (method == NULL || (strcmp(method, "PUT") != 0 && strcmp(method, "POST") != 0)) {
        return setting_refuse(r, "method", "must be PUT or POST");
    }
    if (http_check_timeout(api, set, 600, &s->timeout, r) != 0) {
        return -1;
    }
    s->url_tmpl = strdup(url);
    s->method = strdup(method);
    if (s->url_tmpl == NULL || s->method == NULL) {
        return setting_refuse(r, NULL, "out of memory");
    }
    return read_auth(s, api->setting(set, "auth_header"), api->setting(set, "auth_env"), r);
}

static int
sync_init(const twice_api *api, const twice_settings *set, void **state)
{
    struct sync *s = calloc(1, sizeof(*s));
    struct setting_refusal r = {NULL, "out of memory"};
    int rc = -1;
    if (s != NULL && http_pool_init(&s->pool) == 0) {
        s->pool_ready = 1;
        s->api = api;
        rc = read_settings(s, set, &r);
    }
    if (http_init_finish(api, set, rc, &r) != 0) {
        sync_free(s);
        return -1;
    }
    *state = s;
    return 0;
}

static void
sync_fini(void *state)
{
    sync_free(state); /* the pooled handles before curl_global_cleanup */
    curl_global_cleanup();
}

/* The request's headers; NULL when out of memory. The job's trace context
 * goes along as `traceparent` (W3C), so the endpoint's spans join the job's
 * trace; a 1.0 host has none to give. */
static struct curl_slist *
request_headers(const struct sync *s, const twice_job *job)
{
    const char *tp = TWICE_API_HAS(s->api, traceparent) ? s->api->traceparent(job) : NULL;
    struct curl_slist *h = NULL;
    if (http_header_add(&h, "%s", "Content-Type: application/json") != 0 ||
        http_header_add(&h, "%s", "Accept: application/json") != 0 ||
        http_header_add(&h, "%s", "Expect:") != 0 ||
        http_header_add(&h, "Idempotency-Key: %s", s->api->key(job)) != 0 ||
        (s->auth_header != NULL && http_header_add(&h, "%s", s->auth_header) != 0) ||
        (tp != NULL && http_header_add(&h, "traceparent: %s", tp) != 0)) {
        return NULL;
    }
    return h;
}

/* One request, on an easy handle this call has to itself (from the pool). */
static twice_status
send_record(const struct sync *s, twice_job *job, CURL *c, const char *url, const char *data,
            size_t len)
{
    char errbuf[CURL_ERROR_SIZE];
    struct http_answer ans;
    long status;
    struct curl_slist *headers = request_headers(s, job);
    if (headers == NULL) {
        s->api->error(job, "out of memory preparing the request");
        return TWICE_RETRY;
    }
    struct http_request r = {url,     s->method, s->timeout, NULL, "twice-sync/1.0",
                             headers, data,      len};
    CURLcode rc = http_perform(c, &r, &ans, &status, errbuf);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK) {
        s->api->error(job, "%s failed: %s", s->method, errbuf);
        http_note_unavailable(s->api, job, rc, 0, -1, 0);
        return TWICE_RETRY;
    }
    return sync_verdict(s->api, job, status, &ans);
}

static twice_status
sync_handle(void *state, twice_job *job)
{
    struct sync *s = state;
    size_t len = 0;
    char *url = NULL;
    const char *data = s->api->field_json(job, "data", &len);
    if (data == NULL) {
        s->api->error(job, "message has no data");
        return TWICE_REJECT;
    }
    if (data[0] != '{') {
        s->api->error(job, "data must be a JSON object");
        return TWICE_REJECT;
    }
    struct http_handle *p = http_pool_take(&s->pool);
    if (p == NULL) {
        s->api->error(job, "curl_easy_init failed");
        return TWICE_RETRY;
    }
    twice_status st = http_url_build(s->api, job, p->curl, s->url_tmpl, &url);
    if (st == TWICE_DONE) {
        st = send_record(s, job, p->curl, url, data, len);
    }
    free(url);
    http_pool_give(&s->pool, p);
    return st;
}

static const twice_setting sync_settings[] = {
    {"url", TWICE_SETTING_STRING, 1, NULL,
     "endpoint template, e.g. https://crm.example.com/api/{entity}/{id} (fields URL-escaped)"},
    {"method", TWICE_SETTING_STRING, 0, "PUT", "PUT or POST"},
    {"auth_header", TWICE_SETTING_STRING, 0, NULL,
     "header to authenticate with, e.g. "
     "Authorization (needs auth_env)"},
    {"auth_env", TWICE_SETTING_STRING, 0, NULL,
     "environment variable holding that header's value (read once; never logged)"},
    {"timeout", TWICE_SETTING_INT, 0, "10", "seconds for the whole request (1-600)"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "sync", .version = "1.0.0", .key_template = "sync:{entity}:{id}:{version}",
             .settings = sync_settings, .init = sync_init, .handle = sync_handle,
             .fini = sync_fini)
