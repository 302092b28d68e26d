/*
 * listen.h - parsing a listen address such as metrics.listen. Not for
 * binding or resolving: the caller binds, and names are refused.
 */
#ifndef TWICE_LISTEN_H
#define TWICE_LISTEN_H

#include <stddef.h>
#include <sys/socket.h>

/* "IP:port", "[IPv6]:port" or ":port" (every IPv4 interface), port
 * 1-65535, into *ss. 0, or -1 with why (without the value, which the
 * caller names). The one parser: the configuration check uses it too. */
int listen_parse(const char *s, struct sockaddr_storage *ss, char *err, size_t errlen);

#endif
