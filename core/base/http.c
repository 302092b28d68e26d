/*
 * http.c - the libcurl wrapper of http.h: a kept-alive easy handle per
 * client, body and header capture, size and cancel limits, and transport
 * errors named by short codes. No retries and no logging here.
 */
#include "http.h"

#include "ascii.h"
#include "atomics.h"
#include "clock.h"
#include "fdguard.h"
#include "version.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A response rarely has more; past this, headers are dropped (bounded memory). */
#define HTTP_MAX_HEADERS 256

struct http_client {
    CURL *curl;
    CURLM *multi; /* drives curl (http_drive); holds the kept-alive connections */
    char *ca_file;
    long connects;
    unsigned fd_epoch; /* fdguard_epoch when curl and multi were made */
    /* The socket curl opened last for this client (http_on_socket), told
     * from a number a plugin closed: fd -1 none. */
    struct fdguard_id sock;
    int shape; /* http_shape of the last transfer that went well; 0: none */
    char errbuf[CURL_ERROR_SIZE];
};

/* What the callbacks of one transfer share. */
struct http_transfer {
    struct http_response *resp;
    const struct flag *cancel;
    long cancel_grace_ms;
    int64_t cancel_seen_ms; /* when the raised flag was first seen mid-answer; 0: not yet */
    size_t max_response;
    int got_bytes; /* a byte of the response arrived: cancelling waits cancel_grace_ms */
    int cancelled;
    int too_large;
};

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_global_rc = CURLE_FAILED_INIT;

static void
http_global_init(void)
{
    http_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int http_handles_new(struct http_client *c);

/* curl's CURLOPT_SOCKOPTFUNCTION: note the socket curl just made. */
static int
http_on_socket(void *arg, curl_socket_t fd, curlsocktype purpose)
{
    struct http_client *c = arg;
    (void) purpose;
    fdguard_note(&c->sock, fd);
    return CURL_SOCKOPT_OK;
}

struct http_client *
http_client_new(const char *ca_file)
{
    pthread_once(&http_once, http_global_init);
    if (http_global_rc != CURLE_OK) {
        return NULL;
    }
    struct http_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        return NULL;
    }
    if (http_handles_new(c) != 0 || (ca_file != NULL && (c->ca_file = strdup(ca_file)) == NULL)) {
        http_client_free(c);
        return NULL;
    }
    return c;
}

/* The easy handle and the multi handle that drives it, new. 0, or -1. */
static int
http_handles_new(struct http_client *c)
{
    c->fd_epoch = fdguard_epoch();
    c->sock = FDGUARD_ID_NONE;
    c->curl = curl_easy_init();
    c->multi = curl_multi_init();
    c->shape = 0;
    if (c->curl == NULL || c->multi == NULL) {
        return -1;
    }
    /* the connection cache curl_easy_perform's own multi handle would have */
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, 5L);
    return 0;
}

/* Whether a plugin closed the process's descriptors since c's handles were
 * made (fdguard.h): their kept-alive connections' sockets and the multi
 * handle's wake-up pair are gone, or their numbers another's by now. */
static int
http_handles_stale(const struct http_client *c)
{
    return c->fd_epoch != fdguard_epoch();
}

/* Make c's handles again after a plugin closed the descriptors: the old ones
 * are left as they are, never cleaned up, which would close (and first write
 * to) numbers that may be another file's or socket's by now; a few kilobytes
 * lost each time it happens. 0, or -1 (out of memory). */
static int
http_handles_remake(struct http_client *c)
{
    if (fdguard_same(&c->sock, c->sock.fd)) {
        close(c->sock.fd); /* made since the descriptors were closed: ours to close */
    }
    fdguard_keep(c->curl);
    fdguard_keep(c->multi);
    c->curl = NULL;
    c->multi = NULL;
    if (http_handles_new(c) == 0) {
        return 0;
    }
    if (c->curl != NULL) {
        curl_easy_cleanup(c->curl);
    }
    if (c->multi != NULL) {
        curl_multi_cleanup(c->multi);
    }
    c->curl = NULL;
    c->multi = NULL;
    return -1;
}

