/*
 * exporter.c - the span buffer and the thread that exports it (see
 * exporter.h). Spans leave the buffer in batches of batch_spans, or
 * whatever is there after export_interval_ms; each batch is one POST of
 * OTLP/JSON (otlp.c). A batch that fails (transport error, non-2xx, time
 * out) is dropped and counted, not retried: retrying would only fill the
 * buffer faster while the collector is down.
 */
#include "exporter.h"

#include "atomics.h"
#include "clock.h"
#include "cnum.h"
#include "config.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "otlp.h"
#include "span.h"
#include "tracecfg.h"
#include "version.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT_MAX_RESPONSE (64 * 1024)
#define EXPORT_CONNECT_MS   5000
#define EXPORT_REPORT_EVERY 60 /* seconds between two reports of a failing collector */

struct exporter {
    struct tracecfg cfg;
    const char **headers; /* Content-Type and cfg.headers */
    size_t nheaders;
    struct http_client *http; /* the thread's */
    struct span **batch;      /* the thread's: cfg.batch_spans of them */
    pthread_t thread;

    pthread_mutex_t mu; /* guards what follows */
    pthread_cond_t cv;  /* a batch is full, or stop */
    struct span **ring; /* cfg.buffer_spans of them */
    size_t head, count;
    int stop;
    int64_t deadline_ms; /* stopping: monotonic end of the last flush */
    int done;            /* the thread is about to return */
    struct flag give_up; /* raised at the deadline: the request in flight is cut */

    /* The thread's report of a failing collector. */
    int failing;
    time_t reported;
    long long failed_batches;
};

/* Set before the span-making threads start and cleared after they end. */
static struct exporter *current;

int
exporter_on(void)
{
    return current != NULL;
}

static void
count_dropped(const char *reason, size_t n)
{
    if (n > 0) {
        metrics_count(MET_SPANS_DROPPED, reason, NULL, NULL, n);
    }
}

void
exporter_submit(struct span *s)
{
    struct exporter *e = current;
    if (s == NULL) {
        return;
    }
    if (e == NULL || !(s->ctx.flags & TRACECTX_SAMPLED)) {
        span_free(s); /* not sampled (the parent said so): nobody wants it */
        return;
    }
    size_t cap = (size_t) e->cfg.buffer_spans;
    pthread_mutex_lock(&e->mu);
    int full = e->count == cap;
    if (!full) {
        e->ring[(e->head + e->count) % cap] = s;
        e->count++;
        if (e->count == (size_t) e->cfg.batch_spans) {
            pthread_cond_signal(&e->cv);
        }
    }
    pthread_mutex_unlock(&e->mu);
    if (full) {
        span_free(s);
        count_dropped("buffer_full", 1);
    }
}

/* Up to batch_spans spans out of the ring into e->batch. Called with mu. */
static size_t
take(struct exporter *e)
{
    size_t cap = (size_t) e->cfg.buffer_spans, n = 0;
    while (e->count > 0 && n < (size_t) e->cfg.batch_spans) {
        e->batch[n++] = e->ring[e->head];
        e->head = (e->head + 1) % cap;
        e->count--;
    }
    return n;
}

/* A failed batch: counted, and logged when the collector starts failing
 * and then every EXPORT_REPORT_EVERY seconds, never per batch. */
static void
export_failed(struct exporter *e, size_t n, const char *why)
{
    time_t now = time(NULL);
    count_dropped("export_failed", n);
    e->failed_batches++;
    if (!e->failing || now - e->reported >= EXPORT_REPORT_EVERY) {
        log_warn("tracing: exporting spans to %s failed (%lld batches so far, spans dropped): %s",
                 e->cfg.endpoint, e->failed_batches, why);
        e->reported = now;
    }
    e->failing = 1;
}

/* POST e->batch[0..n) and free the spans. */
static void
export_batch(struct exporter *e, size_t n, long timeout_ms)
{
    char *body = otlp_encode(e->cfg.resource, TWICE_VERSION, e->batch, n);
    for (size_t i = 0; i < n; i++) {
        span_free(e->batch[i]);
    }
    if (body == NULL) {
        export_failed(e, n, "out of memory encoding the spans");
        return;
    }
    struct http_request req = {
        .method = "POST",
        .url = e->cfg.endpoint,
        .headers = e->headers,
        .nheaders = e->nheaders,
        .body = body,
        .body_len = strlen(body),
        .timeout_ms = timeout_ms,
        .connect_timeout_ms = timeout_ms < EXPORT_CONNECT_MS ? timeout_ms : EXPORT_CONNECT_MS,
        .max_response = EXPORT_MAX_RESPONSE,
        .cancel = &e->give_up,
    };
    struct http_response resp;
    struct http_error herr;
    char why[320];
    http_response_init(&resp);
    int rc = http_perform(e->http, &req, &resp, &herr);
    if (rc != 0 && flag_is_up(&e->give_up)) {
        count_dropped("shutdown", n); /* stopping, and the collector took too long */
    } else if (rc != 0) {
        snprintf(why, sizeof(why), "%s: %s", herr.code, herr.message);
        export_failed(e, n, why);
    } else if (resp.status < 200 || resp.status > 299) {
        snprintf(why, sizeof(why), "HTTP %ld", resp.status);
        export_failed(e, n, why);
    } else {
        long long rejected = otlp_rejected(buf_str(&resp.body), resp.body.len);
        rejected = rejected > (long long) n ? (long long) n : rejected;
        count_dropped("rejected", (size_t) rejected);
        metrics_count(MET_SPANS_EXPORTED, NULL, NULL, NULL, n - (size_t) rejected);
        if (e->failing) {
            log_info("tracing: exporting spans to %s works again", e->cfg.endpoint);
        }
        e->failing = 0;
    }
    http_response_free(&resp);
    free(body);
}

