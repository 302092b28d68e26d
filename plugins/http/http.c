/*
 * http.c - the http plugin: POST each job's body to an HTTP endpoint
 * (typically a sidecar in any language on localhost) with the job's key as
 * Idempotency-Key, and map the answer to DONE, RETRY or REJECT. Settings,
 * init/fini, describe() and the request are here; the mapping is
 * mapping.c's; the kept-alive connections, the reading of answers and the
 * URL template are http-common's. Not a general HTTP client: one POST per
 * job, no redirects, TLS always verified.
 */
#include "http.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <twice/plugin.h>
#include <unistd.h>

#define TOKEN_MAX 8192 /* bytes of a bearer token file */

/* Read-only after init except the pool (its own lock): handle() runs on
 * many threads. All owned. */
struct http_plugin {
    const twice_api *api;
    char *url_tmpl;
    char *content_type; /* "Content-Type: ..." */
    char *auth;         /* "Authorization: Bearer ..." or NULL; a secret: never logged */
    char *ca_file;      /* or NULL: the system's CA store */
    long timeout;
    struct http_mapping map;
    int pool_ready;
    struct http_pool pool;
};

static void
http_free(struct http_plugin *h)
{
    if (h == NULL) {
        return;
    }
    if (h->pool_ready) {
        http_pool_free(&h->pool);
    }
    free(h->url_tmpl);
    free(h->content_type);
    free(h->ca_file);
    http_free_secret(h->auth);
    free(h);
}

/* The bearer token from token_file: its first line, trimmed. NULL when all
 * is well (h->auth set), else why not in err (never quoting the token). */
static const char *
read_token(struct http_plugin *h, const char *path, char *err, size_t errlen)
{
    char token[TOKEN_MAX + 2];
    struct stat st;
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        snprintf(err, errlen, "token_file %s: %s", path, strerror(errno));
        return err;
    }
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH) != 0) {
        h->api->log(NULL, TWICE_LOG_WARN, "token_file %s is readable by others (chmod o-r %s)",
                    path, path);
    }
    size_t n = fread(token, 1, sizeof(token) - 1, f);
    fclose(f);
    token[n] = '\0';
    size_t start = strspn(token, " \t\r\n"), len = strcspn(token + start, "\r\n");
    while (len > 0 && isspace((unsigned char) token[start + len - 1])) {
        len--;
    }
    const char *problem = n > TOKEN_MAX ? "is larger than 8 KiB" : len == 0 ? "is empty" : NULL;
    for (size_t i = 0; problem == NULL && i < len; i++) {
        unsigned char c = (unsigned char) token[start + i];
        problem = c < 0x21 || c == 0x7f ? "holds a space or a control character" : NULL;
    }
    if (problem == NULL &&
        asprintf(&h->auth, "Authorization: Bearer %.*s", (int) len, token + start) < 0) {
        h->auth = NULL;
        problem = "cannot be read: out of memory";
    }
    explicit_bzero(token, sizeof(token));
    if (problem != NULL) {
        snprintf(err, errlen, "token_file %s %s", path, problem);
        return err;
    }
    return NULL;
}

/* ca_file, when set, is a file we can read. NULL, or why not in err. */
static const char *
check_ca_file(const char *ca, char *err, size_t errlen)
{
    struct stat st;
    if (ca == NULL) {
        return NULL;
    }
    if (stat(ca, &st) != 0 || access(ca, R_OK) != 0) {
        snprintf(err, errlen, "ca_file %s: %s", ca, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "ca_file %s: not a regular file", ca);
    } else {
        return NULL;
    }
    return err;
}

/* The settings that describe() reads too: url, timeout, content type and
 * the mapping. NULL, or why they are unusable. */
