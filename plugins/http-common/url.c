/*
 * url.c - an HTTP plugin's endpoint template, "https://x/api/{entity}/{id}":
 * checked once in init, filled per job with URL-escaped body fields, and
 * shown without its secrets. Not a URL parser: everything outside the
 * braces is passed to curl as written.
 */
#include "http_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"

/* The length of the field name at p (just after '{') when it is closed by
 * '}', else 0. */
static size_t
field_len(const char *p)
{
    size_t n = strspn(p, NAME_CHARS);
    return n > 0 && n <= 128 && p[n] == '}' ? n : 0;
}

const char *
http_url_check(const char *tmpl)
{
    for (const char *p = tmpl; *p != '\0'; p++) {
        if (*p == '}') {
            return "has a '}' without its '{'";
        }
        if (*p == '{') {
            size_t n = field_len(p + 1);
            if (n == 0) {
                return "has a '{' that does not start a {field} of [A-Za-z0-9_.-]";
            }
            p += n + 1;
        }
    }
    return NULL;
}

twice_status
http_url_build(const twice_api *api, twice_job *job, CURL *c, const char *tmpl, char **out)
{
    char name[129];
    size_t size = 0;
    FILE *f = open_memstream(out, &size);
    twice_status st = TWICE_DONE;
    *out = NULL;
    if (f == NULL) {
        api->error(job, "out of memory building the url");
        return TWICE_RETRY;
    }
    for (const char *p = tmpl; *p != '\0' && st == TWICE_DONE; p++) {
        if (*p != '{') {
            fputc(*p, f);
            continue;
        }
        size_t n = field_len(p + 1);
        memcpy(name, p + 1, n);
        name[n] = '\0';
        p += n + 1;
        const char *v = api->field(job, name, NULL);
        if (v == NULL || *v == '\0') {
            api->error(job, "url field {%s}: %s", name,
                       v == NULL ? "the message has no such field (or not a string or number)"
                                 : "empty in the message");
            st = TWICE_REJECT;
            break;
        }
        char *esc = curl_easy_escape(c, v, (int) strlen(v));
        if (esc == NULL) {
            api->error(job, "out of memory building the url");
            st = TWICE_RETRY;
            break;
        }
        fputs(esc, f);
        curl_free(esc);
    }
    if (fclose(f) != 0 && st == TWICE_DONE) {
        api->error(job, "out of memory building the url");
        st = TWICE_RETRY;
    }
    if (st != TWICE_DONE) {
        free(*out);
        *out = NULL;
    }
    return st;
}

void
http_url_shown(const char *url, char *out, size_t cap)
{
    size_t end = strcspn(url, "?#"); /* a query or fragment may carry a secret */
    const char *sep = strstr(url, "://");
    size_t auth = sep != NULL && (size_t) (sep - url) < end ? (size_t) (sep - url) + 3 : 0;
    size_t host = auth, at = 0, colon = 0;
    for (size_t i = auth; auth > 0 && i < end && url[i] != '/'; i++) {
        if (url[i] == '@') {
            at = i; /* the last '@' of the authority ends the userinfo */
        }
    }
    if (at > 0) {
        const char *c = memchr(url + auth, ':', at - auth);
        colon = c != NULL ? (size_t) (c - url) : 0;
        host = at + 1;
    }
    const char *tail = url[end] != '\0' ? "?..." : "";
    if (at == 0) {
        snprintf(out, cap, "%.*s%s", (int) end, url, tail);
    } else if (colon > 0) {
        snprintf(out, cap, "%.*s:***@%.*s%s", (int) colon, url, (int) (end - host), url + host,
                 tail);
    } else {
        snprintf(out, cap, "%.*s***@%.*s%s", (int) auth, url, (int) (end - host), url + host,
                 tail);
    }
}