void
http_client_free(struct http_client *c)
{
    if (c == NULL) {
        return;
    }
    if (http_handles_stale(c)) {
        fdguard_keep(c->curl); /* left alone: http_handles_remake says why */
        fdguard_keep(c->multi);
        c->curl = NULL;
        c->multi = NULL;
    }
    if (c->curl != NULL) {
        curl_easy_cleanup(c->curl);
    }
    if (c->multi != NULL) {
        curl_multi_cleanup(c->multi); /* closes the kept-alive connections */
    }
    free(c->ca_file);
    free(c);
}

long
http_client_connects(const struct http_client *c)
{
    return c->connects;
}

void
http_response_init(struct http_response *r)
{
    memset(r, 0, sizeof *r);
}

static void
http_headers_clear(struct http_response *r)
{
    r->nheaders = 0;
    buf_reset(&r->header_text);
}

void
http_response_reset(struct http_response *r)
{
    r->status = 0;
    buf_reset(&r->body);
    http_headers_clear(r);
}

void
http_response_free(struct http_response *r)
{
    http_headers_clear(r);
    free(r->headers);
    buf_free(&r->header_text);
    buf_free(&r->body);
    memset(r, 0, sizeof *r);
}

const char *
http_response_header(const struct http_response *r, const char *name)
{
    for (size_t i = 0; i < r->nheaders; i++) {
        if (ascii_strcasecmp(r->headers[i].name, name) == 0) {
            return r->headers[i].value;
        }
    }
    return NULL;
}

static size_t
http_on_body(char *data, size_t size, size_t n, void *userdata)
{
    struct http_transfer *t = userdata;
    size_t len = size * n;
    t->got_bytes = 1;
    if (t->max_response > 0 && (t->resp->body.len + len > t->max_response)) {
        t->too_large = 1;
        return 0; /* makes curl fail with CURLE_WRITE_ERROR */
    }
    if (buf_append(&t->resp->body, data, len) != 0) {
        return 0;
    }
    return len;
}

/* Store one "Name: value" header line in header_text (the headers array
 * points into it once the transfer is done: http_headers_index). A status
 * line starts a new response (after a 100 Continue or an interim response):
 * forget the old headers. */
static int
http_add_header(struct http_response *r, const char *line, size_t len)
{
    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        http_headers_clear(r);
        return 0;
    }
    const char *colon = memchr(line, ':', len);
    if (colon == NULL || colon == line || r->nheaders >= HTTP_MAX_HEADERS) {
        return 0; /* the blank line at the end, folded lines, or too many */
    }
    const char *v = colon + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t')) {
        v++;
    }
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) {
        end--;
    }
    /* cut at a NUL of their own, as strndup did: the text stays one NUL per string */
    struct buf *t = &r->header_text;
    buf_append(t, line, strnlen(line, (size_t) (colon - line)));
    buf_putc(t, '\0');
    buf_append(t, v, strnlen(v, (size_t) (end - v)));
    buf_putc(t, '\0');
    if (t->failed) {
        return -1;
    }
    r->nheaders++;
    return 0;
}

/* Point the headers array at the names and values header_text holds: once,
 * after the transfer, when the text no longer moves. -1 on ENOMEM. */
static int
http_headers_index(struct http_response *r)
{
    if (r->nheaders > r->cap_headers) {
        struct http_header *h = realloc(r->headers, r->nheaders * sizeof *h);
        if (h == NULL) {
            return -1;
        }
        r->headers = h;
        r->cap_headers = r->nheaders;
    }
    const char *p = buf_str(&r->header_text);
    for (size_t i = 0; i < r->nheaders; i++) {
        r->headers[i].name = (char *) p;
        p += strlen(p) + 1;
        r->headers[i].value = (char *) p;
        p += strlen(p) + 1;
    }
    return 0;
}

