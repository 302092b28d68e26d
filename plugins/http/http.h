/*
 * http.h - what the http plugin's files share: the answer mapping
 * (mapping.c: which statuses mean DONE, RETRY and REJECT, as the settings
 * say) and the plugin's configuration (http.c). The connection pool, the
 * reading of answers and the URL template are http-common's. Internal to
 * the plugin (hidden visibility); not an SDK header.
 */
#ifndef TWICE_HTTP_PLUGIN_H
#define TWICE_HTTP_PLUGIN_H

#include "http_common.h"

#include <stddef.h>
#include <twice/plugin.h>

/* What a status maps to. */
enum http_outcome {
    HTTP_UNMAPPED = 0, /* in no list: RETRY as an unexpected answer */
    HTTP_DONE,
    HTTP_RETRY,
    HTTP_REJECT
};

/* done_statuses, retry_statuses and reject_statuses, compiled: a status's
 * own entry wins over its class's ("429" over "4xx"). */
struct http_mapping {
    unsigned char exact[600]; /* enum http_outcome by status, 100-599 */
    unsigned char klass[6];   /* by class, 1-5 ("4xx") */
};

/* Compile the three lists ("2xx", "429,5xx": statuses 100-599 and classes
 * 1xx-5xx, separated by commas and spaces), in that order. 0, or -1 with r
 * blaming the list with a bad item ("'6xx' is not a status (100-599) or a
 * class of them (1xx-5xx)") or the later of two lists that give one entry
 * ("429 is also in retry_statuses"). */
int http_mapping_compile(struct http_mapping *m, const char *done, const char *retry,
                         const char *reject, struct setting_refusal *r);

/* What status maps to. */
enum http_outcome http_mapping_of(const struct http_mapping *m, long status);

/*
 * The job's fate from the answer: Twice-Retry-After asks for a RETRY after
 * that many seconds whatever the status; else the mapping, Retry-After
 * honoured on a RETRY; an unmapped status is a RETRY. A 503, and a 429 with
 * Retry-After, that map to RETRY also call api->downstream_unavailable()
 * (with Retry-After's seconds, 0 without): the endpoint is down, not the
 * job at fault, so the queue's circuit breaker counts it. The error text is
 * "HTTP <status>: <first kilobyte of the answer, made printable>".
 */
twice_status http_verdict(const twice_api *api, twice_job *job, const struct http_mapping *m,
                          long status, const struct http_answer *a);

#endif
