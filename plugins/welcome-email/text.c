/*
 * text.c - a growable NUL-terminated text for building mail messages.
 * Not a general string library: append and free, nothing else.
 */
#include "welcome.h"

#include <stdlib.h>
#include <string.h>

void
text_append(struct text *t, const char *s, size_t n)
{
    if (t->failed) {
        return;
    }
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap != 0 ? t->cap : 256;
        while (cap < t->len + n + 1) {
            cap *= 2;
        }
        char *p = realloc(t->s, cap);
        if (p == NULL) {
            t->failed = 1;
            return;
        }
        t->s = p;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

void
text_puts(struct text *t, const char *s)
{
    text_append(t, s, strlen(s));
}

void
text_free(struct text *t)
{
    free(t->s);
    memset(t, 0, sizeof(*t));
}
