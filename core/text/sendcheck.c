/*
 * sendcheck.c - what SQS would refuse in a message api->send() stages
 * (sendcheck.h): size, characters, attributes, FIFO fields. Pure: libc and
 * yajl only, so the SDK's mock host refuses what the daemon refuses.
 */
#include "sendcheck.h"

#include "buf.h"
#include "cnum.h"
#include "jsonwrite.h"
#include "sqsname.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int refuse(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
refuse(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cnum_vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

const char *
sendcheck_resolve(const char *queue, const char *body,
                  const char *(*url_of)(const void *ctx, const char *name), const void *ctx,
                  char *why, size_t whylen)
{
    const char *url = NULL;
    if (queue != NULL && *queue != '\0') {
        url = url_of(ctx, queue);
        if (url == NULL &&
            (strncmp(queue, "https://", 8) == 0 || strncmp(queue, "http://", 7) == 0)) {
            url = queue;
        }
    }
    if (url == NULL) {
        refuse(why, whylen,
               "send: queue \"%.200s\" is not a queue of twice.conf (name one of its queues, "
               "or give a queue URL)",
               queue != NULL ? queue : "");
    } else if (body == NULL) {
        refuse(why, whylen, "send to queue %.200s: no body", queue);
        url = NULL;
    }
    return url;
}

int
sendcheck_is_fifo(const char *url)
{
    size_t n = strlen(url);
    return n > 5 && strcmp(url + n - 5, ".fifo") == 0;
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

int
sendcheck_twice_attr(const char *name)
{
    return strncmp(name, "twice-", 6) == 0 && strcmp(name, SENDCHECK_ID_ATTR) != 0;
}

/* An attribute name SQS takes (sqsname.c) and twice does not reserve. */
static int
attr_name_ok(const char *name)
{
    return sqs_attr_name_ok(name, strlen(name)) && strncmp(name, "twice-", 6) != 0;
}

/* The attributes as a JSON array into *json (malloc'd); *bytes grows by what SQS
 * counts (name, "String", value). */
static int
copy_attrs(const char *const *attrs, char **json, size_t *bytes, char *why, size_t whylen)
{
    size_t n = 0;
    while (attrs[2 * n] != NULL) {
        const char *name = attrs[2 * n], *value = attrs[2 * n + 1];
        if (++n > SENDCHECK_MAX_ATTRS) {
            return refuse(why, whylen, "more than %d attributes (SQS allows 10, twice adds %s)",
                          SENDCHECK_MAX_ATTRS, SENDCHECK_ID_ATTR);
        }
        if (!attr_name_ok(name)) {
            return refuse(why, whylen,
                          "attribute name \"%.64s\" is not allowed (1-256 of A-Z a-z 0-9 _ - ., "
                          "not AWS./Amazon., not twice-*: twice's own, %s is added for you)",
                          name, SENDCHECK_ID_ATTR);
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
    *json = rc == 0 ? buf_steal(&b) : NULL;
    buf_free(&b);
    return *json != NULL ? 0 : refuse(why, whylen, "out of memory");
}

/* The checks of send_prepare that need no copy. */
static int
check(const char *url, const char *body, size_t len, int delay, const char *group_id, char *why,
      size_t whylen)
{
    int fifo = sendcheck_is_fifo(url);
    if (len == 0 || memchr(body, '\0', len) != NULL || !sqs_text(body, len)) {
        return refuse(why, whylen, "the body is %s",
                      len == 0 ? "empty (SQS needs at least one character)"
                               : "not text SQS takes (UTF-8 without control characters "
                                 "other than tab, CR, LF)");
    }
    if (len > SENDCHECK_MAX_BYTES) {
        return refuse(why, whylen, "the body is %zu bytes, over SQS's limit of %d", len,
                      SENDCHECK_MAX_BYTES);
    }
    if (delay < 0 || delay > SENDCHECK_MAX_DELAY || (fifo && delay != 0)) {
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
sendcheck_message(const char *url, const char *key, size_t idx, const char *body, size_t len,
                  int delay, const char *group_id, const char *const *attrs, char **attrs_json,
                  char *why, size_t whylen)
{
    char index[24];
    *attrs_json = NULL;
    size_t bytes = len + strlen(SENDCHECK_ID_ATTR) + strlen("String") + strlen(key) +
                   (size_t) snprintf(index, sizeof(index), "#%zu", idx);
    int rc = check(url, body, len, delay, group_id, why, whylen);
    if (rc == 0 && attrs != NULL) {
        rc = copy_attrs(attrs, attrs_json, &bytes, why, whylen);
    }
    if (rc == 0 && bytes > SENDCHECK_MAX_BYTES) {
        rc = refuse(why, whylen,
                    "the message is %zu bytes with its attributes, over SQS's limit of %d", bytes,
                    SENDCHECK_MAX_BYTES);
    }
    if (rc != 0) {
        free(*attrs_json);
        *attrs_json = NULL;
    }
    return rc;
}
