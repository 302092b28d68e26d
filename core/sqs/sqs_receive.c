/*
 * sqs_receive.c - ReceiveMessage answers, read as a stream (jsonparse.c on
 * yajl) straight into struct sqs_message, every string of a batch in one
 * arena that its messages share; and the end of that memory. No tree, no
 * malloc per field. Other answers are sqs_parse.c's.
 *
 * Read as jansson read them before: members in any order, the last of a
 * repeated name wins, members of the wrong type count as absent, anything
 * unknown is skipped.
 */
#include "sqs_parse.h"

#include "arena.h"
#include "ascii.h"
#include "jsonparse.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SQS allows 10 message attributes; more than this is a broken answer (and
 * a repeated name is looked up among them, so they stay few). */
#define SQS_MAX_ATTRS 256

/* The memory of one received batch: the strings of all its messages. Each
 * message holds one reference; the last sqs_message_clear frees it. */
struct sqs_batch {
    atomic_long refs;
    struct arena arena;
};

/* What a container is, to the parser. */
enum frame {
    F_OTHER,    /* skipped, with all it holds */
    F_ROOT,     /* the answer */
    F_MESSAGES, /* "Messages": [...] */
    F_MESSAGE,  /* one message */
    F_SYSATTRS, /* its "Attributes" */
    F_MSGATTRS, /* its "MessageAttributes" */
    F_ENTRY     /* one message attribute {DataType, StringValue|BinaryValue} */
};

/* The member names the parser knows; K_OTHER for the rest. */
enum key {
    K_OTHER,
    K_MESSAGES,
    K_MESSAGE_ID,
    K_RECEIPT_HANDLE,
    K_BODY,
    K_MD5_BODY,
    K_MD5_ATTRS,
    K_ATTRIBUTES,
    K_MESSAGE_ATTRIBUTES,
    K_RECEIVE_COUNT,
    K_SENT_TIMESTAMP,
    K_GROUP_ID,
    K_TRACE_HEADER,
    K_DATA_TYPE,
    K_STRING_VALUE,
    K_BINARY_VALUE
};

/* The message being read: what is checked when it closes. */
struct pending {
    char md5_body[48], md5_attrs[48]; /* "" when absent (cut: SQS sends 32) */
    int has_md5_body, has_md5_attrs;
    size_t attrs_cap;
    /* per attribute being read: its BinaryValue (borrowed or in the arena) */
    const char **binary;
    size_t *binary_len;
};

struct receive {
    struct sqs_error *e;
    struct sqs_batch *batch;
    struct sqs_message *msgs; /* malloc'd, n used of cap */
    size_t n, cap;
    struct pending cur;
    const char *attr_name; /* the pending MessageAttributes name (in the arena) */
    size_t attr;           /* the index of the attribute being read */
    unsigned char frames[JSONPARSE_MAX_DEPTH];
    unsigned char keys[JSONPARSE_MAX_DEPTH]; /* the current member of each object */
};

/* The member name s[0..n) of an object of kind f, as a key. */
static enum key
classify(enum frame f, const char *s, size_t n)
{
    static const struct {
        unsigned char frame, len, key;
        const char *name;
    } known[] = {
        {F_ROOT, 8, K_MESSAGES, "Messages"},
        {F_MESSAGE, 9, K_MESSAGE_ID, "MessageId"},
        {F_MESSAGE, 13, K_RECEIPT_HANDLE, "ReceiptHandle"},
        {F_MESSAGE, 4, K_BODY, "Body"},
        {F_MESSAGE, 9, K_MD5_BODY, "MD5OfBody"},
        {F_MESSAGE, 22, K_MD5_ATTRS, "MD5OfMessageAttributes"},
        {F_MESSAGE, 10, K_ATTRIBUTES, "Attributes"},
        {F_MESSAGE, 17, K_MESSAGE_ATTRIBUTES, "MessageAttributes"},
        {F_SYSATTRS, 23, K_RECEIVE_COUNT, "ApproximateReceiveCount"},
        {F_SYSATTRS, 13, K_SENT_TIMESTAMP, "SentTimestamp"},
        {F_SYSATTRS, 14, K_GROUP_ID, "MessageGroupId"},
        {F_SYSATTRS, 14, K_TRACE_HEADER, "AWSTraceHeader"},
        {F_ENTRY, 8, K_DATA_TYPE, "DataType"},
        {F_ENTRY, 11, K_STRING_VALUE, "StringValue"},
        {F_ENTRY, 11, K_BINARY_VALUE, "BinaryValue"},
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (known[i].len == n && known[i].frame == f && memcmp(known[i].name, s, n) == 0) {
            return (enum key) known[i].key;
        }
    }
    return K_OTHER;
}

