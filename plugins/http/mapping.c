/*
 * mapping.c - the http plugin's answer mapping: the status lists of its
 * settings compiled into a table, and the verdict on one answer (with
 * Retry-After and Twice-Retry-After; a 503, and a 429 with Retry-After,
 * mapped to RETRY say the endpoint is unavailable, for the queue's circuit
 * breaker). Not the request (http.c) nor the reading of the answer
 * (http-common's answer.c).
 */
#include "http.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEPARATORS ", \t"
#define MAX_DELAY  43200 /* the host's cap, SQS's longest visibility timeout */
#define ITEM_SHOWN 16

static const char *const outcome_names[] = {"", "done", "retry", "reject"};

/* One list item: a status "429" (*code) or a class "4xx" (*klass). */
static int
parse_item(const char *s, size_t n, int *code, int *klass)
{
    *code = *klass = 0;
    if (n != 3 || s[0] < '1' || s[0] > '5') {
        return -1;
    }
    if ((s[1] == 'x' || s[1] == 'X') && (s[2] == 'x' || s[2] == 'X')) {
        *klass = s[0] - '0';
        return 0;
    }
    if (isdigit((unsigned char) s[1]) && isdigit((unsigned char) s[2])) {
        *code = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
        return 0;
    }
    return -1;
}

/* Add one list (setting `name`) as outcome o. An item that is not a status
 * blames this list, and so does an entry an earlier list gives already:
 * this list is the one that says it again. Left at its default ("429,5xx"
 * after done_statuses = "2xx,5xx"), the host then points at the settings
 * group, where the operator sets it; the reason names the other list. */
static int
add_list(struct http_mapping *m, const char *name, const char *list, enum http_outcome o,
         struct setting_refusal *r)
{
    for (const char *p = list + strspn(list, SEPARATORS); *p != '\0'; p += strspn(p, SEPARATORS)) {
        size_t n = strcspn(p, SEPARATORS);
        int code, klass;
        if (parse_item(p, n, &code, &klass) != 0) {
            return setting_refuse(r, name,
                                  "'%.*s' is not a status (100-599) or a class of them (1xx-5xx)",
                                  (int) (n > ITEM_SHOWN ? ITEM_SHOWN : n), p);
        }
        unsigned char *slot = code != 0 ? &m->exact[code] : &m->klass[klass];
        if (*slot != HTTP_UNMAPPED && *slot != o) {
            return setting_refuse(r, name, "%.*s is also in %s_statuses", (int) n, p,
                                  outcome_names[*slot]);
        }
        *slot = (unsigned char) o;
        p += n;
    }
    return 0;
}

int
http_mapping_compile(struct http_mapping *m, const char *done, const char *retry,
                     const char *reject, struct setting_refusal *r)
{
    memset(m, 0, sizeof(*m));
    if (add_list(m, "done_statuses", done != NULL ? done : "", HTTP_DONE, r) != 0 ||
        add_list(m, "retry_statuses", retry != NULL ? retry : "", HTTP_RETRY, r) != 0 ||
        add_list(m, "reject_statuses", reject != NULL ? reject : "", HTTP_REJECT, r) != 0) {
        return -1;
    }
    return 0;
}

enum http_outcome
http_mapping_of(const struct http_mapping *m, long status)
{
    if (status < 100 || status > 599) {
        return HTTP_UNMAPPED;
    }
    if (m->exact[status] != HTTP_UNMAPPED) {
        return (enum http_outcome) m->exact[status];
    }
    return (enum http_outcome) m->klass[status / 100];
}

static unsigned
capped(long seconds)
{
    return (unsigned) (seconds > MAX_DELAY ? MAX_DELAY : seconds);
}

twice_status
http_verdict(const twice_api *api, twice_job *job, const struct http_mapping *m, long status,
             const struct http_answer *a)
{
    char body[HTTP_ANSWER_BODY_MAX + 3]; /* ": " and the body, or " (empty body)" */
    http_body_shown(a->body, a->len, body, sizeof(body));
    if (a->twice_retry_after >= 0) {
        api->error(job, "HTTP %ld with Twice-Retry-After: %ld%s", status, a->twice_retry_after,
                   body);
        api->retry_after(job, capped(a->twice_retry_after));
        return TWICE_RETRY;
    }
    switch (http_mapping_of(m, status)) {
    case HTTP_DONE:
        api->log(job, TWICE_LOG_DEBUG, "HTTP %ld", status);
        return TWICE_DONE;
    case HTTP_RETRY:
        api->error(job, "HTTP %ld%s", status, body);
        if (a->retry_after >= 0) {
            api->retry_after(job, capped(a->retry_after));
        }
        http_note_unavailable(api, job, CURLE_OK, status, a->retry_after, MAX_DELAY);
        return TWICE_RETRY;
    case HTTP_REJECT:
        api->error(job, "HTTP %ld%s", status, body);
        return TWICE_REJECT;
    case HTTP_UNMAPPED:
        break;
    }
    api->error(job,
               "HTTP %ld: not in done_statuses, retry_statuses or reject_statuses (redirects "
               "are not followed: check the url)%s",
               status, body);
    return TWICE_RETRY;
}