static size_t
http_on_header(char *data, size_t size, size_t n, void *userdata)
{
    struct http_transfer *t = userdata;
    t->got_bytes = 1;
    return http_add_header(t->resp, data, size * n) == 0 ? size * n : 0;
}

/* Called by curl about once a second (and more often while data moves). A
 * raised cancel ends a transfer at once until its answer begins; an answer
 * that is arriving is worth finishing (a receive's messages are then given
 * back, not left hidden), but only for cancel_grace_ms: a server or proxy
 * that trickles its bytes would otherwise hold a stop until timeout_ms. */
static int
http_on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                 curl_off_t ulnow)
{
    struct http_transfer *t = userdata;
    (void) dltotal, (void) dlnow, (void) ultotal, (void) ulnow;
    if (!flag_is_up(t->cancel)) {
        return 0;
    }
    if (t->got_bytes) {
        int64_t now = clock_mono_ms();
        if (t->cancel_grace_ms <= 0 || t->cancel_seen_ms == 0) {
            t->cancel_seen_ms = t->cancel_seen_ms == 0 ? now : t->cancel_seen_ms;
            return 0;
        }
        if (now - t->cancel_seen_ms < t->cancel_grace_ms) {
            return 0;
        }
    }
    t->cancelled = 1;
    return 1;
}

/* Short, stable names for curl's errors; transient says whether a retry
 * may help (a bad certificate or URL will not fix itself). */
static void
http_name_error(CURLcode rc, const struct http_transfer *t, struct http_error *err)
{
    const char *code = "Transport";
    int transient = 1;
    if (t->cancelled || rc == CURLE_ABORTED_BY_CALLBACK) {
        code = "Cancelled", transient = 0;
    } else if (t->too_large) {
        code = "TooLarge", transient = 0;
    } else {
        switch (rc) {
        case CURLE_COULDNT_CONNECT:
            code = "CouldNotConnect";
            break;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
            code = "CouldNotResolveHost";
            break;
        case CURLE_OPERATION_TIMEDOUT:
            code = "Timeout";
            break;
        case CURLE_SEND_ERROR:
            code = "SendError";
            break;
        case CURLE_RECV_ERROR:
            code = "RecvError";
            break;
        case CURLE_GOT_NOTHING:
            code = "EmptyReply";
            break;
        case CURLE_PARTIAL_FILE:
            code = "PartialResponse";
            break;
        case CURLE_SSL_CONNECT_ERROR:
            code = "TLSConnectError";
            break;
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
            code = "TLSVerifyFailed", transient = 0;
            break;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL:
            code = "BadURL", transient = 0;
            break;
        case CURLE_OUT_OF_MEMORY:
            code = "OutOfMemory";
            break;
        default:
            break;
        }
    }
    snprintf(err->code, sizeof err->code, "%s", code);
    err->transient = transient;
}

static void
http_fail(struct http_error *err, const char *code, const char *message)
{
    snprintf(err->code, sizeof err->code, "%s", code);
    snprintf(err->message, sizeof err->message, "%s", message);
    err->transient = 0;
}

/* The request's headers plus "Expect:" (no 100-continue round trip), as a
 * curl_slist whose nodes are one array and whose strings are the request's
 * own: curl only reads them during the transfer. One allocation instead of
 * curl_slist_append's two per header. NULL on ENOMEM; the caller frees the
 * array (free, not curl_slist_free_all). */
static struct curl_slist *
http_header_list(const struct http_request *req)
{
    struct curl_slist *list = calloc(req->nheaders + 1, sizeof(*list));
    if (list == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < req->nheaders; i++) {
        list[i].data = (char *) req->headers[i];
        list[i].next = &list[i + 1];
    }
    list[req->nheaders].data = (char *) "Expect:";
    return list;
}