static int
nomem(struct jsonparse *p)
{
    struct receive *r = p->ctx;
    sqs_error_set(r->e, "OutOfMemory", 0, "out of memory");
    return jsonparse_fail(p, "out of memory");
}

/* A malformed answer: retryable (the messages come back after their
 * visibility timeout). */
static int
malformed(struct jsonparse *p, const char *what, const char *id)
{
    struct receive *r = p->ctx;
    if (id != NULL) {
        sqs_error_set(r->e, "MalformedResponse", 1, "message %.64s %s", id, what);
    } else {
        sqs_error_set(r->e, "MalformedResponse", 1, "%s", what);
    }
    return jsonparse_fail(p, "%s", what);
}

static struct sqs_message *
current(struct receive *r)
{
    return &r->msgs[r->n - 1];
}

static struct sqs_attr *
current_attr(struct receive *r)
{
    return &current(r)->attrs[r->attr];
}

/* A string into the batch (NUL-terminated), or NULL with the error set. */
static char *
copy(struct jsonparse *p, const char *s, size_t n)
{
    struct receive *r = p->ctx;
    char *c = arena_strndup(&r->batch->arena, s, n);
    if (c == NULL) {
        nomem(p);
    }
    return c;
}

/* The member `key` of the current message got a new value: the last one
 * wins, so what an earlier one set is forgotten. */
static void
forget(struct receive *r, enum key key)
{
    struct sqs_message *m = current(r);
    switch (key) {
    case K_MESSAGE_ID:
        m->message_id = NULL;
        break;
    case K_RECEIPT_HANDLE:
        m->receipt_handle = NULL;
        break;
    case K_BODY:
        m->body = NULL;
        m->body_len = 0;
        break;
    case K_MD5_BODY:
        r->cur.has_md5_body = 0;
        break;
    case K_MD5_ATTRS:
        r->cur.has_md5_attrs = 0;
        break;
    case K_ATTRIBUTES:
        m->receive_count = 0;
        m->sent_timestamp_ms = 0;
        m->group_id = NULL;
        m->aws_trace_header = NULL;
        break;
    case K_MESSAGE_ATTRIBUTES:
        m->nattrs = 0;
        break;
    default:
        break;
    }
}

/* A new message slot, zeroed; -1 on ENOMEM. */
static int
add_message(struct jsonparse *p)
{
    struct receive *r = p->ctx;
    if (r->n == r->cap) {
        size_t cap = r->cap != 0 ? r->cap * 2 : 10;
        struct sqs_message *m = realloc(r->msgs, cap * sizeof(*m));
        if (m == NULL) {
            return nomem(p);
        }
        r->msgs = m;
        r->cap = cap;
    }
    memset(&r->msgs[r->n++], 0, sizeof(r->msgs[0]));
    r->cur.has_md5_body = r->cur.has_md5_attrs = 0;
    r->cur.attrs_cap = 0;
    return 0;
}

/* The attribute being read: r->attr_name with the defaults (String, "").
 * One of that name already there is reset in its place (the last wins). */
static int
add_attr(struct jsonparse *p)
{
    struct receive *r = p->ctx;
    struct sqs_message *m = current(r);
    size_t i = 0;
    while (i < m->nattrs && strcmp(m->attrs[i].name, r->attr_name) != 0) {
        i++;
    }
    if (i == m->nattrs && m->nattrs == SQS_MAX_ATTRS) {
        return malformed(p, "has more than 256 message attributes", m->message_id);
    }
    if (i == m->nattrs && m->nattrs == r->cur.attrs_cap) {
        size_t cap = r->cur.attrs_cap != 0 ? r->cur.attrs_cap * 2 : 4;
        struct sqs_attr *a = arena_alloc(&r->batch->arena, cap * sizeof(*a));
        const char **b = arena_alloc(&r->batch->arena, cap * sizeof(*b));
        size_t *bl = arena_alloc(&r->batch->arena, cap * sizeof(*bl));
        if (a == NULL || b == NULL || bl == NULL) {
            return nomem(p);
        }
        if (m->nattrs > 0) {
            memcpy(a, m->attrs, m->nattrs * sizeof(*a));
            memcpy(b, r->cur.binary, m->nattrs * sizeof(*b));
            memcpy(bl, r->cur.binary_len, m->nattrs * sizeof(*bl));
        }
        m->attrs = a;
        r->cur.binary = b;
        r->cur.binary_len = bl;
        r->cur.attrs_cap = cap;
    }
    if (i == m->nattrs) {
        m->nattrs++;
    }
    r->attr = i;
    struct sqs_attr *a = &m->attrs[i];
    memset(a, 0, sizeof(*a));
    a->name = (char *) r->attr_name;
    a->data_type = (char *) "String";
    r->cur.binary[i] = NULL;
    r->cur.binary_len[i] = 0;
    return 0;
}

