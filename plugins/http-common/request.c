/*
 * request.c - one request of the HTTP plugins on a pooled handle: the
 * options every such request has (protocols, redirects, timeout, TLS,
 * headers, body, where the answer goes) and the header list. What the
 * answer means is each plugin's.
 */
#include "http_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CURLcode
http_perform(CURL *c, const struct http_request *r, struct http_answer *ans, long *status,
             char *errbuf)
{
    errbuf[0] = '\0';
    http_answer_init(ans);
    curl_easy_setopt(c, CURLOPT_URL, r->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, r->timeout);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    /* Certificate and host name checks are curl's defaults, never switched
     * off; ca_file only says whom to trust. */
    if (r->ca_file != NULL) {
        curl_easy_setopt(c, CURLOPT_CAINFO, r->ca_file);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(c, CURLOPT_USERAGENT, r->user_agent);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) r->len);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_answer_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, ans);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, http_answer_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, ans);
    CURLcode rc = curl_easy_perform(c);
    *status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    if (rc != CURLE_OK && errbuf[0] == '\0') {
        snprintf(errbuf, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
    }
    return rc;
}

int
http_header_add(struct curl_slist **l, const char *fmt, const char *value)
{
    char line[TWICE_KEY_MAX + 256];
    snprintf(line, sizeof(line), fmt, value);
    struct curl_slist *next = curl_slist_append(*l, line);
    explicit_bzero(line, sizeof(line)); /* it may have been the Authorization line */
    if (next == NULL) {
        curl_slist_free_all(*l);
        *l = NULL;
        return -1;
    }
    *l = next;
    return 0;
}

void
http_free_secret(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

void
http_note_unavailable(const twice_api *api, twice_job *job, CURLcode rc, long status,
                      long retry_after, long cap)
{
    int down = rc != CURLE_OK ? http_unreachable(rc)
                              : status == 503 || (status == 429 && retry_after >= 0);
    if (down && TWICE_API_HAS(api, downstream_unavailable)) {
        long wait = retry_after < 0 ? 0 : retry_after > cap ? cap : retry_after;
        api->downstream_unavailable(job, (unsigned) wait);
    }
}

int
http_unreachable(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
        return 1;
    default:
        return 0;
    }
}
