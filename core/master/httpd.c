/*
 * httpd.c - /metrics, /healthz and /readyz over libmicrohttpd (see
 * httpd.h). One internal polling thread; state shared with the master is
 * behind a mutex.
 */
#include "httpd.h"

#include "buf.h"
#include "cnum.h"
#include "config.h"
#include "listen.h"
#include "log.h"
#include "metrics.h"
#include "shm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* What a long poll may take beyond its wait time (request, response). */
#define POLL_SLACK 3

/* Connections the listener holds at once, and from one address: scrapers and
 * probes need a few; a client that opens hundreds and never finishes a
 * request (a slow-loris, a broken pool) is refused past its share instead of
 * keeping every other address out, and the master keeps descriptors for its
 * own work. Each idle connection is closed after CONN_TIMEOUT seconds. */
#define MAX_CONNECTIONS 256
#define PER_ADDRESS     16
#define CONN_TIMEOUT    10
/* libmicrohttpd's messages once it serves are about clients (a connection
 * closed mid-request, a request too big): at most one line a minute. */
#define MHD_LOG_EVERY   60

struct httpd {
    struct MHD_Daemon *daemon;
    char *listen;
    pthread_mutex_t mu;
    int ready;
    char why[512];       /* why the workers are not ready, "" */
    char store_why[600]; /* why the store is not healthy, "" */
    char **queues;
    int *wait_times;
    size_t nqueues;
    atomic_int serving;     /* MHD_start_daemon returned: its messages go to the log */
    int start_errno;        /* the system error of libmicrohttpd's first message while starting */
    time_t logged_at;       /* when a message of libmicrohttpd's was last logged (its thread) */
    unsigned long unlogged; /* its messages not logged since */
};

int
httpd_readiness(int workers_ready, const char *workers_why, const char *store_why,
                const char *const *queues, const int *wait_times, const double *last_receive,
                const char *const *failing, size_t n, double now, char *reason, size_t cap)
{
    if (!workers_ready && workers_why != NULL && workers_why[0] != '\0') {
        snprintf(reason, cap, "workers are not ready: %s", workers_why);
        return 0;
    }
    if (!workers_ready) {
        snprintf(reason, cap, "workers are not ready (starting, or restarting after a crash)");
        return 0;
    }
    if (store_why != NULL && store_why[0] != '\0') {
        snprintf(reason, cap, "%s", store_why);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        double window = 2.0 * (wait_times[i] + POLL_SLACK);
        if (now - last_receive[i] > window) {
            int len =
                last_receive[i] <= 0
                    ? snprintf(reason, cap, "queue %s has not received yet", queues[i])
                    : cnum_snprintf(reason, cap,
                                    "queue %s: no successful receive for %.0fs (limit %.0fs)",
                                    queues[i], now - last_receive[i], window);
            if (failing != NULL && failing[i] != NULL && failing[i][0] != '\0' && len >= 0 &&
                (size_t) len < cap) { /* the cause: CouldNotConnect is SQS unreachable */
                snprintf(reason + len, cap - (size_t) len, "; %s", failing[i]);
            }
            return 0;
        }
    }
    snprintf(reason, cap, "ready");
    return 1;
}

/* Room for one queue's clause of why it does not receive. */
#define FAILING_MAX (SHM_LABEL + 64)

/* Why queue has not received since its last successful receive (last), as
 * its workers recorded: the store refusing its claims (the receiver waits),
 * else its latest failed receive's code; "" when neither is that recent. */
static void
failing_clause(const char *queue, double last, char out[FAILING_MAX])
{
    char label[SHM_LABEL];
    double at = 0;
    out[0] = '\0';
    if (metrics_gauge_latest(MET_CLAIMS_REFUSED, queue, label, sizeof(label), &at) && at >= last) {
        snprintf(out, FAILING_MAX, "the idempotency store refuses its claims (SQLSTATE %s)",
                 label);
    } else if (metrics_gauge_latest(MET_RECEIVE_FAILED, queue, label, sizeof(label), &at) &&
               at >= last) {
        snprintf(out, FAILING_MAX, "ReceiveMessage fails: %s", label);
    }
}

