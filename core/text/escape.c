/*
 * escape.c - escaping untrusted text for one line (see escape.h). Used by
 * the logger for every message and field, and wherever an error quotes
 * input it did not write (a path, a host, a template, jansson's text).
 */
#include "escape.h"

#include "buf.h"
#include "utf8.h"

#include <string.h>

/* The code point of a 2- or 3-byte UTF-8 sequence (len checked valid). */
static unsigned
code_point(const unsigned char *s, size_t len)
{
    if (len == 2) {
        return ((unsigned) (s[0] & 0x1f) << 6) | (s[1] & 0x3f);
    }
    return ((unsigned) (s[0] & 0x0f) << 12) | ((unsigned) (s[1] & 0x3f) << 6) | (s[2] & 0x3f);
}

unsigned
escape_bidi_control(const unsigned char *s, size_t len)
{
    if (len != 2 && len != 3) {
        return 0;
    }
    unsigned cp = code_point(s, len);
    return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
                   (cp >= 0x2066 && cp <= 0x2069)
               ? cp
               : 0;
}

/* The code point to write as \uNNNN for the valid sequence s (len bytes),
 * or 0 to keep it: C1 controls (U+0080-U+009F; U+009B is a terminal's CSI),
 * the Unicode line and paragraph separators U+2028/U+2029 (valid UTF-8 that
 * still ends a line for some readers) and the bidirectional controls, which
 * reorder what a terminal shows after them (Trojan Source). */
static unsigned
escaped_code_point(const unsigned char *s, size_t len)
{
    if (len != 2 && len != 3) {
        return 0;
    }
    unsigned cp = code_point(s, len);
    if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029) {
        return cp;
    }
    return escape_bidi_control(s, len);
}

/* The length of the run of printable ASCII at p, which goes out as it is
 * (quotes and backslashes end it when quoted): copied with one append
 * instead of a character at a time. */
static size_t
plain_run(const unsigned char *p, size_t n, int quoted)
{
    size_t i = 0;
    while (i < n && p[i] >= 0x20 && p[i] < 0x7f && !(quoted && (p[i] == '\\' || p[i] == '"'))) {
        i++;
    }
    return i;
}

/* The two escapes of escape.h: quotes and backslashes too when quoted. */
static void
escape(struct buf *b, const char *s, size_t n, int quoted)
{
    const unsigned char *p = (const unsigned char *) s;
    size_t i = 0;
    while (i < n) {
        size_t run = plain_run(p + i, n - i, quoted);
        if (run > 0) {
            buf_append(b, p + i, run);
            i += run;
            continue;
        }
        unsigned char c = p[i];
        size_t len = utf8_seq_len(p + i, n - i);
        if (c == '\n') {
            buf_puts(b, "\\n");
        } else if (c == '\t') {
            buf_puts(b, "\\t");
        } else if (c == '\r') {
            buf_puts(b, "\\r");
        } else if (quoted && (c == '\\' || c == '"')) {
            buf_putc(b, '\\');
            buf_putc(b, (char) c);
        } else if (c < 0x20 || c == 0x7f || len == 0) {
            buf_printf(b, "\\x%02x", c);
            len = 1;
        } else if (escaped_code_point(p + i, len) != 0) {
            buf_printf(b, "\\u%04x", escaped_code_point(p + i, len));
        } else {
            buf_append(b, p + i, len);
        }
        i += len ? len : 1;
    }
}

void
escape_text(struct buf *b, const char *s, size_t n)
{
    escape(b, s, n, 1);
}

void
escape_unquoted(struct buf *b, const char *s, size_t n)
{
    escape(b, s, n, 0);
}

void
escape_field(struct buf *b, const char *name, const char *value)
{
    if (value == NULL) {
        return;
    }
    int quote = value[0] == '\0' || strpbrk(value, " \"=\\") != NULL;
    buf_cat(b, " ", name, "=", NULL);
    if (quote) {
        buf_putc(b, '"');
    }
    escape_text(b, value, strlen(value));
    if (quote) {
        buf_putc(b, '"');
    }
}
