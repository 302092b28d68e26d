/*
 * fuzz-envelope.c - libFuzzer target: what a producer controls around a
 * job's body, as a worker reads it before any plugin runs: SNS and
 * EventBridge envelopes (envelope_open over the parsed body), S3 payload
 * pointers (payload_pointer_read), and the trace context of a message
 * (traceparent, the X-Ray AWSTraceHeader). Not for the body's JSON itself
 * (fuzz-body) or SQS's answers (fuzz-sqs-response).
 *
 * Input: the first byte chooses (mod 4): unwrap as SNS, as EventBridge, as
 * either (auto), or read the rest as trace headers; the rest is the text.
 * Promises checked: a refusal's reason is UTF-8 without control characters
 * (it goes into the dead letter's attributes and the log); an unwrapped body
 * is terminated, holds no NUL and is UTF-8, as are the {msg:NAME} values;
 * the kind found is the kind asked for; every SNS attribute has a name and
 * a type, and a Binary one no string; a pointer read has a bucket and a key
 * and reads back the same once written as the Extended Client writes it; a
 * traceparent read formats to a value that reads back the same ids; ASan
 * and LSan watch everything freed.
 */
#include "fuzz.h"

#include "buf.h"
#include "envelope.h"
#include "jsondoc.h"
#include "keytmpl.h"
#include "payload.h"
#include "tracectx.h"
#include "utf8.h"

/* Text a dead letter or a log line may carry: UTF-8, no control bytes. */
static void
check_reason(const char *s)
{
    size_t n = strlen(s);
    FUZZ_ASSERT(utf8_valid(s, n) && !fuzz_has_control(s, n, ""));
}

/* A string handed to key templates or plugins: terminated, no NUL, UTF-8. */
static void
check_text(const char *s, size_t len)
{
    FUZZ_ASSERT(s[len] == '\0' && memchr(s, '\0', len) == NULL);
    FUZZ_ASSERT(utf8_valid(s, len));
}

static void
check_envelope(int want, const struct envelope *e)
{
    if (want != ENVELOPE_AUTO) {
        FUZZ_ASSERT((int) e->found == want);
    }
    if (e->found == ENVELOPE_NONE) {
        FUZZ_ASSERT(e->body == NULL && e->nattrs == 0);
        return;
    }
    FUZZ_ASSERT(e->body != NULL);
    check_text(e->body, e->body_len);
    for (int m = 0; m < KEYTMPL_MSG_COUNT; m++) {
        if (e->msg[m] != NULL) {
            check_text(e->msg[m], strlen(e->msg[m]));
        }
    }
    for (size_t i = 0; i < e->nattrs; i++) {
        const struct sqs_attr *a = &e->attrs[i];
        FUZZ_ASSERT(a->name != NULL && a->data_type != NULL);
        if (strncmp(a->data_type, "Binary", 6) == 0) {
            FUZZ_ASSERT(a->string_value == NULL);
        } else {
            FUZZ_ASSERT(a->string_value != NULL);
        }
    }
}

/* A pointer read from body (doc: its parse, or NULL), both ways. */
static void
check_pointer(const struct jsondoc *doc, const char *body, size_t len, int claims)
{
    struct payload_pointer p;
    char err[512];
    int r = payload_pointer_read(doc, body, len, claims, &p, err, sizeof(err));
    FUZZ_ASSERT(r >= -1 && r <= 1);
    if (r == -1) {
        check_reason(err);
    }
    if (r != 1) {
        return;
    }
    FUZZ_ASSERT(p.bucket[0] != '\0' && p.key[0] != '\0');
    struct buf w = BUF_INIT;
    FUZZ_ASSERT(payload_pointer_write(&w, p.bucket, p.key) == 0);
    char perr[JSONDOC_ERROR_LEN];
    struct jsondoc *again = jsondoc_parse(w.data, w.len, perr, sizeof(perr));
    FUZZ_ASSERT(again != NULL);
    struct payload_pointer q;
    FUZZ_ASSERT(payload_pointer_read(again, w.data, w.len, 0, &q, err, sizeof(err)) == 1);
    FUZZ_ASSERT(strcmp(p.bucket, q.bucket) == 0 && strcmp(p.key, q.key) == 0);
    jsondoc_free(again);
    buf_free(&w);
}

static void
unwrap(int want, const char *text, size_t len)
{
    char derr[JSONDOC_ERROR_LEN];
    struct jsondoc *doc = jsondoc_parse(text, len, derr, sizeof(derr));
    struct envelope e;
    char err[512];
    int r = envelope_open(want, doc, doc != NULL ? NULL : derr, &e, err, sizeof(err));
    if (r != 0) {
        FUZZ_ASSERT(r == -1);
        check_reason(err);
    } else {
        check_envelope(want, &e);
    }
    if (r == 0 && e.found != ENVELOPE_NONE) {
        /* the pointer, if any, is looked for in the unwrapped body */
        char ierr[JSONDOC_ERROR_LEN];
        struct jsondoc *inner = jsondoc_parse(e.body, e.body_len, ierr, sizeof(ierr));
        check_pointer(inner, e.body, e.body_len, 0);
        jsondoc_free(inner);
    } else {
        check_pointer(doc, text, len, 0);
        check_pointer(doc, text, len, 1);
    }
    envelope_free(&e);
    jsondoc_free(doc);
}

static void
trace_headers(const char *text, size_t len)
{
    struct tracectx c, d;
    const char *why = NULL;
    if (tracectx_parse_traceparent(text, len, &c, &why) == 0) {
        char tp[TRACECTX_TRACEPARENT_LEN + 1];
        tracectx_format_traceparent(&c, tp);
        FUZZ_ASSERT(strlen(tp) == TRACECTX_TRACEPARENT_LEN);
        FUZZ_ASSERT(tracectx_parse_traceparent(tp, strlen(tp), &d, NULL) == 0);
        FUZZ_ASSERT(memcmp(&c, &d, sizeof(c)) == 0);
    } else {
        FUZZ_ASSERT(why != NULL);
        check_reason(why);
    }
    why = NULL;
    if (tracectx_parse_xray(text, len, &c, &why) == 0) {
        static const uint8_t zero[16];
        FUZZ_ASSERT(memcmp(c.trace_id, zero, 16) != 0 && memcmp(c.span_id, zero, 8) != 0);
    } else {
        FUZZ_ASSERT(why != NULL);
        check_reason(why);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    static const int wants[] = {ENVELOPE_SNS, ENVELOPE_EVENTBRIDGE, ENVELOPE_AUTO};
    int mode = data[0] % 4;
    char *text = fuzz_rest(data, size);
    if (text == NULL) {
        return 0;
    }
    if (mode < 3) {
        unwrap(wants[mode], text, size - 1);
    } else {
        trace_headers(text, size - 1);
    }
    free(text);
    return 0;
}