static const char *
check_settings(const twice_api *api, const twice_settings *set, struct http_mapping *map,
               char *err, size_t errlen)
{
    const char *url = api->setting(set, "url"), *ct = api->setting(set, "content_type");
    const char *timeout = api->setting(set, "timeout");
    const char *why;
    if (url == NULL ||
        (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)) {
        return "url must start with http:// or https://";
    }
    if ((why = http_url_check(url)) != NULL) {
        return why;
    }
    if (ct == NULL || *ct == '\0' || strpbrk(ct, "\r\n") != NULL) {
        return "content_type must be a media type on one line, such as application/json";
    }
    long t = timeout != NULL ? strtol(timeout, NULL, 10) : 0;
    if (t < 1 || t > 3600) {
        return "timeout must be 1-3600 seconds";
    }
    if (http_mapping_compile(map, api->setting(set, "done_statuses"),
                             api->setting(set, "retry_statuses"),
                             api->setting(set, "reject_statuses"), err, errlen) != 0) {
        return err;
    }
    return NULL;
}

static const char *
read_settings(struct http_plugin *h, const twice_settings *set, char *err, size_t errlen)
{
    const twice_api *api = h->api;
    const char *why = check_settings(api, set, &h->map, err, errlen);
    if (why != NULL) {
        return why;
    }
    const char *ca = api->setting(set, "ca_file"), *token = api->setting(set, "token_file");
    if ((why = check_ca_file(ca, err, errlen)) != NULL) {
        return why;
    }
    h->timeout = strtol(api->setting(set, "timeout"), NULL, 10);
    h->url_tmpl = strdup(api->setting(set, "url"));
    h->ca_file = ca != NULL ? strdup(ca) : NULL;
    if (asprintf(&h->content_type, "Content-Type: %s", api->setting(set, "content_type")) < 0) {
        h->content_type = NULL;
    }
    if (h->url_tmpl == NULL || h->content_type == NULL || (ca != NULL && h->ca_file == NULL)) {
        return "out of memory";
    }
    return token != NULL ? read_token(h, token, err, errlen) : NULL;
}

static int
http_init(const twice_api *api, const twice_settings *set, void **state)
{
    struct http_plugin *h = calloc(1, sizeof(*h));
    char err[256];
    const char *why = "out of memory";
    if (h != NULL && http_pool_init(&h->pool) == 0) {
        h->pool_ready = 1;
        h->api = api;
        why = read_settings(h, set, err, sizeof(err));
    }
    if (why == NULL && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        why = "curl_global_init failed";
    }
    if (why != NULL) {
        api->log(NULL, TWICE_LOG_ERROR, "%s", why);
        http_free(h);
        return -1;
    }
    *state = h;
    return 0;
}

static void
http_fini(void *state)
{
    http_free(state); /* the pooled handles before curl_global_cleanup */
    curl_global_cleanup();
}

/* The request's headers (NULL when out of memory): the key, the job's
 * message id, attempt and queue, its trace context when the host has one,
 * the content type and the bearer token. */
static struct curl_slist *
request_headers(const struct http_plugin *h, const twice_job *job)
{
    const twice_api *api = h->api;
    struct curl_slist *l = NULL;
    char attempt[16];
    snprintf(attempt, sizeof(attempt), "%d", api->attempt(job));
    const char *queue = TWICE_API_HAS(api, queue) ? api->queue(job) : NULL;
    const char *trace = TWICE_API_HAS(api, traceparent) ? api->traceparent(job) : NULL;
    if (http_header_add(&l, "Idempotency-Key: %s", api->key(job)) != 0 ||
        http_header_add(&l, "X-Twice-Message-Id: %s", api->message_id(job)) != 0 ||
        http_header_add(&l, "X-Twice-Attempt: %s", attempt) != 0 ||
        (queue != NULL && http_header_add(&l, "X-Twice-Queue: %s", queue) != 0) ||
        (trace != NULL && http_header_add(&l, "traceparent: %s", trace) != 0) ||
        http_header_add(&l, "%s", h->content_type) != 0 ||
        http_header_add(&l, "%s", "Expect:") != 0 ||
        (h->auth != NULL && http_header_add(&l, "%s", h->auth) != 0)) {
        return NULL;
    }
    return l;
}

