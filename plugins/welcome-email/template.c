/*
 * template.c - the welcome email's {{placeholder}} templates: reading the
 * files once and filling them from the message body, escaped for where the
 * value lands. Not a template language: no loops, conditions or filters.
 */
#include "welcome.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TEMPLATE_MAX (1024 * 1024)
#define NAME_MAX_LEN 128

/* How many bytes the character led by c takes (0: c cannot lead one), and
 * the range its second byte must be in. */
static size_t
utf8_lead(unsigned char c, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xbf;
    if (c < 0x80) {
        return 1;
    }
    if (c < 0xc2 || c > 0xf4) {
        return 0;
    }
    *lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    *hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    return c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

long
template_utf8_error(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *) s;
    for (size_t i = 0; i < n;) {
        unsigned char lo, hi;
        size_t want = utf8_lead(u[i], &lo, &hi);
        if (want == 0 || want > n - i || (want > 1 && (u[i + 1] < lo || u[i + 1] > hi))) {
            return (long) i;
        }
        for (size_t k = 2; k < want; k++) {
            if ((u[i + k] & 0xc0) != 0x80) {
                return (long) i;
            }
        }
        i += want;
    }
    return -1;
}

int
template_load(const char *path, char **out, char *err, size_t errlen)
{
    struct stat st;
    char *data = NULL;
    FILE *f = fopen(path, "rb");
    *out = NULL;
    if (f == NULL) {
        snprintf(err, errlen, "template %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > TEMPLATE_MAX) {
        snprintf(err, errlen, "template %s: not a regular file of at most %d bytes", path,
                 TEMPLATE_MAX);
        goto fail;
    }
    data = malloc((size_t) st.st_size + 1);
    if (data == NULL) {
        snprintf(err, errlen, "template %s: out of memory", path);
        goto fail;
    }
    size_t n = fread(data, 1, (size_t) st.st_size, f);
    if (ferror(f) || n != (size_t) st.st_size || memchr(data, '\0', n) != NULL) {
        snprintf(err, errlen, "template %s: %s", path,
                 ferror(f) ? "read error" : "changed while read, or holds a NUL byte");
        goto fail;
    }
    long bad = template_utf8_error(data, n);
    if (bad >= 0) {
        snprintf(err, errlen, "template %s: not UTF-8 text (byte %ld)", path, bad);
        goto fail;
    }
    data[n] = '\0';
    fclose(f);
    *out = data;
    return 0;
fail:
    free(data);
    fclose(f);
    return -1;
}

static void
put_escaped(struct text *out, const char *v, enum fill_mode mode)
{
    for (const char *p = v; *p != '\0'; p++) {
        unsigned char c = (unsigned char) *p;
        const char *rep = NULL;
        if (mode == FILL_HTML) {
            rep = c == '&'    ? "&amp;"
                  : c == '<'  ? "&lt;"
                  : c == '>'  ? "&gt;"
                  : c == '"'  ? "&quot;"
                  : c == '\'' ? "&#39;"
                              : NULL;
        } else if (mode == FILL_HEADER && (c < 0x20 || c == 0x7f)) {
            continue; /* a CR or LF would start a new header */
        }
        if (rep != NULL) {
            text_puts(out, rep);
        } else {
            text_append(out, p, 1);
        }
    }
}

/* Does tmpl at p ("{{" already seen) hold a placeholder? Its name goes to
 * name and the length of the whole "{{ ... }}" is returned; 0 if not. */
static size_t
placeholder(const char *p, char *name)
{
    size_t i = 2, n = 0;
    while (p[i] == ' ') {
        i++;
    }
    while (n < NAME_MAX_LEN && p[i] != '\0' &&
           strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", p[i]) !=
               NULL) {
        name[n++] = p[i++];
    }
    name[n] = '\0';
    while (p[i] == ' ') {
        i++;
    }
    return n > 0 && p[i] == '}' && p[i + 1] == '}' ? i + 2 : 0;
}

void
template_fill(const char *tmpl, enum fill_mode mode, template_lookup lookup, void *ctx,
              struct text *out)
{
    char name[NAME_MAX_LEN + 1];
    const char *p = tmpl;
    while (*p != '\0') {
        const char *open = strstr(p, "{{");
        if (open == NULL) {
            text_puts(out, p);
            return;
        }
        text_append(out, p, (size_t) (open - p));
        size_t n = placeholder(open, name);
        if (n == 0) {
            text_append(out, open, 2);
            p = open + 2;
            continue;
        }
        const char *v = lookup(ctx, name);
        put_escaped(out, v != NULL ? v : "", mode);
        p = open + n;
    }
}
