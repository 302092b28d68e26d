/*
 * http_common.h - what the bundled plugins that talk HTTP (sync, http)
 * share, linked into each as a static library: a pool of libcurl easy
 * handles that keeps connections alive across jobs (pool.c), making a
 * request (request.c), the reading of an answer - its first bytes,
 * Retry-After and Twice-Retry-After - (answer.c), URL templates filled
 * from the body (url.c), and the url and timeout settings checked and the
 * end of init (settings.c; the refusal itself is settings-common's). What an answer
 * means for a job stays in each plugin. Not an SDK header.
 */
#ifndef TWICE_HTTP_COMMON_H
#define TWICE_HTTP_COMMON_H

#include <curl/curl.h>
#include "settings_common.h"

#include <pthread.h>
#include <stddef.h>
#include <time.h>
#include <twice/plugin.h>

/* ---- pool.c ---- */

/*
 * Connections are reused, not set up per message: an easy handle keeps its
 * connections (and TLS sessions) open after a transfer, so handles are kept
 * in a pool, taken by handle() and given back after the request. handle()
 * runs on several threads at once and an easy handle serves one transfer at
 * a time, so the pool grows to at most the number of concurrent jobs and
 * each handle keeps its own keep-alive connection to the endpoint.
 *
 * Why not the alternatives: a CURLSH sharing CURL_LOCK_DATA_CONNECT is
 * documented by libcurl as "not supported" between concurrent threads
 * (CURLSHOPT_SHARE(3)); a per-thread handle behind a pthread key needs a
 * destructor that runs at thread exit, possibly after fini, and fini could
 * not reach the other threads' handles. The pool needs one mutex held for a
 * list push or pop, and fini (no handle() running) finds every handle in it.
 */
struct http_handle {
    CURL *curl;
    struct http_handle *next;
};

struct http_pool {
    pthread_mutex_t lock;
    struct http_handle *idle; /* the most recently used first; owned */
};

/* 0, or -1 (no mutex). */
int http_pool_init(struct http_pool *p);
/* Clean up every idle handle (all must have been given back). */
void http_pool_free(struct http_pool *p);
/* An idle handle, or a new one; NULL when out of memory. The caller owns
 * it until http_pool_give. */
struct http_handle *http_pool_take(struct http_pool *p);
/* Back to the pool: every option reset to its default (no pointer into
 * this job's memory is kept), the connections, DNS cache and TLS sessions
 * kept. */
void http_pool_give(struct http_pool *p, struct http_handle *h);

/* ---- answer.c ---- */

/* Bytes of a response body kept for the error text: the first kilobyte. */
#define HTTP_ANSWER_BODY_MAX 1024

/* What came back: the first bytes of the body and the delays asked for. */
struct http_answer {
    char body[HTTP_ANSWER_BODY_MAX];
    size_t len;             /* kept, at most HTTP_ANSWER_BODY_MAX */
    long retry_after;       /* Retry-After in seconds, -1 when absent or unreadable */
    long twice_retry_after; /* Twice-Retry-After in seconds, -1 likewise */
};

void http_answer_init(struct http_answer *a);
/* libcurl write and header callbacks; arg is the struct http_answer. */
size_t http_answer_body(char *buf, size_t size, size_t nitems, void *arg);
size_t http_answer_header(char *buf, size_t size, size_t nitems, void *arg);

/* A Retry-After value (delta-seconds or an HTTP date) as seconds from now;
 * a date in the past is 0; -1 when it is neither. */
long http_retry_after(const char *value, time_t now);

/* in[0..len) as printable text for an error: line breaks and tabs become
 * spaces, other control bytes and broken UTF-8 '?'. out gets at most
 * cap - 1 bytes and a NUL; a cap of 0 leaves it untouched. */
void http_sanitize(const char *in, size_t len, char *out, size_t cap);

/* What follows "HTTP 429" in an error about an answer: ": " and its body
 * (in[0..len), sanitized), or " (empty body)" when the body is empty or only
 * white space, so no message ends in a dangling ": ". out gets at most
 * cap - 1 bytes and a NUL (a body cut to fit); cap must be at least 16. */
