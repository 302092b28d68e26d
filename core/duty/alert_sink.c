/*
 * alert_sink.c - delivering alert notices (alert.h) to the webhook and the
 * SMTP sink from one thread of the master, with a queue per sink: notices
 * go out in order, a failed delivery is retried after 1, 2, 4 ... seconds
 * (capped) and given up after ALERT_MAX_ATTEMPTS. Not what notices say
 * (alert.c) or when they are due (dlqmon.c). Logs never show a webhook
 * URL's path or query, the webhook header, or SMTP credentials.
 */
#include "alert.h"
#include "buf.h"

#include "atomics.h"
#include "clock.h"
#include "config.h"
#include "dlqcarry.h"
#include "http.h"
#include "log.h"
#include "metrics.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SINK_QUEUE_MAX    100 /* notices waiting per sink; beyond, the oldest waiting go */
#define SINK_MAX_RESPONSE 65536

/* The numbers are the sinks' identity in the record carried across a reload
 * (proc/dlqcarry.h): never renumbered. */
enum { SINK_WEBHOOK = 0, SINK_SMTP = 1, SINK_COUNT };
_Static_assert(SINK_COUNT <= DLQCARRY_SINKS, "a carried record has room for every sink");
_Static_assert(sizeof(struct alert_notice) <= DLQCARRY_NOTICE_BYTES,
               "a carried record has room for a notice");
static const char *const sink_names[SINK_COUNT] = {"webhook", "smtp"};

enum outcome { SENT = 0, RETRY, GIVE_UP, STOPPED };

struct delivery {
    struct delivery *next;
    int sink;
    int attempts;   /* made so far */
    int64_t due_ms; /* monotonic time of the next attempt */
    struct alert_notice notice;
};

struct sink_queue {
    struct delivery *head, *tail;
    size_t n;
    int enabled;
    char origin[300]; /* scheme://host:port, for logs */
};

struct alert_sender {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct flag stop; /* also the cancel flag of a delivery in progress */
    struct sink_queue q[SINK_COUNT];
    struct http_client *http; /* the thread's */

    /* Copies of c->alerts (secrets wiped when freed). */
    char *webhook_url, *webhook_header;
    int webhook_timeout;
    char *smtp_url, *smtp_from, *smtp_user, *smtp_password;
    char **smtp_to;
    size_t nto;
    int smtp_timeout;
};

static void
free_list(struct delivery *d)
{
    while (d != NULL) {
        struct delivery *next = d->next;
        free(d);
        d = next;
    }
}

/* ---- one attempt ---- */

/* POST the JSON document. err gets a reason without the URL's secrets. */
static enum outcome
send_webhook(struct alert_sender *s, const struct alert_notice *n, char *err, size_t errlen)
{
    char *doc = alert_notice_json(n);
    if (doc == NULL) {
        snprintf(err, errlen, "out of memory");
        return RETRY;
    }
    const char *headers[2] = {"Content-Type: application/json", s->webhook_header};
    long timeout_ms = (long) s->webhook_timeout * 1000;
    struct http_request req = {
        .method = "POST",
        .url = s->webhook_url,
        .headers = headers,
        .nheaders = s->webhook_header != NULL ? 2 : 1,
        .body = doc,
        .body_len = strlen(doc),
        .timeout_ms = timeout_ms,
        .connect_timeout_ms = timeout_ms < 10000 ? timeout_ms : 10000,
        .cancel = &s->stop,
        .max_response = SINK_MAX_RESPONSE,
    };
    struct http_response resp;
    struct http_error herr;
    http_response_init(&resp);
    int rc = http_perform(s->http, &req, &resp, &herr);
    long status = resp.status;
    http_response_free(&resp);
    free(doc);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", herr.code, herr.message);
        return flag_is_up(&s->stop) ? STOPPED : herr.transient ? RETRY : GIVE_UP;
    }
    if (status >= 200 && status < 300) {
        return SENT;
    }
    snprintf(err, errlen, "HTTP %ld", status);
    return (status == 408 || status == 429 || status >= 500) ? RETRY : GIVE_UP;
}

struct mail_src {
    const char *data;
    size_t len, off;
};

static size_t
mail_read(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct mail_src *m = arg;
    size_t n = m->len - m->off;
    if (n > size * nmemb) {
        n = size * nmemb;
    }
    memcpy(ptr, m->data + m->off, n);
    m->off += n;
    return n;
}