/* A value of the current message's member `key`. Strings only: a member of
 * another type counts as absent. */
static int
message_member(struct jsonparse *p, enum key key, enum jsonparse_kind kind, const char *s,
               size_t n)
{
    struct receive *r = p->ctx;
    struct sqs_message *m = current(r);
    forget(r, key);
    if (kind != JSONPARSE_STRING) {
        return 0;
    }
    switch (key) {
    case K_MESSAGE_ID:
        return (m->message_id = copy(p, s, n)) != NULL ? 0 : -1;
    case K_RECEIPT_HANDLE:
        return (m->receipt_handle = copy(p, s, n)) != NULL ? 0 : -1;
    case K_BODY:
        m->body_len = n;
        return (m->body = copy(p, s, n)) != NULL ? 0 : -1;
    case K_MD5_BODY:
        sqs_copy_cut(r->cur.md5_body, sizeof(r->cur.md5_body), s, n);
        r->cur.has_md5_body = 1;
        return 0;
    case K_MD5_ATTRS:
        sqs_copy_cut(r->cur.md5_attrs, sizeof(r->cur.md5_attrs), s, n);
        r->cur.has_md5_attrs = 1;
        return 0;
    default:
        return 0;
    }
}

/* A system attribute as text: SQS sends strings; integers are accepted too.
 * NULL for anything else (then the attribute counts as absent). */
static const char *
sysattr_text(enum jsonparse_kind kind, const char *s, size_t n, char *tmp, size_t len)
{
    int integer = kind == JSONPARSE_NUMBER && memchr(s, '.', n) == NULL &&
                  memchr(s, 'e', n) == NULL && memchr(s, 'E', n) == NULL;
    if (!integer && kind != JSONPARSE_STRING) {
        return NULL;
    }
    sqs_copy_cut(tmp, len, s, n);
    return tmp;
}

static int
sysattr(struct jsonparse *p, enum key key, enum jsonparse_kind kind, const char *s, size_t n)
{
    struct receive *r = p->ctx;
    struct sqs_message *m = current(r);
    char tmp[64];
    const char *v = sysattr_text(kind, s, n, tmp, sizeof(tmp));
    switch (key) {
    case K_RECEIVE_COUNT: {
        long c = v != NULL ? strtol(v, NULL, 10) : 0;
        m->receive_count = c < 1 ? 1 : c > 0x7fffffff ? 0x7fffffff : (int) c;
        if (v == NULL) {
            m->receive_count = 0; /* absent: 1 when the message closes */
        }
        return 0;
    }
    case K_SENT_TIMESTAMP:
        m->sent_timestamp_ms = v != NULL ? strtoll(v, NULL, 10) : 0;
        return 0;
    case K_GROUP_ID:
        m->group_id = NULL;
        if (kind == JSONPARSE_NUMBER && v != NULL) {
            /* an integer in decimal, as it was read before ("-0" is "0") */
            snprintf(tmp, sizeof(tmp), "%lld", strtoll(v, NULL, 10));
        }
        return v != NULL && (m->group_id = copy(p, kind == JSONPARSE_STRING ? s : v,
                                                kind == JSONPARSE_STRING ? n : strlen(v))) == NULL
                   ? -1
                   : 0;
    case K_TRACE_HEADER:
        /* X-Ray's header is text; anything else is not one, and is ignored */
        m->aws_trace_header = NULL;
        return kind == JSONPARSE_STRING && (m->aws_trace_header = copy(p, s, n)) == NULL ? -1 : 0;
    default:
        return 0;
    }
}

/* A member of the message attribute being read. */
static int
entry_member(struct jsonparse *p, enum key key, enum jsonparse_kind kind, const char *s, size_t n)
{
    struct receive *r = p->ctx;
    struct sqs_attr *a = current_attr(r);
    int str = kind == JSONPARSE_STRING;
    switch (key) {
    case K_DATA_TYPE:
        a->data_type = str ? copy(p, s, n) : (char *) "String";
        return a->data_type != NULL ? 0 : -1;
    case K_STRING_VALUE:
        a->string_value = str ? copy(p, s, n) : NULL;
        return !str || a->string_value != NULL ? 0 : -1;
    case K_BINARY_VALUE:
        /* decoded when the message closes; the text's own bytes last as long */
        r->cur.binary[r->attr] = !str ? NULL : p->in_text ? s : copy(p, s, n);
        r->cur.binary_len[r->attr] = str ? n : 0;
        return !str || r->cur.binary[r->attr] != NULL ? 0 : -1;
    default:
        return 0;
    }
}

