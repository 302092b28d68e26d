/*
 * keytmpl.c - compiling idempotency key templates and expanding them per
 * message. Not a general string formatter: no conditionals, defaults or
 * transformations; a key is the message's intent, spelled out verbatim.
 */
#include "keytmpl.h"

#include "buf.h"
#include "cnum.h"
#include "jsonpath.h"
#include "sqsname.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <twice/plugin.h>

enum part_kind {
    PART_TEXT, /* literal text, braces already unescaped */
    PART_PATH, /* {a.b}: a JSON body path */
    PART_ATTR, /* {attr:Name}: a message attribute */
    PART_MSG   /* {msg:NAME}: a field of the message (enum keytmpl_msg) */
};

struct part {
    enum part_kind kind;
    enum keytmpl_msg msg; /* PART_MSG: which */
    char *text;           /* the literal, the path or the attribute name; owned */
    size_t len;
};

struct keytmpl {
    struct part *parts; /* owned, with every part's text */
    size_t n;
    int needs_body;
};

#define ATTR_PREFIX "attr:"
#define MSG_PREFIX  "msg:"

/* The 1-based column of byte offset `off`, counting UTF-8 characters (what
 * an editor shows), not bytes. */
static size_t
column_of(const char *text, size_t off)
{
    size_t col = 1;
    for (size_t i = 0; i < off; i++) {
        if (((unsigned char) text[i] & 0xc0) != 0x80) {
            col++;
        }
    }
    return col;
}

static int compile_error(char *err, size_t errlen, const char *text, size_t off, const char *fmt,
                         ...) __attribute__((format(printf, 5, 6)));

static int
compile_error(char *err, size_t errlen, const char *text, size_t off, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    cnum_vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "column %zu: %s", column_of(text, off), what);
    return -1;
}

/* Append a part, taking a copy of s. Merges with a preceding text part so
 * a template's literal runs stay one part. 0, or -1 on ENOMEM. */
static int
add_part(struct keytmpl *t, enum part_kind kind, const char *s, size_t n)
{
    if (kind == PART_TEXT && t->n > 0 && t->parts[t->n - 1].kind == PART_TEXT) {
        struct part *last = &t->parts[t->n - 1];
        char *p = realloc(last->text, last->len + n + 1);
        if (p == NULL) {
            return -1;
        }
        memcpy(p + last->len, s, n);
        last->len += n;
        p[last->len] = '\0';
        last->text = p;
        return 0;
    }
    struct part *parts = realloc(t->parts, (t->n + 1) * sizeof(*parts));
    if (parts == NULL) {
        return -1;
    }
    t->parts = parts;
    char *copy = strndup(s, n);
    if (copy == NULL) {
        return -1;
    }
    t->parts[t->n++] = (struct part){.kind = kind, .text = copy, .len = n};
    return 0;
}

static int
is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

static const char *const msg_names[KEYTMPL_MSG_COUNT] = {
    "group", "sns_message_id", "topic", "subject", "detail_type", "source", "event_id"};

const char *
keytmpl_msg_name(enum keytmpl_msg m)
{
    return m < KEYTMPL_MSG_COUNT ? msg_names[m] : "";
}

/* The enum keytmpl_msg called name[0..n), or -1. */
static int
find_msg(const char *name, size_t n)
{
    for (int i = 0; i < KEYTMPL_MSG_COUNT; i++) {
        if (strlen(msg_names[i]) == n && memcmp(msg_names[i], name, n) == 0) {
            return i;
        }
    }
    return -1;
}

/*
 * Classify the field text between the braces at text[open] and text[close]
 * and add it. -1 with err (naming the column of the opening brace), or -2
 * when out of memory.
 */
