/*
 * listen.c - the one parser of a listen address ("IP:port", "[IPv6]:port",
 * ":port"), shared by the configuration check and the HTTP listener so that
 * `twiced -t` accepts exactly what the listener can bind. No name lookup.
 */
#include "listen.h"

#include "buf.h"
#include "escape.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "HOST is not WHAT", HOST escaped: it comes from the configuration and a
 * control byte must not break the line of `twiced -t`. */
static void
not_an_address(const char *host, const char *what, char *err, size_t errlen)
{
    struct buf b = BUF_INIT;
    escape_unquoted(&b, host, strlen(host));
    snprintf(err, errlen, "%s is not %s", b.len > 0 ? buf_str(&b) : "", what);
    buf_free(&b);
}

int
listen_parse(const char *s, struct sockaddr_storage *ss, char *err, size_t errlen)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon = strrchr(s, ':');
    const char *port = colon != NULL ? colon + 1 : "";
    size_t hlen = colon != NULL ? (size_t) (colon - s) : 0;
    long n = strspn(port, "0123456789") == strlen(port) && strlen(port) <= 5 ? atol(port) : 0;
    if (colon == NULL || hlen >= sizeof(host) || n < 1 || n > 65535) {
        snprintf(err, errlen,
                 "must be \"IP:port\", \"[IPv6]:port\" or \":port\" with a port "
                 "of 1-65535");
        return -1;
    }
    memcpy(host, s, hlen);
    host[hlen] = '\0';
    memset(ss, 0, sizeof(*ss));
    if (host[0] == '[') {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *) ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t) n);
        if (hlen < 2 || host[hlen - 1] != ']') {
            snprintf(err, errlen, "an IPv6 address goes in brackets: \"[::1]:9464\"");
            return -1;
        }
        host[hlen - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1) {
            not_an_address(host + 1, "an IPv6 address", err, errlen);
            return -1;
        }
        return 0;
    }
    if (strchr(host, ':') != NULL) {
        snprintf(err, errlen, "an IPv6 address goes in brackets: \"[::1]:9464\"");
        return -1;
    }
    struct sockaddr_in *a4 = (struct sockaddr_in *) ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t) n);
    if (host[0] == '\0') {
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
        return 0;
    }
    if (inet_pton(AF_INET, host, &a4->sin_addr) != 1) {
        not_an_address(host, "an IP address (names are not resolved)", err, errlen);
        return -1;
    }
    return 0;
}
