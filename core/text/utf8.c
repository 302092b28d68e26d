/*
 * utf8.c - strict UTF-8 validation (see utf8.h).
 */
#include "utf8.h"

#include <string.h>

size_t
utf8_seq_len(const unsigned char *s, size_t n)
{
    size_t len;
    unsigned min;
    unsigned cp;
    if (s[0] < 0x80) {
        return 1;
    } else if ((s[0] & 0xe0) == 0xc0) {
        len = 2, min = 0x80, cp = s[0] & 0x1f;
    } else if ((s[0] & 0xf0) == 0xe0) {
        len = 3, min = 0x800, cp = s[0] & 0x0f;
    } else if ((s[0] & 0xf8) == 0xf0) {
        len = 4, min = 0x10000, cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (len > n) {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return len;
}

int
utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *) s;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq_len(p + i, n - i);
        if (len == 0) {
            return 0;
        }
        i += len;
    }
    return 1;
}

size_t
utf8_cut(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char) s[n] & 0xC0) == 0x80) {
        n--;
    }
    return n;
}

void
utf8_mark_cut(char *s, size_t cap, int n)
{
    if (n < 0 || (size_t) n < cap || cap < 4) {
        return;
    }
    memcpy(s + utf8_cut(s, cap - 4), "...", 4);
}