static int
mail_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void) dt, (void) dn, (void) ut, (void) un;
    const struct flag *stop = arg;
    return flag_is_up(stop) ? 1 : 0;
}

/* Options of one SMTP transfer; rcpt is owned by the caller. */
static void
smtp_setup(struct alert_sender *s, CURL *h, struct curl_slist *rcpt, struct mail_src *src,
           char *errbuf)
{
    curl_easy_setopt(h, CURLOPT_URL, s->smtp_url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long) (CURLPROTO_SMTP | CURLPROTO_SMTPS));
#endif
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_MAIL_FROM, s->smtp_from);
    curl_easy_setopt(h, CURLOPT_MAIL_RCPT, rcpt);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, mail_read);
    curl_easy_setopt(h, CURLOPT_READDATA, src);
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(
        h, CURLOPT_USE_SSL,
        alert_smtp_needs_tls(s->smtp_url, s->smtp_user != NULL || s->smtp_password != NULL)
            ? (long) CURLUSESSL_ALL
            : (long) CURLUSESSL_TRY);
    if (s->smtp_user != NULL) {
        curl_easy_setopt(h, CURLOPT_USERNAME, s->smtp_user);
    }
    if (s->smtp_password != NULL) {
        curl_easy_setopt(h, CURLOPT_PASSWORD, s->smtp_password);
    }
    curl_easy_setopt(h, CURLOPT_TIMEOUT, (long) s->smtp_timeout);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
                     (long) (s->smtp_timeout < 10 ? s->smtp_timeout : 10));
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, mail_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *) &s->stop);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
}

/* Send the mail. A 5xx answer or refused login is given up at once. */
static enum outcome
send_mail(struct alert_sender *s, const struct alert_notice *n, char *err, size_t errlen)
{
    char *mail = alert_notice_email(n, s->smtp_from, s->smtp_to, s->nto);
    CURL *h = curl_easy_init();
    struct curl_slist *rcpt = NULL;
    for (size_t i = 0; i < s->nto; i++) {
        struct curl_slist *l = curl_slist_append(rcpt, s->smtp_to[i]);
        if (l == NULL) {
            break;
        }
        rcpt = l;
    }
    enum outcome out = RETRY;
    if (mail == NULL || h == NULL || rcpt == NULL) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    struct mail_src src = {mail, strlen(mail), 0};
    smtp_setup(s, h, rcpt, &src, errbuf);
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc == CURLE_OK) {
        out = SENT;
        goto done;
    }
    snprintf(err, errlen, "%s%s%s", curl_easy_strerror(rc), errbuf[0] ? ": " : "", errbuf);
    if (code > 0) {
        size_t used = strlen(err);
        snprintf(err + used, errlen - used, " (SMTP %ld)", code);
    }
    if (flag_is_up(&s->stop)) {
        out = STOPPED;
    } else if (rc == CURLE_LOGIN_DENIED || rc == CURLE_URL_MALFORMAT ||
               rc == CURLE_UNSUPPORTED_PROTOCOL || (code >= 500 && code < 600)) {
        out = GIVE_UP;
    }
done:
    curl_slist_free_all(rcpt);
    if (h != NULL) {
        curl_easy_cleanup(h);
    }
    free(mail);
    return out;
}

/* ---- the thread ---- */

/* The sink whose first notice is due soonest, or -1 when all are empty. */
static int
next_sink(const struct alert_sender *s)
{
    int best = -1;
    for (int i = 0; i < SINK_COUNT; i++) {
        if (s->q[i].head != NULL && (best < 0 || s->q[i].head->due_ms < s->q[best].head->due_ms)) {
            best = i;
        }
    }
    return best;
}

static void
pop(struct sink_queue *q)
{
    struct delivery *d = q->head;
    q->head = d->next;
    if (q->head == NULL) {
        q->tail = NULL;
    }
    q->n--;
    free(d);
}