/* One POST, on an easy handle this call has to itself (from the pool). */
static twice_status
post(const struct http_plugin *h, twice_job *job, CURL *c, const char *url)
{
    char errbuf[CURL_ERROR_SIZE];
    struct http_answer ans;
    size_t len = 0;
    long status;
    const char *body = h->api->body(job, &len);
    struct curl_slist *headers = request_headers(h, job);
    if (headers == NULL) {
        h->api->error(job, "out of memory preparing the request");
        return TWICE_RETRY;
    }
    struct http_request r = {url,     "POST", h->timeout, h->ca_file, "twice-http/1.0",
                             headers, body,   len};
    CURLcode rc = http_perform(c, &r, &ans, &status, errbuf);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK) {
        h->api->error(job, "POST failed: %s", errbuf);
        return TWICE_RETRY;
    }
    return http_verdict(h->api, job, &h->map, status, &ans);
}

static twice_status
http_handle(void *state, twice_job *job)
{
    struct http_plugin *h = state;
    char *url = NULL;
    struct http_handle *p = http_pool_take(&h->pool);
    if (p == NULL) {
        h->api->error(job, "curl_easy_init failed");
        return TWICE_RETRY;
    }
    twice_status st = http_url_build(h->api, job, p->curl, h->url_tmpl, &url);
    if (st == TWICE_DONE) {
        st = post(h, job, p->curl, url);
    }
    free(url);
    http_pool_give(&h->pool, p);
    return st;
}

/* For `twicectl plugin check`: the request and the mapping under these
 * settings. The url is shown without its query (it may carry a secret). */
static int
http_describe(const twice_api *api, const twice_settings *set, char *buf, size_t cap)
{
    struct http_mapping map;
    char err[256];
    const char *why = check_settings(api, set, &map, err, sizeof(err));
    if (why != NULL) {
        snprintf(buf, cap, "%s", why);
        return -1;
    }
    const char *url = api->setting(set, "url");
    snprintf(buf, cap,
             "POST the body to %.*s%s (Content-Type: %s; %s s per request, TLS verified%s)\n"
             "Idempotency-Key, X-Twice-Message-Id, X-Twice-Attempt, X-Twice-Queue, "
             "traceparent when known\n"
             "%s: DONE\n"
             "%s: RETRY, after Retry-After when the answer has one\n"
             "%s: REJECT, dead letter with the status and the first 1 KB of the answer\n"
             "any status with a Twice-Retry-After header: RETRY after that delay\n"
             "other statuses, connection failures, timeouts: RETRY",
             (int) strcspn(url, "?"), url, strchr(url, '?') != NULL ? "?..." : "",
             api->setting(set, "content_type"), api->setting(set, "timeout"),
             api->setting(set, "token_file") != NULL ? ", bearer token" : "",
             api->setting(set, "done_statuses"), api->setting(set, "retry_statuses"),
             api->setting(set, "reject_statuses"));
    return 0;
}

static const twice_setting http_settings[] = {
    {"url", TWICE_SETTING_STRING, 1, NULL,
     "endpoint template, e.g. http://127.0.0.1:8080/jobs/{type} (fields URL-escaped)"},
    {"key", TWICE_SETTING_STRING, 0, NULL,
     "key template, e.g. invoice:{invoiceId}; needed unless every queue using the plugin "
     "sets key"},
    {"content_type", TWICE_SETTING_STRING, 0, "application/json", "Content-Type of the body"},
    {"timeout", TWICE_SETTING_INT, 0, "30", "seconds for one request (1-3600)"},
    {"ca_file", TWICE_SETTING_STRING, 0, NULL,
     "CA bundle to verify an https endpoint with (default: the system's)"},
    {"token_file", TWICE_SETTING_STRING, 0, NULL,
     "file holding a bearer token for Authorization (read once; never logged)"},
    {"done_statuses", TWICE_SETTING_STRING, 0, "2xx", "statuses meaning DONE"},
    {"retry_statuses", TWICE_SETTING_STRING, 0, "429,5xx",
     "statuses meaning RETRY (Retry-After honoured)"},
    {"reject_statuses", TWICE_SETTING_STRING, 0, "4xx",
     "statuses meaning REJECT (a status beats its class: 429 over 4xx)"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "http", .version = "1.0.0", .key_setting = "key", .settings = http_settings,
             .init = http_init, .handle = http_handle, .fini = http_fini,
             .describe = http_describe)
