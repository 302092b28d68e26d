/*
 * alert.c - the pure half of alert.h: building a notice, its text, its JSON
 * document and its mail, and the rise/repeat/resolve rule. No I/O and no
 * threads here; delivery is alert_sink.c, the DLQ checks are dlqmon.c.
 */
#include "alert.h"

#include "ascii.h"
#include "backoff.h"
#include "buf.h"
#include "dlq.h"
#include "escape.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *
alert_kind_name(enum alert_kind k)
{
    switch (k) {
    case ALERT_ALERT:
        return "alert";
    case ALERT_REPORT:
        return "report";
    case ALERT_REPEAT:
        return "repeat";
    case ALERT_RESOLVED:
        return "resolved";
    case ALERT_PAUSED:
        return "paused";
    case ALERT_RESUMED:
        return "resumed";
    default:
        return "none";
    }
}

void
alert_notice_init(struct alert_notice *n, const char *queue, const char *dlq_url, const char *host,
                  int64_t now)
{
    memset(n, 0, sizeof(*n));
    n->depth = -1;
    n->previous = -1;
    n->time = now;
    snprintf(n->queue, sizeof(n->queue), "%s", queue != NULL ? queue : "");
    snprintf(n->dlq_url, sizeof(n->dlq_url), "%s", dlq_url != NULL ? dlq_url : "");
    snprintf(n->host, sizeof(n->host), "%s", host != NULL ? host : "");
}

static const char *
or_dash(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : "-";
}

void
alert_notice_add_letter(struct alert_notice *n, const char *reason, const char *plugin,
                        const char *message_id, const char *key, int64_t at)
{
    reason = or_dash(reason);
    plugin = or_dash(plugin);
    n->letters++;
    size_t i = 0;
    while (i < n->ncounts && (strcmp(n->counts[i].reason, reason) != 0 ||
                              strcmp(n->counts[i].plugin, plugin) != 0)) {
        i++;
    }
    if (i == n->ncounts && n->ncounts < ALERT_COUNTS) {
        snprintf(n->counts[i].reason, sizeof(n->counts[i].reason), "%s", reason);
        snprintf(n->counts[i].plugin, sizeof(n->counts[i].plugin), "%s", plugin);
        n->ncounts++;
    }
    if (i < n->ncounts) {
        n->counts[i].n++;
    } else {
        n->other_counts++;
    }
    if (n->nexamples < ALERT_EXAMPLES) {
        struct alert_letter *e = &n->examples[n->nexamples++];
        snprintf(e->message_id, sizeof(e->message_id), "%s", or_dash(message_id));
        snprintf(e->key, sizeof(e->key), "%s", key != NULL ? key : "");
        snprintf(e->reason, sizeof(e->reason), "%s", reason);
        snprintf(e->plugin, sizeof(e->plugin), "%s", plugin);
        e->at = at;
    }
}

