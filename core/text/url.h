/*
 * url.h - the shape of an http(s) URL a user writes (a setting, a variable
 * of the environment), pure text: so that a URL curl could never use, or one
 * that would only fail at its first request, is refused where it is read,
 * naming what is wrong. Not a URL parser for the clients (curl parses).
 */
#ifndef TWICE_URL_H
#define TWICE_URL_H

/* url_problem()'s answer for a URL of another scheme. */
#define URL_SCHEME_PROBLEM      "must start with http:// or https://"
#define URL_SMTP_SCHEME_PROBLEM "must start with smtp:// or smtps://"

/* What url_problem() refuses beyond the shape every URL has. */
enum {
    URL_NO_QUERY = 1, /* no '?' or '#': an endpoint that paths are appended to */
    URL_NO_PATH = 2,  /* nothing after host[:port] but '/': a base URL */
    URL_SMTP = 4      /* smtp:// or smtps:// instead of http(s) */
};

/*
 * Why url cannot be an http(s) URL, or NULL when it could be: it starts with
 * http:// or https:// (in any case; with URL_SMTP, smtp:// or smtps://), holds only printable
 * ASCII without spaces, has a host (after an optional user@, an IPv6 address in brackets) and,
 * after a ':', a port from 1 to 65535; and what flags (URL_*) forbid. The answer is a static
 * phrase ("has no host") that never quotes the URL: a webhook's URL may carry a token.
 */
const char *url_problem(const char *url, unsigned flags);

#endif