static int
on_scalar(struct jsonparse *p, enum jsonparse_kind kind, const char *s, size_t n)
{
    struct receive *r = p->ctx;
    int d = p->depth;
    if (d == 0) {
        return malformed(p, "the response is not a JSON object: wrong type", NULL);
    }
    enum key key = (enum key) r->keys[d - 1];
    switch ((enum frame) r->frames[d - 1]) {
    case F_ROOT:
        if (key == K_MESSAGES) {
            r->n = 0; /* not an array: no messages */
        }
        return 0;
    case F_MESSAGES:
        return malformed(p, "a message is not a JSON object", NULL);
    case F_MESSAGE:
        return message_member(p, key, kind, s, n);
    case F_SYSATTRS:
        return sysattr(p, key, kind, s, n);
    case F_MSGATTRS:
        return add_attr(p); /* not an object: String, "" */
    case F_ENTRY:
        return entry_member(p, key, kind, s, n);
    default:
        return 0;
    }
}

static int
on_key(struct jsonparse *p, const char *s, size_t n)
{
    struct receive *r = p->ctx;
    int d = p->depth;
    enum frame f = (enum frame) r->frames[d - 1];
    r->keys[d - 1] = K_OTHER;
    if (f == F_MSGATTRS) {
        r->attr_name = copy(p, s, n);
        return r->attr_name != NULL ? 0 : -1;
    }
    r->keys[d - 1] = (unsigned char) classify(f, s, n);
    return 0;
}

/* What a container opening under its parent is. */
static int
on_open(struct jsonparse *p, int object)
{
    struct receive *r = p->ctx;
    int d = p->depth;
    enum frame parent = d > 0 ? (enum frame) r->frames[d - 1] : F_OTHER, f = F_OTHER;
    enum key key = d > 0 ? (enum key) r->keys[d - 1] : K_OTHER;
    if (d == 0) {
        if (!object) {
            return malformed(p, "the response is not a JSON object: wrong type", NULL);
        }
        f = F_ROOT;
    } else if (parent == F_ROOT && key == K_MESSAGES) {
        r->n = 0; /* the last "Messages" wins; an object holds none */
        f = object ? F_OTHER : F_MESSAGES;
    } else if (parent == F_MESSAGES) {
        if (!object) {
            return malformed(p, "a message is not a JSON object", NULL);
        }
        if (add_message(p) != 0) {
            return -1;
        }
        f = F_MESSAGE;
    } else if (parent == F_MESSAGE) {
        forget(r, key);
        f = !object                       ? F_OTHER
            : key == K_ATTRIBUTES         ? F_SYSATTRS
            : key == K_MESSAGE_ATTRIBUTES ? F_MSGATTRS
                                          : F_OTHER;
    } else if (parent == F_MSGATTRS) {
        if (add_attr(p) != 0) {
            return -1;
        }
        f = object ? F_ENTRY : F_OTHER;
    } else if (parent == F_SYSATTRS) {
        sysattr(p, key, JSONPARSE_NULL, NULL, 0); /* wrong type: absent */
    } else if (parent == F_ENTRY) {
        entry_member(p, key, JSONPARSE_NULL, NULL, 0);
    }
    r->frames[d] = (unsigned char) f;
    r->keys[d] = K_OTHER;
    return 0;
}

/* The attributes of the message that closes, as the old reader made them:
 * Binary types ("Binary", "Binary.x") from BinaryValue (required, base64),
 * the rest from StringValue ("" when missing). */
static int
finish_attrs(struct jsonparse *p, struct sqs_message *m)
{
    struct receive *r = p->ctx;
    for (size_t i = 0; i < m->nattrs; i++) {
        struct sqs_attr *a = &m->attrs[i];
        if (strncmp(a->data_type, "Binary", 6) != 0) {
            a->string_value = a->string_value != NULL ? a->string_value : (char *) "";
            continue;
        }
        const char *b64 = r->cur.binary[i];
        size_t len = r->cur.binary_len[i];
        a->string_value = NULL;
        a->binary = b64 != NULL && len < SIZE_MAX / 3
                        ? arena_alloc(&r->batch->arena, len / 4 * 3 + 1)
                        : NULL;
        if (b64 == NULL || a->binary == NULL ||
            sqs_base64_decode_into(b64, len, a->binary, &a->binary_len) != 0) {
            sqs_error_set(r->e, "MalformedResponse", 1, "message attribute %.64s: bad BinaryValue",
                          a->name);
            return jsonparse_fail(p, "bad BinaryValue");
        }
    }
    return 0;
}

