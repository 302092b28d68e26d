/*
 * dlq.c - dead letters (see dlq.h). Pure building in dlq_letter_build,
 * one SendMessage in dlq_send (two when SQS refuses the first for its
 * size); the caller deletes the source only after the send was accepted.
 */
#include "dlq.h"

#include "sendcheck.h"
#include "sqs_parse.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the UTF-8 sequence at s if it encodes a character SQS accepts
 * (#x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF), else 0. */
static size_t
sqs_char_len(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80) {
        return (s[0] >= 0x20 || s[0] == 0x9 || s[0] == 0xa || s[0] == 0xd) ? 1 : 0;
    }
    size_t len = (s[0] & 0xe0) == 0xc0   ? 2
                 : (s[0] & 0xf0) == 0xe0 ? 3
                 : (s[0] & 0xf8) == 0xf0 ? 4
                                         : 0;
    if (len == 0 || len > n) {
        return 0;
    }
    unsigned cp = s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff ||
        cp > 0x10ffff) {
        return 0;
    }
    return len;
}

void
dlq_sanitize(const char *s, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *) (s != NULL ? s : "");
    size_t n = strlen((const char *) p);
    size_t o = 0;
    for (size_t i = 0; i < n && cap > 0;) {
        size_t len = sqs_char_len(p + i, n - i);
        if (len == 0) {
            if (o + 1 >= cap) {
                break;
            }
            out[o++] = '?';
            i++;
            continue;
        }
        if (o + len >= cap) {
            break;
        }
        memcpy(out + o, p + i, len);
        o += len;
        i += len;
    }
    if (cap > 0) {
        out[o] = '\0';
    }
}

static void
add_attr(struct dlq_letter *l, const char *name, const char *type, const char *value)
{
    struct sqs_attr *a = &l->attrs[l->nattrs++];
    memset(a, 0, sizeof(*a));
    a->name = (char *) name;
    a->data_type = (char *) type;
    a->string_value = (char *) value;
}

static int
is_twice_attr(const struct sqs_attr *a)
{
    return sendcheck_twice_attr(a->name);
}

/* An attribute's bytes as SQS counts them: name, data type and value; a
 * Binary value as its base64 text (what the JSON protocol carries), which
 * is never less than SQS's own count. */
static size_t
attr_bytes(const struct sqs_attr *a)
{
    size_t n = strlen(a->name) + strlen(a->data_type);
    if (a->string_value != NULL) {
        return n + strlen(a->string_value);
    }
    return n + 4 * ((a->binary_len + 2) / 3);
}

/* User attributes beyond the first `from` become one JSON attribute. */
static int
pack_rest(struct dlq_letter *l, const struct sqs_message *m, size_t from)
{
    json_t *obj = json_object();
    if (obj == NULL) {
        return -1;
    }
    size_t seen = 0;
    for (size_t i = 0; i < m->nattrs; i++) {
        const struct sqs_attr *a = &m->attrs[i];
        if (is_twice_attr(a) || seen++ < from) {
            continue;
        }
        /* Binary values in base64, as SQS itself carries them. */
        json_t *v = sqs_attr_json(a);
        if (v == NULL || json_object_set_new(obj, a->name, v) != 0) {
            json_decref(obj);
            return -1;
        }
    }
    l->packed = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(obj);
    if (l->packed == NULL) {
        return -1;
    }
    add_attr(l, "twice-packed-attributes", "String", l->packed);
    return 0;
}

/* twice-error: the job's detail, sanitised, as its log line has it (job.c
 * cut it to JOB_ERROR_MAX bytes and "..."); a longer one is cut the same
 * way, so that a reader of the letter can tell it was cut. */
static void
error_attr(const char *error, char *out)
{
    dlq_sanitize(error, out, DLQ_ERROR_MAX + 1);
    if (strlen(out) < strlen(error != NULL ? error : "")) { /* '?' replaces byte for byte */
        dlq_sanitize(error, out, JOB_ERROR_MAX + 1);
        strcat(out, "...");
    }
}

/* A sanitised copy of s (dlq_sanitize never makes a text longer), or NULL
 * on ENOMEM. */
static char *
sanitized_dup(const char *s)
{
    size_t n = strlen(s != NULL ? s : "") + 1;
    char *out = malloc(n);
    if (out != NULL) {
        dlq_sanitize(s, out, n);
    }
    return out;
}

