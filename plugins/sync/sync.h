/*
 * sync.h - what the sync plugin's files share: the URL template (url.c)
 * and the reading of the endpoint's answer (answer.c). Internal to the
 * plugin (hidden visibility); not an SDK header.
 */
#ifndef SYNC_H
#define SYNC_H

#include <curl/curl.h>
#include <stddef.h>
#include <time.h>
#include <twice/plugin.h>

/* Bytes of a response body kept for the error text. */
#define ANSWER_BODY_MAX 512

/* Is tmpl a usable URL template ({path} fields of [A-Za-z0-9_.-], no stray
 * braces)? NULL, or why not. */
const char *url_check(const char *tmpl);

/*
 * Expand the template with the job's body fields, each URL-escaped with
 * curl_easy_escape (so "a/b" stays one path segment). TWICE_DONE and *out
 * (malloc'd, the caller frees), or TWICE_REJECT after api->error() when a
 * field is missing or empty, or TWICE_RETRY when out of memory.
 */
twice_status url_build(const twice_api *api, twice_job *job, CURL *c, const char *tmpl,
                       char **out);

/* What came back: the first ANSWER_BODY_MAX bytes and Retry-After. */
struct answer {
    char body[ANSWER_BODY_MAX];
    size_t len;
    long retry_after; /* seconds, or -1 when absent or unreadable */
};

void answer_init(struct answer *a);
/* libcurl write and header callbacks; arg is the struct answer. */
size_t answer_body(char *buf, size_t size, size_t nitems, void *arg);
size_t answer_header(char *buf, size_t size, size_t nitems, void *arg);

/* A Retry-After value (delta-seconds or an HTTP date) as seconds from now;
 * a date in the past is 0; -1 when it is neither. */
long answer_retry_after(const char *value, time_t now);

/* in[0..len) as printable text for an error: line breaks and tabs become
 * spaces, other control bytes and broken UTF-8 '?'. out gets at most
 * cap - 1 bytes and a NUL. */
void answer_sanitize(const char *in, size_t len, char *out, size_t cap);

/* DONE for 2xx and 409, RETRY for 408/429/5xx (honouring Retry-After) and
 * anything unexpected, REJECT for other 4xx; the error says "HTTP <status>:
 * <body>". */
twice_status answer_verdict(const twice_api *api, twice_job *job, long status,
                            const struct answer *a);

#endif
