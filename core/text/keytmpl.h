/*
 * keytmpl.h - idempotency key templates: "welcome-email:{candidateId}".
 *
 * A template is literal text and fields: {a.b} a JSON body path (strings and
 * numbers), {attr:Name} a message attribute (String or Number), {msg:group}
 * the FIFO MessageGroupId. "{{" and "}}" are literal braces. A template must
 * hold at least one field (a constant key would make every message a
 * duplicate of the first). Besides {msg:group}, {msg:NAME} reads what a
 * queue's envelope says of the message (keytmpl_msg: the SNS MessageId and
 * topic, the EventBridge detail-type, source and id). Compiled once per plugin; expanded per
 * message. Also the rule a key from a plugin's own derive_key() must obey. Pure: the daemon
 * (plugin/hostapi.c) and the SDK's mock host both derive keys here.
 */
#ifndef TWICE_KEYTMPL_H
#define TWICE_KEYTMPL_H

#include <stddef.h>

struct buf;
struct jsondoc;
struct keytmpl;

/* Compile; 0 and *out (keytmpl_free), or -1 with err naming the column
 * ("column 15: unterminated field"). */
int keytmpl_compile(const char *text, struct keytmpl **out, char *err, size_t errlen);
void keytmpl_free(struct keytmpl *t);

/* The {msg:NAME} fields t uses: bit (1 << enum keytmpl_msg) for each. */
unsigned keytmpl_msg_fields(const struct keytmpl *t);

/* Whether any field reads the JSON body (so the body must be parsed). */
int keytmpl_needs_body(const struct keytmpl *t);

/* A message attribute as a template sees it. */
struct keytmpl_attr {
    const char *data_type;    /* "String", "Number", "Number.int", "Binary"...; may be NULL */
    const char *string_value; /* its text; NULL for a Binary attribute */
};

/* Find the attribute called name in the message ctx: 0 and *out (pointers
 * borrowed from ctx for the expansion), or -1 when there is none. */
typedef int (*keytmpl_attr_fn)(const void *ctx, const char *name, struct keytmpl_attr *out);

/* The {msg:NAME} fields. GROUP is input.group_id; the others are
 * input.msg[] (an envelope's fields, twice's plugin/envelope.h). */
enum keytmpl_msg {
    KEYTMPL_MSG_GROUP,          /* {msg:group}: the MessageGroupId */
    KEYTMPL_MSG_SNS_MESSAGE_ID, /* {msg:sns_message_id}: the SNS notification's MessageId */
    KEYTMPL_MSG_TOPIC,          /* {msg:topic}: its TopicArn */
    KEYTMPL_MSG_SUBJECT,        /* {msg:subject}: its Subject */
    KEYTMPL_MSG_DETAIL_TYPE,    /* {msg:detail_type}: the EventBridge event's detail-type */
    KEYTMPL_MSG_SOURCE,         /* {msg:source}: its source */
    KEYTMPL_MSG_EVENT_ID,       /* {msg:event_id}: its id */
    KEYTMPL_MSG_COUNT
};

/* "group", "sns_message_id", ...: the NAME of {msg:NAME}. */
const char *keytmpl_msg_name(enum keytmpl_msg m);

/* What a message offers a template. */
struct keytmpl_input {
    const struct jsondoc *body; /* the parsed body, NULL when it is not JSON */
    const char *body_error;     /* why it is not JSON, when body is NULL */
    keytmpl_attr_fn attr;       /* the message's attributes; NULL: it has none */
    const void *attr_ctx;       /* passed to attr */
    const char *group_id;       /* the MessageGroupId; NULL when the message has none */
    /* KEYTMPL_MSG_COUNT values indexed by enum keytmpl_msg (NUL-terminated,
     * NULL when absent; [KEYTMPL_MSG_GROUP] is unused), or NULL: none. */
    const char *const *msg;
};

/* Why a message has no key; each maps to a DLQ reason (keytmpl_reason). */
enum keytmpl_result {
    KEYTMPL_OK = 0,
    KEYTMPL_NOT_JSON,  /* a body field is needed and the body is not JSON */
    KEYTMPL_MISSING,   /* a field, attribute or group id is absent (or null) */
    KEYTMPL_BAD_VALUE, /* an object/array/binary value, empty, control characters or NUL */
    KEYTMPL_TOO_LONG   /* the key would exceed TWICE_KEY_MAX bytes */
};

/*
 * Expand into out (appended). On failure nothing useful is in out and err
 * says which field and why ("missing key field candidateId").
 */
enum keytmpl_result keytmpl_expand(const struct keytmpl *t, const struct keytmpl_input *in,
                                   struct buf *out, char *err, size_t errlen);

/*
 * Check what a plugin's derive_key() returned (n, and its error text when
 * n < 0, NULL if it gave none): a key is 1 to TWICE_KEY_MAX bytes of UTF-8
 * without control characters, as an expanded template is. KEYTMPL_OK, or
 * the result with why appended to err ("derive_key returned a control
 * character"; the plugin's own error text is kept whole).
 */
enum keytmpl_result keytmpl_check_derived(const char *key, int n, const char *plugin_error,
                                          struct buf *err);

/* The DLQ reason code for a result: "invalid-json", "missing-key-field",
 * "bad-key-field", "key-too-long" ("" for KEYTMPL_OK). */
const char *keytmpl_reason(enum keytmpl_result r);

#endif
