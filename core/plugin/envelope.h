/*
 * envelope.h - the wrappers AWS puts around a job before it reaches SQS:
 * an SNS notification (the job is its Message, a JSON string) and an
 * EventBridge event (the job is its detail). A queue's `envelope` says which
 * to expect; unwrapping gives the inner body that key templates, routing,
 * the plugin API and the handler see, the SNS MessageAttributes, and the
 * {msg:NAME} fields of key templates. Pure: reads a parsed body, no I/O.
 */
#ifndef TWICE_ENVELOPE_H
#define TWICE_ENVELOPE_H

#include <stddef.h>

#include "arena.h"
#include "config.h"
#include "keytmpl.h"
#include "sqs_types.h"

struct jsondoc;

/* A queue's `envelope` setting (config_queue.envelope). */
enum envelope_kind {
    ENVELOPE_NONE = CONFIG_ENVELOPE_NONE, /* the body is the job */
    ENVELOPE_SNS = CONFIG_ENVELOPE_SNS,   /* an SNS notification (raw delivery off) */
    ENVELOPE_EVENTBRIDGE = CONFIG_ENVELOPE_EVENTBRIDGE, /* an EventBridge event */
    ENVELOPE_AUTO = CONFIG_ENVELOPE_AUTO /* either, recognised by its fields; else as is */
};

/* "none", "sns", "eventbridge", "auto". */
const char *envelope_name(enum envelope_kind k);

/* An unwrapped message. Everything is owned by it (envelope_free). */
struct envelope {
    enum envelope_kind found; /* SNS, EVENTBRIDGE, or NONE (auto, nothing recognised) */
    char *body;               /* the inner body, NUL-terminated; NULL when found is NONE */
    size_t body_len;
    const char *msg[KEYTMPL_MSG_COUNT]; /* {msg:NAME} values, NULL when absent */
    struct sqs_attr *attrs;             /* SNS MessageAttributes (String, Number; a Binary
                                           one has string_value NULL) */
    size_t nattrs;
    struct arena strings; /* body, msg values, attrs and their strings */
};

/*
 * Unwrap doc (the parsed body of a message; NULL when it is not JSON) as
 * `want` says (not ENVELOPE_NONE). 0 and *e filled (envelope_free it), or
 * -1 with err saying why the message does not match: not JSON, not an SNS
 * notification, a Message that is not a string or holds a NUL byte, an
 * event without detail... (the DLQ reason bad-envelope). *e needs freeing
 * either way.
 */
int envelope_open(int want, const struct jsondoc *doc, const char *doc_error, struct envelope *e,
                  char *err, size_t errlen);
void envelope_free(struct envelope *e);

#endif