static int
compile_field(struct keytmpl *t, const char *text, size_t open, size_t close, char *err,
              size_t errlen)
{
    const char *f = text + open + 1;
    size_t n = close - open - 1;
    size_t plen = strlen(ATTR_PREFIX), mlen = strlen(MSG_PREFIX);

    if (n == 0) {
        return compile_error(err, errlen, text, open, "empty field {}");
    }
    for (size_t i = 0; i < n; i++) {
        if (is_control((unsigned char) f[i])) {
            return compile_error(err, errlen, text, open + 1 + i,
                                 "control character 0x%02x in template",
                                 (unsigned) (unsigned char) f[i]);
        }
    }
    if (n >= plen && memcmp(f, ATTR_PREFIX, plen) == 0) {
        if (n == plen) {
            return compile_error(err, errlen, text, open, "empty attribute name in {attr:}");
        }
        /* A name SQS refuses is on no message: every one would lack it. */
        if (!sqs_attr_name_ok(f + plen, n - plen)) {
            return compile_error(err, errlen, text, open,
                                 "\"%.*s\" is not a possible SQS message attribute name (%s)",
                                 (int) (n - plen > 64 ? 64 : n - plen), f + plen,
                                 SQS_ATTR_NAME_RULE);
        }
        return add_part(t, PART_ATTR, f + plen, n - plen) == 0 ? 0 : -2;
    }
    if (n >= mlen && memcmp(f, MSG_PREFIX, mlen) == 0) {
        int m = find_msg(f + mlen, n - mlen);
        if (m < 0) {
            return compile_error(err, errlen, text, open,
                                 "unknown message field {%.*s} (known: {msg:group}, "
                                 "{msg:sns_message_id}, {msg:topic}, {msg:subject}, "
                                 "{msg:detail_type}, {msg:source}, {msg:event_id})",
                                 (int) (n > 64 ? 64 : n), f);
        }
        if (add_part(t, PART_MSG, f + mlen, n - mlen) != 0) {
            return -2;
        }
        t->parts[t->n - 1].msg = (enum keytmpl_msg) m;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (f[i] == '.' && (i == 0 || i == n - 1 || f[i + 1] == '.')) {
            return compile_error(err, errlen, text, open + 1 + i, "empty path component in {%.*s}",
                                 (int) (n > 64 ? 64 : n), f);
        }
    }
    t->needs_body = 1;
    return add_part(t, PART_PATH, f, n) == 0 ? 0 : -2;
}

/*
 * Walk the template once. Literal runs are copied with "{{" and "}}"
 * unescaped; each '{' opens a field that must close before the next brace.
 */
static int
compile_parts(struct keytmpl *t, const char *text, size_t *nfields, size_t *literal, char *err,
              size_t errlen)
{
    size_t i = 0;

    while (text[i] != '\0') {
        char c = text[i];
        if ((c == '{' || c == '}') && text[i + 1] == c) {
            if (add_part(t, PART_TEXT, &text[i], 1) != 0) {
                goto nomem;
            }
            (*literal)++;
            i += 2;
        } else if (c == '}') {
            return compile_error(err, errlen, text, i,
                                 "stray '}' (write '}}' for a literal brace)");
        } else if (c == '{') {
            size_t j = i + 1;
            while (text[j] != '\0' && text[j] != '}' && text[j] != '{') {
                j++;
            }
            if (text[j] == '\0') {
                return compile_error(err, errlen, text, i, "unterminated field");
            }
            if (text[j] == '{') {
                return compile_error(err, errlen, text, j,
                                     "'{' inside a field (write '{{' outside fields)");
            }
            int rc = compile_field(t, text, i, j, err, errlen);
            if (rc == -2) {
                goto nomem;
            }
            if (rc != 0) {
                return -1;
            }
            (*nfields)++;
            i = j + 1;
        } else if (is_control((unsigned char) c)) {
            return compile_error(err, errlen, text, i, "control character 0x%02x in template",
                                 (unsigned) (unsigned char) c);
        } else {
            if (add_part(t, PART_TEXT, &text[i], 1) != 0) {
                goto nomem;
            }
            (*literal)++;
            i++;
        }
    }
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -1;
}

int
keytmpl_compile(const char *text, struct keytmpl **out, char *err, size_t errlen)
{
    size_t nfields = 0, literal = 0;
    struct keytmpl *t = calloc(1, sizeof(*t));

    *out = NULL;
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (compile_parts(t, text, &nfields, &literal, err, errlen) != 0) {
        goto fail;
    }
    if (nfields == 0) {
        compile_error(err, errlen, text, 0,
                      "no field: a constant key would make every message a duplicate "
                      "(use {path}, {attr:Name} or {msg:group})");
        goto fail;
    }
    if (literal >= TWICE_KEY_MAX) {
        compile_error(err, errlen, text, 0,
                      "literal text of %zu bytes leaves no room in a %d-byte key", literal,
                      TWICE_KEY_MAX);
        goto fail;
    }
    *out = t;
    return 0;
fail:
    keytmpl_free(t);
    return -1;
}

void
keytmpl_free(struct keytmpl *t)
{
    if (t == NULL) {
        return;
    }
    for (size_t i = 0; i < t->n; i++) {
        free(t->parts[i].text);
    }
    free(t->parts);
    free(t);
}

unsigned
keytmpl_msg_fields(const struct keytmpl *t)
{
    unsigned bits = 0;
    for (size_t i = 0; i < t->n; i++) {
        bits |= t->parts[i].kind == PART_MSG ? 1u << t->parts[i].msg : 0;
    }
    return bits;
}

int
keytmpl_needs_body(const struct keytmpl *t)
{
    return t->needs_body;
}

/* One expansion: the output, where this key starts in it, and err. */
struct expansion {
    struct buf *out;
    size_t start;
    char *err;
    size_t errlen;
};