/* Lay the letter's attributes out: twice's required ones, its optional
 * ones not in `dropped` (DLQ_TRIM_* bits), then the user's in the slots
 * left, the rest packed; and count its bytes. 0, or -1 on ENOMEM. */
static int
layout(struct dlq_letter *l, const struct sqs_message *m, const char *reason, int dropped)
{
    free(l->packed);
    l->packed = NULL;
    l->nattrs = 0;
    add_attr(l, "twice-reason", "String", reason);
    add_attr(l, "twice-source-message-id", "String", l->source_id);
    add_attr(l, "twice-source-queue", "String", l->source_queue);
    if (!(dropped & DLQ_TRIM_PLUGIN)) {
        add_attr(l, "twice-plugin", "String", l->plugin[0] != '\0' ? l->plugin : "-");
    }
    if (!(dropped & DLQ_TRIM_ATTEMPTS)) {
        add_attr(l, "twice-attempts", "Number", l->attempts);
    }
    if (!(dropped & DLQ_TRIM_ERROR) && l->error[0] != '\0') {
        add_attr(l, "twice-error", "String", l->error);
    }
    if (!(dropped & DLQ_TRIM_KEY) && l->key[0] != '\0') {
        add_attr(l, "twice-key", "String", l->key);
    }

    size_t user = 0;
    for (size_t i = 0; i < m->nattrs; i++) {
        user += !is_twice_attr(&m->attrs[i]);
    }
    size_t room = DLQ_MAX_ATTRS - l->nattrs; /* at least 3: twice has at most 7 */
    size_t direct = user <= room ? user : room - 1;
    size_t taken = 0;
    for (size_t i = 0; i < m->nattrs && taken < direct; i++) {
        if (!is_twice_attr(&m->attrs[i])) {
            l->attrs[l->nattrs++] = m->attrs[i];
            taken++;
        }
    }
    if (direct < user && pack_rest(l, m, direct) != 0) {
        return -1;
    }
    l->bytes = m->body_len;
    for (size_t i = 0; i < l->nattrs; i++) {
        l->bytes += attr_bytes(&l->attrs[i]);
    }
    return 0;
}

/* The next of twice's optional parts to leave out, in order, or 0 when
 * none is left. */
static int
next_drop(int dropped)
{
    static const int order[] = {DLQ_TRIM_ERROR, DLQ_TRIM_KEY, DLQ_TRIM_ATTEMPTS, DLQ_TRIM_PLUGIN};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        if (!(dropped & order[i])) {
            return order[i];
        }
    }
    return 0;
}

/* Lay the letter out within max bytes: twice-error shortened by what is
 * over, then the optional parts left out one by one. 0, -1 on ENOMEM, -2
 * when even the smallest letter is over. */
static int
fit(struct dlq_letter *l, const struct sqs_message *m, const struct dlq_reason *why, size_t max)
{
    int dropped = 0;
    int had[2] = {l->error[0] != '\0', l->key[0] != '\0'}; /* what leaving out loses */
    for (;;) {
        if (layout(l, m, why->reason, dropped) != 0) {
            return -1;
        }
        if (l->bytes <= max) {
            return 0;
        }
        size_t over = l->bytes - max, len = strlen(l->error);
        if (!(dropped & DLQ_TRIM_ERROR) && len > over) {
            dlq_sanitize(why->error, l->error, len - over + 1); /* at a character */
            l->trimmed |= DLQ_TRIM_ERROR_CUT;
            if (l->error[0] != '\0') {
                continue;
            }
        }
        int next = next_drop(dropped);
        if (next == 0) {
            return -2;
        }
        dropped |= next;
        if ((next != DLQ_TRIM_ERROR || had[0]) && (next != DLQ_TRIM_KEY || had[1])) {
            l->trimmed = (l->trimmed | next) & ~(next == DLQ_TRIM_ERROR ? DLQ_TRIM_ERROR_CUT : 0);
        }
    }
}

