/*
 * jsonparse.h - reading JSON text strictly, as a stream of events: how twice
 * reads message bodies and SQS answers on its hot paths. yajl (Debian's
 * libyajl) lexes and checks the grammar; this layer adds what yajl leaves
 * out: strict UTF-8 (no overlong forms, no surrogates, nothing past
 * U+10FFFF), \u escapes whose surrogates pair up, no \v or \f between
 * tokens, a depth limit, and where each token lies in the text. Not a tree:
 * callers keep what they need (jsondoc.c a body's values, sqs_parse.c
 * message structs).
 */
#ifndef TWICE_JSONPARSE_H
#define TWICE_JSONPARSE_H

#include <stddef.h>

/* Deeper nesting is refused (jansson's limit, which twice had before). */
#define JSONPARSE_MAX_DEPTH 2048

enum jsonparse_kind {
    JSONPARSE_NULL,
    JSONPARSE_FALSE,
    JSONPARSE_TRUE,
    JSONPARSE_NUMBER, /* s is its text exactly as written ("1.50", "1e400") */
    JSONPARSE_STRING  /* s is decoded UTF-8 and may hold NUL bytes ("\u0000") */
};

struct jsonparse;

/*
 * What a reader is told, in document order. Each returns 0 to go on, or
 * -1 to stop the parse (after jsonparse_fail, which says why). A NULL
 * function ignores its events.
 */
struct jsonparse_events {
    /* A scalar (s is NULL for null, true and false). s is borrowed for the
     * call, or as long as the text when p->in_text is set. */
    int (*scalar)(struct jsonparse *p, enum jsonparse_kind kind, const char *s, size_t n);
    /* An object member's name, decoded (borrowed like a string). */
    int (*key)(struct jsonparse *p, const char *s, size_t n);
    /* '{' (object = 1) or '[' (0) opens; '}' or ']' closes. */
    int (*open)(struct jsonparse *p, int object);
    int (*close)(struct jsonparse *p, int object);
};

/* The parse in progress, as a callback sees it. */
struct jsonparse {
    void *ctx;         /* the caller's, from jsonparse_run */
    const char *text;  /* the text being read (borrowed) */
    size_t len;        /* its length */
    size_t start, end; /* the current token's bytes: text[start..end) */
    int depth;         /* containers open around the current token */
    int in_text;       /* the current string's bytes are the text's own (no escapes) */
    /* private to jsonparse.c */
    void *yajl;
    size_t prev_end;
    int finishing;
    char why[160];
};

/*
 * Read text[0..len) as exactly one JSON value (RFC 8259; a bare scalar is
 * one), calling ev with ctx. Returns 0, or -1 with err set to "line L
 * column C: what is wrong" (printable ASCII: nothing of the input is
 * quoted). Any byte sequence is safe to pass.
 */
int jsonparse_run(const char *text, size_t len, const struct jsonparse_events *ev, void *ctx,
                  char *err, size_t errlen);

/* From a callback: refuse the text with this reason; returns -1. */
int jsonparse_fail(struct jsonparse *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