static const char *
prefix_of(const struct part *p)
{
    return p->kind == PART_ATTR ? ATTR_PREFIX : p->kind == PART_MSG ? MSG_PREFIX : "";
}

/* Say why part p failed ("missing key field attr:Tenant") and return r. The
 * value itself is never quoted: it is untrusted and may be huge or secret. */
static enum keytmpl_result
field_error(struct expansion *x, enum keytmpl_result r, const struct part *p, const char *what,
            const char *detail)
{
    const char *prefix = r == KEYTMPL_MISSING ? "missing" : "bad";
    snprintf(x->err, x->errlen, "%s key field %s%s%s%s", prefix, prefix_of(p), p->text, what,
             detail);
    return r;
}

static enum keytmpl_result
too_long(struct expansion *x, const struct part *p)
{
    if (p->kind == PART_TEXT) {
        snprintf(x->err, x->errlen, "key longer than %d bytes", TWICE_KEY_MAX);
    } else {
        snprintf(x->err, x->errlen, "key longer than %d bytes at key field %s%s", TWICE_KEY_MAX,
                 prefix_of(p), p->text);
    }
    return KEYTMPL_TOO_LONG;
}

/*
 * Append n bytes of part p's value, refusing before any copy when the key
 * would pass TWICE_KEY_MAX: a hostile megabyte-long field costs one length
 * comparison. The buffer was reserved up front, so this never allocates.
 */
static enum keytmpl_result
append_checked(struct expansion *x, const struct part *p, const char *s, size_t n)
{
    if (n > TWICE_KEY_MAX - (x->out->len - x->start)) {
        return too_long(x, p);
    }
    buf_append(x->out, s, n);
    return KEYTMPL_OK;
}

/* A field's text: not empty, no control characters (a NUL, which only a
 * JSON string can hold as "\u0000", named as such); then appended. */
static enum keytmpl_result
append_value(struct expansion *x, const struct part *p, const char *s, size_t n)
{
    if (n == 0) {
        return field_error(x, KEYTMPL_BAD_VALUE, p, ": empty", "");
    }
    if (n > TWICE_KEY_MAX) {
        return append_checked(x, p, s, n); /* too long, whatever it holds */
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\0') {
            return field_error(x, KEYTMPL_BAD_VALUE, p, ": contains a NUL character",
                               " (\\u0000)");
        }
        if (is_control((unsigned char) s[i])) {
            return field_error(x, KEYTMPL_BAD_VALUE, p, ": contains a control character", "");
        }
    }
    return append_checked(x, p, s, n);
}

/* Why no path can be found in body, when its root is a scalar: a JSON
 * string is most often a job encoded twice (an SNS Message or a body
 * serialised once more by its producer). "" for objects and arrays. */
static const char *
root_hint(const struct jsondoc *body)
{
    switch (body->v[0].type) {
    case JSONDOC_OBJECT:
    case JSONDOC_ARRAY:
        return "";
    case JSONDOC_STRING:
        return " (the body is a JSON string, not an object: encoded twice?)";
    default:
        return " (the body is not a JSON object)";
    }
}

static enum keytmpl_result
expand_path(struct expansion *x, const struct part *p, const struct keytmpl_input *in)
{
    if (in->body == NULL) {
        snprintf(x->err, x->errlen, "key field %s needs a JSON body: %s", p->text,
                 in->body_error != NULL ? in->body_error : "the body is not JSON");
        return KEYTMPL_NOT_JSON;
    }
    const struct jsondoc_value *v = jsonpath_get(in->body, p->text);
    switch (v != NULL ? v->type : JSONDOC_NULL) {
    case JSONDOC_NULL:
        return field_error(x, KEYTMPL_MISSING, p, v != NULL ? " (null)" : root_hint(in->body), "");
    case JSONDOC_OBJECT:
        return field_error(x, KEYTMPL_BAD_VALUE, p, ": an object", " (need a string or number)");
    case JSONDOC_ARRAY:
        return field_error(x, KEYTMPL_BAD_VALUE, p, ": an array", " (need a string or number)");
    case JSONDOC_TRUE:
    case JSONDOC_FALSE:
        return field_error(x, KEYTMPL_BAD_VALUE, p, ": a boolean", " (need a string or number)");
    case JSONDOC_STRING:
        return append_value(x, p, v->str, v->len);
    default: {
        /* A number: formatted first, checked after (a real's key text is
         * short whatever its length; a huge integer is kept as written). */
        size_t before = x->out->len;
        if (jsonpath_key_text(v, x->out) != 0) {
            x->out->len = before;
            snprintf(x->err, x->errlen, "out of memory");
            return KEYTMPL_BAD_VALUE;
        }
        if (x->out->len - x->start > TWICE_KEY_MAX) {
            x->out->len = before;
            return too_long(x, p);
        }
        return KEYTMPL_OK;
    }
    }
}

