/*
 * dlq.c - dead letters (see dlq.h). Pure building in dlq_letter_build,
 * one SendMessage in dlq_send; the caller deletes the source only after
 * the send was accepted.
 */
#include "dlq.h"

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
    return strncmp(a->name, "twice-", 6) == 0;
}

/* User attributes beyond `room` become one JSON attribute. */
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

int
dlq_letter_build(struct dlq_letter *l, const struct sqs_message *m, const struct dlq_reason *why,
                 int fifo)
{
    memset(l, 0, sizeof(*l));
    snprintf(l->attempts, sizeof(l->attempts), "%d", why->attempts);
    dlq_sanitize(why->error, l->error, DLQ_ERROR_MAX);
    add_attr(l, "twice-reason", "String", why->reason);
    add_attr(l, "twice-plugin", "String",
             why->plugin != NULL && why->plugin[0] != '\0' ? why->plugin : "-");
    add_attr(l, "twice-attempts", "Number", l->attempts);
    add_attr(l, "twice-source-message-id", "String", m->message_id);
    add_attr(l, "twice-source-queue", "String", why->queue_url);

    size_t user = 0;
    for (size_t i = 0; i < m->nattrs; i++) {
        user += !is_twice_attr(&m->attrs[i]);
    }
    size_t room = DLQ_MAX_ATTRS - l->nattrs;
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
    if (l->nattrs < DLQ_MAX_ATTRS && l->error[0] != '\0') {
        add_attr(l, "twice-error", "String", l->error);
    }
    if (l->nattrs < DLQ_MAX_ATTRS && why->key != NULL && why->key[0] != '\0') {
        add_attr(l, "twice-key", "String", why->key);
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
    l->packed = NULL;
}

int
dlq_send(struct sqs_client *c, const char *dlq_url, int fifo, const struct sqs_message *m,
         const struct dlq_reason *why, struct sqs_error *err)
{
    struct dlq_letter l;
    if (dlq_letter_build(&l, m, why, fifo) != 0) {
        memset(err, 0, sizeof(*err));
        snprintf(err->code, sizeof(err->code), "OutOfMemory");
        snprintf(err->message, sizeof(err->message), "building the dead letter");
        err->retryable = 1;
        dlq_letter_free(&l);
        return -1;
    }
    int rc = sqs_send(c, dlq_url, &l.entry, NULL, 0, err);
    dlq_letter_free(&l);
    return rc;
}