void http_body_shown(const char *in, size_t len, char *out, size_t cap);

/* ---- request.c ---- */

/* One request as the plugins make it. */
struct http_request {
    const char *url;
    const char *method;  /* "POST", "PUT" */
    long timeout;        /* seconds for the whole exchange */
    const char *ca_file; /* whom to trust for https, NULL: the system's CA store */
    const char *user_agent;
    const struct curl_slist *headers;
    const char *body;
    size_t len;
};

/*
 * Make the request on c (a handle of the pool) and read the answer into
 * ans: http and https only, no redirects, no signals, certificates and
 * host names verified (curl's defaults, never switched off). CURLE_OK and
 * *status; else the error, its text in errbuf (CURL_ERROR_SIZE bytes).
 */
CURLcode http_perform(CURL *c, const struct http_request *r, struct http_answer *ans, long *status,
                      char *errbuf);

/* 1 when rc means the endpoint could not be reached or answered nothing
 * (resolve, connect, timeout, a dropped connection): an outage of the
 * endpoint rather than a problem of one request. */
int http_unreachable(CURLcode rc);

/* Tell the host's circuit breaker when the endpoint, not the job, failed:
 * the transfer could not reach it (rc, as http_unreachable says), or it
 * answered a 503, or a 429 saying for how long (status; rc CURLE_OK). The
 * answer's Retry-After (retry_after seconds, -1 when absent), at most cap,
 * lengthens the breaker's cooldown. The one rule of http and sync. */
void http_note_unavailable(const twice_api *api, twice_job *job, CURLcode rc, long status,
                           long retry_after, long cap);

/* Append the header line fmt (with one %s for value) to *l. 0, or -1 when
 * out of memory (the list is then freed and *l NULL). */
int http_header_add(struct curl_slist **l, const char *fmt, const char *value);

/* Wipe and free a secret (a token, an Authorization line); NULL is fine. */
void http_free_secret(char *s);

/* ---- settings.c ---- */

/* The end of an HTTP plugin's init(), rc being what its settings gave: when
 * 0, libcurl set up (reference counted: safe even when the host called it
 * already); when that fails or rc is not 0, r said to the host. 0, or -1:
 * the plugin then frees its state and returns nonzero. */
int http_init_finish(const twice_api *api, const twice_settings *set, int rc,
                     struct setting_refusal *r);

/* The setting "timeout" in seconds, 1 to max (an INT setting with a
 * default, so never NULL). 0 and *out, or -1 with r. */
int http_check_timeout(const twice_api *api, const twice_settings *set, long max, long *out,
                       struct setting_refusal *r);

/* The setting "url": http:// or https:// and a usable template
 * (http_url_check); NULL (unset) is refused too. 0, or -1 with r blaming
 * "url". */
int http_check_url(const char *url, struct setting_refusal *r);

/* ---- url.c ---- */

/* Is tmpl a usable URL template ({path} fields of [A-Za-z0-9_.-], no stray
 * braces)? NULL, or why not, without the word url ("has a '}' without its
 * '{'"). */
const char *http_url_check(const char *tmpl);

/* url as it may be shown (twicectl plugin check, a log line), in out (cap
 * bytes, cut to fit): a password in its userinfo replaced by ***
 * ("http://bob:***@host/x"; userinfo without a password: "***@host"), and
 * a query or fragment by "?...". */
void http_url_shown(const char *url, char *out, size_t cap);

/*
 * Expand the template with the job's body fields, each URL-escaped with
 * curl_easy_escape (so "a/b" stays one path segment). TWICE_DONE and *out
 * (malloc'd, the caller frees), or TWICE_REJECT after api->error() when a
 * field is missing or empty, or TWICE_RETRY when out of memory.
 */
twice_status http_url_build(const twice_api *api, twice_job *job, CURL *c, const char *tmpl,
                            char **out);

#endif