/* A message is complete: the checks the old reader made, in its order. */
static int
finish_message(struct jsonparse *p)
{
    struct receive *r = p->ctx;
    struct sqs_message *m = current(r);
    char md5[33];
    if (m->message_id == NULL || m->receipt_handle == NULL) {
        return malformed(p, "a message lacks MessageId or ReceiptHandle", NULL);
    }
    if (m->body == NULL) {
        return malformed(p, "has no Body", m->message_id);
    }
    if (r->cur.has_md5_body && sqs_md5_hex(m->body, m->body_len, md5) == 0 &&
        ascii_strcasecmp(md5, r->cur.md5_body) != 0) {
        sqs_error_set(r->e, "BodyMD5Mismatch", 1,
                      "message %.64s: MD5OfBody %.40s, body hashes to %s", m->message_id,
                      r->cur.md5_body, md5);
        return jsonparse_fail(p, "MD5OfBody mismatch");
    }
    if (finish_attrs(p, m) != 0) {
        return -1;
    }
    if (r->cur.has_md5_attrs && m->nattrs > 0 && sqs_md5_of_attrs(m->attrs, m->nattrs, md5) == 0 &&
        ascii_strcasecmp(md5, r->cur.md5_attrs) != 0) {
        sqs_error_set(r->e, "AttributesMD5Mismatch", 1,
                      "message %.64s: MD5OfMessageAttributes %.40s, attributes hash to %s",
                      m->message_id, r->cur.md5_attrs, md5);
        return jsonparse_fail(p, "MD5OfMessageAttributes mismatch");
    }
    if (m->receive_count == 0) {
        m->receive_count = 1; /* ApproximateReceiveCount missing */
    }
    return 0;
}

static int
on_close(struct jsonparse *p, int object)
{
    struct receive *r = p->ctx;
    (void) object;
    return r->frames[p->depth] == F_MESSAGE ? finish_message(p) : 0;
}

static const struct jsonparse_events events = {
    .scalar = on_scalar,
    .key = on_key,
    .open = on_open,
    .close = on_close,
};

static void
batch_free(struct sqs_batch *b)
{
    if (b != NULL) {
        arena_free(&b->arena);
        free(b);
    }
}

int
sqs_parse_receive(const char *json, size_t len, struct sqs_message **msgs, size_t *n,
                  struct sqs_error *e)
{
    *msgs = NULL;
    *n = 0;
    if (len == 0) {
        return 0; /* an empty answer counts as {} */
    }
    struct receive *r = malloc(sizeof(*r)); /* frames and keys are set as they open */
    if (r != NULL) {
        memset(r, 0, offsetof(struct receive, frames));
    }
    if (r == NULL || (r->batch = calloc(1, sizeof(*r->batch))) == NULL) {
        free(r);
        sqs_error_set(e, "OutOfMemory", 0, "out of memory");
        return -1;
    }
    r->e = e;
    e->code[0] = '\0';
    /* the decoded strings are shorter than the answer: usually one chunk */
    arena_hint(&r->batch->arena, len + 512);
    char err[256];
    int rc = jsonparse_run(json, len, &events, r, err, sizeof(err));
    if (rc != 0 && e->code[0] == '\0') {
        sqs_error_set(e, "MalformedResponse", 1, "the response is not a JSON object: %s", err);
    }
    if (rc != 0 || r->n == 0) {
        free(r->msgs);
        batch_free(r->batch);
    } else {
        atomic_init(&r->batch->refs, (long) r->n);
        for (size_t i = 0; i < r->n; i++) {
            r->msgs[i].batch = r->batch;
        }
        *msgs = r->msgs;
        *n = r->n;
    }
    free(r);
    return rc;
}

void
sqs_message_clear(struct sqs_message *m)
{
    struct sqs_batch *b = m->batch;
    memset(m, 0, sizeof(*m));
    if (b != NULL && atomic_fetch_sub(&b->refs, 1) == 1) {
        batch_free(b);
    }
}

void
sqs_messages_free(struct sqs_message *msgs, size_t n)
{
    for (size_t i = 0; msgs != NULL && i < n; i++) {
        sqs_message_clear(&msgs[i]);
    }
    free(msgs);
}