/* Account for one attempt on the head of sink i (called with the lock held). */
static void
settle(struct alert_sender *s, int i, enum outcome out, const char *err)
{
    struct sink_queue *q = &s->q[i];
    struct delivery *d = q->head;
    const struct alert_notice *n = &d->notice;
    d->attempts++;
    if (out == SENT) {
        metrics_count(MET_ALERTS, sink_names[i], "sent", NULL, 1);
        log_info("alert: %s about queue %s sent by %s to %s", alert_kind_name(n->kind), n->queue,
                 sink_names[i], q->origin);
        pop(q);
        return;
    }
    metrics_count(MET_ALERTS, sink_names[i], "failed", NULL, 1);
    if (out == GIVE_UP || d->attempts >= ALERT_MAX_ATTEMPTS) {
        log_error("alert: %s about queue %s could not be sent by %s to %s: %s (attempt %d; "
                  "giving up)",
                  alert_kind_name(n->kind), n->queue, sink_names[i], q->origin, err, d->attempts);
        pop(q);
        return;
    }
    int delay = alert_retry_delay(d->attempts);
    d->due_ms = clock_mono_ms() + (int64_t) delay * 1000;
    log_warn("alert: %s about queue %s: %s to %s failed: %s (attempt %d of %d; retrying in %ds)",
             alert_kind_name(n->kind), n->queue, sink_names[i], q->origin, err, d->attempts,
             ALERT_MAX_ATTEMPTS, delay);
}

static void
wait_until_ms(struct alert_sender *s, int64_t due_ms)
{
    struct timespec ts = clock_after_ms(CLOCK_MONOTONIC, due_ms - clock_mono_ms());
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
}

/* The head of a queue is only ever removed by this thread, so it can be
 * delivered without the lock while alert_sender_post appends. */