static int
check_ready(struct httpd *h, char *reason, size_t cap)
{
    pthread_mutex_lock(&h->mu);
    size_t n = h->nqueues ? h->nqueues : 1;
    double *last = calloc(n, sizeof(*last));
    char(*codes)[FAILING_MAX] = calloc(n, sizeof(*codes));
    const char **failing = calloc(n, sizeof(*failing));
    int ok = 0;
    if (last == NULL || codes == NULL || failing == NULL) {
        snprintf(reason, cap, "out of memory");
    } else {
        for (size_t i = 0; i < h->nqueues; i++) {
            last[i] = metrics_gauge_get(MET_LAST_RECEIVE, h->queues[i], NULL);
            failing_clause(h->queues[i], last[i], codes[i]);
            failing[i] = codes[i];
        }
        ok = httpd_readiness(h->ready, h->why, h->store_why, (const char *const *) h->queues,
                             h->wait_times, last, failing, h->nqueues, (double) time(NULL), reason,
                             cap);
    }
    pthread_mutex_unlock(&h->mu);
    free(last);
    free(codes);
    free(failing);
    return ok;
}

static enum MHD_Result
reply(struct MHD_Connection *conn, unsigned status, const char *type, char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    if (status == 405) { /* RFC 9110: a 405 says what is allowed */
        MHD_add_response_header(r, "Allow", "GET, HEAD");
    }
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result
serve(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
      const char *version, const char *upload, size_t *upload_len, void **state)
{
    struct httpd *h = cls;
    (void) version, (void) upload, (void) upload_len, (void) state;
    struct buf b = BUF_INIT;
    unsigned status = 200;
    const char *type = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = 405;
        buf_puts(&b, "method not allowed\n");
    } else if (strcmp(url, "/metrics") == 0) {
        type = "text/plain; version=0.0.4; charset=utf-8";
        metrics_render(&b);
    } else if (strcmp(url, "/healthz") == 0) {
        buf_puts(&b, "ok\n");
    } else if (strcmp(url, "/readyz") == 0) {
        char reason[256];
        status = check_ready(h, reason, sizeof(reason)) ? 200 : 503;
        buf_printf(&b, "%s\n", reason);
    } else {
        status = 404;
        buf_puts(&b, "not found: try /metrics, /healthz or /readyz\n");
    }
    size_t len = b.len;
    char *body = buf_steal(&b);
    if (body == NULL) {
        return MHD_NO;
    }
    return reply(conn, status, type, body, len);
}

int
httpd_set_queues(struct httpd *h, const struct config *c)
{
    if (h == NULL) {
        return 0;
    }
    char **names = calloc(c->nqueues ? c->nqueues : 1, sizeof(*names));
    int *waits = calloc(c->nqueues ? c->nqueues : 1, sizeof(*waits));
    if (names == NULL || waits == NULL) {
        free(names);
        free(waits);
        return -1;
    }
    for (size_t i = 0; i < c->nqueues; i++) {
        names[i] = strdup(c->queues[i].name);
        waits[i] = c->queues[i].wait_time;
    }
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nqueues; i++) {
        free(h->queues[i]);
    }
    free(h->queues);
    free(h->wait_times);
    h->queues = names;
    h->wait_times = waits;
    h->nqueues = c->nqueues;
    pthread_mutex_unlock(&h->mu);
    return 0;
}

/* libmicrohttpd's own error messages, which it would print to stderr: while
 * it starts, only the errno of the first is kept, for start()'s one message
 * ("Failed to bind to port 0" would mislead: the address is given apart);
 * once it serves, they go to the log, one a minute with the number left
 * out, so that no client can fill the log. */
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct httpd *h = cls;
    int saved = errno;
    if (!atomic_load(&h->serving)) {
        if (h->start_errno == 0) {
            h->start_errno = saved;
        }
        return;
    }
    time_t now = time(NULL);
    if (h->logged_at != 0 && now - h->logged_at < MHD_LOG_EVERY) {
        h->unlogged++;
        return;
    }
    char text[256];
    cnum_vsnprintf(text, sizeof(text), fmt, ap);
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' ')) {
        text[--n] = '\0';
    }
    if (h->unlogged > 0) {
        log_warn("metrics: %s: %s (and %lu more such messages in the last %lds)", h->listen, text,
                 h->unlogged, (long) (now - h->logged_at));
    } else {
        log_warn("metrics: %s: %s", h->listen, text);
    }
    h->logged_at = now;
    h->unlogged = 0;
}

