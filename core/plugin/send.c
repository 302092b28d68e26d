/*
 * send.c - api->send()'s checks (send.h): resolve the queue, then refuse at
 * the call what SQS would refuse later (an unknown queue name, a body or
 * attributes too large or with characters SQS does not take, a FIFO queue
 * without a group), and copy the message for the outbox. Pure: no I/O.
 */
#include "send.h"

#include "buf.h"
#include "config.h"
#include "jsonwrite.h"
#include "outbox.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int refuse(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
refuse(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

int
send_url_is_fifo(const char *url)
{
    size_t n = strlen(url);
    return n > 5 && strcmp(url + n - 5, ".fifo") == 0;
}

/* The URL for queue: a configured queue's, or queue itself when it is a
 * URL; NULL when it is neither. Borrowed. */
static const char *
resolve(const struct config *c, const char *queue)
{
    for (size_t i = 0; c != NULL && i < c->nqueues; i++) {
        if (strcmp(c->queues[i].name, queue) == 0) {
            return c->queues[i].url;
        }
    }
    if (strncmp(queue, "https://", 8) == 0 || strncmp(queue, "http://", 7) == 0) {
        return queue;
    }
    return NULL;
}

/*
 * 1 when s[0..n) is text SQS takes: UTF-8 of #x9, #xA, #xD, #x20-#xD7FF,
 * #xE000-#xFFFD and #x10000-#x10FFFF (SQS would replace the others, so the
 * receiver would see something else than was sent).
 */
static int
sqs_text(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *) s;
    if (!utf8_valid(s, n)) {
        return 0;
    }
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq_len(p + i, n - i);
        if (len == 1 && p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') {
            return 0;
        }
        if (len == 3 && p[i] == 0xef && p[i + 1] == 0xbf &&
            (p[i + 2] == 0xbe || p[i + 2] == 0xbf)) {
            return 0; /* U+FFFE, U+FFFF */
        }
        i += len;
    }
    return 1;
}

/* A MessageGroupId: 1-128 characters, alphanumerics and punctuation. */
static int
group_ok(const char *g)
{
    size_t n = strlen(g);
    for (size_t i = 0; i < n; i++) {
        if (g[i] < 0x21 || g[i] > 0x7e) {
            return 0;
        }
    }
    return n >= 1 && n <= 128;
}

/* An attribute name SQS takes and twice does not reserve. */
static int
attr_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 256 || name[0] == '.' || name[n - 1] == '.' || strstr(name, "..") ||
        strncasecmp(name, "aws.", 4) == 0 || strncasecmp(name, "amazon.", 7) == 0 ||
        strcmp(name, SEND_ID_ATTR) == 0) {
        return 0;
    }
    return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == n;
}

/* The attributes as a JSON array into out->attrs; *bytes grows by what SQS
 * counts (name, "String", value). */
static int
copy_attrs(const char *const *attrs, struct outbox_msg *out, size_t *bytes, char *why,
           size_t whylen)
{
    size_t n = 0;
    while (attrs[2 * n] != NULL) {
        const char *name = attrs[2 * n], *value = attrs[2 * n + 1];
        if (++n > SEND_MAX_ATTRS) {
            return refuse(why, whylen, "more than %d attributes (SQS allows 10, twice adds %s)",
                          SEND_MAX_ATTRS, SEND_ID_ATTR);
        }
        if (!attr_name_ok(name)) {
            return refuse(why, whylen,
                          "attribute name \"%.64s\" is not allowed (1-256 of A-Z a-z 0-9 _ - ., "
                          "not AWS./Amazon., not %s)",
                          name, SEND_ID_ATTR);
        }
        if (value == NULL || *value == '\0' || !sqs_text(value, strlen(value))) {
            return refuse(why, whylen, "attribute %s: the value is %s", name,
                          value == NULL || *value == '\0' ? "missing or empty"
                                                          : "not text SQS takes");
        }
        *bytes += strlen(name) + strlen("String") + strlen(value);
    }
    struct buf b = BUF_INIT;
    struct jsonwrite w;
    int rc = jsonwrite_begin(&w, &b);
    jsonwrite_array(&w);
    for (size_t i = 0; i < 2 * n; i++) {
        jsonwrite_string(&w, attrs[i]);
    }
    jsonwrite_end_array(&w);
    rc |= jsonwrite_end(&w);
    out->attrs = rc == 0 ? buf_steal(&b) : NULL;
    buf_free(&b);
    return out->attrs != NULL ? 0 : refuse(why, whylen, "out of memory");
}