static void *
sender_main(void *arg)
{
    struct alert_sender *s = arg;
    char err[512];
    pthread_mutex_lock(&s->mu);
    while (!flag_is_up(&s->stop)) {
        int i = next_sink(s);
        if (i < 0) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        struct delivery *d = s->q[i].head;
        if (d->due_ms > clock_mono_ms()) {
            wait_until_ms(s, d->due_ms);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        err[0] = '\0';
        enum outcome out = i == SINK_WEBHOOK ? send_webhook(s, &d->notice, err, sizeof(err))
                                             : send_mail(s, &d->notice, err, sizeof(err));
        pthread_mutex_lock(&s->mu);
        if (out != STOPPED) {
            settle(s, i, out, err);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- start, post, stop ---- */

static int
copy_str(char **dst, const char *src)
{
    *dst = NULL;
    return src == NULL || (*dst = strdup(src)) != NULL ? 0 : -1;
}

/* Copy the sinks' settings. 0, or -1 on ENOMEM. */
static int
copy_settings(struct alert_sender *s, const struct config *c)
{
    const struct config_webhook *w = &c->alerts.webhook;
    const struct config_smtp *m = &c->alerts.smtp;
    s->webhook_timeout = w->timeout > 0 ? w->timeout : 10;
    s->smtp_timeout = m->timeout > 0 ? m->timeout : 30;
    if (copy_str(&s->webhook_url, w->url) != 0 || copy_str(&s->webhook_header, w->header) != 0 ||
        copy_str(&s->smtp_url, m->url) != 0 || copy_str(&s->smtp_from, m->from) != 0 ||
        copy_str(&s->smtp_user, m->username) != 0 ||
        copy_str(&s->smtp_password, m->password) != 0) {
        return -1;
    }
    if (m->nto > 0) {
        s->smtp_to = calloc(m->nto, sizeof(*s->smtp_to));
        if (s->smtp_to == NULL) {
            return -1;
        }
        for (; s->nto < m->nto; s->nto++) {
            if (copy_str(&s->smtp_to[s->nto], m->to[s->nto]) != 0) {
                return -1;
            }
        }
    }
    s->q[SINK_WEBHOOK].enabled = s->webhook_url != NULL;
    s->q[SINK_SMTP].enabled = s->smtp_url != NULL && s->smtp_from != NULL && s->nto > 0;
    if (s->webhook_url != NULL) {
        alert_url_origin(s->webhook_url, s->q[SINK_WEBHOOK].origin,
                         sizeof(s->q[SINK_WEBHOOK].origin));
    }
    if (s->smtp_url != NULL) {
        alert_url_origin(s->smtp_url, s->q[SINK_SMTP].origin, sizeof(s->q[SINK_SMTP].origin));
    }
    return 0;
}

static void
sender_free(struct alert_sender *s)
{
    for (int i = 0; i < SINK_COUNT; i++) {
        free_list(s->q[i].head);
    }
    http_client_free(s->http);
    buf_free_secret(s->webhook_url);
    buf_free_secret(s->webhook_header);
    buf_free_secret(s->smtp_url);
    free(s->smtp_from);
    free(s->smtp_user);
    buf_free_secret(s->smtp_password);
    for (size_t i = 0; i < s->nto; i++) {
        free(s->smtp_to[i]);
    }
    free(s->smtp_to);
    free(s);
}

static void
append(struct sink_queue *q, struct delivery *d)
{
    d->next = NULL;
    if (q->tail != NULL) {
        q->tail->next = d;
    } else {
        q->head = d;
    }
    q->tail = d;
    q->n++;
}

/* Queue what an earlier sender left in carried (an open record, or NULL),
 * for the sinks we still have (s NULL: none), due at once. */
static void
adopt(struct alert_sender *s, const struct dlqcarry *carried)
{
    size_t gone = 0, nomem = 0;
    for (int i = 0; carried != NULL && i < SINK_COUNT; i++) {
        size_t n = dlqcarry_notices(carried, i);
        for (size_t k = 0; k < n; k++) {
            const struct dlqcarry_notice *c = dlqcarry_notice_at(carried, i, k);
            if (s == NULL || !s->q[i].enabled) {
                gone++;
                continue;
            }
            struct delivery *d = malloc(sizeof(*d));
            if (d == NULL) {
                nomem++;
                continue;
            }
            d->sink = i;
            d->attempts = c->attempts < 0                    ? 0
                          : c->attempts > ALERT_MAX_ATTEMPTS ? ALERT_MAX_ATTEMPTS
                                                             : c->attempts;
            d->due_ms = clock_mono_ms();
            memcpy(&d->notice, c->notice, sizeof(d->notice));
            append(&s->q[i], d);
        }
    }
    if (gone > 0) {
        log_warn("alert: %zu undelivered notices dropped: their sink is no longer configured",
                 gone);
    }
    if (nomem > 0) {
        log_warn("alert: %zu undelivered notices dropped: out of memory", nomem);
    }
}

static struct alert_sender *
sender_new(const struct config *c)
{
    struct alert_sender *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (copy_settings(s, c) != 0 || (s->http = http_client_new(NULL)) == NULL) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        sender_free(s);
        return NULL;
    }
    return s;
}

struct alert_sender *
alert_sender_start(const struct config *c, const struct dlqcarry *carried)
{
    if (c->alerts.webhook.url == NULL && c->alerts.smtp.url == NULL) {
        adopt(NULL, carried);
        return NULL;
    }
    struct alert_sender *s = sender_new(c);
    if (s == NULL) {
        log_error("alerts: cannot start the delivery thread: out of memory (alerts are only "
                  "logged)");
        adopt(NULL, carried);
        return NULL;
    }
    adopt(s, carried);
    if (pthread_create(&s->thread, NULL, sender_main, s) != 0) {
        log_error("alerts: cannot start the delivery thread (alerts are only logged)");
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        sender_free(s);
        return NULL;
    }
    return s;
}

void
alert_sender_post(struct alert_sender *s, const struct alert_notice *n)
{
    if (s == NULL) {
        return;
    }
    size_t dropped = 0;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < SINK_COUNT; i++) {
        struct sink_queue *q = &s->q[i];
        struct delivery *d = q->enabled ? malloc(sizeof(*d)) : NULL;
        if (d == NULL) {
            dropped += q->enabled;
            continue;
        }
        d->sink = i;
        d->attempts = 0;
        d->due_ms = 0;
        d->notice = *n;
        append(q, d);
        if (q->n > SINK_QUEUE_MAX) { /* never the head: it may be in delivery */
            struct delivery *old = q->head->next;
            q->head->next = old->next;
            if (q->tail == old) {
                q->tail = q->head;
            }
            q->n--;
            free(old);
            dropped++;
        }
    }
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (dropped > 0) {
        log_warn("alert: %zu notices dropped: too many waiting for delivery", dropped);
    }
}

/* The waiting notices of s, into carry (being written), oldest first. */
static void
leave(struct alert_sender *s, struct dlqcarry *carry)
{
    size_t dropped = 0;
    for (int i = 0; i < SINK_COUNT; i++) {
        for (const struct delivery *d = s->q[i].head; d != NULL; d = d->next) {
            dropped += dlqcarry_put_notice(carry, i, d->attempts, d->due_ms, &d->notice) != 0;
        }
    }
    if (dropped > 0) {
        log_warn("alert: %zu undelivered notices dropped: the next monitor takes the newest %d "
                 "of each sink",
                 dropped, DLQCARRY_PER_SINK);
    }
}

void
alert_sender_stop(struct alert_sender *s, struct dlqcarry *carry)
{
    if (s == NULL) {
        return;
    }
    pthread_mutex_lock(&s->mu);
    flag_raise(&s->stop);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    if (carry != NULL) {
        leave(s, carry);
    }
    sender_free(s);
}