/* Which options http_setup_all sets besides those every request sets:
 * the method's and the optional ones. 0 for a method other than GET, HEAD
 * and POST (always set up from scratch). */
static int
http_shape(const struct http_request *req)
{
    int method = strcmp(req->method, "GET") == 0    ? 1
                 : strcmp(req->method, "HEAD") == 0 ? 2
                 : strcmp(req->method, "POST") == 0 ? 3
                                                    : 0;
    if (method == 0) {
        return 0;
    }
    return 1 | method << 1 | (req->no_proxy != 0) << 3 | (req->cancel != NULL) << 4;
}

/* Set every option of one transfer; curl_easy_reset before this keeps the
 * live connections and caches, so a kept-alive connection is reused. */
static void
http_setup_all(struct http_client *c, const struct http_request *req, struct curl_slist *headers,
               struct http_transfer *t)
{
    CURL *h = c->curl;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, req->url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long) (CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    if (c->ca_file != NULL) {
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    }
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "twice/" TWICE_VERSION);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    if (req->no_proxy) {
        curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    }
    if (strcmp(req->method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(req->method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else {
        if (strcmp(req->method, "POST") != 0) {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
        }
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_len);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body != NULL ? req->body : "");
    }
    curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, http_on_socket);
    curl_easy_setopt(h, CURLOPT_SOCKOPTDATA, c);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, http_on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
    if (req->cancel != NULL) {
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, http_on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }
    c->errbuf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
}

/*
 * The options of one transfer. When the transfer before on this handle went
 * well and set the same options (the same http_shape: an SQS client's
 * every call), only the values that differ between requests are set again:
 * curl_easy_reset and setting all of them cost some 5,000 instructions per
 * request. Otherwise everything from scratch (http_setup_all).
 */
static void
http_setup(struct http_client *c, const struct http_request *req, struct curl_slist *headers,
           struct http_transfer *t)
{
    CURL *h = c->curl;
    int shape = http_shape(req);
    if (shape == 0 || shape != c->shape) {
        http_setup_all(c, req, headers, t);
        c->shape = shape;
        return;
    }
    curl_easy_setopt(h, CURLOPT_URL, req->url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    if (strcmp(req->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_len);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body != NULL ? req->body : "");
    }
    curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
    if (req->cancel != NULL) {
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);
    }
    c->errbuf[0] = '\0';
}

/*
 * One transfer, as curl_easy_perform does it but through the client's own
 * multi handle, so that it starts with curl_multi_perform: curl_easy_perform
 * waits first (curl_multi_poll with no socket yet, a poll(2) on its wake-up
 * descriptor whatever the timeout), one system call per request of ~5. The
 * wait between steps is curl_multi_poll's, as curl_easy_perform's is (it
 * sleeps even when curl has no descriptor to offer, curl_multi_wait would
 * spin). The handle leaves the multi handle again before this returns; its
 * connection stays in the multi handle's cache for the next request.
 */
/* On handles made before a plugin closed the descriptors: whether the
 * running transfer goes on, on a socket curl opened since (a kept-alive one
 * from before was found dead and replaced), not one closed under it (whose
 * number is closed or another's: not the socket curl opened last).
 * CURLINFO_ACTIVESOCKET says nothing until a transfer ends. */
static int
http_transfer_survives(const struct http_client *c)
{
    return fdguard_same(&c->sock, c->sock.fd);
}

