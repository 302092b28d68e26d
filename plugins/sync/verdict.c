/*
 * verdict.c - what the sync endpoint's answer means for the job: DONE for
 * 2xx and 409, RETRY for 408, 429 and 5xx (honouring Retry-After; 503, and
 * 429 with Retry-After, say the endpoint is unavailable), REJECT for other
 * 4xx. Reading the answer is http-common's (answer.c); the
 * request is sync.c's.
 */
#include "sync.h"

twice_status
sync_verdict(const twice_api *api, twice_job *job, long status, const struct http_answer *a)
{
    char body[SYNC_ERROR_BODY + 3]; /* ": " and the body, or " (empty body)" */
    http_body_shown(a->body, a->len < SYNC_ERROR_BODY ? a->len : SYNC_ERROR_BODY, body,
                    sizeof(body));
    if (status >= 200 && status <= 299) {
        api->log(job, TWICE_LOG_DEBUG, "HTTP %ld", status);
        return TWICE_DONE;
    }
    if (status == 409) {
        api->log(job, TWICE_LOG_INFO, "HTTP 409: the endpoint has this record already (done)");
        return TWICE_DONE;
    }
    if (status == 408 || status == 429 || (status >= 500 && status <= 599)) {
        api->error(job, "HTTP %ld%s", status, body);
        unsigned wait = (unsigned) (a->retry_after > 43200 ? 43200 : a->retry_after);
        if (a->retry_after >= 0) {
            api->retry_after(job, wait);
        }
        http_note_unavailable(api, job, CURLE_OK, status, a->retry_after, 43200);
        return TWICE_RETRY;
    }
    if (status >= 400 && status <= 499) {
        api->error(job, "HTTP %ld%s", status, body);
        return TWICE_REJECT;
    }
    api->error(job, "HTTP %ld: unexpected answer (redirects are not followed: check the url)",
               status);
    return TWICE_RETRY;
}