/* The checks of send_prepare that need no copy. */
static int
check(const char *url, const char *body, size_t len, int delay, const char *group_id, char *why,
      size_t whylen)
{
    int fifo = send_url_is_fifo(url);
    if (len == 0 || memchr(body, '\0', len) != NULL || !sqs_text(body, len)) {
        return refuse(why, whylen, "the body is %s",
                      len == 0 ? "empty (SQS needs at least one character)"
                               : "not text SQS takes (UTF-8 without control characters "
                                 "other than tab, CR, LF)");
    }
    if (len > SEND_MAX_BYTES) {
        return refuse(why, whylen, "the body is %zu bytes, over SQS's limit of %d", len,
                      SEND_MAX_BYTES);
    }
    if (delay < 0 || delay > SEND_MAX_DELAY || (fifo && delay != 0)) {
        return refuse(why, whylen, "delay %d: %s", delay,
                      fifo ? "FIFO queues take no per-message delay (use 0)"
                           : "must be 0-900 seconds");
    }
    if (fifo && group_id == NULL) {
        return refuse(why, whylen, "a FIFO queue needs a group id");
    }
    if (group_id != NULL && !group_ok(group_id)) {
        return refuse(why, whylen,
                      "group id must be 1-128 of ASCII letters, digits and "
                      "punctuation");
    }
    return 0;
}

int
send_prepare(const struct config *c, const char *key, const char *queue, const char *body,
             size_t len, int delay, const char *group_id, const char *const *attrs,
             struct outbox_msg *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof(*out));
    const char *url = queue != NULL && *queue != '\0' ? resolve(c, queue) : NULL;
    if (url == NULL || body == NULL) {
        return refuse(why, whylen,
                      url == NULL ? "queue \"%.200s\" is not a queue of twice.conf (name one of "
                                    "its queues, or give a queue URL)"
                                  : "queue %.200s: no body",
                      queue != NULL ? queue : "");
    }
    size_t n = len == (size_t) -1 ? strlen(body) : len;
    size_t bytes = n + strlen(SEND_ID_ATTR) + strlen("String") + strlen(key) + 12;
    char detail[400];
    int rc = check(url, body, n, delay, group_id, detail, sizeof(detail));
    if (rc == 0 && attrs != NULL) {
        rc = copy_attrs(attrs, out, &bytes, detail, sizeof(detail));
    }
    if (rc == 0 && bytes > SEND_MAX_BYTES) {
        rc = refuse(detail, sizeof(detail),
                    "the message is %zu bytes with its attributes, over SQS's limit of %d", bytes,
                    SEND_MAX_BYTES);
    }
    out->queue = rc == 0 ? strdup(queue) : NULL;
    out->url = rc == 0 ? strdup(url) : NULL;
    out->body = rc == 0 ? strndup(body, n) : NULL;
    out->group_id = rc == 0 && group_id != NULL ? strdup(group_id) : NULL;
    out->delay = delay;
    if (rc == 0 && (out->queue == NULL || out->url == NULL || out->body == NULL ||
                    (group_id != NULL && out->group_id == NULL))) {
        rc = refuse(detail, sizeof(detail), "out of memory");
    }
    if (rc != 0) {
        outbox_msg_clear(out);
        snprintf(why, whylen, "send to queue %.200s: %s", queue, detail);
    }
    return rc;
}
