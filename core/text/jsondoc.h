/*
 * jsondoc.h - a message body parsed once, strictly, into its values in
 * document order, each with its original text: what key templates, routing
 * and the plugin API read. Not a JSON library: no editing, no writing;
 * reading by path is jsonpath.h's.
 *
 * RFC 8259 as twice reads it: any value (a bare "42" is a body without
 * fields); strict UTF-8; "\u0000" allowed inside strings (a key refuses it
 * later); numbers of any size, kept as written; an object member named
 * twice is allowed, and the last one wins when read by name.
 */
#ifndef TWICE_JSONDOC_H
#define TWICE_JSONDOC_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"

enum jsondoc_type {
    JSONDOC_NULL,
    JSONDOC_FALSE,
    JSONDOC_TRUE,
    JSONDOC_NUMBER,
    JSONDOC_STRING,
    JSONDOC_ARRAY,
    JSONDOC_OBJECT
};

/* One value. Its text is doc->text[start..end); those of an object or array
 * follow it, and `next` is the index just past them (and so of its next
 * sibling, if it has one). */
struct jsondoc_value {
    const char *str;  /* STRING: decoded bytes (may hold NUL); NUMBER: its text */
    const char *name; /* the member name when the parent is an object, else NULL */
    uint32_t len;     /* of str */
    uint32_t name_len;
    uint32_t start, end; /* its original text */
    uint32_t next;       /* the index after this value and everything inside it */
    uint32_t count;      /* ARRAY: elements, OBJECT: members (names may repeat) */
    uint8_t type;        /* enum jsondoc_type */
};

/* Values a document holds without another allocation (most bodies). */
#define JSONDOC_INLINE 8

struct jsondoc {
    const char *text;        /* the body (borrowed: must outlive the document) */
    size_t len;              /* its length */
    struct jsondoc_value *v; /* v[0] is the root: inline_v, or owned */
    uint32_t n, cap;         /* values used and allocated */
    struct arena strings;    /* decoded strings and names that had escapes */
    struct jsondoc_value inline_v[JSONDOC_INLINE];
};

/* The room the host gives a parse error (a job's body_error): a longer
 * reason is cut there, in the daemon and in the SDK's mock host alike. */
#define JSONDOC_ERROR_LEN 160

/*
 * Parse a body, the one way twice does everywhere. Returns a document that
 * borrows text (free with jsondoc_free), or NULL with err set to "line L
 * column C: what is wrong" (printable ASCII). Bodies of 4 GiB or more are
 * refused.
 */
struct jsondoc *jsondoc_parse(const char *text, size_t len, char *err, size_t errlen);
void jsondoc_free(struct jsondoc *d);

/* The value's original text, as the producer wrote it; *len its length. */
const char *jsondoc_raw(const struct jsondoc *d, const struct jsondoc_value *v, size_t *len);

#endif
