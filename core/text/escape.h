/*
 * escape.h - untrusted bytes made safe to show on one line: in a log line,
 * an error message, a DLQ reason. Not quoting for a shell, SQL or JSON;
 * only what keeps a line one line and the text valid UTF-8.
 */
#ifndef TWICE_ESCAPE_H
#define TWICE_ESCAPE_H

#include <stddef.h>

struct buf;

/* Append s (n bytes) to b with control bytes, backslashes, quotes and
 * invalid UTF-8 escaped as \n, \t, \\, \", \xNN, and C1 controls,
 * U+2028/U+2029 and the bidirectional controls (escape_bidi_control) as
 * \uNNNN; other valid UTF-8 is kept. */
void escape_text(struct buf *b, const char *s, size_t n);

/* The same for text that is not in quotes and runs to the end of a line (a
 * log line's message, an error text): control bytes, invalid UTF-8, C1
 * controls, U+2028/U+2029 and bidirectional controls escaped, quotes and
 * backslashes kept. What either function wrote passes through it unchanged,
 * so text is never escaped twice. */
void escape_unquoted(struct buf *b, const char *s, size_t n);

/* " name=value" for a text log line's field, escaped as escape_text does;
 * a value that is empty or holds a space, quote, '=' or backslash is
 * quoted. Nothing for a NULL value. log.c's fields, and the mock host's
 * idea of how long twiced's line is. */
void escape_field(struct buf *b, const char *name, const char *value);

/* The code point of the bidirectional control (U+061C, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069) whose valid UTF-8 sequence of len bytes
 * starts at s, or 0: a terminal lets them reorder what follows on the line,
 * so text shown to a person escapes them. */
unsigned escape_bidi_control(const unsigned char *s, size_t len);

#endif
