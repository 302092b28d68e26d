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

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The bearer token from token_file: its first line, trimmed. 0 (h->auth
 * set), or -1 with r blaming token_file (never quoting the token). */
static int
read_token(struct http_plugin *h, const char *path, struct setting_refusal *r)
{
    char token[TOKEN_MAX + 2];
    struct stat st;
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        return setting_refuse(r, "token_file", "%s: %s", path, strerror(errno));
    }
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH) != 0) {
        h->api->log(NULL, TWICE_LOG_WARN, "token_file %s is readable by others (chmod o-r %s)",
                    path, path);
    }
    size_t n = fread(token, 1, sizeof(token) - 1, f);
    fclose(f);
    token[n] = '\0';
    size_t start = strspn(token, " \t\r\n"), len = strcspn(token + start, "\r\n");
    while (len > 0 && plugin_ascii_isspace((unsigned char) token[start + len - 1])) {
        len--;
    }
    const char *problem = n > TOKEN_MAX ? "is larger than 8 KiB" : len == 0 ? "is empty" : NULL;
    for (size_t i = 0; problem == NULL && i < len; i++) {
        unsigned char c = (unsigned char) token[start + i];
        problem = c < 0x21 || c == 0x7f ? "holds a space or a control character" : NULL;
    }
    int rc = 0;
    if (problem == NULL &&
        asprintf(&h->auth, "Authorization: Bearer %.*s", (int) len, token + start) < 0) {
        h->auth = NULL;
        rc = setting_refuse(r, NULL, "out of memory reading token_file %s", path);
    } else if (problem != NULL) {
        rc = setting_refuse(r, "token_file", "%s %s", path, problem);
    }
    explicit_bzero(token, sizeof(token));
    return rc;
}

/* ca_file, when set, is a file we can read. 0, or -1 with r. */
static int
check_ca_file(const char *ca, struct setting_refusal *r)
{
    struct stat st;
    if (ca == NULL) {
        return 0;
    }
    if (stat(ca, &st) != 0 || access(ca, R_OK) != 0) {
        return setting_refuse(r, "ca_file", "%s: %s", ca, strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        return setting_refuse(r, "ca_file", "%s: not a regular file", ca);
    }
    return 0;
}

/* The settings that describe() reads too: url, content type, timeout and
 * the mapping (compiled into map, the timeout in *timeout). 0, or -1 with
 * r. */
static int
check_settings(const twice_api *api, const twice_settings *set, struct http_mapping *map,
               long *timeout, struct setting_refusal *r)
{
    const char *ct = api->setting(set, "content_type");
    if (http_check_url(api->setting(set, "url"), r) != 0) {
        return -1;
    }
    if (ct == NULL || *ct == '\0' || strpbrk(ct, "\r\n") != NULL) {
        return setting_refuse(r, "content_type",
                              "must be a media type on one line, such as application/json");
    }
    if (http_check_timeout(api, set, 3600, timeout, r) != 0) {
        return -1;
    }
    return http_mapping_compile(map, api->setting(set, "done_statuses"),
                                api->setting(set, "retry_statuses"),
                                api->setting(set, "reject_statuses"), r);
}

/* Every setting, checked and kept in h. 0, or -1 with r. */
static int
read_settings(struct http_plugin *h, const twice_settings *set, struct setting_refusal *r)
{
    const twice_api *api = h->api;
    const char *ca = api->setting(set, "ca_file"), *token = api->setting(set, "token_file");
    if (check_settings(api, set, &h->map, &h->timeout, r) != 0 || check_ca_file(ca, r) != 0) {
        return -1;
    }
    h->url_tmpl = strdup(api->setting(set, "url"));
    h->ca_file = ca != NULL ? strdup(ca) : NULL;
    if (asprintf(&h->content_type, "Content-Type: %s", api->setting(set, "content_type")) < 0) {
        h->content_type = NULL;
    }
    if (h->url_tmpl == NULL || h->content_type == NULL || (ca != NULL && h->ca_file == NULL)) {
        return setting_refuse(r, NULL, "out of memory");
    }
    return token != NULL ? read_token(h, token, r) : 0;
}

static int
http_init(const twice_api *api, const twice_settings *set, void **state)
{
    struct http_plugin *h = calloc(1, sizeof(*h));
    struct setting_refusal r = {NULL, "out of memory"};
    int rc = -1;
    if (h != NULL && http_pool_init(&h->pool) == 0) {
        h->pool_ready = 1;
        h->api = api;
        rc = read_settings(h, set, &r);
    }
    if (http_init_finish(api, set, rc, &r) != 0) {
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

/* The bearer token, wherever the answer's kept text quotes it (a service
 * that echoes the Authorization header in its error), as '*': that text
 * goes to the log and into twice-error. A token cut off at the end of the
 * kept text is blanked as far as it goes. */
static void
blank_token(const struct http_plugin *h, struct http_answer *ans)
{
    static const char prefix[] = "Authorization: Bearer ";
    if (h->auth == NULL) {
        return;
    }
    const char *tok = h->auth + sizeof(prefix) - 1;
    size_t n = strlen(tok);
    char *at = ans->body, *end = ans->body + ans->len;
    if (n == 0) {
        return;
    }
    while ((at = memmem(at, (size_t) (end - at), tok, n)) != NULL) {
        memset(at, '*', n);
        at += n;
    }
    size_t most = n - 1 < ans->len ? n - 1 : ans->len;
    for (size_t k = most; k >= 8; k--) {
        if (memcmp(end - k, tok, k) == 0) {
            memset(end - k, '*', k);
            break;
        }
    }
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
        http_note_unavailable(h->api, job, rc, 0, -1, 0);
        return TWICE_RETRY;
    }
    blank_token(h, &ans);
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
 * settings. The url is shown without its password and query (they may be
 * secrets): http_url_shown. */
static int
http_describe(const twice_api *api, const twice_settings *set, char *buf, size_t cap)
{
    struct http_mapping map;
    struct setting_refusal r;
    long timeout;
    if (check_settings(api, set, &map, &timeout, &r) != 0) {
        setting_refusal_text(&r, buf, cap); /* "setting 'timeout': must be ..." */
        return -1;
    }
    char url[1024];
    http_url_shown(api->setting(set, "url"), url, sizeof(url));
    snprintf(buf, cap,
             "POST the body to %s (Content-Type: %s; %s s per request, TLS verified%s)\n"
             "Idempotency-Key, X-Twice-Message-Id, X-Twice-Attempt, X-Twice-Queue, "
             "traceparent when known\n"
             "%s: DONE\n"
             "%s: RETRY, after Retry-After when the answer has one\n"
             "%s: REJECT, dead letter with the status and the first 1 KB of the answer\n"
             "any status with a Twice-Retry-After header: RETRY after that delay\n"
             "other statuses, connection failures, timeouts: RETRY\n"
             "503 or 429 with Retry-After as a RETRY, connection failures, timeouts: "
             "endpoint unavailable (circuit breaker)",
             url, api->setting(set, "content_type"), api->setting(set, "timeout"),
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