/* Stopping: send what is left until the deadline, drop the rest. Called
 * and returns with mu held. */
static void
flush(struct exporter *e)
{
    for (;;) {
        int64_t left = e->deadline_ms - clock_mono_ms();
        if (e->count == 0 || left <= 0) {
            break;
        }
        size_t n = take(e);
        pthread_mutex_unlock(&e->mu);
        long timeout = (long) e->cfg.export_timeout_ms;
        export_batch(e, n, left < timeout ? (long) left : timeout);
        pthread_mutex_lock(&e->mu);
    }
    size_t lost = e->count;
    while (e->count > 0) {
        span_free(e->ring[e->head]);
        e->head = (e->head + 1) % (size_t) e->cfg.buffer_spans;
        e->count--;
    }
    count_dropped("shutdown", lost);
}

static void *
exporter_main(void *arg)
{
    struct exporter *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->stop) {
        struct timespec until = clock_after_ms(CLOCK_MONOTONIC, e->cfg.export_interval_ms);
        while (!e->stop && e->count < (size_t) e->cfg.batch_spans &&
               pthread_cond_timedwait(&e->cv, &e->mu, &until) != ETIMEDOUT) {
        }
        if (e->stop) {
            break;
        }
        size_t n = take(e);
        if (n > 0) {
            pthread_mutex_unlock(&e->mu);
            export_batch(e, n, e->cfg.export_timeout_ms);
            pthread_mutex_lock(&e->mu);
        }
    }
    flush(e);
    e->done = 1;
    pthread_cond_broadcast(&e->cv); /* exporter_stop waits for it */
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

static void
exporter_free(struct exporter *e)
{
    http_client_free(e->http);
    tracecfg_free(&e->cfg);
    free(e->headers);
    free(e->batch);
    free(e->ring);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
}

static struct exporter *
exporter_new(struct tracecfg *cfg)
{
    struct exporter *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return NULL;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, &ca);
    pthread_condattr_destroy(&ca);
    e->cfg = *cfg;
    memset(cfg, 0, sizeof(*cfg));
    e->ring = calloc((size_t) e->cfg.buffer_spans, sizeof(*e->ring));
    e->batch = calloc((size_t) e->cfg.batch_spans, sizeof(*e->batch));
    e->headers = calloc(e->cfg.nheaders + 1, sizeof(*e->headers));
    e->http = http_client_new(NULL);
    if (e->ring == NULL || e->batch == NULL || e->headers == NULL || e->http == NULL) {
        exporter_free(e);
        return NULL;
    }
    e->headers[e->nheaders++] = "Content-Type: application/json";
    for (size_t i = 0; i < e->cfg.nheaders; i++) {
        e->headers[e->nheaders++] = e->cfg.headers[i];
    }
    return e;
}

int
exporter_start(const struct config *c, char *desc, size_t desclen, char *err, size_t errlen)
{
    struct tracecfg cfg;
    desc[0] = '\0';
    if (c->tracing.exporter != CONFIG_TRACING_OTLP || current != NULL) {
        return 0;
    }
    if (tracecfg_resolve(c, &cfg, err, errlen) != 0) {
        return -1;
    }
    struct exporter *e = exporter_new(&cfg);
    if (e == NULL) {
        tracecfg_free(&cfg);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = pthread_create(&e->thread, NULL, exporter_main, e);
    if (rc != 0) {
        snprintf(err, errlen, "pthread_create: %s", cnum_strerror(rc));
        exporter_free(e);
        return -1;
    }
    snprintf(desc, desclen, "spans of service %s to %s", e->cfg.service_name, e->cfg.endpoint);
    current = e;
    return 0;
}

void
exporter_stop(int wait_ms)
{
    struct exporter *e = current;
    if (e == NULL) {
        return;
    }
    pthread_mutex_lock(&e->mu);
    e->stop = 1;
    e->deadline_ms = clock_mono_ms() + wait_ms;
    pthread_cond_signal(&e->cv);
    /* An export already in flight has export_timeout, which can be far
     * longer than wait_ms: at the deadline it is cut (within a second, as
     * curl reports progress), so a hung collector never holds a drain. */
    struct timespec until = clock_after_ms(CLOCK_MONOTONIC, wait_ms);
    while (!e->done && pthread_cond_timedwait(&e->cv, &e->mu, &until) != ETIMEDOUT) {
    }
    flag_raise(&e->give_up);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    current = NULL;
    exporter_free(e);
}