static CURLcode
http_drive(struct http_client *c)
{
    if (curl_multi_add_handle(c->multi, c->curl) != CURLM_OK) {
        return CURLE_FAILED_INIT;
    }
    CURLcode rc = CURLE_OK;
    CURLMcode mc;
    int running = 1;
    for (;;) {
        mc = curl_multi_perform(c->multi, &running);
        if (mc != CURLM_OK || running == 0) {
            break;
        }
        if (http_handles_stale(c) && !http_transfer_survives(c)) {
            /* A plugin closed the descriptors under the transfer (a long poll
             * would wait on a number that is not its socket any more): given
             * up, its handles left as they are (http_handles_remake). */
            fdguard_keep(c->curl);
            fdguard_keep(c->multi);
            c->curl = NULL;
            c->multi = NULL;
            return CURLE_RECV_ERROR;
        }
        /* the multi handle's wake-up pair is gone with the descriptors:
         * curl_multi_wait does not poll it */
        int ready = 1;
        mc = http_handles_stale(c) ? curl_multi_wait(c->multi, NULL, 0, 100, NULL)
                                   : curl_multi_poll(c->multi, NULL, 0, 1000, &ready);
        if (mc != CURLM_OK) {
            break;
        }
        if (ready == 0) {
            /* a second of a long poll without a word: were the descriptors
             * closed under it (its number may now be another's idle socket)? */
            (void) fdguard_check();
        }
    }
    if (mc != CURLM_OK) {
        rc = mc == CURLM_OUT_OF_MEMORY ? CURLE_OUT_OF_MEMORY : CURLE_FAILED_INIT;
    } else {
        int left = 0;
        CURLMsg *msg = curl_multi_info_read(c->multi, &left);
        rc = msg != NULL && msg->msg == CURLMSG_DONE ? msg->data.result : CURLE_FAILED_INIT;
    }
    curl_multi_remove_handle(c->multi, c->curl);
    return rc;
}

int
http_perform(struct http_client *c, const struct http_request *req, struct http_response *resp,
             struct http_error *err)
{
    memset(err, 0, sizeof *err);
    http_response_reset(resp);
    if ((http_handles_stale(c) || c->curl == NULL) && http_handles_remake(c) != 0) {
        http_fail(err, "OutOfMemory", "out of memory");
        return -1;
    }
    if (flag_is_up(req->cancel)) {
        http_fail(err, "Cancelled", "cancelled before the request was sent");
        return -1;
    }
    struct curl_slist *headers = http_header_list(req);
    if (headers == NULL) {
        http_fail(err, "OutOfMemory", "out of memory");
        return -1;
    }
    struct http_transfer t = {resp, req->cancel, req->cancel_grace_ms, 0, req->max_response, 0, 0,
                              0};
    http_setup(c, req, headers, &t);
    CURLcode rc = http_drive(c);
    long connects = 0;
    if (c->curl != NULL &&
        curl_easy_getinfo(c->curl, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK) {
        c->connects += connects;
    }
    if (c->curl != NULL) { /* NULL: given up with the descriptors (http_drive) */
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
    }
    free(headers);
    if (resp->body.failed || (rc == CURLE_OK && http_headers_index(resp) != 0)) {
        rc = CURLE_OUT_OF_MEMORY;
    }
    if (rc != CURLE_OK) {
        c->shape = 0;           /* the next transfer starts from scratch */
        (void) fdguard_check(); /* closed under it by a plugin? the next one remakes them */
        http_name_error(rc, &t, err);
        long proxy_status = 0;
        if (c->curl != NULL &&
            curl_easy_getinfo(c->curl, CURLINFO_HTTP_CONNECTCODE, &proxy_status) == CURLE_OK &&
            proxy_status == 407) {
            /* an https request's CONNECT refused by an HTTP(S)_PROXY: not the endpoint */
            http_fail(err, "ProxyAuthRequired", "");
        }
        if (t.too_large) {
            snprintf(err->message, sizeof err->message, "response too large (more than %zu bytes)",
                     req->max_response);
        } else if (t.cancelled && t.got_bytes) {
            snprintf(err->message, sizeof err->message,
                     HTTP_CANCELLED_MID_ANSWER " (%ld ms after the cancel)", req->cancel_grace_ms);
        } else {
            snprintf(err->message, sizeof err->message, "%s",
                     c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
        }
        http_response_reset(resp);
        return -1;
    }
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &resp->status);
    return 0;
}
