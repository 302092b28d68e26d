/*
 * sync.c - the sync plugin: PUT (or POST) a record's `data` to an HTTP
 * endpoint with libcurl, the idempotency key in an Idempotency-Key header,
 * keyed "sync:{entity}:{id}:{version}". Settings, init/fini and the request
 * are here; reading the answer is in answer.c. Not a general HTTP client.
 */
#include "sync.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <twice/plugin.h>

/*
 * Connections are reused, not set up per message: an easy handle keeps its
 * connections (and TLS sessions) open after a transfer, so handles are kept
 * in a pool, taken by handle() and given back after the request. handle()
 * runs on several threads at once and an easy handle serves one transfer at
 * a time, so the pool grows to at most the queue's concurrency and each
 * handle keeps its own keep-alive connection to the endpoint.
 *
 * Why not the alternatives: a CURLSH sharing CURL_LOCK_DATA_CONNECT is
 * documented by libcurl as "not supported" between concurrent threads
 * (CURLSHOPT_SHARE(3)); a per-thread handle behind a pthread key needs a
 * destructor that runs at thread exit, possibly after fini, and fini could
 * not reach the other threads' handles. The pool needs one mutex held for a
 * list push or pop, and fini (no handle() running) finds every handle in it.
 */
struct pooled {
    CURL *curl;
    struct pooled *next;
};

/* Read-only after init except the pool (under pool_lock): handle() runs on
 * many threads. All owned. */
struct sync {
    const twice_api *api;
    char *url_tmpl;
    char *method;      /* "PUT" or "POST" */
    char *auth_header; /* "Name: value" or NULL; a secret: never logged */
    long timeout;
    pthread_mutex_t pool_lock;
    struct pooled *idle; /* idle handles, the most recently used first */
};

static void
sync_free(struct sync *s)
{
    if (s == NULL) {
        return;
    }
    while (s->idle != NULL) {
        struct pooled *p = s->idle;
        s->idle = p->next;
        curl_easy_cleanup(p->curl);
        free(p);
    }
    pthread_mutex_destroy(&s->pool_lock);
    free(s->url_tmpl);
    free(s->method);
    if (s->auth_header != NULL) {
        explicit_bzero(s->auth_header, strlen(s->auth_header));
        free(s->auth_header);
    }
    free(s);
}

/* The auth header from the environment, read once. NULL when all is well,
 * else why not (never quoting the value). */
static const char *
read_auth(struct sync *s, const char *name, const char *env)
{
    if ((name == NULL) != (env == NULL)) {
        return "auth_header and auth_env go together: set both or neither";
    }
    if (name == NULL) {
        return NULL;
    }
    if (*name == '\0' || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789!#$%&'*+-.^_`|~") != strlen(name)) {
        return "auth_header must be a header name such as Authorization";
    }
    const char *value = getenv(env);
    if (value == NULL || *value == '\0') {
        return "the environment variable named by auth_env is not set or empty";
    }
    if (strpbrk(value, "\r\n") != NULL) {
        return "the environment variable named by auth_env holds a line break";
    }
    if (asprintf(&s->auth_header, "%s: %s", name, value) < 0) {
        s->auth_header = NULL;
        return "out of memory";
    }
    return NULL;
}

static const char *
read_settings(struct sync *s, const twice_settings *set)
{
    const twice_api *api = s->api;
    const char *url = api->setting(set, "url"), *method = api->setting(set, "method");
    const char *timeout = api->setting(set, "timeout");
    const char *why;
    if (url == NULL ||
        (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)) {
        return "url must start with http:// or https://";
    }
    if ((why = url_check(url)) != NULL) {
        return why;
    }
    if (method == NULL || (strcmp(method, "PUT") != 0 && strcmp(method, "POST") != 0)) {
        return "method must be PUT or POST";
    }
    s->timeout = timeout != NULL ? strtol(timeout, NULL, 10) : 10;
    if (s->timeout < 1 || s->timeout > 600) {
        return "timeout must be 1-600 seconds";
    }
    s->url_tmpl = strdup(url);
    s->method = strdup(method);
    if (s->url_tmpl == NULL || s->method == NULL) {
        return "out of memory";
    }
    return read_auth(s, api->setting(set, "auth_header"), api->setting(set, "auth_env"));
}

