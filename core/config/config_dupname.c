/*
 * config_dupname.c - the name behind libconfig's "duplicate setting name",
 * from the text of the line it reports (config_dupname.h). Follows
 * libconfig's scanner only as far as names, strings and comments on one
 * line; not a parser.
 */
#include "config_dupname.h"

#include "ascii.h"

#include <string.h>

#define NAMES_PER_LINE 16 /* names looked at on one line; more are rare */

/* libconfig's name: [A-Za-z*][-A-Za-z0-9_*]* */
static int
name_start(int c)
{
    return ascii_isalpha(c) || c == '*';
}

static int
name_char(int c)
{
    return ascii_isalnum(c) || c == '-' || c == '_' || c == '*';
}

/* The start of line (1-based) in text, or NULL. */
static const char *
line_start(const char *text, int line)
{
    for (int n = 1; n < line && text != NULL; n++) {
        text = strchr(text, '\n');
        text = text != NULL ? text + 1 : NULL;
    }
    return line >= 1 ? text : NULL;
}

/* Past a string that starts at p (its '"'), not past the line's end. */
static const char *
skip_string(const char *p)
{
    for (p++; *p != '\0' && *p != '\n' && *p != '"'; p++) {
        p += p[0] == '\\' && p[1] != '\0' && p[1] != '\n';
    }
    return *p == '"' ? p + 1 : p;
}

/* The names set on the line at p, as (start, length) pairs; their count. */
static size_t
line_names(const char *p, const char *start[], size_t len[])
{
    size_t n = 0;
    while (*p != '\0' && *p != '\n' && n < NAMES_PER_LINE) {
        if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
            break;
        } else if (*p == '"') {
            p = skip_string(p);
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            const char *nl = strchr(p, '\n');
            if (end == NULL || (nl != NULL && nl < end)) {
                break;
            }
            p = end + 2;
        } else if (name_start((unsigned char) *p)) {
            const char *s = p;
            while (name_char((unsigned char) *p)) {
                p++;
            }
            const char *q = p + strspn(p, " \t\r");
            if (*q == '=' || *q == ':') {
                start[n] = s;
                len[n++] = (size_t) (p - s);
            }
        } else {
            p++;
        }
    }
    return n;
}

int
config_dupname_at(const char *text, int line, char *name, size_t size)
{
    const char *p = line_start(text, line), *start[NAMES_PER_LINE];
    size_t len[NAMES_PER_LINE], n = p != NULL ? line_names(p, start, len) : 0;
    size_t pick = n == 1 ? 0 : n;
    for (size_t i = 0; i < n && pick == n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            if (len[i] == len[j] && memcmp(start[i], start[j], len[i]) == 0) {
                pick = i;
                break;
            }
        }
    }
    if (pick == n || len[pick] >= size) {
        return 0;
    }
    memcpy(name, start[pick], len[pick]);
    name[len[pick]] = '\0';
    return 1;
}