void
alert_format_time(int64_t t, char *out, size_t cap)
{
    struct tm tm;
    time_t tt = (time_t) t;
    gmtime_r(&tt, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Untrusted text for a reader: escaped like a log line; for Slack also
 * &, <, > (the only characters its message format gives a meaning). */
static void
put_text(struct buf *b, const char *s, int slack)
{
    struct buf esc = BUF_INIT;
    escape_text(&esc, s, strlen(s));
    for (const char *p = buf_str(&esc); *p != '\0'; p++) {
        if (slack && *p == '&') {
            buf_puts(b, "&amp;");
        } else if (slack && *p == '<') {
            buf_puts(b, "&lt;");
        } else if (slack && *p == '>') {
            buf_puts(b, "&gt;");
        } else {
            buf_putc(b, *p);
        }
    }
    if (esc.failed) {
        b->failed = 1;
    }
    buf_free(&esc);
}

static const char *
plural(long n)
{
    return n == 1 ? "" : "s";
}

/* The headline: what happened to the DLQ's depth. */
static void
headline(struct buf *b, const struct alert_notice *n, int slack)
{
    buf_puts(b, "[twice@");
    put_text(b, n->host, slack);
    buf_puts(b, "] queue ");
    put_text(b, n->queue, slack);
    buf_puts(b, ": ");
    long d = n->depth, p = n->previous;
    switch (n->kind) {
    case ALERT_ALERT:
        if (p < 0) {
            buf_printf(b, "dead-letter queue holds %ld message%s", d, plural(d));
        } else {
            buf_printf(b, "dead-letter queue went from empty to %ld message%s (+%ld)", d,
                       plural(d), d - p);
        }
        break;
    case ALERT_REPEAT:
        buf_printf(b, "dead-letter queue still holds %ld message%s", d, plural(d));
        break;
    case ALERT_RESOLVED:
        buf_printf(b, "dead-letter queue is empty again (was %ld)", p);
        break;
    case ALERT_PAUSED:
        buf_puts(b, "paused (");
        put_text(b, n->pause_reason, slack);
        buf_puts(b, ")");
        break;
    case ALERT_RESUMED:
        buf_puts(b, "resumed");
        break;
    default:
        if (d >= 0 && p >= 0 && d > p) {
            buf_printf(b, "dead-letter queue rose from %ld to %ld message%s (+%ld)", p, d,
                       plural(d), d - p);
        } else {
            buf_printf(b, "%ld message%s dead-lettered since the last check", n->letters,
                       plural(n->letters));
            if (d >= 0) {
                buf_printf(b, " (dead-letter queue holds %ld)", d);
            }
        }
    }
}

/* Counts per (reason, plugin), then the examples. */
static void
letter_lines(struct buf *b, const struct alert_notice *n, int slack)
{
    if (n->letters == 0) {
        return;
    }
    buf_printf(b, "\nDead-lettered by twice since the last check: %ld (", n->letters);
    for (size_t i = 0; i < n->ncounts; i++) {
        buf_puts(b, i > 0 ? ", " : "");
        put_text(b, n->counts[i].reason, slack);
        buf_puts(b, " from ");
        put_text(b, n->counts[i].plugin, slack);
        buf_printf(b, ": %ld", n->counts[i].n);
    }
    if (n->other_counts > 0) {
        buf_printf(b, ", other: %ld", n->other_counts);
    }
    buf_puts(b, ")");
    for (size_t i = 0; i < n->nexamples; i++) {
        const struct alert_letter *e = &n->examples[i];
        buf_puts(b, "\n- message ");
        put_text(b, e->message_id, slack);
        if (e->key[0] != '\0') {
            buf_puts(b, " key ");
            put_text(b, e->key, slack);
        }
        buf_puts(b, ": ");
        put_text(b, e->reason, slack);
        buf_puts(b, " (plugin ");
        put_text(b, e->plugin, slack);
        buf_puts(b, ")");
    }
    if (n->letters > (long) n->nexamples) {
        buf_printf(b, "\n- and %ld more", n->letters - (long) n->nexamples);
    }
    if (n->lost > 0) {
        buf_printf(b,
                   "\n(and %ld dead letters of any queue came too fast to be recorded one by one)",
                   n->lost);
    }
}

/* What a paused queue means, and what ends it. */
static void
pause_lines(struct buf *b, const struct alert_notice *n, int slack)
{
    if (strcmp(n->pause_reason, "breaker") == 0) {
        buf_puts(b, "\nIts circuit breaker opened: its downstream keeps failing. No host receives "
                    "from it; a probe job runs after the cooldown and resumes it on success.");
    } else {
        buf_puts(b, "\nNo host receives from it; jobs already running finish.");
    }
    if (n->pause_until > 0) {
        char at[32];
        alert_format_time(n->pause_until, at, sizeof(at));
        buf_printf(b, "\n%s: %s",
                   strcmp(n->pause_reason, "breaker") == 0 ? "Probe after" : "Until", at);
    }
    buf_puts(b, "\nResume it now: twicectl resume ");
    put_text(b, n->queue, slack);
}

char *
alert_notice_text(const struct alert_notice *n, int slack)
{
    struct buf b = BUF_INIT;
    headline(&b, n, slack);
    if (n->kind == ALERT_PAUSED || n->kind == ALERT_RESUMED) {
        if (n->kind == ALERT_PAUSED) {
            pause_lines(&b, n, slack);
        }
        return buf_steal(&b);
    }
    letter_lines(&b, n, slack);
    if (n->kind != ALERT_RESOLVED) {
        buf_puts(&b, "\nSee them: twicectl dlq list ");
        put_text(&b, n->queue, slack);
        buf_puts(&b, "; send them back once fixed: twicectl dlq redrive ");
        put_text(&b, n->queue, slack);
        buf_puts(&b, " --all");
    }
    return buf_steal(&b);
}

/* A JSON string of untrusted text: characters SQS attributes may not hold
 * (and bytes that are not UTF-8) become '?', so jansson accepts it. */
static json_t *
jstr(const char *s)
{
    char clean[1024];
    dlq_sanitize(s, clean, sizeof(clean));
    return json_string(clean);
}

static json_t *
jdepth(long d)
{
    return d >= 0 ? json_integer(d) : json_null();
}

static json_t *
letters_json(const struct alert_notice *n, json_t **counts_out)
{
    json_t *letters = json_array(), *counts = json_array();
    for (size_t i = 0; letters != NULL && counts != NULL && i < n->ncounts; i++) {
        json_array_append_new(
            counts, json_pack("{s:o,s:o,s:I}", "reason", jstr(n->counts[i].reason), "plugin",
                              jstr(n->counts[i].plugin), "count", (json_int_t) n->counts[i].n));
    }
    for (size_t i = 0; letters != NULL && counts != NULL && i < n->nexamples; i++) {
        const struct alert_letter *e = &n->examples[i];
        char at[32];
        alert_format_time(e->at, at, sizeof(at));
        json_array_append_new(letters,
                              json_pack("{s:o,s:o,s:o,s:o,s:s}", "message_id", jstr(e->message_id),
                                        "key", e->key[0] ? jstr(e->key) : json_null(), "reason",
                                        jstr(e->reason), "plugin", jstr(e->plugin), "time", at));
    }
    *counts_out = counts;
    return letters;
}

char *
alert_notice_json(const struct alert_notice *n)
{
    char *text = alert_notice_text(n, 1);
    json_t *counts = NULL;
    json_t *letters = letters_json(n, &counts);
    char at[32];
    alert_format_time(n->time, at, sizeof(at));
    json_t *doc = NULL;
    if (text != NULL && letters != NULL && counts != NULL) {
        doc = json_pack(
            "{s:s,s:o,s:o,s:o,s:o,s:s,s:I,s:I,s:O,s:O,s:o,s:s}", "kind", alert_kind_name(n->kind),
            "queue", jstr(n->queue), "dlq_url", jstr(n->dlq_url), "dlq_depth", jdepth(n->depth),
            "previous_depth", jdepth(n->previous), "text", text, "dead_letters_total",
            (json_int_t) n->letters, "dead_letters_lost", (json_int_t) n->lost, "counts", counts,
            "dead_letters", letters, "host", jstr(n->host), "time", at);
    }
    if (doc != NULL && (n->kind == ALERT_PAUSED || n->kind == ALERT_RESUMED)) {
        char until[32];
        alert_format_time(n->pause_until, until, sizeof(until));
        json_object_set_new(doc, "reason", jstr(n->pause_reason));
        json_object_set_new(doc, "until", n->pause_until > 0 ? json_string(until) : json_null());
    }
    char *out = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    json_decref(counts);
    json_decref(letters);
    free(text);
    return out;
}

/* A header value from configuration or our own text: no CR/LF, ASCII only
 * (non-ASCII becomes '?', so no RFC 2047 encoding is needed). */
static void
put_clean(struct buf *b, const char *value)
{
    for (const unsigned char *p = (const unsigned char *) value; *p != '\0'; p++) {
        buf_putc(b, (*p >= 0x20 && *p < 0x7f) ? (char) *p : '?');
    }
}

static void
put_header(struct buf *b, const char *name, const char *value)
{
    buf_printf(b, "%s: ", name);
    put_clean(b, value);
    buf_puts(b, "\r\n");
}

/* RFC 5322 date in English whatever the locale. */
static void
mail_date(int64_t t, char *out, size_t cap)
{
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    time_t tt = (time_t) t;
    gmtime_r(&tt, &tm);
    snprintf(out, cap, "%s, %02d %s %04d %02d:%02d:%02d +0000", days[tm.tm_wday], tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* The body with CRLF line ends (SMTP's; a bare LF is not allowed). */
static void
put_body(struct buf *b, const char *text)
{
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '\n') {
            buf_puts(b, "\r\n");
        } else if (*p != '\r') {
            buf_putc(b, *p);
        }
    }
    buf_puts(b, "\r\n");
}

char *
alert_notice_email(const struct alert_notice *n, const char *from, char *const *to, size_t nto)
{
    char *text = alert_notice_text(n, 0);
    if (text == NULL) {
        return NULL;
    }
    struct buf b = BUF_INIT, list = BUF_INIT;
    for (size_t i = 0; i < nto; i++) {
        buf_printf(&list, "%s%s", i > 0 ? ", " : "", to[i]);
    }
    char date[64], subject[256];
    mail_date(n->time, date, sizeof(date));
    size_t first = strcspn(text, "\n");
    snprintf(subject, sizeof(subject), "%.*s", (int) first, text);
    put_header(&b, "From", from);
    put_header(&b, "To", buf_str(&list));
    put_header(&b, "Subject", subject);
    put_header(&b, "Date", date);
    buf_printf(&b, "Message-ID: <twice.%lld.%d.%016llx@", (long long) n->time, (int) getpid(),
               (unsigned long long) backoff_random());
    put_clean(&b, n->host[0] != '\0' ? n->host : "localhost");
    buf_puts(&b, ">\r\n");
    buf_puts(&b, "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
                 "Content-Transfer-Encoding: 8bit\r\n");
    put_header(&b, "X-Twice-Kind", alert_kind_name(n->kind));
    buf_puts(&b, "\r\n");
    put_body(&b, text);
    free(text);
    buf_free(&list);
    return buf_steal(&b);
}

enum alert_kind
alert_rule_step(struct alert_rule *r, long depth, long letters, int64_t now, int repeat_after)
{
    long prev = r->depth;
    enum alert_kind k = ALERT_NONE;
    if (depth < 0) {
        /* Depth unknown: keep what we knew; still report new dead letters. */
        k = letters > 0 ? ALERT_REPORT : ALERT_NONE;
    } else if (depth > 0 && prev <= 0) {
        k = ALERT_ALERT;
    } else if (prev >= 0 && depth > prev) {
        k = ALERT_REPORT;
    } else if (depth == 0 && prev > 0) {
        k = ALERT_RESOLVED;
    } else if (letters > 0) {
        k = ALERT_REPORT;
    } else if (depth > 0 && repeat_after > 0 && now - r->last_sent >= repeat_after) {
        k = ALERT_REPEAT;
    }
    if (depth >= 0) {
        r->depth = depth;
    }
    if (k == ALERT_RESOLVED) {
        r->last_sent = 0;
    } else if (k != ALERT_NONE) {
        r->last_sent = now;
    }
    return k;
}

int
alert_retry_delay(int attempt)
{
    return (int) backoff_ceiling(1, ALERT_RETRY_CAP, attempt);
}

/* Parsed by curl's own URL parser, so what is logged is the host curl
 * connects to, and nothing of a user name, password, path or query leaks. */
void
alert_url_origin(const char *url, char *out, size_t cap)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    if (u != NULL && curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
        curl_url_get(u, CURLUPART_PORT, &port, 0);
        snprintf(out, cap, "%s://%s%s%s", scheme, host, port != NULL ? ":" : "",
                 port != NULL ? port : "");
    } else {
        snprintf(out, cap, "(a URL that does not parse)");
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
}

int
alert_smtp_needs_tls(const char *url, int has_credentials)
{
    if (!has_credentials || ascii_strncasecmp(url, "smtp://", 7) != 0) {
        return 0;
    }
    char *host = NULL;
    CURLU *u = curl_url();
    int loopback = 0;
    if (u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
        loopback = strcmp(host, "127.0.0.1") == 0 || strcmp(host, "[::1]") == 0 ||
                   ascii_strcasecmp(host, "localhost") == 0;
    }
    curl_free(host);
    curl_url_cleanup(u);
    return !loopback;
}