static struct httpd *
start(const char *listen, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    char why[160];
    if (listen_parse(listen, &ss, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "metrics.listen %s: %s", listen, why);
        return NULL;
    }
    struct httpd *h = calloc(1, sizeof(*h));
    if (h == NULL || (h->listen = strdup(listen)) == NULL) {
        free(h);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    /* poll or epoll, not select: a descriptor past FD_SETSIZE must not stop it */
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
    }
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, serve, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &ss,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) CONN_TIMEOUT, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned) MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned) PER_ADDRESS,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, MHD_OPTION_END);
    if (h->daemon == NULL) {
        snprintf(err, errlen, "cannot listen on %s: %s", listen,
                 h->start_errno != 0 ? cnum_strerror(h->start_errno) : "libmicrohttpd refused");
        free(h->listen);
        pthread_mutex_destroy(&h->mu);
        free(h);
        return NULL;
    }
    atomic_store(&h->serving, 1);
    return h;
}

/* The new address of a reload cannot be listened on (a port another
 * service holds): listen where the endpoints were (was, or nowhere when
 * NULL) rather than leave them off, as the probes watching the running
 * workers would then fail (and Kubernetes restart the pod). err, which says
 * why the new address failed, gets where they are now. 1 when they are
 * back, -1 when off. The old server was stopped first, as the new address
 * may be the same port on another interface. */
static int
fall_back(struct httpd **hp, const char *was, char *err, size_t errlen)
{
    char ignored[256];
    size_t n = strlen(err);
    *hp = was != NULL ? start(was, ignored, sizeof(ignored)) : NULL;
    if (*hp == NULL) {
        snprintf(err + n, errlen - n, " (metrics and health endpoints are off)");
        return -1;
    }
    snprintf(err + n, errlen - n, " (the endpoints stay on %s)", was);
    return 1;
}

int
httpd_apply(struct httpd **hp, const struct config *c, char *err, size_t errlen)
{
    const char *listen = c->metrics.listen;
    int want = listen != NULL && listen[0] != '\0';
    struct httpd *h = *hp;
    if (h != NULL && want && strcmp(listen, h->listen) == 0) {
        return 0;
    }
    char *was = NULL;
    if (h != NULL) {
        was = strdup(h->listen); /* NULL (out of memory): not started again */
        httpd_stop(h);
        *hp = NULL;
    }
    int rc = 0;
    if (want && (*hp = start(listen, err, errlen)) == NULL) {
        rc = fall_back(hp, was, err, errlen);
    }
    free(was);
    return rc;
}

void
httpd_set_ready(struct httpd *h, int ready, const char *why)
{
    if (h != NULL) {
        pthread_mutex_lock(&h->mu);
        h->ready = ready;
        snprintf(h->why, sizeof(h->why), "%s", why != NULL ? why : "");
        pthread_mutex_unlock(&h->mu);
    }
}

void
httpd_set_store(struct httpd *h, const char *why)
{
    if (h != NULL) {
        pthread_mutex_lock(&h->mu);
        snprintf(h->store_why, sizeof(h->store_why), "%s", why != NULL ? why : "");
        pthread_mutex_unlock(&h->mu);
    }
}

void
httpd_stop(struct httpd *h)
{
    if (h == NULL) {
        return;
    }
    MHD_stop_daemon(h->daemon);
    for (size_t i = 0; i < h->nqueues; i++) {
        free(h->queues[i]);
    }
    free(h->queues);
    free(h->wait_times);
    free(h->listen);
    pthread_mutex_destroy(&h->mu);
    free(h);
}