static int
sync_init(const twice_api *api, const twice_settings *set, void **state)
{
    struct sync *s = calloc(1, sizeof(*s));
    const char *why = "out of memory";
    if (s != NULL && pthread_mutex_init(&s->pool_lock, NULL) != 0) {
        free(s);
        s = NULL;
    }
    if (s == NULL || (s->api = api, why = read_settings(s, set)) != NULL) {
        api->log(NULL, TWICE_LOG_ERROR, "%s", why);
        sync_free(s);
        return -1;
    }
    /* Reference counted: safe even when the host called it already. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        api->log(NULL, TWICE_LOG_ERROR, "curl_global_init failed");
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

/* An idle handle from the pool, or a new one; NULL when out of memory. */
static struct pooled *
pool_take(struct sync *s)
{
    pthread_mutex_lock(&s->pool_lock);
    struct pooled *p = s->idle;
    if (p != NULL) {
        s->idle = p->next;
    }
    pthread_mutex_unlock(&s->pool_lock);
    if (p != NULL) {
        return p;
    }
    if ((p = malloc(sizeof(*p))) == NULL) {
        return NULL;
    }
    if ((p->curl = curl_easy_init()) == NULL) {
        free(p);
        return NULL;
    }
    return p;
}

/* Back to the pool after a request. curl_easy_reset() puts every option
 * back to its default (so the next message starts as on a new handle and
 * no pointer into this message's memory is kept) but keeps the open
 * connections, the DNS cache and the TLS sessions. */
static void
pool_give(struct sync *s, struct pooled *p)
{
    curl_easy_reset(p->curl);
    pthread_mutex_lock(&s->pool_lock);
    p->next = s->idle;
    s->idle = p;
    pthread_mutex_unlock(&s->pool_lock);
}

/* The request's headers; NULL when out of memory. The job's trace context
 * goes along as `traceparent` (W3C), so the endpoint's spans join the job's
 * trace; a 1.0 host has none to give. */
static struct curl_slist *
request_headers(const struct sync *s, const twice_job *job)
{
    char idem[TWICE_KEY_MAX + 32], trace[96] = "";
    struct curl_slist *h = NULL, *next;
    snprintf(idem, sizeof(idem), "Idempotency-Key: %s", s->api->key(job));
    const char *tp = TWICE_API_HAS(s->api, traceparent) ? s->api->traceparent(job) : NULL;
    if (tp != NULL) {
        snprintf(trace, sizeof(trace), "traceparent: %s", tp);
    }
    const char *lines[] = {"Content-Type: application/json",
                           "Accept: application/json",
                           "Expect:",
                           idem,
                           s->auth_header,
                           tp != NULL ? trace : NULL};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (lines[i] == NULL) {
            continue;
        }
        if ((next = curl_slist_append(h, lines[i])) == NULL) {
            curl_slist_free_all(h);
            return NULL;
        }
        h = next;
    }
    return h;
}

static void
set_options(const struct sync *s, CURL *c, const char *url, struct curl_slist *headers,
            const char *data, size_t len)
{
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, s->timeout);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    /* Certificate and host name checks are curl's defaults and never
     * switched off here. */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "twice-sync/1.0");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, data);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, s->method);
}

/* One request, on an easy handle this call has to itself (from the pool). */
static twice_status
send_record(const struct sync *s, twice_job *job, CURL *c, const char *url, const char *data,
            size_t len)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    struct answer ans;
    struct curl_slist *headers = request_headers(s, job);
    if (headers == NULL) {
        s->api->error(job, "out of memory preparing the request");
        return TWICE_RETRY;
    }
    answer_init(&ans);
    set_options(s, c, url, headers, data, len);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, answer_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &ans);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, answer_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &ans);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK) {
        s->api->error(job, "%s failed: %s", s->method,
                      *errbuf != '\0' ? errbuf : curl_easy_strerror(rc));
        return TWICE_RETRY;
    }
    return answer_verdict(s->api, job, status, &ans);
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
    struct pooled *p = pool_take(s);
    if (p == NULL) {
        s->api->error(job, "curl_easy_init failed");
        return TWICE_RETRY;
    }
    twice_status st = url_build(s->api, job, p->curl, s->url_tmpl, &url);
    if (st == TWICE_DONE) {
        st = send_record(s, job, p->curl, url, data, len);
    }
    free(url);
    pool_give(s, p);
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