int
dlq_letter_build(struct dlq_letter *l, const struct sqs_message *m, const struct dlq_reason *why,
                 int fifo, size_t max_bytes)
{
    memset(l, 0, sizeof(*l));
    snprintf(l->attempts, sizeof(l->attempts), "%d", why->attempts);
    error_attr(why->error, l->error);
    l->key = sanitized_dup(why->key);
    l->plugin = sanitized_dup(why->plugin);
    l->source_id = sanitized_dup(m->message_id);
    l->source_queue = sanitized_dup(why->queue_url);
    if (l->key == NULL || l->plugin == NULL || l->source_id == NULL || l->source_queue == NULL) {
        return -1;
    }
    int rc = fit(l, m, why, max_bytes > 0 ? max_bytes : SQS_MESSAGE_MAX_BYTES);
    if (rc != 0) {
        return rc;
    }
    l->entry.body = m->body;
    l->entry.body_len = m->body_len;
    l->entry.attrs = l->attrs;
    l->entry.nattrs = l->nattrs;
    l->entry.delay_seconds = -1;
    l->entry.group_id = m->group_id; /* FIFO, or a fair queue's tenant */
    if (fifo) {
        /* A fresh deduplication id that is still the same if this very
         * letter is sent again after a failure. */
        snprintf(l->dedup, sizeof(l->dedup), "dlq-%s", m->message_id);
        l->entry.dedup_id = l->dedup;
    }
    return 0;
}

void
dlq_letter_free(struct dlq_letter *l)
{
    free(l->packed);
    free(l->key);
    free(l->plugin);
    free(l->source_id);
    free(l->source_queue);
    l->packed = l->key = l->plugin = l->source_id = l->source_queue = NULL;
}

size_t
dlq_refused_size(const struct sqs_error *err)
{
    static const char said[] = "shorter than ";
    if (strcmp(err->code, "InvalidParameterValue") != 0 &&
        strcmp(err->query_code, "InvalidParameterValue") != 0) {
        return 0;
    }
    const char *p = strstr(err->message, said);
    if (p == NULL) {
        return 0;
    }
    char *end;
    unsigned long long n = strtoull(p + strlen(said), &end, 10);
    if (end == p + strlen(said) || strncmp(end, " bytes", 6) != 0 || n == 0 ||
        n > SQS_MESSAGE_MAX_BYTES) {
        return 0;
    }
    return (size_t) n;
}

/* Build the letter for fit->max_bytes; when too large, ask the queue's
 * MaximumMessageSize once (it may have been raised) and build again. 0,
 * or -1 with err. */
static int
build_to_fit(struct sqs_client *c, const char *dlq_url, int fifo, const struct sqs_message *m,
             const struct dlq_reason *why, struct dlq_fit *f, struct dlq_letter *l,
             struct sqs_error *err)
{
    int rc = dlq_letter_build(l, m, why, fifo, f->max_bytes);
    size_t now = 0;
    if (rc == -2 && sqs_check_queue(c, dlq_url, &now, err) == 0 && now > 0 &&
        now != f->max_bytes) {
        f->max_bytes = now;
        dlq_letter_free(l);
        rc = dlq_letter_build(l, m, why, fifo, f->max_bytes);
    }
    f->bytes = l->bytes;
    f->trimmed = l->trimmed;
    if (rc == -1) {
        sqs_error_set(err, "OutOfMemory", 1, "building the dead letter");
    } else if (rc == -2) {
        sqs_error_set(err, DLQ_TOO_LARGE_CODE, 0,
                      "the dead letter is %zu bytes even without twice's optional attributes, "
                      "over the %zu bytes the dead-letter queue accepts (its "
                      "MaximumMessageSize)",
                      l->bytes, f->max_bytes > 0 ? f->max_bytes : (size_t) SQS_MESSAGE_MAX_BYTES);
    }
    return rc == 0 ? 0 : -1;
}

int
dlq_send(struct sqs_client *c, const char *dlq_url, int fifo, const struct sqs_message *m,
         const struct dlq_reason *why, struct dlq_fit *fit, struct sqs_error *err)
{
    fit->calls = 0;
    for (int round = 0;; round++) {
        struct dlq_letter l;
        int rc = build_to_fit(c, dlq_url, fifo, m, why, fit, &l, err);
        if (rc == 0) {
            fit->calls++;
            rc = sqs_send(c, dlq_url, &l.entry, NULL, 0, err);
        }
        size_t sent = l.bytes;
        dlq_letter_free(&l);
        size_t said = rc == 0 ? 0 : dlq_refused_size(err);
        if (rc == 0 || said == 0 || round > 0 || fit->calls == 0) {
            return rc;
        }
        /* Refused for its size: below what SQS says, and below what was sent
         * should SQS count otherwise. */
        fit->max_bytes = said < sent ? said : sent - 1;
    }
}