/* String and Number attributes (and their custom subtypes, "Number.int");
 * Binary ones have no text and cannot be part of a key. */
static enum keytmpl_result
expand_attr(struct expansion *x, const struct part *p, const struct keytmpl_input *in)
{
    struct keytmpl_attr a = {NULL, NULL};
    if (in->attr == NULL || in->attr(in->attr_ctx, p->text, &a) != 0) {
        return field_error(x, KEYTMPL_MISSING, p, "", "");
    }
    const char *dt = a.data_type != NULL ? a.data_type : "";
    int text_type = strncmp(dt, "String", 6) == 0 || strncmp(dt, "Number", 6) == 0;
    if (!text_type || a.string_value == NULL) {
        return field_error(x, KEYTMPL_BAD_VALUE, p, ": a binary attribute",
                           " (need String or Number)");
    }
    return append_value(x, p, a.string_value, strlen(a.string_value));
}

/* {msg:NAME}: the group id, or a field of the message's envelope. */
static enum keytmpl_result
expand_msg(struct expansion *x, const struct part *p, const struct keytmpl_input *in)
{
    if (p->msg == KEYTMPL_MSG_GROUP) {
        if (in->group_id == NULL) {
            return field_error(x, KEYTMPL_MISSING, p, " (the message has no group id)", "");
        }
        return append_value(x, p, in->group_id, strlen(in->group_id));
    }
    const char *v = in->msg != NULL ? in->msg[p->msg] : NULL;
    if (v == NULL) {
        int sns = p->msg <= KEYTMPL_MSG_SUBJECT;
        return field_error(x, KEYTMPL_MISSING, p,
                           sns ? " (not an SNS notification)" : " (not an EventBridge event)", "");
    }
    return append_value(x, p, v, strlen(v));
}

static enum keytmpl_result
expand_part(struct expansion *x, const struct part *p, const struct keytmpl_input *in)
{
    switch (p->kind) {
    case PART_TEXT:
        return append_checked(x, p, p->text, p->len);
    case PART_PATH:
        return expand_path(x, p, in);
    case PART_ATTR:
        return expand_attr(x, p, in);
    case PART_MSG:
        return expand_msg(x, p, in);
    }
    return KEYTMPL_BAD_VALUE;
}

enum keytmpl_result
keytmpl_expand(const struct keytmpl *t, const struct keytmpl_input *in, struct buf *out, char *err,
               size_t errlen)
{
    struct expansion x = {out, out->len, err, errlen};
    enum keytmpl_result r = KEYTMPL_OK;

    /* Room for the longest key, so appends below never allocate. */
    if (buf_reserve(out, TWICE_KEY_MAX + 32) != 0) {
        snprintf(err, errlen, "out of memory");
        return KEYTMPL_BAD_VALUE;
    }
    for (size_t i = 0; i < t->n && r == KEYTMPL_OK; i++) {
        r = expand_part(&x, &t->parts[i], in);
    }
    if (r != KEYTMPL_OK) {
        out->len = x.start;
        out->data[out->len] = '\0';
    }
    return r;
}

enum keytmpl_result
keytmpl_check_derived(const char *key, int n, const char *plugin_error, struct buf *err)
{
    if (n < 0) {
        buf_printf(err, "derive_key: %s",
                   plugin_error != NULL ? plugin_error : "the plugin found no key");
        return KEYTMPL_BAD_VALUE;
    }
    if (n == 0 || n > TWICE_KEY_MAX) {
        buf_printf(err, "derive_key returned %d bytes (1-%d allowed)", n, TWICE_KEY_MAX);
        return n == 0 ? KEYTMPL_BAD_VALUE : KEYTMPL_TOO_LONG;
    }
    for (int i = 0; i < n; i++) {
        if (is_control((unsigned char) key[i])) {
            buf_puts(err, "derive_key returned a control character");
            return KEYTMPL_BAD_VALUE;
        }
    }
    if (!utf8_valid(key, (size_t) n)) {
        /* PostgreSQL would refuse it, and with it the whole claimed batch. */
        buf_puts(err, "derive_key returned bytes that are not UTF-8");
        return KEYTMPL_BAD_VALUE;
    }
    return KEYTMPL_OK;
}

const char *
keytmpl_reason(enum keytmpl_result r)
{
    switch (r) {
    case KEYTMPL_OK:
        return "";
    case KEYTMPL_NOT_JSON:
        return "invalid-json";
    case KEYTMPL_MISSING:
        return "missing-key-field";
    case KEYTMPL_BAD_VALUE:
        return "bad-key-field";
    case KEYTMPL_TOO_LONG:
        return "key-too-long";
    }
    return "";
}
